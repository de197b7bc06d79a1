/* The snprintf-style text sink (see text.h). */
#include "base/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static size_t tp_text_room(const tp_text *t) {
  return t->length < t->size ? t->size - t->length : 0;
}

void tp_text_put(tp_text *t, const char *bytes, size_t n) {
  size_t room = tp_text_room(t);
  if (room) memcpy(t->buf + t->length, bytes, n < room ? n : room);
  t->length += n;
}

void tp_text_puts(tp_text *t, const char *s) { tp_text_put(t, s, strlen(s)); }

void tp_text_printf(tp_text *t, const char *fmt, ...) {
  size_t room = tp_text_room(t);
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(room ? t->buf + t->length : NULL, room, fmt, args);
  va_end(args);
  if (n > 0) t->length += (size_t)n;
}

size_t tp_text_finish(tp_text *t) {
  if (t->size > 0) t->buf[t->length < t->size ? t->length : t->size - 1] = '\0';
  return t->length;
}
