/* ops/cuda/window_kernels.cu — device code of the "window" family
 * (ops/cuda/window.c, launchers in window-kernels.h): LpPool, LpPoolGrad,
 * Col2Im, Im2Col (Col2ImGrad), MaxUnpool, MaxUnpoolGrad, DFT, STFT and DFTGrad. The per-element
 * arithmetic is ops/pool-window.h's, the same functions the CPU kernels
 * (ops/lp_pool.c, col2im.c, max_unpool.c) call, so both backends visit the
 * same taps in the same order. Grid-stride loops of 256 threads. */
#include "ops/cuda/window-kernels.h"

#define WIN_THREADS 256

static unsigned win_blocks(int64_t n)
{
    int64_t b = (n + WIN_THREADS - 1) / WIN_THREADS;
    return (unsigned)(b < 1 ? 1 : b > (1 << 20) ? (1 << 20) : b);
}

#define WIN_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

template <typename T> __device__ const float *as_f(const T *p) { return nullptr; }
template <> __device__ const float *as_f<float>(const float *p) { return p; }
template <typename T> __device__ const double *as_d(const T *p) { return nullptr; }
template <> __device__ const double *as_d<double>(const double *p) { return p; }

template <typename T>
__global__ void __launch_bounds__(WIN_THREADS)
    lp_pool_kernel(struct pool_win w, int64_t planes, double p, const T *x, T *y)
{
    const int64_t insz = w.in[0] * w.in[1] * w.in[2], outsz = w.out[0] * w.out[1] * w.out[2];
    WIN_LOOP(e, planes * outsz) {
        int64_t pl = e / outsz, o = e % outsz;
        const T *xp = x + pl * insz;
        y[e] = (T)pw_lp_forward(&w, p, as_f(xp), as_d(xp), o);
    }
}

template <typename T>
__global__ void __launch_bounds__(WIN_THREADS)
    lp_pool_grad_kernel(struct pool_win w, int64_t planes, double p, const T *dy, const T *x,
                        const T *y, T *dx)
{
    const int64_t insz = w.in[0] * w.in[1] * w.in[2], outsz = w.out[0] * w.out[1] * w.out[2];
    WIN_LOOP(e, planes * insz) {
        int64_t pl = e / insz, i = e % insz;
        const T *dyp = dy + pl * outsz, *xp = x + pl * insz, *yp = y + pl * outsz;
        dx[e] = (T)pw_lp_backward(&w, p, as_f(dyp), as_f(xp), as_f(yp), as_d(dyp), as_d(xp), as_d(yp), i);
    }
}

template <typename T>
__global__ void __launch_bounds__(WIN_THREADS) col2im_kernel(struct col2im_geom g, const T *x, T *y)
{
    const int64_t plane_in = g.kernel * g.cols;
    WIN_LOOP(e, g.n * g.c * g.pixels) {
        int64_t pl = e / g.pixels, q = e % g.pixels;
        const T *xp = x + pl * plane_in;
        y[e] = (T)pw_col2im_pixel(&g, as_f(xp), as_d(xp), q);
    }
}

template <typename T>
__global__ void __launch_bounds__(WIN_THREADS) im2col_kernel(struct col2im_geom g, const T *dy, T *dx)
{
    const int64_t plane_out = g.kernel * g.cols;
    WIN_LOOP(e, g.n * g.c * plane_out) {
        int64_t pl = e / plane_out, q = pw_im2col_src(&g, e % plane_out);
        dx[e] = q < 0 ? (T)0 : dy[pl * g.pixels + q];
    }
}

__global__ void __launch_bounds__(WIN_THREADS)
    unpool_owner_kernel(struct unpool_geom g, int64_t n, const int64_t *ind, unsigned long long *owner,
                        unsigned long long *bad)
{
    WIN_LOOP(j, n) {
        int64_t q = ind[j];
        if (q < 0 || q >= g.inf_numel)
            atomicMin(bad, (unsigned long long)j);
        else
            atomicMin(owner + q, ~(unsigned long long)j);
    }
}

