/* runtime/budget.c — execution under a memory budget: the bridge between
 * the interpreter and the DTR core.
 *
 * The arena is one block of exactly the budget. Persistent tensors (weights,
 * inputs, optimizer state, targets) are ordinary arena blocks the runtime
 * owns; every run or training step gets a fresh DTR instance in which they
 * are registered as constants (their blocks adopted, never evicted). Every
 * operator call of the step goes through dtr_call: the core makes the
 * inputs resident (recomputing evicted ones through compute_call below,
 * which is the same closure execution as the first time), asks alloc_storage
 * for each output and evicts by score while it does not fit. When enough
 * bytes are free but no hole is large enough, alloc_storage evicts the
 * cheapest contiguous window of evictable blocks instead (fragmentation is
 * DTR's problem). At the end of the step the instance and every buffer it
 * allocated are freed, so metadata does not grow across steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/budget.h"
#include "runtime/call.h"
#include "runtime/clock.h"
#include "runtime/device.h"
#include "runtime/memory.h"
#include "runtime/session.h"
#include "runtime/exec.h"
#include "runtime/status.h"
#include "runtime/verify.h"

#define BUDGET_MAX_WINDOW 4096

static int grow_slots(struct rt_budget *b, dtr_storage s)
{
    if (s < b->capacity)
        return 0;
    uint32_t cap = b->capacity ? b->capacity : 1024;
    while (cap <= s)
        cap *= 2;
    void **ptr = realloc(b->ptr, sizeof *ptr * cap);
    if (ptr)
        b->ptr = ptr;
    void **scratch = ptr ? realloc(b->scratch, sizeof *scratch * cap) : NULL;
    if (scratch)
        b->scratch = scratch;
    uint8_t *owned = scratch ? realloc(b->owned, cap) : NULL;
    if (owned)
        b->owned = owned;
    if (!owned)
        return -1;
    memset(b->ptr + b->capacity, 0, sizeof *b->ptr * (cap - b->capacity));
    memset(b->scratch + b->capacity, 0, sizeof *b->scratch * (cap - b->capacity));
    memset(b->owned + b->capacity, 0, cap - b->capacity);
    b->capacity = cap;
    return 0;
}

static double window_score(void *ctx, void *owner)
{
    struct dtrx_session *s = ctx;
    if (!owner)
        return -1;   /* persistent tensors and kernel scratch */
    dtr_storage st = (dtr_storage)((uintptr_t)owner - 1);
    double score;
    if (!dtr_storage_is_evictable(s->budget.dtr, st) || dtr_storage_score(s->budget.dtr, st, &score))
        return -1;
    return score;
}

static int window_evictable(void *ctx, void *owner)
{
    struct dtrx_session *s = ctx;
    return dtr_storage_is_evictable(s->budget.dtr, (dtr_storage)((uintptr_t)owner - 1));
}

/* The cheapest contiguous window that makes `bytes` fit, its owners in
 * s->budget.window: their count, or -1 when no window exists. *compute is
 * what evicting them costs by the heuristic's own estimate: each one's
 * recomputation plus the evicted neighbourhood its score counts (e*), since
 * a block evicted beside evicted neighbours brings them back with it. */
static long find_window(struct dtrx_session *s, size_t bytes, double *compute)
{
    void **owners = s->budget.window;
    if (!owners && !(owners = s->budget.window = malloc(sizeof *owners * BUDGET_MAX_WINDOW)))
        return -1;
    size_t n = 0;
    if (arena_find_window(&s->arena, bytes, window_score, window_evictable, s, owners, BUDGET_MAX_WINDOW, &n))
        return -1;
    *compute = 0;
    for (size_t i = 0; i < n; i++) {
        double c = 0;
        if (dtr_storage_eviction_cost(s->budget.dtr, (dtr_storage)((uintptr_t)owners[i] - 1), &c))
            return -1;
        *compute += c;
    }
    return (long)n;
}

static int evict_window(struct dtrx_session *s, long n)
{
    void **owners = s->budget.window;
    for (long i = 0; i < n; i++) {
        dtr_storage st = (dtr_storage)((uintptr_t)owners[i] - 1);
        if (dtr_storage_evict(s->budget.dtr, st))
            return -1;
        s->budget.window_evictions++;
    }
    return 0;
}

