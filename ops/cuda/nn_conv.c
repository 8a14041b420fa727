/* ops/cuda/nn_conv.c — Conv, ConvGradData, ConvGradWeight and ConvTranspose
 * on the GPU through cuDNN (float32, 1-D/2-D/3-D, groups, strides,
 * dilations, any pads and auto_pad, optional bias).
 *
 * Geometry is the CPU kernels' own (nn_conv_geom and friends), so both
 * backends read a node alike. ConvTranspose is cuDNN's backward-data of the
 * convolution whose input is its output (ops/conv_transpose.c explains the
 * adjoint), ConvGradData the same call on Conv's geometry.
 *
 * Padding: cuDNN pads every axis symmetrically. Per axis we give it
 * p = min(pad_lo, pad_hi) and realise the rest on a zero-padded copy of the
 * input (forward, backward-filter) or by cropping a larger gradient buffer
 * (backward-data, ConvTranspose): buffer position t is input position
 * t - lead, lead = pad_lo - p. A 1-D convolution is a 2-D one of height 1.
 * ConvTranspose's negative end padding (output_shape beyond the last
 * window) crops to the covered part; the rest of Y gets only the bias.
 *
 * Algorithms (the plan cache below): cuDNN's heuristics
 * (cudnnGet*Algorithm_v7, no benchmarking, so the choice is a function of
 * the shape and the device) ranked, keeping only algorithms that are
 * deterministic — recomputation must reproduce every bit — and that run
 * FP32 FMA arithmetic (no TF32 on the tensor cores: the CPU backend's
 * float32 results are the reference). The fall-back chain is walked once per
 * shape, at planning: the first such algorithm whose workspace is within the
 * call's own largest tensor (so the workspace can never dwarf what DTR
 * evicts around it), ending with a zero-workspace deterministic one. At run
 * time the workspace comes from op_env.scratch_alloc (it counts against the
 * budget); when that fails the call fails (op_env.scratch_failed) and the
 * runtime evicts and retries it — falling back to another algorithm there
 * would make the bits depend on memory pressure. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/nn-cuda.h"
#include "ops/nn-params.h"

enum conv_dir { CONV_FWD = 0, CONV_BWD_DATA, CONV_BWD_FILTER, CONV_DIR_COUNT };

static const char *const conv_dir_name[CONV_DIR_COUNT] = {
    "forward", "backward-data", "backward-filter",
};

/* What cuDNN runs: the convolution from a buffer of `in` (the lead/trail
 * padded or cropped input) with symmetric padding `pad`. All int64 so that
 * the struct has no padding bytes (it is compared with memcmp). */
struct conv_key {
    int64_t dir;
    int64_t nsp;
    int64_t n, c, m, group;
    int64_t in[3], out[3], k[3], stride[3], dil[3], pad[3];
};

struct conv_plan {
    struct conv_key key;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int algo;                          /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t */
    size_t ws_bytes;
    struct conv_plan *next;
};

/* Plans live as long as the process (descriptors are host objects, valid
 * for any handle of the device); few distinct shapes per model. */
static struct conv_plan *conv_plans;
static pthread_mutex_t conv_plans_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- layout: symmetric padding for cuDNN ------------------------------------ */

struct conv_layout {
    struct conv_key key;               /* dir left 0 */
    int64_t lead[3];                   /* buffer position t holds input position t - lead */
    int direct;                        /* the buffer is the input itself */
};