template <typename T>
__global__ void __launch_bounds__(WIN_THREADS)
    unpool_move_kernel(int grad, struct unpool_geom g, int64_t n, const int64_t *ind,
                       const unsigned long long *owner, T *x, T *y)
{
    WIN_LOOP(j, n) {
        int64_t q = ind[j];
        int win = q >= 0 && q < g.inf_numel && owner[q] == ~(unsigned long long)j;
        if (grad)
            x[j] = win ? y[pw_unpool_dst(&g, q)] : (T)0;
        else if (win)
            y[pw_unpool_dst(&g, q)] = x[j];
    }
}

template <typename T>
__global__ void __launch_bounds__(WIN_THREADS)
    dft_kernel(struct dft_geom g, int64_t nf, int64_t step, const T *x, const T *w, T *y)
{
    WIN_LOOP(e, g.outer * nf * g.out_len * g.inner) {
        double re, im;
        pw_dft_out(&g, nf, step, as_f(x), as_d(x), as_f(w), as_d(w), e, &re, &im);
        y[e * g.out_c] = (T)re;
        if (g.out_c == 2)
            y[e * g.out_c + 1] = (T)im;
    }
}

extern "C" cudaError_t cuda_dft_launch(cudaStream_t stream, int f64, const struct dft_geom *g, int64_t frames,
                                       int64_t step, const void *x, const void *window, void *y)
{
    int64_t nf = frames ? frames : 1, n = g->outer * nf * g->out_len * g->inner;
    if (f64)
        dft_kernel<double><<<win_blocks(n), WIN_THREADS, 0, stream>>>(*g, nf, step, (const double *)x,
                                                                      (const double *)window, (double *)y);
    else
        dft_kernel<float><<<win_blocks(n), WIN_THREADS, 0, stream>>>(*g, nf, step, (const float *)x,
                                                                     (const float *)window, (float *)y);
    return cudaGetLastError();
}

template <typename T>
__global__ void __launch_bounds__(WIN_THREADS)
    dft_grad_x_kernel(struct dft_geom g, int64_t nf, int64_t step, const T *dy, const T *w, T *dx)
{
    WIN_LOOP(e, g.outer * g.in_len * g.inner) {
        double d[2];
        pw_dft_grad_x(&g, nf, step, as_f(dy), as_d(dy), as_f(w), as_d(w), e / (g.in_len * g.inner),
                      e / g.inner % g.in_len, e % g.inner, d);
        for (int r = 0; r < g.in_c; r++)
            dx[e * g.in_c + r] = (T)d[r];
    }
}

template <typename T>
__global__ void __launch_bounds__(WIN_THREADS)
    dft_grad_w_kernel(struct dft_geom g, int64_t nf, int64_t step, const T *dy, const T *x, T *dw)
{
    WIN_LOOP(t, g.n)
        dw[t] = (T)pw_dft_grad_w(&g, nf, step, as_f(dy), as_d(dy), as_f(x), as_d(x), t);
}