static int block_movable(void *ctx, void *owner, void *ptr)
{
    struct dtrx_session *s = ctx;
    if (!owner)
        return 0;   /* persistent tensors and kernel workspaces stay */
    /* Nor do the buffers of the kernel that is running. */
    if (s->budget.busy_call) {
        const struct rt_call *c = s->budget.busy_call;
        for (int i = 0; i < c->n_in; i++)
            if (c->in[i] >= 0 && s->values[c->in[i]]->t.data == ptr)
                return 0;
        for (int i = 0; i < c->n_out; i++)
            if (c->out[i] >= 0 && s->values[c->out[i]]->t.data == ptr)
                return 0;
    }
    dtr_storage st = (dtr_storage)((uintptr_t)owner - 1);
    return st < s->budget.capacity && s->budget.owned[st] && s->budget.ptr[st] == ptr;
}

static void block_moved(void *ctx, void *owner, void *old_ptr, void *new_ptr)
{
    struct dtrx_session *s = ctx;
    s->budget.ptr[(uintptr_t)owner - 1] = new_ptr;
    s->budget.compaction_bytes += arena_size_of(&s->arena, new_ptr);
}

/* Moving blocks costs reading and writing each byte once, in the cost
 * model's units. */
static double move_cost(size_t bytes)
{
    return bytes == SIZE_MAX ? INFINITY : 2.0 * RT_COST_FLOPS_PER_BYTE * (double)bytes;
}

static int make_hole_by_moving(struct dtrx_session *s, size_t bytes, int relocate)
{
    double t0 = rt_now_seconds();
    int rc = relocate ? arena_relocate(&s->arena, bytes, block_movable, block_moved, s)
                      : arena_compact(&s->arena, bytes, block_movable, block_moved, s);
    if (!rc)
        s->budget.compactions++;
    s->budget.compaction_seconds += rt_now_seconds() - t0;
    return rc;
}

/* Activations go low, workspaces and constants high (see arena.h). When
 * enough bytes are free but no hole fits, three ways make one: evict the
 * cheapest window of neighbours (Coop's sliding window), move the used
 * blocks of the cheapest window into holes elsewhere (relocation), or
 * slide the blocks of the cheapest span together (any block but persistent
 * ones, workspaces and the buffers of the kernel that is running). The
 * cheapest in the cost model is taken: the window's recomputation with its
 * evicted neighbourhood against reading and writing every byte moved. The
 * others are fallbacks. */
static void *budget_arena_alloc(struct dtrx_session *s, size_t bytes, void *owner, int high)
{
    void *(*alloc)(struct arena *, size_t, void *) = high ? arena_alloc_high : arena_alloc;
    void *p = alloc(&s->arena, bytes, owner);
    if (p || s->arena.budget_bytes - s->arena.in_use_bytes < arena_rounded(bytes))
        return p;
    double window_compute = INFINITY;
    long n = find_window(s, bytes, &window_compute);
    if (n < 0)
        window_compute = INFINITY;
    /* A static schedule (--plan) plans no recomputation for placement:
     * following one, blocks move whenever they can. */
    if (s->plan)
        window_compute = INFINITY;
    double reloc = move_cost(arena_relocate_cost(&s->arena, bytes, block_movable, s));
    double slide = move_cost(arena_compact_cost(&s->arena, bytes, block_movable, s));
    if ((reloc < window_compute || slide < window_compute) && !make_hole_by_moving(s, bytes, reloc <= slide)) {
        if ((p = alloc(&s->arena, bytes, owner)))
            return p;
        n = find_window(s, bytes, &window_compute);   /* the blocks have moved */
    }
    if (!owner && s->plan && s->budget.busy_call)
        return NULL;   /* a running kernel's workspace, under a schedule: see workspace_alloc */
    if (n >= 0) {
        if (evict_window(s, n))
            return NULL;
        if ((p = alloc(&s->arena, bytes, owner)))
            return p;
    }
    if (!make_hole_by_moving(s, bytes, 0))
        p = alloc(&s->arena, bytes, owner);
    return p;
}

