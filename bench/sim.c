/* bench/sim.c — the DTR simulator: replays a program through the dtr/ core
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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"

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

/* memory: a byte counter against the budget */
struct counter {
    struct dtr *d;
    uint64_t used, peak, budget;   /* budget 0: unlimited */
};

static int counter_alloc(void *ctx, dtr_storage s, uint64_t bytes, unsigned flags)
{
    struct counter *c = ctx;
    if (c->budget && (bytes > c->budget || c->used > c->budget - bytes))
        return 1;
    c->used += bytes;
    if (c->used > c->peak)
        c->peak = c->used;
    return 0;
}

static void counter_free(void *ctx, dtr_storage s, unsigned flags)
{
    struct counter *c = ctx;
    c->used -= dtr_storage_bytes(c->d, s);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Replays p on a fresh core; fills r from the core's statistics. */
static int replay(const struct sim_program *p, const struct dtr_config *cfg, uint64_t budget, struct sim_result *r)
{
    struct counter c = { .budget = budget };
    struct dtr_memory_ops mem = { .ctx = &c, .alloc = counter_alloc, .free = counter_free };
    double t0 = now_s();
    struct dtr *d = dtr_create(cfg, &mem, NULL);
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
                .n_outputs = s->n_out, .cost = s->cost,
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
    if (replay(p, &cfg, 0, &r) || r.outcome != SIM_PASS) {
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
    int rc = replay(p, &cfg, budget, r);
    r->baseline_compute = b->compute;
    r->overhead = b->compute > 0 ? r->total_compute / b->compute : 1.0;
    return rc;
}
