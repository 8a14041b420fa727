/* runtime/values.h — value lifetime (values.c): new values, their
 * memory, their pending reads, release. */
#ifndef DTRX_RUNTIME_VALUES_H
#define DTRX_RUNTIME_VALUES_H

#include <stddef.h>
#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_value;
struct tensor;

/* A new value (name borrowed: it must outlive the value); -1 on failure. */
int rt_value_new(struct dtrx_session *s, const char *name, int kind);

/* Value memory (values.c). */
enum dtrx_status rt_value_alloc(struct dtrx_session *s, struct rt_value *v);
/* A persistent tensor (weights, optimizer state, targets): its own arena
 * block, never evicted, registered with every DTR instance. -1 on failure. */
int rt_persistent_new(struct dtrx_session *s, const struct tensor *t, const char *name);
void rt_value_release(struct dtrx_session *s, struct rt_value *v);
/* Arena bytes a resident value holds (a sequence's or optional's: its
 * elements'); what setting an input adds to or takes from the pinned bytes. */
size_t rt_value_bytes(const struct dtrx_session *s, const struct rt_value *v);
/* Releases a value and frees the value itself. */
void rt_value_destroy(struct dtrx_session *s, struct rt_value *v);
/* One more / one fewer pending read of a value; at none it is released
 * (unless it is a graph output or persistent) (values.c). */
void rt_value_hold(struct dtrx_session *s, int id);
void rt_value_unhold(struct dtrx_session *s, int id);
/* Releases an intermediate value no read is pending for. */
void rt_value_drop_if_unused(struct dtrx_session *s, struct rt_value *v);

#endif
