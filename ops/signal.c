/* ops/signal.c — DFT (opset 17: axis attribute, default 1; opset 20: axis
 * as optional input 2, default -2) and STFT (opset 17), float32 and double.
 *
 * A signal tensor is [..., n, ..., 1 or 2]: its last axis holds a real
 * value (1) or a complex one as (re, im) (2). DFT transforms along `axis`
 * with length dft_length (input 1; default the axis' length, or
 * 2 * (len - 1) for the one-sided inverse), zero-padding or truncating the
 * input; onesided keeps bins 0 .. n/2 of a forward transform; inverse
 * scales by 1/n; the one-sided inverse (numpy's irfft) reads a Hermitian
 * half spectrum and gives a real output (last axis 1). STFT frames the
 * signal [batch, len, 1 or 2] with frame_step, multiplies by the window
 * (input 2, default ones) and transforms frame_length samples of each frame:
 * [batch, frames, bins, 2].
 *
 * The transform is the plain O(n * m) sum, accumulated in double over a
 * table of cos/sin(2 pi j / n) (the exponent k * t is reduced mod n exactly,
 * in integers), one line at a time in a fixed order: deterministic, and
 * exact to double rounding before the final cast. The table and one line
 * of input come from budgeted scratch. Gradients: DFTGrad (see the end of
 * the file). The CUDA kernels of DFT, STFT and DFTGrad (ops/cuda/window.c)
 * sum the same terms in the same order (ops/pool-window.h's pw_dft_*).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"

/* pi as numpy has it (M_PI is not ISO C) */
#define SIGNAL_PI 3.141592653589793
#include "ops/nn-impl.h"
#include "ops/pool-window.h"

#define SIGNAL_TYPES "float, double"

struct dft_params {
    int64_t axis;                  /* opset 17's attribute (opset 20: the default -2) */
    int inverse, onesided;
};

static int dft_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    struct dft_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->axis = version >= 20 ? -2 : onnx_node_attr_int(node, "axis", 1);
    if (version >= 20 && onnx_node_attr(node, "axis")) {
        free(p);
        *params = NULL;
        ew_parse_error(err, err_size, "axis is an input from opset 20, not an attribute");
        return -1;
    }
    p->inverse = onnx_node_attr_int(node, "inverse", 0) != 0;
    p->onesided = onnx_node_attr_int(node, "onesided", 0) != 0;
    return 0;
}

static int stft_parse(const struct onnx_node *node, int version, void **params, char *err,
                      size_t err_size)
{
    (void)version;
    struct dft_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->onesided = onnx_node_attr_int(node, "onesided", 1) != 0;
    return 0;
}

/* A scalar (or one-element) integer host input into *v; -1 after op_error. */
static int scalar_int(const struct op_call *c, int i, const char *what, int64_t *v)
{
    const struct tensor *t = c->in[i];
    char d[128];
    if ((t->dtype != ONNX_DTYPE_INT64 && t->dtype != ONNX_DTYPE_INT32) || tensor_numel(t) != 1 ||
        t->rank > 1)
        return op_error(c, "%s %s must be an int32 or int64 scalar", what,
                        tensor_describe(t, d, sizeof d));
    *v = tensor_get_int(t, 0);
    return 0;
}

static int dft_geom(const struct op_call *c, struct dft_geom *g)
{
    const struct dft_params *p = c->params;
    const struct tensor *x = c->in[0];
    char d[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "input", x->dtype, SIGNAL_TYPES);
    if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
        return op_error(c, "input %s must be [..., signal, 1 or 2] (real or complex last axis)",
                        tensor_describe(x, d, sizeof d));
    int64_t axis = p->axis;
    if (c->version < 20 && c->n_in > 2)
        return op_error(c, "DFT-17 takes 2 inputs (axis is an attribute), got %d", c->n_in);
    if (c->version >= 20 && c->n_in > 2 && c->in[2] && scalar_int(c, 2, "axis", &axis))
        return -1;
    int r = x->rank;
    if (axis < -r || axis > r - 2 || axis == -1)
        return op_error(c, "axis %lld is out of range for input %s (the last axis is the complex one)",
                        (long long)axis, tensor_describe(x, d, sizeof d));
    int a = (int)(axis < 0 ? axis + r : axis);
    g->outer = g->inner = 1;
    for (int i = 0; i < a; i++)
        g->outer *= x->dims[i];
    for (int i = a + 1; i < r - 1; i++)
        g->inner *= x->dims[i];
    g->in_len = x->dims[a];
    g->axis = a;
    g->in_c = (int)x->dims[r - 1];
    g->inverse = p->inverse;
    g->onesided = p->onesided;
    int64_t n = g->inverse && g->onesided ? 2 * (g->in_len - 1) : g->in_len;
    if (c->n_in > 1 && c->in[1] && scalar_int(c, 1, "dft_length", &n))
        return -1;
    if (n < 1)
        return op_error(c, "dft_length %lld must be positive", (long long)n);
    if (g->onesided && !g->inverse && g->in_c == 2)
        return op_error(c, "onesided needs a real input (last axis 1), got %s",
                        tensor_describe(x, d, sizeof d));
    g->n = n;
    g->out_len = g->onesided && !g->inverse ? n / 2 + 1 : n;
    g->out_c = g->inverse && g->onesided ? 1 : 2;
    return 0;
}

