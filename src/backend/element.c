/* The element seam: per-type descriptors whose gemm and map hooks are where
 * acceleration enters. f32 and f64 forward to the chain; a user element (or
 * an override of f32/f64) routes its tasks to its own kernels. When a hook
 * declines, the built-in path runs: the chain and the reference loops for
 * f32/f64, the reference order through multiply/add/apply for user types. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"

static topos_status tp_f32_gemm(const topos_element *self, const topos_gemm_task *task) {
  (void)self;
  return tp_chain_gemm(TOPOS_FORMULA_GEMM_F32, task);
}
static topos_status tp_f64_gemm(const topos_element *self, const topos_gemm_task *task) {
  (void)self;
  return tp_chain_gemm(TOPOS_FORMULA_GEMM_F64, task);
}
static topos_status tp_f32_map(const topos_element *self, topos_map_op op, const void *in,
                               void *out, int64_t count) {
  (void)self;
  return tp_chain_map(TOPOS_FORMULA_MAP_F32, op, in, out, count);
}
static topos_status tp_f64_map(const topos_element *self, topos_map_op op, const void *in,
                               void *out, int64_t count) {
  (void)self;
  return tp_chain_map(TOPOS_FORMULA_MAP_F64, op, in, out, count);
}

static const topos_element tp_element_f32 = {"f32", 4, tp_f32_gemm, tp_f32_map,
                                             NULL, NULL, NULL, NULL};
static const topos_element tp_element_f64 = {"f64", 8, tp_f64_gemm, tp_f64_map,
                                             NULL, NULL, NULL, NULL};
/* 16-bit floats compute in f32 and round per op: the reference kernels own them. */
static const topos_element tp_element_bf16 = {"bf16", 2, NULL, NULL, NULL, NULL, NULL, NULL};
static const topos_element tp_element_f16 = {"f16", 2, NULL, NULL, NULL, NULL, NULL, NULL};

static _Atomic(const topos_element *) tp_override_f32;
static _Atomic(const topos_element *) tp_override_f64;

const topos_element *topos_element_of(topos_dtype dtype) {
  const topos_element *e;
  switch (dtype) {
    case TOPOS_F32:
      e = atomic_load(&tp_override_f32);
      return e ? e : &tp_element_f32;
    case TOPOS_F64:
      e = atomic_load(&tp_override_f64);
      return e ? e : &tp_element_f64;
    case TOPOS_BF16: return &tp_element_bf16;
    case TOPOS_F16: return &tp_element_f16;
    default: return NULL;
  }
}

topos_status topos_element_override(topos_dtype dtype, const topos_element *element) {
  if (dtype == TOPOS_F32)
    atomic_store(&tp_override_f32, element);
  else if (dtype == TOPOS_F64)
    atomic_store(&tp_override_f64, element);
  else
    return tp_fail(TOPOS_ERR_DTYPE, "element override: only f32 and f64 have hooks, not %s",
                   topos_dtype_name(dtype));
  return TOPOS_OK;
}

/* The built-in dtype behind a descriptor (its own or an override), or -1. */
static int tp_element_dtype(const topos_element *e) {
  if (e == &tp_element_f32 || e == atomic_load(&tp_override_f32)) return TOPOS_F32;
  if (e == &tp_element_f64 || e == atomic_load(&tp_override_f64)) return TOPOS_F64;
  return -1;
}

static topos_status tp_task_check(const topos_element *e, const topos_gemm_task *t) {
  if (!e || !t)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "element gemm: NULL %s", e ? "task" : "element");
  if (t->m < 1 || t->n < 1 || t->k < 1)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "element gemm %s: extents must be >= 1 (m=%lld n=%lld k=%lld)", e->name,
                   (long long)t->m, (long long)t->n, (long long)t->k);
  if (!t->a || !t->b || !t->c)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "element gemm %s: NULL operand", e->name);
  if (t->c_row_stride < t->n && t->m > 1)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "element gemm %s: c_row_stride %lld is less than n=%lld", e->name,
                   (long long)t->c_row_stride, (long long)t->n);
  return TOPOS_OK;
}

