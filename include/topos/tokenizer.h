/* topos — models tier: tokenizers built from a GGUF file's tokenizer.ggml.* keys.
 *
 * Two algorithms, chosen by tokenizer.ggml.model:
 *  - "llama": SentencePiece-style BPE over scores (as llama.cpp's SPM). Text is
 *    normalised (a space is prepended when add_space_prefix is on, every ' '
 *    becomes U+2581 "▁"), split into UTF-8 characters, and the adjacent pair
 *    whose concatenation is a vocabulary entry with the highest score is merged
 *    until none is left (ties: leftmost pair). A piece that is not in the
 *    vocabulary falls back to byte tokens "<0xXX>" (one per byte), else to the
 *    unknown token.
 *  - "gpt2": byte-level BPE. The text is pre-tokenized (see below), each
 *    pre-token's bytes are mapped to printable code points (GPT-2's
 *    bytes_to_unicode table), then ranked merges from tokenizer.ggml.merges are
 *    applied (lowest rank first; ties: leftmost pair).
 *  - "gemma4" (Gemma 4): BPE with ranked merges over raw UTF-8, SentencePiece
 *    style, as llama.cpp's gemma4 pre-type (whatever tokenizer.ggml.pre
 *    says; "gpt2" with pre "granite-embed-multi-311m" too). Every ' '
 *    becomes U+2581 "▁" (no space is prefixed), the text is cut into runs
 *    of newlines and runs of other characters ([^\n]+|[\n]+), and each
 *    run's code points are merged by rank (lowest first; ties: leftmost
 *    pair). A run of newlines that is a token is taken whole. A merged
 *    piece that is not a token gives one "<0xXX>" token per byte; a byte
 *    without one is dropped (no unknown token, no error), as in llama.cpp.
 *    BOS is always added with TOPOS_TOKENIZE_ADD_SPECIAL (llama.cpp forces
 *    add_bos for Gemma 4 files). Bytes that are not valid UTF-8 stay
 *    one-byte symbols (so they come out as byte tokens) where llama.cpp
 *    reads each as U+FFFD.
 *
 * Pre-tokenizers for "gpt2" (chosen by tokenizer.ggml.pre; other names are
 * refused with TOPOS_UNSUPPORTED because they would tokenize differently):
 *  - absent, "default", "gpt2", "gpt-2" (and llama.cpp's other names for it:
 *    phi-2, jina-*, gigachat, roberta-bpe, exaone4, a.x-4.0, mellum,
 *    modern-bert, olmo, mpt): the GPT-2 pattern
 *      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *  - "llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral",
 *    "midm-2.0", "lfm2", "jina-v5-nano": the Llama-3 pattern
 *      (case-insensitive contractions, [^\r\n\p{L}\p{N}]?\p{L}+, digits in
 *      groups of 1-3, ...); whole pre-tokens found in the vocabulary skip the
 *      merges (ignore_merges);
 *    "dbrx", "smaug-bpe": the same pattern, every merge applied;
 *    "glm4", "glm5" (GLM-4, GLM-4.5, GLM-4.7): the same pattern, no BOS by
 *      default, ignore_merges; "chatglm-bpe": the same, every merge applied.
 *  - "qwen2", "deepseek-r1-qwen", "megrez", "kormo", "f2llmv2", "stablelm2":
 *      the Llama-3 pattern with digits one by one.
 *  - "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
 *    "minerva", "minerva-7b": every \p{N} code point is its own piece, then
 *    the GPT-2 pattern.
 *  - "tekken" (Mistral NeMo, Small 3, Ministral): words by case,
 *      [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
 *      and the reverse, digits one by one; BOS by default, ignore_merges.
 *  - "gpt-4o", "llama4" (o200k: Phi-4-mini, Llama 4): tekken's words with
 *      case-insensitive contractions, digits in groups of 1-3.
 *  - DeepSeek's lists of expressions, each one splitting every piece the
 *    one before left into its matches and the runs between them:
 *    "deepseek-llm" (DeepSeek LLM, V2, V2-Lite): [\r\n], \s?[cased letters
 *      of Latin, Greek, Cyrillic, ...]+, \s?[ASCII and CJK punctuation]+,
 *      \s+$, [U+0800..U+9FA5 and Hangul]+, \p{N}+;
 *    "deepseek-coder" (DeepSeek-Coder, -Coder-V2): [\r\n], \s?\p{L}+,
 *      \s?\p{P}+, the same CJK run, \p{N};
 *    "deepseek-v3" (DeepSeek-V3, R1; also "hunyuan-dense", "joyai-llm",
 *      "hy_v4"): \p{N}{1,3}, [CJK ideographs and kana]+, then
 *      [ASCII punctuation][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
 *       ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+.
 *  - "kimi-k2" (Kimi K2, K2-Instruct, K2-Thinking; Kimi-Linear's and K3's
 *    files too): the tiktoken pattern of Kimi's tokenization_kimi.py,
 *      [\p{Han}]+ first, then gpt-4o's words by case with the Han script
 *      taken out of their classes ([...&&[^\p{Han}]]), case-insensitive
 *      contractions, digits in groups of 1-3, no / after symbols.
 *  The patterns are implemented by hand over the Unicode Character
 *  Database's general categories and White_Space property (version 14.0, a
 *  generated table; \p{Han}, a script, from the same version's code points),
 *  as the tokenizer.json expressions (Kimi's: tiktoken's) state them.
 *  llama.cpp instead approximates tekken's and gpt-4o's cased classes with
 *  [^a-z] / [^A-Z] among letters and leaves marks out of words, so the two
 *  split differently only where words hold non-ASCII capitals after small
 *  letters or combining marks. In DeepSeek's written-out ranges llama.cpp
 *  sees non-ASCII whitespace as a vertical tab, so U+3000 and U+2000..U+200A
 *  count there only as \s (here, as in the regex, also as the range's).
 *  For kimi-k2 llama.cpp's hand-written splitter takes a run of letters as
 *  one word whatever their case, leaves marks out of words and counts the
 *  CJK ideograph blocks as Han (not 々, 〇, the radicals, nor Extension G),
 *  and its contractions do not take a long s (ſ) for s as (?i) does.
 *  Bytes that are not valid UTF-8 are kept (each is a one-byte "symbol"
 *  character), so encoding never loses input.
 *
 * Special tokens: user-defined tokens (type 4) are always cut out of the raw
 * text before the algorithm runs; control tokens (type 3) and the unknown
 * token only with TOPOS_TOKENIZE_PARSE_SPECIAL. As in llama.cpp, longer token
 * texts are cut first. For "llama" a space is prepended to the text at the
 * start and after each special token when add_space_prefix is on.
 *
 * Decoding: pieces per token. "llama": U+2581 becomes ' ', byte tokens
 * "<0xXX>" give the raw byte. "gpt2": every code point is mapped back to its
 * byte (code points outside the table are copied as UTF-8); user-defined and
 * unknown tokens are copied raw. "gemma4": U+2581 becomes ' ' in normal
 * tokens, byte tokens give their byte, user-defined and unknown tokens are
 * copied raw. Control tokens give "" unless
 * TOPOS_DECODE_SPECIAL; unused tokens give "". A multi-byte character split
 * over byte tokens gives partial UTF-8 per piece; concatenated pieces are the
 * text. No clean-up of spaces before punctuation is done.
 *
 * Known differences from llama.cpp: a byte with neither a byte token nor a
 * single-byte token becomes one unknown token per byte (SentencePiece emits
 * one per character); tokens' lstrip/rstrip attributes are not modelled; the
 * cased patterns' classes (above). The encodings of SmolLM2's
 * vocabulary were checked against HuggingFace tokenizers
 * (tests/models/tokenizer_smollm2_test.c).
 *
 * Vocabularies come from untrusted files: every entry is validated when the
 * tokenizer is built and a malformed one is refused with a status and a
 * message naming the entry. A built tokenizer never reads out of bounds.
 * The tokenizer is immutable after construction and may be shared by
 * threads. */