extern "C" cudaError_t cuda_dft_grad_launch(cudaStream_t stream, int f64, const struct dft_geom *g,
                                            int64_t frames, int64_t step, const void *dy, const void *x,
                                            const void *window, void *dx, void *dw)
{
    int64_t nf = frames ? frames : 1, n = g->outer * g->in_len * g->inner;
    if (f64) {
        dft_grad_x_kernel<double><<<win_blocks(n), WIN_THREADS, 0, stream>>>(
            *g, nf, step, (const double *)dy, (const double *)window, (double *)dx);
        if (dw)
            dft_grad_w_kernel<double><<<win_blocks(g->n), WIN_THREADS, 0, stream>>>(
                *g, nf, step, (const double *)dy, (const double *)x, (double *)dw);
    } else {
        dft_grad_x_kernel<float><<<win_blocks(n), WIN_THREADS, 0, stream>>>(
            *g, nf, step, (const float *)dy, (const float *)window, (float *)dx);
        if (dw)
            dft_grad_w_kernel<float><<<win_blocks(g->n), WIN_THREADS, 0, stream>>>(
                *g, nf, step, (const float *)dy, (const float *)x, (float *)dw);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_lp_pool_launch(cudaStream_t stream, int f64, const struct pool_win *w,
                                           int64_t planes, double p, const void *x, void *y)
{
    int64_t n = planes * w->out[0] * w->out[1] * w->out[2];
    if (f64)
        lp_pool_kernel<double><<<win_blocks(n), WIN_THREADS, 0, stream>>>(*w, planes, p, (const double *)x,
                                                                          (double *)y);
    else
        lp_pool_kernel<float><<<win_blocks(n), WIN_THREADS, 0, stream>>>(*w, planes, p, (const float *)x,
                                                                        (float *)y);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_lp_pool_grad_launch(cudaStream_t stream, int f64, const struct pool_win *w,
                                                int64_t planes, double p, const void *dy, const void *x,
                                                const void *y, void *dx)
{
    int64_t n = planes * w->in[0] * w->in[1] * w->in[2];
    if (f64)
        lp_pool_grad_kernel<double><<<win_blocks(n), WIN_THREADS, 0, stream>>>(
            *w, planes, p, (const double *)dy, (const double *)x, (const double *)y, (double *)dx);
    else
        lp_pool_grad_kernel<float><<<win_blocks(n), WIN_THREADS, 0, stream>>>(
            *w, planes, p, (const float *)dy, (const float *)x, (const float *)y, (float *)dx);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_col2im_launch(cudaStream_t stream, int f64, const struct col2im_geom *g,
                                          const void *x, void *y)
{
    int64_t n = g->n * g->c * g->pixels;
    if (f64)
        col2im_kernel<double><<<win_blocks(n), WIN_THREADS, 0, stream>>>(*g, (const double *)x, (double *)y);
    else
        col2im_kernel<float><<<win_blocks(n), WIN_THREADS, 0, stream>>>(*g, (const float *)x, (float *)y);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_im2col_launch(cudaStream_t stream, int f64, const struct col2im_geom *g,
                                          const void *dy, void *dx)
{
    int64_t n = g->n * g->c * g->kernel * g->cols;
    if (f64)
        im2col_kernel<double><<<win_blocks(n), WIN_THREADS, 0, stream>>>(*g, (const double *)dy, (double *)dx);
    else
        im2col_kernel<float><<<win_blocks(n), WIN_THREADS, 0, stream>>>(*g, (const float *)dy, (float *)dx);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_unpool_owner_launch(cudaStream_t stream, const struct unpool_geom *g, int64_t n,
                                                const int64_t *ind, unsigned long long *owner,
                                                unsigned long long *bad)
{
    unpool_owner_kernel<<<win_blocks(n), WIN_THREADS, 0, stream>>>(*g, n, ind, owner, bad);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_unpool_move_launch(cudaStream_t stream, int grad, size_t esize,
                                               const struct unpool_geom *g, int64_t n, const int64_t *ind,
                                               const unsigned long long *owner, void *x, void *y)
{
    switch (esize) {
    case 1:
        unpool_move_kernel<uint8_t><<<win_blocks(n), WIN_THREADS, 0, stream>>>(grad, *g, n, ind, owner,
                                                                               (uint8_t *)x, (uint8_t *)y);
        break;
    case 2:
        unpool_move_kernel<uint16_t><<<win_blocks(n), WIN_THREADS, 0, stream>>>(grad, *g, n, ind, owner,
                                                                                (uint16_t *)x, (uint16_t *)y);
        break;
    case 4:
        unpool_move_kernel<uint32_t><<<win_blocks(n), WIN_THREADS, 0, stream>>>(grad, *g, n, ind, owner,
                                                                                (uint32_t *)x, (uint32_t *)y);
        break;
    default:
        unpool_move_kernel<uint64_t><<<win_blocks(n), WIN_THREADS, 0, stream>>>(grad, *g, n, ind, owner,
                                                                                (uint64_t *)x, (uint64_t *)y);
        break;
    }
    return cudaGetLastError();
}
