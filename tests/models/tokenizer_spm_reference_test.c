/* SPM against an independent implementation: a SentencePiece BPE model
 * (byte fallback, identity normalisation, dummy prefix) trained on
 * tinyshakespeare; its vocabulary and sp.encode() ids are recorded in
 * spm_reference_data.h (scripts/spm_reference.py). Built both from arrays and
 * through a GGUF file. */
#include "tok_util.h"

#include "spm_reference_data.h"

TEST(tokenizer_spm_matches_sentencepiece) {
  topos_tokenizer_desc d = topos_tokenizer_desc_default();
  d.model = "llama";
  d.n_tokens = 512;
  d.tokens = spm_ref_pieces;
  d.scores = spm_ref_scores;
  d.types = spm_ref_types;
  d.unk_id = 0, d.bos_id = 1, d.eos_id = 2;
  for (int via = 0; via < 2; via++) {
    topos_tokenizer *t = NULL;
    CHECK_OK(via ? tt_tokenizer_via_gguf(&d, &t) : topos_tokenizer_new(&d, &t));
    int32_t ids[128];
    char text[256];
    int ok = 1;
    for (size_t c = 0; ok && c < sizeof spm_ref_cases / sizeof spm_ref_cases[0]; c++) {
      const spm_ref_case *k = &spm_ref_cases[c];
      size_t n = 0, len = 0;
      topos_status st = topos_tokenizer_encode(t, k->text, strlen(k->text), 0, ids, 128, &n);
      if (st != TOPOS_OK || n != k->n || memcmp(ids, k->ids, n * sizeof *ids) != 0) {
        size_t at = 0;
        while (at < n && at < k->n && ids[at] == k->ids[at]) at++;
        tt_fail_at(__FILE__, __LINE__, "case %zu \"%s\": %zu ids, expected %zu; first difference "
                   "at %zu", c, k->text, n, k->n, at);
        ok = 0;
        break;
      }
      st = topos_tokenizer_decode(t, ids, n, 0, text, sizeof text, &len);
      if (st != TOPOS_OK || len != strlen(k->text) || memcmp(text, k->text, len) != 0) {
        tt_fail_at(__FILE__, __LINE__, "case %zu: decode gave \"%.*s\"", c, (int)len, text);
        ok = 0;
      }
    }
    topos_tokenizer_free(t);
    CHECK(ok);
  }
}
