/* ops/cuda/window.c — the "window" family's CUDA kernels and its table,
 * cuda_kernels_window: LpPool and LpPoolGrad (ops/lp_pool.c), Col2Im and
 * Col2ImGrad (ops/col2im.c), MaxUnpool and MaxUnpoolGrad
 * (ops/max_unpool.c). Each takes its geometry from the CPU file's own
 * checked resolution and runs the per-element arithmetic of
 * ops/pool-window.h on the device (window_kernels.cu).
 *
 * MaxUnpool finds the last writer of every place with an atomic minimum of
 * ~j into an owner array (budgeted scratch), so that repeated indices give
 * the CPU's result whatever order the threads run in; an index outside the
 * unpooled tensor is reported by position (one device-to-host copy and a
 * stream synchronisation per call). DFT and STFT (ops/signal.c) run one
 * thread per output element, DFTGrad one per element of dX and per window
 * tap. The windows and MelWeightMatrix have no CUDA kernel (they make
 * small outputs from host scalars): --device cuda names them. */
#include <string.h>

#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/window-kernels.h"
#include "ops/nn-impl.h"
#include "ops/nn-params.h"

static int lp_win(const struct op_call *c, const struct tensor *x, struct pool_win *w, int64_t *planes)
{
    struct nn_geom g;
    /* the CPU kernel's checks and resolution (op_def.infer has run them already) */
    const struct lp_pool_params *p = c->params;
    if (nn_geom_resolve(c, &p->w, x, p->w.kernel, 1, &g))
        return -1;
    nn_lp_pool_win(&g, w);
    *planes = x->dims[0] * x->dims[1];
    return 0;
}

static int cuda_lp_pool(struct op_call *c)
{
    const struct lp_pool_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct pool_win w;
    int64_t planes;
    if (lp_win(c, x, &w, &planes))
        return -1;
    CUDA_TRY(c, cuda_lp_pool_launch(cuda_ctx_of(c)->stream, x->dtype == ONNX_DTYPE_DOUBLE, &w, planes,
                                    p->p, x->data, c->out[0]->data));
    return 0;
}

static int cuda_lp_pool_grad(struct op_call *c)
{
    const struct lp_pool_params *p = c->params;
    const struct tensor *x = c->in[1];
    struct pool_win w;
    int64_t planes;
    if (lp_win(c, x, &w, &planes))
        return -1;
    CUDA_TRY(c, cuda_lp_pool_grad_launch(cuda_ctx_of(c)->stream, x->dtype == ONNX_DTYPE_DOUBLE, &w, planes,
                                         p->p, c->in[0]->data, x->data, c->in[2]->data, c->out[0]->data));
    return 0;
}

static int cuda_col2im(struct op_call *c)
{
    struct col2im_geom g;
    if (col2im_geom(c, &g))
        return -1;
    int f64 = c->in[0]->dtype == ONNX_DTYPE_DOUBLE;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    if (!strcmp(c->def->name, "Col2ImGrad"))
        CUDA_TRY(c, cuda_im2col_launch(s, f64, &g, c->in[0]->data, c->out[0]->data));
    else
        CUDA_TRY(c, cuda_col2im_launch(s, f64, &g, c->in[0]->data, c->out[0]->data));
    return 0;
}

static void *scratch(struct op_call *c, size_t bytes)
{
    void *p = c->env && c->env->scratch_alloc ? c->env->scratch_alloc(c->env->ctx, bytes ? bytes : 1) : NULL;
    if (!p)
        op_error(c, "cannot get %zu bytes of device workspace", bytes);
    return p;
}

static void scratch_free(struct op_call *c, void *p)
{
    if (p && c->env && c->env->scratch_free)
        c->env->scratch_free(c->env->ctx, p);
}

/* Forward and gradient: X (dX) is input 0 (the output) and Y (dY) the
 * output (input 0); I is input 1 of both. */
