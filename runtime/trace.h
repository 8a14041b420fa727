/* runtime/trace.h — the op log of `--trace` (trace.c): constants,
 * calls (through its call hook) and releases, in the DTR authors' format. */
#ifndef DTRX_RUNTIME_TRACE_H
#define DTRX_RUNTIME_TRACE_H

#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_value;

/* The op log (trace.c). */
enum dtrx_status rt_trace_open(struct dtrx_session *s, const char *path);
void rt_trace_close(struct dtrx_session *s);
void rt_trace_annotate(struct dtrx_session *s, const char *what);
void rt_trace_constant(struct dtrx_session *s, struct rt_value *v);
void rt_trace_release(struct dtrx_session *s, struct rt_value *v);
/* The next update of v (an optimizer step) changes it while the step still
 * holds values computed from it: its CALL record says IN_PLACE. */
void rt_trace_in_place(struct dtrx_session *s, struct rt_value *v);

#endif
