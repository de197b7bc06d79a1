/* Byte-level BPE pre-tokenizers, piece by piece: each pattern's splits
 * against rows computed with Python's regex package over the same pattern
 * (scripts/pretokenize_reference.py), the rules behind them, and the
 * Unicode classes they read. */
#include "models/tokenizer_internal.h"
#include "tok_util.h"

/* ---- pre-tokenizer pieces */
typedef struct pieces {
  char text[48][64];
  int n;
} pieces;

typedef struct piece_ctx {
  pieces *p;
  const char *text;
} piece_ctx;

static topos_status collect_text(void *ctx, size_t start, size_t length) {
  piece_ctx *c = ctx;
  if (c->p->n >= 48 || length >= 64) return TOPOS_ERR_RANGE;
  memcpy(c->p->text[c->p->n], c->text + start, length);
  c->p->text[c->p->n][length] = 0;
  c->p->n++;
  return TOPOS_OK;
}

/* counts[0] pieces of counts[1] bytes in all, each starting where the one
 * before ended */
static topos_status count_pieces(void *ctx, size_t start, size_t length) {
  size_t *counts = ctx;
  if (start != counts[1]) return TOPOS_ERR_RANGE;
  counts[0]++;
  counts[1] += length;
  return TOPOS_OK;
}

/* Pieces of text joined with '|' for one comparison string. */
static void split(tp_pre_kind kind, const char *text, char *out, size_t cap) {
  pieces p;
  memset(&p, 0, sizeof p);
  piece_ctx c = {&p, text};
  out[0] = 0;
  if (tp_pretokenize(kind, text, strlen(text), collect_text, &c) != TOPOS_OK) {
    snprintf(out, cap, "<error>");
    return;
  }
  size_t at = 0;
  for (int i = 0; i < p.n; i++)
    at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? "|" : "", p.text[i]);
}

#define CHECK_SPLIT(kind, text, expected)                                              \
  do {                                                                                 \
    char got_[512];                                                                    \
    split(kind, text, got_, sizeof got_);                                              \
    CHECK_MSG(strcmp(got_, expected) == 0, "split of \"%s\": \"%s\", expected \"%s\"", \
              text, got_, expected);                                                   \
  } while (0)

/* Rows of expected splits (pieces joined with '|'). */
typedef struct split_case {
  tp_pre_kind kind;
  const char *text, *pieces;
} split_case;

static void check_split_cases(const split_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) CHECK_SPLIT(cases[i].kind, cases[i].text, cases[i].pieces);
}

/* Qwen2's and Llama 3's patterns against an independent implementation:
 * the splits Python's `regex` module (real Unicode classes, a backtracking
 * engine) gives for llama.cpp's two expressions over mixed texts
 * (scripts/pretokenize_reference.py prints these rows). */
TEST(tokenizer_pretokenize_qwen2_and_llama3_match_the_regex) {
  static const split_case cases[] = {
    {TP_PRE_QWEN2, "Hello world 12345 it's",
     "Hello| world| |1|2|3|4|5| it|'s"},
    {TP_PRE_QWEN2, "2024-12-06: 3.14159\n\nend",
     "2|0|2|4|-|1|2|-|0|6|:| |3|.|1|4|1|5|9|\n\n|end"},
    {TP_PRE_QWEN2, "  leading and trailing  ",
     " | leading| and| trailing|  "},
    {TP_PRE_QWEN2, "a1b22c333d4444",
     "a|1|b|2|2|c|3|3|3|d|4|4|4|4"},
    {TP_PRE_QWEN2, "I'LL 've \t\n x",
     "I|'LL| '|ve| \t\n| x"},
    {TP_PRE_QWEN2, "x\n\xE2\x82\xAC" "b \xC3\xA9" "Z  \xE6\x97\xA5" "\xE6\x9C\xAC",
     "x|\n|\xE2\x82\xAC" "b| \xC3\xA9" "Z| | \xE6\x97\xA5" "\xE6\x9C\xAC"},
    {TP_PRE_QWEN2, ".7b ",
     ".|7|b| "},
    {TP_PRE_QWEN2, "\r\n 's \xC3\xA9" "\r\nb\xE6\x97\xA5" "\xE6\x9C\xAC" "Z's",
     "\r\n| '|s| \xC3\xA9" "|\r\n|b\xE6\x97\xA5" "\xE6\x9C\xAC" "Z|'s"},
    {TP_PRE_QWEN2, "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE6\x97\xA5" "\xE6\x9C\xAC" "\nb",
     "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE6\x97\xA5" "\xE6\x9C\xAC" "|\n|b"},
    {TP_PRE_QWEN2, "b\xC3\xA9" "x're\r\nx\xC3\xA9",
     "b\xC3\xA9" "x|'re|\r\n|x\xC3\xA9"},
    {TP_PRE_QWEN2, "\xE6\x97\xA5" "\xE6\x9C\xAC" "'re\xC3\xA9" "--12345",
     "\xE6\x97\xA5" "\xE6\x9C\xAC" "|'re|\xC3\xA9" "|--|1|2|3|4|5"},
    {TP_PRE_QWEN2, "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE2\x82\xAC" "7  ",
     "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE6\x97\xA5" "\xE6\x9C\xAC" "|\xE2\x82\xAC" "|7|  "},
    {TP_PRE_QWEN2, "\xC3\xA9" "x9y \xE6\x97\xA5" "\xE6\x9C\xAC" "b",
     "\xC3\xA9" "x|9|y| \xE6\x97\xA5" "\xE6\x9C\xAC" "b"},
    {TP_PRE_QWEN2, "!?--\xC3\xA9" "\r\n \t\xE6\x97\xA5" "\xE6\x9C\xAC",
     "!?--|\xC3\xA9" "|\r\n| |\t\xE6\x97\xA5" "\xE6\x9C\xAC"},
    {TP_PRE_LLAMA3, "Hello world 12345 it's",
     "Hello| world| |123|45| it|'s"},
    {TP_PRE_LLAMA3, "2024-12-06: 3.14159\n\nend",
     "202|4|-|12|-|06|:| |3|.|141|59|\n\n|end"},
    {TP_PRE_LLAMA3, "  leading and trailing  ",
     " | leading| and| trailing|  "},
    {TP_PRE_LLAMA3, "a1b22c333d4444",
     "a|1|b|22|c|333|d|444|4"},
    {TP_PRE_LLAMA3, "I'LL 've \t\n x",
     "I|'LL| '|ve| \t\n| x"},
    {TP_PRE_LLAMA3, "x\n\xE2\x82\xAC" "b \xC3\xA9" "Z  \xE6\x97\xA5" "\xE6\x9C\xAC",
     "x|\n|\xE2\x82\xAC" "b| \xC3\xA9" "Z| | \xE6\x97\xA5" "\xE6\x9C\xAC"},
    {TP_PRE_LLAMA3, ".7b ",
     ".|7|b| "},
    {TP_PRE_LLAMA3, "\r\n 's \xC3\xA9" "\r\nb\xE6\x97\xA5" "\xE6\x9C\xAC" "Z's",
     "\r\n| '|s| \xC3\xA9" "|\r\n|b\xE6\x97\xA5" "\xE6\x9C\xAC" "Z|'s"},
    {TP_PRE_LLAMA3, "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE6\x97\xA5" "\xE6\x9C\xAC" "\nb",
     "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE6\x97\xA5" "\xE6\x9C\xAC" "|\n|b"},
    {TP_PRE_LLAMA3, "b\xC3\xA9" "x're\r\nx\xC3\xA9",
     "b\xC3\xA9" "x|'re|\r\n|x\xC3\xA9"},
    {TP_PRE_LLAMA3, "\xE6\x97\xA5" "\xE6\x9C\xAC" "'re\xC3\xA9" "--12345",
     "\xE6\x97\xA5" "\xE6\x9C\xAC" "|'re|\xC3\xA9" "|--|123|45"},
    {TP_PRE_LLAMA3, "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE2\x82\xAC" "7  ",
     "\xE6\x97\xA5" "\xE6\x9C\xAC" "\xE6\x97\xA5" "\xE6\x9C\xAC" "|\xE2\x82\xAC" "|7|  "},
    {TP_PRE_LLAMA3, "\xC3\xA9" "x9y \xE6\x97\xA5" "\xE6\x9C\xAC" "b",
     "\xC3\xA9" "x|9|y| \xE6\x97\xA5" "\xE6\x9C\xAC" "b"},
    {TP_PRE_LLAMA3, "!?--\xC3\xA9" "\r\n \t\xE6\x97\xA5" "\xE6\x9C\xAC",
     "!?--|\xC3\xA9" "|\r\n| |\t\xE6\x97\xA5" "\xE6\x9C\xAC"},
  };
  check_split_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Qwen3.5's pattern (Qwen2's with [\p{L}\p{M}]+ words and no marks in the
 * symbol runs) against the splits Python's `regex` module gives for it
 * (scripts/pretokenize_reference.py prints these rows): combining accents
 * inside, before and after words, alone, after punctuation and spaces;
 * Devanagari's vowel signs and virama; digits one by one. */
