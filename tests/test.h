/* The test harness: each .c file under tests/ defines TEST(name) functions that
 * register themselves; tests/main.c runs them all (or those whose name
 * contains argv[1]) and ends with "N passed, M failed, K skipped".
 *
 * A CHECK that fails reports file:line and what it saw, and returns from the
 * test. Tests may use ../shared/data through tt_data_path() and SKIP when it
 * is absent. */
#ifndef TOPOS_TEST_H
#define TOPOS_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "topos.h"

typedef void (*tt_fn)(void);
void tt_register(const char *name, const char *file, tt_fn fn);
void tt_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tt_skip(const char *why);
/* Path of a file under the shared data folder (../shared/data/<rel>, or
 * $TOPOS_DATA/<rel>); NULL if it does not exist. Returned in a static buffer. */
const char *tt_data_path(const char *rel);
/* A fresh temporary directory for this test process (removed at exit). */
const char *tt_tmpdir(void);
/* 1 under valgrind (its preload library is in LD_PRELOAD while it runs us). */
int tt_under_valgrind(void);
/* 1 where every instruction costs 20-60 times its native time: under
 * valgrind or an emulator ($TOPOS_TEST_EMULATOR, make test-arm64). Sweeps
 * the native builds run in full (thread counts, real-model checks) run
 * there in a shorter form or not at all. */
int tt_instrumented(void);
/* 1 in a build with AddressSanitizer (make asan). */
#if defined(__SANITIZE_ADDRESS__)
#define TT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_SANITIZED 1
#endif
#endif
#ifndef TT_SANITIZED
#define TT_SANITIZED 0
#endif

#define TT_CAT2(a, b) a##b
#define TT_CAT(a, b) TT_CAT2(a, b)

#define TEST(name)                                                        \
  static void name(void);                                                 \
  __attribute__((constructor)) static void TT_CAT(tt_reg_, name)(void) {  \
    tt_register(#name, __FILE__, name);                                   \
  }                                                                       \
  static void name(void)

#define SKIP(why)    \
  do {               \
    tt_skip(why);    \
    return;          \
  } while (0)

#define CHECK(cond)                                        \
  do {                                                     \
    if (!(cond)) {                                         \
      tt_fail_at(__FILE__, __LINE__, "CHECK(%s)", #cond);  \
      return;                                              \
    }                                                      \
  } while (0)

#define CHECK_MSG(cond, ...)                     \
  do {                                           \
    if (!(cond)) {                               \
      tt_fail_at(__FILE__, __LINE__, __VA_ARGS__); \
      return;                                    \
    }                                            \
  } while (0)

/* Expects TOPOS_OK; shows the status name and topos_last_error() otherwise. */
#define CHECK_OK(expr)                                                          \
  do {                                                                          \
    topos_status tt_s_ = (expr);                                                \
    if (tt_s_ != TOPOS_OK) {                                                    \
      tt_fail_at(__FILE__, __LINE__, "%s returned %s: %s", #expr,               \
                 topos_status_name(tt_s_), topos_last_error());                 \
      return;                                                                   \
    }                                                                           \
  } while (0)

/* Expects a specific failing status (and a non-empty message). */
#define CHECK_STATUS(expr, expected)                                            \
  do {                                                                          \
    topos_status tt_s_ = (expr);                                                \
    if (tt_s_ != (expected)) {                                                  \
      tt_fail_at(__FILE__, __LINE__, "%s returned %s, expected %s (%s)", #expr, \
                 topos_status_name(tt_s_), topos_status_name(expected),         \
                 topos_last_error());                                           \
      return;                                                                   \
    }                                                                           \
    if (tt_s_ != TOPOS_OK && topos_last_error()[0] == '\0') {                   \
      tt_fail_at(__FILE__, __LINE__, "%s failed with an empty message", #expr); \
      return;                                                                   \
    }                                                                           \
  } while (0)

/* For helpers that report at their caller's (file, line) and clean up at a
 * label `done`: runs expr into the topos_status variable s; on failure,
 * reports it with the message and jumps to done. */
#define TT_TRY_AT(file, line, s, expr)                                                     \
  do {                                                                                     \
    (s) = (expr);                                                                          \
    if ((s) != TOPOS_OK) {                                                                 \
      tt_fail_at(file, line, "%s: %s: %s", #expr, topos_status_name(s), topos_last_error()); \
      goto done;                                                                           \
    }                                                                                      \
  } while (0)

/* The current error message contains a substring. */
#define CHECK_ERROR_HAS(substr)                                                   \
  do {                                                                            \
    if (!strstr(topos_last_error(), (substr))) {                                  \
      tt_fail_at(__FILE__, __LINE__, "error message \"%s\" lacks \"%s\"",        \
                 topos_last_error(), (substr));                                   \
      return;                                                                     \
    }                                                                             \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                       \
  do {                                                                           \
    long long tt_a_ = (long long)(a), tt_b_ = (long long)(b);                    \
    if (tt_a_ != tt_b_) {                                                        \
      tt_fail_at(__FILE__, __LINE__, "%s == %s: %lld vs %lld", #a, #b, tt_a_, tt_b_); \
      return;                                                                    \
    }                                                                            \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                    \
  do {                                                                           \
    double tt_a_ = (double)(a), tt_b_ = (double)(b);                             \
    if (!(fabs(tt_a_ - tt_b_) <= (tol))) {                                       \
      tt_fail_at(__FILE__, __LINE__, "%s ~ %s: %.17g vs %.17g (tol %g)", #a, #b, \
                 tt_a_, tt_b_, (double)(tol));                                   \
      return;                                                                    \
    }                                                                            \
  } while (0)

static inline uint32_t tt_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline uint64_t tt_f64_bits(double f) {
  uint64_t u;
  memcpy(&u, &f, 8);
  return u;
}

#define CHECK_BITS_F32(a, b)                                                         \
  do {                                                                               \
    float tt_a_ = (a), tt_b_ = (b);                                                  \
    if (tt_f32_bits(tt_a_) != tt_f32_bits(tt_b_)) {                                  \
      tt_fail_at(__FILE__, __LINE__, "bits of %s != %s: %.9g (0x%08x) vs %.9g (0x%08x)", \
                 #a, #b, tt_a_, tt_f32_bits(tt_a_), tt_b_, tt_f32_bits(tt_b_));      \
      return;                                                                        \
    }                                                                                \
  } while (0)

#define CHECK_BITS_F64(a, b)                                                          \
  do {                                                                                \
    double tt_a_ = (a), tt_b_ = (b);                                                  \
    if (tt_f64_bits(tt_a_) != tt_f64_bits(tt_b_)) {                                   \
      tt_fail_at(__FILE__, __LINE__, "bits of %s != %s: %.17g vs %.17g", #a, #b, tt_a_, \
                 tt_b_);                                                              \
      return;                                                                         \
    }                                                                                 \
  } while (0)

/* Tensors equal in dtype, shape and every bit. */
#define CHECK_TENSOR_BITS(a, b)                                                \
  do {                                                                         \
    if (!topos_tensor_bits_equal((a), (b))) {                                  \
      char tt_ba_[512], tt_bb_[512];                                           \
      topos_tensor_format((a), tt_ba_, sizeof tt_ba_, 16);                     \
      topos_tensor_format((b), tt_bb_, sizeof tt_bb_, 16);                     \
      tt_fail_at(__FILE__, __LINE__, "tensors %s and %s differ:\n%s\n%s", #a, #b, \
                 tt_ba_, tt_bb_);                                              \
      return;                                                                  \
    }                                                                          \
  } while (0)

#endif
