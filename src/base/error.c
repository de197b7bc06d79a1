#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TP_ERROR_CAPACITY 1024

static _Thread_local char tp_error_message[TP_ERROR_CAPACITY];

const char *topos_last_error(void) { return tp_error_message; }

void topos_clear_error(void) { tp_error_message[0] = '\0'; }

topos_status tp_fail(topos_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(tp_error_message, sizeof tp_error_message, fmt, args);
  va_end(args);
  return status;
}

topos_status tp_fail_context(topos_status status, const char *fmt, ...) {
  char prefix[256];
  char previous[TP_ERROR_CAPACITY];
  va_list args;
  va_start(args, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, args);
  va_end(args);
  memcpy(previous, tp_error_message, sizeof previous);
  /* Compose by hand: snprintf("%s: %s") trips -Wformat-truncation, and
   * truncation is exactly what we want here. */
  size_t used = strlen(prefix);
  if (used > TP_ERROR_CAPACITY - 3) used = TP_ERROR_CAPACITY - 3;
  memcpy(tp_error_message, prefix, used);
  tp_error_message[used++] = ':';
  tp_error_message[used++] = ' ';
  size_t rest = strlen(previous);
  if (rest > TP_ERROR_CAPACITY - 1 - used) rest = TP_ERROR_CAPACITY - 1 - used;
  memcpy(tp_error_message + used, previous, rest);
  tp_error_message[used + rest] = '\0';
  return status;
}

const char *topos_status_name(topos_status status) {
  switch (status) {
#define TP_STATUS_NAME_ROW(name, value, text) \
  case name:                                  \
    return #name;
    TOPOS_STATUS_LIST(TP_STATUS_NAME_ROW)
#undef TP_STATUS_NAME_ROW
  }
  return "TOPOS_UNKNOWN_STATUS";
}

const char *topos_status_text(topos_status status) {
  switch (status) {
#define TP_STATUS_TEXT_ROW(name, value, text) \
  case name:                                  \
    return text;
    TOPOS_STATUS_LIST(TP_STATUS_TEXT_ROW)
#undef TP_STATUS_TEXT_ROW
  }
  return "unknown status";
}

const char *topos_version(void) { return "0.1.0"; }
