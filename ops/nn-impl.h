/* ops/nn-impl.h — internals shared by the nn family (conv, conv_transpose,
 * gemm/matmul, pooling, batch/layer normalization) and, later, by their
 * gradient kernels (ConvGradData/ConvGradWeight, MaxPoolGrad, BatchNormGrad,
 * LayerNormGrad), which sit beside the forward kernels and reuse the same
 * window geometry, attribute parsing and compute helpers.
 *
 * Spatial geometry is always held as 3-D (D, H, W): a 1-D or 2-D op gets
 * leading unit dimensions (size 1, kernel 1, stride 1, no padding), so that
 * one loop nest serves every rank; `nsp` remembers the model's own rank for
 * shapes and for oneDNN descriptors.
 *
 * Not for use outside ops/.
 */
#ifndef DTRX_OPS_NN_IMPL_H
#define DTRX_OPS_NN_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "ops/ops.h"

#define NN_MAX_SPATIAL 3

enum nn_auto_pad {
    NN_AUTO_PAD_NOTSET = 0,
    NN_AUTO_PAD_SAME_UPPER,
    NN_AUTO_PAD_SAME_LOWER,
    NN_AUTO_PAD_VALID,
};

/* Window attributes as written on the node (model rank, not padded to 3-D).
 * Entries that the node leaves out are 0 (kernel_shape) or defaults. */
struct nn_window_attrs {
    int auto_pad;                      /* enum nn_auto_pad */
    int n_kernel;                      /* entries in kernel (0: from the weights) */
    int64_t kernel[NN_MAX_SPATIAL];
    int n_strides, n_dilations, n_pads;
    int64_t strides[NN_MAX_SPATIAL];
    int64_t dilations[NN_MAX_SPATIAL];
    int64_t pads[2 * NN_MAX_SPATIAL];  /* begins then ends, as in ONNX */
    int ceil_mode;
};

/* Resolved geometry of one call, padded to 3-D. */
struct nn_geom {
    int64_t nsp;                       /* the op's own spatial rank, 1..3 (int64: no
                                        * padding bytes, the struct is hashed as a key) */
    int64_t n, c, m, group;            /* batch, input channels, output channels, groups */
    int64_t in[3], k[3], out[3];
    int64_t stride[3], dil[3], pad_lo[3], pad_hi[3];
};

static inline int64_t nn_geom_in_size(const struct nn_geom *g)
{
    return g->in[0] * g->in[1] * g->in[2];
}

static inline int64_t nn_geom_out_size(const struct nn_geom *g)
{
    return g->out[0] * g->out[1] * g->out[2];
}

static inline int64_t nn_geom_k_size(const struct nn_geom *g)
{
    return g->k[0] * g->k[1] * g->k[2];
}

/* Every axis to the identity window (size, kernel, stride, dilation 1, no
 * padding): what the leading axes of a 1-D or 2-D op keep. */
static inline void nn_geom_reset_window(struct nn_geom *g)
{
    for (int j = 0; j < 3; j++) {
        g->in[j] = g->k[j] = g->out[j] = g->stride[j] = g->dil[j] = 1;
        g->pad_lo[j] = g->pad_hi[j] = 0;
    }
}

/* Weight taps of one output channel, W's dims 1..rank-1 (C/group * kernel):
 * the multiply-adds each convolution output element (each transposed
 * convolution input element) costs. */
static inline double nn_weight_taps(const struct tensor *w)
{
    double per = 1.0;
    for (int i = 1; i < w->rank; i++)
        per *= (double)w->dims[i];
    return per;
}

/* ---- attribute parsing and geometry (conv.c) ---------------------------- */

/* Reads auto_pad, kernel_shape, strides, dilations, pads and ceil_mode.
 * Returns -1 with a message naming the node and attribute on bad values. */
int nn_window_attrs_parse(const struct onnx_node *node, struct nn_window_attrs *a,
                          char *err, size_t err_size);

/* Fills g->in/k/stride/dil/pad/out from the input's spatial dims (x dims
 * 2..rank-1) and the kernel's spatial size (SAME padding uses the dilated
 * kernel). `is_pool` selects pooling's output rule: ceil_mode, dropping a
 * last window that would start in the end padding.
 * Returns -1 with a message in c's error buffer on inconsistent attributes. */
int nn_geom_resolve(const struct op_call *c, const struct nn_window_attrs *a,
                    const struct tensor *x, const int64_t *kernel_spatial,
                    int is_pool, struct nn_geom *g);

