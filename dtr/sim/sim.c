/* dtr/sim/sim.c — the DTR simulator: replays a program through the dtr/ core
 * with memory as a byte counter against the budget and kernels replaced by
 * the core's clock, which advances by each call's cost. The same core, with
 * the arena and real kernels behind the same interfaces, drives the runtime.
 *
 * Conventions of the DTR authors' evaluation (simrd), which our numbers are
 * compared with: the baseline is an unbudgeted banishing replay; a ratio's
 * budget is floor(baseline peak x ratio); overhead is everything executed
 * over the baseline compute; a run fails once recomputation exceeds the
 * remat limit (1x the baseline compute by default). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtr/sim/sim.h"

void sim_options_default(struct sim_options *o)
{
    memset(o, 0, sizeof *o);
    o->heuristic = DTR_HEURISTIC_DTR;
    o->dealloc = DTR_DEALLOC_EAGER;
    o->remat_limit = 1.0;
    o->seed = 1;
}

const char *sim_outcome_name(enum sim_outcome o)
{
    switch (o) {
    case SIM_PASS: return "pass";
    case SIM_OOM: return "OOM";
    case SIM_REMAT_EXCEEDED: return "remat_exceeded";
    case SIM_ERROR: return "error";
    }
    return "?";
}

/* memory: a byte counter against the budget; with a recorder, also the
 * program step that first made each storage (its first allocation happens
 * in that step's call), so frees and runs can be named */
struct counter {
    struct dtr *d;
    uint64_t used, peak, budget;   /* budget 0: unlimited */
    const struct sim_recorder *rec;
    const uint64_t *ws, *kept;     /* per step: the planners' accounting (sim_options), NULL: none */
    uint64_t kept_used;            /* kept bytes of the calls run so far */
    uint32_t cur_step;             /* the step being replayed */
    uint32_t *storage_step;        /* storage -> step, UINT32_MAX: none */
    uint32_t cap_storages;
    int failed;                    /* out of host memory while recording */
};

static int counter_alloc(void *ctx, dtr_storage s, uint64_t bytes, unsigned flags)
{
    struct counter *c = ctx;
    int mapping = c->rec || c->ws || c->kept;
    /* the planners' accounting: the call's workspace while it runs, and
     * the kept bytes of every call run so far, this one's on its first run */
    uint64_t extra = 0, kept_new = 0;
    if (mapping && !(flags & DTR_ALLOC_SCRATCH)) {
        int first = s >= c->cap_storages || c->storage_step[s] == UINT32_MAX;
        uint32_t step = first ? c->cur_step : c->storage_step[s];
        if (step != UINT32_MAX) {
            kept_new = first && c->kept ? c->kept[step] : 0;
            extra = (c->ws ? c->ws[step] : 0) + kept_new;
        }
        extra += c->kept_used;
    }
    if (c->budget && (bytes > c->budget || extra > c->budget - bytes || c->used > c->budget - bytes - extra))
        return 1;
    if (mapping && s >= c->cap_storages) {
        uint32_t n = c->cap_storages ? c->cap_storages : 256;
        while (n <= s)
            n *= 2;
        uint32_t *q = realloc(c->storage_step, (size_t)n * sizeof *q);
        if (!q) {
            c->failed = 1;
            return -1;
        }
        for (uint32_t k = c->cap_storages; k < n; k++)
            q[k] = UINT32_MAX;
        c->storage_step = q;
        c->cap_storages = n;
    }
    if (mapping && c->storage_step[s] == UINT32_MAX)
        c->storage_step[s] = c->cur_step;
    c->used += bytes;
    if (c->used + extra > c->peak)
        c->peak = c->used + extra;
    c->kept_used += kept_new;
    return 0;
}

static void counter_free(void *ctx, dtr_storage s, unsigned flags)
{
    struct counter *c = ctx;
    c->used -= dtr_storage_bytes(c->d, s);
    if (c->rec && s < c->cap_storages && c->storage_step[s] != UINT32_MAX && !(flags & DTR_ALLOC_SCRATCH))
        c->rec->free(c->rec->ctx, c->storage_step[s]);
}