TEST(tokenizer_pretokenize_qwen35_matches_the_regex) {
  static const split_case cases[] = {
    {TP_PRE_QWEN35, "Hello world 12345 it's",
     "Hello| world| |1|2|3|4|5| it|'s"},
    {TP_PRE_QWEN35, "e\xCC\x81te\xCC\x81 \xCC\x81x \xD0\xBA\xD0\xBD\xD0\xB8\xCC\x81\xD0\xB3\xD0\xB0",
     "e\xCC\x81te\xCC\x81| \xCC\x81x| \xD0\xBA\xD0\xBD\xD0\xB8\xCC\x81\xD0\xB3\xD0\xB0"},
    {TP_PRE_QWEN35, "\xE0\xA4\x95\xE0\xA4\xBF \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80 123",
     "\xE0\xA4\x95\xE0\xA4\xBF| \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80| |1|2|3"},
    {TP_PRE_QWEN35, "!\xCC\x81? .\xCC\x81\n",
     "!\xCC\x81|?| .|\xCC\x81|\n"},
    {TP_PRE_QWEN35, "  \xCC\x81\xCC\x81" "a\r\n\xCC\x81",
     " | \xCC\x81\xCC\x81" "a|\r\n|\xCC\x81"},
    {TP_PRE_QWEN35, "a1b22 'Ve\xCC\x81 \t\n x",
     "a|1|b|2|2| '|Ve\xCC\x81| \t\n| x"},
    {TP_PRE_QWEN35, "it's\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80" "12345\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80  e\xCC\x81\xC3\xA9\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80",
     "it|'s|\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80|1|2|3|4|5|\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80| | e\xCC\x81\xC3\xA9\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80"},
    {TP_PRE_QWEN35, "\xE2\x82\xAC" "7--\r\n12345",
     "\xE2\x82\xAC|7|--\r\n|1|2|3|4|5"},
    {TP_PRE_QWEN35, "\xCC\x81!?\r\n12345!?",
     "\xCC\x81|!?\r\n|1|2|3|4|5|!?"},
    {TP_PRE_QWEN35, "Hello\xE2\x82\xAC--  'LL",
     "Hello|\xE2\x82\xAC--| | '|LL"},
    {TP_PRE_QWEN35, "12345\xE6\x97\xA5\xE6\x9C\xAC\xCC\x81\xCC\x81" "e\xCC\x81",
     "1|2|3|4|5|\xE6\x97\xA5\xE6\x9C\xAC\xCC\x81\xCC\x81" "e\xCC\x81"},
    {TP_PRE_QWEN35, "'LL12345\xCC\x81Hello12345\xE2\x82\xAC\xCC\x81" "e\xCC\x81\xCC\x81\xCC\x81",
     "'LL|1|2|3|4|5|\xCC\x81Hello|1|2|3|4|5|\xE2\x82\xAC\xCC\x81" "e\xCC\x81\xCC\x81\xCC\x81"},
    {TP_PRE_QWEN35, "\t\xE2\x82\xAC\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80 x9y\xCC\x81\n\xE6\x97\xA5\xE6\x9C\xAC",
     "\t|\xE2\x82\xAC\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80| x|9|y\xCC\x81|\n|\xE6\x97\xA5\xE6\x9C\xAC"},
    {TP_PRE_QWEN35, "12345  e\xCC\x81  77x9y",
     "1|2|3|4|5| | e\xCC\x81| | |7|7|x|9|y"},
    {TP_PRE_QWEN35, "12345\xE6\x97\xA5\xE6\x9C\xAC \xCC\x81\xCC\x81\xCC\x81Hello\xCC\x81\xCC\x81",
     "1|2|3|4|5|\xE6\x97\xA5\xE6\x9C\xAC| \xCC\x81\xCC\x81\xCC\x81Hello\xCC\x81\xCC\x81"},
    {TP_PRE_QWEN35, "--12345\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80\xE0\xA4\x95\xE0\xA4\xBF\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80\xE0\xA4\x95\xE0\xA4\xBF",
     "--|1|2|3|4|5|\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80\xE0\xA4\x95\xE0\xA4\xBF\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80\xE0\xA4\x95\xE0\xA4\xBF"},
  };
  check_split_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Mistral's tekken and OpenAI's o200k (gpt-4o, Llama 4) patterns, whose
 * words go by case ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
 * and the reverse), against the splits Python's `regex` module gives for
 * the expressions their tokenizer.json files state (scripts/
 * pretokenize_reference.py prints these rows): capitals, camel case,
 * Greek, Latin-1 capitals, a title-case digraph, a modifier letter,
 * combining marks, Devanagari's vowel signs, CJK, slashes. */
TEST(tokenizer_pretokenize_tekken_and_gpt4o_match_the_regex) {
  static const split_case cases[] = {
    {TP_PRE_TEKKEN, "HTMLParser camelCase I'M don't",
     "HTMLParser| camel|Case| I|'M| don|'t"},
    {TP_PRE_TEKKEN, "Path/to/file.txt\n// comment /\n",
     "Path|/to|/file|.txt|\n|//| comment| /\n"},
    {TP_PRE_TEKKEN, "\xC3\x89" "COLE \xC3\xA9lan \xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91 \xCF\x83\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1",
     "\xC3\x89" "COLE| \xC3\xA9lan| \xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91| \xCF\x83\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1"},
    {TP_PRE_TEKKEN, "e\xCC\x81te\xCC\x81 \xCC\x81x",
     "e\xCC\x81te\xCC\x81| \xCC\x81x"},
    {TP_PRE_TEKKEN, "\xC7\x85ungla \xCA\xB0" "a \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88",
     "\xC7\x85ungla| \xCA\xB0" "a| \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88"},
    {TP_PRE_TEKKEN, "2024-12-06: 3.14159\n\nend",
     "2|0|2|4|-|1|2|-|0|6|:| |3|.|1|4|1|5|9|\n\n|end"},
    {TP_PRE_TEKKEN, "  leading  ",
     " | leading|  "},
    {TP_PRE_TEKKEN, "\xE6\x97\xA5" "A \xCA\xB0" "B \xE6\x9C\xAC" "CD! x\xE6\x97\xA5\xE6\x9C\xAC" "A",
     "\xE6\x97\xA5|A| \xCA\xB0|B| \xE6\x9C\xAC|CD|!| x\xE6\x97\xA5\xE6\x9C\xAC|A"},
    {TP_PRE_TEKKEN, "\xCE\xA3\xE6\x97\xA5\xCF\x83\xCE\xA9 \xCC\x81" "AB",
     "\xCE\xA3\xE6\x97\xA5\xCF\x83|\xCE\xA9| \xCC\x81|AB"},
    {TP_PRE_TEKKEN, "x9y x9y12345's's're",
     "x|9|y| x|9|y|1|2|3|4|5|'s|'s|'re"},
    {TP_PRE_TEKKEN, "  \xCA\xB0" "a\xC7\x85x7're'LL\r\n\n7\xC7\x85x",
     " | \xCA\xB0" "a|\xC7\x85x|7|'re|'LL|\r\n\n|7|\xC7\x85x"},
    {TP_PRE_TEKKEN, "'s\xCC\x81\xCE\xA3\xCF\x83\xC3\x89" "COLE",
     "'s\xCC\x81|\xCE\xA3\xCF\x83|\xC3\x89" "COLE"},
    {TP_PRE_TEKKEN, "7!?\r\ncamelCase\nA's\r\n",
     "7|!?\r\n|camel|Case|\n|A|'s|\r\n"},
    {TP_PRE_TEKKEN, "\n\r\n\xC7\x85x\nHTMLParser--'re\xC3\x89" "COLEcamelCase",
     "\n\r\n|\xC7\x85x|\n|HTMLParser|--'|re|\xC3\x89" "COLEcamel|Case"},
    {TP_PRE_TEKKEN, "\xCA\xB0" "a\xC3\xA9\nHTMLParser",
     "\xCA\xB0" "a\xC3\xA9|\n|HTMLParser"},
    {TP_PRE_TEKKEN, "'s\xE6\x97\xA5\xE6\x9C\xAC's  --\xCA\xB0" "a're\xC3\xA9\r\n\xCC\x81",
     "'s\xE6\x97\xA5\xE6\x9C\xAC|'s| | --|\xCA\xB0" "a|'re\xC3\xA9|\r\n|\xCC\x81"},
    {TP_PRE_GPT4O, "HTMLParser camelCase I'M don't",
     "HTMLParser| camel|Case| I'M| don't"},
    {TP_PRE_GPT4O, "Path/to/file.txt\n// comment /\n",
     "Path|/to|/file|.txt|\n|//| comment| /\n"},
    {TP_PRE_GPT4O, "\xC3\x89" "COLE \xC3\xA9lan \xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91 \xCF\x83\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1",
     "\xC3\x89" "COLE| \xC3\xA9lan| \xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91| \xCF\x83\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1"},
    {TP_PRE_GPT4O, "e\xCC\x81te\xCC\x81 \xCC\x81x",
     "e\xCC\x81te\xCC\x81| \xCC\x81x"},
    {TP_PRE_GPT4O, "\xC7\x85ungla \xCA\xB0" "a \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88",
     "\xC7\x85ungla| \xCA\xB0" "a| \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88"},
    {TP_PRE_GPT4O, "2024-12-06: 3.14159\n\nend",
     "202|4|-|12|-|06|:| |3|.|141|59|\n\n|end"},
    {TP_PRE_GPT4O, "  leading  ",
     " | leading|  "},
    {TP_PRE_GPT4O, "\xE6\x97\xA5" "A \xCA\xB0" "B \xE6\x9C\xAC" "CD! x\xE6\x97\xA5\xE6\x9C\xAC" "A",
     "\xE6\x97\xA5|A| \xCA\xB0|B| \xE6\x9C\xAC|CD|!| x\xE6\x97\xA5\xE6\x9C\xAC|A"},
    {TP_PRE_GPT4O, "\xCE\xA3\xE6\x97\xA5\xCF\x83\xCE\xA9 \xCC\x81" "AB",
     "\xCE\xA3\xE6\x97\xA5\xCF\x83|\xCE\xA9| \xCC\x81|AB"},
    {TP_PRE_GPT4O, "x9y x9y12345's's're",
     "x|9|y| x|9|y|123|45|'s's|'re"},
    {TP_PRE_GPT4O, "  \xCA\xB0" "a\xC7\x85x7're'LL\r\n\n7\xC7\x85x",
     " | \xCA\xB0" "a|\xC7\x85x|7|'re'LL|\r\n\n|7|\xC7\x85x"},
    {TP_PRE_GPT4O, "'s\xCC\x81\xCE\xA3\xCF\x83\xC3\x89" "COLE",
     "'s\xCC\x81|\xCE\xA3\xCF\x83|\xC3\x89" "COLE"},
    {TP_PRE_GPT4O, "7!?\r\ncamelCase\nA's\r\n",
     "7|!?\r\n|camel|Case|\n|A's|\r\n"},
    {TP_PRE_GPT4O, "\n\r\n\xC7\x85x\nHTMLParser--'re\xC3\x89" "COLEcamelCase",
     "\n\r\n|\xC7\x85x|\n|HTMLParser|--'|re|\xC3\x89" "COLEcamel|Case"},
    {TP_PRE_GPT4O, "\xCA\xB0" "a\xC3\xA9\nHTMLParser",
     "\xCA\xB0" "a\xC3\xA9|\n|HTMLParser"},
    {TP_PRE_GPT4O, "'s\xE6\x97\xA5\xE6\x9C\xAC's  --\xCA\xB0" "a're\xC3\xA9\r\n\xCC\x81",
     "'s\xE6\x97\xA5\xE6\x9C\xAC's| | --|\xCA\xB0" "a're|\xC3\xA9|\r\n|\xCC\x81"},
  };
  check_split_cases(cases, sizeof cases / sizeof cases[0]);
}

