/* dtr/dtr.c — the DTR core: the graph of calls, tensors and storages, the
 * pool of evictable storages, eviction, deallocation policies, and
 * rematerialization with an explicit stack.
 *
 * The order of events mirrors the DTR authors' simulator (simrd,
 * RuntimeV2EagerOptimized / RuntimeV1) closely, because runs are validated
 * against its published numbers and DTR's decisions are chaotic at tight
 * budgets: parents' last access is stamped before they are made resident,
 * parents are locked (resident ones first, then each missing one right after
 * it is recomputed), the outputs are allocated (evicting as needed), the call
 * runs, newly resident storages join the pool (siblings first), the parents
 * are unlocked (rejoining the pool at its end), and only a top-level call
 * stamps its outputs' last access. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/dtr-impl.h"

static const char *const heuristic_names[DTR_HEURISTIC_COUNT] = {
    "dtr", "dtr-eq", "dtr-local", "lru", "size", "msps", "random",
};
static const char *const dealloc_names[DTR_DEALLOC_COUNT] = { "eager", "banish", "ignore" };

const char *dtr_heuristic_name(enum dtr_heuristic h)
{
    return (unsigned)h < DTR_HEURISTIC_COUNT ? heuristic_names[h] : "?";
}

int dtr_heuristic_parse(const char *name, enum dtr_heuristic *out)
{
    for (int i = 0; i < DTR_HEURISTIC_COUNT; i++)
        if (!strcmp(name, heuristic_names[i])) {
            *out = (enum dtr_heuristic)i;
            return 0;
        }
    return -1;
}

const char *dtr_dealloc_name(enum dtr_dealloc p)
{
    return (unsigned)p < DTR_DEALLOC_COUNT ? dealloc_names[p] : "?";
}

int dtr_dealloc_parse(const char *name, enum dtr_dealloc *out)
{
    for (int i = 0; i < DTR_DEALLOC_COUNT; i++)
        if (!strcmp(name, dealloc_names[i])) {
            *out = (enum dtr_dealloc)i;
            return 0;
        }
    return -1;
}

const char *dtr_status_name(enum dtr_status s)
{
    switch (s) {
    case DTR_OK: return "ok";
    case DTR_ERR_OOM: return "out of memory";
    case DTR_ERR_REMAT_LIMIT: return "rematerialization limit exceeded";
    case DTR_ERR_INVALID: return "invalid argument";
    case DTR_ERR_COMPUTE: return "compute error";
    case DTR_ERR_NOMEM: return "host out of memory";
    }
    return "?";
}

void dtr_config_default(struct dtr_config *c)
{
    memset(c, 0, sizeof *c);
    c->heuristic = DTR_HEURISTIC_DTR;
    c->dealloc = DTR_DEALLOC_EAGER;
    c->remat_limit = -1;
    c->seed = 1;
}

int dtr_grow(void **p, uint32_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    if (need >= UINT32_MAX)
        return -1;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    if (n >= UINT32_MAX)
        n = UINT32_MAX - 1;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = (uint32_t)n;
    return 0;
}

void dtr_set_error(struct dtr *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
}

/* A failure that leaves the instance spent (locks may still be held). */
static enum dtr_status fail(struct dtr *d, enum dtr_status s)
{
    d->failed = s;
    return s;
}

static enum dtr_status nomem(struct dtr *d)
{
    dtr_set_error(d, "dtr: host out of memory for metadata");
    return fail(d, DTR_ERR_NOMEM);
}

struct dtr *dtr_create(const struct dtr_config *config, const struct dtr_memory_ops *memory,
                       const struct dtr_compute_ops *compute)
{
    struct dtr_config def;
    if (!config) {
        dtr_config_default(&def);
        config = &def;
    }
    if ((unsigned)config->heuristic >= DTR_HEURISTIC_COUNT || (unsigned)config->dealloc >= DTR_DEALLOC_COUNT)
        return NULL;
    struct dtr *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->cfg = *config;
    if (memory)
        d->mem = *memory;
    if (compute)
        d->comp = *compute;
    d->pool_head = d->pool_tail = DTR_NONE;
    d->costs_exact = 1;
    d->rng = config->seed ? config->seed : 0x9E3779B97F4A7C15ULL;
    return d;
}

void dtr_destroy(struct dtr *d)
{
    if (!d)
        return;
    for (uint32_t i = 0; i < d->n_storages; i++) {
        free(d->storages[i].adj[0]);
        free(d->storages[i].adj[1]);
    }
    free(d->tensors);
    free(d->storages);
    free(d->state);
    free(d->in_pool);
    free(d->mark);
    free(d->ops);
    free(d->op_inputs);
    free(d->uses);
    free(d->uf);
    free(d->uf_stamp);
    free(d->changed);
    free(d->reach);
    free(d->stale[0]);
    free(d->stale[1]);
    free(d->keys);
    free(d->cand);
    free(d->cand_score);
    free(d->stale_list);
    free(d->frames);
    free(d->args);
    free(d->work);
    free(d);
}