/* calls carry their step (+ 1) as the closure; constants none */
static int counter_compute(void *ctx, dtr_op op, void *closure, int rematerialize)
{
    struct counter *c = ctx;
    if (closure)
        c->rec->run(c->rec->ctx, (uint32_t)((uintptr_t)closure - 1), rematerialize);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Replays p on a fresh core; fills r from the core's statistics. */
static int replay(const struct sim_program *p, const struct dtr_config *cfg, uint64_t budget,
                  const struct sim_recorder *rec, const uint64_t *ws, const uint64_t *kept, struct sim_result *r)
{
    struct counter c = { .budget = budget, .rec = rec, .ws = ws, .kept = kept, .cur_step = UINT32_MAX };
    struct dtr_memory_ops mem = { .ctx = &c, .alloc = counter_alloc, .free = counter_free };
    struct dtr_compute_ops comp = { .ctx = &c, .compute = counter_compute };
    double t0 = now_s();
    struct dtr *d = dtr_create(cfg, &mem, rec ? &comp : NULL);
    dtr_tensor *tensor = malloc(((size_t)p->n_values + 1) * sizeof *tensor);
    dtr_tensor *outs = NULL;
    uint32_t cap_outs = 0;
    int rc = 0;
    r->outcome = SIM_PASS;
    r->message[0] = 0;
    if (!d || !tensor) {
        snprintf(r->message, sizeof r->message, "out of memory");
        r->outcome = SIM_ERROR;
        rc = -1;
        goto out;
    }
    c.d = d;
    for (uint32_t i = 0; i < p->n_steps; i++) {
        const struct sim_step *s = &p->steps[i];
        enum dtr_status st = DTR_OK;
        c.cur_step = s->kind == SIM_STEP_CALL ? i : UINT32_MAX;
        switch (s->kind) {
        case SIM_STEP_CONSTANT:
            st = dtr_constant_add(d, p->out_bytes[s->out_at], NULL, &tensor[s->out]);
            break;
        case SIM_STEP_CALL: {
            if (s->n_out > cap_outs) {
                void *q = realloc(outs, s->n_out * sizeof *outs);
                if (!q) {
                    st = DTR_ERR_NOMEM;
                    break;
                }
                outs = q;
                cap_outs = s->n_out;
            }
            /* the program's values map to the core's tensors one to one */
            dtr_tensor in_buf[16];
            dtr_tensor *in = s->n_in <= 16 ? in_buf : malloc(s->n_in * sizeof *in);
            if (!in) {
                st = DTR_ERR_NOMEM;
                break;
            }
            for (uint32_t k = 0; k < s->n_in; k++)
                in[k] = tensor[p->inputs[s->in_at + k]];
            struct dtr_call_desc call = {
                .inputs = in, .n_inputs = s->n_in,
                .output_bytes = p->out_bytes + s->out_at, .output_alias = p->out_alias + s->out_at,
                .n_outputs = s->n_out, .cost = s->cost, .closure = (void *)((uintptr_t)i + 1),
            };
            st = dtr_call(d, &call, outs, NULL);
            if (in != in_buf)
                free(in);
            if (!st)
                for (uint32_t k = 0; k < s->n_out; k++)
                    tensor[s->out + k] = outs[k];
            break;
        }
        case SIM_STEP_RETAIN: st = dtr_tensor_retain(d, tensor[s->out]); break;
        case SIM_STEP_RELEASE: st = dtr_tensor_release(d, tensor[s->out]); break;
        case SIM_STEP_PIN: st = dtr_tensor_pin(d, tensor[s->out]); break;
        case SIM_STEP_MUTATE: st = dtr_tensor_mutate(d, tensor[s->out]); break;
        }
        if (c.failed) {
            snprintf(r->message, sizeof r->message, "out of memory recording step %u", i);
            r->outcome = SIM_ERROR;
            rc = -1;
            break;
        }
        if (st == DTR_ERR_OOM) {
            r->outcome = SIM_OOM;
        } else if (st == DTR_ERR_REMAT_LIMIT) {
            r->outcome = SIM_REMAT_EXCEEDED;
        } else if (st) {
            r->outcome = SIM_ERROR;
            rc = -1;
        }
        if (st) {
            snprintf(r->message, sizeof r->message, "%s (step %u, line %u)", dtr_error(d)[0] ? dtr_error(d) : dtr_status_name(st),
                     i, s->line);
            break;
        }
    }
    struct dtr_stats ds;
    dtr_stats_get(d, &ds);
    r->budget_bytes = budget;
    r->peak_bytes = c.peak;
    r->pinned_bytes = ds.pinned_bytes;
    r->total_compute = ds.clock;
    r->remat_compute = ds.remat_compute;
    r->evictions = ds.evictions;
    r->dealloc_evictions = ds.dealloc_evictions;
    r->remats = ds.remats;
    r->banishes = ds.banishes;
    r->heuristic_evaluations = ds.heuristic_evaluations;
    r->metadata_accesses = ds.metadata_accesses;
    r->executions = ds.remats + (uint64_t)ds.ops;
out:
    dtr_destroy(d);
    free(tensor);
    free(outs);
    free(c.storage_step);
    r->wall_s = now_s() - t0;
    return rc;
}

int sim_baseline_run(const struct sim_program *p, struct sim_baseline *b, char *err, size_t err_size)
{
    struct dtr_config cfg;
    dtr_config_default(&cfg);
    cfg.heuristic = DTR_HEURISTIC_LRU;   /* never consulted: nothing is evicted */
    cfg.dealloc = DTR_DEALLOC_BANISH;
    struct sim_result r;
    memset(&r, 0, sizeof r);
    if (replay(p, &cfg, 0, NULL, NULL, NULL, &r) || r.outcome != SIM_PASS) {
        snprintf(err, err_size, "%s: baseline replay failed: %s", p->name ? p->name : "program", r.message);
        return -1;
    }
    b->compute = r.total_compute;
    b->peak_bytes = r.peak_bytes;
    b->calls = p->n_calls;
    b->constant_bytes = 0;
    for (uint32_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].kind == SIM_STEP_CONSTANT)
            b->constant_bytes += p->out_bytes[p->steps[i].out_at];
    return 0;
}

