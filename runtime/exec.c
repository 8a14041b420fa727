/* runtime/exec.c — the one interposition point. Every operator call the
 * runtime makes (forward, loss, backward, optimizer) enters through
 * rt_call_exec(): shape inference, output memory, the kernel and the
 * statistics, with the session's call hooks (a schedule to follow, the
 * export recorder, the op log, the finiteness check) run around it. The
 * session's memory (memory.h) places the outputs and runs the kernel: the
 * plain memory at once, the DTR one through rt_call_kernel() (call.c) — the
 * same closure execution DTR replays when it recomputes an evicted value. */
#include <stdlib.h>
#include <string.h>

#include "runtime/call.h"
#include "runtime/exec.h"
#include "runtime/memory.h"
#include "runtime/session.h"

enum dtrx_status rt_call_exec(struct dtrx_session *s, struct rt_call *c)
{
    struct rt_call_args a = { 0 };
    struct op_call call;
    enum dtrx_status st = rt_call_args_build(s, c, &a, &call);
    if (!st) {
        for (int i = 0; i < c->n_out; i++)
            if (a.out[i]) {
                memset(a.out[i], 0, sizeof *a.out[i]);
                s->values[c->out[i]]->mem.dt = DTR_NONE;
            }
        /* Every hook sees the call before it runs; the first failure stops it. */
        for (int k = 0; k < RT_HOOK_SLOTS; k++)
            if (s->hooks[k] && s->hooks[k]->before) {
                enum dtrx_status hs = s->hooks[k]->before(s, c);
                if (!st)
                    st = hs;
            }
        if (!st)
            st = s->memory->exec(s, c, &call);
    }
    rt_call_args_free(&a);
    if (st)
        return st;
    s->stats.total_compute += c->cost_flops;
    s->stats.op_calls++;
    s->stats.in_place_calls += c->in_place;
    for (int k = 0; k < RT_HOOK_SLOTS; k++)
        if (s->hooks[k] && s->hooks[k]->after)
            s->hooks[k]->after(s, c);
    return DTRX_OK;
}

enum dtrx_status rt_call_computed(struct dtrx_session *s, const struct rt_call *c, int recomputed)
{
    for (int k = 0; k < RT_HOOK_SLOTS; k++)
        if (s->hooks[k] && s->hooks[k]->computed) {
            enum dtrx_status st = s->hooks[k]->computed(s, c, recomputed);
            if (st)
                return st;
        }
    return DTRX_OK;
}
