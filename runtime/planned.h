/* runtime/planned.h — following a static schedule (planned.c). */
#ifndef DTRX_RUNTIME_PLANNED_H
#define DTRX_RUNTIME_PLANNED_H

#include "runtime/dtrexec.h"

struct dtrx_session;

/* Following a static schedule (planned.c; its call hook is installed while
 * s->plan is set). */
struct rt_plan;
enum dtrx_status rt_plan_step_end(struct dtrx_session *s);
void rt_plan_step_begin(struct dtrx_session *s);
void rt_plan_free(struct dtrx_session *s);

#endif
