/* runtime/trace.c — the op log of a run (--trace), in the JSON-lines format
 * of the DTR authors' simulator logs, so that `dtrexec sim` replays it:
 * CONSTANT + MEMORY for tensors the program starts with, CALL + MEMORY +
 * ALIAS per result for every operator call, RELEASE when the program drops a
 * value, ANNOTATE START / BACKWARD. Costs (TIME) are the cost model's FLOPs
 * and sizes are the arena's rounded bytes, so a replay under the same budget
 * makes the same decisions. In-place optimizer updates are logged as calls
 * whose result is a view of the parameter (no new memory). */
#include <stdio.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/trace.h"

static void name_value(struct dtrx_session *s, struct rt_value *v)
{
    v->marks.trace_id = ++s->trace_next_id;
}

static void memory_record(struct dtrx_session *s, const struct rt_value *v, size_t bytes)
{
    fprintf(s->trace, "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"%zu\",\"NAME\":\"x%llu\"}\n", bytes,
            (unsigned long long)v->marks.trace_id);
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
        fprintf(s->trace, "{\"ANNOTATION\":\"%s\",\"INSTRUCTION\":\"ANNOTATE\"}\n", what);
}

void rt_trace_constant(struct dtrx_session *s, struct rt_value *v)
{
    if (!s->trace)
        return;
    name_value(s, v);
    fprintf(s->trace, "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x%llu\"}\n", (unsigned long long)v->marks.trace_id);
    memory_record(s, v, arena_rounded(tensor_size_bytes(&v->t)));
}

void rt_trace_release(struct dtrx_session *s, struct rt_value *v)
{
    if (!s->trace || !v->marks.trace_id)
        return;
    fprintf(s->trace, "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x%llu\"}\n", (unsigned long long)v->marks.trace_id);
    v->marks.trace_id = 0;
}

static void args_record(struct dtrx_session *s, const struct rt_call *c)
{
    fprintf(s->trace, "\"ARGS\":[");
    int first = 1;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0) {
            fprintf(s->trace, first ? "\"x%llu\"" : ",\"x%llu\"", (unsigned long long)s->values[c->in[i]]->marks.trace_id);
            first = 0;
        }
    fprintf(s->trace, "]");
}

static void trace_call(struct dtrx_session *s, const struct rt_call *c)
{
    if (!s->trace)
        return;
    unsigned long long cost = (unsigned long long)(c->cost_flops + 0.5);
    fprintf(s->trace, "{");
    args_record(s, c);
    fprintf(s->trace, ",\"INSTRUCTION\":\"CALL\",\"NAME\":\"%s\",\"RESULT\":[", c->def->name);
    if (!c->n_out) {
        /* An in-place update: a view of its first argument. */
        fprintf(s->trace, "\"x%llu\"],\"TIME\":\"%llu\"}\n", (unsigned long long)(s->trace_next_id + 1), cost);
        struct rt_value *param = s->values[c->in[0]];
        param->marks.trace_id = ++s->trace_next_id;
        memory_record(s, param, 0);
        fprintf(s->trace, "{\"ALIAS\":\"0\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x%llu\"}\n",
                (unsigned long long)param->marks.trace_id);
        return;
    }
    int first = 1;
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0) {
            struct rt_value *v = s->values[c->out[i]];
            name_value(s, v);
            fprintf(s->trace, first ? "\"x%llu\"" : ",\"x%llu\"", (unsigned long long)v->marks.trace_id);
            first = 0;
        }
    fprintf(s->trace, "],\"TIME\":\"%llu\"}\n", cost);
    for (int i = 0; i < c->n_out; i++) {
        if (c->out[i] < 0)
            continue;
        struct rt_value *v = s->values[c->out[i]];
        int alias = c->def->alias && i == 0 ? 0 : -1;   /* views are of input 0, always present */
        memory_record(s, v, alias >= 0 ? 0 : arena_rounded(tensor_size_bytes(&v->t)));
        fprintf(s->trace, "{\"ALIAS\":\"%d\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x%llu\"}\n", alias,
                (unsigned long long)v->marks.trace_id);
    }
}
