/* runtime/run.h — one call of a forward pass (run.c) and the
 * training tape. */
#ifndef DTRX_RUNTIME_RUN_H
#define DTRX_RUNTIME_RUN_H

#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_call;

/* Runs one call of a forward pass (run.c): executes it (or, for runtime
 * ops, the control flow in control.c through s->run_runtime_op), records it
 * on the tape and holds what its gradient reads when training, and releases
 * inputs no longer needed. */
enum dtrx_status rt_run_call(struct dtrx_session *s, struct rt_call *c);
/* Appends a call to the step's tape (training; run.c). */
enum dtrx_status rt_tape_push(struct dtrx_session *s, struct rt_call *c);

#endif