static int conv_layout_make(const struct op_call *c, const struct nn_geom *g, struct conv_layout *l)
{
    memset(l, 0, sizeof *l);
    l->key.nsp = g->nsp;
    l->key.n = g->n;
    l->key.c = g->c;
    l->key.m = g->m;
    l->key.group = g->group;
    l->direct = 1;
    for (int j = 0; j < 3; j++) {
        int64_t lo = g->pad_lo[j], hi = g->pad_hi[j], s = g->stride[j];
        int64_t p = lo < (hi > 0 ? hi : 0) ? lo : (hi > 0 ? hi : 0);
        int64_t dk = g->dil[j] * (g->k[j] - 1) + 1;
        /* buffer lengths giving exactly g->out windows with padding p */
        int64_t lmin = (g->out[j] - 1) * s + dk - 2 * p, lmax = lmin + s - 1;
        int64_t want = lo - p + g->in[j];
        int64_t len = want >= lmin && want <= lmax ? want : lmin;
        if (len < 1 || p < 0)
            return op_error(c, "spatial axis %d: no symmetric-padding layout for input %lld, "
                            "pads %lld/%lld, kernel %lld, stride %lld, output %lld", j,
                            (long long)g->in[j], (long long)lo, (long long)hi, (long long)g->k[j],
                            (long long)s, (long long)g->out[j]);
        l->key.in[j] = len;
        l->key.out[j] = g->out[j];
        l->key.k[j] = g->k[j];
        l->key.stride[j] = s;
        l->key.dil[j] = g->dil[j];
        l->key.pad[j] = p;
        l->lead[j] = lo - p;
        if (l->lead[j] != 0 || len != g->in[j])
            l->direct = 0;
    }
    return 0;
}

static int64_t conv_layout_in_size(const struct conv_layout *l)
{
    return l->key.in[0] * l->key.in[1] * l->key.in[2];
}

/* ---- plans --------------------------------------------------------------------- */

static void conv_plan_destroy(struct conv_plan *p)
{
    if (p->xd)
        cudnnDestroyTensorDescriptor(p->xd);
    if (p->yd)
        cudnnDestroyTensorDescriptor(p->yd);
    if (p->wd)
        cudnnDestroyFilterDescriptor(p->wd);
    if (p->cd)
        cudnnDestroyConvolutionDescriptor(p->cd);
    free(p);
}

/* cuDNN's dims of an activation [n, ch, spatial] (4-D for 1-D and 2-D ops:
 * the unit leading axis of a 1-D op is its height). */
static int conv_dims(const struct conv_key *k, int64_t ch, const int64_t *sp, int *nd, int *dims)
{
    *nd = k->nsp == 3 ? 5 : 4;
    int64_t d[5] = { k->n, ch, 0, 0, 0 };
    for (int i = 2; i < *nd; i++)
        d[i] = sp[3 - (*nd - 2) + (i - 2)];
    for (int i = 0; i < *nd; i++) {
        if (d[i] < 1 || d[i] > INT_MAX)
            return -1;
        dims[i] = (int)d[i];
    }
    return 0;
}

static void packed_strides(int nd, const int *dims, int *strides)
{
    strides[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--)
        strides[i] = strides[i + 1] * dims[i + 1];
}

