/* Atomic writes: a failed write never leaves a partial target or a stray
 * temporary file; a successful one replaces the target as a whole. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "io/gguf_internal.h"
#include "test.h"

/* Number of entries in dir other than . and ..; -1 if it cannot be read. */
static int tt_count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
  closedir(d);
  return n;
}

static int tt_file_equals(const char *path, const char *content) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char buf[256];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return n == strlen(content) && memcmp(buf, content, n) == 0;
}

static topos_status tt_small_writer(topos_gguf_writer **w, float *data) {
  TP_TRY(topos_gguf_writer_create(w));
  TP_TRY(topos_gguf_writer_add_string(*w, "general.architecture", "llama"));
  int64_t ne[2] = {64, 4};
  for (int i = 0; i < 256; ++i) data[i] = (float)i * 0.25f;
  return topos_gguf_writer_add_tensor_raw(*w, "w", 0, 2, ne, data, 256 * sizeof(float));
}

static const char *tt_subdir(const char *name) {
  static char dir[512];
  snprintf(dir, sizeof dir, "%s/%s", tt_tmpdir(), name);
  mkdir(dir, 0755);
  return dir;
}

/* dir/model.gguf holding "OLD CONTENT" (the target a failed write must keep); path gets its name. */
static int tt_old_target(const char *dir, char *path, size_t size) {
  snprintf(path, size, "%s/model.gguf", dir);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fputs("OLD CONTENT", f);
  return fclose(f) == 0;
}

TEST(gguf_atomic_simulated_failures_keep_target) {
  const char *dir = tt_subdir("atomic_fail");
  char path[600];
  CHECK(tt_old_target(dir, path, sizeof path));
  float data[256];
  topos_gguf_writer *w = NULL;
  topos_status st = tt_small_writer(&w, data);
  if (st != TOPOS_OK) topos_gguf_writer_destroy(w);
  CHECK_OK(st);
  void *mem;
  size_t full;
  st = topos_gguf_writer_write_memory(w, &mem, &full);
  free(mem);
  /* Fail at the start, inside the header, inside the data, one byte short. */
  long long cuts[5] = {0, 10, 100, (long long)full / 2, (long long)full - 1};
  for (int i = 0; i < 5 && st == TOPOS_OK; ++i) {
    tp_gguf_writer_fail_after(w, cuts[i]);
    topos_status ws = topos_gguf_writer_write(w, path);
    if (ws != TOPOS_ERR_IO || !strstr(topos_last_error(), "left unchanged")) {
      topos_gguf_writer_destroy(w);
      CHECK_MSG(0, "cut %lld: status %s (%s)", cuts[i], topos_status_name(ws), topos_last_error());
    }
    if (!tt_file_equals(path, "OLD CONTENT") || tt_count_entries(dir) != 1) {
      topos_gguf_writer_destroy(w);
      CHECK_MSG(0, "cut %lld: target changed or a temporary file was left", cuts[i]);
    }
  }
  /* Enough budget: the write goes through and replaces the target whole. */
  tp_gguf_writer_fail_after(w, (long long)full);
  topos_status ok = topos_gguf_writer_write(w, path);
  topos_gguf_writer_destroy(w);
  CHECK_OK(st);
  CHECK_OK(ok);
  CHECK_EQ_INT(tt_count_entries(dir), 1);
  topos_gguf *g;
  CHECK_OK(topos_gguf_open(path, &g));
  CHECK_EQ_INT(topos_gguf_file_size(g), full);
  topos_gguf_close(g);
}

TEST(gguf_atomic_unwritable_destinations) {
  float data[256];
  topos_gguf_writer *w = NULL;
  topos_status st = tt_small_writer(&w, data);
  char path[600];
  /* Missing directory: nothing can be created. */
  snprintf(path, sizeof path, "%s/no/such/dir/model.gguf", tt_tmpdir());
  topos_status s1 = st == TOPOS_OK ? topos_gguf_writer_write(w, path) : st;
  struct stat sb;
  int created = stat(path, &sb) == 0;
  /* Target is a directory: rename fails after the data was written; the
   * temporary file must be removed and the directory left alone. */
  const char *dir = tt_subdir("atomic_isdir");
  snprintf(path, sizeof path, "%s/target", dir);
  mkdir(path, 0755);
  topos_status s2 = st == TOPOS_OK ? topos_gguf_writer_write(w, path) : st;
  const char *msg2 = topos_last_error();
  int is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
  int entries = tt_count_entries(dir);
  topos_gguf_writer_destroy(w);
  CHECK_OK(st);
  CHECK(s1 == TOPOS_ERR_IO);
  CHECK(!created);
  CHECK_MSG(s2 == TOPOS_ERR_IO, "status %s: %s", topos_status_name(s2), msg2);
  CHECK(is_dir);
  CHECK_EQ_INT(entries, 1);
}