int sim_run(const struct sim_program *p, const struct sim_baseline *b, const struct sim_options *o,
            struct sim_result *r)
{
    return sim_run_recorded(p, b, o, NULL, r);
}

int sim_run_recorded(const struct sim_program *p, const struct sim_baseline *b, const struct sim_options *o,
                     const struct sim_recorder *rec, struct sim_result *r)
{
    memset(r, 0, sizeof *r);
    struct dtr_config cfg;
    dtr_config_default(&cfg);
    cfg.heuristic = o->heuristic;
    cfg.dealloc = o->dealloc;
    cfg.remat_limit = o->remat_limit >= 0 ? o->remat_limit * b->compute : -1;
    cfg.min_evict_bytes = o->min_evict_bytes;
    cfg.sample_sqrt = o->sample_sqrt;
    cfg.seed = o->seed;
    uint64_t budget = o->budget_bytes;
    if (!budget && o->budget_ratio > 0) {
        /* floor(peak x ratio), as simrd's int(baseline_memory * ratio) */
        budget = (uint64_t)floor((double)b->peak_bytes * o->budget_ratio);
        if (!budget)
            budget = 1;
    }
    int rc = replay(p, &cfg, budget, rec, o->step_workspace, o->step_kept, r);
    r->baseline_compute = b->compute;
    r->overhead = b->compute > 0 ? r->total_compute / b->compute : 1.0;
    return rc;
}
