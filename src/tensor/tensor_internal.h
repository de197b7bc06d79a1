/* Internal layout of tensors and storage, shared by the tiers above (ops
 * kernels, quant, io). Public code sees only the opaque handle. */
#ifndef TP_TENSOR_INTERNAL_H
#define TP_TENSOR_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "topos/tensor.h"

typedef struct tp_storage {
  atomic_long refs;
  topos_storage_kind kind;
  void *data; /* first byte of the storage */
  size_t bytes;
  topos_release_fn release; /* heap: NULL (topos frees); else the owner's callback */
  void *context;
} tp_storage;

struct topos_tensor {
  atomic_long refs;
  topos_dtype dtype;
  int rank;
  int64_t shape[TOPOS_MAX_RANK];
  int64_t strides[TOPOS_MAX_RANK]; /* elements; 0 = broadcast */
  int64_t offset;                  /* elements from storage->data */
  int64_t volume;
  tp_storage *storage;
};

/* Element size in bytes for plain (non-block) dtypes; 0 for block-quantized. */
size_t tp_dtype_size(topos_dtype dtype);
/* i8, i16, i32, i64. */
int tp_dtype_is_integer(topos_dtype dtype);

/* ---- storage (storage.c). Both constructors return one reference. */
/* Heap bytes, 64-byte aligned; zeroed when `zero`. */
topos_status tp_storage_heap(size_t bytes, bool zero, tp_storage **out);
/* A plan arena or scratch region: heap bytes as above, uninitialised, but
 * mapped from a smaller size (storage.c says why). */
topos_status tp_storage_arena(size_t bytes, tp_storage **out);
/* Caller or mapped bytes; `release` (may be NULL) runs once after the last release. */
topos_status tp_storage_wrap(void *data, size_t bytes, topos_storage_kind kind,
                             topos_release_fn release, void *context, tp_storage **out);
void tp_storage_retain(tp_storage *s);
void tp_storage_release(tp_storage *s); /* NULL is fine */

/* ---- one element of a plain dtype (element.c), with topos_tensor_convert's
 * rules: float->float and int->float round to nearest even (f64 and integers
 * reach f16/bf16 through f32); float->int truncates toward zero and
 * saturates, NaN is refused; int->int saturates. */
typedef struct tp_value {
  bool is_int; /* the value came from an integer dtype: i is exact */
  int64_t i;
  double f; /* always set (for integers: (double)i) */
} tp_value;
tp_value tp_load(topos_dtype dtype, const void *p);
/* false only for NaN into an integer dtype (nothing is written then). */
bool tp_store(topos_dtype dtype, void *p, tp_value v);
float tp_value_f32(tp_value v);
double tp_value_f64(tp_value v);
static inline tp_value tp_value_of_double(double f) {
  tp_value v = {false, 0, f};
  return v;
}

/* New contiguous tensor with uninitialised contents (kernels write every element). */
topos_status tp_tensor_empty(topos_dtype dtype, int rank, const int64_t *shape, topos_tensor **out);
/* A new handle over t's storage with the given layout. Checks only that the
 * shape is valid, every reachable element lies inside the storage
 * (TOPOS_ERR_RANGE) and, for block dtypes, that the last axis stays contiguous
 * in whole blocks with block-aligned outer strides and offset (TOPOS_ERR_DTYPE).
 * Negative strides are allowed. */
topos_status tp_tensor_view(topos_tensor *t, int rank, const int64_t *shape,
                            const int64_t *strides, int64_t offset, topos_tensor **out);
/* Row-major contiguous strides for shape. */
void tp_contiguous_strides(int rank, const int64_t *shape, int64_t *strides);
/* Checked product of extents (each > 0); TOPOS_ERR_OVERFLOW / TOPOS_ERR_SHAPE. */
topos_status tp_shape_volume(int rank, const int64_t *shape, int64_t *out);
/* "[2,3,4]" into buf (NUL-terminated, truncated if needed); returns buf. */
const char *tp_shape_string(int rank, const int64_t *shape, char *buf, size_t size);

/* Byte address of the element at the tensor's offset (plain dtypes), or of the
 * block containing it (block dtypes: offset is whole blocks). */
static inline char *tp_tensor_base(const topos_tensor *t) {
  if (t->dtype < TOPOS_DTYPE_COUNT && tp_dtype_size(t->dtype) > 0)
    return (char *)t->storage->data + (size_t)t->offset * tp_dtype_size(t->dtype);
  return (char *)t->storage->data +
         (size_t)(t->offset / topos_dtype_block_size(t->dtype)) *
             (size_t)topos_dtype_block_bytes(t->dtype);
}