/* Produced tensors (topos_gguf_writer_add_tensor_fill): the file is the
 * same bytes as with the data given whole, the producer sees every row once
 * in order, in chunks; a failing producer leaves the target untouched. */
typedef struct {
  const uint8_t *src;
  size_t row_bytes;
  int64_t next_row, calls, fail_at;
} tt_fill_state;

static topos_status tt_fill(void *user, int64_t row0, int64_t rows, void *dst) {
  tt_fill_state *s = user;
  if (row0 != s->next_row) return tp_fail(TOPOS_ERR_INTERNAL, "rows out of order");
  if (s->fail_at >= 0 && row0 + rows > s->fail_at) return tp_fail(TOPOS_ERR_IO, "producer failed (test)");
  memcpy(dst, s->src + (size_t)row0 * s->row_bytes, (size_t)rows * s->row_bytes);
  s->next_row += rows;
  ++s->calls;
  return TOPOS_OK;
}

TEST(gguf_writer_fill_same_bytes_and_atomic) {
  /* q8_0 rows of 4096 elements (4352 bytes): 600 rows span 3 chunks of ~1 MiB */
  const int64_t ne[2] = {4096, 600};
  const size_t row_bytes = 4096 / 32 * 34, bytes = row_bytes * 600;
  uint8_t *src = malloc(bytes);
  CHECK(src != NULL);
  for (size_t i = 0; i < bytes; ++i) src[i] = (uint8_t)(i * 131u + (i >> 9));
  for (size_t b = 0; b < bytes; b += 34) src[b + 1] = 0x3c; /* finite f16 scales */
  void *raw = NULL, *made = NULL;
  size_t raw_n = 0, made_n = 0;
  topos_gguf_writer *w1 = NULL, *w2 = NULL;
  CHECK_OK(topos_gguf_writer_create(&w1));
  CHECK_OK(topos_gguf_writer_add_tensor_raw(w1, "t", 8, 2, ne, src, bytes));
  CHECK_OK(topos_gguf_writer_write_memory(w1, &raw, &raw_n));
  tt_fill_state s = {src, row_bytes, 0, 0, -1};
  CHECK_OK(topos_gguf_writer_create(&w2));
  CHECK_OK(topos_gguf_writer_add_tensor_fill(w2, "t", 8, 2, ne, tt_fill, &s));
  CHECK_OK(topos_gguf_writer_write_memory(w2, &made, &made_n));
  CHECK(raw_n == made_n && memcmp(raw, made, raw_n) == 0);
  CHECK_EQ_INT(s.next_row, 600);
  CHECK(s.calls >= 3);
  /* a producer failing part way: error with context, old target kept */
  const char *dir = tt_subdir("fill_fail");
  char path[600];
  CHECK(tt_old_target(dir, path, sizeof path));
  s = (tt_fill_state){src, row_bytes, 0, 0, 400};
  CHECK_STATUS(topos_gguf_writer_write(w2, path), TOPOS_ERR_IO);
  CHECK(strstr(topos_last_error(), "producing tensor 't'") != NULL);
  CHECK(tt_file_equals(path, "OLD CONTENT"));
  CHECK_EQ_INT(tt_count_entries(dir), 1);
  /* bad arguments */
  CHECK_STATUS(topos_gguf_writer_add_tensor_fill(w2, "u", 8, 2, ne, NULL, &s), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_gguf_writer_add_tensor_fill(w2, "t", 8, 2, ne, tt_fill, &s), TOPOS_ERR_DUPLICATE);
  const int64_t odd[2] = {100, 2};
  CHECK_STATUS(topos_gguf_writer_add_tensor_fill(w2, "v", 8, 2, odd, tt_fill, &s), TOPOS_ERR_BAD_DIMS);
  topos_gguf_writer_destroy(w1);
  topos_gguf_writer_destroy(w2);
  free(raw), free(made), free(src);
}