/* The reference order over opaque elements: c = a0*b0, then c += ap*bp. */
static topos_status tp_user_gemm(const topos_element *e, const topos_gemm_task *t) {
  if (!e->multiply || !e->add || e->size == 0)
    return tp_fail(TOPOS_UNSUPPORTED,
                   "element gemm %s: the hook declined and the element has no multiply/add",
                   e->name);
  unsigned char *product = malloc(e->size);
  if (!product) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "element gemm %s: no memory", e->name);
  const unsigned char *a = t->a, *b = t->b;
  unsigned char *c = t->c;
  size_t s = e->size;
  for (int64_t i = 0; i < t->m; ++i)
    for (int64_t j = 0; j < t->n; ++j) {
      unsigned char *cij = c + (size_t)(i * t->c_row_stride + j) * s;
      e->multiply(a + (ptrdiff_t)(i * t->a_row_stride) * (ptrdiff_t)s,
                  b + (ptrdiff_t)(j * t->b_col_stride) * (ptrdiff_t)s, cij);
      for (int64_t p = 1; p < t->k; ++p) {
        e->multiply(a + (ptrdiff_t)(i * t->a_row_stride + p * t->a_col_stride) * (ptrdiff_t)s,
                    b + (ptrdiff_t)(p * t->b_row_stride + j * t->b_col_stride) * (ptrdiff_t)s,
                    product);
        e->add(cij, product, cij);
      }
    }
  free(product);
  return TOPOS_OK;
}

topos_status topos_element_gemm(const topos_element *element, const topos_gemm_task *task) {
  TP_TRY(tp_task_check(element, task));
  if (element->gemm) {
    topos_status s = element->gemm(element, task);
    if (s != TOPOS_UNSUPPORTED) return s;
  }
  switch (tp_element_dtype(element)) {
    case TOPOS_F32: {
      /* An override that declined still gets the chain, then the reference. */
      topos_status s = element == &tp_element_f32 ? TOPOS_UNSUPPORTED
                                                  : tp_chain_gemm(TOPOS_FORMULA_GEMM_F32, task);
      if (s != TOPOS_UNSUPPORTED) return s;
      tp_reference_gemm_f32(task);
      return TOPOS_OK;
    }
    case TOPOS_F64: {
      topos_status s = element == &tp_element_f64 ? TOPOS_UNSUPPORTED
                                                  : tp_chain_gemm(TOPOS_FORMULA_GEMM_F64, task);
      if (s != TOPOS_UNSUPPORTED) return s;
      tp_reference_gemm_f64(task);
      return TOPOS_OK;
    }
    default: return tp_user_gemm(element, task);
  }
}

topos_status topos_element_map(const topos_element *element, topos_map_op op, const void *in,
                               void *out, int64_t count) {
  if (!element || (count > 0 && (!in || !out)) || count < 0 || (unsigned)op >= TOPOS_MAP_COUNT)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "element map: bad arguments (op %d, count %lld)",
                   (int)op, (long long)count);
  if (count == 0) return TOPOS_OK;
  if (element->map) {
    topos_status s = element->map(element, op, in, out, count);
    if (s != TOPOS_UNSUPPORTED) return s;
  }
  int dtype = tp_element_dtype(element);
  if (dtype == TOPOS_F32 || dtype == TOPOS_F64) {
    int builtin = element == &tp_element_f32 || element == &tp_element_f64;
    topos_formula f = dtype == TOPOS_F32 ? TOPOS_FORMULA_MAP_F32 : TOPOS_FORMULA_MAP_F64;
    topos_status s = builtin ? TOPOS_UNSUPPORTED : tp_chain_map(f, op, in, out, count);
    if (s != TOPOS_UNSUPPORTED) return s;
    /* Every member declined (or all are disabled): the reference's own loop. */
    return dtype == TOPOS_F32 ? tp_reference_map_f32(op, in, out, count)
                              : tp_reference_map_f64(op, in, out, count);
  }
  if (!element->apply)
    return tp_fail(TOPOS_UNSUPPORTED, "element map %s: no hook served %s and no apply", element->name,
                   topos_map_op_name(op));
  const unsigned char *x = in;
  unsigned char *y = out;
  for (int64_t i = 0; i < count; ++i) {
    topos_status s = element->apply(op, x + (size_t)i * element->size, y + (size_t)i * element->size);
    if (s == TOPOS_UNSUPPORTED)
      return tp_fail(s, "element map %s: apply does not support %s", element->name,
                     topos_map_op_name(op));
    if (s != TOPOS_OK) return s;
  }
  return TOPOS_OK;
}

const char *topos_map_op_name(topos_map_op op) {
  static const char *const names[TOPOS_MAP_COUNT] = {"exp", "ln", "sqrt", "tanh", "neg", "relu"};
  return (unsigned)op < TOPOS_MAP_COUNT ? names[op] : "unknown";
}
