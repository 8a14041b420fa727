/* ops/shape-impl.h — internals shared by the shape and data-movement family
 * (Reshape, Transpose, Concat/Split, Slice, Gather, Expand/Tile, Pad, Resize,
 * ...), and later by their gradient kernels, which are mostly the same moves
 * run backwards (Slice's gradient is a Pad, Expand's a reduction, Gather's a
 * scatter-add) and so reuse the strided copy and the parsing helpers here.
 *
 * The data-movement kernels are dtype-generic: they move elements by size,
 * never by type, so one kernel serves float, double, ints and bool alike.
 *
 * Not for use outside ops/.
 */
#ifndef DTRX_OPS_SHAPE_IMPL_H
#define DTRX_OPS_SHAPE_IMPL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

/* Tile views its output as (repeat, dim) pairs, so copies see twice the rank. */
#define SHAPE_COPY_MAX_RANK (2 * TENSOR_MAX_RANK)

/* Below this many bytes a copy stays on one thread: forking costs more. */
#define SHAPE_PARALLEL_BYTES (1 << 18)

/* dst (contiguous, row-major over dims) receives src[sum_i idx_i * strides[i]]
 * for every index; strides are in elements and may be zero (broadcast) or
 * negative (reversed slices); src points at the element of index 0. Adjacent
 * axes that are contiguous in src are merged, so rows go by memcpy where the
 * innermost stride is 1 and by a blocked transpose where the two innermost
 * axes are swapped. Defined in ops/transpose.c. */
void shape_copy_strided(void *dst, const void *src, size_t esize, int rank,
                        const int64_t *dims, const int64_t *strides);

/* ---- plans the kernels of every backend share -------------------------------
 * Each reads a call's parameters and host inputs the way its CPU kernel does,
 * so that the CUDA kernels (ops/cuda/) move exactly the same elements. */

/* Transpose: perm[i] = input axis of output axis i (ops/transpose.c). */
int transpose_perm(const struct op_call *c, int *perm);
/* Split: start and length along the axis (of extent d) of output k (ops/concat_split.c). */
int split_piece(const struct op_call *c, int k, int64_t d, int64_t *start, int64_t *len);

/* Slice: per input axis, first element, step and output extent (ops/slice.c). */
struct slice_plan {
    int64_t start[TENSOR_MAX_RANK], step[TENSOR_MAX_RANK], dims[TENSOR_MAX_RANK];
};
int slice_make_plan(const struct op_call *c, struct slice_plan *pl);

/* Pad (ops/pad.c): begin and end pads of every axis; the input index output
 * index o of an axis reads (-1: the constant); the constant as bytes. */
int pad_amounts(const struct op_call *c, int64_t *begin, int64_t *end);
int64_t pad_source(int mode, int64_t o, int64_t begin, int64_t d);
int pad_constant(const struct op_call *c, unsigned char *out, size_t esize);

/* Resize (ops/resize.c): output extent and scale of every axis, and per
 * output index of an axis the two source indices and the weight of the
 * second (nearest: both the same, weight 0). */
struct resize_params;
struct resize_plan {
    int64_t out[TENSOR_MAX_RANK];
    double scale[TENSOR_MAX_RANK];
    double roi[2 * TENSOR_MAX_RANK];   /* tf_crop_and_resize: starts, then ends (0 and 1 without one) */
};
struct resize_tap {
    int64_t i0, i1;
    double w;
};
int resize_make_plan(const struct op_call *c, struct resize_plan *pl);
/* The separable path (ops/resize_general.c): y from x along every resized
 * axis in turn; dx (zeroed here) from dy by the transposed passes in the
 * reverse order. scale and roi as in the plan. */
int resize_general_forward(const struct op_call *c, const struct resize_params *p, const double *scale,
                           const double *roi, const struct tensor *x, struct tensor *y);
int resize_general_backward(const struct op_call *c, const struct resize_params *p, const double *scale,
                            const double *roi, const struct tensor *dy, struct tensor *dx);
void resize_taps(const struct resize_params *p, double scale, int64_t in, int64_t out,
                 struct resize_tap *taps);

/* The selection and prefix ops (ops/topk.c, ops/cumsum_trilu.c,
 * ops/onehot.c): ArgMax/ArgMin's normalized axis (-1 after op_error());
 * TopK's axis and k (host input K or the opset-1 attribute); CumSum's axis
 * (host input 1); Trilu's diagonal offset (host input 1, default 0);
 * OneHot's output axis and depth (host input 1). 0 or -1 after op_error(). */
int arg_plan(const struct op_call *c);
int topk_plan(const struct op_call *c, int *axis, int64_t *k);
int cumsum_plan(const struct op_call *c, int *axis);
int trilu_plan(const struct op_call *c, int64_t *k);
int onehot_plan(const struct op_call *c, int *axis, int64_t *depth);

/* Row-major element strides of a tensor. */
static inline void shape_strides(const struct tensor *t, int64_t *strides)
{
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= t->dims[i];
    }
}

/* Product of dims[from..to). */
static inline int64_t shape_prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= dims[i];
    return p;
}

/* A parse-time message. The caller of parse (runtime/plan.c) prefixes it with
 * "node '<name>' (<op>): ", so only the problem is written here; `node` is
 * kept for symmetry with op_error() and for callers that want it. */