static int alloc_storage(void *ctx, dtr_storage st, uint64_t bytes, unsigned flags)
{
    struct dtrx_session *s = ctx;
    struct rt_budget *b = &s->budget;
    if (grow_slots(b, st))
        return -1;
    if (b->adopt && !(flags & DTR_ALLOC_SCRATCH)) {
        b->ptr[st] = b->adopt;
        b->owned[st] = 0;
        b->adopt = NULL;
        return 0;
    }
    void *p = budget_arena_alloc(s, (size_t)bytes, (void *)((uintptr_t)st + 1), b->constant_pending);
    if (!p) {
        b->failed_bytes = (size_t)bytes;
        b->failed_storage = st;
        return 1;
    }
    if (flags & DTR_ALLOC_SCRATCH) {
        b->scratch[st] = p;
    } else {
        b->ptr[st] = p;
        b->owned[st] = 1;
    }
    return 0;
}

static void free_storage(void *ctx, dtr_storage st, unsigned flags)
{
    struct dtrx_session *s = ctx;
    struct rt_budget *b = &s->budget;
    if (st >= b->capacity)
        return;
    void **slot = flags & DTR_ALLOC_SCRATCH ? &b->scratch[st] : &b->ptr[st];
    if (*slot && (flags & DTR_ALLOC_SCRATCH || b->owned[st]))
        arena_free(&s->arena, *slot);
    *slot = NULL;
}

static void adopt_storage(void *ctx, dtr_storage st)
{
    struct dtrx_session *s = ctx;
    struct rt_budget *b = &s->budget;
    b->ptr[st] = b->scratch[st];
    b->owned[st] = 1;
    b->scratch[st] = NULL;
}

static void *tensor_data(const struct dtrx_session *s, dtr_tensor t, int output)
{
    const struct rt_budget *b = &s->budget;
    dtr_storage st = dtr_tensor_storage(b->dtr, t);
    if (st >= b->capacity)
        return NULL;
    return output && b->scratch[st] ? b->scratch[st] : b->ptr[st];
}

static void *workspace_alloc(struct dtrx_session *s, size_t bytes);

static int reserve_workspace(struct dtrx_session *s, size_t bytes)
{
    struct rt_budget *b = &s->budget;
    if (b->reserve)
        arena_free(&s->arena, b->reserve);
    b->reserve = bytes ? workspace_alloc(s, bytes) : NULL;
    b->reserve_bytes = b->reserve ? bytes : 0;
    b->reserve_used = 0;
    return b->reserve ? 0 : -1;
}

static void release_workspace(struct dtrx_session *s)
{
    struct rt_budget *b = &s->budget;
    if (b->reserve)
        arena_free(&s->arena, b->reserve);
    b->reserve = NULL;
    b->reserve_bytes = b->reserve_used = 0;
}

/* The closure execution for DTR: the first run and every recomputation. */
static int compute_call(void *ctx, dtr_op op, void *closure, int rematerialize)
{
    struct dtrx_session *s = ctx;
    struct rt_call *c = closure;
    if (!c)
        return 0;   /* a constant: the runtime fills it */
    double t0 = rt_kernel_timer_begin(s);
    if (!rematerialize && c == s->budget.pending_call) {
        /* The first execution: the core has named the outputs already. */
        for (int i = 0, k = 0; i < c->n_out; i++)
            if (c->out[i] >= 0) {
                s->values[c->out[i]]->mem.dt = s->budget.pending_outs[k++];
                s->values[c->out[i]]->mem.dtr_held = 1;
            }
    }
    if (rematerialize && c->def->alias)
        s->stats.view_remats++;
    s->env.recomputing = rematerialize;
    enum dtrx_status st = DTRX_OK;
    /* A kernel that cannot get its workspace while its buffers are in use
     * (they split the free space) is run again with the workspace it asked
     * for reserved first, while its buffers may still move. Kernels take
     * their workspace before any side effect, so the retry is exact. */
    for (int attempt = 0; attempt < 3; attempt++) {
        for (int i = 0; i < c->n_in; i++)
            if (c->in[i] >= 0)
                s->values[c->in[i]]->t.data = tensor_data(s, s->values[c->in[i]]->mem.dt, 0);
        for (int i = 0; i < c->n_out; i++)
            if (c->out[i] >= 0)
                s->values[c->out[i]]->t.data = tensor_data(s, s->values[c->out[i]]->mem.dt, 1);
        s->budget.scratch_failed_bytes = 0;
        s->budget.scratch_requested = 0;
        s->budget.busy_call = c;
        st = rt_call_kernel(s, c);
        s->budget.busy_call = NULL;
        if (!st || !s->budget.scratch_failed_bytes)
            break;
        if (reserve_workspace(s, s->budget.scratch_requested))
            break;
    }
    release_workspace(s);
    s->env.recomputing = 0;
    if (!rematerialize && !st)
        c->measured_seconds = rt_kernel_timer_end(s, t0);
    if (!st) {
        /* the call hooks that watch every execution (--verify-remat) */
        st = rt_call_computed(s, c, rematerialize);
        if (st)
            s->budget.failure = st;
    }
    if (st && s->budget.scratch_failed_bytes) {
        struct rt_budget_account a;
        char held[1024];
        rt_budget_account(s, &a);
        rt_budget_account_text(&a, held, sizeof held);
        rt_fail(DTRX_ERR_BUDGET,
                "budget of %zu bytes is infeasible: node '%s' (%s) needs %zu bytes of kernel workspace beside its "
                "inputs and outputs, and nothing else can be evicted: %s",
                s->arena.budget_bytes, c->name, c->def->name, s->budget.scratch_failed_bytes, held);
        s->budget.failure = DTRX_ERR_BUDGET;
    }
    if (rematerialize)
        s->budget.remat_seconds += rt_now_seconds() - t0;
    s->budget.kernel_seconds += rt_now_seconds() - t0;
    return st ? -1 : 0;
}

