/* Data loading: our DEFLATE/gzip decoder on vectors made by zlib (stored,
 * fixed and dynamic blocks), corrupt and truncated streams rejected without a
 * crash, CRC-32, and IDX parsing with its errors. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "topos.h"

/* Generated with Python's zlib (level 9 / 0, raw deflate) and gzip (mtime 0):
 * tn_dynamic and tn_gzip hold the same 1500 bytes (CRC-32 0x9cb2b40f). */
static const uint8_t tn_fixed[17] = {
    203,72,205,201,201,215,81,200,64,162,20,202,243,139,114,82,0,
};
static const uint8_t tn_dynamic[738] = {
    45,148,203,117,67,49,8,68,247,175,10,90,3,132,144,232,191,128,220,145,227,69,114,44,
    75,3,243,129,78,171,111,236,148,151,197,241,240,170,168,242,29,110,81,25,86,97,159,123,
    119,57,159,176,136,200,21,117,79,196,240,187,110,123,250,202,222,222,119,150,103,101,13,23,
    106,116,110,32,213,87,85,219,203,39,250,129,234,67,81,223,102,159,16,60,86,1,191,114,
    202,243,174,140,207,143,219,36,149,41,12,66,88,131,74,135,156,127,181,0,217,126,62,206,
    249,205,133,208,2,29,91,149,249,142,42,142,174,241,72,181,253,251,172,102,95,55,126,157,
    75,135,54,147,235,4,77,149,229,210,73,157,203,213,60,69,199,49,85,139,190,3,212,28,
    183,139,6,109,187,110,101,151,157,52,143,216,213,40,96,55,206,232,34,210,192,57,120,196,
    231,54,234,1,194,151,132,181,36,232,68,152,90,59,117,184,143,154,138,174,141,118,237,117,
    145,96,109,41,112,118,73,125,20,228,95,119,154,58,67,152,167,146,223,174,72,255,252,85,
    201,168,207,101,128,193,25,145,78,35,150,121,74,253,150,186,106,4,157,92,133,175,95,74,
    21,114,247,158,57,231,117,105,145,197,3,31,171,157,199,128,138,250,103,190,193,198,41,21,
    187,190,4,54,178,63,250,248,184,108,194,201,250,104,30,80,160,133,178,55,102,183,139,10,
    125,214,115,107,56,62,168,86,24,4,131,16,31,255,80,21,65,1,58,203,49,133,39,173,
    196,213,194,91,122,148,127,247,147,245,234,121,192,34,112,61,114,146,10,39,191,167,222,222,
    68,241,23,201,80,100,239,99,140,63,75,210,250,209,89,41,27,36,56,175,218,4,121,81,
    244,42,32,31,41,171,11,130,199,224,213,37,101,83,55,229,55,193,43,165,156,55,7,183,
    243,189,84,39,50,14,55,61,212,165,99,60,7,223,83,55,143,186,24,40,19,1,95,28,
    98,30,242,245,75,67,109,34,69,158,49,106,148,16,94,184,33,196,146,86,100,13,214,251,
    74,30,6,102,226,75,241,39,201,6,33,92,241,55,56,231,227,253,208,220,39,21,24,50,
    102,171,224,160,171,246,84,120,228,223,64,20,211,228,177,27,5,9,198,203,39,3,206,171,
    69,117,41,77,160,37,119,235,209,69,43,4,144,239,164,56,73,4,230,152,44,250,158,42,
    18,43,126,127,52,145,193,36,45,230,128,199,220,25,89,71,33,89,238,157,143,236,128,244,
    237,121,153,254,52,246,26,158,164,81,165,99,155,56,36,68,161,195,212,205,103,253,188,7,
    127,189,73,5,58,88,69,113,123,201,45,193,225,81,230,151,95,203,86,86,20,194,239,125,
    126,131,90,47,89,96,246,122,97,72,198,18,54,177,154,253,48,203,158,196,154,76,32,167,
    63,213,193,87,4,44,166,5,95,108,193,117,24,72,141,87,132,20,186,102,254,86,148,86,
    15,233,39,151,38,149,201,178,8,153,73,94,214,197,176,21,183,203,70,5,14,142,151,106,
    90,135,234,74,233,115,141,144,255,71,228,81,124,201,225,113,223,159,162,88,135,245,167,207,
    214,214,53,251,69,60,176,87,209,126,56,2,76,191,196,39,228,243,21,29,4,32,202,173,
    27,46,23,5,75,108,217,120,166,88,104,137,178,40,181,123,234,15,
};
static const uint8_t tn_stored[17] = {
    1,12,0,243,255,115,116,111,114,101,100,32,98,121,116,101,115,
};
static const uint8_t tn_gzip[756] = {
    31,139,8,0,0,0,0,0,2,3,45,148,203,117,67,49,8,68,247,175,10,90,3,132,
    144,232,191,128,220,145,227,69,114,44,75,3,243,129,78,171,111,236,148,151,197,241,240,170,
    168,242,29,110,81,25,86,97,159,123,119,57,159,176,136,200,21,117,79,196,240,187,110,123,
    250,202,222,222,119,150,103,101,13,23,106,116,110,32,213,87,85,219,203,39,250,129,234,67,
    81,223,102,159,16,60,86,1,191,114,202,243,174,140,207,143,219,36,149,41,12,66,88,131,
    74,135,156,127,181,0,217,126,62,206,249,205,133,208,2,29,91,149,249,142,42,142,174,241,
    72,181,253,251,172,102,95,55,126,157,75,135,54,147,235,4,77,149,229,210,73,157,203,213,
    60,69,199,49,85,139,190,3,212,28,183,139,6,109,187,110,101,151,157,52,143,216,213,40,
    96,55,206,232,34,210,192,57,120,196,231,54,234,1,194,151,132,181,36,232,68,152,90,59,
    117,184,143,154,138,174,141,118,237,117,145,96,109,41,112,118,73,125,20,228,95,119,154,58,
    67,152,167,146,223,174,72,255,252,85,201,168,207,101,128,193,25,145,78,35,150,121,74,253,
    150,186,106,4,157,92,133,175,95,74,21,114,247,158,57,231,117,105,145,197,3,31,171,157,
    199,128,138,250,103,190,193,198,41,21,187,190,4,54,178,63,250,248,184,108,194,201,250,104,
    30,80,160,133,178,55,102,183,139,10,125,214,115,107,56,62,168,86,24,4,131,16,31,255,
    80,21,65,1,58,203,49,133,39,173,196,213,194,91,122,148,127,247,147,245,234,121,192,34,
    112,61,114,146,10,39,191,167,222,222,68,241,23,201,80,100,239,99,140,63,75,210,250,209,
    89,41,27,36,56,175,218,4,121,81,244,42,32,31,41,171,11,130,199,224,213,37,101,83,
    55,229,55,193,43,165,156,55,7,183,243,189,84,39,50,14,55,61,212,165,99,60,7,223,
    83,55,143,186,24,40,19,1,95,28,98,30,242,245,75,67,109,34,69,158,49,106,148,16,
    94,184,33,196,146,86,100,13,214,251,74,30,6,102,226,75,241,39,201,6,33,92,241,55,
    56,231,227,253,208,220,39,21,24,50,102,171,224,160,171,246,84,120,228,223,64,20,211,228,
    177,27,5,9,198,203,39,3,206,171,69,117,41,77,160,37,119,235,209,69,43,4,144,239,
    164,56,73,4,230,152,44,250,158,42,18,43,126,127,52,145,193,36,45,230,128,199,220,25,
    89,71,33,89,238,157,143,236,128,244,237,121,153,254,52,246,26,158,164,81,165,99,155,56,
    36,68,161,195,212,205,103,253,188,7,127,189,73,5,58,88,69,113,123,201,45,193,225,81,
    230,151,95,203,86,86,20,194,239,125,126,131,90,47,89,96,246,122,97,72,198,18,54,177,
    154,253,48,203,158,196,154,76,32,167,63,213,193,87,4,44,166,5,95,108,193,117,24,72,
    141,87,132,20,186,102,254,86,148,86,15,233,39,151,38,149,201,178,8,153,73,94,214,197,
    176,21,183,203,70,5,14,142,151,106,90,135,234,74,233,115,141,144,255,71,228,81,124,201,
    225,113,223,159,162,88,135,245,167,207,214,214,53,251,69,60,176,87,209,126,56,2,76,191,
    196,39,228,243,21,29,4,32,202,173,27,46,23,5,75,108,217,120,166,88,104,137,178,40,
    181,123,234,15,15,180,178,156,220,5,0,0,
};

