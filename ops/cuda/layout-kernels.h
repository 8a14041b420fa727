/* ops/cuda/layout-kernels.h — the launchers of the data-movement kernels
 * (ops/cuda/layout_kernels.cu) and of the recurrent layers' gate kernels
 * (ops/cuda/rnn_kernels.cu), callable from the plain C host code in
 * ops/cuda/layout.c, gather.c, resize.c and rnn.c.
 *
 * Every launcher queues work on `stream` and returns the launch status; none
 * allocates or synchronises. Sizes are int64 and the kernels loop over grid
 * strides, so any element count fits. Movement kernels copy elements of
 * `unit` bytes (1, 2, 4, 8 or 16): one kernel serves every dtype, and
 * contiguous runs may be moved in wider units than the element. The
 * gradient scatters (Gather, GatherElements, Pad, Resize) run one thread per
 * destination that adds its sources in the CPU kernel's order: no float
 * atomics, so a recomputation gives the same bits (and the CPU's bits).
 * Not for use outside ops/cuda/. */
#ifndef DTRX_OPS_CUDA_LAYOUT_KERNELS_H
#define DTRX_OPS_CUDA_LAYOUT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ops/rnn-impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Axes of a strided copy: Tile views its output as (repeat, dim) pairs. */
#define LAYOUT_MAX_AXES 16

/* dst[sum_a i_a * dst_strides[a]] = src[sum_a i_a * src_strides[a]] over
 * every index of dims; strides in units, possibly 0 or negative (src). */
struct layout_copy {
    int rank;
    int64_t dims[LAYOUT_MAX_AXES];
    int64_t src_strides[LAYOUT_MAX_AXES];
    int64_t dst_strides[LAYOUT_MAX_AXES];
};

cudaError_t layout_copy_launch(void *dst, const void *src, size_t unit, const struct layout_copy *cp,
                               cudaStream_t stream);

/* dst (contiguous) [batch..., I, J] = src with the two innermost axes
 * swapped: element (b, i, j) is read at src_off(b) + i + j * sj, where the
 * batch axes are the first `rank - 2` of cp (dims and src strides). Tiled
 * through shared memory so both reads and writes coalesce. */
cudaError_t layout_transpose_launch(void *dst, const void *src, size_t unit, const struct layout_copy *cp,
                                    cudaStream_t stream);

/* n copies of the `unit`-byte value at `value` (host memory, read at launch). */
cudaError_t layout_fill_launch(void *dst, int64_t n, const void *value, size_t unit, cudaStream_t stream);

/* dst[i] = start + i * delta for the Range dtypes (float, double, int16,
 * int32, int64), computed as the CPU does (no fused multiply-add). */
cudaError_t layout_range_launch(void *dst, int dtype, int64_t n, double start_f, double delta_f,
                                int64_t start_i, int64_t delta_i, cudaStream_t stream);

/* dst[i] = values[i], i < n <= 8 (Shape and Size). */
cudaError_t layout_write_i64_launch(int64_t *dst, int n, const int64_t *values, cudaStream_t stream);

/* ---- index checks ----------------------------------------------------------
 * Kernels that read an index tensor (int32 or int64, negative from the end)
 * check each against the axis size d; the smallest position of an
 * out-of-range index goes to *bad (set to UINT64_MAX beforehand by
 * layout_bad_reset_launch), and the element reads index 0 instead, so that
 * nothing outside the data is touched before the host reports it. */
cudaError_t layout_bad_reset_launch(unsigned long long *bad, cudaStream_t stream);
/* Only the check, over n indices. */
cudaError_t layout_index_check_launch(const void *idx, int idx64, int64_t n, int64_t d, unsigned long long *bad,
                                      cudaStream_t stream);

/* Gather: dst[o, j, k] = src[o, idx[j], k], o < outer, j < n, k < inner
 * units. */
cudaError_t layout_gather_launch(void *dst, const void *src, const void *idx, int idx64, int64_t outer,
                                 int64_t n, int64_t d, int64_t inner, size_t unit, unsigned long long *bad,
                                 cudaStream_t stream);