int rt_budget_active(const struct dtrx_session *s) { return s->budget.dtr != NULL; }

/* Registers a persistent value's block as a constant of the instance. */
static enum dtrx_status register_constant(struct dtrx_session *s, struct rt_value *v)
{
    struct rt_budget *b = &s->budget;
    b->adopt = v->mem.storage->data;
    enum dtr_status st = dtr_constant_add(b->dtr, arena_size_of(&s->arena, v->mem.storage->data), NULL, &v->mem.dt);
    b->adopt = NULL;
    if (st)
        return rt_fail(DTRX_ERR_INTERNAL, "dtr: %s", dtr_error(b->dtr));
    return rt_verify_constant(s, v);
}

enum dtrx_status rt_budget_register(struct dtrx_session *s, struct rt_value *v)
{
    if (!rt_budget_active(s) || !v->mem.storage)
        return DTRX_OK;
    return register_constant(s, v);
}

enum dtrx_status rt_budget_begin(struct dtrx_session *s)
{
    struct rt_budget *b = &s->budget;
    if (!s->arena.budget_bytes)
        return DTRX_OK;
    rt_budget_end(s);
    struct dtr_memory_ops mem = { .ctx = s, .alloc = alloc_storage, .free = free_storage, .adopt = adopt_storage };
    struct dtr_compute_ops comp = { .ctx = s, .compute = compute_call };
    b->dtr = dtr_create(&b->config, &mem, &comp);
    if (!b->dtr)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory starting DTR");
    s->memory = &rt_memory_dtr;
    rt_verify_begin(s);
    for (int i = 0; i < s->n_values; i++) {
        struct rt_value *v = s->values[i];
        v->mem.dt = DTR_NONE;
        if (v->mem.storage) {
            enum dtrx_status st = register_constant(s, v);
            if (st)
                return st;
        }
    }
    return DTRX_OK;
}

void rt_budget_end(struct dtrx_session *s)
{
    struct rt_budget *b = &s->budget;
    if (!b->dtr)
        return;
    struct dtr_stats ds;
    dtr_stats_get(b->dtr, &ds);
    s->stats.evictions += (long long)ds.evictions;
    s->stats.remats += (long long)ds.remats;
    s->stats.remat_compute += ds.remat_compute;
    for (uint32_t st = 0; st < b->capacity; st++) {
        if (b->scratch[st])
            arena_free(&s->arena, b->scratch[st]);
        if (b->ptr[st] && b->owned[st])
            arena_free(&s->arena, b->ptr[st]);
        b->ptr[st] = b->scratch[st] = NULL;
        b->owned[st] = 0;
    }
    rt_verify_end(s);
    dtr_destroy(b->dtr);
    b->dtr = NULL;
    s->memory = &rt_memory_plain;
    for (int i = 0; i < s->n_values; i++) {
        struct rt_value *v = s->values[i];
        v->mem.dt = DTR_NONE;
        v->mem.dtr_held = 0;
        if (!v->mem.storage)
            v->t.data = NULL;
    }
}