#ifndef TOPOS_TOKENIZER_H
#define TOPOS_TOKENIZER_H

#include "base.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct topos_tokenizer topos_tokenizer;

typedef enum topos_tokenizer_kind {
  TOPOS_TOKENIZER_SPM = 1, /* tokenizer.ggml.model "llama" */
  TOPOS_TOKENIZER_BPE = 2, /* tokenizer.ggml.model "gpt2" */
  TOPOS_TOKENIZER_GEMMA4 = 3 /* tokenizer.ggml.model "gemma4" (and "gpt2" with pre
                                granite-embed-multi-311m): BPE over raw UTF-8, ▁ for spaces */
} topos_tokenizer_kind;

/* tokenizer.ggml.token_type values (0 = undefined is accepted as normal). */
typedef enum topos_token_type {
  TOPOS_TOKEN_UNDEFINED = 0,
  TOPOS_TOKEN_NORMAL = 1,
  TOPOS_TOKEN_UNKNOWN = 2,
  TOPOS_TOKEN_CONTROL = 3,
  TOPOS_TOKEN_USER_DEFINED = 4,
  TOPOS_TOKEN_UNUSED = 5,
  TOPOS_TOKEN_BYTE = 6
} topos_token_type;

#define TOPOS_TOKEN_NONE (-1)
/* Bounds on what a vocabulary may hold (larger ones are refused). */
#define TOPOS_TOKENIZER_MAX_TOKENS (1 << 24)
#define TOPOS_TOKENIZER_MAX_TOKEN_BYTES 65536