/* DeepSeek's lists of expressions (deepseek-llm, deepseek-coder,
 * deepseek-v3), each cutting the pieces the one before left, against the
 * splits Python's `regex` module gives for llama.cpp's lists applied the
 * same way (scripts/pretokenize_reference.py prints these rows): cased
 * letters inside and outside deepseek-llm's written-out set (Latin-1,
 * Greek, Cyrillic, Georgian, Cherokee, Deseret, Adlam, full-width; ƻ and ʔ
 * are not in it), its punctuation range that holds the ASCII letters, CJK,
 * kana and Hangul, full-width digits and punctuation, U+3000 and U+2003 (in
 * the written-out ranges as well as \s), combining marks, Devanagari,
 * Arabic digits, emoji, a zero-width joiner, newlines, tabs, trailing runs. */
TEST(tokenizer_pretokenize_deepseek_matches_the_regex) {
  static const split_case cases[] = {
    {TP_PRE_DEEPSEEK_LLM, "Hello world 12345 it's",
     "Hello| world| |12345| it|'|s"},
    {TP_PRE_DEEPSEEK_LLM, "2024-12-06: 3.14159\n\nend",
     "2024|-|12|-|06|:| |3|.|14159|\n|\n|end"},
    {TP_PRE_DEEPSEEK_LLM, "  leading and trailing  ",
     " | leading| and| trailing|  "},
    {TP_PRE_DEEPSEEK_LLM, "x += 1; // note\r\n\tif (a) {b}",
     "x| +=| |1|;| //| note|\r|\n|\tif| (|a|)| {|b|}"},
    {TP_PRE_DEEPSEEK_LLM, "H\xC3\xA9llo \xC3\x89" "COLE \xD0\xBC\xD0\xB8\xD1\x80 \xCE\xA3\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1 caf\xC3\xA9",
     "H|\xC3\xA9|llo| \xC3\x89|COLE| \xD0\xBC\xD0\xB8\xD1\x80| \xCE\xA3\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1| caf|\xC3\xA9"},
    {TP_PRE_DEEPSEEK_LLM, "\xE4\xB8\xAD\xE6\x96\x87\xEF\xBC\x8C\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x80\x82\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
     "\xE4\xB8\xAD\xE6\x96\x87|\xEF\xBC\x8C|\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88|\xE3\x80\x82|\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"},
    {TP_PRE_DEEPSEEK_LLM, "e\xCC\x81te\xCC\x81 \xCC\x81x \xD0\xBA\xD0\xBD\xD0\xB8\xCC\x81\xD0\xB3\xD0\xB0",
     "e|\xCC\x81|te|\xCC\x81 \xCC\x81|x| \xD0\xBA\xD0\xBD\xD0\xB8|\xCC\x81|\xD0\xB3\xD0\xB0"},
    {TP_PRE_DEEPSEEK_LLM, "\xE2\x80\x9Cquoted\xE2\x80\x9D \xE2\x80\x98single\xE2\x80\x99 \xE2\x80\x94 dash\xE2\x80\xA6 ok",
     "\xE2\x80\x9C|quoted|\xE2\x80\x9D| |\xE2\x80\x98|single|\xE2\x80\x99| |\xE2\x80\x94| dash|\xE2\x80\xA6| ok"},
    {TP_PRE_DEEPSEEK_LLM, "emoji \xF0\x9F\x98\x80\xF0\x9F\x98\x80 x\xE2\x82\xAC" "5 $HOME ~/.bashrc",
     "emoji| \xF0\x9F\x98\x80\xF0\x9F\x98\x80| x|\xE2\x82\xAC|5| $|HOME| ~/.|bashrc"},
    {TP_PRE_DEEPSEEK_LLM, "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93\xEF\xBD\x98\xEF\xBD\x99\xEF\xBD\x9A\xEF\xBC\x81\xEF\xBC\x9F\xE3\x80\x80\xE5\x85\xA8\xE8\xA7\x92",
     "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93|\xEF\xBD\x98\xEF\xBD\x99\xEF\xBD\x9A|\xEF\xBC\x81\xEF\xBC\x9F|\xE3\x80\x80|\xE5\x85\xA8\xE8\xA7\x92"},
    {TP_PRE_DEEPSEEK_LLM, "a\xE2\x80\x8D" "b \xE2\x80\x8D\xE2\x80\x8D" "c",
     "a|\xE2\x80\x8D|b| |\xE2\x80\x8D\xE2\x80\x8D|c"},
    {TP_PRE_DEEPSEEK_LLM, "trailing \t ",
     "trailing| \t "},
    {TP_PRE_DEEPSEEK_LLM, "\xD9\xA3\xD9\xA4\xD9\xA5 \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A 123456789",
     "\xD9\xA3\xD9\xA4\xD9\xA5| \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A |123456789"},
    {TP_PRE_DEEPSEEK_LLM, "\xE0\xA4\x95\xE0\xA4\xBF \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80",
     "\xE0\xA4\x95\xE0\xA4\xBF| |\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80"},
    {TP_PRE_DEEPSEEK_LLM, ".hello world.py/path",
     ".|hello| world|.|py|/|path"},
    {TP_PRE_DEEPSEEK_LLM, "\xC6\xBBx\xCA\x94y \xE1\x82\xA0\xE1\x8F\xB8\xEF\xBC\xA1\xF0\x90\x90\x80\xF0\x9E\xA4\x80 \xCA\xB0z \xE2\x84\xA6\xE2\x84\xAA",
     "\xC6\xBB|x|\xCA\x94|y| |\xE1\x82\xA0\xE1\x8F\xB8|\xEF\xBC\xA1|\xF0\x90\x90\x80\xF0\x9E\xA4\x80| \xCA\xB0|z| |\xE2\x84\xA6\xE2\x84\xAA"},
    {TP_PRE_DEEPSEEK_LLM, "a \n  b\r\n\r\n  c\t\tx  \n",
     "a| |\n| | b|\r|\n|\r|\n| | c|\t|\tx|  |\n"},
    {TP_PRE_DEEPSEEK_LLM, " \xCC\x81x \xE3\x80\x80y\xE3\x80\x81z \xE2\x80\x83w",
     " \xCC\x81|x| |\xE3\x80\x80|y|\xE3\x80\x81|z| |\xE2\x80\x83|w"},
    {TP_PRE_DEEPSEEK_LLM, "\xCE\xA3\xCF\x83!?+=\r\n+=",
     "\xCE\xA3\xCF\x83|!?+=|\r|\n|+="},
    {TP_PRE_DEEPSEEK_LLM, "!?\n12345\xF0\x9F\x98\x80(x)\xCE\xA3\xCF\x83world\xEF\xBC\x8C",
     "!?|\n|12345|\xF0\x9F\x98\x80|(|x|)|\xCE\xA3\xCF\x83|world|\xEF\xBC\x8C"},
    {TP_PRE_DEEPSEEK_LLM, "\xE0\xA4\x95\xE0\xA4\xBFHello\xC3\x89" "COLE\r\n",
     "\xE0\xA4\x95\xE0\xA4\xBF|Hello|\xC3\x89|COLE|\r|\n"},
    {TP_PRE_DEEPSEEK_LLM, "H\xC3\xA9llo\xE3\x80\x82\xEF\xBC\x8C",
     "H|\xC3\xA9|llo|\xE3\x80\x82|\xEF\xBC\x8C"},
    {TP_PRE_DEEPSEEK_LLM, "H\xC3\xA9llo\xE6\x97\xA5\xE6\x9C\xAC+=\xE3\x80\x80",
     "H|\xC3\xA9|llo|\xE6\x97\xA5\xE6\x9C\xAC|+=|\xE3\x80\x80"},
    {TP_PRE_DEEPSEEK_LLM, "\xE2\x82\xAC\xD9\xA3\xD9\xA4\xEF\xBC\x8C\xE4\xB8\xAD\xE6\x96\x87\xEF\xBC\x8C$xe\xCC\x81  \xE6\x97\xA5\xE6\x9C\xAC",
     "\xE2\x82\xAC|\xD9\xA3\xD9\xA4|\xEF\xBC\x8C|\xE4\xB8\xAD\xE6\x96\x87|\xEF\xBC\x8C$|xe|\xCC\x81  |\xE6\x97\xA5\xE6\x9C\xAC"},
    {TP_PRE_DEEPSEEK_LLM, "\xE0\xA4\x95\xE0\xA4\xBF$xH\xC3\xA9llo\xE3\x80\x82\xE2\x82\xAC.py\n\xE3\x80\x82\xE3\x80\x82",
     "\xE0\xA4\x95\xE0\xA4\xBF|$|xH|\xC3\xA9|llo|\xE3\x80\x82|\xE2\x82\xAC|.|py|\n|\xE3\x80\x82\xE3\x80\x82"},
    {TP_PRE_DEEPSEEK_LLM, "!?\xCE\xA3\xCF\x83...!?\xEF\xBC\x91\xEF\xBC\x92\xE6\x97\xA5\xE6\x9C\xACH\xC3\xA9llo",
     "!?|\xCE\xA3\xCF\x83|...!?|\xEF\xBC\x91\xEF\xBC\x92|\xE6\x97\xA5\xE6\x9C\xAC|H|\xC3\xA9|llo"},
    {TP_PRE_DEEPSEEK_CODER, "Hello world 12345 it's",
     "Hello| world| |1|2|3|4|5| it|'|s"},
    {TP_PRE_DEEPSEEK_CODER, "2024-12-06: 3.14159\n\nend",
     "2|0|2|4|-|1|2|-|0|6|:| |3|.|1|4|1|5|9|\n|\n|end"},
    {TP_PRE_DEEPSEEK_CODER, "  leading and trailing  ",
     " | leading| and| trailing|  "},
    {TP_PRE_DEEPSEEK_CODER, "x += 1; // note\r\n\tif (a) {b}",
     "x| += |1|;| //| note|\r|\n|\tif| (|a|)| {|b|}"},
    {TP_PRE_DEEPSEEK_CODER, "H\xC3\xA9llo \xC3\x89" "COLE \xD0\xBC\xD0\xB8\xD1\x80 \xCE\xA3\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1 caf\xC3\xA9",
     "H\xC3\xA9llo| \xC3\x89" "COLE| \xD0\xBC\xD0\xB8\xD1\x80| \xCE\xA3\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1| caf\xC3\xA9"},
    {TP_PRE_DEEPSEEK_CODER, "\xE4\xB8\xAD\xE6\x96\x87\xEF\xBC\x8C\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x80\x82\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
     "\xE4\xB8\xAD\xE6\x96\x87|\xEF\xBC\x8C|\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88|\xE3\x80\x82|\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"},
    {TP_PRE_DEEPSEEK_CODER, "e\xCC\x81te\xCC\x81 \xCC\x81x \xD0\xBA\xD0\xBD\xD0\xB8\xCC\x81\xD0\xB3\xD0\xB0",
     "e|\xCC\x81|te|\xCC\x81 \xCC\x81|x| \xD0\xBA\xD0\xBD\xD0\xB8|\xCC\x81|\xD0\xB3\xD0\xB0"},
    {TP_PRE_DEEPSEEK_CODER, "\xE2\x80\x9Cquoted\xE2\x80\x9D \xE2\x80\x98single\xE2\x80\x99 \xE2\x80\x94 dash\xE2\x80\xA6 ok",
     "\xE2\x80\x9C|quoted|\xE2\x80\x9D| |\xE2\x80\x98|single|\xE2\x80\x99| |\xE2\x80\x94| dash|\xE2\x80\xA6| ok"},
    {TP_PRE_DEEPSEEK_CODER, "emoji \xF0\x9F\x98\x80\xF0\x9F\x98\x80 x\xE2\x82\xAC" "5 $HOME ~/.bashrc",
     "emoji| \xF0\x9F\x98\x80\xF0\x9F\x98\x80| x|\xE2\x82\xAC|5| $|HOME| ~|/.|bashrc"},
    {TP_PRE_DEEPSEEK_CODER, "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93\xEF\xBD\x98\xEF\xBD\x99\xEF\xBD\x9A\xEF\xBC\x81\xEF\xBC\x9F\xE3\x80\x80\xE5\x85\xA8\xE8\xA7\x92",
     "\xEF\xBC\x91|\xEF\xBC\x92|\xEF\xBC\x93|\xEF\xBD\x98\xEF\xBD\x99\xEF\xBD\x9A|\xEF\xBC\x81\xEF\xBC\x9F|\xE3\x80\x80\xE5\x85\xA8\xE8\xA7\x92"},
    {TP_PRE_DEEPSEEK_CODER, "a\xE2\x80\x8D" "b \xE2\x80\x8D\xE2\x80\x8D" "c",
     "a|\xE2\x80\x8D|b| |\xE2\x80\x8D\xE2\x80\x8D|c"},
    {TP_PRE_DEEPSEEK_CODER, "trailing \t ",
     "trailing| \t "},
    {TP_PRE_DEEPSEEK_CODER, "\xD9\xA3\xD9\xA4\xD9\xA5 \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A 123456789",
     "\xD9\xA3|\xD9\xA4|\xD9\xA5| \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A| |1|2|3|4|5|6|7|8|9"},
    {TP_PRE_DEEPSEEK_CODER, "\xE0\xA4\x95\xE0\xA4\xBF \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80",
     "\xE0\xA4\x95|\xE0\xA4\xBF| |\xE0\xA4\xB9|\xE0\xA4\xBF|\xE0\xA4\xA8|\xE0\xA5\x8D|\xE0\xA4\xA6|\xE0\xA5\x80"},
    {TP_PRE_DEEPSEEK_CODER, ".hello world.py/path",
     ".|hello| world|.|py|/|path"},
    {TP_PRE_DEEPSEEK_CODER, "\xC6\xBBx\xCA\x94y \xE1\x82\xA0\xE1\x8F\xB8\xEF\xBC\xA1\xF0\x90\x90\x80\xF0\x9E\xA4\x80 \xCA\xB0z \xE2\x84\xA6\xE2\x84\xAA",
     "\xC6\xBBx\xCA\x94y| |\xE1\x82\xA0\xE1\x8F\xB8|\xEF\xBC\xA1\xF0\x90\x90\x80\xF0\x9E\xA4\x80| \xCA\xB0z| |\xE2\x84\xA6\xE2\x84\xAA"},
    {TP_PRE_DEEPSEEK_CODER, "a \n  b\r\n\r\n  c\t\tx  \n",
     "a| |\n| | b|\r|\n|\r|\n| | c|\t|\tx|  |\n"},
    {TP_PRE_DEEPSEEK_CODER, " \xCC\x81x \xE3\x80\x80y\xE3\x80\x81z \xE2\x80\x83w",
     " \xCC\x81|x| |\xE3\x80\x80|y|\xE3\x80\x81|z| |\xE2\x80\x83|w"},
    {TP_PRE_DEEPSEEK_CODER, "\xCE\xA3\xCF\x83!?+=\r\n+=",
     "\xCE\xA3\xCF\x83|!?|+=|\r|\n|+="},
    {TP_PRE_DEEPSEEK_CODER, "!?\n12345\xF0\x9F\x98\x80(x)\xCE\xA3\xCF\x83world\xEF\xBC\x8C",
     "!?|\n|1|2|3|4|5|\xF0\x9F\x98\x80|(|x|)|\xCE\xA3\xCF\x83world|\xEF\xBC\x8C"},
    {TP_PRE_DEEPSEEK_CODER, "\xE0\xA4\x95\xE0\xA4\xBFHello\xC3\x89" "COLE\r\n",
     "\xE0\xA4\x95|\xE0\xA4\xBF|Hello\xC3\x89" "COLE|\r|\n"},
    {TP_PRE_DEEPSEEK_CODER, "H\xC3\xA9llo\xE3\x80\x82\xEF\xBC\x8C",
     "H\xC3\xA9llo|\xE3\x80\x82|\xEF\xBC\x8C"},
    {TP_PRE_DEEPSEEK_CODER, "H\xC3\xA9llo\xE6\x97\xA5\xE6\x9C\xAC+=\xE3\x80\x80",
     "H\xC3\xA9llo|\xE6\x97\xA5\xE6\x9C\xAC|+=|\xE3\x80\x80"},
    {TP_PRE_DEEPSEEK_CODER, "\xE2\x82\xAC\xD9\xA3\xD9\xA4\xEF\xBC\x8C\xE4\xB8\xAD\xE6\x96\x87\xEF\xBC\x8C$xe\xCC\x81  \xE6\x97\xA5\xE6\x9C\xAC",
     "\xE2\x82\xAC|\xD9\xA3|\xD9\xA4|\xEF\xBC\x8C|\xE4\xB8\xAD\xE6\x96\x87|\xEF\xBC\x8C|$|xe|\xCC\x81 | |\xE6\x97\xA5\xE6\x9C\xAC"},
    {TP_PRE_DEEPSEEK_CODER, "\xE0\xA4\x95\xE0\xA4\xBF$xH\xC3\xA9llo\xE3\x80\x82\xE2\x82\xAC.py\n\xE3\x80\x82\xE3\x80\x82",
     "\xE0\xA4\x95|\xE0\xA4\xBF|$|xH\xC3\xA9llo|\xE3\x80\x82|\xE2\x82\xAC|.|py|\n|\xE3\x80\x82\xE3\x80\x82"},
    {TP_PRE_DEEPSEEK_CODER, "!?\xCE\xA3\xCF\x83...!?\xEF\xBC\x91\xEF\xBC\x92\xE6\x97\xA5\xE6\x9C\xACH\xC3\xA9llo",
     "!?|\xCE\xA3\xCF\x83|...!?|\xEF\xBC\x91|\xEF\xBC\x92|\xE6\x97\xA5\xE6\x9C\xAC|H\xC3\xA9llo"},
    {TP_PRE_DEEPSEEK_V3, "Hello world 12345 it's",
     "Hello| world| |123|45| it|'s"},
    {TP_PRE_DEEPSEEK_V3, "2024-12-06: 3.14159\n\nend",
     "202|4|-|12|-|06|:| |3|.|141|59|\n\n|end"},
    {TP_PRE_DEEPSEEK_V3, "  leading and trailing  ",
     " | leading| and| trailing|  "},
    {TP_PRE_DEEPSEEK_V3, "x += 1; // note\r\n\tif (a) {b}",
     "x| +=| |1|;| //| note|\r\n|\tif| (|a|)| {|b|}"},
    {TP_PRE_DEEPSEEK_V3, "H\xC3\xA9llo \xC3\x89" "COLE \xD0\xBC\xD0\xB8\xD1\x80 \xCE\xA3\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1 caf\xC3\xA9",
     "H\xC3\xA9llo| \xC3\x89" "COLE| \xD0\xBC\xD0\xB8\xD1\x80| \xCE\xA3\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1| caf\xC3\xA9"},
    {TP_PRE_DEEPSEEK_V3, "\xE4\xB8\xAD\xE6\x96\x87\xEF\xBC\x8C\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x80\x82\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
     "\xE4\xB8\xAD\xE6\x96\x87|\xEF\xBC\x8C|\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88|\xE3\x80\x82|\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"},
    {TP_PRE_DEEPSEEK_V3, "e\xCC\x81te\xCC\x81 \xCC\x81x \xD0\xBA\xD0\xBD\xD0\xB8\xCC\x81\xD0\xB3\xD0\xB0",
     "e\xCC\x81te\xCC\x81| \xCC\x81x| \xD0\xBA\xD0\xBD\xD0\xB8\xCC\x81\xD0\xB3\xD0\xB0"},
    {TP_PRE_DEEPSEEK_V3, "\xE2\x80\x9Cquoted\xE2\x80\x9D \xE2\x80\x98single\xE2\x80\x99 \xE2\x80\x94 dash\xE2\x80\xA6 ok",
     "\xE2\x80\x9C|quoted|\xE2\x80\x9D| \xE2\x80\x98|single|\xE2\x80\x99| \xE2\x80\x94| dash|\xE2\x80\xA6| ok"},
    {TP_PRE_DEEPSEEK_V3, "emoji \xF0\x9F\x98\x80\xF0\x9F\x98\x80 x\xE2\x82\xAC" "5 $HOME ~/.bashrc",
     "emoji| \xF0\x9F\x98\x80\xF0\x9F\x98\x80| x|\xE2\x82\xAC|5| $|HOME| ~/.|bashrc"},
    {TP_PRE_DEEPSEEK_V3, "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93\xEF\xBD\x98\xEF\xBD\x99\xEF\xBD\x9A\xEF\xBC\x81\xEF\xBC\x9F\xE3\x80\x80\xE5\x85\xA8\xE8\xA7\x92",
     "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93|\xEF\xBD\x98\xEF\xBD\x99\xEF\xBD\x9A|\xEF\xBC\x81\xEF\xBC\x9F|\xE3\x80\x80|\xE5\x85\xA8\xE8\xA7\x92"},
    {TP_PRE_DEEPSEEK_V3, "a\xE2\x80\x8D" "b \xE2\x80\x8D\xE2\x80\x8D" "c",
     "a|\xE2\x80\x8D" "b| |\xE2\x80\x8D|\xE2\x80\x8D" "c"},
    {TP_PRE_DEEPSEEK_V3, "trailing \t ",
     "trailing| \t "},
    {TP_PRE_DEEPSEEK_V3, "\xD9\xA3\xD9\xA4\xD9\xA5 \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A 123456789",
     "\xD9\xA3\xD9\xA4\xD9\xA5| \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A| |123|456|789"},
    {TP_PRE_DEEPSEEK_V3, "\xE0\xA4\x95\xE0\xA4\xBF \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80",
     "\xE0\xA4\x95\xE0\xA4\xBF| \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80"},
    {TP_PRE_DEEPSEEK_V3, ".hello world.py/path",
     ".hello| world|.py|/path"},
    {TP_PRE_DEEPSEEK_V3, "\xC6\xBBx\xCA\x94y \xE1\x82\xA0\xE1\x8F\xB8\xEF\xBC\xA1\xF0\x90\x90\x80\xF0\x9E\xA4\x80 \xCA\xB0z \xE2\x84\xA6\xE2\x84\xAA",
     "\xC6\xBBx\xCA\x94y| \xE1\x82\xA0\xE1\x8F\xB8\xEF\xBC\xA1\xF0\x90\x90\x80\xF0\x9E\xA4\x80| \xCA\xB0z| \xE2\x84\xA6\xE2\x84\xAA"},
    {TP_PRE_DEEPSEEK_V3, "a \n  b\r\n\r\n  c\t\tx  \n",
     "a| \n| | b|\r\n\r\n| | c|\t|\tx|  \n"},
    {TP_PRE_DEEPSEEK_V3, " \xCC\x81x \xE3\x80\x80y\xE3\x80\x81z \xE2\x80\x83w",
     " \xCC\x81x| |\xE3\x80\x80y|\xE3\x80\x81|z| |\xE2\x80\x83w"},
    {TP_PRE_DEEPSEEK_V3, "\xCE\xA3\xCF\x83!?+=\r\n+=",
     "\xCE\xA3\xCF\x83|!?+=\r\n|+="},
    {TP_PRE_DEEPSEEK_V3, "!?\n12345\xF0\x9F\x98\x80(x)\xCE\xA3\xCF\x83world\xEF\xBC\x8C",
     "!?\n|123|45|\xF0\x9F\x98\x80(|x|)|\xCE\xA3\xCF\x83world|\xEF\xBC\x8C"},
    {TP_PRE_DEEPSEEK_V3, "\xE0\xA4\x95\xE0\xA4\xBFHello\xC3\x89" "COLE\r\n",
     "\xE0\xA4\x95\xE0\xA4\xBFHello\xC3\x89" "COLE|\r\n"},
    {TP_PRE_DEEPSEEK_V3, "H\xC3\xA9llo\xE3\x80\x82\xEF\xBC\x8C",
     "H\xC3\xA9llo|\xE3\x80\x82\xEF\xBC\x8C"},
    {TP_PRE_DEEPSEEK_V3, "H\xC3\xA9llo\xE6\x97\xA5\xE6\x9C\xAC+=\xE3\x80\x80",
     "H\xC3\xA9llo|\xE6\x97\xA5\xE6\x9C\xAC|+=|\xE3\x80\x80"},
    {TP_PRE_DEEPSEEK_V3, "\xE2\x82\xAC\xD9\xA3\xD9\xA4\xEF\xBC\x8C\xE4\xB8\xAD\xE6\x96\x87\xEF\xBC\x8C$xe\xCC\x81  \xE6\x97\xA5\xE6\x9C\xAC",
     "\xE2\x82\xAC|\xD9\xA3\xD9\xA4|\xEF\xBC\x8C|\xE4\xB8\xAD\xE6\x96\x87|\xEF\xBC\x8C$|xe\xCC\x81|  |\xE6\x97\xA5\xE6\x9C\xAC"},
    {TP_PRE_DEEPSEEK_V3, "\xE0\xA4\x95\xE0\xA4\xBF$xH\xC3\xA9llo\xE3\x80\x82\xE2\x82\xAC.py\n\xE3\x80\x82\xE3\x80\x82",
     "\xE0\xA4\x95\xE0\xA4\xBF|$xH|\xC3\xA9llo|\xE3\x80\x82\xE2\x82\xAC.|py|\n|\xE3\x80\x82\xE3\x80\x82"},
    {TP_PRE_DEEPSEEK_V3, "!?\xCE\xA3\xCF\x83...!?\xEF\xBC\x91\xEF\xBC\x92\xE6\x97\xA5\xE6\x9C\xACH\xC3\xA9llo",
     "!?|\xCE\xA3\xCF\x83|...!?|\xEF\xBC\x91\xEF\xBC\x92|\xE6\x97\xA5\xE6\x9C\xAC|H\xC3\xA9llo"},
  };
  check_split_cases(cases, sizeof cases / sizeof cases[0]);
}