void rt_budget_free(struct dtrx_session *s)
{
    rt_budget_end(s);
    free(s->budget.ptr);
    free(s->budget.scratch);
    free(s->budget.owned);
    rt_verify_free(s);
    free(s->budget.window);
    s->budget.ptr = s->budget.scratch = s->budget.window = NULL;
    s->budget.owned = NULL;
    s->budget.capacity = 0;
}

static enum dtrx_status dtr_failure(struct dtrx_session *s, const struct rt_call *c, enum dtr_status st)
{
    const char *msg = dtr_error(s->budget.dtr);
    struct rt_budget_account a;
    char held[1024];
    if (st == DTR_ERR_OOM) {
        rt_budget_account(s, &a);
        rt_budget_account_text(&a, held, sizeof held);
    }
    if (st == DTR_ERR_OOM && !c)
        return rt_fail(DTRX_ERR_BUDGET, "budget of %zu bytes is infeasible: nothing is left to evict: %s",
                       s->arena.budget_bytes, held);
    if (st == DTR_ERR_OOM) {
        /* Its inputs and outputs beside what no eviction frees, each
         * storage once (inputs already pinned or frozen are in `fixed`). */
        size_t need = 0, inputs = 0;
        for (int i = 0; i < c->n_out; i++)
            if (c->out[i] >= 0)
                need += arena_rounded(tensor_size_bytes(&s->values[c->out[i]]->t));
        for (int i = 0; i < c->n_in; i++) {
            const struct rt_value *v = s->values[c->in[i] >= 0 ? c->in[i] : 0];
            if (c->in[i] < 0 || v->mem.storage || v->mem.dt == DTR_NONE)
                continue;
            dtr_storage sto = dtr_tensor_storage(s->budget.dtr, v->mem.dt);
            struct dtr_storage_info in;
            int dup = 0;
            for (int k = 0; k < i && !dup; k++)
                dup = c->in[k] >= 0 && !s->values[c->in[k]]->mem.storage && s->values[c->in[k]]->mem.dt != DTR_NONE &&
                      dtr_tensor_storage(s->budget.dtr, s->values[c->in[k]]->mem.dt) == sto;
            if (!dup && !dtr_storage_info(s->budget.dtr, sto, &in) && !in.pinned && !in.frozen)
                inputs += (size_t)in.bytes;
        }
        size_t fixed = rt_budget_account_fixed(&a);
        /* The allocation that failed: one of its outputs, or an evicted
         * input (or its parent) being recomputed for it. */
        int own = 0;
        for (int i = 0, k = 0; i < c->n_out && s->budget.pending_call == c; i++)
            if (c->out[i] >= 0)
                own |= dtr_tensor_storage(s->budget.dtr, s->budget.pending_outs[k++]) == s->budget.failed_storage;
        char what[160];
        snprintf(what, sizeof what, own ? "its outputs (%zu bytes did not fit)" :
                 "an evicted input it reads, recomputed first (%zu bytes did not fit)", s->budget.failed_bytes);
        return rt_fail(DTRX_ERR_BUDGET,
                       "budget of %zu bytes is infeasible: node '%s' (%s) needs memory for %s and nothing else can "
                       "be evicted: %s; this call alone needs a budget of at least %zu bytes (the %zu that no "
                       "eviction frees, its inputs %zu and its outputs %zu), more with fragmentation and kernel "
                       "workspace",
                       s->arena.budget_bytes, c->name, c->def->name, what, held, fixed + inputs + need, fixed,
                       inputs, need);
    }
    if (st == DTR_ERR_COMPUTE && s->budget.failure) {
        enum dtrx_status f = s->budget.failure;
        s->budget.failure = DTRX_OK;
        return f;   /* the message is already recorded */
    }
    if (s->op_err[0] && st == DTR_ERR_COMPUTE)
        return rt_fail(DTRX_ERR_INPUT, "%s", s->op_err);
    return rt_fail(DTRX_ERR_INTERNAL, "%s%s%s: %s", c ? "node '" : "", c ? c->name : "", c ? "'" : "dtr", msg);
}