const char *dtr_error(const struct dtr *d)
{
    return d->err;
}

void dtr_stats_get(const struct dtr *d, struct dtr_stats *out)
{
    *out = d->st;
    out->clock = d->clock;
    out->tensors = d->n_tensors;
    out->storages = d->n_storages;
    out->ops = d->n_ops;
}

/* ---- the pool of evictable storages: resident, unlocked, unpinned ---- */

static void pool_append(struct dtr *d, uint32_t s)
{
    struct storage_rec *r = &d->storages[s];
    if (d->in_pool[s])
        return;
    d->in_pool[s] = 1;
    r->pool_next = DTR_NONE;
    r->pool_prev = d->pool_tail;
    if (d->pool_tail != DTR_NONE)
        d->storages[d->pool_tail].pool_next = s;
    else
        d->pool_head = s;
    d->pool_tail = s;
    d->pool_count++;
}

static void pool_remove(struct dtr *d, uint32_t s)
{
    struct storage_rec *r = &d->storages[s];
    if (!d->in_pool[s])
        return;
    if (r->pool_prev != DTR_NONE)
        d->storages[r->pool_prev].pool_next = r->pool_next;
    else
        d->pool_head = r->pool_next;
    if (r->pool_next != DTR_NONE)
        d->storages[r->pool_next].pool_prev = r->pool_prev;
    else
        d->pool_tail = r->pool_prev;
    d->in_pool[s] = 0;
    d->pool_count--;
}

static void lock(struct dtr *d, uint32_t s)
{
    struct storage_rec *r = &d->storages[s];
    if (r->ref_int++ == 0)
        pool_remove(d, s);
}

static void unlock(struct dtr *d, uint32_t s)
{
    struct storage_rec *r = &d->storages[s];
    if (r->ref_int && --r->ref_int == 0 && d->state[s] == ST_RESIDENT)
        pool_append(d, s);
}

static void pin_storage(struct dtr *d, uint32_t s)
{
    struct storage_rec *r = &d->storages[s];
    if (r->pinned)
        return;
    lock(d, s);
    r = &d->storages[s];
    r->pinned = 1;
    d->st.pinned_bytes += r->bytes;
}

/* Frozen storages hold one lock for good, like pinned ones, but are freed
 * when the program lets go of them (free_frozen). */
static void freeze_storage(struct dtr *d, uint32_t s)
{
    struct storage_rec *r = &d->storages[s];
    if (r->frozen || r->pinned || d->state[s] != ST_RESIDENT)
        return;
    lock(d, s);
    r = &d->storages[s];
    r->frozen = 1;
    d->st.frozen_bytes += r->bytes;
}

/* ---- eviction ---- */

static enum dtr_status evict(struct dtr *d, uint32_t s, int dealloc)
{
    struct storage_rec *r = &d->storages[s];
    pool_remove(d, s);
    d->state[s] = ST_EVICTED;
    d->st.resident_bytes -= r->bytes;
    for (uint32_t t = r->first_tensor; t != DTR_NONE; t = d->tensors[t].next_in_storage)
        d->tensors[t].defined = 0;
    if (dealloc)
        d->st.dealloc_evictions++;
    else
        d->st.evictions++;
    if (d->cfg.heuristic == DTR_HEURISTIC_EQ) {
        if (dtr_eq_on_evict(d, s))
            return nomem(d);
        dtr_eq_changed(d, s);
    }
    if (dtr_region_changed(d, s, 1))
        return nomem(d);
    if (d->mem.free)
        d->mem.free(d->mem.ctx, s, 0);
    return DTR_OK;
}

/* Reserves `bytes` for storage s, evicting the lowest-scored candidates
 * until the user's allocator accepts it. */
static enum dtr_status reserve(struct dtr *d, uint32_t s, uint64_t bytes, unsigned flags)
{
    if (!d->mem.alloc)
        return DTR_OK;
    for (;;) {
        int rc = d->mem.alloc(d->mem.ctx, s, bytes, flags);
        if (rc == 0)
            return DTR_OK;
        if (rc < 0) {
            if (!d->err[0])
                dtr_set_error(d, "dtr: the allocator failed for storage %u (%llu bytes)", s,
                              (unsigned long long)bytes);
            return fail(d, DTR_ERR_COMPUTE);
        }
        uint32_t victim = dtr_choose(d);
        if (victim == DTR_NONE) {
            if (d->failed)
                return d->failed;
            dtr_set_error(d,
                          "dtr: out of memory: %llu bytes needed for storage %u, nothing left to evict "
                          "(%llu bytes resident, %llu pinned)",
                          (unsigned long long)bytes, s, (unsigned long long)d->st.resident_bytes,
                          (unsigned long long)d->st.pinned_bytes);
            return fail(d, DTR_ERR_OOM);
        }
        enum dtr_status st = evict(d, victim, 0);
        if (st)
            return st;
    }
}