static int cuda_max_unpool(struct op_call *c)
{
    const int grad = !strcmp(c->def->name, "MaxUnpoolGrad");
    struct unpool_geom g;
    if (max_unpool_geom(c, &g))
        return -1;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    const struct tensor *ind = c->in[1];
    struct tensor *xt = grad ? c->out[0] : (struct tensor *)c->in[0];
    struct tensor *yt = grad ? (struct tensor *)c->in[0] : c->out[0];
    const int64_t n = tensor_numel(ind);
    const size_t esize = onnx_dtype_size(xt->dtype);
    /* owner[0 .. inf_numel) then the bad-index flag */
    unsigned long long *owner = scratch(c, sizeof *owner * (size_t)(g.inf_numel + 1));
    if (!owner)
        return -1;
    unsigned long long *bad = owner + g.inf_numel, pos = ~0ull;
    cudaError_t e = cudaMemsetAsync(owner, 0xff, sizeof *owner * (size_t)(g.inf_numel + 1), s);
    if (e == cudaSuccess && !grad)
        e = cudaMemsetAsync(yt->data, 0, tensor_size_bytes(yt), s);
    if (e == cudaSuccess)
        e = cuda_unpool_owner_launch(s, &g, n, ind->data, owner, bad);
    if (e == cudaSuccess)
        e = cuda_unpool_move_launch(s, grad, esize, &g, n, ind->data, owner, xt->data, yt->data);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(&pos, bad, sizeof pos, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    scratch_free(c, owner);
    CUDA_TRY(c, e);
    if (pos != ~0ull) {
        int64_t v = 0;
        CUDA_TRY(c, cudaMemcpyAsync(&v, (const int64_t *)ind->data + pos, sizeof v, cudaMemcpyDeviceToHost, s));
        CUDA_TRY(c, cudaStreamSynchronize(s));
        return op_error(c, "index I[%llu] = %lld is outside the unpooled tensor of %lld elements", pos,
                        (long long)v, (long long)g.inf_numel);
    }
    return 0;
}

/* DFT and STFT: each output element's sum by one thread, the twiddles
 * computed where the CPU reads them from a table of the same values. */
static int cuda_dft(struct op_call *c)
{
    struct dft_geom g;
    int64_t frames, step;
    if (signal_dft_geom(c, &g, &frames, &step))
        return -1;
    const int stft = !strcmp(c->def->name, "STFT");
    const struct tensor *w = stft && c->n_in > 2 ? c->in[2] : NULL;
    CUDA_TRY(c, cuda_dft_launch(cuda_ctx_of(c)->stream, c->in[0]->dtype == ONNX_DTYPE_DOUBLE, &g, frames, step,
                                c->in[0]->data, w ? w->data : NULL, c->out[0]->data));
    return 0;
}

static int cuda_dft_grad(struct op_call *c)
{
    struct dft_geom g;
    int64_t frames, step;
    if (signal_dft_grad_geom(c, &g, &frames, &step))
        return -1;
    const struct tensor *x = c->n_in > 1 ? c->in[1] : NULL, *w = c->n_in > 2 ? c->in[2] : NULL;
    struct tensor *dw = c->n_out > 1 ? c->out[1] : NULL;
    CUDA_TRY(c, cuda_dft_grad_launch(cuda_ctx_of(c)->stream, c->in[0]->dtype == ONNX_DTYPE_DOUBLE, &g, frames,
                                     step, c->in[0]->data, x ? x->data : NULL, w ? w->data : NULL,
                                     c->out[0]->data, dw ? dw->data : NULL));
    return 0;
}

CUDA_KERNEL_TABLE(window) = {
    { "dtrexec", "DFTGrad", cuda_dft_grad },
    { "", "DFT", cuda_dft },
    { "", "STFT", cuda_dft },
    { "", "LpPool", cuda_lp_pool },
    { "dtrexec", "LpPoolGrad", cuda_lp_pool_grad },
    { "", "Col2Im", cuda_col2im },
    { "dtrexec", "Col2ImGrad", cuda_col2im },
    { "", "MaxUnpool", cuda_max_unpool },
    { "dtrexec", "MaxUnpoolGrad", cuda_max_unpool },
    { NULL, NULL, NULL },
};