/* GatherElements over `rank` axes: dst[e] = src at e's coordinates with the
 * axis coordinate replaced by idx[e]; idims are the indices' dims, xstrides
 * the data's element strides. */
cudaError_t layout_gather_elements_launch(void *dst, const void *src, const void *idx, int idx64, int rank,
                                          const int64_t *idims, const int64_t *xstrides, int axis, int64_t d,
                                          size_t unit, unsigned long long *bad, cudaStream_t stream);

/* ---- deterministic scatter-adds by sorting ------------------------------------
 * The sources of each destination are found by a stable radix sort of
 * (destination key, source position) pairs; each destination then sums its
 * run in source order. Scratch: layout_sort_scratch_bytes(n, largest key)
 * bytes (GatherGrad: d - 1; GatherElementsGrad: the output's numel - 1),
 * carved into 256-byte aligned pieces by the launcher. */
size_t layout_sort_scratch_bytes(int64_t n, int64_t max_key);

/* GatherGrad: y [outer, d, inner] = 0, then y[o, idx[j], k] += dy[o, j, k]
 * for j in order. `dbl`: double, else float. */
cudaError_t layout_gather_grad_launch(void *y, const void *dy, const void *idx, int idx64, int64_t outer,
                                      int64_t n, int64_t d, int64_t inner, int dbl, void *scratch,
                                      size_t scratch_bytes, unsigned long long *bad, cudaStream_t stream);

/* GatherElementsGrad: y (ynumel elements, strides ystrides) = 0, then for e
 * in order y[coords(e) with the axis replaced by idx[e]] += dy[e]. */
cudaError_t layout_gather_elements_grad_launch(void *y, int64_t ynumel, const void *dy, const void *idx,
                                               int idx64, int rank, const int64_t *idims,
                                               const int64_t *ystrides, int axis, int64_t d, int dbl,
                                               void *scratch, size_t scratch_bytes, unsigned long long *bad,
                                               cudaStream_t stream);

/* ---- Pad and Resize -----------------------------------------------------------
 * Per-axis tables built on the host and copied to the device: `offs[a]` is
 * where axis a's part of a table starts. */

/* Pad: y[o] = the constant if any axis maps o_a to -1, else
 * x[sum map[offs[a] + o_a] * xs[a]]. */
cudaError_t layout_pad_launch(void *y, const void *x, int rank, const int64_t *ydims, const int64_t *xs,
                              const int64_t *map, const int64_t *offs, const void *cval, size_t unit,
                              cudaStream_t stream);

/* The sources of a separable scatter, per axis a and destination index i:
 * entries csr[cs[a] + i] .. csr[cs[a] + i + 1] - 1 of ent (ascending source
 * positions), each `(o << 2) | mask`: mask bit 0 when o's first tap reads
 * i, bit 1 when its second does. */
struct layout_scatter {
    int rank;
    int64_t tdims[LAYOUT_MAX_AXES];    /* destination dims */
    int64_t sstrides[LAYOUT_MAX_AXES]; /* source (dy) element strides */
    int64_t cs[LAYOUT_MAX_AXES];       /* per axis: start of its CSR offsets */
    int64_t toffs[LAYOUT_MAX_AXES];    /* per axis: start of its taps (Resize) */
    int k;                             /* Resize: blending axes, in corner-bit order */
    int active[LAYOUT_MAX_AXES];
};

/* PadGrad: y[i] = sum of dy over the sources of i, in dy order (mask ignored). */
cudaError_t layout_pad_grad_launch(void *y, const void *dy, int dbl, const struct layout_scatter *s,
                                   const int64_t *csr, const int64_t *ent, cudaStream_t stream);

/* Resize taps as ops/resize.c computes them (struct resize_tap's layout). */
struct layout_tap {
    int64_t i0, i1;
    double w;
};