/* What the table above cannot hold. */
TEST(tokenizer_pretokenize_deepseek_rules) {
  /* an undecodable byte is a symbol, as the U+FFFD llama.cpp decodes it to
   * (the regex module's splits of "a\uFFFD!b" and "\uFFFD\u0301a") */
  CHECK_SPLIT(TP_PRE_DEEPSEEK_V3, "a\xFF!b", "a|\xFF!|b");
  CHECK_SPLIT(TP_PRE_DEEPSEEK_V3, "\xFF\xCC\x81" "a", "\xFF|\xCC\x81" "a");
  CHECK_SPLIT(TP_PRE_DEEPSEEK_LLM, "a\xFF!b", "a|\xFF|!|b");
  CHECK_SPLIT(TP_PRE_DEEPSEEK_CODER, "a\xFF!b", "a|\xFF|!|b");
  CHECK_SPLIT(TP_PRE_DEEPSEEK_LLM, "", "");
  /* \s+$ holds at the end of a piece, not only of the text: "a  " is
   * deepseek-llm's piece before the newline cuts it */
  CHECK_SPLIT(TP_PRE_DEEPSEEK_LLM, "\xE6\x97\xA5  \n", "\xE6\x97\xA5|  |\n");
  /* a long whitespace run between CJK code points that no expression takes
   * whole (\s+$ is tried once per piece, not from each of its spaces) */
  static char text[20006];
  memcpy(text, "\xE6\x97\xA5", 3);
  memset(text + 3, ' ', 20000);
  memcpy(text + 20003, "\xE6\x97\xA5", 3);
  size_t count[2] = {0, 0};
  CHECK_OK(tp_pretokenize(TP_PRE_DEEPSEEK_LLM, text, sizeof text, count_pieces, count));
  CHECK(count[0] == 3 && count[1] == sizeof text); /* 日 | the spaces | 日 */
}

