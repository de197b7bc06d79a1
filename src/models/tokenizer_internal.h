/* Internal: the tokenizer's vocabulary tables, shared by the SPM and BPE
 * encoders, the pre-tokenizer, the special-token splitter and the decoder. */
#ifndef TP_MODELS_TOKENIZER_INTERNAL_H
#define TP_MODELS_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/strmap.h"
#include "base/utf8.h"
#include "topos/tokenizer.h"

/* ---- Unicode classes used by the pre-tokenizers (the Unicode Character
 * Database's general categories and White_Space: unicode_classes.h) */
typedef enum tp_char_class {
  TP_CHAR_LETTER, /* \p{L} */
  TP_CHAR_NUMBER, /* \p{N} */
  TP_CHAR_SPACE,  /* \s */
  TP_CHAR_OTHER   /* punctuation, symbols, marks, controls, unassigned, invalid bytes */
} tp_char_class;
tp_char_class tp_char_class_of(uint32_t cp);

/* The same with letters by case, marks, punctuation and symbols apart, for
 * the patterns that tell them apart (tekken, gpt-4o: case and marks;
 * deepseek: \p{M}, \p{P}, \p{S}); the order is unicode_classes.h's. */
typedef enum tp_char_kind {
  TP_KIND_UPPER,    /* Lu, Lt */
  TP_KIND_LOWER,    /* Ll */
  TP_KIND_CASELESS, /* Lm, Lo */
  TP_KIND_MARK,     /* Mn, Mc, Me */
  TP_KIND_NUMBER,   /* Nd, Nl, No */
  TP_KIND_SPACE,    /* White_Space */
  TP_KIND_PUNCT,    /* Pc, Pd, Ps, Pe, Pi, Pf, Po */
  TP_KIND_SYMBOL,   /* Sm, Sc, Sk, So */
  TP_KIND_OTHER     /* controls, format characters, unassigned, invalid bytes */
} tp_char_kind;
tp_char_kind tp_char_kind_of(uint32_t cp);
tp_char_class tp_char_class_of_kind(tp_char_kind kind); /* the kind's coarse class */
/* The Han script (\p{Han}: CJK ideographs, radicals, 々, 〇, ...; not kana),
 * a script rather than a category, apart from the kinds: its ideographs are
 * CASELESS, 〇 NUMBER, the radicals SYMBOL. */
int tp_is_han(uint32_t cp);

/* ---- pre-tokenizers for byte-level BPE */
typedef enum tp_pre_kind {
  TP_PRE_GPT2,
  TP_PRE_LLAMA3,
  TP_PRE_QWEN2, /* Llama 3's pattern with digits one by one */
  TP_PRE_QWEN35, /* Qwen2's with marks in the letter runs, not the symbol runs */
  TP_PRE_DIGITS_GPT2, /* each \p{N} alone, then GPT-2 (smollm, starcoder, ...) */
  TP_PRE_TEKKEN, /* Mistral's: words by case ([A-Z]*[a-z]+ in Unicode's terms), digits one by one */
  TP_PRE_GPT4O,  /* o200k: tekken's words with contractions, digits in groups of 1-3 */
  /* DeepSeek's lists of expressions, each splitting the pieces the one before left */
  TP_PRE_DEEPSEEK_LLM,   /* newlines; cased letters; ASCII and CJK punctuation; trailing
                            spaces; CJK; digit runs */
  TP_PRE_DEEPSEEK_CODER, /* newlines; \p{L}; \p{P}; CJK; digits one by one */
  TP_PRE_DEEPSEEK_V3,    /* digits in groups of 1-3; CJK and kana; words with marks */
  TP_PRE_KIMI_K2 /* Kimi K2 (tiktoken): Han runs, then gpt-4o's words without Han, digits in 1-3 */
} tp_pre_kind;

/* Calls emit(ctx, start, length) for each pre-token of text[0..n), in order;
 * the pieces tile the text exactly. Stops at the first non-OK status. */
typedef topos_status (*tp_piece_fn)(void *ctx, size_t start, size_t length);
topos_status tp_pretokenize(tp_pre_kind kind, const char *text, size_t n, tp_piece_fn emit,
                            void *ctx);

/* ---- growing id list */
typedef struct tp_idvec {
  int32_t *data;
  size_t count, capacity;
} tp_idvec;
topos_status tp_idvec_push(tp_idvec *v, int32_t id);

/* ---- the tokenizer */
#define TP_MAX_EOG 10

struct topos_tokenizer {
  topos_tokenizer_kind kind;
  tp_pre_kind pre;
  int32_t n_tokens;
  char *text;          /* all token texts back to back */
  size_t *offsets;     /* n_tokens + 1 */
  float *scores;       /* n_tokens (zeros when the vocab had none) */
  uint8_t *types;      /* n_tokens */
  uint8_t *byte_value; /* n_tokens: the byte of a BYTE token */
  tp_strmap token_map; /* text -> id (a later duplicate wins, as in llama.cpp) */

  int32_t n_merges;
  char *merge_text;
  size_t *merge_offsets; /* n_merges + 1 */
  tp_strmap merge_map;   /* "left right" -> rank (the first duplicate wins) */

  int32_t byte_token[256]; /* fallback id per byte, -1 if none */

  int32_t *specials; /* ids of user-defined, control and unknown tokens with
                        non-empty text, longest text first */
  size_t n_specials;

  int32_t bos, eos, eot, unk, pad;
  int32_t eog[TP_MAX_EOG]; /* end-of-generation ids: eos, eot and the end-of-turn markers */
  int n_eog;
  int add_bos, add_eos, add_space_prefix, ignore_merges;
};

static inline const char *tp_tok_text(const topos_tokenizer *t, int32_t id, size_t *len) {
  *len = t->offsets[id + 1] - t->offsets[id];
  return t->text + t->offsets[id];
}

/* Encoders of one raw-text fragment (no special tokens inside). SPM: `text`
 * already normalised (▁ for spaces). Ids are appended to out. */
topos_status tp_spm_encode(const topos_tokenizer *t, const char *text, size_t n, tp_idvec *out);
topos_status tp_bpe_encode(const topos_tokenizer *t, const char *text, size_t n, tp_idvec *out);

/* GPT-2 bytes_to_unicode: the code point standing for byte b, and back
 * (returns -1 for code points outside the table). */
uint32_t tp_byte_to_unicode(uint8_t b);
int tp_unicode_to_byte(uint32_t cp);

#endif