/* The checked geometry of one call of an operator, as its CPU kernel
 * resolves it (for the kernels of other backends): Conv (conv.c); the
 * ConvGradData/ConvGradWeight calls from X's, W's and dY's shapes (conv.c);
 * ConvTranspose, whose g->in is its output and g->out its input
 * (conv_transpose.c); MaxPool/AveragePool and their gradients (pool.c). */
int nn_conv_geom(const struct op_call *c, struct nn_geom *g);
int nn_conv_grad_geom(const struct op_call *c, const struct tensor *x, const struct tensor *w,
                      const struct tensor *dy, struct nn_geom *g);
int nn_conv_transpose_geom(const struct op_call *c, struct nn_geom *g);
int nn_pool_geom(const struct op_call *c, struct nn_geom *g);
int nn_pool_grad_geom(const struct op_call *c, struct nn_geom *g);

/* LinearAttention's checked geometry (linear_attention.c), from its six
 * inputs (query, key, value, past_state, decay, beta; NULL where omitted)
 * and c->params (struct linear_attention_params): 0, or -1 with op_error. */
struct la_geom {
    int64_t b, t, hq, hkv, dk, dv;
    int gated, delta;
    int decay_per_key;                 /* decay (B, T, Hkv*dk), else (B, T, Hkv) */
    int beta_shared;                   /* beta (B, T, 1), else (B, T, Hkv) */
    float scale;                       /* resolved: 1/sqrt(dk) by default */
};
int la_geom_check(const struct op_call *c, const struct tensor *const *in, struct la_geom *g);

/* Scratch helpers: memory that counts against the budget; NULL when none. */
static inline void *nn_scratch_alloc(const struct op_call *c, size_t bytes)
{
    if (!c->env || !c->env->scratch_alloc)
        return NULL;
    void *p = c->env->scratch_alloc(c->env->ctx, bytes ? bytes : 1);
    if (!p)
        c->env->scratch_failed = 1;
    return p;
}

/* A oneDNN path returned rc: 1 when the portable fallback may run instead —
 * only when oneDNN refused the shape, never for want of memory (see
 * op_env.scratch_failed). */
static inline int nn_may_fall_back(const struct op_call *c, int rc)
{
    return rc != 0 && !(c->env && c->env->scratch_failed);
}

static inline void nn_scratch_free(const struct op_call *c, void *p)
{
    if (p && c->env && c->env->scratch_free)
        c->env->scratch_free(c->env->ctx, p);
}

/* ---- compute helpers (float32, NCDHW) ----------------------------------- */

/* Convolution forward: y[n, m, out] = sum over (c/group, k) of x * w, plus b.
 * x: [n, c, in], w: [m, c/group, k], b: [m] or NULL, y: [n, m, out].
 * Chooses oneDNN (blocked or plain) or im2col+sgemm per shape: nn_conv_path_choose(). */
int nn_conv_forward(const struct op_call *c, const struct nn_geom *g,
                    const float *x, const float *w, const float *b, float *y);

/* The im2col + sgemm path, forced (for tests and measurements). */
int nn_conv_forward_gemm(const struct op_call *c, const struct nn_geom *g,
                         const float *x, const float *w, const float *b, float *y);

/* 1 when the shape rule above nn_conv_forward() (conv.c) picks oneDNN's
 * blocked layouts for this geometry. */
int nn_conv_use_blocked(const struct nn_geom *g);
/* The plain (or, with `any`, unconstrained) memory descriptors of a
 * convolution on g: NCDHW source and destination, [G]OIDHW weights, [M] bias
 * (zeroed unless has_bias). */
void nn_conv_dnnl_mds(const struct nn_geom *g, int has_bias, int any, dnnl_memory_desc_t *src,
                      dnnl_memory_desc_t *wei, dnnl_memory_desc_t *bia, dnnl_memory_desc_t *dst);
/* The forward-inference convolution descriptor of g on the given memory
 * descriptors (bia may be NULL). */
dnnl_status_t nn_conv_dnnl_fwd_desc(const struct nn_geom *g, const dnnl_memory_desc_t *src,
                                    const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *bia,
                                    const dnnl_memory_desc_t *dst, dnnl_convolution_desc_t *d);

/* The oneDNN paths, forced: on the plain layouts, and through oneDNN's
 * blocked layouts with reorders; and the implementation oneDNN chose. */
int nn_conv_forward_dnnl(const struct op_call *c, const struct nn_geom *g,
                         const float *x, const float *w, const float *b, float *y);
int nn_conv_forward_dnnl_blocked(const struct op_call *c, const struct nn_geom *g,
                                 const float *x, const float *w, const float *b, float *y);