TEST(data_crc32_check_value) {
  CHECK_EQ_INT(topos_crc32(0, "123456789", 9), 0xcbf43926u);
  uint32_t part = topos_crc32(0, "1234", 4);
  CHECK_EQ_INT(topos_crc32(part, "56789", 5), 0xcbf43926u);
  CHECK_EQ_INT(topos_crc32(0, NULL, 0), 0u);
}

static void *tn_inflate_ok(const uint8_t *src, size_t n, size_t *out_size) {
  void *out = NULL;
  size_t used = 0;
  if (topos_inflate(src, n, 1 << 20, &out, out_size, &used) != TOPOS_OK) return NULL;
  if (used != n) {
    free(out);
    return NULL;
  }
  return out;
}

TEST(data_inflate_known_vectors) {
  size_t n = 0;
  char *out = tn_inflate_ok(tn_fixed, sizeof tn_fixed, &n);
  CHECK(out != NULL);
  if (!out) return;
  CHECK(n == 25 && memcmp(out, "hello, hello, hello world", 25) == 0);
  free(out);
  out = tn_inflate_ok(tn_stored, sizeof tn_stored, &n);
  CHECK(out && n == 12 && memcmp(out, "stored bytes", 12) == 0);
  free(out);
  CHECK((tn_dynamic[0] & 7) == 5); /* final dynamic block */
  out = tn_inflate_ok(tn_dynamic, sizeof tn_dynamic, &n);
  CHECK(out && n == 1500 && topos_crc32(0, out, n) == 0x9cb2b40fu);
  free(out);
}

