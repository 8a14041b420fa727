/* ops/pool-window.h — the window arithmetic of LpPool and LpPoolGrad
 * (ops/lp_pool.c), Col2Im and its adjoint Im2Col (ops/col2im.c),
 * MaxUnpool's index embedding (ops/max_unpool.c) and the DFT / STFT sums
 * (ops/signal.c; the CPU reads the same twiddles from a table): plain C that the CPU
 * kernels and the CUDA kernels (ops/cuda/window_kernels.cu) both compile, so
 * that both backends visit the same taps in the same order and compute the
 * same terms. A struct pool_win is an nn_geom's window (3-D, leading unit
 * axes) without the oneDNN types nn-impl.h brings. Not part of the ops/
 * interface.
 */
#ifndef DTRX_OPS_POOL_WINDOW_H
#define DTRX_OPS_POOL_WINDOW_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define PW_HD __host__ __device__
#else
#define PW_HD
#endif

struct pool_win {
    int64_t in[3], out[3], k[3], stride[3], dil[3], pad[3];   /* pad: the leading pads */
};

/* The taps [*lo, *hi) of output position o's window along axis j that lie
 * inside the input; returns the window's first input position. */
static inline PW_HD int64_t pw_taps(const struct pool_win *w, int j, int64_t o, int64_t *lo,
                                    int64_t *hi)
{
    int64_t start = o * w->stride[j] - w->pad[j], d = w->dil[j], n = w->in[j];
    int64_t a = start >= 0 ? 0 : (-start + d - 1) / d;
    int64_t b = start >= n ? 0 : (n - 1 - start) / d + 1;
    if (b > w->k[j])
        b = w->k[j];
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
    return start;
}

/* The output position along axis j whose window's tap kk is input
 * position i, or -1. */
static inline PW_HD int64_t pw_out_of(const struct pool_win *w, int j, int64_t i, int64_t kk)
{
    int64_t num = i + w->pad[j] - kk * w->dil[j];
    if (num < 0 || num % w->stride[j])
        return -1;
    int64_t o = num / w->stride[j];
    return o < w->out[j] ? o : -1;
}

static inline PW_HD double pw_pow_abs(double v, double p)
{
    v = fabs(v);
    return p == 2 ? v * v : p == 1 ? v : pow(v, p);
}

static inline PW_HD double pw_root(double s, double p)
{
    return p == 2 ? sqrt(s) : p == 1 ? s : pow(s, 1.0 / p);
}

/* d y / d x * dy for one window: sign(x) |x|^(p-1) / y^(p-1) * dy, 0 where y is 0. */
static inline PW_HD double pw_lp_grad_term(double dy, double x, double y, double p)
{
    if (y == 0)
        return 0;
    if (p == 2)
        return dy * x / y;
    double sx = x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    if (p == 1)
        return dy * sx;
    return dy * sx * pow(fabs(x), p - 1) / pow(y, p - 1);
}

/* LpPool's output element o (flat within one plane) over the plane x. */
static inline PW_HD double pw_lp_forward(const struct pool_win *w, double p, const float *xf,
                                         const double *xd, int64_t o)
{
    int64_t ow = o % w->out[2], oh = o / w->out[2] % w->out[1], od = o / (w->out[2] * w->out[1]);
    int64_t dlo, dhi, hlo, hhi, wlo, whi;
    int64_t d0 = pw_taps(w, 0, od, &dlo, &dhi), h0 = pw_taps(w, 1, oh, &hlo, &hhi),
            w0 = pw_taps(w, 2, ow, &wlo, &whi);
    double s = 0;
    for (int64_t kd = dlo; kd < dhi; kd++)
        for (int64_t kh = hlo; kh < hhi; kh++) {
            int64_t row = ((d0 + kd * w->dil[0]) * w->in[1] + h0 + kh * w->dil[1]) * w->in[2] + w0;
            for (int64_t kw = wlo; kw < whi; kw++) {
                int64_t i = row + kw * w->dil[2];
                s += pw_pow_abs(xf ? (double)xf[i] : xd[i], p);
            }
        }
    return pw_root(s, p);
}

/* LpPoolGrad's input element i (flat within one plane): the windows that
 * hold it in ascending output order (taps kk descending). */