/* A vocabulary in plain arrays (what the GGUF keys hold). Everything is
 * copied by the constructor. */
typedef struct topos_tokenizer_desc {
  const char *model;            /* "llama", "gpt2" or "gemma4" */
  const char *pre;              /* tokenizer.ggml.pre, NULL = default */
  int64_t n_tokens;
  const char *const *tokens;    /* n_tokens strings */
  const size_t *token_lengths;  /* NULL: strlen of each */
  const float *scores;          /* n_tokens, required for "llama"; may be NULL otherwise */
  const int32_t *types;         /* n_tokens topos_token_type values; NULL: all normal,
                                   except "<0xXX>" texts in a "llama" or "gemma4" vocab (byte) */
  int64_t n_merges;             /* "gpt2", "gemma4": required (may be 0) */
  const char *const *merges;    /* "left right" strings */
  const size_t *merge_lengths;  /* NULL: strlen of each */
  /* Token ids, TOPOS_TOKEN_NONE for none. */
  int32_t bos_id, eos_id, eot_id, unk_id, pad_id;
  /* 0/1, or -1 for the model's default: add_bos 1 for "llama" (and the
   * llama-bpe, dbrx and tekken names; not glm4), else 0; "gemma4" always 1
   * (a 0 here is overridden, as llama.cpp does); add_eos 0;
   * add_space_prefix 1 for "llama", else 0. */
  int add_bos, add_eos, add_space_prefix;
} topos_tokenizer_desc;

/* A desc with every id TOPOS_TOKEN_NONE and every flag -1. */
TOPOS_API topos_tokenizer_desc topos_tokenizer_desc_default(void);

/* Builds a tokenizer from arrays. Refuses (with a message naming the entry):
 * unknown model (TOPOS_UNSUPPORTED) or pre-tokenizer (TOPOS_UNSUPPORTED),
 * empty vocabulary, too many tokens or a too long token (TOPOS_ERR_RANGE),
 * a type outside 0..6 (TOPOS_ERR_BAD_TYPE), missing scores for "llama",
 * a NaN score, a byte-type token whose text is not "<0xXX>" (TOPOS_ERR_FORMAT),
 * token text or merge that is not valid UTF-8 (TOPOS_ERR_BAD_STRING), a merge
 * without a separating space (TOPOS_ERR_FORMAT), special ids out of range
 * (TOPOS_ERR_RANGE). *out is owned by the caller: topos_tokenizer_free(). */
TOPOS_API topos_status topos_tokenizer_new(const topos_tokenizer_desc *desc,
                                           topos_tokenizer **out);

/* Builds a tokenizer from an open reader's tokenizer.ggml.* keys. Keys:
 * model, tokens (required); scores (required for "llama"); token_type;
 * merges (required for "gpt2" and "gemma4"); pre (ignored for "gemma4");
 * bos/eos/eot/unknown/padding_token_id;
 * add_bos_token, add_eos_token, add_space_prefix. For "llama" absent special
 * ids default to llama.cpp's (bos 1, eos 2, unknown 0) when they are in range.
 * A key of the wrong type is refused (TOPOS_ERR_BAD_TYPE). The tokenizer
 * copies what it needs: the reader may be closed afterwards. */
TOPOS_API topos_status topos_tokenizer_from_gguf(const topos_gguf *reader, topos_tokenizer **out);

/* NULL is fine. */
TOPOS_API void topos_tokenizer_free(topos_tokenizer *tok);

/* encode flags. Passing 1 means "add BOS". */
#define TOPOS_TOKENIZE_ADD_BOS 1u       /* prepend bos_id (if the vocab has one) */
#define TOPOS_TOKENIZE_PARSE_SPECIAL 2u /* cut control tokens out of the text */
#define TOPOS_TOKENIZE_ADD_EOS 4u       /* append eos_id (if the vocab has one) */
#define TOPOS_TOKENIZE_ADD_SPECIAL 8u   /* add BOS/EOS as the vocab's add_bos/add_eos say */

/* Tokenizes len bytes of text (any bytes; NUL is an ordinary byte). Writes at
 * most capacity ids and sets *count to the number the whole text needs. If
 * capacity is too small, ids holds the first `capacity` ids and the call
 * returns TOPOS_ERR_RANGE with *count = the needed size (ids may be NULL when
 * capacity is 0, to ask for the size). Fails with TOPOS_ERR_NOT_FOUND if a
 * byte has neither a byte token nor an unknown token to fall back to. */