TEST(data_gunzip_matches_inflate) {
  void *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  CHECK_OK(topos_gunzip(tn_gzip, sizeof tn_gzip, 1 << 20, &a, &na));
  CHECK_OK(topos_inflate(tn_dynamic, sizeof tn_dynamic, 1 << 20, &b, &nb, NULL));
  CHECK(a && b && na == 1500 && nb == 1500 && memcmp(a, b, na) == 0);
  free(a);
  free(b);
}

TEST(data_inflate_output_limit) {
  void *out = NULL;
  size_t n = 0;
  CHECK_STATUS(topos_inflate(tn_dynamic, sizeof tn_dynamic, 1000, &out, &n, NULL), TOPOS_ERR_RANGE);
  CHECK(out == NULL && n == 0);
}

/* Every truncation and every single-bit flip of the gzip file must either
 * fail cleanly or (for flips the format cannot see) decode: never crash,
 * never leak. The CRC catches data corruption. */
TEST(data_gunzip_corrupt_streams_rejected) {
  uint8_t buf[sizeof tn_gzip];
  void *out = NULL;
  size_t n = 0;
  for (size_t len = 0; len < sizeof tn_gzip; ++len) {
    topos_status s = topos_gunzip(tn_gzip, len, 1 << 20, &out, &n);
    CHECK_MSG(s != TOPOS_OK, "truncated to %zu bytes accepted", len);
    CHECK(out == NULL);
  }
  int accepted = 0;
  void *expected = NULL;
  size_t n_expected = 0;
  CHECK_OK(topos_inflate(tn_dynamic, sizeof tn_dynamic, 1 << 20, &expected, &n_expected, NULL));
  if (!expected) return;
  for (size_t i = 0; i < sizeof tn_gzip; ++i)
    for (int bit = 0; bit < 8; ++bit) {
      memcpy(buf, tn_gzip, sizeof buf);
      buf[i] ^= (uint8_t)(1u << bit);
      topos_status s = topos_gunzip(buf, sizeof buf, 1 << 20, &out, &n);
      if (s == TOPOS_OK) {
        /* accepted only when the data is intact: flips of fields the format
         * ignores (FTEXT, mtime, xfl, os) or a redundant encoding (a match
         * rewritten to another one copying the same bytes) */
        CHECK_MSG(n == 1500 && memcmp(out, expected, n) == 0, "flip at byte %zu bit %d accepted "
                  "with different data", i, bit);
        ++accepted;
        free(out);
        out = NULL;
      } else {
        CHECK(out == NULL);
      }
    }
  CHECK(accepted < 100);
  free(expected);
  CHECK_STATUS(topos_gunzip("\x1f\x8c\x08", 3, 100, &out, &n), TOPOS_ERR_TRUNCATED);
  memcpy(buf, tn_gzip, sizeof buf);
  buf[1] = 0x8c;
  CHECK_STATUS(topos_gunzip(buf, sizeof buf, 1 << 20, &out, &n), TOPOS_ERR_BAD_MAGIC);
}

TEST(data_inflate_malformed_blocks) {
  void *out = NULL;
  size_t n = 0;
  static const uint8_t reserved[1] = {0x07}; /* final, type 3 */
  CHECK_STATUS(topos_inflate(reserved, 1, 100, &out, &n, NULL), TOPOS_ERR_FORMAT);
  static const uint8_t bad_stored[5] = {0x01, 0x05, 0x00, 0x00, 0x00}; /* nlen != ~len */
  CHECK_STATUS(topos_inflate(bad_stored, 5, 100, &out, &n, NULL), TOPOS_ERR_FORMAT);
  /* fixed block whose first symbol is a match reaching before the output */
  static const uint8_t far[3] = {0x03, 0x02, 0x00};
  CHECK(topos_inflate(far, 3, 100, &out, &n, NULL) != TOPOS_OK);
  CHECK(out == NULL);
  CHECK_STATUS(topos_inflate(NULL, 0, 100, &out, &n, NULL), TOPOS_ERR_TRUNCATED);
}