/* Kimi K2's pattern (tiktoken's; its tokenization_kimi.py states it)
 * against the splits Python's `regex` module gives for it in version 1
 * (where && in a class is intersection; scripts/pretokenize_reference.py
 * prints these rows): Han runs (々, 〇 and the radicals are Han; kana, ー
 * and the CJK punctuation are not) cut out of words, words by case with
 * contractions in either case (and 'ſ, a long s: (?i) folds it to s),
 * digits in threes, combining marks after Latin, Cyrillic and Han,
 * full-width digits and letters, Hangul, Arabic, Devanagari, emoji,
 * a zero-width joiner, punctuation runs, slashes, newlines, tabs,
 * trailing spaces. */
TEST(tokenizer_pretokenize_kimi_k2_matches_the_regex) {
  static const split_case cases[] = {
    {TP_PRE_KIMI_K2, "HTMLParser camelCase I'M don't they'LL we've",
     "HTMLParser| camel|Case| I'M| don't| they'LL| we've"},
    {TP_PRE_KIMI_K2, "Hello world 12345 it's 1234567",
     "Hello| world| |123|45| it's| |123|456|7"},
    {TP_PRE_KIMI_K2, "\xE4\xB8\xAD\xE6\x96\x87" "English\xE6\xB7\xB7\xE5\x90\x88text\xEF\xBC\x8C\xE6\xB5\x8B\xE8\xAF\x95\xE3\x80\x82",
     "\xE4\xB8\xAD\xE6\x96\x87|English|\xE6\xB7\xB7\xE5\x90\x88|text|\xEF\xBC\x8C|\xE6\xB5\x8B\xE8\xAF\x95|\xE3\x80\x82"},
    {TP_PRE_KIMI_K2, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x81\xA8\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A\xE3\x80\x81\xE3\x81\xB2\xE3\x82\x89\xE3\x81\x8C\xE3\x81\xAA\xE3\x80\x82",
     "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E|\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x81\xA8\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A|\xE3\x80\x81\xE3\x81\xB2\xE3\x82\x89\xE3\x81\x8C\xE3\x81\xAA|\xE3\x80\x82"},
    {TP_PRE_KIMI_K2, "\xE4\xBA\xBA\xE3\x80\x85 \xE3\x80\x87\xE3\x80\x87\xE4\xB8\x83 \xE2\xBA\x80\xE2\xBA\x81 \xE6\xBC\xA2\xE5\xAD\x97" "A",
     "\xE4\xBA\xBA\xE3\x80\x85| |\xE3\x80\x87\xE3\x80\x87\xE4\xB8\x83| \xE2\xBA\x80\xE2\xBA\x81| |\xE6\xBC\xA2\xE5\xAD\x97|A"},
    {TP_PRE_KIMI_K2, "\xC3\x89" "COLE \xC3\xA9lan \xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91 \xCF\x83\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1 \xC7\x85ungla \xCA\xB0" "a",
     "\xC3\x89" "COLE| \xC3\xA9lan| \xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91| \xCF\x83\xCE\xBF\xCF\x86\xCE\xAF\xCE\xB1| \xC7\x85ungla| \xCA\xB0" "a"},
    {TP_PRE_KIMI_K2, "e\xCC\x81te\xCC\x81 \xCC\x81x \xD0\xBA\xD0\xBD\xD0\xB8\xCC\x81\xD0\xB3\xD0\xB0 \xE4\xB8\xAD\xCC\x81\xE6\x96\x87",
     "e\xCC\x81te\xCC\x81| \xCC\x81x| \xD0\xBA\xD0\xBD\xD0\xB8\xCC\x81\xD0\xB3\xD0\xB0| |\xE4\xB8\xAD|\xCC\x81|\xE6\x96\x87"},
    {TP_PRE_KIMI_K2, "x += 1; // note\r\n\tif (a) {b}\n\n",
     "x| +=| |1|;| //| note|\r\n|\tif| (|a|)| {|b|}\n\n"},
    {TP_PRE_KIMI_K2, "  leading and trailing  ",
     " | leading| and| trailing|  "},
    {TP_PRE_KIMI_K2, "a \n  b\r\n\r\n  c\t\tx  \n",
     "a| \n| | b|\r\n\r\n| | c|\t|\tx|  \n"},
    {TP_PRE_KIMI_K2, "emoji \xF0\x9F\x98\x80\xF0\x9F\x98\x80 x\xE2\x82\xAC" "5 $HOME ~/.bashrc!!\n",
     "emoji| \xF0\x9F\x98\x80\xF0\x9F\x98\x80| x|\xE2\x82\xAC|5| $|HOME| ~/.|bashrc|!!\n"},
    {TP_PRE_KIMI_K2, "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93\xEF\xBD\x98\xEF\xBD\x99\xEF\xBD\x9A\xEF\xBC\x81\xEF\xBC\x9F\xE3\x80\x80\xE5\x85\xA8\xE8\xA7\x92",
     "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93|\xEF\xBD\x98\xEF\xBD\x99\xEF\xBD\x9A|\xEF\xBC\x81\xEF\xBC\x9F|\xE3\x80\x80|\xE5\x85\xA8\xE8\xA7\x92"},
    {TP_PRE_KIMI_K2, "\xD9\xA3\xD9\xA4\xD9\xA5 \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A \xE0\xA4\x95\xE0\xA4\xBF \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80 \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
     "\xD9\xA3\xD9\xA4\xD9\xA5| \xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A| \xE0\xA4\x95\xE0\xA4\xBF| \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80| \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"},
    {TP_PRE_KIMI_K2, "Path/to/file.txt\n// comment /\n",
     "Path|/to|/file|.txt|\n|//| comment| /\n"},
    {TP_PRE_KIMI_K2, "a\xE2\x80\x8D" "b \xE4\xB8\xAD'S \xE6\x96\x87's x'\xC5\xBF y'\xC5\xBFT",
     "a|\xE2\x80\x8D" "b| |\xE4\xB8\xAD|'S| |\xE6\x96\x87|'s| x'\xC5\xBF| y'\xC5\xBF|T"},
    {TP_PRE_KIMI_K2, "!\xE4\xB8\xAD !a ,\xE4\xB8\xAD\xE6\x96\x87 \xE2\xBA\x80" "a \xE3\x80\x87" "1",
     "!|\xE4\xB8\xAD| !|a| ,|\xE4\xB8\xAD\xE6\x96\x87| \xE2\xBA\x80|a| |\xE3\x80\x87|1"},
    {TP_PRE_KIMI_K2, "\xE3\x80\x87\xC3\x89" "COLE\xE4\xB8\xAD\xE6\x96\x87\xC3\xA9\n\xE3\x80\x80\xE2\x80\x8D",
     "\xE3\x80\x87|\xC3\x89" "COLE|\xE4\xB8\xAD\xE6\x96\x87|\xC3\xA9|\n|\xE3\x80\x80|\xE2\x80\x8D"},
    {TP_PRE_KIMI_K2, "12345HTMLParser...\xE6\x97\xA5\xE6\x9C\xAC\xE3\x80\x87",
     "123|45|HTMLParser|...|\xE6\x97\xA5\xE6\x9C\xAC\xE3\x80\x87"},
    {TP_PRE_KIMI_K2, "\xEF\xBC\x8C\xCE\xA3\xCF\x83\xC7\x85xx\xC5\xBF\xE3\x80\x85",
     "\xEF\xBC\x8C\xCE\xA3\xCF\x83|\xC7\x85xx\xC5\xBF|\xE3\x80\x85"},
    {TP_PRE_KIMI_K2, "\xEF\xBC\x91\xEF\xBC\x92I'M7\r\n",
     "\xEF\xBC\x91\xEF\xBC\x92|I'M|7|\r\n"},
    {TP_PRE_KIMI_K2, "\xE3\x80\x80\xEF\xBC\x91\xEF\xBC\x92x\xC5\xBF\t",
     "\xE3\x80\x80|\xEF\xBC\x91\xEF\xBC\x92|x\xC5\xBF|\t"},
    {TP_PRE_KIMI_K2, "\xE3\x80\x80" "12345\xC7\x85xdon't\xC3\x89" "COLE",
     "\xE3\x80\x80|123|45|\xC7\x85xdon't|\xC3\x89" "COLE"},
    {TP_PRE_KIMI_K2, "'s\xEF\xBC\x8C\xE3\x83\xBC\xC7\x85x\xD9\xA3\xD9\xA4 ",
     "'s|\xEF\xBC\x8C\xE3\x83\xBC\xC7\x85x|\xD9\xA3\xD9\xA4| "},
    {TP_PRE_KIMI_K2, "\xE3\x80\x87\xEF\xBC\x8C" "e\xCC\x81HTMLParser\xE2\xBA\x80\xE4\xB8\xAD\xE6\x96\x87\xF0\x9F\x98\x80I'M",
     "\xE3\x80\x87|\xEF\xBC\x8C" "e\xCC\x81|HTMLParser|\xE2\xBA\x80\xE4\xB8\xAD\xE6\x96\x87|\xF0\x9F\x98\x80I'M"},
    {TP_PRE_KIMI_K2, "\xCC\x81I'M\xE3\x83\xBC\xE4\xB8\xAD\xE6\x96\x87\xE2\x82\xACHello\xE3\x80\x85...12345",
     "\xCC\x81|I'M|\xE3\x83\xBC|\xE4\xB8\xAD\xE6\x96\x87|\xE2\x82\xACHello|\xE3\x80\x85|...|123|45"},
    {TP_PRE_KIMI_K2, "\t...\xE3\x80\x82\xE4\xB8\xAD\xE6\x96\x87I'M(x)don't",
     "\t|...\xE3\x80\x82|\xE4\xB8\xAD\xE6\x96\x87|I'M|(x|)don't"},
    {TP_PRE_KIMI_K2, "(x)\r\n\xD9\xA3\xD9\xA4\xEF\xBC\x91\xEF\xBC\x92\xE3\x80\x80\xEF\xBC\x91\xEF\xBC\x92" "7/\xE2\x80\x8D",
     "(x|)\r\n|\xD9\xA3\xD9\xA4\xEF\xBC\x91|\xEF\xBC\x92|\xE3\x80\x80|\xEF\xBC\x91\xEF\xBC\x92" "7|/\xE2\x80\x8D"},
    {TP_PRE_KIMI_K2, "\xCC\x81\xCE\xA3\xCF\x83  e\xCC\x81'LL",
     "\xCC\x81\xCE\xA3\xCF\x83| | e\xCC\x81'LL"},
    {TP_PRE_KIMI_K2, "\xE2\x82\xAC(x)e\xCC\x81HelloI'M\xCC\x81HTMLParser",
     "\xE2\x82\xAC(|x|)e\xCC\x81|Hello|I'M|\xCC\x81HTMLParser"},
    {TP_PRE_KIMI_K2, "(x)\xE3\x83\xBC\xC7\x85xI'M\r\n\xC3\x89" "COLE",
     "(x|)\xE3\x83\xBC\xC7\x85x|I'M|\r\n|\xC3\x89" "COLE"},
  };
  check_split_cases(cases, sizeof cases / sizeof cases[0]);
}

