/* runtime/strings.h — the session's string heap (strings.c): where the
 * bytes of STRING elements made by kernels or bound as inputs live, outside
 * the arena and the budget, interned until the session ends. */
#ifndef DTRX_RUNTIME_STRINGS_H
#define DTRX_RUNTIME_STRINGS_H

#include <stdint.h>

#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_string_heap;

/* Sets env.string_intern. */
void rt_strings_init(struct dtrx_session *s);
/* For a STRING tensor of n elements: *copy = its handles re-pointed at
 * interned, session-owned bytes (free() it after copying it in); for other
 * types *copy = NULL. */
enum dtrx_status rt_strings_stable(struct dtrx_session *s, int dtype, const void *data, int64_t n, void **copy);
void rt_strings_free(struct dtrx_session *s);

#endif