/* Makes a value resident and locked, its data pointer valid. */
static enum dtrx_status acquire(struct dtrx_session *s, struct rt_value *v, const struct rt_call *c)
{
    enum dtr_status st = dtr_tensor_acquire(s->budget.dtr, v->mem.dt);
    if (st)
        return dtr_failure(s, c, st);
    v->t.data = tensor_data(s, v->mem.dt, 0);
    return DTRX_OK;
}

enum dtrx_status rt_budget_exec(struct dtrx_session *s, struct rt_call *c, struct op_call *call)
{
    struct rt_budget *b = &s->budget;
    double t0 = rt_now_seconds(), kernel0 = b->kernel_seconds;
    enum dtrx_status st = DTRX_OK;
    uint32_t locked = 0;   /* inputs acquired here, by bit */
    int mutating = c->n_out == 0;
    for (int i = 0; i < c->n_in && i < 32 && !st; i++)
        if (c->in[i] >= 0 && (mutating || (c->def->host_inputs >> i & 1))) {
            st = acquire(s, s->values[c->in[i]], c);
            locked |= st ? 0 : 1u << i;
        }
    /* An acquisition may have recomputed, and so moved, an earlier one. */
    for (int i = 0; i < c->n_in && i < 32; i++)
        if (locked >> i & 1)
            s->values[c->in[i]]->t.data = tensor_data(s, s->values[c->in[i]]->mem.dt, 0);
    if (!st && c->def->infer && rt_call_infer(s, call))
        st = rt_fail(DTRX_ERR_INPUT, "%s", s->op_err[0] ? s->op_err : "shape inference failed");
    if (!st)
        rt_call_in_place_check(c, call);
    if (!st && mutating) {
        /* In-place updates (optimizer steps) run after the backward pass and
         * are never recomputed: they run directly on acquired inputs. */
        double k0 = rt_now_seconds();
        b->busy_call = c;
        st = rt_call_kernel(s, c);
        b->busy_call = NULL;
        b->kernel_seconds += rt_now_seconds() - k0;
    } else if (!st) {
        dtr_tensor ins_inline[64], outs_inline[64];
        uint64_t bytes_inline[64];
        int32_t alias_inline[64];
        int big = c->n_in > 64 || c->n_out > 64;   /* a Concat or Split over many steps */
        dtr_tensor *ins = big ? malloc(sizeof *ins * (size_t)(c->n_in + 1)) : ins_inline;
        dtr_tensor *outs = big ? malloc(sizeof *outs * (size_t)(c->n_out + 1)) : outs_inline;
        uint64_t *bytes = big ? malloc(sizeof *bytes * (size_t)(c->n_out + 1)) : bytes_inline;
        int32_t *alias = big ? malloc(sizeof *alias * (size_t)(c->n_out + 1)) : alias_inline;
        uint32_t n_in = 0, n_out = 0;
        int alias_input = -1;
        if (!ins || !outs || !bytes || !alias)
            st = rt_fail(DTRX_ERR_BUDGET, "out of host memory calling node '%s'", c->name);
        for (int i = 0; i < c->n_in && !st; i++)
            if (c->in[i] >= 0) {
                if (i == 0)
                    alias_input = (int)n_in;
                ins[n_in++] = s->values[c->in[i]]->mem.dt;
            }
        for (int i = 0; i < c->n_out && !st; i++)
            if (c->out[i] >= 0) {
                bytes[n_out] = arena_rounded(tensor_size_bytes(call->out[i]));
                alias[n_out] = (c->def->alias || c->in_place) && i == 0 ? alias_input : -1;
                n_out++;
            }
        if (!st && !n_out)
            st = rt_fail(DTRX_ERR_INPUT, "node '%s': every output is omitted", c->name);
        if (!st) {
            c->cost_flops = rt_call_cost(c, call);
            /* Measured costs are nanoseconds of the call's previous first
             * execution (the model's calls, a step earlier); calls without
             * one (the first step, and backward calls, which are emitted
             * anew each step) use FLOPs at an assumed 10 GFLOP/s. */
            double cost = c->cost_flops;
            if (b->measured_costs)
                cost = c->measured_seconds > 0 ? 1e9 * c->measured_seconds : c->cost_flops / 10.0;
            struct dtr_call_desc desc = { .inputs = ins, .n_inputs = n_in, .output_bytes = bytes,
                                          .output_alias = alias, .n_outputs = n_out,
                                          .cost = cost, .closure = c };
            b->pending_call = c;
            b->pending_outs = outs;
            enum dtr_status ds = dtr_call(b->dtr, &desc, outs, NULL);
            if (ds)
                st = dtr_failure(s, c, ds);   /* reads pending_call: was it one of c's outputs that failed */
            b->pending_call = NULL;
        }
        if (big) {
            free(ins);
            free(outs);
            free(bytes);
            free(alias);
        }
    }
    for (int i = 0; i < c->n_in && i < 32; i++)
        if (locked >> i & 1)
            dtr_tensor_unacquire(b->dtr, s->values[c->in[i]]->mem.dt);
    double total = rt_now_seconds() - t0;
    s->stats.dtr_overhead_seconds += total - (b->kernel_seconds - kernel0);
    return st;
}