const char *nn_conv_dnnl_impl(const struct nn_geom *g, int has_bias, int blocked);
/* The blocked paths (forward, backward-data, backward-weights) run the batch
 * in chunks whose plain source and destination fit in this many bytes, so
 * that their reorder buffers stay small beside the tensors (see conv.c).
 * Sets the bound when bytes > 0 and returns the previous one; for tests and
 * measurements: results depend on it, so never change it while a model runs. */
int64_t nn_conv_chunk_bytes_set(int64_t bytes);

/* Convolution backward, the adjoints of nn_conv_forward on the same geometry:
 * dx[n, c, in] = sum over (m, k) of w * dy (dx overwritten);
 * dw[m, c/group, k] = sum over (n, out) of dy * x, db[m] = sum over (n, out)
 * of dy (db may be NULL; both overwritten). The path: nn_conv_path_choose();
 * see conv.c for the measurements. */
int nn_conv_backward_data(const struct op_call *c, const struct nn_geom *g, const float *dy,
                          const float *w, float *dx);
int nn_conv_backward_weights(const struct op_call *c, const struct nn_geom *g, const float *x,
                             const float *dy, float *dw, float *db);
/* The paths, forced (tests and measurements). */
int nn_conv_backward_data_gemm(const struct op_call *c, const struct nn_geom *g, const float *dy,
                               const float *w, float *dx);
int nn_conv_backward_weights_gemm(const struct op_call *c, const struct nn_geom *g, const float *x,
                                  const float *dy, float *dw, float *db);
int nn_conv_backward_data_dnnl(const struct op_call *c, const struct nn_geom *g, const float *dy,
                               const float *w, float *dx, int blocked);
int nn_conv_backward_weights_dnnl(const struct op_call *c, const struct nn_geom *g, const float *x,
                                  const float *dy, float *dw, float *db, int blocked);

/* The path one convolution call takes (conv.c): the fastest by the
 * measured rules whose workspace fits nn_conv_workspace_cap(), else the one
 * with the least workspace. From the shapes and the thread count alone, so
 * a recomputation (and a budgeted run) takes the path of the first
 * (unbudgeted) execution. */
enum nn_conv_dir { NN_CONV_FWD = 0, NN_CONV_BWD_DATA, NN_CONV_BWD_WEIGHTS };
enum nn_conv_path { NN_CONV_PATH_GEMM = 0, NN_CONV_PATH_PLAIN, NN_CONV_PATH_BLOCKED };
enum nn_conv_path nn_conv_path_choose(const struct op_call *c, const struct nn_geom *g, int has_bias,
                                      enum nn_conv_dir dir);
/* Bytes of scratch `path` takes at once for one call on g (oneDNN's
 * scratchpads, reorder buffers, im2col columns): 0 with *bytes, or -1 when
 * oneDNN has no implementation for it. */
int nn_conv_path_workspace(const struct op_call *c, const struct nn_geom *g, int has_bias, enum nn_conv_dir dir,
                           enum nn_conv_path path, size_t *bytes);
/* The cap: the bytes of the call's X, Y and W (or their gradients). */
size_t nn_conv_workspace_cap(const struct nn_geom *g);
/* Tests and measurements: a fixed cap in bytes instead (0: the rule);
 * returns the previous setting. Results depend on it: never change it while
 * a model runs. */
int64_t nn_conv_workspace_cap_set(int64_t bytes);

/* Attributes that pin a resolved geometry for an emitted gradient call
 * (ConvGradData/ConvGradWeight, pooling gradients): strides, dilations,
 * explicit pads, kernel_shape, group and a `shape` (a tensor's dims). The
 * onnx_attr array points into the struct, so keep it alive while emitting. */
struct nn_geom_attrs {
    int64_t strides[NN_MAX_SPATIAL], dilations[NN_MAX_SPATIAL], kernel[NN_MAX_SPATIAL];
    int64_t pads[2 * NN_MAX_SPATIAL], shape[NN_MAX_SPATIAL + 2];
    struct onnx_attr a[6];
    int n;
};
void nn_geom_attrs_make(const struct nn_geom *g, int n_shape, const int64_t *shape,
                        struct nn_geom_attrs *at);

/* The `shape` attribute of a gradient call (the dims of the tensor whose
 * gradient it computes), read by the gradient kernels' parse functions. */
struct nn_shape_attr {
    int n;
    int64_t dims[NN_MAX_SPATIAL + 2];
};
/* Reads `shape`; -1 with a message naming the node unless it lists 3 to
 * NN_MAX_SPATIAL + 2 dims. */
