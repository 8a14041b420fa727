/* runtime/hooks.h — call hooks: what the call executor (exec.c) runs
 * around every operator call, one slot per part that watches calls. */
#ifndef DTRX_RUNTIME_HOOKS_H
#define DTRX_RUNTIME_HOOKS_H

#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_call;

/* Call hooks: what rt_call_exec runs around every operator call besides
 * the call itself. Each part that wants one installs its hook in its slot
 * while it is active (the schedule, the op log, the finiteness check, the
 * export recorder, the recomputation check) and removes it after. `before`
 * runs before the call's memory and kernel (a failure stops the call);
 * `after` once it has run, with its cost and time known; `computed` after
 * each execution of its kernel under DTR — the first and every
 * recomputation, which do not pass through the executor — with its outputs
 * in place (rt_call_computed, exec.c; a failure stops the run). Slots run
 * in this order; any member may be NULL. */
enum rt_hook_slot {
    RT_HOOK_PLAN,                  /* planned.c: the static schedule's frees and recomputations */
    RT_HOOK_TRACE,                 /* trace.c: the op log */
    RT_HOOK_FINITE,                /* finite.c: the first non-finite output after a diverged step */
    RT_HOOK_RECORD,                /* export.c: the graph recorder of `dtrexec export` */
    RT_HOOK_VERIFY,                /* verify.c: --verify-remat, recomputations checked bit for bit */
    RT_HOOK_SLOTS
};
struct rt_call_hook {
    enum dtrx_status (*before)(struct dtrx_session *s, const struct rt_call *c);
    void (*after)(struct dtrx_session *s, const struct rt_call *c);
    enum dtrx_status (*computed)(struct dtrx_session *s, const struct rt_call *c, int recomputed);
};

#endif