static int conv_plan_descriptors(struct op_call *c, struct conv_plan *p)
{
    const struct conv_key *k = &p->key;
    int nd, xdims[5], ydims[5], wdims[5], strides[5], pad[3], stride[3], dil[3];
    if (conv_dims(k, k->c, k->in, &nd, xdims) || conv_dims(k, k->m, k->out, &nd, ydims))
        return op_error(c, "convolution of [%lld, %lld, ...] exceeds cuDNN's int dims",
                        (long long)k->n, (long long)k->c);
    for (int i = 0; i < 3; i++)
        if (k->k[i] > INT_MAX || k->stride[i] > INT_MAX || k->dil[i] > INT_MAX || k->pad[i] > INT_MAX)
            return op_error(c, "kernel, stride, dilation or pads exceed cuDNN's int range");
    wdims[0] = (int)k->m;
    wdims[1] = (int)(k->c / k->group);
    for (int i = 2; i < nd; i++) {
        int j = 3 - (nd - 2) + (i - 2);
        wdims[i] = (int)k->k[j];
        pad[i - 2] = (int)k->pad[j];
        stride[i - 2] = (int)k->stride[j];
        dil[i - 2] = (int)k->dil[j];
    }
    CUDNN_TRY(c, cudnnCreateTensorDescriptor(&p->xd));
    CUDNN_TRY(c, cudnnCreateTensorDescriptor(&p->yd));
    CUDNN_TRY(c, cudnnCreateFilterDescriptor(&p->wd));
    CUDNN_TRY(c, cudnnCreateConvolutionDescriptor(&p->cd));
    packed_strides(nd, xdims, strides);
    CUDNN_TRY(c, cudnnSetTensorNdDescriptor(p->xd, CUDNN_DATA_FLOAT, nd, xdims, strides));
    packed_strides(nd, ydims, strides);
    CUDNN_TRY(c, cudnnSetTensorNdDescriptor(p->yd, CUDNN_DATA_FLOAT, nd, ydims, strides));
    CUDNN_TRY(c, cudnnSetFilterNdDescriptor(p->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nd, wdims));
    CUDNN_TRY(c, cudnnSetConvolutionNdDescriptor(p->cd, nd - 2, pad, stride, dil,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY(c, cudnnSetConvolutionGroupCount(p->cd, (int)k->group));
    /* exact FP32: no TF32 tensor-core arithmetic */
    CUDNN_TRY(c, cudnnSetConvolutionMathType(p->cd, CUDNN_FMA_MATH));
    return 0;
}

/* Workspace of algorithm `algo` for the plan's direction, or a cuDNN status. */
static cudnnStatus_t conv_ws_size(cudnnHandle_t h, const struct conv_plan *p, int algo, size_t *bytes)
{
    switch (p->key.dir) {
    case CONV_FWD:
        return cudnnGetConvolutionForwardWorkspaceSize(h, p->xd, p->wd, p->cd, p->yd,
                                                       (cudnnConvolutionFwdAlgo_t)algo, bytes);
    case CONV_BWD_DATA:
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->wd, p->yd, p->cd, p->xd,
                                                            (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
    default:
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->xd, p->yd, p->cd, p->wd,
                                                              (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
    }
}

/* One ranked candidate of cuDNN's heuristics, whatever the direction. */
struct conv_candidate {
    int algo;
    cudnnStatus_t status;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
};

#define CONV_MAX_CANDIDATES 16

static int conv_candidates(struct op_call *c, const struct conv_plan *p, struct conv_candidate *out,
                           int *count)
{
    cudnnHandle_t h = cuda_ctx_of(c)->dnn;
    int n = 0;
    *count = 0;
    switch (p->key.dir) {
    case CONV_FWD: {
        cudnnConvolutionFwdAlgoPerf_t r[CONV_MAX_CANDIDATES];
        CUDNN_TRY(c, cudnnGetConvolutionForwardAlgorithm_v7(h, p->xd, p->wd, p->cd, p->yd,
                                                            CONV_MAX_CANDIDATES, &n, r));
        for (int i = 0; i < n; i++)
            out[i] = (struct conv_candidate){ r[i].algo, r[i].status, r[i].determinism, r[i].mathType };
        break;
    }
    case CONV_BWD_DATA: {
        cudnnConvolutionBwdDataAlgoPerf_t r[CONV_MAX_CANDIDATES];
        CUDNN_TRY(c, cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->wd, p->yd, p->cd, p->xd,
                                                                 CONV_MAX_CANDIDATES, &n, r));
        for (int i = 0; i < n; i++)
            out[i] = (struct conv_candidate){ r[i].algo, r[i].status, r[i].determinism, r[i].mathType };
        break;
    }
    default: {
        cudnnConvolutionBwdFilterAlgoPerf_t r[CONV_MAX_CANDIDATES];
        CUDNN_TRY(c, cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->xd, p->yd, p->cd, p->wd,
                                                                   CONV_MAX_CANDIDATES, &n, r));
        for (int i = 0; i < n; i++)
            out[i] = (struct conv_candidate){ r[i].algo, r[i].status, r[i].determinism, r[i].mathType };
        break;
    }
    }
    *count = n;
    return 0;
}

/* The deterministic algorithms that need no (or the least) workspace: the
 * end of every chain. */
static const int conv_last_resort[CONV_DIR_COUNT] = {
    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
};

/* Bytes of the call's largest tensor as cuDNN sees it: the workspace cap. */
static size_t conv_ws_cap(const struct conv_key *k)
{
    double x = (double)k->n * (double)k->c * (double)(k->in[0] * k->in[1] * k->in[2]);
    double y = (double)k->n * (double)k->m * (double)(k->out[0] * k->out[1] * k->out[2]);
    double w = (double)k->m * (double)(k->c / k->group) * (double)(k->k[0] * k->k[1] * k->k[2]);
    double m = x > y ? x : y;
    m = m > w ? m : w;
    return (size_t)(m * sizeof(float));
}

static int conv_plan_choose(struct op_call *c, struct conv_plan *p)
{
    cudnnHandle_t h = cuda_ctx_of(c)->dnn;
    struct conv_candidate cand[CONV_MAX_CANDIDATES];
    int n;
    if (conv_candidates(c, p, cand, &n))
        return -1;
    size_t cap = conv_ws_cap(&p->key);
    for (int i = 0; i < n; i++) {
        size_t bytes;
        if (cand[i].status != CUDNN_STATUS_SUCCESS || cand[i].determinism != CUDNN_DETERMINISTIC
            || (cand[i].math != CUDNN_FMA_MATH && cand[i].math != CUDNN_DEFAULT_MATH))
            continue;
        if (conv_ws_size(h, p, cand[i].algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > cap)
            continue;
        p->algo = cand[i].algo;
        p->ws_bytes = bytes;
        return 0;
    }
    int last = conv_last_resort[p->key.dir];
    size_t bytes;
    cudnnStatus_t s = conv_ws_size(h, p, last, &bytes);
    if (s != CUDNN_STATUS_SUCCESS)
        return op_error(c, "cuDNN has no deterministic FP32 %s algorithm for this convolution "
                        "(%d heuristic candidates; algorithm %d: %s)", conv_dir_name[p->key.dir], n,
                        last, cudnnGetErrorString(s));
    p->algo = last;
    p->ws_bytes = bytes;
    return 0;
}

/* The cached plan of direction `dir` for the layout, made on first use. */
static int conv_plan_get(struct op_call *c, enum conv_dir dir, const struct conv_layout *l,
                         const struct conv_plan **out)
{
    struct conv_key key = l->key;
    key.dir = dir;
    pthread_mutex_lock(&conv_plans_lock);
    for (struct conv_plan *p = conv_plans; p; p = p->next)
        if (!memcmp(&p->key, &key, sizeof key)) {
            pthread_mutex_unlock(&conv_plans_lock);
            *out = p;
            return 0;
        }
    pthread_mutex_unlock(&conv_plans_lock);
    struct conv_plan *p = calloc(1, sizeof *p);
    if (!p)
        return op_error(c, "out of host memory for a convolution plan");
    p->key = key;
    if (conv_plan_descriptors(c, p) || conv_plan_choose(c, p)) {
        conv_plan_destroy(p);
        return -1;
    }
    pthread_mutex_lock(&conv_plans_lock);
    /* another thread may have planned the same shape meanwhile: the same
     * heuristics gave it the same algorithm, keep the first */
    for (struct conv_plan *q = conv_plans; q; q = q->next)
        if (!memcmp(&q->key, &key, sizeof key)) {
            pthread_mutex_unlock(&conv_plans_lock);
            conv_plan_destroy(p);
            *out = q;
            return 0;
        }
    p->next = conv_plans;
    conv_plans = p;
    pthread_mutex_unlock(&conv_plans_lock);
    *out = p;
    return 0;
}

/* ---- running a plan ------------------------------------------------------------------ */

/* Scratch of one call: the layout's buffer (unless direct) and the plan's
 * workspace, both taken before anything is queued. */
struct conv_scratch {
    float *buf;
    void *ws;
};

static int conv_scratch_take(struct op_call *c, const struct conv_layout *l, const struct conv_plan *p,
                             struct conv_scratch *s)
{
    s->buf = NULL;
    s->ws = NULL;
    if (!l->direct) {
        size_t bytes = sizeof(float) * (size_t)(l->key.n * l->key.c * conv_layout_in_size(l));
        if (nn_cuda_scratch(c, bytes, "the padded convolution buffer", (void **)&s->buf))
            return -1;
    }
    if (p->ws_bytes && nn_cuda_scratch(c, p->ws_bytes, "the cuDNN workspace", &s->ws)) {
        nn_scratch_free(c, s->buf);
        s->buf = NULL;
        return -1;
    }
    return 0;
}

static void conv_scratch_give(const struct op_call *c, struct conv_scratch *s)
{
    nn_scratch_free(c, s->ws);
    nn_scratch_free(c, s->buf);
}

/* Input [n, ch, g->in] into the layout's buffer (zero lead/trail padding). */
static cudaError_t conv_pad_in(const struct op_call *c, const struct nn_geom *g,
                               const struct conv_layout *l, const float *x, float *buf)
{
    return nn_cuda_window_copy(nn_cuda_stream(c), g->n * g->c, g->in, l->key.in, l->lead, x, buf);
}

/* The layout's buffer back to [n, ch, g->in]: a crop, zeros where the
 * buffer does not reach. */
static cudaError_t conv_crop_out(const struct op_call *c, const struct nn_geom *g,
                                 const struct conv_layout *l, const float *buf, float *x)
{
    int64_t off[3] = { -l->lead[0], -l->lead[1], -l->lead[2] };
    return nn_cuda_window_copy(nn_cuda_stream(c), g->n * g->c, l->key.in, g->in, off, buf, x);
}

static int conv_float_inputs(struct op_call *c, int n)
{
    for (int i = 0; i < n && i < c->n_in; i++)
        if (c->in[i] && c->in[i]->dtype != ONNX_DTYPE_FLOAT)
            return op_error(c, "only float32 is supported, input %d is %s", i,
                            onnx_dtype_name(c->in[i]->dtype));
    return 0;
}

static const float one = 1.0f, zero = 0.0f;

/* dx (the layout's input side, [n, c, g->in]) = backward-data of dy
 * ([n, m, g->out]) through w: ConvGradData and ConvTranspose. */
static int conv_backward_data(struct op_call *c, const struct nn_geom *g, const float *dy,
                              const float *w, float *dx)
{
    struct conv_layout l;
    const struct conv_plan *p;
    struct conv_scratch s;
    if (conv_layout_make(c, g, &l) || conv_plan_get(c, CONV_BWD_DATA, &l, &p)
        || conv_scratch_take(c, &l, p, &s))
        return -1;
    cudnnStatus_t st = cudnnConvolutionBackwardData(cuda_ctx_of(c)->dnn, &one, p->wd, w, p->yd, dy,
                                                    p->cd, (cudnnConvolutionBwdDataAlgo_t)p->algo,
                                                    s.ws, p->ws_bytes, &zero, p->xd,
                                                    l.direct ? dx : s.buf);
    cudaError_t e = cudaSuccess;
    if (st == CUDNN_STATUS_SUCCESS && !l.direct)
        e = conv_crop_out(c, g, &l, s.buf, dx);
    conv_scratch_give(c, &s);
    if (st != CUDNN_STATUS_SUCCESS)
        return op_error(c, "cuDNN: %s (cudnnConvolutionBackwardData, algorithm %d)",
                        cudnnGetErrorString(st), p->algo);
    CUDA_TRY(c, e);
    return 0;
}

/* ---- the operators --------------------------------------------------------------- */

int cuda_conv(struct op_call *c)
{
    struct nn_geom g;
    if (conv_float_inputs(c, 3) || nn_conv_geom(c, &g))
        return -1;
    const struct tensor *x = c->in[0], *w = c->in[1], *b = c->n_in > 2 ? c->in[2] : NULL;
    float *y = c->out[0]->data;
    if (tensor_numel(c->out[0]) == 0)
        return 0;
    if (tensor_numel(x) == 0 || tensor_numel(w) == 0) {
        /* empty reduction: y is the bias alone */
        CUDA_TRY(c, cudaMemsetAsync(y, 0, tensor_size_bytes(c->out[0]), nn_cuda_stream(c)));
    } else {
        struct conv_layout l;
        const struct conv_plan *p;
        struct conv_scratch s;
        if (conv_layout_make(c, &g, &l) || conv_plan_get(c, CONV_FWD, &l, &p)
            || conv_scratch_take(c, &l, p, &s))
            return -1;
        cudaError_t e = l.direct ? cudaSuccess : conv_pad_in(c, &g, &l, x->data, s.buf);
        cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
        if (e == cudaSuccess)
            st = cudnnConvolutionForward(cuda_ctx_of(c)->dnn, &one, p->xd, l.direct ? x->data : s.buf,
                                         p->wd, w->data, p->cd, (cudnnConvolutionFwdAlgo_t)p->algo,
                                         s.ws, p->ws_bytes, &zero, p->yd, y);
        conv_scratch_give(c, &s);
        CUDA_TRY(c, e);
        if (st != CUDNN_STATUS_SUCCESS)
            return op_error(c, "cuDNN: %s (cudnnConvolutionForward, algorithm %d)",
                            cudnnGetErrorString(st), p->algo);
    }
    if (b)
        CUDA_TRY(c, nn_cuda_channel_bias_add(nn_cuda_stream(c), g.n, g.m, nn_geom_out_size(&g),
                                             b->data, y));
    return 0;
}

int cuda_conv_grad_data(struct op_call *c)
{
    const struct conv_grad_params *p = c->params;
    struct tensor xs = nn_shape_attr_tensor(&p->shape);
    struct nn_geom g;
    if (conv_float_inputs(c, 2) || nn_conv_grad_geom(c, &xs, c->in[1], c->in[0], &g))
        return -1;
    struct tensor *dx = c->out[0];
    if (tensor_numel(dx) == 0)
        return 0;
    if (tensor_numel(c->in[0]) == 0 || tensor_numel(c->in[1]) == 0) {
        CUDA_TRY(c, cudaMemsetAsync(dx->data, 0, tensor_size_bytes(dx), nn_cuda_stream(c)));
        return 0;
    }
    return conv_backward_data(c, &g, c->in[0]->data, c->in[1]->data, dx->data);
}

int cuda_conv_grad_weight(struct op_call *c)
{
    const struct conv_grad_params *cp = c->params;
    struct tensor ws = nn_shape_attr_tensor(&cp->shape);
    struct nn_geom g;
    if (conv_float_inputs(c, 2) || nn_conv_grad_geom(c, c->in[0], &ws, c->in[1], &g))
        return -1;
    const struct tensor *x = c->in[0], *dy = c->in[1];
    struct tensor *dw = c->out[0], *db = c->n_out > 1 ? c->out[1] : NULL;
    cudaStream_t stream = nn_cuda_stream(c);
    if (db)
        CUDA_TRY(c, nn_cuda_channel_sum(stream, g.n, g.m, nn_geom_out_size(&g), dy->data, db->data));
    if (!dw || tensor_numel(dw) == 0)
        return 0;
    if (tensor_numel(x) == 0 || tensor_numel(dy) == 0) {
        CUDA_TRY(c, cudaMemsetAsync(dw->data, 0, tensor_size_bytes(dw), stream));
        return 0;
    }
    struct conv_layout l;
    const struct conv_plan *p;
    struct conv_scratch s;
    if (conv_layout_make(c, &g, &l) || conv_plan_get(c, CONV_BWD_FILTER, &l, &p)
        || conv_scratch_take(c, &l, p, &s))
        return -1;
    cudaError_t e = l.direct ? cudaSuccess : conv_pad_in(c, &g, &l, x->data, s.buf);
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    if (e == cudaSuccess)
        st = cudnnConvolutionBackwardFilter(cuda_ctx_of(c)->dnn, &one, p->xd,
                                            l.direct ? x->data : s.buf, p->yd, dy->data, p->cd,
                                            (cudnnConvolutionBwdFilterAlgo_t)p->algo, s.ws,
                                            p->ws_bytes, &zero, p->wd, dw->data);
    conv_scratch_give(c, &s);
    CUDA_TRY(c, e);
    if (st != CUDNN_STATUS_SUCCESS)
        return op_error(c, "cuDNN: %s (cudnnConvolutionBackwardFilter, algorithm %d)",
                        cudnnGetErrorString(st), p->algo);
    return 0;
}

int cuda_conv_transpose(struct op_call *c)
{
    struct nn_geom g;
    if (conv_float_inputs(c, 3) || nn_conv_transpose_geom(c, &g))
        return -1;
    const struct tensor *x = c->in[0], *w = c->in[1], *b = c->n_in > 2 ? c->in[2] : NULL;
    struct tensor *y = c->out[0];
    if (tensor_numel(y) == 0)
        return 0;
    if (tensor_numel(x) == 0 || tensor_numel(w) == 0)
        CUDA_TRY(c, cudaMemsetAsync(y->data, 0, tensor_size_bytes(y), nn_cuda_stream(c)));
    else if (conv_backward_data(c, &g, x->data, w->data, y->data))
        return -1;
    if (b)
        CUDA_TRY(c, nn_cuda_channel_bias_add(nn_cuda_stream(c), g.n, g.c, nn_geom_in_size(&g),
                                             b->data, y->data));
    return 0;
}