static inline PW_HD double pw_lp_backward(const struct pool_win *w, double p, const float *dyf,
                                          const float *xf, const float *yf, const double *dyd,
                                          const double *xd, const double *yd, int64_t i)
{
    int64_t iw = i % w->in[2], ih = i / w->in[2] % w->in[1], id = i / (w->in[2] * w->in[1]);
    double xi = xf ? (double)xf[i] : xd[i], s = 0;
    for (int64_t kd = w->k[0] - 1; kd >= 0; kd--) {
        int64_t od = pw_out_of(w, 0, id, kd);
        if (od < 0)
            continue;
        for (int64_t kh = w->k[1] - 1; kh >= 0; kh--) {
            int64_t oh = pw_out_of(w, 1, ih, kh);
            if (oh < 0)
                continue;
            for (int64_t kw = w->k[2] - 1; kw >= 0; kw--) {
                int64_t ow = pw_out_of(w, 2, iw, kw);
                if (ow < 0)
                    continue;
                int64_t o = (od * w->out[1] + oh) * w->out[2] + ow;
                s += pw_lp_grad_term(dyf ? (double)dyf[o] : dyd[o], xi, yf ? (double)yf[o] : yd[o], p);
            }
        }
    }
    return s;
}

/* ---- Col2Im ------------------------------------------------------------------
 * input [n, c * kernel, cols] -> output [n, c, image...]; the blocks of
 * kernel positions (row-major over blk) slide over the padded image with
 * stride and dilation, cols of them (row-major over col). */
#define PW_MAX_AXES 6

struct col2im_geom {
    int nsp;
    int64_t n, c, kernel, cols, pixels;
    int64_t img[PW_MAX_AXES], blk[PW_MAX_AXES], col[PW_MAX_AXES];
    int64_t stride[PW_MAX_AXES], dil[PW_MAX_AXES], pad[PW_MAX_AXES];
};

/* Output pixel q (flat within one channel) of channel plane x (its kernel
 * rows, each `cols` long): the sum over kernel positions in ascending order
 * of the column entries that land on q. */
static inline PW_HD double pw_col2im_pixel(const struct col2im_geom *g, const float *xf,
                                           const double *xd, int64_t q)
{
    int64_t pos[PW_MAX_AXES];
    for (int d = g->nsp - 1; d >= 0; d--) {
        pos[d] = q % g->img[d];
        q /= g->img[d];
    }
    double s = 0;
    for (int64_t k = 0; k < g->kernel; k++) {
        int64_t kk = k, colflat = 0, mul = 1;
        int ok = 1;
        for (int d = g->nsp - 1; d >= 0 && ok; d--) {
            int64_t kd = kk % g->blk[d];
            kk /= g->blk[d];
            int64_t num = pos[d] + g->pad[d] - kd * g->dil[d];
            if (num < 0 || num % g->stride[d] || num / g->stride[d] >= g->col[d])
                ok = 0;
            else {
                colflat += num / g->stride[d] * mul;
                mul *= g->col[d];
            }
        }
        if (ok) {
            int64_t e = k * g->cols + colflat;
            s += xf ? (double)xf[e] : xd[e];
        }
    }
    return s;
}

/* Im2Col, the adjoint: entry e = (k, col) of one channel's column block
 * reads image pixel, or gives -1 where the block lies in the padding. */
static inline PW_HD int64_t pw_im2col_src(const struct col2im_geom *g, int64_t e)
{
    int64_t cl = e % g->cols, k = e / g->cols, q = 0, mul = 1;
    for (int d = g->nsp - 1; d >= 0; d--) {
        int64_t cd = cl % g->col[d], kd = k % g->blk[d];
        cl /= g->col[d];
        k /= g->blk[d];
        int64_t p = cd * g->stride[d] - g->pad[d] + kd * g->dil[d];
        if (p < 0 || p >= g->img[d])
            return -1;
        q += p * mul;
        mul *= g->img[d];
    }
    return q;
}

/* ---- MaxUnpool ----------------------------------------------------------------
 * Indices count over the inferred shape (inf); the result sits in the
 * leading corner of the output shape (out), as the ONNX reference places it. */
struct unpool_geom {
    int rank;
    int64_t inf[PW_MAX_AXES + 2], out[PW_MAX_AXES + 2];
    int64_t inf_numel;
};

/* Flat output offset of inferred flat index q. */
static inline PW_HD int64_t pw_unpool_dst(const struct unpool_geom *g, int64_t q)
{
    int64_t o = 0, mul = 1;
    for (int d = g->rank - 1; d >= 0; d--) {
        o += q % g->inf[d] * mul;
        q /= g->inf[d];
        mul *= g->out[d];
    }
    return o;
}

