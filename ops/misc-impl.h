/* ops/misc-impl.h — what the CPU files of issue 18's operators
 * (ops/mean_max.c, depth_space.c, eye_nonzero.c, along_axis.c) share with
 * their CUDA kernels in ops/cuda/misc.c: the plans both backends run, so
 * that the two compute the same thing from the same shapes and parameters.
 * Not part of the ops/ interface. */
#ifndef DTRX_OPS_MISC_IMPL_H
#define DTRX_OPS_MISC_IMPL_H

#include <stdint.h>

#include "ops/ops.h"
#include "ops/shape-params.h"

/* GlobalMaxPool (ops/mean_max.c) as the ReduceMax-18 call *r over the
 * spatial axes of c's input: r is c with op_reduce_max's def, and inputs
 * in[0] = X, in[1] = axes, a host int64 tensor over axes_data (room for
 * TENSOR_MAX_RANK). The caller's arrays must outlive r; 0 or -1 (op_error). */
int misc_global_max_pool_call(const struct op_call *c, struct op_call *r, struct tensor *axes,
                            int64_t *axes_data, const struct tensor **in);

/* EyeLike's ones (ops/eye_nonzero.c): elements start + i * step of the
 * output for i < count, each holding the bits *one (the dtype's 1). */
int misc_eye_like_diagonal(const struct op_call *c, int64_t *start, int64_t *step, int64_t *count,
                         uint64_t *one);
/* NonZero's indices of host tensor x into out ([rank, count] int64). */
void misc_nonzero_fill(const struct tensor *x, int64_t count, int64_t *out);

/* DepthToSpace / SpaceToDepth (ops/depth_space.c) as one strided copy:
 * the contiguous output is the rank-6 array dims[0..6), and its element at
 * index i is the input's at sum_k i_k * strides[k]. */
void misc_depth_space_plan(const struct op_call *c, int64_t *dims, int64_t *strides);

/* The lines of an along-axis op (ops/along_axis.c): element k of line
 * (o, i) is at (o * n + k) * inner + i of the input (and output). The axis
 * comes from the parameters or, for CumProd / CumProdGrad, from the host
 * input; 0, or -1 after op_error. */
struct misc_axis_geom {
    int64_t outer, n, inner;
};
int misc_axis_geom(const struct op_call *c, struct misc_axis_geom *g);

/* Compress (ops/select_axis.c) as the Gather call m->call: the input (seen
 * flattened without an axis) and the true entries of the condition as host
 * int64 indices in m->idx_data, which the caller frees (after the call has
 * run). 0, or -1 after op_error. */
struct misc_compress {
    struct op_call call;
    struct tensor x, idx;
    const struct tensor *in[2];
    struct gather_params params;
    int64_t *idx_data;
};
int misc_compress_call(const struct op_call *c, struct misc_compress *m);

/* ReverseSequence (ops/select_axis.c) sees its input as [d0, d1, inner]:
 * axes 0 and 1 (batch and time in either order) and the rest. */
void misc_reverse_sequence_geom(const struct op_call *c, int64_t *d0, int64_t *d1, int64_t *inner);

/* LRN and LRNGrad (ops/local_norm.c) see X (their last input) as
 * [n, ch, inner]: the window runs along ch. */
void misc_lrn_geom(const struct op_call *c, int64_t *n, int64_t *ch, int64_t *inner);

/* MeanVarianceNormalization's groups (ops/local_norm.c): `groups` of
 * `count` elements; element r of group g lies at the offset of g's index
 * over the kept axes plus r's over the reduced ones (row-major each). */
struct misc_groups {
    int n_kept, n_red;
    int64_t groups, count;
    int64_t kept_dims[TENSOR_MAX_RANK], kept_st[TENSOR_MAX_RANK];
    int64_t red_dims[TENSOR_MAX_RANK], red_st[TENSOR_MAX_RANK];
};
int misc_mvn_groups(const struct op_call *c, struct misc_groups *g);

/* Upsample (ops/upsample.c) as the Resize-10 call u->call: X and the
 * scales (input 1, or the attribute's values as a host float tensor). */
struct misc_upsample {
    struct op_call call;
    struct tensor scales;
    const struct tensor *in[2];
};
int misc_upsample_call(const struct op_call *c, struct misc_upsample *u);

/* AffineGrid's geometry (ops/affine_grid.c) from the host input size: r
 * spatial axes (2 or 3) of extents dims (D, H, W order), `points` of them
 * per batch entry, and per axis the coordinate of index i, start + i * step. */
struct misc_affine {
    int r;
    int64_t n, points;
    int64_t dims[3];
    double start[3], step[3];
};
int misc_affine_geom(const struct op_call *c, struct misc_affine *a);

/* GridSample's geometry (ops/grid_sample.c, ops/grid_sample-impl.h) from
 * the call's X and grid (inputs 0, 1; of GridSampleGrad 1, 2), checked. */
struct gs_geom;
int misc_grid_sample_geom(const struct op_call *c, struct gs_geom *g);

#endif