/* ---- banishing ---- */

static int has_undefined_children(const struct dtr *d, uint32_t s)
{
    for (uint32_t t = d->storages[s].first_tensor; t != DTR_NONE; t = d->tensors[t].next_in_storage)
        for (uint32_t u = d->tensors[t].first_use; u != DTR_NONE; u = d->uses[u].next) {
            const struct op_rec *op = &d->ops[d->uses[u].op];
            for (uint32_t k = 0; k < op->n_out; k++) {
                const struct tensor_rec *c = &d->tensors[op->out_begin + k];
                if (c->storage != s && !c->defined && d->state[c->storage] != ST_BANISHED)
                    return 1;
            }
        }
    return 0;
}

/* Frees s for good once the program holds no reference and no child still
 * needs it to be recomputed; its resident children are pinned, since they
 * could no longer be recomputed. */
static enum dtr_status try_banish(struct dtr *d, uint32_t s)
{
    struct storage_rec *r = &d->storages[s];
    if (r->ref_ext || d->state[s] == ST_BANISHED || d->state[s] == ST_PENDING || has_undefined_children(d, s))
        return DTR_OK;
    if (d->state[s] == ST_RESIDENT) {
        pool_remove(d, s);
        if (r->pinned)
            d->st.pinned_bytes -= r->bytes;
        r->pinned = 0;
        r->ref_int = 0;
        d->st.resident_bytes -= r->bytes;
        for (uint32_t t = r->first_tensor; t != DTR_NONE; t = d->tensors[t].next_in_storage)
            d->tensors[t].defined = 0;
        if (d->mem.free)
            d->mem.free(d->mem.ctx, s, 0);
    }
    r = &d->storages[s];
    d->state[s] = ST_BANISHED;
    d->st.banishes++;
    dtr_eq_changed(d, s);
    if (dtr_region_changed(d, s, 0))
        return nomem(d);
    for (uint32_t t = r->first_tensor; t != DTR_NONE; t = d->tensors[t].next_in_storage)
        for (uint32_t u = d->tensors[t].first_use; u != DTR_NONE; u = d->uses[u].next) {
            const struct op_rec *op = &d->ops[d->uses[u].op];
            for (uint32_t k = 0; k < op->n_out; k++) {
                uint32_t cs = d->tensors[op->out_begin + k].storage;
                if (cs != s && d->state[cs] == ST_RESIDENT)
                    pin_storage(d, cs);
            }
        }
    return DTR_OK;
}

/* The program dropped its last reference to a frozen storage: nothing can
 * recompute it (its lineage changed) and nothing needs it (everything held
 * that descends from it is frozen and resident), so it is freed for good.
 * One still locked by a call in progress stays until the step ends. */
static enum dtr_status free_frozen(struct dtr *d, uint32_t s)
{
    struct storage_rec *r = &d->storages[s];
    if (r->ref_ext || r->ref_int != 1 || d->state[s] != ST_RESIDENT)
        return DTR_OK;
    r->frozen = 0;
    r->ref_int = 0;
    d->st.frozen_bytes -= r->bytes;
    d->st.resident_bytes -= r->bytes;
    for (uint32_t t = r->first_tensor; t != DTR_NONE; t = d->tensors[t].next_in_storage)
        d->tensors[t].defined = 0;
    d->state[s] = ST_BANISHED;
    if (d->mem.free)
        d->mem.free(d->mem.ctx, s, 0);
    dtr_eq_changed(d, s);
    return dtr_region_changed(d, s, 0) ? nomem(d) : DTR_OK;
}

/* ---- running one call ---- */

/* The call producing tensor t runs now: its inputs are resident and locked. */
static enum dtr_status run_call(struct dtr *d, uint32_t t, int remat)
{
    uint32_t opi = d->tensors[t].op;
    const struct op_rec op = d->ops[opi];
    uint8_t scratch[64];
    uint8_t *is_scratch = op.n_out <= sizeof scratch ? scratch : malloc(op.n_out);
    if (!is_scratch)
        return nomem(d);
    enum dtr_status st = DTR_OK;

    /* Output buffers, in output order. An output whose storage is already
     * resident (a sibling of what we recompute) gets a scratch buffer. */
    for (uint32_t k = 0; k < op.n_out && !st; k++) {
        const struct tensor_rec *o = &d->tensors[op.out_begin + k];
        is_scratch[k] = 0;
        if (o->is_alias)
            continue;
        is_scratch[k] = d->state[o->storage] == ST_RESIDENT;
        st = reserve(d, o->storage, o->bytes, is_scratch[k] ? DTR_ALLOC_SCRATCH : 0);
    }
    if (!st && d->comp.compute && d->comp.compute(d->comp.ctx, opi, op.closure, remat)) {
        if (!d->err[0])
            dtr_set_error(d, "dtr: the call %u failed", opi);
        st = fail(d, DTR_ERR_COMPUTE);
    }
    if (st) {
        if (is_scratch != scratch)
            free(is_scratch);
        return st;
    }