TEST(tokenizer_pretokenize_kimi_k2_rules) {
  /* an undecodable byte is a symbol and a lead, as U+FFFD (the regex
   * module's splits of "a\uFFFD!b", "\uFFFD\u0301a" and " \uFFFD中") */
  CHECK_SPLIT(TP_PRE_KIMI_K2, "a\xFF!b", "a|\xFF!|b");
  CHECK_SPLIT(TP_PRE_KIMI_K2, "\xFF\xCC\x81" "a", "\xFF\xCC\x81" "a");
  CHECK_SPLIT(TP_PRE_KIMI_K2, " \xFF\xE4\xB8\xAD", " \xFF|\xE4\xB8\xAD");
  /* Han outside the BMP (U+20000, U+30000) and a Han mark (U+16FF0) leave
   * the Latin around them; a caseless modifier letter stays in the word */
  CHECK_SPLIT(TP_PRE_KIMI_K2, "a\xF0\xA0\x80\x80" "b\xF0\xB0\x80\x80", "a|\xF0\xA0\x80\x80|b|\xF0\xB0\x80\x80");
  CHECK_SPLIT(TP_PRE_KIMI_K2, "x\xF0\x96\xBF\xB0" "a", "x|\xF0\x96\xBF\xB0|a");
  CHECK_SPLIT(TP_PRE_KIMI_K2, "ab\xCA\xB0\xE3\x80\x85", "ab\xCA\xB0|\xE3\x80\x85");
  /* contractions: one per word, either case; a lone apostrophe is a symbol */
  CHECK_SPLIT(TP_PRE_KIMI_K2, "X'S'T aB'LLc a'", "X'S|'T| a|B'LL|c| a|'");
  CHECK_SPLIT(TP_PRE_KIMI_K2, "", "");
  /* long runs are taken whole in one pass each (no rescans from inside a run) */
  static char text[30000];
  for (size_t i = 0; i < 9999; i++) memcpy(text + 3 * i, "\xE4\xB8\xAD", 3); /* 中 x 9999 */
  text[29997] = 'a', text[29998] = 'B', text[29999] = 'c';
  size_t count[2] = {0, 0};
  CHECK_OK(tp_pretokenize(TP_PRE_KIMI_K2, text, sizeof text, count_pieces, count));
  CHECK(count[0] == 3 && count[1] == sizeof text); /* the Han run | a | Bc */
  memset(text, 'A', sizeof text - 1); /* capitals, then one small letter: one word */
  text[sizeof text - 1] = 'z';
  count[0] = count[1] = 0;
  CHECK_OK(tp_pretokenize(TP_PRE_KIMI_K2, text, sizeof text, count_pieces, count));
  CHECK(count[0] == 1 && count[1] == sizeof text);
}

