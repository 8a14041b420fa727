/* runtime/memory.h — value memory behind one interface, with two
 * implementations: plain (memory_plain.c: each value a refcounted
 * rt_storage block in the arena, views sharing it, nothing evicted) and DTR
 * (budget.c: values are tensors of a DTR instance, evicted and recomputed
 * to stay under the budget). s->memory is the plain one except while a
 * budgeted run or step has its DTR instance: rt_budget_begin switches to
 * the DTR one and rt_budget_end back. */
#ifndef DTRX_RUNTIME_MEMORY_H
#define DTRX_RUNTIME_MEMORY_H

#include <stddef.h>

#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_value;
struct rt_call;
struct op_call;

struct rt_memory {
    const char *name;
    int evicts;                    /* 1 when values may be evicted and recomputed (DTR) */
    /* Places c's outputs (shape inference first), runs its kernel and sets
     * its cost and kernel time: the executor's (exec.c) step for every call. */
    enum dtrx_status (*exec)(struct dtrx_session *s, struct rt_call *c, struct op_call *call);
    /* The block of a persistent tensor (weights, optimizer state, drawn
     * targets); NULL without room. */
    void *(*persistent_alloc)(struct dtrx_session *s, size_t bytes);
    /* A new persistent value with its block made known (DTR: a constant of
     * the instance). */
    enum dtrx_status (*persistent_add)(struct dtrx_session *s, struct rt_value *v);
    /* A step constant (axes, the loss seed) from host data. */
    enum dtrx_status (*constant)(struct dtrx_session *s, struct rt_value *v, const void *data);
    /* Copies a value to host memory (DTR: acquiring it, recomputing it if evicted). */
    enum dtrx_status (*read)(struct dtrx_session *s, struct rt_value *v, void *dst);
    /* Keeps a value resident until the run or step ends. */
    enum dtrx_status (*pin)(struct dtrx_session *s, struct rt_value *v);
    /* v (a parameter) is about to be updated in place while the step still
     * holds values computed from it (an update inside the backward pass):
     * none of them may be recomputed from the new contents (DTR: they are
     * made resident and frozen, dtr_tensor_mutate). */
    enum dtrx_status (*mutate)(struct dtrx_session *s, struct rt_value *v);
    /* 1 when a call may write its output over v's buffer, v being read by
     * nothing afterwards: nothing else shares the buffer, and nothing will
     * recompute v (DTR: v is frozen, dtr_tensor_mutate). */
    int (*overwritable)(const struct dtrx_session *s, const struct rt_value *v);
    /* 1 when a model call may write its output over v's buffer, v having no
     * reader but that call (its only consumer, nothing saved for a gradient):
     * nothing else shares the buffer. Under DTR v may still be recomputed,
     * but only to recompute that call's output, which the call then writes
     * over it again; so v must not be pinned (a constant). */
    int (*reusable)(const struct dtrx_session *s, const struct rt_value *v);
    /* The program lets go of a value (DTR: its reference to the tensor). */
    void (*release)(struct dtrx_session *s, struct rt_value *v);
    /* 1 when the value holds data now or can be recomputed. */
    int (*live)(const struct dtrx_session *s, const struct rt_value *v);
};

extern const struct rt_memory rt_memory_plain;   /* memory_plain.c */
extern const struct rt_memory rt_memory_dtr;     /* budget.c */

#endif
