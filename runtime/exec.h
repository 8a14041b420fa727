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

#endif