TEST(tokenizer_pretokenize_gpt2) {
  CHECK_SPLIT(TP_PRE_GPT2, "I'm  here 42x\n\n end!?", "I|'m| | here| 42|x|\n\n| end|!?");
  CHECK_SPLIT(TP_PRE_GPT2, "I'M", "I|'|M"); /* contractions are case-sensitive */
  CHECK_SPLIT(TP_PRE_GPT2, "they'll we've you'd", "they|'ll| we|'ve| you|'d");
  CHECK_SPLIT(TP_PRE_GPT2, "a   ", "a|   ");     /* trailing run: \s+(?!\S) to the end */
  CHECK_SPLIT(TP_PRE_GPT2, " 'x", " '|x");
  CHECK_SPLIT(TP_PRE_GPT2, "café 12ab", "café| 12|ab");
  CHECK_SPLIT(TP_PRE_GPT2, "x\xC3\xA9\xF0\x9F\x98\x80y", "x\xC3\xA9|\xF0\x9F\x98\x80|y");
  CHECK_SPLIT(TP_PRE_GPT2, "", "");
}

TEST(tokenizer_pretokenize_whitespace_rules) {
  /* "a \tb": the run " \t" is followed by 'b'; \s+(?!\S) takes " " and the
   * '\t' is left alone (a single non-' ' space before a letter: \s+) */
  CHECK_SPLIT(TP_PRE_GPT2, "a \tb", "a| |\t|b");
  CHECK_SPLIT(TP_PRE_GPT2, "a\n b", "a|\n| b");
  CHECK_SPLIT(TP_PRE_GPT2, "a\u00a0b", "a|\u00a0|b"); /* NBSP is whitespace */
  CHECK_SPLIT(TP_PRE_GPT2, "\xFF\xFEx", "\xFF\xFE|x"); /* invalid bytes: symbols */
}

