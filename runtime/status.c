/* runtime/status.c — the per-thread last-error message behind dtrx_last_error(). */
#include <stdarg.h>
#include <stdio.h>

#include "runtime/runtime-impl.h"

static _Thread_local char last_error[2048];

const char *dtrx_last_error(void) { return last_error; }

enum dtrx_status rt_fail(enum dtrx_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}