static inline int shape_parse_error(char *err, size_t err_size, const struct onnx_node *node,
                                    const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline int shape_parse_error(char *err, size_t err_size, const struct onnx_node *node,
                                    const char *fmt, ...)
{
    (void)node;
    if (!err || !err_size)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* Checks that a host-side index tensor (`what` names it in messages) is 1-D
 * (or a scalar) of an integer type with at most `max` elements and copies it
 * into out; returns the count, or -1 after op_error(). */
static inline int shape_read_ints(const struct op_call *c, const struct tensor *t,
                                  const char *what, int64_t *out, int max)
{
    if (t->dtype != ONNX_DTYPE_INT64 && t->dtype != ONNX_DTYPE_INT32)
        return op_error(c, "input '%s' must be int64 or int32, got %s", what,
                        onnx_dtype_name(t->dtype));
    if (t->rank > 1)
        return op_error(c, "input '%s' must be 1-D, got rank %d", what, t->rank);
    int64_t n = tensor_numel(t);
    if (n > max)
        return op_error(c, "input '%s' has %lld values, at most %d are allowed", what,
                        (long long)n, max);
    if (n > 0 && !t->data)
        return op_error(c, "input '%s' has no host data", what);
    for (int64_t i = 0; i < n; i++)
        out[i] = tensor_get_int(t, i);
    return (int)n;
}

/* Normalises an axes list against rank, rejecting out-of-range and repeated
 * axes; -1 after op_error(). */
static inline int shape_normalize_axes(const struct op_call *c, int64_t *axes, int n, int rank)
{
    for (int i = 0; i < n; i++) {
        int a = op_axis(axes[i], rank);
        if (a < 0)
            return op_error(c, "axis %lld is out of range for rank %d", (long long)axes[i], rank);
        for (int j = 0; j < i; j++)
            if (axes[j] == a)
                return op_error(c, "axis %lld appears twice", (long long)axes[i]);
        axes[i] = a;
    }
    return 0;
}

/* Cost of a pure view: nothing is computed and nothing moves. */
static inline struct op_cost shape_cost_view(const struct op_call *c)
{
    (void)c;
    return (struct op_cost){ 0, 0 };
}

/* ---- gradients --------------------------------------------------------------
 * Emitters of the family build their calls from these. Attribute arrays may
 * live on the emitter's stack: the emitted op's parse() copies them. */

static inline struct onnx_attr shape_attr_int(const char *name, int64_t v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INT, .i = v };
}

static inline struct onnx_attr shape_attr_ints(const char *name, int n, const int64_t *v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INTS, .n = n,
                               .ints = (int64_t *)v };
}

/* A dims list as a 1-D int64 constant handle (-1 on failure). */
static inline int shape_grad_dims_const(struct grad_ctx *g, const struct tensor *t)
{
    int64_t dims[TENSOR_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        dims[i] = t->dims[i];
    return grad_const_i64(g, t->rank, dims);
}

/* Reshape(h) to target's dims into *out; h itself when the dims already match
 * (no call, no copy). */
static inline int shape_grad_reshape(struct grad_ctx *g, int h, const struct tensor *target, int *out)
{
    const struct tensor *ht = g->shape(g, h);
    if (!ht)
        return grad_error(g, "no shape for handle %d", h);
    if (tensor_same_shape(ht, target)) {
        *out = h;
        return 0;
    }
    int shape_h = shape_grad_dims_const(g, target);
    if (shape_h < 0)
        return -1;
    int in[2] = { h, shape_h };
    return g->emit(g, "Reshape", NULL, 0, 2, in, 1, out);
}

/* A zero constant of target's dtype and dims (-1 on failure). Only for the
 * rare missing output gradient: it is host memory copied into the arena. */
static inline int shape_grad_zeros(struct grad_ctx *g, const struct tensor *target)
{
    struct tensor z = *target;
    size_t bytes = tensor_size_bytes(&z);
    z.data = calloc(1, bytes ? bytes : 1);
    if (!z.data)
        return grad_error(g, "out of host memory for %zu zero bytes", bytes);
    int h = g->constant(g, &z);
    free(z.data);
    return h;
}

/* The message a forward-call helper (slice plan, pad amounts, ...) left in
 * the forward call's error buffer, as a gradient error. */
static inline int shape_grad_fwd_error(struct grad_ctx *g)
{
    const struct op_env *env = g->fwd->env;
    return grad_error(g, "%s", env && env->err && env->err[0] ? env->err : "bad forward call");
}

/* Parse helper of the gradient kernels: the `shape` attribute (dims of the
 * forward input the kernel's output stands for) into t (rank, dims; dtype
 * left 0); -1 after a message. */
static inline int shape_parse_target(const struct onnx_node *node, struct tensor *t, char *err,
                                     size_t err_size)
{
    memset(t, 0, sizeof *t);
    int n = onnx_node_attr_ints(node, "shape", t->dims, TENSOR_MAX_RANK);
    if (n < 0)
        return shape_parse_error(err, err_size, node,
                                 "the shape attribute (at most %d dims) is required", TENSOR_MAX_RANK);
    for (int i = 0; i < n; i++)
        if (t->dims[i] < 0)
            return shape_parse_error(err, err_size, node, "shape[%d] is %lld; expected >= 0", i,
                                     (long long)t->dims[i]);
    t->rank = n;
    return 0;
}

#endif
