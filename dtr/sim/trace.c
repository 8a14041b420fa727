/* dtr/sim/trace.c — a DTR op log (dtr/format/trace.h, read there) as a
 * simulator program, with the meaning their simulator (simrd, parse.py)
 * gives each record:
 *   CONSTANT n + MEMORY n         a pinned constant
 *   CALL (ARGS, RESULT, TIME)     followed, per result, by MEMORY then ALIAS
 *                                 (ALIAS k >= 0: a view of argument k, no bytes);
 *                                 with IN_PLACE (dtrexec's runtime), those
 *                                 arguments are mutated first (dtr_tensor_mutate)
 *   MUTATE (ARGS, MUTATE, TIME)   copy-on-write: each mutated argument gets a
 *                                 new value of its storage's size; the name
 *                                 moves to it and the old value is released
 *   COPY dst src                  dst names src's value: one more reference
 *   COPY_FROM dst src             dst drops its value and names src's
 *   RELEASE n                     one reference less (unknown names ignored)
 *   ANNOTATE START / BACKWARD     replay starts after START
 * Values still referenced at the end are outputs: they are made resident
 * (recomputed if needed) and pinned, in the order their names
 * were first bound. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/format/trace.h"
#include "dtr/sim/sim.h"

#define UNBOUND UINT32_MAX

struct builder {
    const char *path;
    const struct fmt_trace *t;
    uint32_t pos;
    uint32_t *value;         /* per name id: its current value, UNBOUND never bound */
    uint32_t *bound;         /* name ids in first-binding order */
    uint32_t n_bound;
    int64_t *refs;           /* per value: references the program holds */
    uint64_t *storage_bytes; /* per value: its storage's size (views: the viewed one's) */
    uint32_t cap_values;
    struct sim_program *p;
    char *err;
    size_t err_size;
};

