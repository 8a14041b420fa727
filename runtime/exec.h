/* runtime/exec.h — the call executor (exec.c), the single
 * interposition point every operator call goes through. */
#ifndef DTRX_RUNTIME_EXEC_H
#define DTRX_RUNTIME_EXEC_H

#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_call;

/* The one interposition point: every operator call of the runtime — forward,
 * backward, optimizer — runs through here (exec.c). */
enum dtrx_status rt_call_exec(struct dtrx_session *s, struct rt_call *c);
/* Runs the call hooks' `computed` after an execution of c's kernel, its
 * first or a recomputation (recomputed 1): the DTR memory (budget.c) calls
 * it, since recomputations are DTR's replays of the closure, not calls of
 * the executor. The first failure is returned. */
enum dtrx_status rt_call_computed(struct dtrx_session *s, const struct rt_call *c, int recomputed);

#endif