/* ---- where new tensors live (provider.c)
 *
 * By default every tensor header, storage handle and buffer comes from the
 * heap. A compiled plan installs a provider on its thread while it runs, so
 * the unchanged kernels allocate nothing in steady state:
 *   header():  a recycled tensor header (its fields are overwritten), or NULL
 *              (then the heap);
 *   place():   one new reference to a storage and a 64-byte-aligned byte
 *              offset in it for a new contiguous plain-dtype tensor, or false
 *              (then the heap);
 *   scratch(): raw 64-byte-aligned kernel scratch, valid until the provider's
 *              owner rewinds it, or NULL (then the heap);
 *   recycle(): takes a header whose last reference went (its storage already
 *              released) instead of free().
 * A destination (tp_tensor_destination_arm) is one-shot and comes first: the
 * next new contiguous tensor of its dtype and volume is laid over the
 * destination's bytes (the op's result lands in the buffer a plan assigned).
 * Both are per thread: kernels allocate on the calling thread. Results never
 * depend on where bytes live. */
typedef struct tp_provider tp_provider;
struct tp_provider {
  topos_tensor *(*header)(tp_provider *self);
  bool (*place)(tp_provider *self, size_t bytes, tp_storage **storage, size_t *byte_offset);
  void *(*scratch)(tp_provider *self, size_t bytes);
  void (*recycle)(tp_provider *self, topos_tensor *bare);
};
/* Installs p (NULL: none) for the calling thread; returns the previous one. */
tp_provider *tp_provider_install(tp_provider *p);
/* Arms dst (contiguous, plain dtype; NULL disarms) as the calling thread's
 * one-shot destination; returns the previously armed one. */
topos_tensor *tp_tensor_destination_arm(topos_tensor *dst);
/* Called by the constructors: storage (new reference) and element offset for
 * a new contiguous tensor, from the destination or the provider; *exact is
 * set when the destination itself (same shape) can be handed out. */
bool tp_tensor_place(topos_dtype dtype, int rank, const int64_t *shape, int64_t volume,
                     size_t bytes, tp_storage **storage, int64_t *offset, topos_tensor **exact);
/* A header for tp_tensor_assemble: the provider's or malloc'd (NULL: OOM). */
topos_tensor *tp_tensor_header_new(void);
/* Frees a header that holds no storage (a recycled one). */
void tp_tensor_header_free(topos_tensor *t);
/* A header whose last reference went: to the provider if one is installed,
 * else free(). */
void tp_tensor_header_discard(topos_tensor *t);
/* If the caller holds t's only reference, drops its storage and returns the
 * bare header for reuse (true); otherwise releases the caller's reference
 * (false). NULL gives false. */
bool tp_tensor_recycle(topos_tensor *t);
/* A contiguous tensor over s's bytes at element offset (s is retained);
 * TOPOS_ERR_RANGE if it does not fit. */
topos_status tp_tensor_on_storage(tp_storage *s, int64_t offset, topos_dtype dtype, int rank,
                                  const int64_t *shape, topos_tensor **out);
/* Packs t's elements row-major into dst (t's plain-dtype bytes, any layout). */
void tp_tensor_pack_into(const topos_tensor *t, void *dst);

/* Kernel scratch: the provider's when installed, else the heap (*heap set). */
void *tp_scratch_alloc(size_t bytes, bool *heap);
void tp_scratch_free(void *p, bool heap);

/* Heap allocations made for tensors (headers, storage handles, buffers) and
 * kernel scratch since start, all threads, plus the base tier's aligned
 * allocations (tp_heap_allocation_count); tp_heap_allocations_add lets the
 * tiers above count their own per-run allocations into the same total. */
uint64_t tp_heap_allocations(void);
void tp_heap_allocations_add(uint64_t n);

/* Odometer over a shape: advances index (rank entries) in row-major order;
 * returns false after the last element. */
static inline bool tp_index_next(int rank, const int64_t *shape, int64_t *index) {
  for (int axis = rank - 1; axis >= 0; --axis) {
    if (++index[axis] < shape[axis]) return true;
    index[axis] = 0;
  }
  return false;
}

/* Element offset (in elements from storage start) of a logical index. */
static inline int64_t tp_tensor_element_offset(const topos_tensor *t, const int64_t *index) {
  int64_t off = t->offset;
  for (int axis = 0; axis < t->rank; ++axis) off += index[axis] * t->strides[axis];
  return off;
}

#endif
