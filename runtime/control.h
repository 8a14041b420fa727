/* runtime/control.h — control flow, sequences and optionals
 * (control.c). */
#ifndef DTRX_RUNTIME_CONTROL_H
#define DTRX_RUNTIME_CONTROL_H

#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_call;

/* Control flow, sequences and optionals (control.c). */
enum dtrx_status rt_control_exec(struct dtrx_session *s, struct rt_call *c);

#endif
