/* topos — models tier: one chat turn in a model's prompt format.
 *
 * Instruction-tuned GGUF files carry their prompt format as a Jinja template
 * (tokenizer.chat_template). topos does not run Jinja: it recognises the
 * common families by their marker tokens, as llama.cpp does, and writes a
 * turn in that family's layout:
 *   CHATML  <|im_start|>            <|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n
 *   LLAMA3  <|start_header_id|>     <|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|> ... user ... assistant<|end_header_id|>\n\n
 *   GEMMA   <start_of_turn>         <start_of_turn>user\nS\n\nU<end_of_turn>\n<start_of_turn>model\n  (no system role: S leads U)
 *   ZEPHYR  <|user|>                <|system|>\nS</s>\n<|user|>\nU</s>\n<|assistant|>\n
 *   LLAMA2  [INST]                  [INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST]
 *   PHI3    <|assistant|>, <|end|>  <|system|>\nS<|end|>\n<|user|>\nU<|end|>\n<|assistant|>\n
 *   PHI4    <|im_start|>, <|im_sep|> <|im_start|>system<|im_sep|>S<|im_end|><|im_start|>user<|im_sep|>U<|im_end|><|im_start|>assistant<|im_sep|>
 *   MISTRAL [SYSTEM_PROMPT]         [SYSTEM_PROMPT]S[/SYSTEM_PROMPT][INST]U[/INST]  (v7, tekken: no spaces)
 *   GRANITE <|start_of_role|>       <|start_of_role|>system<|end_of_role|>S<|end_of_text|>\n ... user ...
 *                                   <|start_of_role|>assistant<|end_of_role|>
 *   EXAONE  [|system|], [|endofturn|] [|system|]S[|endofturn|]\n[|user|]U\n[|assistant|]
 *   GPT_OSS <|start|>, <|channel|> <|start|>system<|message|>S<|end|><|start|>user<|message|>U<|end|><|start|>assistant
 *                                   (OpenAI's Harmony as llama.cpp writes it; the reply names its own channel)
 *   GEMMA4  <|turn>, <turn|>        <|turn>system\nS<turn|>\n<|turn>user\nU<turn|>\n<|turn>model\n
 *                                   (Gemma 4; thinking is the model's to open, as the template leaves it)
 * (the system part only when a system message is given). No BOS is written:
 * encode the text with TOPOS_TOKENIZE_ADD_SPECIAL | TOPOS_TOKENIZE_PARSE_SPECIAL
 * so the vocabulary adds it as it says and the markers become their tokens.
 * A template's own default system message (SmolLM2's names the model) is not
 * applied: pass it as the system message. */
#ifndef TOPOS_CHAT_H
#define TOPOS_CHAT_H

#include <stddef.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum topos_chat_format {
  TOPOS_CHAT_UNKNOWN = 0,
  TOPOS_CHAT_CHATML,
  TOPOS_CHAT_LLAMA3,
  TOPOS_CHAT_GEMMA,
  TOPOS_CHAT_ZEPHYR,
  TOPOS_CHAT_LLAMA2,
  TOPOS_CHAT_PHI3,
  TOPOS_CHAT_PHI4,
  TOPOS_CHAT_MISTRAL,
  TOPOS_CHAT_GRANITE,
  TOPOS_CHAT_EXAONE,
  TOPOS_CHAT_GPT_OSS,
  TOPOS_CHAT_GEMMA4,
} topos_chat_format;

/* The family of a chat template's text (NULL: UNKNOWN). */
TOPOS_API topos_chat_format topos_chat_detect(const char *chat_template);
/* "chatml", "llama3", "gemma", "zephyr", "llama2", "phi3", "phi4", "mistral", "granite", "exaone",
 * "gpt-oss", "gemma4", "unknown". Static string. */
TOPOS_API const char *topos_chat_format_name(topos_chat_format format);

/* One user turn (system may be NULL or empty: none) and the opening of the
 * assistant's reply, in format. Writes at most cap bytes and a NUL when it
 * fits; *len is the text's length without the NUL. TOPOS_ERR_RANGE when cap
 * is too small (*len = the length needed; call again with cap >= *len + 1),
 * TOPOS_ERR_INVALID_ARGUMENT for NULL user or len, or an UNKNOWN format. */
TOPOS_API topos_status topos_chat_turn(topos_chat_format format, const char *system, const char *user,
                                       char *buf, size_t cap, size_t *len);

/* The text that closes an assistant's reply in format, after its last
 * token, so that the next topos_chat_turn (without a system message) follows
 * it in a conversation: ChatML "<|im_end|>\n", Llama 3 "<|eot_id|>", Gemma
 * "<end_of_turn>\n", Zephyr "</s>\n", Llama 2 "</s><s>" (Meta's layout:
 * every [INST] after the first opens with a BOS), Phi-3 "<|end|>\n", Phi-4
 * "<|im_end|>". Encode it with
 * TOPOS_TOKENIZE_PARSE_SPECIAL. "" for UNKNOWN. Static string. */
TOPOS_API const char *topos_chat_reply_end(topos_chat_format format);

#ifdef __cplusplus
}
#endif
#endif