enum dtrx_status rt_budget_read(struct dtrx_session *s, struct rt_value *v, void *dst)
{
    size_t bytes = tensor_size_bytes(&v->t);
    if (v->mem.storage || !rt_budget_active(s) || v->mem.dt == DTR_NONE) {
        if (!v->t.data)
            return rt_fail(DTRX_ERR_INPUT, "'%s' has no value", v->name);
        return rt_to_host(s, dst, v->t.data, bytes);
    }
    enum dtr_status st = dtr_tensor_acquire(s->budget.dtr, v->mem.dt);
    if (st)
        return dtr_failure(s, NULL, st);
    enum dtrx_status copied = rt_to_host(s, dst, tensor_data(s, v->mem.dt, 0), bytes);
    dtr_tensor_unacquire(s->budget.dtr, v->mem.dt);
    return copied;
}

/* Makes a value resident for good (until the instance ends). */
enum dtrx_status rt_budget_pin(struct dtrx_session *s, struct rt_value *v)
{
    if (!rt_budget_active(s) || v->mem.dt == DTR_NONE || v->mem.storage)
        return DTRX_OK;
    enum dtr_status st = dtr_tensor_pin(s->budget.dtr, v->mem.dt);
    return st ? dtr_failure(s, NULL, st) : DTRX_OK;
}

/* Before v is updated in place: what the step holds that was computed from
 * it is recomputed now if evicted, and frozen (never evicted again). */
enum dtrx_status rt_budget_mutate(struct dtrx_session *s, struct rt_value *v)
{
    if (!rt_budget_active(s) || v->mem.dt == DTR_NONE)
        return DTRX_OK;
    enum dtr_status st = dtr_tensor_mutate(s->budget.dtr, v->mem.dt);
    if (st == DTR_ERR_OOM) {
        struct rt_budget_account a;
        char held[1024];
        rt_budget_account(s, &a);
        rt_budget_account_text(&a, held, sizeof held);
        return rt_fail(DTRX_ERR_BUDGET,
                       "budget of %zu bytes is infeasible: updating '%s' inside the backward pass needs every value "
                       "computed from it that the step still holds resident at once, and they do not fit: %s",
                       s->arena.budget_bytes, v->name, held);
    }
    return st ? dtr_failure(s, NULL, st) : DTRX_OK;
}

/* Only frozen storages, which nothing recomputes, are overwritten: an
 * evictable one could be recomputed for a reader of the old contents. */
static int budget_overwritable(const struct dtrx_session *s, const struct rt_value *v)
{
    struct dtr_storage_info in;
    if (v->mem.storage || v->mem.dt == DTR_NONE ||
        dtr_storage_info(s->budget.dtr, dtr_tensor_storage(s->budget.dtr, v->mem.dt), &in))
        return 0;
    return in.resident && in.frozen && !in.shared && in.refs == 1;
}

static int budget_reusable(const struct dtrx_session *s, const struct rt_value *v)
{
    struct dtr_storage_info in;
    if (v->mem.storage || v->mem.dt == DTR_NONE ||
        dtr_storage_info(s->budget.dtr, dtr_tensor_storage(s->budget.dtr, v->mem.dt), &in))
        return 0;
    return !in.pinned && !in.shared && in.refs == 1;
}

