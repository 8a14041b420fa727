/* runtime/call.h — the closure execution (call.c): a call's
 * tensor arguments, its kernel, its cost and its seed. What the executor
 * runs once and DTR replays. */
#ifndef DTRX_RUNTIME_CALL_H
#define DTRX_RUNTIME_CALL_H

#include <stdint.h>
#include "ops/ops.h"
#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_call;

/* A byte read or written costs as much as this many FLOPs in the cost
 * model. Without bytes, every memory-bound call looked free to DTR: a
 * Transpose or Concat cost 0 and a Relu one unit per element, against a
 * convolution's thousands, so their outputs were evicted first and their
 * recomputations cost far more time than the model said. Measured on the
 * budget sweep's ResNet-50 and Transformer (one thread, every call of a
 * training step): a least-squares fit of kernel time gives 0.007 ns per
 * FLOP and 0.058 ns per byte (8 FLOPs a byte); normalizations, activations
 * and softmax run slower per byte than that average, and sweeps at 0.45x-0.6x
 * of the peak recompute the least kernel time at 16 (of 0, 8, 16): at 0.5x,
 * ResNet-50's recomputations add 16% (dtr) / 11% (dtr-eq) to the kernel
 * time at 16, 44% / 122% with FLOPs alone; the Transformer's 25% / 23%
 * against 33% / 46%. */
#define RT_COST_FLOPS_PER_BYTE 16

/* The closure execution (call.c). The tensor pointer arrays of a call,
 * inline for the common small case. */
#define CALL_MAX_INLINE_ARGS 16
struct rt_call_args {
    const struct tensor *in_inline[CALL_MAX_INLINE_ARGS];
    struct tensor *out_inline[CALL_MAX_INLINE_ARGS];
    const struct tensor **in;
    struct tensor **out;
};
/* Builds the op_call of c over a's arrays (freed with rt_call_args_free). */
enum dtrx_status rt_call_args_build(struct dtrx_session *s, const struct rt_call *c, struct rt_call_args *a,
                                    struct op_call *call);
void rt_call_args_free(struct rt_call_args *a);
/* Runs c's kernel on the session's backend (nothing for a view). */
enum dtrx_status rt_call_run_kernel(struct dtrx_session *s, const struct rt_call *c, struct op_call *call);
/* Runs the kernel of a call whose inputs and outputs are in place: the
 * closure execution itself, also what DTR replays to recompute. */
enum dtrx_status rt_call_kernel(struct dtrx_session *s, struct rt_call *c);
/* The cost model's cost of a call on its shapes (FLOPs plus bytes moved,
 * in FLOP-equivalents): what DTR and the statistics count. */
double rt_call_cost(const struct rt_call *c, const struct op_call *call);
/* After shape inference: an in-place call keeps writing over input 0 only
 * where output 0 has its dtype and shape (a broadcast Add whose input 0 is
 * the smaller one cannot); otherwise c->in_place is cleared. */
void rt_call_in_place_check(struct rt_call *c, const struct op_call *call);
/* The seed of call `index` in the current step: a different stream per call
 * and per step, the same on recomputation (call.c). */
uint64_t rt_call_seed(const struct dtrx_session *s, uint64_t index);

#endif
