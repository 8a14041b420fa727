/* runtime/budget.h — execution under a memory budget (budget.c): the
 * bridge between the runtime and a DTR instance (dtr/), with the arena block
 * behind each DTR storage: the DTR implementation of value memory
 * (rt_memory_dtr, memory.h); memory_plain.c is the plain one. */
#ifndef DTRX_RUNTIME_BUDGET_H
#define DTRX_RUNTIME_BUDGET_H

#include <stddef.h>
#include <stdint.h>
#include "dtr/dtr.h"
#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_value;
struct rt_call;
struct op_call;

/* Execution under a budget (budget.c): a DTR instance per run or step, and
 * the arena block behind each of its storages. */
struct rt_budget {
    struct dtr_config config;
    struct dtr *dtr;
    uint32_t capacity;
    void **ptr;                    /* per storage: its buffer */
    void **scratch;                /* per storage: a recomputation's scratch output */
    uint8_t *owned;                /* 1 when the bridge allocated ptr (0: adopted) */
    int measured_costs;            /* DTR costs from measured kernel times instead of FLOPs */
    void *adopt;                   /* the block the next constant adopts */
    int constant_pending;          /* the next allocation is a step constant: place it high */
    void **window;                 /* owners of an eviction window */
    const struct rt_call *pending_call; /* the call dtr_call is running for the first time */
    const struct rt_call *busy_call;    /* the call whose kernel is running: its buffers stay put */
    const dtr_tensor *pending_outs;     /* and the tensors the core gave its outputs */
    double kernel_seconds, remat_seconds;
    size_t scratch_failed_bytes;   /* workspace a kernel could not get */
    size_t failed_bytes;           /* the last storage allocation that did not fit, and its storage */
    dtr_storage failed_storage;
    size_t scratch_requested;      /* workspace the running kernel asked for so far */
    void *reserve;                 /* workspace reserved before a kernel's retry */
    size_t reserve_bytes, reserve_used;
    enum dtrx_status failure;      /* a failure compute_call already described */
    long long window_evictions;
    long long compactions;         /* arena compactions, and the bytes they moved */
    double compaction_bytes;
    double compaction_seconds;     /* the time those moves took, finding them included */
};

/* Budgeted execution (budget.c). */
int rt_budget_active(const struct dtrx_session *s);
enum dtrx_status rt_budget_begin(struct dtrx_session *s);
void rt_budget_end(struct dtrx_session *s);
void rt_budget_free(struct dtrx_session *s);
enum dtrx_status rt_budget_exec(struct dtrx_session *s, struct rt_call *c, struct op_call *call);
enum dtrx_status rt_budget_register(struct dtrx_session *s, struct rt_value *v);
enum dtrx_status rt_budget_constant(struct dtrx_session *s, struct rt_value *v, const void *data);
/* Copies a value to host memory (acquiring it, recomputing if evicted). */
enum dtrx_status rt_budget_read(struct dtrx_session *s, struct rt_value *v, void *dst);
void rt_budget_release(struct dtrx_session *s, struct rt_value *v);
enum dtrx_status rt_budget_mutate(struct dtrx_session *s, struct rt_value *v);
enum dtrx_status rt_budget_pin(struct dtrx_session *s, struct rt_value *v);
void *rt_budget_scratch_alloc(struct dtrx_session *s, size_t bytes);
void rt_budget_scratch_free(struct dtrx_session *s, void *ptr);
/* Where the arena's bytes are, in one snapshot (budget_account.c): the parts
 * add up to in_use; budget - in_use is free. For the messages of infeasible
 * budgets, so that their numbers agree. */
struct rt_budget_account {
    size_t budget, in_use, largest_hole;
    size_t weights, state, inputs, targets;   /* persistent: never evicted */
    size_t pinned_step;            /* pinned for the step: final gradients, step constants */
    size_t frozen;                 /* frozen by an update inside the backward pass */
    size_t locked;                 /* inputs and outputs of the calls in progress */
    size_t evictable;
    size_t other;                  /* kernel workspace, scratch copies */
};
void rt_budget_account(const struct dtrx_session *s, struct rt_budget_account *a);
/* What no eviction can free: persistent + pinned for the step + frozen. */
size_t rt_budget_account_fixed(const struct rt_budget_account *a);
/* "the arena of B bytes held P bytes that are never evicted (weights W, ...), ..., F free (the largest hole H)" */
void rt_budget_account_text(const struct rt_budget_account *a, char *buf, size_t n);
/* 1 when the value holds data now or can be recomputed. */
int rt_value_live(const struct dtrx_session *s, const struct rt_value *v);

#endif