    d->clock += op.cost;
    if (remat) {
        d->st.remat_compute += op.cost;
        d->st.remats++;
    } else {
        d->st.model_compute += op.cost;
    }

    /* Storages made resident now join the pool: the siblings in output
     * order, then t's own (as simrd orders them). */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t k = 0; k < op.n_out; k++) {
            uint32_t ot = op.out_begin + k;
            if ((pass == 0) == (ot == t))
                continue;
            struct tensor_rec *o = &d->tensors[ot];
            struct storage_rec *r = &d->storages[o->storage];
            if (o->is_alias) {
                o->defined = 1;
                continue;
            }
            if (d->state[o->storage] == ST_RESIDENT && is_scratch[k]) {
                /* already there: the recomputed copy is dropped */
                o->defined = 1;
                if (d->mem.free)
                    d->mem.free(d->mem.ctx, o->storage, DTR_ALLOC_SCRATCH);
                continue;
            }
            if (is_scratch[k] && d->mem.adopt)
                d->mem.adopt(d->mem.ctx, o->storage);   /* evicted meanwhile: keep this copy */
            int was_evicted = d->state[o->storage] == ST_EVICTED;
            d->state[o->storage] = ST_RESIDENT;
            o->defined = 1;
            d->st.resident_bytes += r->bytes;
            if (d->st.resident_bytes > d->st.peak_resident_bytes)
                d->st.peak_resident_bytes = d->st.resident_bytes;
            if (r->ref_int == 0 && !r->pinned)
                pool_append(d, o->storage);
            if (r->ecn != DTR_NONE) {
                /* rematerialized: its class no longer pays for it */
                dtr_uf_add(d, r->ecn, -r->compute);
                r = &d->storages[o->storage];
                r->ecn = DTR_NONE;
            }
            dtr_eq_changed(d, o->storage);
            if (was_evicted && dtr_region_changed(d, o->storage, 0)) {
                st = nomem(d);
                break;
            }
        }
    if (is_scratch != scratch)
        free(is_scratch);
    return st;
}

static int arg_push(struct dtr *d, uint32_t t)
{
    if (DTR_GROW(d, d->args, d->cap_args, d->n_args + 1))
        return -1;
    d->args[d->n_args++] = t;
    return 0;
}

static int frame_push(struct dtr *d, uint32_t t, int remat)
{
    if (DTR_GROW(d, d->frames, d->cap_frames, d->n_frames + 1))
        return -1;
    struct frame *f = &d->frames[d->n_frames++];
    memset(f, 0, sizeof *f);
    f->t = t;
    f->remat = (uint8_t)remat;
    return 0;
}

enum { PH_ENTER, PH_PARENTS, PH_AFTER_CHILD };

/* An op's input ids; NULL for an op without inputs (op_inputs itself may
 * still be NULL then, and NULL + 0 is undefined). */
static inline const uint32_t *op_ins(const struct dtr *d, const struct op_rec *op)
{
    return op->n_in ? d->op_inputs + op->in_begin : NULL;
}

/* Makes tensor t resident by running its call, first making each missing
 * input resident the same way. Recursive in meaning; the recursion lives in
 * d->frames so that a 100,000-call chain cannot overflow the C stack. */