int nn_shape_attr_parse(const struct onnx_node *node, struct nn_shape_attr *s,
                        char *err, size_t err_size);
/* The attribute as a float32 tensor (dims only, no data). */
static inline struct tensor nn_shape_attr_tensor(const struct nn_shape_attr *s)
{
    struct tensor t = { .dtype = ONNX_DTYPE_FLOAT, .rank = s->n };
    memcpy(t.dims, s->dims, sizeof(int64_t) * (size_t)s->n);
    return t;
}

/* im2col of one image and one group: col[(ci, kd, kh, kw), (od, oh, ow)],
 * zeros where the window falls into padding. */
void nn_im2col(const struct nn_geom *g, const float *x, int64_t cg, float *col);
/* The adjoint: adds col back into x (x must be zeroed by the caller). */
void nn_col2im(const struct nn_geom *g, const float *col, int64_t cg, float *x);

/* Pooling. Geometry has c == m == channels, group unused. */
enum nn_pool_kind { NN_POOL_MAX = 0, NN_POOL_AVG_EXCLUDE_PAD, NN_POOL_AVG_INCLUDE_PAD };

/* Max pooling of any of float/int8/uint8; indices (may be NULL) receive the
 * flattened input index of each maximum (storage_order 1: column-major
 * spatial order, as onnx defines). */
int nn_maxpool_forward(const struct op_call *c, const struct nn_geom *g, int dtype,
                       const void *x, void *y, int64_t *indices, int storage_order);
int nn_avgpool_forward(const struct op_call *c, const struct nn_geom *g,
                       int count_include_pad, const float *x, float *y);
/* The same (float, no indices) through oneDNN; -1 where its semantics differ. */
int nn_pool_forward_dnnl(const struct op_call *c, const struct nn_geom *g, enum nn_pool_kind kind,
                         const float *x, float *y);

/* Pooling backward (dx overwritten): max routes each dy to its window's
 * first maximum in window order (the forward's rule); average spreads dy / count. */
void nn_maxpool_backward(const struct nn_geom *g, const float *x, const float *dy, float *dx);
void nn_avgpool_backward(const struct nn_geom *g, int count_include_pad, const float *dy, float *dx);

/* LpPool's window (ops/lp_pool.c) as ops/pool-window.h's struct pool_win,
 * for its CPU and CUDA kernels. */
struct pool_win;
void nn_lp_pool_win(const struct nn_geom *g, struct pool_win *w);

/* Batch normalization, inference: y = (x - mean) / sqrt(var + eps) * scale + bias.
 * x, y: [n, ch, spatial]. */
void nn_batchnorm_inference(int64_t n, int64_t ch, int64_t spatial, const float *x,
                            const float *scale, const float *bias, const float *mean,
                            const float *var, float eps, float *y);
/* Training: batch statistics (biased variance) into batch_mean/batch_var,
 * then normalises with them. */
void nn_batchnorm_training(int64_t n, int64_t ch, int64_t spatial, const float *x,
                           const float *scale, const float *bias, float eps, float *y,
                           float *batch_mean, float *batch_var);

/* Layer normalization over rows of length `cols` (our portable loop; the
 * operator itself prefers oneDNN, see layer_norm.c): y = (x - mean) * inv_std * scale + bias.
 * scale/bias have `cols` entries (bias may be NULL); mean/inv_std may be NULL. */
void nn_layernorm_forward(int64_t rows, int64_t cols, const float *x, const float *scale,
                          const float *bias, float eps, float *y, float *mean,
                          float *inv_std);
/* Shared by layer_norm.c and rms_norm.c (whose params start as struct
 * layer_norm_params): rows = prod X.shape[:axis], cols = prod X.shape[axis:],
 * norm gets the dims X.shape[axis:]; the check that Scale/B (float32)
 * broadcast to it; and Scale/B as `cols` contiguous floats (t itself, or
 * broadcast into dst). */
int nn_norm_split(const struct op_call *c, int *axis, int64_t *rows, int64_t *cols,
                  struct tensor *norm);
int nn_norm_check_param(const struct op_call *c, const struct tensor *t, const char *what,
                        const struct tensor *norm);
const float *nn_norm_expand(const struct tensor *t, const struct tensor *norm, int64_t cols,
                            float *dst);
