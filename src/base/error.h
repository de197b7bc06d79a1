/* Internal: set the thread-local error message and return a status.
 *   return tp_fail(TOPOS_ERR_SHAPE, "add: shapes %s and %s differ", a, b); */
#ifndef TP_BASE_ERROR_H
#define TP_BASE_ERROR_H

#include "topos/base.h"

/* GGUF files and their tensors are little-endian and read in place: a
 * build that bypasses CMakeLists.txt's check stops here too */
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "topos runs on little-endian hosts only (GGUF and its tensors are read in place)"
#endif

#if defined(__GNUC__)
#define TP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define TP_LIKELY(x) __builtin_expect(!!(x), 1)
#define TP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TP_PRINTF(a, b)
#define TP_LIKELY(x) (x)
#define TP_UNLIKELY(x) (x)
#endif

/* Formats the message (truncated to the buffer) and returns status. */
topos_status tp_fail(topos_status status, const char *fmt, ...) TP_PRINTF(2, 3);
/* Prepends "context: " to the current message, returns status unchanged.
 * For callers that add what they were doing to a callee's message. */
topos_status tp_fail_context(topos_status status, const char *fmt, ...) TP_PRINTF(2, 3);

/* Propagate a failing status. */
#define TP_TRY(expr)                                  \
  do {                                                \
    topos_status tp_try_status_ = (expr);             \
    if (TP_UNLIKELY(tp_try_status_ != TOPOS_OK))      \
      return tp_try_status_;                          \
  } while (0)

#endif