static enum dtr_status materialize(struct dtr *d, uint32_t t0, int remat0)
{
    uint32_t base = d->n_frames;
    if (frame_push(d, t0, remat0))
        return nomem(d);
    while (d->n_frames > base) {
        struct frame *f = &d->frames[d->n_frames - 1];
        const struct op_rec *op = &d->ops[d->tensors[f->t].op];
        const uint32_t *in = op_ins(d, op);
        if (f->phase == PH_ENTER) {
            for (uint32_t k = 0; k < op->n_in; k++)
                d->storages[d->tensors[in[k]].storage].last_access = d->clock;
            for (uint32_t k = 0; k < op->n_in; k++)
                if (d->tensors[in[k]].defined)
                    lock(d, d->tensors[in[k]].storage);
            f->arg_begin = d->n_args;
            for (uint32_t k = 0; k < op->n_in; k++) {
                if (!d->tensors[in[k]].defined) {
                    if (d->state[d->tensors[in[k]].storage] == ST_BANISHED) {
                        dtr_set_error(d, "dtr: tensor %u is needed but its storage was banished", in[k]);
                        return fail(d, DTR_ERR_INVALID);
                    }
                    if (arg_push(d, in[k]))
                        return nomem(d);
                    f = &d->frames[d->n_frames - 1];
                }
            }
            f->arg_end = d->n_args;
            f->i = f->arg_begin;
            f->phase = PH_PARENTS;
            continue;
        }
        if (f->phase == PH_AFTER_CHILD) {
            lock(d, d->tensors[d->args[f->i]].storage);
            f->i++;
            f->phase = PH_PARENTS;
        }
        if (f->i < f->arg_end) {
            uint32_t p = d->args[f->i];
            if (!d->tensors[p].defined) {
                /* parents are locked while a child is recomputed, so this
                 * recursion cannot evict the inputs gathered so far */
                f->phase = PH_AFTER_CHILD;
                if (frame_push(d, p, 1))
                    return nomem(d);
                continue;
            }
            lock(d, d->tensors[p].storage);
            f->i++;
            continue;
        }
        uint32_t t = f->t, arg_begin = f->arg_begin;
        int remat = f->remat;
        enum dtr_status st = run_call(d, t, remat);
        if (st)
            return st;
        op = &d->ops[d->tensors[t].op];
        in = op_ins(d, op);
        for (uint32_t k = 0; k < op->n_in; k++)
            unlock(d, d->tensors[in[k]].storage);
        if (d->cfg.dealloc == DTR_DEALLOC_BANISH)
            for (uint32_t k = 0; k < op->n_in; k++) {
                st = try_banish(d, d->tensors[d->op_inputs[d->ops[d->tensors[t].op].in_begin + k]].storage);
                if (st)
                    return st;
            }
        d->n_args = arg_begin;
        d->n_frames--;
        if (d->cfg.remat_limit >= 0 && d->st.remat_compute > d->cfg.remat_limit) {
            dtr_set_error(d, "dtr: recomputation (%.17g) exceeded the limit (%.17g)", d->st.remat_compute,
                          d->cfg.remat_limit);
            return fail(d, DTR_ERR_REMAT_LIMIT);
        }
    }
    return DTR_OK;
}

/* ---- the interface ---- */

static enum dtr_status check(struct dtr *d, dtr_tensor t)
{
    if (d->failed)
        return d->failed;
    if (t >= d->n_tensors) {
        dtr_set_error(d, "dtr: unknown tensor %u", t);
        return DTR_ERR_INVALID;
    }
    return DTR_OK;
}

static int adj_add(struct dtr *d, uint32_t s, int dir, uint32_t other)
{
    struct storage_rec *r = &d->storages[s];
    if (r->n_adj[dir] && r->adj[dir][r->n_adj[dir] - 1] == other)
        return 0;
    if (DTR_GROW(d, r->adj[dir], r->cap_adj[dir], (size_t)r->n_adj[dir] + 1))
        return -1;
    r->adj[dir][r->n_adj[dir]++] = other;
    r->eq_valid = 0;
    return 0;
}

_Static_assert(sizeof(struct storage_rec) == 128 && offsetof(struct storage_rec, ecn) == 64,
               "storage_rec: what scoring reads fills the first cache line");

/* The storage records and the arrays beside them share one capacity. The
 * records are 64-aligned (a record's first line is what a score reads), so
 * they grow by copy rather than realloc. */
static int storages_grow(struct dtr *d, size_t need)
{
    uint32_t cap = d->cap_storages;
    if (need <= cap)
        return 0;
    if (need >= UINT32_MAX / 2)
        return -1;
    size_t n = cap ? cap : 16;
    while (n < need)
        n *= 2;
    struct storage_rec *recs = aligned_alloc(64, n * sizeof *recs);
    if (!recs)
        return -1;
    if (d->n_storages)
        memcpy(recs, d->storages, (size_t)d->n_storages * sizeof *recs);
    free(d->storages);
    d->storages = recs;
    void *st = realloc(d->state, n * sizeof *d->state);
    if (!st)
        return -1;
    d->state = st;
    void *ip = realloc(d->in_pool, n * sizeof *d->in_pool);
    if (!ip)
        return -1;
    d->in_pool = ip;
    void *mk = realloc(d->mark, n * sizeof *d->mark);
    if (!mk)
        return -1;
    d->mark = mk;
    d->cap_storages = (uint32_t)n;
    return 0;
}