static int dft_infer(struct op_call *c)
{
    struct dft_geom g;
    if (dft_geom(c, &g))
        return -1;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    *y = (struct tensor){ .dtype = x->dtype, .rank = x->rank };
    memcpy(y->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    y->dims[g.axis] = g.out_len;
    y->dims[x->rank - 1] = g.out_c;
    return 0;
}

/* The table cos/sin(2 pi j / n), j < n, in double. */
static void twiddles(int64_t n, double *cs, double *sn)
{
    for (int64_t j = 0; j < n; j++) {
        double ang = 2.0 * SIGNAL_PI * (double)j / (double)n;
        cs[j] = cos(ang);
        sn[j] = sin(ang);
    }
}

/* out[k] = scale * sum_{t < m} v[t] e^{sign 2 pi i k t / n} for k < count;
 * v and out interleaved complex doubles. */
static void dft_line(int64_t n, int64_t m, int64_t count, double sign, double scale,
                     const double *cs, const double *sn, const double *v, double *out)
{
    for (int64_t k = 0; k < count; k++) {
        double re = 0, im = 0;
        int64_t j = 0, step = k % n;
        for (int64_t t = 0; t < m; t++) {
            double c = cs[j], s = sign * sn[j], a = v[2 * t], b = v[2 * t + 1];
            re += a * c - b * s;
            im += a * s + b * c;
            j += step;
            if (j >= n)
                j -= n;
        }
        out[2 * k] = re * scale;
        out[2 * k + 1] = im * scale;
    }
}

/* The transform of every line of g from x to y (float or double), with
 * scratch for the table, one input line (n complex) and one output line. */
static int dft_run(const struct op_call *c, const struct dft_geom *g, int dtype, const void *x,
                   void *y, const double *window, int64_t frames, int64_t frame_step)
{
    const int64_t n = g->n;
    double *buf = nn_scratch_alloc(c, sizeof(double) * (size_t)(2 * n + 2 * n + 2 * n));
    if (!buf)
        return op_error(c, "no scratch memory for a transform of length %lld", (long long)n);
    double *cs = buf, *sn = buf + n, *v = buf + 2 * n, *out = buf + 4 * n;
    twiddles(n, cs, sn);
    const int dbl = dtype == ONNX_DTYPE_DOUBLE;
    const double sign = g->inverse ? 1.0 : -1.0, scale = g->inverse ? 1.0 / (double)n : 1.0;
    /* STFT: frames of one signal are lines too; `frames` 0 for DFT. */
    const int64_t nf = frames ? frames : 1;
    for (int64_t o = 0; o < g->outer; o++)
        for (int64_t f = 0; f < nf; f++)
            for (int64_t i = 0; i < g->inner; i++) {
                int64_t m;
                if (g->inverse && g->onesided) {
                    /* the full Hermitian spectrum of the half the input holds */
                    int64_t have = g->in_len < n / 2 + 1 ? g->in_len : n / 2 + 1;
                    for (int64_t k = 0; k < n; k++) {
                        int64_t src = k <= n / 2 ? k : n - k;
                        double a = 0, b = 0;
                        if (src < have) {
                            int64_t e = ((o * g->in_len + src) * g->inner + i) * g->in_c;
                            a = dbl ? ((const double *)x)[e] : ((const float *)x)[e];
                            if (g->in_c == 2)
                                b = dbl ? ((const double *)x)[e + 1] : ((const float *)x)[e + 1];
                        }
                        v[2 * k] = a;
                        v[2 * k + 1] = k <= n / 2 ? b : -b;
                    }
                    m = n;
                } else {
                    int64_t base = frames ? f * frame_step : 0;
                    int64_t avail = g->in_len - base;
                    m = avail < n ? avail : n;
                    for (int64_t t = 0; t < m; t++) {
                        int64_t e = ((o * g->in_len + base + t) * g->inner + i) * g->in_c;
                        double a = dbl ? ((const double *)x)[e] : ((const float *)x)[e];
                        double b = g->in_c == 2
                            ? (dbl ? ((const double *)x)[e + 1] : ((const float *)x)[e + 1]) : 0;
                        double w = window ? window[t] : 1.0;
                        v[2 * t] = a * w;
                        v[2 * t + 1] = b * w;
                    }
                }
                dft_line(n, m, g->out_len, sign, scale, cs, sn, v, out);
                for (int64_t k = 0; k < g->out_len; k++) {
                    int64_t e = (((o * nf + f) * g->out_len + k) * g->inner + i) * g->out_c;
                    if (dbl) {
                        ((double *)y)[e] = out[2 * k];
                        if (g->out_c == 2)
                            ((double *)y)[e + 1] = out[2 * k + 1];
                    } else {
                        ((float *)y)[e] = (float)out[2 * k];
                        if (g->out_c == 2)
                            ((float *)y)[e + 1] = (float)out[2 * k + 1];
                    }
                }
            }
    nn_scratch_free(c, buf);
    return 0;
}

static int dft_cpu(struct op_call *c)
{
    struct dft_geom g;
    if (dft_geom(c, &g))
        return -1;
    return dft_run(c, &g, c->in[0]->dtype, c->in[0]->data, c->out[0]->data, NULL, 0, 0);
}

static struct op_cost dft_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    struct dft_geom g;
    if (c->out[0] && c->in[0]->rank >= 2 && !dft_geom((struct op_call *)c, &g))
        cost.flops = 8.0 * (double)(g.outer * g.inner) * (double)g.out_len * (double)g.n;
    return cost;
}

/* ---- STFT --------------------------------------------------------------------- */

struct stft_geom {
    struct dft_geom d;             /* outer = batch, in_len = signal length, inner 1 */
    int64_t frames, step;
};

static int stft_geom(const struct op_call *c, struct stft_geom *s)
{
    const struct dft_params *p = c->params;
    const struct tensor *x = c->in[0], *w = c->n_in > 2 ? c->in[2] : NULL;
    char d[128], d2[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "signal", x->dtype, SIGNAL_TYPES);
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return op_error(c, "signal %s must be [batch, length, 1 or 2]", tensor_describe(x, d, sizeof d));
    if (w && (w->dtype != x->dtype || w->rank != 1))
        return op_error(c, "window %s must be 1-D of the signal's type %s",
                        tensor_describe(w, d, sizeof d), onnx_dtype_name(x->dtype));
    int64_t step = 0, len = w ? w->dims[0] : x->dims[1];
    if (scalar_int(c, 1, "frame_step", &step))
        return -1;
    if (c->n_in > 3 && c->in[3] && scalar_int(c, 3, "frame_length", &len))
        return -1;
    if (step < 1)
        return op_error(c, "frame_step %lld must be positive", (long long)step);
    if (len < 1 || len > x->dims[1])
        return op_error(c, "frame_length %lld must be in [1, %lld] (the signal's length)",
                        (long long)len, (long long)x->dims[1]);
    if (w && w->dims[0] != len)
        return op_error(c, "window %s does not have frame_length %lld entries (signal %s)",
                        tensor_describe(w, d, sizeof d), (long long)len,
                        tensor_describe(x, d2, sizeof d2));
    if (p->onesided && x->dims[2] == 2)
        return op_error(c, "onesided needs a real signal (last axis 1), got %s",
                        tensor_describe(x, d, sizeof d));
    struct dft_geom *g = &s->d;
    g->outer = x->dims[0];
    g->inner = 1;
    g->in_len = x->dims[1];
    g->in_c = (int)x->dims[2];
    g->n = len;
    g->inverse = 0;
    g->onesided = p->onesided;
    g->out_len = p->onesided ? len / 2 + 1 : len;
    g->out_c = 2;
    s->step = step;
    s->frames = 1 + (x->dims[1] - len) / step;
    return 0;
}

static int stft_infer(struct op_call *c)
{
    struct stft_geom s;
    if (stft_geom(c, &s))
        return -1;
    struct tensor *y = c->out[0];
    *y = (struct tensor){ .dtype = c->in[0]->dtype, .rank = 4,
                          .dims = { s.d.outer, s.frames, s.d.out_len, 2 } };
    return 0;
}

static int stft_cpu(struct op_call *c)
{
    struct stft_geom s;
    if (stft_geom(c, &s))
        return -1;
    const struct tensor *w = c->n_in > 2 ? c->in[2] : NULL;
    double *win = NULL;
    if (w) {
        win = nn_scratch_alloc(c, sizeof(double) * (size_t)s.d.n);
        if (!win)
            return op_error(c, "no scratch memory for the window");
        for (int64_t t = 0; t < s.d.n; t++)
            win[t] = tensor_get_double(w, t);
    }
    int rc = dft_run(c, &s.d, c->in[0]->dtype, c->in[0]->data, c->out[0]->data, win, s.frames, s.step);
    nn_scratch_free(c, win);
    return rc;
}

static struct op_cost stft_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    if (c->out[0])
        cost.flops = 8.0 * (double)tensor_numel(c->out[0]) * (double)c->out[0]->dims[2];
    return cost;
}

/* ---- gradients -------------------------------------------------------------------
 * DFT and STFT are linear in the signal (STFT bilinear in signal and window):
 * DFTGrad(dY[, X, window]) -> dX[, dwindow] applies the transpose of the real
 * map the forward computed, on the forward's resolved geometry pinned as
 * attributes (shape: X's dims; axis, dft_length, inverse, onesided; stft,
 * frame_step). Per line, g_t = the adjoint of sample t: for a forward bin k
 * with angle index k t mod n, g_t += scale (dYr c + dYi s, dYi c - dYr s),
 * s = sign sin; the one-sided inverse's g_j sums the bins j and n - j that
 * its Hermitian extension reads (the second conjugated). dX = g * window,
 * dwindow = sum over frames of (a, b) . g; each element of dX gathers its
 * frames in order, each tap of dwindow its batches and frames: deterministic. */

struct dft_grad_params {
    struct dft_params dft;
    int stft;
    int64_t n, step;
    int n_shape;
    int64_t shape[TENSOR_MAX_RANK];
};

static int dft_grad_parse(const struct onnx_node *node, int version, void **params, char *err,
                          size_t err_size)
{
    (void)version;
    struct dft_grad_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->dft.axis = onnx_node_attr_int(node, "axis", 0);
    p->dft.inverse = onnx_node_attr_int(node, "inverse", 0) != 0;
    p->dft.onesided = onnx_node_attr_int(node, "onesided", 0) != 0;
    p->stft = onnx_node_attr_int(node, "stft", 0) != 0;
    p->n = onnx_node_attr_int(node, "dft_length", 0);
    p->step = onnx_node_attr_int(node, "frame_step", 1);
    p->n_shape = onnx_node_attr_ints(node, "shape", p->shape, TENSOR_MAX_RANK);
    if (p->n_shape < 2 || p->n < 1 || p->step < 1) {
        ew_parse_error(err, err_size, "needs shape (2 to %d dims), dft_length >= 1 and frame_step >= 1",
                       TENSOR_MAX_RANK);
        free(p);
        *params = NULL;
        return -1;
    }
    return 0;
}

/* The forward's geometry from the pinned attributes; dY (input 0) checked. */
static int dft_grad_geom(const struct op_call *c, struct dft_geom *g, int64_t *frames)
{
    const struct dft_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    char d[128];
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "dY", dy->dtype, SIGNAL_TYPES);
    int r = p->n_shape, a = (int)p->dft.axis;
    if (a < 0 || a > r - 2 || (p->shape[r - 1] != 1 && p->shape[r - 1] != 2) || (p->stft && r != 3))
        return op_error(c, "shape and axis %d do not describe a signal", a);
    memset(g, 0, sizeof *g);
    g->outer = g->inner = 1;
    for (int i = 0; i < a; i++)
        g->outer *= p->shape[i];
    for (int i = a + 1; i < r - 1; i++)
        g->inner *= p->shape[i];
    g->axis = a;
    g->in_len = p->shape[a];
    g->in_c = (int)p->shape[r - 1];
    g->n = p->n;
    g->inverse = p->dft.inverse;
    g->onesided = p->dft.onesided;
    g->out_len = g->onesided && !g->inverse ? g->n / 2 + 1 : g->n;
    g->out_c = g->inverse && g->onesided ? 1 : 2;
    *frames = 0;
    int ok;
    if (p->stft) {
        if (g->n > g->in_len)
            return op_error(c, "frame_length %lld is above the signal's %lld", (long long)g->n,
                            (long long)g->in_len);
        *frames = 1 + (g->in_len - g->n) / p->step;
        ok = dy->rank == 4 && dy->dims[0] == g->outer && dy->dims[1] == *frames &&
             dy->dims[2] == g->out_len && dy->dims[3] == 2;
    } else {
        ok = dy->rank == r && dy->dims[a] == g->out_len && dy->dims[r - 1] == g->out_c;
        for (int i = 0; ok && i < r - 1; i++)
            ok = i == a || dy->dims[i] == p->shape[i];
    }
    if (!ok)
        return op_error(c, "dY %s is not the transform's output shape", tensor_describe(dy, d, sizeof d));
    if (p->stft && c->n_in > 1) {
        const struct tensor *x = c->in[1], *w = c->n_in > 2 ? c->in[2] : NULL;
        if (x->dtype != dy->dtype || x->rank != 3 || x->dims[1] != g->in_len || x->dims[2] != g->in_c ||
            (w && (w->dtype != dy->dtype || w->rank != 1 || w->dims[0] != g->n)))
            return op_error(c, "X or the window does not match the shape attribute");
    }
    return 0;
}

static int dft_grad_infer(struct op_call *c)
{
    const struct dft_grad_params *p = c->params;
    struct dft_geom g;
    int64_t frames;
    if (dft_grad_geom(c, &g, &frames))
        return -1;
    *c->out[0] = (struct tensor){ .dtype = c->in[0]->dtype, .rank = p->n_shape };
    memcpy(c->out[0]->dims, p->shape, sizeof(int64_t) * (size_t)p->n_shape);
    if (c->n_out > 1 && c->out[1]) {
        if (!p->stft || c->n_in < 3)
            return op_error(c, "a window gradient needs the STFT's X and window");
        *c->out[1] = (struct tensor){ .dtype = c->in[0]->dtype, .rank = 1, .dims = { g.n } };
    }
    return 0;
}

int signal_dft_grad_geom(const struct op_call *c, struct dft_geom *g, int64_t *frames, int64_t *step)
{
    const struct dft_grad_params *p = c->params;
    *step = p->step;
    return dft_grad_geom(c, g, frames);
}

/* Gathers per element of dX and per tap of dwindow (ops/pool-window.h), so
 * the CUDA kernel runs the same sums in the same order. */
static int dft_grad_cpu(struct op_call *c)
{
    const struct dft_grad_params *p = c->params;
    struct dft_geom g;
    int64_t frames;
    if (dft_grad_geom(c, &g, &frames))
        return -1;
    const int dbl = c->in[0]->dtype == ONNX_DTYPE_DOUBLE;
    const int64_t nf = frames ? frames : 1, step = p->step;
    const struct tensor *xt = c->n_in > 1 ? c->in[1] : NULL, *wt = c->n_in > 2 ? c->in[2] : NULL;
    struct tensor *dxt = c->out[0], *dwt = c->n_out > 1 ? c->out[1] : NULL;
    const float *dyf = dbl ? NULL : c->in[0]->data, *wf = wt && !dbl ? wt->data : NULL;
    const double *dyd = dbl ? c->in[0]->data : NULL, *wd = wt && dbl ? wt->data : NULL;
    const int64_t lines = g.outer * g.in_len * g.inner;
#pragma omp parallel for schedule(static) if (lines * g.n > 65536)
    for (int64_t e = 0; e < lines; e++) {
        double d[2];
        pw_dft_grad_x(&g, nf, step, dyf, dyd, wf, wd, e / (g.in_len * g.inner), e / g.inner % g.in_len,
                      e % g.inner, d);
        for (int r = 0; r < g.in_c; r++) {
            if (dbl)
                ((double *)dxt->data)[e * g.in_c + r] = d[r];
            else
                ((float *)dxt->data)[e * g.in_c + r] = (float)d[r];
        }
    }
    for (int64_t t = 0; dwt && t < g.n; t++) {
        double v = pw_dft_grad_w(&g, nf, step, dyf, dyd, dbl ? NULL : xt->data, dbl ? xt->data : NULL, t);
        if (dbl)
            ((double *)dwt->data)[t] = v;
        else
            ((float *)dwt->data)[t] = (float)v;
    }
    return 0;
}

/* Emits DFTGrad for DFT (dY only) or STFT (dY, X, window: the window's
 * gradient needs X, X's needs the window). */
static int signal_grad(struct grad_ctx *g, int stft)
{
    const struct op_call *f = g->fwd;
    if (g->dy[0] < 0)
        return 0;
    int want_w = stft && f->n_in > 2 && f->in[2] && g->need_dx[2];
    if (!g->need_dx[0] && !want_w)
        return 0;
    struct dft_geom geo;
    struct stft_geom sg;
    int64_t step = 1;
    if (stft) {
        if (stft_geom(f, &sg))
            return grad_error(g, "%s", f->env && f->env->err ? f->env->err : "bad geometry");
        geo = sg.d;
        step = sg.step;
    } else if (dft_geom(f, &geo)) {
        return grad_error(g, "%s", f->env && f->env->err ? f->env->err : "bad geometry");
    }
    const struct tensor *x = f->in[0];
    int64_t shape[TENSOR_MAX_RANK];
    memcpy(shape, x->dims, sizeof(int64_t) * (size_t)x->rank);
    struct onnx_attr a[7] = {
        { .name = "axis", .type = ONNX_ATTR_INT, .i = stft ? 1 : geo.axis },
        { .name = "inverse", .type = ONNX_ATTR_INT, .i = geo.inverse },
        { .name = "onesided", .type = ONNX_ATTR_INT, .i = geo.onesided },
        { .name = "dft_length", .type = ONNX_ATTR_INT, .i = geo.n },
        { .name = "stft", .type = ONNX_ATTR_INT, .i = stft },
        { .name = "frame_step", .type = ONNX_ATTR_INT, .i = step },
        { .name = "shape", .type = ONNX_ATTR_INTS, .n = x->rank, .ints = shape },
    };
    int has_w = stft && f->n_in > 2 && f->in[2];
    int in[3] = { g->dy[0], g->in[0], has_w ? g->in[2] : -1 }, out[2];
    int n_in = stft ? (has_w ? 3 : 2) : 1;
    if (g->emit(g, "DFTGrad", a, 7, n_in, in, want_w ? 2 : 1, out))
        return -1;
    if (g->need_dx[0] && g->add_dx(g, 0, out[0]))
        return -1;
    return want_w ? g->add_dx(g, 2, out[1]) : 0;
}

static int dft_grad(struct grad_ctx *g) { return signal_grad(g, 0); }
static int stft_grad(struct grad_ctx *g) { return signal_grad(g, 1); }

int signal_dft_geom(const struct op_call *c, struct dft_geom *g, int64_t *frames, int64_t *step)
{
    if (!strcmp(c->def->name, "STFT")) {
        struct stft_geom sg;
        if (stft_geom(c, &sg))
            return -1;
        *g = sg.d;
        *frames = sg.frames;
        *step = sg.step;
        return 0;
    }
    *frames = 0;
    *step = 1;
    return dft_geom(c, g);
}

const struct op_def op_dft = {
    .domain = "", .name = "DFT", .since = { 17, 20 },
    .min_in = 1, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = dft_parse, .infer = dft_infer, .cost = dft_cost,
    .kernel = { [BACKEND_CPU] = dft_cpu },
    .host_inputs = (1u << 1) | (1u << 2),
    .grad = dft_grad, .grad_saves_in = (1u << 1) | (1u << 2),
};

const struct op_def op_stft = {
    .domain = "", .name = "STFT", .since = { 17 },
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,
    .parse = stft_parse, .infer = stft_infer, .cost = stft_cost,
    .kernel = { [BACKEND_CPU] = stft_cpu },
    .host_inputs = (1u << 1) | (1u << 3),
    .grad = stft_grad, .grad_saves_in = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 3),
};

const struct op_def op_dft_grad = {
    .domain = "dtrexec", .name = "DFTGrad", .since = { 1 },
    .min_in = 1, .max_in = 3, .min_out = 1, .max_out = 2,
    .parse = dft_grad_parse, .infer = dft_grad_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = dft_grad_cpu },
};