/* ---- DFT and STFT (ops/signal.c) ----------------------------------------------
 * One transform along an axis: `outer` x `inner` lines; input element t of
 * line (o, i), component r, at ((o * in_len + t) * inner + i) * in_c + r.
 * STFT's frames (nf of them, `step` apart) are lines of one signal too. */
struct dft_geom {
    int64_t outer, inner, in_len, out_len, n;
    int in_c, out_c, axis;
    int inverse, onesided;
};

#define PW_PI 3.141592653589793

/* Output element e (over [outer, nf, out_len, inner]) of the transform, as
 * the CPU computes it: the twiddle of angle index j is cos/sin(2 pi j / n),
 * the sum runs over t (or, one-sided inverse, over k) ascending, in double. */
static inline PW_HD void pw_dft_out(const struct dft_geom *g, int64_t nf, int64_t step,
                                    const float *xf, const double *xd, const float *wf,
                                    const double *wd, int64_t e, double *re, double *im)
{
    const int64_t n = g->n;
    int64_t i = e % g->inner, k = e / g->inner % g->out_len, f = e / (g->inner * g->out_len) % nf;
    int64_t o = e / (g->inner * g->out_len * nf);
    const double sign = g->inverse ? 1.0 : -1.0, scale = g->inverse ? 1.0 / (double)n : 1.0;
    double sr = 0, si = 0;
    if (g->inverse && g->onesided) {
        int64_t have = g->in_len < n / 2 + 1 ? g->in_len : n / 2 + 1, st = k % n;
        for (int64_t kk = 0; kk < n; kk++) {
            int64_t src = kk <= n / 2 ? kk : n - kk;
            double a = 0, b = 0;
            if (src < have) {
                int64_t x = ((o * g->in_len + src) * g->inner + i) * g->in_c;
                a = xf ? (double)xf[x] : xd[x];
                if (g->in_c == 2)
                    b = xf ? (double)xf[x + 1] : xd[x + 1];
            }
            if (kk > n / 2)
                b = -b;
            /* bin kk at output t = k: angle index kk * k mod n */
            int64_t j = kk * st % n;
            double c = cos(2.0 * PW_PI * (double)j / (double)n), s = sign * sin(2.0 * PW_PI * (double)j / (double)n);
            sr += a * c - b * s;
            si += a * s + b * c;
        }
    } else {
        int64_t base = f * step, avail = g->in_len - base;
        int64_t m = avail < n ? avail : n, j = 0, st = k % n;
        for (int64_t t = 0; t < m; t++) {
            int64_t x = ((o * g->in_len + base + t) * g->inner + i) * g->in_c;
            double w = wf ? (double)wf[t] : wd ? wd[t] : 1.0;
            double a = (xf ? (double)xf[x] : xd[x]) * w;
            double b = g->in_c == 2 ? (xf ? (double)xf[x + 1] : xd[x + 1]) * w : 0;
            double c = cos(2.0 * PW_PI * (double)j / (double)n), s = sign * sin(2.0 * PW_PI * (double)j / (double)n);
            sr += a * c - b * s;
            si += a * s + b * c;
            j += st;
            if (j >= n)
                j -= n;
        }
    }
    *re = sr * scale;
    *im = si * scale;
}

/* DFTGrad: the adjoint (gr, gi) of sample t of line (o, f, i), t below
 * pw_dft_samples(); dY as the forward's output. Sums run over the bins
 * ascending (the one-sided inverse: bins j then n - j, each over t). */
static inline PW_HD int64_t pw_dft_samples(const struct dft_geom *g, int64_t f, int64_t step)
{
    if (g->inverse && g->onesided)
        return g->in_len < g->n / 2 + 1 ? g->in_len : g->n / 2 + 1;
    int64_t avail = g->in_len - f * step;
    return avail < g->n ? avail : g->n;
}