static enum dtr_status call_add(struct dtr *d, const struct dtr_call_desc *c, dtr_tensor *outputs,
                                dtr_op *op_out, int constant)
{
    if (d->failed)
        return d->failed;
    if (!c || (c->n_inputs && !c->inputs) || !c->n_outputs || !c->output_bytes || !(c->cost >= 0)) {
        dtr_set_error(d, "dtr: invalid call description");
        return DTR_ERR_INVALID;
    }
    for (uint32_t k = 0; k < c->n_inputs; k++) {
        if (c->inputs[k] >= d->n_tensors) {
            dtr_set_error(d, "dtr: call input %u is an unknown tensor %u", k, c->inputs[k]);
            return DTR_ERR_INVALID;
        }
        if (d->state[d->tensors[c->inputs[k]].storage] == ST_BANISHED) {
            dtr_set_error(d, "dtr: call input %u (tensor %u) was banished", k, c->inputs[k]);
            return DTR_ERR_INVALID;
        }
    }
    for (uint32_t k = 0; k < c->n_outputs; k++)
        if (c->output_alias && c->output_alias[k] >= 0 && (uint32_t)c->output_alias[k] >= c->n_inputs) {
            dtr_set_error(d, "dtr: output %u aliases input %d of a call with %u inputs", k,
                          c->output_alias[k], c->n_inputs);
            return DTR_ERR_INVALID;
        }
    if (DTR_GROW(d, d->ops, d->cap_ops, d->n_ops + 1) ||
        DTR_GROW(d, d->op_inputs, d->cap_op_inputs, (size_t)d->n_op_inputs + c->n_inputs) ||
        DTR_GROW(d, d->tensors, d->cap_tensors, (size_t)d->n_tensors + c->n_outputs) ||
        storages_grow(d, (size_t)d->n_storages + c->n_outputs) ||
        DTR_GROW(d, d->uses, d->cap_uses, (size_t)d->n_uses + c->n_inputs))
        return nomem(d);

    /* a cost reaches the storages of at most all its outputs */
    d->compute_total += c->cost * c->n_outputs;
    if (c->cost != floor(c->cost) || !(d->compute_total < 9007199254740992.0))
        d->costs_exact = 0;
    uint32_t opi = d->n_ops++;
    struct op_rec *op = &d->ops[opi];
    op->in_begin = d->n_op_inputs;
    op->n_in = c->n_inputs;
    op->out_begin = d->n_tensors;
    op->n_out = c->n_outputs;
    op->cost = c->cost;
    op->closure = c->closure;
    if (c->n_inputs)
        memcpy(d->op_inputs + d->n_op_inputs, c->inputs, c->n_inputs * sizeof *c->inputs);
    d->n_op_inputs += c->n_inputs;

    for (uint32_t k = 0; k < c->n_outputs; k++) {
        uint32_t ti = d->n_tensors++;
        struct tensor_rec *t = &d->tensors[ti];
        memset(t, 0, sizeof *t);
        t->op = opi;
        t->next_in_storage = t->first_use = t->last_use = DTR_NONE;
        t->ref_ext = 1;
        int alias = c->output_alias ? c->output_alias[k] : -1;
        if (alias >= 0) {
            uint32_t si = d->tensors[c->inputs[alias]].storage;
            struct storage_rec *s = &d->storages[si];
            t->storage = si;
            t->is_alias = 1;
            /* a storage's cost counts each distinct call once (the views of
             * one call are appended together) */
            if (d->tensors[s->last_tensor].op != opi)
                s->compute += c->cost;
            d->tensors[s->last_tensor].next_in_storage = ti;
            s->last_tensor = ti;
            s->ref_ext++;
            /* Its cost and (below) its parents change: when it is evicted
             * (an input still to be recomputed), the cached regions through
             * it are stale now, not only once it is resident again. */
            if (dtr_region_changed(d, si, 0))
                return nomem(d);
        } else {
            uint32_t si = d->n_storages++;
            struct storage_rec *s = &d->storages[si];
            memset(s, 0, sizeof *s);
            s->bytes = c->output_bytes[k];
            s->compute = c->cost;
            s->last_access = -INFINITY;
            s->first_tensor = s->last_tensor = ti;
            s->ref_ext = 1;
            s->pool_prev = s->pool_next = DTR_NONE;
            s->ecn = DTR_NONE;
            d->state[si] = ST_PENDING;
            d->mark[si] = 0;
            d->in_pool[si] = 0;
            t->storage = si;
            t->bytes = c->output_bytes[k];
            if (d->cfg.heuristic == DTR_HEURISTIC_EQ) {
                /* an empty class, as simrd gives every new storage */
                uint32_t node;
                if (dtr_uf_new(d, 0, &node))
                    return nomem(d);
                d->storages[si].ecn = node;
            }
        }
        outputs[k] = ti;
    }
    for (uint32_t k = 0; k < c->n_inputs; k++) {
        uint32_t ui = d->n_uses++;
        struct tensor_rec *p = &d->tensors[c->inputs[k]];
        d->uses[ui].op = opi;
        d->uses[ui].next = DTR_NONE;
        if (p->last_use != DTR_NONE)
            d->uses[p->last_use].next = ui;
        else
            p->first_use = ui;
        p->last_use = ui;
    }
    /* storage-level edges, each input storage to each output storage */
    uint32_t mark = dtr_stamp_next(d);
    for (uint32_t k = 0; k < c->n_inputs; k++) {
        uint32_t ps = d->tensors[c->inputs[k]].storage;
        if (d->mark[ps] == mark)
            continue;
        d->mark[ps] = mark;
        for (uint32_t j = 0; j < c->n_outputs; j++) {
            uint32_t cs = d->tensors[outputs[j]].storage;
            if (cs != ps && (adj_add(d, ps, 1, cs) || adj_add(d, cs, 0, ps)))
                return nomem(d);
        }
    }
    if (op_out)
        *op_out = opi;

    enum dtr_status st = materialize(d, outputs[0], 0);
    if (st)
        return st;
    /* stamped after the call, so that new outputs are not evicted at once */
    for (uint32_t k = 0; k < c->n_outputs; k++)
        d->storages[d->tensors[outputs[k]].storage].last_access = d->clock;
    /* computed from a frozen storage: frozen too (dtr_tensor_mutate) */
    int frozen_input = 0;
    for (uint32_t k = 0; k < c->n_inputs && !frozen_input; k++)
        frozen_input = d->storages[d->tensors[c->inputs[k]].storage].frozen;
    for (uint32_t k = 0; frozen_input && k < c->n_outputs; k++)
        freeze_storage(d, d->tensors[outputs[k]].storage);
    if (constant) {
        struct storage_rec *s = &d->storages[d->tensors[outputs[0]].storage];
        d->st.constant_bytes += s->bytes;
        pin_storage(d, d->tensors[outputs[0]].storage);
    }
    return DTR_OK;
}

