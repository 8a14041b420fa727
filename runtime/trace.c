/* runtime/trace.c — the op log of a run (--trace), in the JSON-lines format
 * of the DTR authors' simulator logs, so that `dtrexec sim` replays it:
 * CONSTANT + MEMORY for tensors the program starts with, CALL + MEMORY +
 * ALIAS per result for every operator call, RELEASE when the program drops a
 * value, ANNOTATE START / BACKWARD. Costs (TIME) are the cost model's FLOPs
 * and sizes are the arena's rounded bytes, so a replay under the same budget
 * makes the same decisions. In-place optimizer updates are logged as calls
 * whose result is a view of the parameter (no new memory). The records are
 * written by the format's own writer (dtr/format/trace.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/format/trace.h"
#include "runtime/arena.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/trace.h"

/* A value's name in the log: "x<id>". */
struct trace_name {
    char text[24];
};

static const char *name_of(struct trace_name *n, unsigned long long id)
{
    snprintf(n->text, sizeof n->text, "x%llu", id);
    return n->text;
}

static void name_value(struct dtrx_session *s, struct rt_value *v)
{
    v->marks.trace_id = ++s->trace_next_id;
}

static void memory_record(struct dtrx_session *s, const struct rt_value *v, size_t bytes)
{
    struct trace_name n;
    fmt_trace_put_memory(s->trace, name_of(&n, v->marks.trace_id), bytes);
}

static void alias_record(struct dtrx_session *s, const struct rt_value *v, int alias)
{
    struct trace_name n;
    fmt_trace_put_alias(s->trace, name_of(&n, v->marks.trace_id), alias);
}

static void trace_call(struct dtrx_session *s, const struct rt_call *c);
/* The op log's call hook: every executed call, after it ran. */
static const struct rt_call_hook trace_hook = { .after = trace_call };

enum dtrx_status rt_trace_open(struct dtrx_session *s, const char *path)
{
    s->trace = fopen(path, "w");
    if (!s->trace)
        return rt_fail(DTRX_ERR_INPUT, "cannot write the trace to '%s'", path);
    s->hooks[RT_HOOK_TRACE] = &trace_hook;
    return DTRX_OK;
}

void rt_trace_close(struct dtrx_session *s)
{
    if (s->trace)
        fclose(s->trace);
    s->trace = NULL;
    s->hooks[RT_HOOK_TRACE] = NULL;
}

void rt_trace_annotate(struct dtrx_session *s, const char *what)
{
    if (s->trace)
        fmt_trace_put_annotate(s->trace, what);
}

void rt_trace_constant(struct dtrx_session *s, struct rt_value *v)
{
    if (!s->trace)
        return;
    name_value(s, v);
    struct trace_name n;
    fmt_trace_put_constant(s->trace, name_of(&n, v->marks.trace_id));
    memory_record(s, v, arena_rounded(tensor_size_bytes(&v->t)));
}

void rt_trace_release(struct dtrx_session *s, struct rt_value *v)
{
    if (!s->trace || !v->marks.trace_id)
        return;
    struct trace_name n;
    fmt_trace_put_release(s->trace, name_of(&n, v->marks.trace_id));
    v->marks.trace_id = 0;
}

/* The CALL record; the names of the results are those already given. */
static void call_record(struct dtrx_session *s, const struct rt_call *c, const unsigned long long *results,
                        int n_results, double cost, int in_place)
{
    int n = c->n_in + n_results;
    struct trace_name stack[16], *names = n <= 16 ? stack : malloc((size_t)n * sizeof *names);
    const char *stack_text[16], **text = n <= 16 ? stack_text : malloc((size_t)n * sizeof *text);
    if (!names || !text) {
        if (names != stack)
            free(names);
        if (text != stack_text)
            free(text);
        return;   /* out of host memory: the log misses this call, the run goes on */
    }
    uint32_t n_args = 0;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0) {
            text[n_args] = name_of(&names[n_args], s->values[c->in[i]]->marks.trace_id);
            n_args++;
        }
    for (int i = 0; i < n_results; i++)
        text[n_args + i] = name_of(&names[n_args + i], results[i]);
    static const uint32_t first[1] = { 0 };
    fmt_trace_put_call_in_place(s->trace, c->def->name, text, n_args, text + n_args, (uint32_t)n_results,
                                first, in_place ? 1 : 0, cost);
    if (names != stack)
        free(names);
    if (text != stack_text)
        free(text);
}

static void trace_call(struct dtrx_session *s, const struct rt_call *c)
{
    if (!s->trace)
        return;
    double cost = (double)(unsigned long long)(c->cost_flops + 0.5);
    if (!c->n_out) {
        /* An in-place update: a view of its first argument. */
        unsigned long long view = s->trace_next_id + 1;
        struct rt_value *param = s->values[c->in[0]];
        call_record(s, c, &view, 1, cost, param->marks.in_place);
        param->marks.in_place = 0;
        param->marks.trace_id = ++s->trace_next_id;
        memory_record(s, param, 0);
        alias_record(s, param, 0);
        return;
    }
    unsigned long long stack_ids[16], *ids = c->n_out <= 16 ? stack_ids : malloc((size_t)c->n_out * sizeof *ids);
    if (!ids)
        return;
    int n_results = 0;
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0) {
            struct rt_value *v = s->values[c->out[i]];
            name_value(s, v);
            ids[n_results++] = v->marks.trace_id;
        }
    call_record(s, c, ids, n_results, cost, 0);
    if (ids != stack_ids)
        free(ids);
    for (int i = 0; i < c->n_out; i++) {
        if (c->out[i] < 0)
            continue;
        struct rt_value *v = s->values[c->out[i]];
        /* views and in-place calls share input 0's storage, always present */
        int alias = (c->def->alias || c->in_place) && i == 0 ? 0 : -1;
        memory_record(s, v, alias >= 0 ? 0 : arena_rounded(tensor_size_bytes(&v->t)));
        alias_record(s, v, alias);
    }
}

void rt_trace_in_place(struct dtrx_session *s, struct rt_value *v)
{
    if (s->trace)
        v->marks.in_place = 1;
}
