/* One chat turn in a recognised prompt format (include/topos/chat.h): the
 * layouts are llama.cpp's for the same families; detection looks for each
 * family's marker, most specific first (a Llama 3 template also mentions
 * none of the others; Zephyr's <|user|> appears in no ChatML template;
 * Phi-3's has <|user|> too, with <|end|> closing turns; Phi-4's is ChatML's
 * markers with <|im_sep|> after the role; Mistral's v7 templates have
 * [INST] too, after [SYSTEM_PROMPT]). */
#include "topos/chat.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

topos_chat_format topos_chat_detect(const char *t) {
  if (!t) return TOPOS_CHAT_UNKNOWN;
  if (strstr(t, "<|im_start|>")) return strstr(t, "<|im_sep|>") ? TOPOS_CHAT_PHI4 : TOPOS_CHAT_CHATML;
  if (strstr(t, "<|start_header_id|>")) return TOPOS_CHAT_LLAMA3;
  if (strstr(t, "<|start_of_role|>")) return TOPOS_CHAT_GRANITE;
  if (strstr(t, "[|system|]") && strstr(t, "[|endofturn|]")) return TOPOS_CHAT_EXAONE;
  if (strstr(t, "[SYSTEM_PROMPT]")) return TOPOS_CHAT_MISTRAL;
  if (strstr(t, "<start_of_turn>")) return TOPOS_CHAT_GEMMA;
  if (strstr(t, "<|assistant|>") && strstr(t, "<|end|>")) return TOPOS_CHAT_PHI3;
  if (strstr(t, "<|user|>")) return TOPOS_CHAT_ZEPHYR;
  if (strstr(t, "[INST]")) return TOPOS_CHAT_LLAMA2;
  return TOPOS_CHAT_UNKNOWN;
}

const char *topos_chat_format_name(topos_chat_format f) {
  switch (f) {
    case TOPOS_CHAT_CHATML: return "chatml";
    case TOPOS_CHAT_LLAMA3: return "llama3";
    case TOPOS_CHAT_GEMMA: return "gemma";
    case TOPOS_CHAT_ZEPHYR: return "zephyr";
    case TOPOS_CHAT_LLAMA2: return "llama2";
    case TOPOS_CHAT_PHI3: return "phi3";
    case TOPOS_CHAT_PHI4: return "phi4";
    case TOPOS_CHAT_MISTRAL: return "mistral";
    case TOPOS_CHAT_GRANITE: return "granite";
    case TOPOS_CHAT_EXAONE: return "exaone";
    default: return "unknown";
  }
}

const char *topos_chat_reply_end(topos_chat_format f) {
  switch (f) {
    case TOPOS_CHAT_CHATML: return "<|im_end|>\n";
    case TOPOS_CHAT_LLAMA3: return "<|eot_id|>";
    case TOPOS_CHAT_GEMMA: return "<end_of_turn>\n";
    case TOPOS_CHAT_ZEPHYR: return "</s>\n";
    case TOPOS_CHAT_LLAMA2: return "</s><s>";
    case TOPOS_CHAT_PHI3: return "<|end|>\n";
    case TOPOS_CHAT_PHI4: return "<|im_end|>";
    case TOPOS_CHAT_MISTRAL: return "</s>";
    case TOPOS_CHAT_GRANITE: return "<|end_of_text|>\n";
    case TOPOS_CHAT_EXAONE: return "[|endofturn|]\n";
    default: return "";
  }
}

topos_status topos_chat_turn(topos_chat_format f, const char *system, const char *user, char *buf, size_t cap,
                             size_t *len) {
  if (!user || !len) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "chat_turn: NULL %s", !user ? "user" : "len");
  if (!buf) cap = 0;
  const char *s = system && *system ? system : NULL;
  int n;
  /* snprintf measures when the text does not fit: one call per layout */
  switch (f) {
    case TOPOS_CHAT_CHATML:
      n = snprintf(buf, cap, "%s%s%s<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n",
                   s ? "<|im_start|>system\n" : "", s ? s : "", s ? "<|im_end|>\n" : "", user);
      break;
    case TOPOS_CHAT_LLAMA3:
      n = snprintf(buf, cap,
                   "%s%s%s<|start_header_id|>user<|end_header_id|>\n\n%s<|eot_id|>"
                   "<|start_header_id|>assistant<|end_header_id|>\n\n",
                   s ? "<|start_header_id|>system<|end_header_id|>\n\n" : "", s ? s : "", s ? "<|eot_id|>" : "",
                   user);
      break;
    case TOPOS_CHAT_GEMMA:
      n = snprintf(buf, cap, "<start_of_turn>user\n%s%s%s<end_of_turn>\n<start_of_turn>model\n", s ? s : "",
                   s ? "\n\n" : "", user);
      break;
    case TOPOS_CHAT_ZEPHYR:
      n = snprintf(buf, cap, "%s%s%s<|user|>\n%s</s>\n<|assistant|>\n", s ? "<|system|>\n" : "", s ? s : "",
                   s ? "</s>\n" : "", user);
      break;
    case TOPOS_CHAT_LLAMA2:
      n = snprintf(buf, cap, "[INST] %s%s%s%s [/INST]", s ? "<<SYS>>\n" : "", s ? s : "", s ? "\n<</SYS>>\n\n" : "",
                   user);
      break;
    case TOPOS_CHAT_PHI3:
      n = snprintf(buf, cap, "%s%s%s<|user|>\n%s<|end|>\n<|assistant|>\n", s ? "<|system|>\n" : "", s ? s : "",
                   s ? "<|end|>\n" : "", user);
      break;
    case TOPOS_CHAT_PHI4:
      n = snprintf(buf, cap, "%s%s%s<|im_start|>user<|im_sep|>%s<|im_end|><|im_start|>assistant<|im_sep|>",
                   s ? "<|im_start|>system<|im_sep|>" : "", s ? s : "", s ? "<|im_end|>" : "", user);
      break;
    case TOPOS_CHAT_MISTRAL:
      n = snprintf(buf, cap, "%s%s%s[INST]%s[/INST]", s ? "[SYSTEM_PROMPT]" : "", s ? s : "",
                   s ? "[/SYSTEM_PROMPT]" : "", user);
      break;
    case TOPOS_CHAT_GRANITE:
      n = snprintf(buf, cap,
                   "%s%s%s<|start_of_role|>user<|end_of_role|>%s<|end_of_text|>\n"
                   "<|start_of_role|>assistant<|end_of_role|>",
                   s ? "<|start_of_role|>system<|end_of_role|>" : "", s ? s : "", s ? "<|end_of_text|>\n" : "", user);
      break;
    case TOPOS_CHAT_EXAONE:
      n = snprintf(buf, cap, "%s%s%s[|user|]%s\n[|assistant|]", s ? "[|system|]" : "", s ? s : "",
                   s ? "[|endofturn|]\n" : "", user);
      break;
    default:
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "chat_turn: unknown chat format %d", (int)f);
  }
  if (n < 0) return tp_fail(TOPOS_ERR_INTERNAL, "chat_turn: formatting failed");
  *len = (size_t)n;
  if ((size_t)n >= cap)
    return tp_fail(TOPOS_ERR_RANGE, "chat_turn: %zu bytes of room for a %d-byte turn (and its NUL)", cap, n);
  return TOPOS_OK;
}
