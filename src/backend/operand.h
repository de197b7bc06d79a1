/* Internal: how a strided operand maps onto the BLAS vocabulary (row-major
 * storage with a transpose flag and a leading dimension), shared by the
 * members that call a BLAS (blas, accelerate, cuda).
 *
 * A rows x cols operand read as p[r*row_stride + c*col_stride] is
 *   no-transpose with ld = row_stride  when its columns are unit-stride, or
 *   transpose    with ld = col_stride  when its rows are unit-stride;
 * an axis of extent 1 may have any stride. Anything else (stride 0 over more
 * than one element, negative or overlapping strides, a leading dimension
 * that does not fit an int) cannot be expressed: the member declines. */
#ifndef TP_BACKEND_OPERAND_H
#define TP_BACKEND_OPERAND_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct tp_operand {
  bool transposed; /* the buffer holds the operand's transpose, row-major */
  int ld;          /* leading dimension of the buffer, in elements */
  int64_t span;    /* elements from the first to one past the last reachable */
} tp_operand;

static inline bool tp_operand_classify(int64_t rows, int64_t cols, int64_t row_stride,
                                       int64_t col_stride, tp_operand *out) {
  if (rows > INT_MAX || cols > INT_MAX) return false;
  /* row-major, unit columns: ld >= cols */
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= cols)) {
    int64_t ld = rows == 1 ? cols : row_stride;
    if (ld < 1 || ld > INT_MAX) return false;
    out->transposed = false;
    out->ld = (int)ld;
    out->span = (rows - 1) * ld + cols;
    return true;
  }
  /* column-major, unit rows: ld >= rows */
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= rows)) {
    int64_t ld = cols == 1 ? rows : col_stride;
    if (ld < 1 || ld > INT_MAX) return false;
    out->transposed = true;
    out->ld = (int)ld;
    out->span = (cols - 1) * ld + rows;
    return true;
  }
  return false;
}

#endif
