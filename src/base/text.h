/* Internal: appending text to a caller's buffer with snprintf's contract —
 * bytes go in while they fit, `length` counts all of them, so a caller whose
 * buffer was too small learns the size it needs. Used by the tensor
 * formatter, the plan description and the tokenizer's decoder. */
#ifndef TP_BASE_TEXT_H
#define TP_BASE_TEXT_H

#include <stddef.h>

#include "base/error.h"

typedef struct tp_text {
  char *buf;     /* may be NULL when size is 0 */
  size_t size;   /* bytes of buf */
  size_t length; /* bytes appended so far, also those that did not fit */
} tp_text;

/* n bytes (no terminator written). */
void tp_text_put(tp_text *t, const char *bytes, size_t n);
/* A C string (no terminator written). */
void tp_text_puts(tp_text *t, const char *s);
/* Formatted; where it fits, a terminator follows it. */
void tp_text_printf(tp_text *t, const char *fmt, ...) TP_PRINTF(2, 3);
/* NUL-terminates what fit (truncating the last byte when full); returns
 * length. */
size_t tp_text_finish(tp_text *t);

#endif