/* Resize: y[o] = the N-linear blend over the k active axes of x, or x at
 * the first taps when k = 0 (any dtype, by unit). */
cudaError_t layout_resize_launch(void *y, const void *x, int rank, const int64_t *ydims, const int64_t *xs,
                                 const struct layout_tap *taps, const int64_t *offs, int k, const int *active,
                                 int dtype_double, size_t unit, cudaStream_t stream);

/* ResizeGrad: x[i] = sum over dy elements and their corners that read i,
 * weighted, in dy then corner order. */
cudaError_t layout_resize_grad_launch(void *x, const void *dy, int dbl, const struct layout_scatter *s,
                                      const int64_t *csr, const int64_t *ent, const struct layout_tap *taps,
                                      cudaStream_t stream);

/* ---- recurrent layers (ops/cuda/rnn_kernels.cu) ---------------------------------
 * The per-step gate arithmetic of ops/rnn.c, one thread per (batch row,
 * hidden unit); the GEMMs between them are cuBLAS calls made by the host
 * code. Pointers are device memory; `lens` (int32 [batch]) may be NULL. */

/* The step context the gate kernels read (by value). */
struct rnn_dev_step {
    int kind, layout, dirs, dir, reverse, has_clip, input_forget, linear_before_reset;
    float clip;
    int64_t seq, batch, input, hidden;
    struct rnn_act acts[3];
    const int32_t *lens;
    const float *xp, *peep, *rb;
    float *hr, *h, *c, *tmp, *rh;
    float *y;
    /* saved for the backward pass, NULL when not wanted */
    float *gates, *gates_pre, *cells, *hiddens, *gru_rh;
};

cudaError_t rnn_bias_launch(float *bias, const float *wb, const float *rb, int64_t gh, int64_t h, int gru,
                            cudaStream_t stream);
/* xp[i, j] += bias[j] for rows rows. */
cudaError_t rnn_add_bias_launch(float *xp, const float *bias, int64_t rows, int64_t gh, cudaStream_t stream);
/* state [batch, hidden] = the direction's initial state (or 0). */
cudaError_t rnn_state_init_launch(const struct rnn_dev_step *k, const float *init, float *state,
                                  cudaStream_t stream);
/* out (in the op's layout) = state, 0 for length-0 sequences. */
cudaError_t rnn_state_store_launch(const struct rnn_dev_step *k, const float *state, float *out,
                                   cudaStream_t stream);
/* One step s of the forward pass over all batch rows. GRU runs in two
 * halves around its R_h GEMM: stage 0 the z, r gates, stage 1 the update. */
cudaError_t rnn_step_launch(const struct rnn_dev_step *k, int64_t s, int stage, cudaStream_t stream);

/* The backward walk's context (by value), as struct rnn_bptt in ops/rnn.c. */
struct rnn_dev_bptt {
    struct rnn_dev_step f;
    const float *initial_h, *initial_c;
    const float *dy, *dy_h, *dy_c, *zeros;
    float *dg_all, *drh_all, *dgs, *hprev, *hin;
    float *dh, *dc, *tmp, *tmp2, *part, *dp_rows;
};

/* dh, dc from dY_h, dY_c (0 for length-0 sequences). */
cudaError_t rnn_bptt_init_launch(const struct rnn_dev_bptt *k, cudaStream_t stream);
/* One backward step s; GRU in two stages around its R_h GEMM (0: up to the
 * candidate, 1: z and r). */
cudaError_t rnn_bptt_step_launch(const struct rnn_dev_bptt *k, int64_t s, int stage, cudaStream_t stream);
/* dh = tmp (+ GRU's part) for the rows that ran at step s. */
cudaError_t rnn_bptt_carry_launch(const struct rnn_dev_bptt *k, int64_t s, cudaStream_t stream);
/* Biases, initial-state and peephole gradients of one direction, after the walk. */
cudaError_t rnn_bptt_finish_launch(const struct rnn_dev_bptt *k, float *db, float *dinit_h, float *dinit_c,
                                   float *dp, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