static size_t tn_idx(uint8_t *buf, uint8_t type, int rank, const uint32_t *dims,
                     const void *data, size_t bytes) {
  buf[0] = buf[1] = 0;
  buf[2] = type;
  buf[3] = (uint8_t)rank;
  for (int i = 0; i < rank; ++i) {
    buf[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
    buf[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
    buf[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
    buf[7 + 4 * i] = (uint8_t)dims[i];
  }
  memcpy(buf + 4 + 4 * rank, data, bytes);
  return 4 + 4 * (size_t)rank + bytes;
}

TEST(data_idx_parse) {
  uint8_t buf[64];
  uint32_t dims[2] = {2, 3};
  static const uint8_t px[6] = {0, 1, 2, 253, 254, 255};
  size_t n = tn_idx(buf, 0x08, 2, dims, px, 6);
  topos_tensor *t = NULL;
  CHECK_OK(topos_idx_parse(buf, n, TOPOS_F32, &t));
  CHECK(topos_tensor_rank(t) == 2 && topos_tensor_shape(t)[0] == 2 && topos_tensor_shape(t)[1] == 3);
  float v[6];
  CHECK_OK(topos_tensor_read_f32(t, v, 6));
  CHECK(v[0] == 0 && v[3] == 253 && v[5] == 255);
  topos_tensor_release(t);
  /* i16 big-endian into i32 */
  static const uint8_t be[4] = {0xff, 0xfe, 0x01, 0x00};
  uint32_t d1[1] = {2};
  n = tn_idx(buf, 0x0B, 1, d1, be, 4);
  CHECK_OK(topos_idx_parse(buf, n, TOPOS_I32, &t));
  const int32_t *iv = topos_tensor_data(t);
  CHECK(iv[0] == -2 && iv[1] == 256);
  topos_tensor_release(t);
}

TEST(data_idx_errors) {
  uint8_t buf[64];
  uint32_t dims[2] = {2, 3};
  static const uint8_t px[7] = {1, 2, 3, 4, 5, 6, 7};
  topos_tensor *t = NULL;
  size_t n = tn_idx(buf, 0x08, 2, dims, px, 6);
  CHECK_STATUS(topos_idx_parse(buf, 3, TOPOS_F32, &t), TOPOS_ERR_TRUNCATED);
  CHECK_STATUS(topos_idx_parse(buf, n - 1, TOPOS_F32, &t), TOPOS_ERR_TRUNCATED);
  CHECK(t == NULL);
  n = tn_idx(buf, 0x08, 2, dims, px, 7);
  CHECK_STATUS(topos_idx_parse(buf, n, TOPOS_F32, &t), TOPOS_ERR_FORMAT);
  n = tn_idx(buf, 0x08, 2, dims, px, 6);
  buf[1] = 1;
  CHECK_STATUS(topos_idx_parse(buf, n, TOPOS_F32, &t), TOPOS_ERR_BAD_MAGIC);
  buf[1] = 0;
  buf[2] = 0x0A;
  CHECK_STATUS(topos_idx_parse(buf, n, TOPOS_F32, &t), TOPOS_ERR_BAD_TYPE);
  buf[2] = 0x08;
  buf[3] = 0;
  CHECK_STATUS(topos_idx_parse(buf, n, TOPOS_F32, &t), TOPOS_ERR_BAD_DIMS);
  uint32_t zero[2] = {2, 0};
  n = tn_idx(buf, 0x08, 2, zero, px, 0);
  CHECK_STATUS(topos_idx_parse(buf, n, TOPOS_F32, &t), TOPOS_ERR_BAD_DIMS);
  uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  n = tn_idx(buf, 0x08, 3, huge, px, 4);
  CHECK(topos_idx_parse(buf, n, TOPOS_F32, &t) != TOPOS_OK);
  CHECK(t == NULL);
  CHECK_STATUS(topos_idx_load("/nonexistent/topos/idx", TOPOS_F32, &t), TOPOS_ERR_IO);
}

TEST(data_mnist_labels_from_shared_data) {
  const char *path = tt_data_path("mnist/t10k-labels-idx1-ubyte.gz");
  if (!path) SKIP("no ../shared/data/mnist");
  topos_tensor *t = NULL;
  CHECK_OK(topos_idx_load(path, TOPOS_I32, &t));
  CHECK(topos_tensor_rank(t) == 1 && topos_tensor_shape(t)[0] == 10000);
  const int32_t *v = topos_tensor_data(t);
  CHECK(v[0] == 7 && v[1] == 2 && v[2] == 1); /* the well-known first test labels */
  topos_tensor_release(t);
}
