/* runtime/status.h — the runtime's error reporting (status.c):
 * the per-thread message behind dtrx_last_error(). A leaf. */
#ifndef DTRX_RUNTIME_STATUS_H
#define DTRX_RUNTIME_STATUS_H

#include <stddef.h>
#include "runtime/dtrexec.h"

/* Records the message for dtrx_last_error() and returns `status`. */
enum dtrx_status rt_fail(enum dtrx_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Copies src into dst (size bytes, NUL-terminated) with control bytes and
 * invalid UTF-8 written as \xNN: rt_fail passes every message through it. */
void rt_escape_text(char *dst, size_t size, const char *src);

#endif