TEST(tokenizer_pretokenize_llama3) {
  CHECK_SPLIT(TP_PRE_LLAMA3, "I'm  here 42x\n\n end!?", "I|'m| | here| |42|x|\n\n| end|!?");
  CHECK_SPLIT(TP_PRE_LLAMA3, "I'M", "I|'M"); /* case-insensitive contractions */
  CHECK_SPLIT(TP_PRE_LLAMA3, "1234567", "123|456|7");
  CHECK_SPLIT(TP_PRE_LLAMA3, "x=(a+b)\n\nnext", "x|=(|a|+b|)\n\n|next");
  CHECK_SPLIT(TP_PRE_LLAMA3, ".hello", ".hello"); /* [^\r\n\p{L}\p{N}]?\p{L}+ */
  CHECK_SPLIT(TP_PRE_LLAMA3, "a \n  b", "a| \n| | b");
}

TEST(tokenizer_pretokenize_digits) {
  CHECK_SPLIT(TP_PRE_DIGITS_GPT2, "abc 2024!", "abc| |2|0|2|4|!");
  CHECK_SPLIT(TP_PRE_DIGITS_GPT2, "x 12 y", "x| |1|2| y");
  CHECK_SPLIT(TP_PRE_DIGITS_GPT2, "\u0661\u0662", "\u0661|\u0662"); /* Arabic-Indic digits */
}

TEST(tokenizer_unicode_classes) {
  CHECK_EQ_INT(tp_char_class_of('a'), TP_CHAR_LETTER);
  CHECK_EQ_INT(tp_char_class_of('7'), TP_CHAR_NUMBER);
  CHECK_EQ_INT(tp_char_class_of('_'), TP_CHAR_OTHER);
  CHECK_EQ_INT(tp_char_class_of(0xE9), TP_CHAR_LETTER);  /* é */
  CHECK_EQ_INT(tp_char_class_of(0xD7), TP_CHAR_OTHER);   /* × */
  CHECK_EQ_INT(tp_char_class_of(0xB2), TP_CHAR_NUMBER);  /* ² */
  CHECK_EQ_INT(tp_char_class_of(0x3042), TP_CHAR_LETTER); /* あ */
  CHECK_EQ_INT(tp_char_class_of(0x3000), TP_CHAR_SPACE);
  CHECK_EQ_INT(tp_char_class_of(0x0301), TP_CHAR_OTHER); /* combining acute */
  CHECK_EQ_INT(tp_char_class_of(0x1F600), TP_CHAR_OTHER); /* 😀 */
  CHECK_EQ_INT(tp_char_class_of(0x0966), TP_CHAR_NUMBER); /* Devanagari zero */
  CHECK_EQ_INT(tp_char_class_of(0x2014), TP_CHAR_OTHER); /* em dash */
  CHECK_EQ_INT(tp_char_class_of('+'), TP_CHAR_OTHER);
  CHECK_EQ_INT(tp_char_class_of(TP_UTF8_INVALID), TP_CHAR_OTHER);
  /* letters by case and marks apart (the Unicode Character Database's categories) */
  static const struct {
    uint32_t cp;
    tp_char_kind kind;
  } kinds[] = {{'A', TP_KIND_UPPER},        {'z', TP_KIND_LOWER},        {0xC9, TP_KIND_UPPER} /* É */,
               {0x01C5, TP_KIND_UPPER} /* Lt */, {0x03C3, TP_KIND_LOWER} /* σ */, {0x02B0, TP_KIND_CASELESS} /* Lm */,
               {0x65E5, TP_KIND_CASELESS} /* 日 */, {0x0301, TP_KIND_MARK},   {0x093F, TP_KIND_MARK} /* Mc */,
               {0xE0100, TP_KIND_MARK} /* variation selector */, {0x1D7CE, TP_KIND_NUMBER} /* math digit */,
               {0x2168, TP_KIND_NUMBER} /* Nl */, {0x2028, TP_KIND_SPACE},  {0x1F600, TP_KIND_SYMBOL} /* So */,
               {'!', TP_KIND_PUNCT},     {'_', TP_KIND_PUNCT} /* Pc */, {'(', TP_KIND_PUNCT} /* Ps */,
               {'+', TP_KIND_SYMBOL} /* Sm */, {'$', TP_KIND_SYMBOL} /* Sc */, {'^', TP_KIND_SYMBOL} /* Sk */,
               {0x3002, TP_KIND_PUNCT} /* 。 */, {0xFF0C, TP_KIND_PUNCT} /* ， */, {0x2014, TP_KIND_PUNCT} /* Pd */,
               {0x00AB, TP_KIND_PUNCT} /* Pi */, {0x20AC, TP_KIND_SYMBOL} /* € */, {0x0085, TP_KIND_SPACE} /* Cc */,
               {0x200D, TP_KIND_OTHER} /* Cf */, {0x10FFFF, TP_KIND_OTHER}, {0, TP_KIND_OTHER},
               {TP_UTF8_INVALID, TP_KIND_OTHER}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i)
    CHECK_MSG(tp_char_kind_of(kinds[i].cp) == kinds[i].kind, "U+%04X: kind %d, expected %d", (unsigned)kinds[i].cp,
              (int)tp_char_kind_of(kinds[i].cp), (int)kinds[i].kind);
  CHECK_EQ_INT(tp_char_class_of(0x093F), TP_CHAR_OTHER); /* marks are not \p{L} */
  CHECK_EQ_INT(tp_char_class_of(0x1C), TP_CHAR_OTHER);   /* not White_Space, though isspace() says so */
  /* the Han script: ideographs (BMP, extensions, compatibility), 々 〇 〡,
   * the radicals; not kana, ー, CJK punctuation, Hangul, U+FFFD */
  static const uint32_t han[] = {0x4E00, 0x9FFF, 0x3400, 0x3005, 0x3007, 0x3021, 0x2E80, 0x2F00,
                                 0xF900, 0x16FF0, 0x20000, 0x2FA1D, 0x30000, 0x3134A};
  static const uint32_t not_han[] = {'A', 0x3042, 0x30A2, 0x30FC, 0x3001, 0x3002, 0x3006, 0x2E9A, 0xAC00,
                                     0xFFFD, 0xFF21, 0x3134B, 0x10FFFF, TP_UTF8_INVALID};
  for (size_t i = 0; i < sizeof han / sizeof han[0]; ++i)
    CHECK_MSG(tp_is_han(han[i]), "U+%04X is Han", (unsigned)han[i]);
  for (size_t i = 0; i < sizeof not_han / sizeof not_han[0]; ++i)
    CHECK_MSG(!tp_is_han(not_han[i]), "U+%04X is not Han", (unsigned)not_han[i]);
  /* bytes_to_unicode is a bijection onto its 256 code points */
  int seen[0x144] = {0};
  for (int b = 0; b < 256; b++) {
    uint32_t cp = tp_byte_to_unicode((uint8_t)b);
    CHECK(cp < 0x144 && !seen[cp]);
    seen[cp] = 1;
    CHECK_EQ_INT(tp_unicode_to_byte(cp), b);
  }
  CHECK_EQ_INT(tp_byte_to_unicode(' '), 0x120); /* Ġ */
  CHECK_EQ_INT(tp_byte_to_unicode('\n'), 0x10A); /* Ċ */
  CHECK_EQ_INT(tp_byte_to_unicode('A'), 'A');
  CHECK_EQ_INT(tp_unicode_to_byte(0x2581), -1);
}
