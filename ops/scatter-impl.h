/* ops/scatter-impl.h — what the scatter family shares (ops/scatter_gather_nd.c:
 * GatherND, ScatterND and the gradient kernels; ops/scatter_elements.c:
 * ScatterElements and Scatter): the reduction attribute, the typed
 * "combine a run of updates into the output" step, and the map from each
 * update element to the data position it lands on, which the forward
 * kernels and ScatterGrad both walk. Not for use outside ops/. */
#ifndef DTRX_OPS_SCATTER_IMPL_H
#define DTRX_OPS_SCATTER_IMPL_H

#include <stdint.h>

#include "ops/ops.h"
#include "ops/shape-params.h"

enum scatter_reduction {
    SCATTER_NONE = 0,
    SCATTER_ADD,
    SCATTER_MUL,
    SCATTER_MAX,
    SCATTER_MIN,
};

/* Parses `reduction` ("none", "add" from opset 16, "mul" 16, "max" 18,
 * "min" 18) and `axis` into a new scatter_params; -1 with a message. */
int scatter_parse_common(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size);

/* dst[i] = combine(dst[i], src[i]) for i < n, elements of `dtype`; NONE
 * copies bytes (any dtype), the others need a numeric dtype. */
void scatter_combine(int reduction, int dtype, void *dst, const void *src, int64_t n);
/* 0 when `dtype` can be combined under `reduction`, else op_error(). */
int scatter_check_dtype(const struct op_call *c, int reduction, int dtype);

/* Index checks shared by both files: int32/int64, and a value against an
 * extent (negative counted from the end); -1 after op_error(). */
int scatter_index_dtype(const struct op_call *c, const struct tensor *idx);
int64_t scatter_read_index(const struct tensor *idx, int64_t i);

/* The data offset (in elements) of every update element, in update order:
 * ScatterND (ops/scatter_gather_nd.c) and ScatterElements along `axis`
 * (ops/scatter_elements.c). pos has numel(updates) entries; -1 after
 * op_error() naming the first bad index. */
int scatter_nd_positions(const struct op_call *c, const struct tensor *data,
                         const struct tensor *idx, const struct tensor *upd, int64_t *pos);
int scatter_elements_positions(const struct op_call *c, int axis, const struct tensor *data,
                               const struct tensor *idx, int64_t *pos);

/* Shape checks of each forward op, shared with ScatterGrad's infer. */
int scatter_nd_check(const struct op_call *c, const struct tensor *data,
                     const struct tensor *idx, const struct tensor *upd);
int scatter_elements_check(const struct op_call *c, int axis, const struct tensor *data,
                           const struct tensor *idx, const struct tensor *upd);

/* The geometry of a GatherND of data by idx (ops/scatter_gather_nd.c): b
 * batch axes, m the tuple length, tuples per batch, elements per slice,
 * elements per batch, data's element strides; -1 after op_error(). */
struct scatter_nd_geom {
    int b, m;
    int64_t batches, per_batch, slice, batch_stride;
    int64_t st[TENSOR_MAX_RANK];
};
int gather_nd_geom(const struct op_call *c, int64_t batch_dims, const struct tensor *data,
                   const struct tensor *idx, struct scatter_nd_geom *g);

/* Emits ScatterGrad for a ScatterND (elements 0) or ScatterElements /
 * Scatter (elements 1) forward call and adds its outputs to dX of data
 * (input 0) and updates (input 2). */
int scatter_grad_emit(struct grad_ctx *g, int elements, int axis, int reduction);

#endif
