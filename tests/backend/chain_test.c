/* The chain's vocabulary and state: statuses in every build, coverage and
 * chains, the posture scope, poison after a failure, loud mode. */
#include <pthread.h>

#include "backend_util.h"

TEST(backend_status_answers_in_every_build) {
  char reason[320];
  CHECK_EQ_INT(topos_backend_state_of(TOPOS_BACKEND_DEFAULT, reason, sizeof reason),
               TOPOS_BACKEND_READY);
  CHECK(strstr(reason, "bit-identical") != NULL);
  CHECK_OK(topos_backend_status(TOPOS_BACKEND_DEFAULT));
  for (int b = 1; b < TOPOS_BACKEND_COUNT; ++b) {
    topos_backend backend = (topos_backend)b;
    topos_backend_state state = topos_backend_state_of(backend, reason, sizeof reason);
    if (!topos_backend_compiled(backend)) {
      CHECK_EQ_INT(state, TOPOS_BACKEND_NOT_COMPILED);
      CHECK_MSG(strstr(reason, "not compiled (build with TOPOS_") != NULL, "%s", reason);
      CHECK_STATUS(topos_backend_status(backend), TOPOS_ERR_BACKEND);
      CHECK_ERROR_HAS("not compiled");
    } else if (state == TOPOS_BACKEND_READY) {
      CHECK_OK(topos_backend_status(backend));
    } else {
      CHECK_EQ_INT(state, TOPOS_BACKEND_UNAVAILABLE);
      CHECK(reason[0] != '\0');
      CHECK_STATUS(topos_backend_status(backend), TOPOS_ERR_BACKEND);
      CHECK_ERROR_HAS("unavailable: ");
    }
  }
#if !defined(__APPLE__)
  /* Apple-only members compile everywhere and say why they cannot run. */
  if (topos_backend_compiled(TOPOS_BACKEND_METAL)) {
    CHECK_EQ_INT(topos_backend_state_of(TOPOS_BACKEND_METAL, reason, sizeof reason),
                 TOPOS_BACKEND_UNAVAILABLE);
    CHECK(strstr(reason, "platform unsupported") != NULL);
  }
  if (topos_backend_compiled(TOPOS_BACKEND_ACCELERATE))
    CHECK_EQ_INT(topos_backend_state_of(TOPOS_BACKEND_ACCELERATE, NULL, 0),
                 TOPOS_BACKEND_UNAVAILABLE);
#endif
  CHECK_EQ_INT(topos_backend_state_of((topos_backend)99, reason, sizeof reason),
               TOPOS_BACKEND_NOT_COMPILED);
}

TEST(backend_names_parse_and_chains_end_with_default) {
  for (int b = 0; b < TOPOS_BACKEND_COUNT; ++b) {
    topos_backend parsed;
    CHECK_OK(topos_backend_parse(topos_backend_name((topos_backend)b), &parsed));
    CHECK_EQ_INT(parsed, b);
  }
  CHECK_STATUS(topos_backend_parse("tpu", NULL), TOPOS_ERR_NOT_FOUND);
  for (int f = 0; f < TOPOS_FORMULA_COUNT; ++f) {
    topos_backend chain[8];
    int n = topos_formula_chain((topos_formula)f, chain, 8);
    CHECK(n >= 1 && n <= 8);
    CHECK_EQ_INT(chain[n - 1], TOPOS_BACKEND_DEFAULT);
    CHECK_EQ_INT(topos_backend_coverage(TOPOS_BACKEND_DEFAULT, (topos_formula)f),
                 TOPOS_FIDELITY_BIT_IDENTICAL);
    for (int i = 0; i < n; ++i)
      CHECK(topos_backend_coverage(chain[i], (topos_formula)f) != TOPOS_FIDELITY_ABSENT);
  }
  /* f64 never reaches metal; cuda serves products only */
  CHECK_EQ_INT(topos_backend_coverage(TOPOS_BACKEND_METAL, TOPOS_FORMULA_GEMM_F64),
               TOPOS_FIDELITY_ABSENT);
  CHECK_EQ_INT(topos_backend_coverage(TOPOS_BACKEND_CUDA, TOPOS_FORMULA_MAP_F32),
               TOPOS_FIDELITY_ABSENT);
  CHECK(topos_backend_threshold(TOPOS_BACKEND_CUDA, TOPOS_FORMULA_GEMM_F32) > 0);
}

static void *bt_posture_of_new_thread(void *arg) {
  *(topos_numerics *)arg = topos_numerics_current();
  return NULL;
}

TEST(backend_numerics_posture_is_scoped_and_thread_local) {
  topos_numerics outer = topos_numerics_current();
  CHECK_EQ_INT(outer, TOPOS_NUMERICS_FAST);
  topos_numerics saved = topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  CHECK_EQ_INT(saved, TOPOS_NUMERICS_FAST);
  CHECK_EQ_INT(topos_numerics_current(), TOPOS_NUMERICS_EXACT);
  topos_numerics other = TOPOS_NUMERICS_EXACT;
  pthread_t id;
  CHECK(pthread_create(&id, NULL, bt_posture_of_new_thread, &other) == 0);
  pthread_join(id, NULL);
  topos_numerics inner = topos_numerics_enter(TOPOS_NUMERICS_FAST);
  topos_numerics_restore(inner);
  topos_numerics now = topos_numerics_current();
  topos_numerics_restore(saved);
  CHECK_EQ_INT(other, TOPOS_NUMERICS_FAST); /* a new thread starts Fast */
  CHECK_EQ_INT(now, TOPOS_NUMERICS_EXACT);
  CHECK_EQ_INT(topos_numerics_current(), TOPOS_NUMERICS_FAST);
  CHECK(strcmp(topos_numerics_name(TOPOS_NUMERICS_EXACT), "exact") == 0);
}