void rt_budget_release(struct dtrx_session *s, struct rt_value *v)
{
    if (!rt_budget_active(s) || v->mem.dt == DTR_NONE || v->mem.storage || !v->mem.dtr_held)
        return;
    v->mem.dtr_held = 0;
    dtr_tensor_release(s->budget.dtr, v->mem.dt);
}

/* A step-local constant (axes of a reduction, the loss seed): a pinned
 * constant of the instance, freed with it. */
enum dtrx_status rt_budget_constant(struct dtrx_session *s, struct rt_value *v, const void *data)
{
    size_t bytes = tensor_size_bytes(&v->t);
    s->budget.constant_pending = 1;
    enum dtr_status st = dtr_constant_add(s->budget.dtr, arena_rounded(bytes), NULL, &v->mem.dt);
    s->budget.constant_pending = 0;
    if (st)
        return rt_fail(st == DTR_ERR_OOM ? DTRX_ERR_BUDGET : DTRX_ERR_INTERNAL, "constant '%s': %s", v->name,
                       dtr_error(s->budget.dtr));
    v->t.data = tensor_data(s, v->mem.dt, 0);
    return rt_to_device(s, v->t.data, data, bytes);
}

/* Workspace under a budget: when it does not fit, evict (a window first,
 * then the lowest-scored storages) until it does. The running call's inputs
 * are locked and its outputs not yet evictable, so it cannot lose them. */
static void *workspace_alloc(struct dtrx_session *s, size_t bytes)
{
    void *p = budget_arena_alloc(s, bytes, NULL, 1);
    if (!p && s->plan && s->budget.busy_call) {
        /* Following a schedule (--plan), evicting would recompute what it
         * keeps: the kernel runs again with its workspace reserved first,
         * while its own buffers can move (compute_call). */
        s->budget.scratch_failed_bytes = bytes;
        return NULL;
    }
    while (!p && rt_budget_active(s)) {
        struct dtr_stats ds;
        dtr_stats_get(s->budget.dtr, &ds);
        dtr_storage victim = DTR_NONE;
        double best = INFINITY, score;
        for (dtr_storage st = 0; st < ds.storages; st++)
            if (dtr_storage_is_evictable(s->budget.dtr, st) && !dtr_storage_score(s->budget.dtr, st, &score) &&
                score < best) {
                best = score;
                victim = st;
            }
        if (victim == DTR_NONE || dtr_storage_evict(s->budget.dtr, victim)) {
            s->budget.scratch_failed_bytes = bytes;
            return NULL;
        }
        p = budget_arena_alloc(s, bytes, NULL, 1);
    }
    return p;
}

void *rt_budget_scratch_alloc(struct dtrx_session *s, size_t bytes)
{
    struct rt_budget *b = &s->budget;
    size_t need = arena_rounded(bytes);
    b->scratch_requested += need;
    if (b->reserve && b->reserve_used + need <= b->reserve_bytes) {
        void *p = (char *)b->reserve + b->reserve_used;
        b->reserve_used += need;
        return p;
    }
    return workspace_alloc(s, bytes);
}

void rt_budget_scratch_free(struct dtrx_session *s, void *ptr)
{
    struct rt_budget *b = &s->budget;
    if (b->reserve && (char *)ptr >= (char *)b->reserve && (char *)ptr < (char *)b->reserve + b->reserve_bytes)
        return;   /* part of the reservation, released with it */
    arena_free(&s->arena, ptr);
}

int rt_value_live(const struct dtrx_session *s, const struct rt_value *v)
{
    return v->mem.storage || (rt_budget_active(s) && v->mem.dt != DTR_NONE);
}

const struct rt_memory rt_memory_dtr = {
    .name = "dtr",
    .evicts = 1,
    .exec = rt_budget_exec,
    .persistent_alloc = rt_budget_scratch_alloc,
    .persistent_add = rt_budget_register,
    .constant = rt_budget_constant,
    .read = rt_budget_read,
    .pin = rt_budget_pin,
    .mutate = rt_budget_mutate,
    .overwritable = budget_overwritable,
    .reusable = budget_reusable,
    .release = rt_budget_release,
    .live = rt_value_live,
};