enum dtr_status dtr_call(struct dtr *d, const struct dtr_call_desc *call, dtr_tensor *outputs, dtr_op *op)
{
    return call_add(d, call, outputs, op, 0);
}

enum dtr_status dtr_constant_add(struct dtr *d, uint64_t bytes, void *closure, dtr_tensor *out)
{
    struct dtr_call_desc c = { .output_bytes = &bytes, .n_outputs = 1, .cost = 0, .closure = closure };
    return call_add(d, &c, out, NULL, 1);
}

enum dtr_status dtr_tensor_retain(struct dtr *d, dtr_tensor t)
{
    enum dtr_status st = check(d, t);
    if (st)
        return st;
    struct storage_rec *s = &d->storages[d->tensors[t].storage];
    if (!s->ref_ext) {
        dtr_set_error(d, "dtr: retain of tensor %u whose storage has no references left", t);
        return DTR_ERR_INVALID;
    }
    s->ref_ext++;
    d->tensors[t].ref_ext++;
    return DTR_OK;
}

enum dtr_status dtr_tensor_release(struct dtr *d, dtr_tensor t)
{
    enum dtr_status st = check(d, t);
    if (st)
        return st;
    uint32_t si = d->tensors[t].storage;
    struct storage_rec *s = &d->storages[si];
    if (!s->ref_ext) {
        dtr_set_error(d, "dtr: release of tensor %u whose storage has no references left", t);
        return DTR_ERR_INVALID;
    }
    s->ref_ext--;
    if (d->tensors[t].ref_ext)
        d->tensors[t].ref_ext--;
    if (s->ref_ext)
        return DTR_OK;
    if (s->frozen)
        return free_frozen(d, si);
    switch (d->cfg.dealloc) {
    case DTR_DEALLOC_EAGER:
        /* locked (acquired) storages stay; they remain ordinary candidates */
        if (d->state[si] == ST_RESIDENT && !s->pinned && !s->ref_int)
            return evict(d, si, 1);
        return DTR_OK;
    case DTR_DEALLOC_BANISH:
        return try_banish(d, si);
    case DTR_DEALLOC_IGNORE:
    case DTR_DEALLOC_COUNT:
        break;
    }
    return DTR_OK;
}

/* Recomputes t when evicted (an error when banished). */
static enum dtr_status make_resident(struct dtr *d, dtr_tensor t)
{
    enum dtr_status st = check(d, t);
    if (st || d->tensors[t].defined)
        return st;
    if (d->state[d->tensors[t].storage] == ST_BANISHED) {
        dtr_set_error(d, "dtr: tensor %u was banished", t);
        return DTR_ERR_INVALID;
    }
    return materialize(d, t, 1);
}

enum dtr_status dtr_tensor_acquire(struct dtr *d, dtr_tensor t)
{
    enum dtr_status st = make_resident(d, t);
    if (st)
        return st;
    lock(d, d->tensors[t].storage);
    return DTR_OK;
}

enum dtr_status dtr_tensor_unacquire(struct dtr *d, dtr_tensor t)
{
    enum dtr_status st = check(d, t);
    if (st)
        return st;
    struct storage_rec *s = &d->storages[d->tensors[t].storage];
    if (!s->ref_int || ((s->pinned || s->frozen) && s->ref_int == 1)) {
        dtr_set_error(d, "dtr: unacquire of tensor %u that is not acquired", t);
        return DTR_ERR_INVALID;
    }
    unlock(d, d->tensors[t].storage);
    if (s->frozen && !s->ref_ext)
        return free_frozen(d, d->tensors[t].storage);
    return DTR_OK;
}

enum dtr_status dtr_tensor_pin(struct dtr *d, dtr_tensor t)
{
    enum dtr_status st = make_resident(d, t);
    if (st)
        return st;
    pin_storage(d, d->tensors[t].storage);
    return DTR_OK;
}