/* A member that fails poisons itself, keeps the reason, and the task still
 * completes on the next member (here: the reference loop). */
TEST(backend_failure_poisons_and_falls_back) {
  bt_scope scope = bt_enter();
  int64_t sa[2] = {20, 30}, sb[2] = {30, 10};
  topos_tensor *a = bt_random(TOPOS_F32, 2, sa, 21), *b = bt_random(TOPOS_F32, 2, sb, 22);
  topos_tensor *c = NULL, *c2 = NULL;
  topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  tp_backend_inject_failure(TOPOS_BACKEND_DEFAULT);
  topos_status s = topos_matmul(a, b, &c);
  char reason[320];
  topos_backend_state state = topos_backend_state_of(TOPOS_BACKEND_DEFAULT, reason, sizeof reason);
  topos_status status = topos_backend_status(TOPOS_BACKEND_DEFAULT);
  /* poisoned: declines from then on, still right */
  topos_status s2 = topos_matmul(a, b, &c2);
  topos_backend served = tp_backend_last_served();
  double *ref = bt_reference_matmul(a, b);
  int same = s == TOPOS_OK && s2 == TOPOS_OK && bt_bits_equal(c, ref, 200) && bt_bits_equal(c2, ref, 200);
  free(ref);
  topos_tensor_release(a), topos_tensor_release(b), topos_tensor_release(c), topos_tensor_release(c2);
  bt_leave(scope);
  CHECK_OK(s);
  CHECK_EQ_INT(state, TOPOS_BACKEND_POISONED);
  CHECK_MSG(strstr(reason, "injected failure") && strstr(reason, "gemm f32"), "%s", reason);
  CHECK_EQ_INT(status, TOPOS_ERR_BACKEND);
  CHECK_EQ_INT(served, TOPOS_BACKEND_COUNT); /* the built-in reference ran */
  CHECK(same);
  CHECK_EQ_INT(topos_backend_state_of(TOPOS_BACKEND_DEFAULT, NULL, 0), TOPOS_BACKEND_READY);
}

/* Loud mode turns a fallback into an error; declines by size are not fallbacks. */
TEST(backend_loud_mode_refuses_fallback) {
  bt_scope scope = bt_enter();
  int64_t s2[2] = {8, 8};
  topos_tensor *a = bt_random(TOPOS_F64, 2, s2, 23), *c = NULL;
  topos_backend_set_loud(1);
  CHECK(topos_backend_loud());
  topos_status quiet = topos_matmul(a, a, &c); /* everything healthy: fine */
  topos_tensor_release(c);
  c = NULL;
  tp_backend_inject_failure(TOPOS_BACKEND_DEFAULT);
  topos_status failing = topos_matmul(a, a, &c);
  char message[512];
  snprintf(message, sizeof message, "%s", topos_last_error());
  topos_status poisoned = topos_matmul(a, a, &c);
  topos_backend_set_loud(0);
  topos_tensor *c3 = NULL;
  topos_status relaxed = topos_matmul(a, a, &c3);
  topos_tensor_release(a), topos_tensor_release(c), topos_tensor_release(c3);
  bt_leave(scope);
  CHECK_OK(quiet);
  CHECK_EQ_INT(failing, TOPOS_ERR_BACKEND);
  CHECK_MSG(strstr(message, "loud mode") && strstr(message, "default"), "%s", message);
  CHECK_EQ_INT(poisoned, TOPOS_ERR_BACKEND);
  CHECK_OK(relaxed);
}

/* A compiled member that cannot run is a fallback too: loud mode says so
 * for a product above its threshold (cuda, metal or accelerate here). */
TEST(backend_loud_mode_reports_unavailable_member) {
  topos_backend unavailable = TOPOS_BACKEND_COUNT;
  topos_backend gemm[8];
  int n = topos_formula_chain(TOPOS_FORMULA_GEMM_F32, gemm, 8);
  for (int i = 0; i < n && unavailable == TOPOS_BACKEND_COUNT; ++i)
    if (topos_backend_compiled(gemm[i]) &&
        topos_backend_state_of(gemm[i], NULL, 0) == TOPOS_BACKEND_UNAVAILABLE)
      unavailable = gemm[i];
  if (unavailable == TOPOS_BACKEND_COUNT) SKIP("no compiled-but-unavailable product member in this build");
  bt_scope scope = bt_enter();
  int64_t s[2] = {320, 320};
  topos_tensor *a = bt_random(TOPOS_F32, 2, s, 24), *c = NULL;
  topos_backend_set_loud(1);
  topos_status st = topos_matmul(a, a, &c);
  char message[512];
  snprintf(message, sizeof message, "%s", topos_last_error());
  topos_numerics_enter(TOPOS_NUMERICS_EXACT); /* Exact never asks envelope members */
  topos_tensor *c2 = NULL;
  topos_status exact = topos_matmul(a, a, &c2);
  topos_tensor_release(a), topos_tensor_release(c), topos_tensor_release(c2);
  bt_leave(scope);
  CHECK_EQ_INT(st, TOPOS_ERR_BACKEND);
  CHECK_MSG(strstr(message, topos_backend_name(unavailable)) && strstr(message, "unavailable"),
            "%s", message);
  CHECK_OK(exact);
}
