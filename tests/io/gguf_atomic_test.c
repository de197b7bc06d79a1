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

TEST(gguf_atomic_simulated_failures_keep_target) {
  const char *dir = tt_subdir("atomic_fail");
  char path[600];
  snprintf(path, sizeof path, "%s/model.gguf", dir);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  fputs("OLD CONTENT", f);
  fclose(f);
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
