/* One chat turn per recognised prompt format: detection by each family's
 * markers (snippets of real templates), the exact text with and without a
 * system message, and the capacity rules. */
#include <string.h>

#include "test.h"
#include "topos.h"

TEST(chat_detects_the_template_families) {
  static const struct {
    const char *snippet;
    topos_chat_format want;
  } cases[] = {
      {"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n'}}", TOPOS_CHAT_CHATML},
      {"{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}", TOPOS_CHAT_LLAMA3},
      {"{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}", TOPOS_CHAT_GEMMA},
      {"{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + eos_token }}", TOPOS_CHAT_ZEPHYR},
      {"{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}", TOPOS_CHAT_LLAMA2},
      /* Phi-3 mini's and Phi-4's */
      {"{% if message['role'] == 'user' %}{{'<|user|>' + '\n' + message['content'] + '<|end|>' + '\n' + "
       "'<|assistant|>' + '\n'}}", TOPOS_CHAT_PHI3},
      {"{{'<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + '<|im_end|>'}}", TOPOS_CHAT_PHI4},
      /* Mistral Small 3's (v7-tekken), Granite 3's, EXAONE's */
      {"{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}{{- '[INST]' + message['content'] + '[/INST]' }}",
       TOPOS_CHAT_MISTRAL},
      {"{{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' + message['content'] + '<|end_of_text|>\n' }}",
       TOPOS_CHAT_GRANITE},
      {"{{ '[|system|]' + message['content'] + '[|endofturn|]\n' }}{{ '[|user|]' + message['content'] + '\n' }}"
       "{{ '[|assistant|]' }}", TOPOS_CHAT_EXAONE},
      /* gpt-oss's (Harmony) */
      {"{{- \"<|start|>assistant<|channel|>analysis<|message|>\" + message.thinking + \"<|end|>\" }}",
       TOPOS_CHAT_GPT_OSS},
      /* Gemma 4's */
      {"{{- '<|turn>' + role + '\\n' -}}{{- message['content'] | trim -}}{{- '<turn|>\\n' -}}", TOPOS_CHAT_GEMMA4},
      {"{{ message['content'] }}", TOPOS_CHAT_UNKNOWN},
      {NULL, TOPOS_CHAT_UNKNOWN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    CHECK_MSG(topos_chat_detect(cases[i].snippet) == cases[i].want, "case %zu: %s, want %s", i,
              topos_chat_format_name(topos_chat_detect(cases[i].snippet)), topos_chat_format_name(cases[i].want));
}

TEST(chat_turns_in_each_format) {
  static const struct {
    topos_chat_format f;
    const char *plain, *with_system;
  } cases[] = {
      {TOPOS_CHAT_CHATML, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
       "<|im_start|>system\nBe brief<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
      {TOPOS_CHAT_LLAMA3,
       "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
       "<|start_header_id|>system<|end_header_id|>\n\nBe brief<|eot_id|><|start_header_id|>user<|end_header_id|>"
       "\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
      {TOPOS_CHAT_GEMMA, "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
       "<start_of_turn>user\nBe brief\n\nHi<end_of_turn>\n<start_of_turn>model\n"},
      {TOPOS_CHAT_ZEPHYR, "<|user|>\nHi</s>\n<|assistant|>\n", "<|system|>\nBe brief</s>\n<|user|>\nHi</s>\n<|assistant|>\n"},
      {TOPOS_CHAT_LLAMA2, "[INST] Hi [/INST]", "[INST] <<SYS>>\nBe brief\n<</SYS>>\n\nHi [/INST]"},
      {TOPOS_CHAT_PHI3, "<|user|>\nHi<|end|>\n<|assistant|>\n",
       "<|system|>\nBe brief<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n"},
      {TOPOS_CHAT_PHI4, "<|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|>",
       "<|im_start|>system<|im_sep|>Be brief<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|>"
       "<|im_start|>assistant<|im_sep|>"},
      {TOPOS_CHAT_MISTRAL, "[INST]Hi[/INST]", "[SYSTEM_PROMPT]Be brief[/SYSTEM_PROMPT][INST]Hi[/INST]"},
      {TOPOS_CHAT_GRANITE, "<|start_of_role|>user<|end_of_role|>Hi<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>",
       "<|start_of_role|>system<|end_of_role|>Be brief<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hi"
       "<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
      {TOPOS_CHAT_EXAONE, "[|user|]Hi\n[|assistant|]", "[|system|]Be brief[|endofturn|]\n[|user|]Hi\n[|assistant|]"},
      {TOPOS_CHAT_GPT_OSS, "<|start|>user<|message|>Hi<|end|><|start|>assistant",
       "<|start|>system<|message|>Be brief<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant"},
      {TOPOS_CHAT_GEMMA4, "<|turn>user\nHi<turn|>\n<|turn>model\n",
       "<|turn>system\nBe brief<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n"},
  };
  char buf[256];
  size_t len = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    CHECK_OK(topos_chat_turn(cases[i].f, NULL, "Hi", buf, sizeof buf, &len));
    CHECK_MSG(strcmp(buf, cases[i].plain) == 0 && len == strlen(cases[i].plain), "%s: \"%s\"",
              topos_chat_format_name(cases[i].f), buf);
    CHECK_OK(topos_chat_turn(cases[i].f, "", "Hi", buf, sizeof buf, &len)); /* empty system: none */
    CHECK(strcmp(buf, cases[i].plain) == 0);
    CHECK_OK(topos_chat_turn(cases[i].f, "Be brief", "Hi", buf, sizeof buf, &len));
    CHECK_MSG(strcmp(buf, cases[i].with_system) == 0, "%s with a system message: \"%s\"",
              topos_chat_format_name(cases[i].f), buf);
  }
}

TEST(chat_turn_capacity_and_arguments) {
  const char *want = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
  const size_t n = strlen(want);
  size_t len = 0;
  CHECK_STATUS(topos_chat_turn(TOPOS_CHAT_CHATML, NULL, "Hi", NULL, 0, &len), TOPOS_ERR_RANGE);
  CHECK(len == n); /* measured */
  char buf[64];
  memset(buf, 'x', sizeof buf);
  CHECK_STATUS(topos_chat_turn(TOPOS_CHAT_CHATML, NULL, "Hi", buf, n, &len), TOPOS_ERR_RANGE); /* no room for NUL */
  CHECK_OK(topos_chat_turn(TOPOS_CHAT_CHATML, NULL, "Hi", buf, n + 1, &len));
  CHECK(len == n && strcmp(buf, want) == 0);
  CHECK_STATUS(topos_chat_turn(TOPOS_CHAT_UNKNOWN, NULL, "Hi", buf, sizeof buf, &len), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_chat_turn(TOPOS_CHAT_CHATML, NULL, NULL, buf, sizeof buf, &len), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_chat_turn(TOPOS_CHAT_CHATML, NULL, "Hi", buf, sizeof buf, NULL), TOPOS_ERR_INVALID_ARGUMENT);
}

/* A conversation is turn, reply, reply end, turn, ...: the text after a
 * reply in each format, as the families' templates write a second turn. */
TEST(chat_reply_ends_in_each_format) {
  static const struct {
    topos_chat_format f;
    const char *two_turns; /* "Hi", reply "Yo", then "Bye" */
  } cases[] = {
      {TOPOS_CHAT_CHATML, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nYo<|im_end|>\n"
                          "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
      {TOPOS_CHAT_LLAMA3, "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant"
                          "<|end_header_id|>\n\nYo<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
                          "<|start_header_id|>assistant<|end_header_id|>\n\n"},
      {TOPOS_CHAT_GEMMA, "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nYo<end_of_turn>\n"
                         "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"},
      {TOPOS_CHAT_ZEPHYR, "<|user|>\nHi</s>\n<|assistant|>\nYo</s>\n<|user|>\nBye</s>\n<|assistant|>\n"},
      {TOPOS_CHAT_LLAMA2, "[INST] Hi [/INST]Yo</s><s>[INST] Bye [/INST]"},
      {TOPOS_CHAT_PHI3, "<|user|>\nHi<|end|>\n<|assistant|>\nYo<|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n"},
      {TOPOS_CHAT_PHI4, "<|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|>Yo<|im_end|>"
                        "<|im_start|>user<|im_sep|>Bye<|im_end|><|im_start|>assistant<|im_sep|>"},
      {TOPOS_CHAT_GEMMA4, "<|turn>user\nHi<turn|>\n<|turn>model\nYo<turn|>\n<|turn>user\nBye<turn|>\n<|turn>model\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    char a[256], b[256], all[600];
    size_t la = 0, lb = 0;
    CHECK_OK(topos_chat_turn(cases[i].f, NULL, "Hi", a, sizeof a, &la));
    CHECK_OK(topos_chat_turn(cases[i].f, NULL, "Bye", b, sizeof b, &lb));
    snprintf(all, sizeof all, "%sYo%s%s", a, topos_chat_reply_end(cases[i].f), b);
    CHECK_MSG(strcmp(all, cases[i].two_turns) == 0, "%s: \"%s\"", topos_chat_format_name(cases[i].f), all);
  }
  CHECK(strcmp(topos_chat_reply_end(TOPOS_CHAT_UNKNOWN), "") == 0);
}
