/* ops/cuda/attn-kernels.h — the launchers of the attn family's CUDA kernels
 * (ops/cuda/attn_kernels.cu): RotaryEmbedding's rotation, and the parts of
 * Attention and AttentionGrad that are not GEMMs (the host code,
 * ops/cuda/attn.c, runs those on cuBLAS): the key/value cache copies, the
 * masked, soft-capped softmax of the score rows and its gradient.
 *
 * Every launcher queues work on `stream` and returns the launch status; none
 * allocates or synchronises. A score row is one block's, reduced in a fixed
 * shared-memory tree (no warp shuffles, no atomics): results depend on the
 * shapes only, so a recomputation gives the same bits. Plain C types:
 * included by the host .c file and by the .cu file. Not for use outside
 * ops/cuda/. */
#ifndef DTRX_OPS_CUDA_ATTN_KERNELS_H
#define DTRX_OPS_CUDA_ATTN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- rotary embedding ------------------------------------------------------------ */

/* The geometry of ops/nn-impl.h's struct nn_rope_dims, and the caches'
 * rows: `pos` (may be NULL: row b * s + token) indexes cos/sin, rows of
 * rd / 2 values; a position outside [0, npos) gives NaNs (the CPU kernel
 * reports it as an error; the GPU's values are not read back to check). */
struct attn_cuda_rope {
    int64_t b, s, h, d, rd, sb, ss, sh, npos;
    int interleaved;
};
cudaError_t attn_cuda_rope(cudaStream_t stream, const struct attn_cuda_rope *g, const float *x,
                           const float *cos_cache, const float *sin_cache, const int64_t *pos, float *y);

/* ---- attention ---------------------------------------------------------------------- */

/* Strides (elements) per batch, head and position of one operand, as
 * ops/nn-impl.h's struct nn_att_layout. */
struct attn_cuda_layout {
    int64_t sb, sh, ss;
};

/* out [b, h, t, width] (dense) = the `past` rows of `past` (layout lp),
 * then the t - past rows of `cur` (layout lc): present_key/value. */
cudaError_t attn_cuda_concat(cudaStream_t stream, int64_t b, int64_t h, int64_t t, int64_t past,
                             int64_t width, const float *pastv, struct attn_cuda_layout lp, const float *cur,
                             struct attn_cuda_layout lc, float *out);
/* The adjoint: rows of `all` [b, h, t, width] (dense) below `past` to
 * dpast (layout lp), the rest to dcur (layout lc); either may be NULL. */
cudaError_t attn_cuda_split(cudaStream_t stream, int64_t b, int64_t h, int64_t t, int64_t past,
                            int64_t width, const float *all, float *dpast, struct attn_cuda_layout lp,
                            float *dcur, struct attn_cuda_layout lc);

/* What the softmax of the score rows needs (ops/attention.c: att_bias). */
struct attn_cuda_rows {
    int64_t b, hq, sq, t, past;
    int64_t mask_len, m_sb, m_sh, m_ss;  /* mask_len 0: no mask */
    int mask_bool, is_causal, qk_mode;
    int64_t left, right;                 /* -1: unbounded */
    float softcap;                       /* 0: none */
};

/* s [b * hq * sq, t]: scaled scores in, probabilities out, in place;
 * capped (may be NULL) receives the scores after softcap, qk (may be NULL)
 * qk_matmul_output of r->qk_mode. mask: bool bytes or floats (NULL when
 * mask_len is 0); nonpad: b int64 or NULL (values clamped to [0, t]). */
cudaError_t attn_cuda_softmax(cudaStream_t stream, const struct attn_cuda_rows *r, const void *mask,
                              const int64_t *nonpad, float *s, float *capped, float *qk);
/* dp [rows, t] to the gradient of the scaled scores, in place:
 * dS = P * (dP - rowsum(P * dP)), times 1 - (capped / softcap)^2 when
 * softcap > 0. */
cudaError_t attn_cuda_softmax_grad(cudaStream_t stream, int64_t rows, int64_t t, const float *p,
                                   const float *capped, float softcap, float *dp);

#ifdef __cplusplus
}
#endif

#endif
