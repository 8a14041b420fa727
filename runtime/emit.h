/* runtime/emit.h — calls the runtime builds itself: loss,
 * gradients, optimizer steps, subgraph instances (emit.c). */
#ifndef DTRX_RUNTIME_EMIT_H
#define DTRX_RUNTIME_EMIT_H

#include "onnx/onnx.h"
#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_call;
struct tensor;

/* Tracks a call made during a step or run: freed with rt_emitted_free (emit.c). */
int rt_track_call(struct dtrx_session *s, struct rt_call *c);
void rt_emitted_free(struct dtrx_session *s);
/* Builds a call of `op` like rt_emit without running it; out[i] >= 0 names
 * an existing value to write, -1 asks for a new one (written back). */
enum dtrx_status rt_emit_build(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs, int n_attrs,
                               int n_in, const int *in, int n_out, int *out, const char *tag,
                               struct rt_call **call);
/* Builds a call of `op` (default domain at the newest opset, else the
 * "dtrexec" domain) from attributes, allocates its outputs as new values and
 * executes it (train.c). */
enum dtrx_status rt_emit(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
                         int n_attrs, int n_in, const int *in, int n_out, int *out, const char *tag);
/* rt_emit with output 0 written over input 0's buffer where the op allows
 * it (def->in_place; else as rt_emit): the caller knows nothing reads input
 * 0 afterwards and that nothing else holds its buffer (memory.overwritable). */
enum dtrx_status rt_emit_in_place(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
                                  int n_attrs, int n_in, const int *in, int n_out, int *out, const char *tag);
int rt_constant(struct dtrx_session *s, const struct tensor *t, const char *tag);
/* Frees a call's parameters, index arrays and synthetic node (emit.c). */
void rt_call_clear(struct rt_call *c);

#endif
