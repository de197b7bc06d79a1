/* `topos tokenize`: encode a text with a GGUF file's tokenizer and print the
 * ids with their pieces, or decode ids back to text. */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static void tp_tokenize_usage(FILE *out) {
  fprintf(out,
          "usage: topos tokenize MODEL.gguf [--bos] [--eos] [--special] TEXT\n"
          "       topos tokenize MODEL.gguf --decode [--special] ID...\n"
          "  --bos/--eos add BOS/EOS; --special parses control tokens in TEXT, or\n"
          "  (decoding) writes control tokens' text instead of nothing\n");
}

static void tp_print_piece(const char *s, size_t len) {
  putchar('"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c == '\n') printf("\\n");
    else if (c == '\t') printf("\\t");
    else if (c < 0x20 || c == 0x7F) printf("\\x%02x", c);
    else putchar(c);
  }
  putchar('"');
}

static int tp_tokenize_decode(const topos_tokenizer *t, int argc, char **argv) {
  unsigned flags = 0;
  if (argc > 0 && !strcmp(argv[0], "--special")) flags = TOPOS_DECODE_SPECIAL, ++argv, --argc;
  int32_t *ids = malloc((size_t)argc * sizeof *ids);
  if (!ids) return tp_cli_fail("tokenize", TOPOS_ERR_OUT_OF_MEMORY, "ids");
  for (int i = 0; i < argc; i++) {
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < 0 || v > INT32_MAX) {
      fprintf(stderr, "topos tokenize: \"%s\" is not a token id\n", argv[i]);
      free(ids);
      return 2;
    }
    ids[i] = (int32_t)v;
  }
  size_t len = 0;
  topos_status st = topos_tokenizer_decode(t, ids, (size_t)argc, flags, NULL, 0, &len);
  char *text = st == TOPOS_ERR_RANGE || st == TOPOS_OK ? malloc(len + 1) : NULL;
  if (text) st = topos_tokenizer_decode(t, ids, (size_t)argc, flags, text, len, &len);
  free(ids);
  if (!text || st != TOPOS_OK) {
    free(text);
    return tp_cli_fail("tokenize", st, "decode");
  }
  fwrite(text, 1, len, stdout);
  putchar('\n');
  free(text);
  return 0;
}

static int tp_tokenize_encode(const topos_tokenizer *t, const char *text, unsigned flags) {
  size_t count = 0;
  topos_status st = topos_tokenizer_encode(t, text, strlen(text), flags, NULL, 0, &count);
  if (st != TOPOS_OK && st != TOPOS_ERR_RANGE) return tp_cli_fail("tokenize", st, "encode");
  int32_t *ids = malloc((count ? count : 1) * sizeof *ids);
  if (!ids) return tp_cli_fail("tokenize", TOPOS_ERR_OUT_OF_MEMORY, "ids");
  st = topos_tokenizer_encode(t, text, strlen(text), flags, ids, count, &count);
  if (st != TOPOS_OK) {
    free(ids);
    return tp_cli_fail("tokenize", st, "encode");
  }
  printf("%zu tokens\n", count);
  for (size_t i = 0; i < count; i++) {
    const char *raw;
    size_t raw_len;
    char piece[256];
    size_t len = 0;
    if (topos_tokenizer_token_text(t, ids[i], &raw, &raw_len) != TOPOS_OK) raw_len = 0;
    topos_status ps = topos_tokenizer_decode_token_ex(t, ids[i], TOPOS_DECODE_SPECIAL, piece,
                                                      sizeof piece, &len);
    if (ps != TOPOS_OK) len = len < sizeof piece ? len : sizeof piece;
    printf("%8d  ", (int)ids[i]);
    tp_print_piece(raw, raw_len < 64 ? raw_len : 64);
    printf("  -> ");
    tp_print_piece(piece, len);
    putchar('\n');
  }
  free(ids);
  return 0;
}

static int tp_tokenize_main(int argc, char **argv) {
  if (argc < 3) {
    tp_tokenize_usage(stderr);
    return 2;
  }
  topos_gguf *g = NULL;
  topos_status st = topos_gguf_open(argv[1], &g);
  if (st != TOPOS_OK) return tp_cli_fail("tokenize", st, argv[1]);
  topos_tokenizer *t = NULL;
  st = topos_tokenizer_from_gguf(g, &t);
  topos_gguf_close(g);
  if (st != TOPOS_OK) return tp_cli_fail("tokenize", st, argv[1]);
  int rc;
  if (!strcmp(argv[2], "--decode")) {
    rc = tp_tokenize_decode(t, argc - 3, argv + 3);
  } else {
    unsigned flags = 0;
    int i = 2;
    for (; i < argc - 1; i++) {
      if (!strcmp(argv[i], "--bos")) flags |= TOPOS_TOKENIZE_ADD_BOS;
      else if (!strcmp(argv[i], "--eos")) flags |= TOPOS_TOKENIZE_ADD_EOS;
      else if (!strcmp(argv[i], "--special")) flags |= TOPOS_TOKENIZE_PARSE_SPECIAL;
      else break;
    }
    if (i != argc - 1) {
      tp_tokenize_usage(stderr);
      rc = 2;
    } else {
      rc = tp_tokenize_encode(t, argv[argc - 1], flags);
    }
  }
  topos_tokenizer_free(t);
  return rc;
}

TOPOS_COMMAND("tokenize", "encode text with a GGUF file's tokenizer, or decode ids",
              tp_tokenize_main)