static inline PW_HD void pw_dft_adjoint(const struct dft_geom *g, int64_t nf, const float *dyf,
                                        const double *dyd, int64_t o, int64_t f, int64_t i, int64_t t,
                                        double *gr, double *gi)
{
    const int64_t n = g->n;
    const double sign = g->inverse ? 1.0 : -1.0, scale = g->inverse ? 1.0 / (double)n : 1.0;
    double re = 0, im = 0;
    if (g->inverse && g->onesided) {
        /* x_u = (1/n) sum_k Re(V_k e^{i theta}); V_t at bin t, conj(V_t) at n - t */
        for (int pass = 0; pass < 2; pass++) {
            int64_t k = pass ? n - t : t;
            if (pass && !(t >= 1 && k > n / 2 && k < n))
                continue;
            int64_t idx = 0, st = k % n;
            for (int64_t u = 0; u < n; u++) {
                int64_t e = (o * n + u) * g->inner + i;
                double d = dyf ? (double)dyf[e] : dyd[e], sn = sin(2.0 * PW_PI * (double)idx / (double)n);
                re += d * cos(2.0 * PW_PI * (double)idx / (double)n);
                im += pass ? d * sn : -d * sn;
                idx += st;
                if (idx >= n)
                    idx -= n;
            }
        }
    } else {
        int64_t idx = 0, st = t % n;
        for (int64_t k = 0; k < g->out_len; k++) {
            int64_t e = (((o * nf + f) * g->out_len + k) * g->inner + i) * 2;
            double yr = dyf ? (double)dyf[e] : dyd[e], yi = dyf ? (double)dyf[e + 1] : dyd[e + 1];
            double cc = cos(2.0 * PW_PI * (double)idx / (double)n);
            double ss = sign * sin(2.0 * PW_PI * (double)idx / (double)n);
            re += yr * cc + yi * ss;
            im += yi * cc - yr * ss;
            idx += st;
            if (idx >= n)
                idx -= n;
        }
    }
    *gr = re * scale;
    *gi = im * scale;
}

/* dX at element (o, p, i) (both components into dx[0..in_c)): the adjoints
 * of the frames holding sample p, frames ascending, times the window. */
static inline PW_HD void pw_dft_grad_x(const struct dft_geom *g, int64_t nf, int64_t step,
                                       const float *dyf, const double *dyd, const float *wf,
                                       const double *wd, int64_t o, int64_t p, int64_t i, double *dx)
{
    dx[0] = dx[1] = 0;
    for (int64_t f = 0; f < nf; f++) {
        int64_t t = p - f * step;
        if (t < 0)
            break;
        if (t >= pw_dft_samples(g, f, step))
            continue;
        double gr, gi, w = wf ? (double)wf[t] : wd ? wd[t] : 1.0;
        pw_dft_adjoint(g, nf, dyf, dyd, o, f, i, t, &gr, &gi);
        dx[0] += gr * w;
        dx[1] += gi * w;
    }
}

/* dwindow at tap t (STFT: inner 1): over batches and frames ascending. */
static inline PW_HD double pw_dft_grad_w(const struct dft_geom *g, int64_t nf, int64_t step,
                                         const float *dyf, const double *dyd, const float *xf,
                                         const double *xd, int64_t t)
{
    double s = 0;
    for (int64_t o = 0; o < g->outer; o++)
        for (int64_t f = 0; f < nf; f++) {
            if (t >= pw_dft_samples(g, f, step))
                continue;
            double gr, gi;
            pw_dft_adjoint(g, nf, dyf, dyd, o, f, 0, t, &gr, &gi);
            int64_t e = (o * g->in_len + f * step + t) * g->in_c;
            double a = xf ? (double)xf[e] : xd[e];
            double b = g->in_c == 2 ? (xf ? (double)xf[e + 1] : xd[e + 1]) : 0;
            s += a * gr + b * gi;
        }
    return s;
}

#if !defined(__CUDACC__) && !defined(__cplusplus)
/* The checked geometry of one call (op_error on bad shapes or attributes):
 * Col2Im / Col2ImGrad (ops/col2im.c), MaxUnpool / MaxUnpoolGrad
 * (ops/max_unpool.c); and the first of n indices outside the unpooled
 * tensor, or -1. */
struct op_call;
int col2im_geom(const struct op_call *c, struct col2im_geom *g);
int max_unpool_geom(const struct op_call *c, struct unpool_geom *g);
int64_t max_unpool_bad_index(const struct unpool_geom *g, const int64_t *ind, int64_t n);
/* DFT or STFT (ops/signal.c): the transform, and STFT's frames and step
 * (0 and 1 for DFT). */
int signal_dft_geom(const struct op_call *c, struct dft_geom *g, int64_t *frames, int64_t *step);
/* DFTGrad (ops/signal.c): the forward's transform, frames (0 for DFT) and step. */
int signal_dft_grad_geom(const struct op_call *c, struct dft_geom *g, int64_t *frames, int64_t *step);
#endif

#endif
