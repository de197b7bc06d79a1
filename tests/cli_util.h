/* Shared by the end-to-end CLI tests: find the `topos` binary next to the
 * test binary, run it with output captured in a log, search the log. */
#ifndef TOPOS_TESTS_CLI_UTIL_H
#define TOPOS_TESTS_CLI_UTIL_H

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* Path of build/bin/topos beside this test binary, or NULL when absent. */
static inline const char *tt_topos_binary(void) {
  static char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
  if (n <= 0) return NULL;
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  if (!slash) return NULL;
  strcpy(slash + 1, "topos");
  return access(path, X_OK) == 0 ? path : NULL;
}

/* Runs `topos ARGS` with stdout and stderr in tmpdir/LOG_NAME (its path is
 * written into log); returns the exit status, -1 if it did not exit. Under
 * $TOPOS_TEST_EMULATOR (a cross build's suite run by qemu-user: make
 * test-arm64) the binary is started through that command. */
static inline int tt_topos_run(const char *args, const char *log_name, char *log,
                               size_t log_size) {
  char cmd[8192];
  const char *emulator = getenv("TOPOS_TEST_EMULATOR");
  snprintf(log, log_size, "%s/%s", tt_tmpdir(), log_name);
  snprintf(cmd, sizeof cmd, "%s '%s' %s > '%s' 2>&1", emulator ? emulator : "", tt_topos_binary(), args, log);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* 1 when the first 64 KiB of the log contain text. */
static inline int tt_log_has(const char *log, const char *text) {
  FILE *f = fopen(log, "r");
  if (!f) return 0;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, text) != NULL;
}

#endif