/* The normalizations' parameter gradients over rows x cols: dscale[j] =
 * sum_r dy[r,j] * (x[r,j] - mean[r]) * inv[r] (mean NULL: 0, RMSNorm's),
 * dbias[j] = sum_r dy[r,j]; either may be NULL. Columns in blocks of 64,
 * rows summed in order: deterministic for any thread count. */
void nn_norm_param_grads(const float *x, const float *dy, const float *mean, const float *inv, int64_t rows,
                         int64_t cols, float *dscale, float *dbias);

/* ---- Attention, RotaryEmbedding, GroupNormalization (attention.c, rotary.c,
 * group_norm.c): the geometry their CPU and CUDA kernels share ------------ */

/* The geometry of one call. Strides are in elements, per batch (b), head
 * (h) and sequence position (s) of every operand; rows of one head are
 * contiguous (the head size runs last in both layouts). */
struct nn_att_layout {
    int64_t sb, sh, ss;
};

struct nn_att_geom {
    int64_t b, hq, hkv, sq, skv, past, t, d, dv;
    int rank3;
    struct nn_att_layout q, k, v, pk, pv, y, prk, prv;
    /* the mask: its strides against [B, Hq, Sq] (0 where broadcast) and its
     * length along the keys; mask_len 0: no mask */
    int mask_bool;
    int64_t mask_len, m_sb, m_sh, m_ss;
    float scale;
};

/* Resolves and checks the geometry of an Attention call (first = 0) or an
 * AttentionGrad call (first = 1: input 0 is dY); -1 with a message. */
int nn_attention_geom(const struct op_call *c, int first, struct nn_att_geom *g);

/* RotaryEmbedding: every head of every token is `d` values at
 * x + b * sb + s * ss + h * sh, of which the first `rd` rotate in rd / 2
 * pairs. */
struct nn_rope_dims {
    int64_t b, s, h, d, rd;
    int64_t sb, ss, sh;
};
int nn_rope_dims(const struct op_call *c, struct nn_rope_dims *g);

/* GroupNormalization / InstanceNormalization / GroupNormGrad over X
 * [n, ch, spatial...] (Scale and B checked when not NULL). */
struct nn_gn_dims {
    int64_t n, ch, groups, spatial;
    int per_group;                     /* Scale/B of shape [groups], else [ch] */
};
int nn_group_norm_dims(const struct op_call *c, const struct tensor *x, const struct tensor *s,
                       const struct tensor *b, struct nn_gn_dims *d);

/* ---- small GEMM wrappers (gemm.c) --------------------------------------- */

/* C[m,n] = alpha * op(A) op(B) + beta * C, row-major, through OpenBLAS. */
void nn_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
              float *cm, int64_t ldc);

/* ---- oneDNN (dnnl.c) ------------------------------------------------------ */

/* Builds the primitive descriptor for the key (the caller's struct, read
 * back by its own build function) with the given attributes. */
typedef dnnl_status_t (*nn_dnnl_build_fn)(const void *key, dnnl_engine_t engine,
                                          const_dnnl_primitive_attr_t attr,
                                          dnnl_primitive_desc_t *pd);

struct nn_dnnl_arg {
    int arg;                           /* DNNL_ARG_SRC, ... */
    const dnnl_memory_desc_t *md;      /* NULL: the primitive's own for `arg` */
    void *data;
};

/* Finds (or builds and caches) the primitive for `key` and executes it on the
 * arguments; the scratchpad comes from c's scratch allocator. The key's bytes
 * are compared, so zero its padding. 0, or -1 with a message. */
int nn_dnnl_run(const struct op_call *c, const void *key, size_t key_len,
                nn_dnnl_build_fn build, int nargs, const struct nn_dnnl_arg *args);
/* The memory descriptor the (cached or newly built) primitive expects for
 * argument `arg`. 0, or -1 with a message. */
int nn_dnnl_arg_md(const struct op_call *c, const void *key, size_t key_len,
                   nn_dnnl_build_fn build, int arg, dnnl_memory_desc_t *md);
/* The scratchpad bytes one execution of the (cached or newly built)
 * primitive for `key` takes from the scratch allocator at this thread count
 * (oneDNN sizes per-thread buffers when it creates a primitive), in *bytes,
 * without running it: what a kernel weighs before choosing a path. 0, or -1
 * with a message (oneDNN has no implementation for the key). */
int nn_dnnl_scratch_bytes(const struct op_call *c, const void *key, size_t key_len, nn_dnnl_build_fn build,
                          size_t *bytes);
/* oneDNN's implementation name of a cached primitive ("?" if none), for
 * measurements and tests. */
const char *nn_dnnl_impl_name(const void *key, size_t key_len);

#endif