__attribute__((format(printf, 3, 4))) static int rerr(struct builder *b, uint32_t line, const char *fmt, ...)
{
    int n = snprintf(b->err, b->err_size, "%s:%u: ", b->path, line);
    if (n >= 0 && (size_t)n < b->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err + n, b->err_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const char *nm(const struct builder *b, uint32_t id)
{
    return fmt_trace_name(b->t, id);
}

static const struct fmt_trace_record *rec(const struct builder *b, uint32_t i)
{
    return &b->t->recs[i];
}

static int values_reserve(struct builder *b, uint32_t n)
{
    if (n <= b->cap_values)
        return 0;
    uint32_t nc = b->cap_values ? b->cap_values : 1024;
    while (nc < n)
        nc *= 2;
    int64_t *r = realloc(b->refs, nc * sizeof *r);
    if (!r)
        return -1;
    b->refs = r;
    uint64_t *s = realloc(b->storage_bytes, nc * sizeof *s);
    if (!s)
        return -1;
    b->storage_bytes = s;
    b->cap_values = nc;
    return 0;
}

static void bind(struct builder *b, uint32_t name, uint32_t value)
{
    if (b->value[name] == UNBOUND)
        b->bound[b->n_bound++] = name;
    b->value[name] = value;
}

/* The value a name is bound to, or an error naming the line. */
static int lookup(struct builder *b, uint32_t line, const char *what, uint32_t name, uint32_t *value)
{
    if (b->value[name] == UNBOUND)
        return rerr(b, line, "%s uses '%s', which was never defined", what, nm(b, name));
    *value = b->value[name];
    return 0;
}

static int do_constant(struct builder *b, uint32_t i)
{
    const struct fmt_trace_record *c = rec(b, i), *m = i + 1 < b->t->n_recs ? rec(b, i + 1) : NULL;
    if (!m || m->kind != FMT_TRACE_MEMORY)
        return rerr(b, c->line, "CONSTANT '%s' is not followed by its MEMORY record", nm(b, c->name));
    if (m->name != c->name)
        return rerr(b, m->line, "MEMORY for '%s' follows CONSTANT '%s'", nm(b, m->name), nm(b, c->name));
    uint32_t v = sim_program_constant(b->p, (uint64_t)m->value, c->line);
    if (v == UINT32_MAX || values_reserve(b, v + 1))
        return rerr(b, c->line, "out of memory");
    bind(b, c->name, v);
    b->refs[v] = 1;
    b->storage_bytes[v] = (uint64_t)m->value;
    b->pos = i + 2;
    return 0;
}

/* The MEMORY and ALIAS records of result k of the CALL at i. */
static int call_result(struct builder *b, uint32_t i, uint32_t k, uint32_t n_in, uint64_t *bytes, int32_t *alias)
{
    const struct fmt_trace_record *c = rec(b, i);
    uint32_t rn = b->t->ids[c->res_at + k], mi = i + 1 + 2 * k, ai = mi + 1;
    const char *op = nm(b, c->name);
    if (b->value[rn] != UNBOUND)
        return rerr(b, c->line, "CALL %s: result '%s' is already defined", op, nm(b, rn));
    if (ai >= b->t->n_recs || rec(b, mi)->kind != FMT_TRACE_MEMORY || rec(b, ai)->kind != FMT_TRACE_ALIAS)
        return rerr(b, c->line, "CALL %s: result '%s' is not followed by MEMORY and ALIAS records", op, nm(b, rn));
    const struct fmt_trace_record *m = rec(b, mi), *a = rec(b, ai);
    if (m->name != rn || a->name != rn)
        return rerr(b, m->name != rn ? m->line : a->line,
                    "MEMORY/ALIAS for '%s' where '%s' (result %u of %s) was expected",
                    nm(b, m->name != rn ? m->name : a->name), nm(b, rn), k, op);
    if (a->value >= (int64_t)n_in)
        return rerr(b, a->line, "ALIAS of '%s' is not -1 or an argument index below %u", nm(b, rn), n_in);
    alias[k] = (int32_t)a->value;
    bytes[k] = a->value >= 0 ? 0 : (uint64_t)m->value;   /* a view has no bytes of its own */
    return 0;
}

static int do_call(struct builder *b, uint32_t i)
{
    const struct fmt_trace_record *c = rec(b, i);
    const char *op = nm(b, c->name);
    uint32_t n_in = c->n_args, n_out = c->n_res, line = c->line;
    if (!n_out)
        return rerr(b, line, "CALL %s has no RESULT", op);
    uint32_t *in = malloc((n_in + 1) * sizeof *in);
    uint64_t *bytes = malloc(n_out * sizeof *bytes);
    int32_t *alias = malloc(n_out * sizeof *alias);
    int rc = -1;
    if (!in || !bytes || !alias) {
        rerr(b, line, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n_in; k++)
        if (lookup(b, line, op, b->t->ids[c->args_at + k], &in[k]))
            goto out;
    for (uint32_t k = 0; k < n_out; k++)
        if (call_result(b, i, k, n_in, bytes, alias))
            goto out;
    /* IN_PLACE (dtrexec's runtime): the arguments change before the call */
    for (uint32_t k = 0; k < c->n_in_place; k++)
        if (sim_program_ref(b->p, SIM_STEP_MUTATE, in[b->t->ids[c->in_place_at + k]], line)) {
            rerr(b, line, "out of memory");
            goto out;
        }
    uint32_t v = sim_program_call(b->p, in, n_in, bytes, alias, n_out, c->time, line);
    if (v == UINT32_MAX || values_reserve(b, v + n_out)) {
        rerr(b, line, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n_out; k++) {
        b->refs[v + k] = 1;
        b->storage_bytes[v + k] = alias[k] >= 0 ? b->storage_bytes[in[alias[k]]] : bytes[k];
        bind(b, b->t->ids[c->res_at + k], v + k);
    }
    b->pos = i + 1 + 2 * n_out;
    rc = 0;
out:
    free(in);
    free(bytes);
    free(alias);
    return rc;
}

static int do_mutate(struct builder *b, uint32_t i)
{
    const struct fmt_trace_record *c = rec(b, i);
    const char *op = nm(b, c->name);
    uint32_t n_in = c->n_args, n_out = c->n_res, line = c->line;
    const uint32_t *args = b->t->ids + c->args_at, *idx = b->t->ids + c->res_at;
    uint32_t *in = malloc((n_in + 1) * sizeof *in);
    uint64_t *bytes = malloc(n_out * sizeof *bytes);
    int rc = -1;
    if (!in || !bytes) {
        rerr(b, line, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n_in; k++)
        if (lookup(b, line, op, args[k], &in[k]))
            goto out;
    for (uint32_t k = 0; k < n_out; k++) {
        if (idx[k] >= n_in) {
            rerr(b, line, "MUTATE %s: MUTATE[%u] is not an argument index below %u", op, k, n_in);
            goto out;
        }
        bytes[k] = b->storage_bytes[in[idx[k]]];
    }
    uint32_t v = sim_program_call(b->p, in, n_in, bytes, NULL, n_out, c->time, line);
    if (v == UINT32_MAX || values_reserve(b, v + n_out)) {
        rerr(b, line, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n_out; k++) {
        uint32_t name = args[idx[k]], old = b->value[name];
        b->refs[v + k] = 1;
        b->storage_bytes[v + k] = bytes[k];
        bind(b, name, v + k);
        if (b->refs[old] <= 0) {
            rerr(b, line, "MUTATE %s: '%s' has no references left", op, nm(b, name));
            goto out;
        }
        b->refs[old]--;
        if (sim_program_ref(b->p, SIM_STEP_RELEASE, old, line)) {
            rerr(b, line, "out of memory");
            goto out;
        }
    }
    b->pos = i + 1;
    rc = 0;
out:
    free(in);
    free(bytes);
    return rc;
}

static int do_copy(struct builder *b, const struct fmt_trace_record *c)
{
    const char *kind = c->kind == FMT_TRACE_COPY ? "COPY" : "COPY_FROM";
    uint32_t sv = 0, dv = 0, line = c->line;   /* set by lookup() */
    if (lookup(b, line, kind, c->src, &sv))
        return -1;
    if (c->kind == FMT_TRACE_COPY) {
        if (b->value[c->name] != UNBOUND)
            return rerr(b, line, "COPY to '%s', which is already defined", nm(b, c->name));
    } else {
        if (lookup(b, line, kind, c->name, &dv))
            return -1;
        if (b->refs[dv] <= 0)
            return rerr(b, line, "COPY_FROM: '%s' has no references left", nm(b, c->name));
        b->refs[dv]--;
        if (sim_program_ref(b->p, SIM_STEP_RELEASE, dv, line))
            return rerr(b, line, "out of memory");
    }
    if (b->refs[sv] <= 0)
        return rerr(b, line, "%s from '%s', which has no references left", kind, nm(b, c->src));
    bind(b, c->name, sv);
    if (sim_program_ref(b->p, SIM_STEP_RETAIN, sv, line))
        return rerr(b, line, "out of memory");
    b->refs[sv]++;
    return 0;
}

static int do_release(struct builder *b, const struct fmt_trace_record *c)
{
    uint32_t v = b->value[c->name];
    if (v == UNBOUND) {
        b->p->ignored_releases++;   /* defined before START: simrd ignores these too */
        return 0;
    }
    if (b->refs[v] <= 0)
        return rerr(b, c->line, "RELEASE of '%s', which has no references left", nm(b, c->name));
    b->refs[v]--;
    return sim_program_ref(b->p, SIM_STEP_RELEASE, v, c->line) ? rerr(b, c->line, "out of memory") : 0;
}

static int step(struct builder *b)
{
    uint32_t i = b->pos;
    const struct fmt_trace_record *c = rec(b, i);
    switch (c->kind) {
    case FMT_TRACE_CONSTANT: return do_constant(b, i);
    case FMT_TRACE_CALL: return do_call(b, i);
    case FMT_TRACE_MUTATE: return do_mutate(b, i);
    default: break;
    }
    b->pos = i + 1;
    switch (c->kind) {
    case FMT_TRACE_COPY:
    case FMT_TRACE_COPY_FROM: return do_copy(b, c);
    case FMT_TRACE_RELEASE: return do_release(b, c);
    case FMT_TRACE_ANNOTATE: return 0;
    default:
        return rerr(b, c->line, "%s record that follows no CONSTANT or CALL", fmt_trace_kind_name(c->kind));
    }
}

int sim_program_from_trace(const struct fmt_trace *t, const char *path, struct sim_program *p, char *err,
                           size_t err_size)
{
    memset(p, 0, sizeof *p);
    struct builder b = { .path = path, .t = t, .p = p, .err = err, .err_size = err_size };
    uint32_t last = t->n_recs ? t->recs[t->n_recs - 1].line : 0;
    int rc = 0;
    b.value = malloc((t->n_names + 1) * sizeof *b.value);
    b.bound = malloc((t->n_names + 1) * sizeof *b.bound);
    if (!b.value || !b.bound)
        rc = rerr(&b, 0, "out of memory");
    for (uint32_t k = 0; !rc && k < t->n_names; k++)
        b.value[k] = UNBOUND;
    if (!rc && !t->n_recs)
        rc = rerr(&b, 1, "empty log");
    /* replay from just after ANNOTATE START, when there is one */
    for (uint32_t i = 0; !rc && i < t->n_recs; i++)
        if (t->recs[i].kind == FMT_TRACE_ANNOTATE && !strcmp(fmt_trace_name(t, t->recs[i].name), "START")) {
            b.pos = i + 1;
            break;
        }
    while (!rc && b.pos < t->n_recs)
        rc = step(&b);
    /* what the program still holds at the end is its output */
    for (uint32_t k = 0; !rc && k < b.n_bound; k++) {
        uint32_t v = b.value[b.bound[k]];
        if (b.refs[v] > 0 && sim_program_ref(p, SIM_STEP_PIN, v, last))
            rc = rerr(&b, 0, "out of memory");
    }
    if (!rc && !p->n_calls)
        rc = rerr(&b, last, "no CALL records to replay");
    if (!rc) {
        const char *base = strrchr(path, '/');
        if (!(p->name = strdup(base ? base + 1 : path)))
            rc = rerr(&b, 0, "out of memory");
    }
    free(b.value);
    free(b.bound);
    free(b.refs);
    free(b.storage_bytes);
    if (rc)
        sim_program_free(p);
    return rc;
}

int sim_program_load_trace(const char *path, struct sim_program *p, char *err, size_t err_size)
{
    struct fmt_trace t;
    memset(p, 0, sizeof *p);
    if (fmt_trace_read(path, &t, err, err_size))
        return -1;
    int rc = sim_program_from_trace(&t, path, p, err, err_size);
    fmt_trace_free(&t);
    return rc;
}
