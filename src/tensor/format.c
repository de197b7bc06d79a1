/* NumPy-like text of a tensor:
 *
 *   tensor f32 [2,3]
 *   [[1, 2, 3],
 *    [4, 5, 6]]
 *
 * Floats print in the shortest %g form that reads back to the same bits of
 * the tensor's dtype. Beyond max_elements, every axis longer than 6 shows its
 * first and last 3 entries around "...". max_elements == 0 prints only the
 * header; a negative value never summarises. Block-quantized tensors print
 * the header only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "tensor/tensor_internal.h"

#define TP_FORMAT_EDGE 3

static void tp_put_value(tp_text *w, topos_dtype dtype, const char *p) {
  tp_value v = tp_load(dtype, p);
  if (v.is_int) {
    tp_text_printf(w, "%lld", (long long)v.i);
    return;
  }
  if (isnan(v.f)) {
    tp_text_puts(w, "nan");
    return;
  }
  if (isinf(v.f)) {
    tp_text_puts(w, v.f < 0 ? "-inf" : "inf");
    return;
  }
  char text[40];
  size_t size = tp_dtype_size(dtype);
  int digits = 1;
  for (; digits <= 17; ++digits) {
    snprintf(text, sizeof text, "%.*g", digits, v.f);
    unsigned char back[8];
    tp_store(dtype, back, tp_value_of_double(strtod(text, NULL)));
    if (memcmp(back, p, size) == 0) break;
  }
  /* Few digits can force an exponent ("1e+01"); moderate magnitudes read
   * better positionally, which needs as many digits as the integer part. */
  int exponent = v.f != 0 ? (int)floor(log10(fabs(v.f))) : 0;
  if (strchr(text, 'e') && exponent >= digits && exponent < 16)
    snprintf(text, sizeof text, "%.*g", exponent + 1, v.f);
  tp_text_puts(w, text);
}

static void tp_put_axis(tp_text *w, const topos_tensor *t, int axis, int64_t offset,
                        bool summarise) {
  if (axis == t->rank) {
    tp_put_value(w, t->dtype, (const char *)t->storage->data + (size_t)offset * tp_dtype_size(t->dtype));
    return;
  }
  int64_t extent = t->shape[axis];
  bool cut = summarise && extent > 2 * TP_FORMAT_EDGE;
  tp_text_puts(w, "[");
  for (int64_t i = 0; i < extent; ++i) {
    if (i > 0) {
      if (axis == t->rank - 1) {
        tp_text_puts(w, ", ");
      } else { /* like NumPy: newline, a blank line per extra level, align under "[" */
        tp_text_puts(w, ",\n");
        for (int blank = 0; blank < t->rank - axis - 2; ++blank) tp_text_puts(w, "\n");
        for (int pad = 0; pad <= axis; ++pad) tp_text_puts(w, " ");
      }
    }
    if (cut && i == TP_FORMAT_EDGE) {
      tp_text_puts(w, "...");
      i = extent - TP_FORMAT_EDGE - 1; /* the tail follows */
      continue;
    }
    tp_put_axis(w, t, axis + 1, offset + i * t->strides[axis], summarise);
  }
  tp_text_puts(w, "]");
}

size_t topos_tensor_format(const topos_tensor *t, char *buf, size_t size, int64_t max_elements) {
  tp_text w = {buf, size, 0};
  if (!t) {
    tp_text_puts(&w, "tensor (null)");
  } else {
    char shape[128];
    tp_text_puts(&w, "tensor ");
    tp_text_puts(&w, topos_dtype_name(t->dtype));
    tp_text_puts(&w, " ");
    tp_text_puts(&w, tp_shape_string(t->rank, t->shape, shape, sizeof shape));
    if (topos_dtype_is_quantized(t->dtype)) {
      tp_text_printf(&w, " (block-quantized, %lld blocks of %lld bytes)",
              (long long)(t->volume / topos_dtype_block_size(t->dtype)),
              (long long)topos_dtype_block_bytes(t->dtype));
    } else if (max_elements != 0) {
      tp_text_puts(&w, "\n");
      tp_put_axis(&w, t, 0, t->offset, max_elements > 0 && t->volume > max_elements);
    }
  }
  return tp_text_finish(&w);
}
