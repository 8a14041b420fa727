/* runtime/status.c — the per-thread last-error message behind dtrx_last_error().
 * Messages quote names from the model file; bytes that are not printable
 * (control bytes, invalid UTF-8) are escaped as \xNN so that a corrupted
 * name cannot write raw bytes to the terminal. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/status.h"

static _Thread_local char last_error[2048];

const char *dtrx_last_error(void) { return last_error; }

/* Length of the valid UTF-8 sequence of two to four bytes at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void rt_escape_text(char *dst, size_t size, const char *src)
{
    size_t o = 0;
    const unsigned char *s = (const unsigned char *)src;
    while (*s && o + 1 < size) {
        size_t n = *s >= 0x80 ? utf8_len(s) : (*s >= 0x20 && *s != 0x7f) || *s == '\n' || *s == '\t';
        if (n) {
            if (o + n >= size)
                break;
            memcpy(dst + o, s, n);
            o += n;
            s += n;
        } else {
            if (o + 4 >= size)
                break;
            snprintf(dst + o, 5, "\\x%02x", *s++);
            o += 4;
        }
    }
    dst[o] = 0;
}

enum dtrx_status rt_fail(enum dtrx_status status, const char *fmt, ...)
{
    char raw[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    rt_escape_text(last_error, sizeof last_error, raw);
    return status;
}
