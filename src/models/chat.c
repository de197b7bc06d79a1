/* One chat turn in a recognised prompt format (include/topos/chat.h): the
 * layouts are llama.cpp's for the same families; detection looks for each
 * family's marker, most specific first (a Llama 3 template also mentions
 * none of the others; Zephyr's <|user|> appears in no ChatML template;
 * Phi-3's has <|user|> too, with <|end|> closing turns; Phi-4's is ChatML's
 * markers with <|im_sep|> after the role; Mistral's v7 templates have
 * [INST] too, after [SYSTEM_PROMPT]; gpt-oss's Harmony has <|start|> and
 * <|channel|>, checked first; Gemma 4's <|turn> and <turn|>, next). */
#include "topos/chat.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

topos_chat_format topos_chat_detect(const char *t) {
  if (!t) return TOPOS_CHAT_UNKNOWN;
  if (strstr(t, "<|start|>") && strstr(t, "<|channel|>")) return TOPOS_CHAT_GPT_OSS;
  if (strstr(t, "<|turn>") && strstr(t, "<turn|>")) return TOPOS_CHAT_GEMMA4;
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

/* Each format's name, the end of a reply, and its turn's layout:
 * lead [sys_open S sys_close] user_open U user_close, the bracketed part
 * only with a system message (Gemma has no system role: S leads the user's
 * text; Llama 2 puts it inside [INST]). Rows in topos_chat_format order. */
static const struct tp_chat_layout {
  const char *name, *reply_end;
  const char *lead, *sys_open, *sys_close, *user_open, *user_close;
} tp_chat_layouts[] = {
    [TOPOS_CHAT_CHATML] = {"chatml", "<|im_end|>\n", "", "<|im_start|>system\n", "<|im_end|>\n", "<|im_start|>user\n",
                           "<|im_end|>\n<|im_start|>assistant\n"},
    [TOPOS_CHAT_LLAMA3] = {"llama3", "<|eot_id|>", "", "<|start_header_id|>system<|end_header_id|>\n\n", "<|eot_id|>",
                           "<|start_header_id|>user<|end_header_id|>\n\n",
                           "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    [TOPOS_CHAT_GEMMA] = {"gemma", "<end_of_turn>\n", "<start_of_turn>user\n", "", "\n\n", "",
                          "<end_of_turn>\n<start_of_turn>model\n"},
    [TOPOS_CHAT_ZEPHYR] = {"zephyr", "</s>\n", "", "<|system|>\n", "</s>\n", "<|user|>\n", "</s>\n<|assistant|>\n"},
    [TOPOS_CHAT_LLAMA2] = {"llama2", "</s><s>", "[INST] ", "<<SYS>>\n", "\n<</SYS>>\n\n", "", " [/INST]"},
    [TOPOS_CHAT_PHI3] = {"phi3", "<|end|>\n", "", "<|system|>\n", "<|end|>\n", "<|user|>\n", "<|end|>\n<|assistant|>\n"},
    [TOPOS_CHAT_PHI4] = {"phi4", "<|im_end|>", "", "<|im_start|>system<|im_sep|>", "<|im_end|>",
                         "<|im_start|>user<|im_sep|>", "<|im_end|><|im_start|>assistant<|im_sep|>"},
    [TOPOS_CHAT_MISTRAL] = {"mistral", "</s>", "", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[INST]", "[/INST]"},
    [TOPOS_CHAT_GRANITE] = {"granite", "<|end_of_text|>\n", "", "<|start_of_role|>system<|end_of_role|>",
                            "<|end_of_text|>\n", "<|start_of_role|>user<|end_of_role|>",
                            "<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
    [TOPOS_CHAT_EXAONE] = {"exaone", "[|endofturn|]\n", "", "[|system|]", "[|endofturn|]\n", "[|user|]",
                           "\n[|assistant|]"},
    [TOPOS_CHAT_GPT_OSS] = {"gpt-oss", "<|return|>", "", "<|start|>system<|message|>", "<|end|>",
                            "<|start|>user<|message|>", "<|end|><|start|>assistant"},
    [TOPOS_CHAT_GEMMA4] = {"gemma4", "<turn|>\n", "", "<|turn>system\n", "<turn|>\n", "<|turn>user\n",
                           "<turn|>\n<|turn>model\n"},
};

static const struct tp_chat_layout *tp_chat_layout_of(topos_chat_format f) {
  const int n = (int)(sizeof tp_chat_layouts / sizeof tp_chat_layouts[0]);
  return (int)f > 0 && (int)f < n && tp_chat_layouts[f].name ? &tp_chat_layouts[f] : NULL;
}

const char *topos_chat_format_name(topos_chat_format f) {
  const struct tp_chat_layout *l = tp_chat_layout_of(f);
  return l ? l->name : "unknown";
}

const char *topos_chat_reply_end(topos_chat_format f) {
  const struct tp_chat_layout *l = tp_chat_layout_of(f);
  return l ? l->reply_end : "";
}

topos_status topos_chat_turn(topos_chat_format f, const char *system, const char *user, char *buf, size_t cap,
                             size_t *len) {
  if (!user || !len) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "chat_turn: NULL %s", !user ? "user" : "len");
  const struct tp_chat_layout *l = tp_chat_layout_of(f);
  if (!l) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "chat_turn: unknown chat format %d", (int)f);
  if (!buf) cap = 0;
  const char *s = system && *system ? system : NULL;
  /* snprintf measures when the text does not fit */
  const int n = snprintf(buf, cap, "%s%s%s%s%s%s%s", l->lead, s ? l->sys_open : "", s ? s : "", s ? l->sys_close : "",
                         l->user_open, user, l->user_close);
  if (n < 0) return tp_fail(TOPOS_ERR_INTERNAL, "chat_turn: formatting failed");
  *len = (size_t)n;
  if ((size_t)n >= cap)
    return tp_fail(TOPOS_ERR_RANGE, "chat_turn: %zu bytes of room for a %d-byte turn (and its NUL)", cap, n);
  return TOPOS_OK;
}