enum dtr_status dtr_tensor_mutate(struct dtr *d, dtr_tensor t)
{
    enum dtr_status st = check(d, t);
    if (st)
        return st;
    d->st.mutations++;
    /* The held descendants of t's storage, found first: making them
     * resident recomputes and evicts, which uses the marks. */
    uint32_t root = d->tensors[t].storage, mark = dtr_stamp_next(d), n_held = 0, cap_held = 0;
    uint32_t *held = NULL;
    d->n_work = 0;
    if (DTR_GROW(d, d->work, d->cap_work, 1))
        return nomem(d);
    d->work[d->n_work++] = root;
    d->mark[root] = mark;
    while (d->n_work) {
        uint32_t x = d->work[--d->n_work];
        const struct storage_rec *r = &d->storages[x];
        for (uint32_t k = 0; k < r->n_adj[1]; k++) {
            uint32_t c = r->adj[1][k];
            if (d->mark[c] == mark || d->state[c] == ST_BANISHED)
                continue;
            d->mark[c] = mark;
            if (DTR_GROW(d, d->work, d->cap_work, (size_t)d->n_work + 1)) {
                free(held);
                return nomem(d);
            }
            d->work[d->n_work++] = c;
            r = &d->storages[x];
            if (d->storages[c].ref_ext && !d->storages[c].frozen && !d->storages[c].pinned) {
                if (DTR_GROW(d, held, cap_held, (size_t)n_held + 1)) {
                    free(held);
                    return nomem(d);
                }
                held[n_held++] = c;
            }
        }
    }
    /* Resident and frozen one by one: the frozen ones are locked, so
     * making the next resident cannot evict them. */
    for (uint32_t i = 0; i < n_held && !st; i++) {
        uint32_t c = held[i];
        for (uint32_t u = d->storages[c].first_tensor; u != DTR_NONE && !st; u = d->tensors[u].next_in_storage)
            if (!d->tensors[u].defined)
                st = materialize(d, u, 1);
        if (!st)
            freeze_storage(d, c);
    }
    free(held);
    return st;
}

int dtr_tensor_is_resident(const struct dtr *d, dtr_tensor t)
{
    return t < d->n_tensors && d->tensors[t].defined;
}

dtr_storage dtr_tensor_storage(const struct dtr *d, dtr_tensor t)
{
    return t < d->n_tensors ? d->tensors[t].storage : DTR_NONE;
}

uint64_t dtr_storage_bytes(const struct dtr *d, dtr_storage s)
{
    return s < d->n_storages ? d->storages[s].bytes : 0;
}

double dtr_storage_compute(const struct dtr *d, dtr_storage s)
{
    return s < d->n_storages ? d->storages[s].compute : 0;
}

enum dtr_status dtr_storage_info(const struct dtr *d, dtr_storage s, struct dtr_storage_info *out)
{
    if (s >= d->n_storages)
        return DTR_ERR_INVALID;
    const struct storage_rec *r = &d->storages[s];
    out->bytes = r->bytes;
    out->resident = d->state[s] == ST_RESIDENT;
    out->pinned = r->pinned;
    out->frozen = r->frozen;
    out->locked = r->ref_int > (uint32_t)(r->pinned || r->frozen);
    out->evictable = d->in_pool[s];
    out->shared = r->first_tensor != r->last_tensor;
    out->refs = r->ref_ext;
    return DTR_OK;
}

int dtr_storage_is_evictable(const struct dtr *d, dtr_storage s)
{
    return s < d->n_storages && d->in_pool[s];
}

/* What a caller may ask of storage s from outside a choice: the core has
 * not failed, s is evictable, and the region caches are current. */
static enum dtr_status ask_about(struct dtr *d, dtr_storage s)
{
    if (d->failed)
        return d->failed;
    if (!dtr_storage_is_evictable(d, s)) {
        dtr_set_error(d, "dtr: storage %u is not evictable", s);
        return DTR_ERR_INVALID;
    }
    return dtr_region_sync(d) ? nomem(d) : DTR_OK;
}

enum dtr_status dtr_storage_score(struct dtr *d, dtr_storage s, double *score)
{
    enum dtr_status st = ask_about(d, s);
    if (!st)
        *score = dtr_score(d, s);
    return st;
}

enum dtr_status dtr_storage_eviction_cost(struct dtr *d, dtr_storage s, double *cost)
{
    enum dtr_status st = ask_about(d, s);
    if (!st)
        *cost = dtr_eviction_cost(d, s);
    return st;
}

enum dtr_status dtr_storage_evict(struct dtr *d, dtr_storage s)
{
    if (d->failed)
        return d->failed;
    if (!dtr_storage_is_evictable(d, s)) {
        dtr_set_error(d, "dtr: storage %u is not evictable", s);
        return DTR_ERR_INVALID;
    }
    return evict(d, s, 0);
}