TOPOS_API topos_status topos_tokenizer_encode(const topos_tokenizer *tok, const char *text,
                                              size_t len, unsigned flags, int32_t *ids,
                                              size_t capacity, size_t *count);

/* decode flags */
#define TOPOS_DECODE_SPECIAL 1u             /* render control tokens' text */
#define TOPOS_DECODE_STRIP_LEADING_SPACE 2u /* drop one leading ' ' of the piece */

/* The text of one token (a streaming piece) with flags 0. Writes at most cap
 * bytes (no NUL terminator) and sets *len to the piece's length; if cap is too
 * small returns TOPOS_ERR_RANGE with *len = the needed size. An id outside
 * the vocabulary is TOPOS_ERR_RANGE with *len = 0. */
TOPOS_API topos_status topos_tokenizer_decode_token(const topos_tokenizer *tok, int32_t id,
                                                    char *buf, size_t cap, size_t *len);
/* Same with decode flags. For streaming after BOS as llama.cpp does: pass
 * TOPOS_DECODE_STRIP_LEADING_SPACE for the first piece when
 * topos_tokenizer_add_space_prefix() is 1. */
TOPOS_API topos_status topos_tokenizer_decode_token_ex(const topos_tokenizer *tok, int32_t id,
                                                       unsigned flags, char *buf, size_t cap,
                                                       size_t *len);

/* Decodes a sequence as llama.cpp's detokenize: pieces concatenated; a
 * leading BOS is skipped when the vocabulary adds one (add_bos) and
 * TOPOS_DECODE_SPECIAL is not set; when add_space_prefix is on, one leading
 * space of the first remaining piece is dropped (the one encode added).
 * Flags: only TOPOS_DECODE_SPECIAL is meaningful. Capacity rules as
 * decode_token (the text is not NUL-terminated). */
TOPOS_API topos_status topos_tokenizer_decode(const topos_tokenizer *tok, const int32_t *ids,
                                              size_t n_ids, unsigned flags, char *buf, size_t cap,
                                              size_t *len);

/* Accessors; a NULL tokenizer gives 0 / TOPOS_TOKEN_NONE. */
TOPOS_API topos_tokenizer_kind topos_tokenizer_kind_of(const topos_tokenizer *tok);
TOPOS_API int32_t topos_tokenizer_vocab_size(const topos_tokenizer *tok);
TOPOS_API int32_t topos_tokenizer_bos(const topos_tokenizer *tok); /* TOPOS_TOKEN_NONE if none */
TOPOS_API int32_t topos_tokenizer_eos(const topos_tokenizer *tok);
TOPOS_API int32_t topos_tokenizer_eot(const topos_tokenizer *tok);
TOPOS_API int32_t topos_tokenizer_unk(const topos_tokenizer *tok);
TOPOS_API int32_t topos_tokenizer_pad(const topos_tokenizer *tok);
TOPOS_API int topos_tokenizer_add_bos(const topos_tokenizer *tok);
TOPOS_API int topos_tokenizer_add_eos(const topos_tokenizer *tok);
TOPOS_API int topos_tokenizer_add_space_prefix(const topos_tokenizer *tok);
/* 1 for ids that end generation, else 0: eos, eot, and (as llama.cpp
 * decides) every token whose text is an end-of-turn marker: <|eot_id|>,
 * <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <|eom_id|>, <EOT>,
 * Gemma 4's <eos>, <turn|> and <|tool_response>, ...
 * Where the file names no eot, topos_tokenizer_eot is the first such marker
 * the vocabulary has (the same list, <|eom_id|> and Gemma 4's aside, DeepSeek's
 * end-of-sentence token last). */
TOPOS_API int topos_tokenizer_is_eog(const topos_tokenizer *tok, int32_t id);
/* The token's type; TOPOS_TOKEN_UNDEFINED for ids out of range. */
TOPOS_API topos_token_type topos_tokenizer_token_type(const topos_tokenizer *tok, int32_t id);
/* The vocabulary entry's raw text (owned by the tokenizer, not
 * NUL-terminated in general: use *length). TOPOS_ERR_RANGE for bad ids. */
TOPOS_API topos_status topos_tokenizer_token_text(const topos_tokenizer *tok, int32_t id,
                                                  const char **text, size_t *length);
/* Exact vocabulary lookup of a text; TOPOS_TOKEN_NONE if absent. */
TOPOS_API int32_t topos_tokenizer_find(const topos_tokenizer *tok, const char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif
