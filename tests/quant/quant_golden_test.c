/* Bit compatibility with ggml: quantized bytes, dequantized floats and dot
 * products against golden vectors made by ggml's C reference and gguf-py
 * (scripts/gen_quant_goldens.py; its header comment names the route per type). */
#include "quant/quant_internal.h"
#include "quant_test_util.h"
#include "tests/quant/golden/quant_goldens.h"

static float *qt_golden_inputs(void) {
  size_t size = 0;
  uint8_t *bytes = qt_from_hex(tg_inputs_hex, &size);
  if (!bytes || size != (size_t)TG_ROWS * TG_ROW * sizeof(float)) {
    free(bytes);
    return NULL;
  }
  return (float *)(void *)bytes; /* malloc'd, so aligned for float */
}

TEST(quant_golden_quantize_matches_ggml) {
  float *x = qt_golden_inputs();
  CHECK(x != NULL);
  const int64_t n = (int64_t)TG_ROWS * TG_ROW;
  int failures = 0;
  char first[256] = "";
  for (size_t f = 0; f < sizeof tg_formats / sizeof tg_formats[0]; ++f) {
    topos_dtype dtype;
    size_t size = 0;
    if (!qt_dtype_by_name(tg_formats[f].name, &dtype)) {
      free(x);
      CHECK_MSG(0, "unknown golden format %s", tg_formats[f].name);
    }
    uint8_t *expect = qt_from_hex(tg_formats[f].quantized_hex, &size);
    uint8_t *got = calloc(size ? size : 1, 1);
    if (!expect || !got || size != qt_row_bytes(dtype, n)) {
      free(expect), free(got), free(x);
      CHECK_MSG(0, "%s: golden size %zu", tg_formats[f].name, size);
    }
    topos_status st = topos_quantize_row(dtype, x, got, n);
    if (st != TOPOS_OK || memcmp(got, expect, size) != 0) {
      size_t at = 0;
      while (at < size && got[at] == expect[at]) ++at;
      int64_t be, bb;
      qt_geometry(dtype, &be, &bb);
      if (!failures)
        snprintf(first, sizeof first, "%s: status %s, first differing byte %zu (row %lld, byte %lld"
                 " of block): got 0x%02x expected 0x%02x", tg_formats[f].name,
                 topos_status_name(st), at, (long long)(at / (size_t)(TG_ROW / be * bb)),
                 (long long)(at % (size_t)bb), at < size ? got[at] : 0, at < size ? expect[at] : 0);
      ++failures;
    }
    free(expect);
    free(got);
  }
  free(x);
  CHECK_MSG(failures == 0, "%d formats differ from ggml; %s", failures, first);
}

TEST(quant_golden_dequantize_matches_ggml) {
  int checked = 0;
  for (size_t f = 0; f < sizeof tg_formats / sizeof tg_formats[0]; ++f) {
    if (!tg_formats[f].random_hex) continue;
    topos_dtype dtype;
    CHECK(qt_dtype_by_name(tg_formats[f].name, &dtype));
    size_t in_size = 0, out_size = 0;
    uint8_t *in = qt_from_hex(tg_formats[f].random_hex, &in_size);
    uint8_t *expect = qt_from_hex(tg_formats[f].dequant_hex, &out_size);
    float got[TG_ROW];
    int ok = in && expect && out_size == sizeof got && in_size == qt_row_bytes(dtype, TG_ROW) &&
             topos_dequantize_row(dtype, in, got, TG_ROW) == TOPOS_OK;
    int64_t bad = -1;
    for (int64_t i = 0; ok && i < TG_ROW && bad < 0; ++i)
      if (memcmp(&got[i], expect + 4 * i, 4) != 0) bad = i;
    float want = 0;
    if (bad >= 0) memcpy(&want, expect + 4 * bad, 4);
    free(in);
    free(expect);
    CHECK_MSG(ok, "%s: dequantize failed or golden sizes wrong", tg_formats[f].name);
    CHECK_MSG(bad < 0, "%s: element %lld is %.9g, ggml gives %.9g", tg_formats[f].name,
              (long long)bad, bad >= 0 ? got[bad] : 0.0f, want);
    ++checked;
  }
  CHECK_EQ_INT(checked, 14); /* every format except Q8_1, which ggml cannot dequantize */
}

TEST(quant_golden_vec_dot_matches_ggml_generic) {
  float *x = qt_golden_inputs();
  CHECK(x != NULL);
  const int64_t n = (int64_t)TG_DOT_ROWS * TG_ROW;
  float *reversed = malloc((size_t)n * sizeof(float));
  uint8_t *w = malloc((size_t)n * 2), *a = malloc((size_t)n * 2); /* >= any format's size */
  if (!reversed || !w || !a) {
    free(reversed), free(w), free(a), free(x);
    CHECK(0);
  }
  for (int r = 0; r < TG_DOT_ROWS; ++r)
    memcpy(reversed + (int64_t)r * TG_ROW, x + (int64_t)(TG_DOT_ROWS - 1 - r) * TG_ROW,
           TG_ROW * sizeof(float));
  int failures = 0;
  char first[200] = "";
  for (size_t k = 0; k < sizeof tg_dots / sizeof tg_dots[0]; ++k) {
    topos_dtype wtype, atype;
    float full = 0, one = 0;
    int ok = qt_dtype_by_name(tg_dots[k].weight, &wtype) &&
             topos_quant_vec_dot_type(wtype, &atype) == TOPOS_OK &&
             topos_quantize_row(wtype, x, w, n) == TOPOS_OK &&
             topos_quantize_row(atype, reversed, a, n) == TOPOS_OK &&
             tp_vec_dot_ref(wtype, n, w, a, &full) == TOPOS_OK &&
             tp_vec_dot_ref(wtype, TG_ROW, w + 3 * qt_row_bytes(wtype, TG_ROW),
                            a + 4 * qt_row_bytes(atype, TG_ROW), &one) == TOPOS_OK;
    if (!ok || tt_f32_bits(full) != tg_dots[k].full_bits || tt_f32_bits(one) != tg_dots[k].one_bits) {
      if (!failures)
        snprintf(first, sizeof first, "%s: ok=%d full 0x%08x (want 0x%08x), one 0x%08x (want 0x%08x)",
                 tg_dots[k].weight, ok, tt_f32_bits(full), tg_dots[k].full_bits, tt_f32_bits(one),
                 tg_dots[k].one_bits);
      ++failures;
    }
  }
  free(reversed), free(w), free(a), free(x);
  CHECK_MSG(failures == 0, "%d dot products differ from ggml; first: %s", failures, first);
}

/* ---- bulk: 256 rows of varied scale, outliers and zeros; hashes only */

static uint64_t qt_fnv1a64(const void *data, size_t size) {
  const uint8_t *p = data;
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

/* Mirrors bulk_inputs() in scripts/gen_quant_goldens.py (every value exact in f32). */
static void qt_bulk_inputs(float *x) {
  uint64_t state = 42;
  for (int r = 0; r < TG_BULK_ROWS; ++r)
    for (int c = 0; c < TG_ROW; ++c) {
      uint64_t z = qt_splitmix64_next(&state);
      float v = ldexpf((float)((int64_t)(z >> 40) - (1 << 23)), -(23 + r % 8));
      if ((z & 0xFF) == 0)
        v *= 64.0f;
      else if ((z & 0x3F) == 1)
        v = 0.0f;
      x[(int64_t)r * TG_ROW + c] = v;
    }
}

TEST(quant_golden_bulk_hashes_match_ggml) {
  const int64_t n = (int64_t)TG_BULK_ROWS * TG_ROW;
  float *x = malloc((size_t)n * sizeof(float)), *rev = malloc((size_t)n * sizeof(float));
  uint8_t *w = malloc((size_t)n * 2), *a = malloc((size_t)n * 2);
  float dots[TG_BULK_ROWS];
  if (!x || !rev || !w || !a) {
    free(x), free(rev), free(w), free(a);
    CHECK(0);
  }
  qt_bulk_inputs(x);
  for (int r = 0; r < TG_BULK_ROWS; ++r)
    memcpy(rev + (int64_t)r * TG_ROW, x + (int64_t)(TG_BULK_ROWS - 1 - r) * TG_ROW,
           TG_ROW * sizeof(float));
  char failed[512] = "";
  for (size_t k = 0; k < sizeof tg_bulk / sizeof tg_bulk[0]; ++k) {
    topos_dtype wtype, atype;
    int ok = qt_dtype_by_name(tg_bulk[k].name, &wtype) &&
             topos_quantize_row(wtype, x, w, n) == TOPOS_OK;
    ok = ok && qt_fnv1a64(w, qt_row_bytes(wtype, n)) == tg_bulk[k].quantized_fnv;
    if (ok && tg_bulk[k].dots_fnv) {
      ok = topos_quant_vec_dot_type(wtype, &atype) == TOPOS_OK &&
           topos_quantize_row(atype, rev, a, n) == TOPOS_OK;
      const size_t wb = qt_row_bytes(wtype, TG_ROW), ab = qt_row_bytes(atype, TG_ROW);
      for (int r = 0; ok && r < TG_BULK_ROWS; ++r)
        ok = tp_vec_dot_ref(wtype, TG_ROW, w + r * wb, a + r * ab, &dots[r]) == TOPOS_OK;
      ok = ok && qt_fnv1a64(dots, sizeof dots) == tg_bulk[k].dots_fnv;
    }
    if (!ok) {
      strncat(failed, " ", sizeof failed - strlen(failed) - 1);
      strncat(failed, tg_bulk[k].name, sizeof failed - strlen(failed) - 1);
    }
  }
  free(x), free(rev), free(w), free(a);
  CHECK_MSG(failed[0] == '\0', "bulk hashes differ from ggml for:%s", failed);
}
