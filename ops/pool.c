/* ops/pool.c — MaxPool (opset 1, 8, 10, 11, 12, 22; float32, int8, uint8;
 * optional Indices output, storage_order, dilations, ceil_mode, pads,
 * auto_pad), AveragePool (opset 7, 10, 11, 19, 22; count_include_pad,
 * ceil_mode, dilations from 19) and GlobalAveragePool (opset 1, 22), NC +
 * 1..3 spatial axes.
 *
 * Float pooling without Indices goes through oneDNN's pooling primitive
 * (cached per shape); max pooling over an input with NaN or infinity does
 * not (see all_finite). Measured, one thread, ms, own loop / oneDNN, plain NCHW:
 *   max 64x112x112 k3 s2 p1  3.19 / 0.46     avg same   2.03 / 0.47
 *   max 64x56x56 k2 s2       0.50 / 0.10     avg same   0.42 / 0.10
 *   max 256x28x28 k3 s1 p1   2.87 / 0.24     avg same   2.15 / 0.40
 *   max 512x14x14 k2 s2      0.24 / 0.03     avg same   0.23 / 0.07
 * (oneDNN's JIT code is AVX-512, ours portable scalar). Our own loops,
 * parallel over the N*C planes, do the rest: the Indices output, int8/uint8,
 * and include-padding averages whose ceil_mode windows run past the padded
 * input (onnx counts only the covered taps; oneDNN divides by the kernel).
 * Window loops keep a fixed order, so results are deterministic.
 *
 * Gradients: MaxPoolGrad and AveragePoolGrad (domain dtrexec, our loops, see
 * the end of the file); GlobalAveragePool's is a Mul and an Expand.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/nn-params.h"

/* Range [*lo, *hi) of kernel taps k with 0 <= start + k*dil < n. */
static void tap_range(int64_t start, int64_t dil, int64_t k, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t a = start >= 0 ? 0 : (-start + dil - 1) / dil;
    int64_t b = start >= n ? 0 : (n - 1 - start) / dil + 1;
    if (b > k)
        b = k;
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
}

/* Output position o's window along axis j: its first input position (in
 * the padding when negative), returned, and its taps inside the input. */
static inline int64_t window_taps(const struct nn_geom *g, int j, int64_t o, int64_t *lo, int64_t *hi)
{
    int64_t start = o * g->stride[j] - g->pad_lo[j];
    tap_range(start, g->dil[j], g->k[j], g->in[j], lo, hi);
    return start;
}

/* The taps of the window starting at `start` along axis j that lie inside
 * the padded input [-pad_lo, in + pad_hi): what include-padding averages count. */
static inline void window_padded_taps(const struct nn_geom *g, int j, int64_t start,
                                      int64_t *lo, int64_t *hi)
{
    tap_range(start + g->pad_lo[j], g->dil[j], g->k[j], g->in[j] + g->pad_lo[j] + g->pad_hi[j],
              lo, hi);
}

#define MAXPOOL_PLANE(T, LOWEST)                                                           \
    static void maxpool_##T(const struct nn_geom *g, const T *x, T *y, int64_t *ind,        \
                            int storage_order)                                              \
    {                                                                                       \
        const int64_t planes = g->n * g->c, insz = nn_geom_in_size(g),                      \
                      outsz = nn_geom_out_size(g);                                          \
        _Pragma("omp parallel for schedule(static) if (planes * outsz > 32768)")            \
        for (int64_t p = 0; p < planes; p++) {                                              \
            const T *xp = x + p * insz;                                                     \
            T *yp = y + p * outsz;                                                          \
            int64_t *ip = ind ? ind + p * outsz : NULL;                                     \
            for (int64_t od = 0; od < g->out[0]; od++) {                                    \
                int64_t dlo, dhi, d0 = window_taps(g, 0, od, &dlo, &dhi);                   \
                for (int64_t oh = 0; oh < g->out[1]; oh++) {                                \
                    int64_t hlo, hhi, h0 = window_taps(g, 1, oh, &hlo, &hhi);               \
                    for (int64_t ow = 0; ow < g->out[2]; ow++) {                            \
                        int64_t wlo, whi, w0 = window_taps(g, 2, ow, &wlo, &whi);           \
                        T best = LOWEST;                                                    \
                        int64_t bd = -1, bh = 0, bw = 0;                                    \
                        for (int64_t kd = dlo; kd < dhi; kd++) {                            \
                            int64_t id = d0 + kd * g->dil[0];                               \
                            for (int64_t kh = hlo; kh < hhi; kh++) {                        \
                                int64_t ih = h0 + kh * g->dil[1];                           \
                                const T *row = xp + (id * g->in[1] + ih) * g->in[2];        \
                                for (int64_t kw = wlo; kw < whi; kw++) {                    \
                                    int64_t iw = w0 + kw * g->dil[2];                       \
                                    if (bd < 0 || row[iw] > best) {                         \
                                        best = row[iw];                                     \
                                        bd = id;                                            \
                                        bh = ih;                                            \
                                        bw = iw;                                            \
                                    }                                                       \
                                }                                                           \
                            }                                                               \
                        }                                                                   \
                        int64_t o = (od * g->out[1] + oh) * g->out[2] + ow;                 \
                        yp[o] = best;                                                       \
                        if (ip) {                                                           \
                            int64_t s = storage_order                                       \
                                ? (bw * g->in[1] + bh) * g->in[0] + bd                      \
                                : (bd * g->in[1] + bh) * g->in[2] + bw;                     \
                            ip[o] = bd < 0 ? -1 : p * insz + s;                             \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }

MAXPOOL_PLANE(float, -FLT_MAX)
MAXPOOL_PLANE(int8_t, INT8_MIN)
MAXPOOL_PLANE(uint8_t, 0)

int nn_maxpool_forward(const struct op_call *c, const struct nn_geom *g, int dtype,
                       const void *x, void *y, int64_t *indices, int storage_order)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: maxpool_float(g, x, y, indices, storage_order); return 0;
    case ONNX_DTYPE_INT8: maxpool_int8_t(g, x, y, indices, storage_order); return 0;
    case ONNX_DTYPE_UINT8: maxpool_uint8_t(g, x, y, indices, storage_order); return 0;
    default:
        return op_error(c, "element type %s is not supported (float, int8, uint8)",
                        onnx_dtype_name(dtype));
    }
}

int nn_avgpool_forward(const struct op_call *c, const struct nn_geom *g,
                       int count_include_pad, const float *x, float *y)
{
    const int64_t planes = g->n * g->c, insz = nn_geom_in_size(g), outsz = nn_geom_out_size(g);
#pragma omp parallel for schedule(static) if (planes * outsz > 32768)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * insz;
        float *yp = y + p * outsz;
        for (int64_t od = 0; od < g->out[0]; od++) {
            int64_t dlo, dhi, d0 = window_taps(g, 0, od, &dlo, &dhi), dplo, dphi;
            window_padded_taps(g, 0, d0, &dplo, &dphi);
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                int64_t hlo, hhi, h0 = window_taps(g, 1, oh, &hlo, &hhi), hplo, hphi;
                window_padded_taps(g, 1, h0, &hplo, &hphi);
                for (int64_t ow = 0; ow < g->out[2]; ow++) {
                    int64_t wlo, whi, w0 = window_taps(g, 2, ow, &wlo, &whi), wplo, wphi;
                    window_padded_taps(g, 2, w0, &wplo, &wphi);
                    float sum = 0.0f;
                    for (int64_t kd = dlo; kd < dhi; kd++) {
                        int64_t id = d0 + kd * g->dil[0];
                        for (int64_t kh = hlo; kh < hhi; kh++) {
                            const float *row = xp + (id * g->in[1] + h0 + kh * g->dil[1]) * g->in[2];
                            for (int64_t kw = wlo; kw < whi; kw++)
                                sum += row[w0 + kw * g->dil[2]];
                        }
                    }
                    int64_t count = count_include_pad
                        ? (dphi - dplo) * (hphi - hplo) * (wphi - wplo)
                        : (dhi - dlo) * (hhi - hlo) * (whi - wlo);
                    yp[(od * g->out[1] + oh) * g->out[2] + ow] = count > 0 ? sum / (float)count : 0.0f;
                }
            }
        }
    }
    return 0;
}

/* ---- oneDNN pooling ---------------------------------------------------------- */

struct pool_dnnl_key {
    int64_t alg;                       /* dnnl_alg_kind_t */
    struct nn_geom g;                  /* pad_hi widened to cover the last window */
};

static dnnl_status_t pool_dnnl_build(const void *key, dnnl_engine_t eng,
                                     const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd)
{
    const struct pool_dnnl_key *k = key;
    const struct nn_geom *g = &k->g;
    int nsp = (int)g->nsp;
    static const dnnl_format_tag_t tags[4] = { 0, dnnl_ncw, dnnl_nchw, dnnl_ncdhw };
    dnnl_dims_t sd = { g->n, g->c }, dd = { g->n, g->c }, st, kr, dl, pl, pr;
    for (int i = 0; i < nsp; i++) {
        int j = 3 - nsp + i;
        sd[2 + i] = g->in[j];
        dd[2 + i] = g->out[j];
        st[i] = g->stride[j];
        kr[i] = g->k[j];
        dl[i] = g->dil[j] - 1;
        pl[i] = g->pad_lo[j];
        pr[i] = g->pad_hi[j];
    }
    dnnl_memory_desc_t src, dst;
    dnnl_memory_desc_init_by_tag(&src, nsp + 2, sd, dnnl_f32, tags[nsp]);
    dnnl_memory_desc_init_by_tag(&dst, nsp + 2, dd, dnnl_f32, tags[nsp]);
    dnnl_pooling_v2_desc_t desc;
    dnnl_status_t s = dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference,
                                                        (dnnl_alg_kind_t)k->alg, &src, &dst,
                                                        st, kr, dl, pl, pr);
    if (s != dnnl_success)
        return s;
    return dnnl_primitive_desc_create(pd, &desc, attr, eng, NULL);
}

/* Float max or average pooling through oneDNN; -1 (no message needed) when
 * the geometry has semantics oneDNN does not share: oneDNN's include-padding
 * average always divides by the full kernel, ours (onnx's) only by the taps
 * inside the padded input when a ceil_mode window runs past it. */
int nn_pool_forward_dnnl(const struct op_call *c, const struct nn_geom *g, enum nn_pool_kind kind,
                         const float *x, float *y)
{
    struct pool_dnnl_key key;
    memset(&key, 0, sizeof key);
    key.alg = kind == NN_POOL_MAX ? dnnl_pooling_max
        : kind == NN_POOL_AVG_INCLUDE_PAD ? dnnl_pooling_avg_include_padding
        : dnnl_pooling_avg_exclude_padding;
    key.g = *g;
    for (int j = 0; j < 3; j++) {
        int64_t need = (g->out[j] - 1) * g->stride[j] + g->dil[j] * (g->k[j] - 1) + 1
            - g->in[j] - g->pad_lo[j];
        if (need > key.g.pad_hi[j]) {
            if (kind == NN_POOL_AVG_INCLUDE_PAD)
                return -1;
            key.g.pad_hi[j] = need;
        }
    }
    struct nn_dnnl_arg args[2] = { { DNNL_ARG_SRC, NULL, (void *)x }, { DNNL_ARG_DST, NULL, y } };
    return nn_dnnl_run(c, &key, sizeof key, pool_dnnl_build, 2, args);
}

/* ---- MaxPool / AveragePool operators ----------------------------------------- */

static int pool_parse(const struct onnx_node *node, int version, void **params,
                      char *err, size_t err_size)
{
    struct pool_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (%s): out of memory", node->name, node->op_type);
        return -1;
    }
    if (nn_window_attrs_parse(node, &p->w, err, err_size)) {
        free(p);
        return -1;
    }
    if (p->w.n_kernel == 0) {
        snprintf(err, err_size, "node '%s' (%s): attribute kernel_shape is required",
                 node->name, node->op_type);
        free(p);
        return -1;
    }
    p->storage_order = onnx_node_attr_int(node, "storage_order", 0) != 0;
    p->count_include_pad = onnx_node_attr_int(node, "count_include_pad", 0) != 0;
    *params = p;
    return 0;
}

static int pool_geom(const struct op_call *c, struct nn_geom *g)
{
    const struct pool_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (nn_geom_resolve(c, &p->w, x, p->w.kernel, 1, g))
        return -1;
    g->n = x->dims[0];
    g->c = g->m = x->dims[1];
    g->group = 1;
    return 0;
}

static int pool_infer(struct op_call *c)
{
    struct nn_geom g;
    const struct tensor *x = c->in[0];
    int is_max = !strcmp(c->def->name, "MaxPool");
    if (x->dtype != ONNX_DTYPE_FLOAT
        && !(is_max && (x->dtype == ONNX_DTYPE_INT8 || x->dtype == ONNX_DTYPE_UINT8)))
        return op_error(c, "element type %s is not supported (float%s)", onnx_dtype_name(x->dtype),
                        is_max ? ", int8, uint8" : "");
    if (pool_geom(c, &g))
        return -1;
    for (int o = 0; o < c->n_out; o++) {
        struct tensor *y = c->out[o];
        if (!y)
            continue;
        y->dtype = o == 0 ? x->dtype : ONNX_DTYPE_INT64;
        y->rank = x->rank;
        y->dims[0] = g.n;
        y->dims[1] = g.c;
        for (int i = 0; i < (int)g.nsp; i++)
            y->dims[2 + i] = g.out[3 - g.nsp + i];
    }
    return 0;
}

static struct op_cost pool_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct pool_params *p = c->params;
    double k = 1.0;
    for (int i = 0; i < p->w.n_kernel; i++)
        k *= (double)p->w.kernel[i];
    if (c->out[0])
        cost.flops = k * (double)tensor_numel(c->out[0]);
    return cost;
}

/* oneDNN's max pooling starts from -FLT_MAX and skips NaN: an all -inf
 * window would give -3.4e38, a NaN none. With a non-finite value anywhere
 * our loop runs instead, which keeps the ONNX reference's order (the first
 * tap, then any strictly greater one: a leading NaN stays, a later one is
 * passed over). Which path runs depends on the input alone, so a
 * recomputation takes the same one. */
static int all_finite(const float *x, int64_t n)
{
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        ok &= isfinite(x[i]) != 0;
    return ok;
}

static int maxpool_cpu(struct op_call *c)
{
    const struct pool_params *p = c->params;
    struct nn_geom g;
    if (pool_geom(c, &g))
        return -1;
    struct tensor *ind = c->n_out > 1 ? c->out[1] : NULL;
    if (!ind && c->in[0]->dtype == ONNX_DTYPE_FLOAT && all_finite(c->in[0]->data, tensor_numel(c->in[0]))) {
        int rc = nn_pool_forward_dnnl(c, &g, NN_POOL_MAX, c->in[0]->data, c->out[0]->data);
        if (!nn_may_fall_back(c, rc))
            return rc;
    }
    return nn_maxpool_forward(c, &g, c->in[0]->dtype, c->in[0]->data, c->out[0]->data,
                              ind ? ind->data : NULL, p->storage_order);
}

static int avgpool_cpu(struct op_call *c)
{
    const struct pool_params *p = c->params;
    struct nn_geom g;
    if (pool_geom(c, &g))
        return -1;
    int rc = nn_pool_forward_dnnl(c, &g, p->count_include_pad ? NN_POOL_AVG_INCLUDE_PAD : NN_POOL_AVG_EXCLUDE_PAD,
                                  c->in[0]->data, c->out[0]->data);
    if (!nn_may_fall_back(c, rc))
        return rc;
    return nn_avgpool_forward(c, &g, p->count_include_pad, c->in[0]->data, c->out[0]->data);
}



/* ---- GlobalAveragePool -------------------------------------------------------- */

static int gap_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "element type %s is not supported (float)", onnx_dtype_name(x->dtype));
    if (x->rank < 3)
        return op_error(c, "input must have rank >= 3 (N, C, spatial...), got %d", x->rank);
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    y->dims[0] = x->dims[0];
    y->dims[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++)
        y->dims[i] = 1;
    return 0;
}

static struct op_cost gap_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = (double)tensor_numel(c->in[0]);
    return cost;
}

static int gap_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    const int64_t planes = x->dims[0] * x->dims[1];
    const int64_t sp = planes ? tensor_numel(x) / planes : 0;
    const float *xd = x->data;
    float *yd = c->out[0]->data;
#pragma omp parallel for schedule(static) if (planes * sp > 65536)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = xd + p * sp;
        float sum = 0.0f;
        for (int64_t i = 0; i < sp; i++)
            sum += xp[i];
        yd[p] = sp ? sum / (float)sp : 0.0f;
    }
    return 0;
}

/* ---- gradients ----------------------------------------------------------------
 * MaxPoolGrad(dY, X) and AveragePoolGrad(dY) in the dtrexec domain, on the
 * forward's resolved geometry given as explicit attributes (strides,
 * dilations, pads, kernel_shape, ceil_mode, count_include_pad, shape = X's
 * dims). MaxPoolGrad finds each window's maximum again with the forward's own
 * rule — taps in window order, a later tap wins only when strictly greater,
 * so ties go to the first — and routes dY there. Both walk one N*C plane per
 * iteration (planes are independent, windows in a fixed order):
 * deterministic. */

void nn_maxpool_backward(const struct nn_geom *g, const float *x, const float *dy, float *dx)
{
    const int64_t planes = g->n * g->c, insz = nn_geom_in_size(g), outsz = nn_geom_out_size(g);
#pragma omp parallel for schedule(static) if (planes * outsz > 32768)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * insz, *dyp = dy + p * outsz;
        float *dxp = dx + p * insz;
        memset(dxp, 0, sizeof(float) * (size_t)insz);
        for (int64_t od = 0; od < g->out[0]; od++) {
            int64_t dlo, dhi, d0 = window_taps(g, 0, od, &dlo, &dhi);
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                int64_t hlo, hhi, h0 = window_taps(g, 1, oh, &hlo, &hhi);
                for (int64_t ow = 0; ow < g->out[2]; ow++) {
                    int64_t wlo, whi, w0 = window_taps(g, 2, ow, &wlo, &whi);
                    if (dlo >= dhi || hlo >= hhi || wlo >= whi)
                        continue;      /* a window entirely in the padding */
                    /* start from the first tap; later taps win only when
                     * strictly greater (branch-free selects) */
                    int64_t arg = ((d0 + dlo * g->dil[0]) * g->in[1] + h0 + hlo * g->dil[1]) * g->in[2]
                                  + w0 + wlo * g->dil[2];
                    float best = xp[arg];
                    for (int64_t kd = dlo; kd < dhi; kd++) {
                        int64_t id = d0 + kd * g->dil[0];
                        for (int64_t kh = hlo; kh < hhi; kh++) {
                            int64_t row = (id * g->in[1] + h0 + kh * g->dil[1]) * g->in[2] + w0;
                            for (int64_t kw = wlo; kw < whi; kw++) {
                                int64_t i = row + kw * g->dil[2];
                                float v = xp[i];
                                int gt = v > best;
                                best = gt ? v : best;
                                arg = gt ? i : arg;
                            }
                        }
                    }
                    dxp[arg] += dyp[(od * g->out[1] + oh) * g->out[2] + ow];
                }
            }
        }
    }
}

void nn_avgpool_backward(const struct nn_geom *g, int count_include_pad, const float *dy, float *dx)
{
    const int64_t planes = g->n * g->c, insz = nn_geom_in_size(g), outsz = nn_geom_out_size(g);
#pragma omp parallel for schedule(static) if (planes * outsz > 32768)
    for (int64_t p = 0; p < planes; p++) {
        const float *dyp = dy + p * outsz;
        float *dxp = dx + p * insz;
        memset(dxp, 0, sizeof(float) * (size_t)insz);
        for (int64_t od = 0; od < g->out[0]; od++) {
            int64_t dlo, dhi, d0 = window_taps(g, 0, od, &dlo, &dhi), dplo, dphi;
            window_padded_taps(g, 0, d0, &dplo, &dphi);
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                int64_t hlo, hhi, h0 = window_taps(g, 1, oh, &hlo, &hhi), hplo, hphi;
                window_padded_taps(g, 1, h0, &hplo, &hphi);
                for (int64_t ow = 0; ow < g->out[2]; ow++) {
                    int64_t wlo, whi, w0 = window_taps(g, 2, ow, &wlo, &whi), wplo, wphi;
                    window_padded_taps(g, 2, w0, &wplo, &wphi);
                    int64_t count = count_include_pad
                        ? (dphi - dplo) * (hphi - hplo) * (wphi - wplo)
                        : (dhi - dlo) * (hhi - hlo) * (whi - wlo);
                    if (count <= 0)
                        continue;
                    float v = dyp[(od * g->out[1] + oh) * g->out[2] + ow] / (float)count;
                    for (int64_t kd = dlo; kd < dhi; kd++) {
                        int64_t id = d0 + kd * g->dil[0];
                        for (int64_t kh = hlo; kh < hhi; kh++) {
                            float *row = dxp + (id * g->in[1] + h0 + kh * g->dil[1]) * g->in[2] + w0;
                            for (int64_t kw = wlo; kw < whi; kw++)
                                row[kw * g->dil[2]] += v;
                        }
                    }
                }
            }
        }
    }
}

static int pool_grad_emit(struct grad_ctx *g, const char *op, int with_x)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    const struct op_call *f = g->fwd;
    const struct pool_params *p = f->params;
    const struct tensor *x = f->in[0];
    struct nn_geom geo;
    if (pool_geom(f, &geo))
        return grad_error(g, "%s", f->env && f->env->err ? f->env->err : "bad geometry");
    struct nn_geom_attrs at;
    nn_geom_attrs_make(&geo, x->rank, x->dims, &at);
    struct onnx_attr a[8];
    memcpy(a, at.a, sizeof(struct onnx_attr) * (size_t)at.n);
    int n = at.n;
    a[n++] = (struct onnx_attr){ .name = "ceil_mode", .type = ONNX_ATTR_INT, .i = p->w.ceil_mode };
    a[n++] = (struct onnx_attr){ .name = "count_include_pad", .type = ONNX_ATTR_INT,
                                 .i = p->count_include_pad };
    int in[2] = { g->dy[0], g->in[0] }, dx;
    if (g->emit(g, op, a, n, with_x ? 2 : 1, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

static int maxpool_grad(struct grad_ctx *g) { return pool_grad_emit(g, "MaxPoolGrad", 1); }
static int avgpool_grad(struct grad_ctx *g) { return pool_grad_emit(g, "AveragePoolGrad", 0); }

/* dX = dY / (spatial size), broadcast over the plane: a scalar Mul on the
 * small dY, then one Expand. */
static int gap_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    const struct tensor *x = g->fwd->in[0];
    int64_t planes = x->dims[0] * x->dims[1];
    float inv = planes && tensor_numel(x) ? (float)((double)planes / (double)tensor_numel(x)) : 0.0f;
    struct tensor t = { .dtype = ONNX_DTYPE_FLOAT, .rank = 0, .data = &inv };
    int in[2] = { g->dy[0], g->constant(g, &t) }, scaled, dx;
    if (in[1] < 0 || g->emit(g, "Mul", NULL, 0, 2, in, 1, &scaled))
        return -1;
    int64_t dims[TENSOR_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    int ex[2] = { scaled, grad_const_i64(g, x->rank, dims) };
    if (ex[1] < 0 || g->emit(g, "Expand", NULL, 0, 2, ex, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

static int pool_grad_parse(const struct onnx_node *node, int version, void **params,
                           char *err, size_t err_size)
{
    void *pp = NULL;
    if (pool_parse(node, version, &pp, err, err_size))
        return -1;
    struct pool_grad_params *p = calloc(1, sizeof *p);
    if (!p) {
        free(pp);
        snprintf(err, err_size, "node '%s' (%s): out of memory", node->name, node->op_type);
        return -1;
    }
    p->pool = *(struct pool_params *)pp;
    free(pp);
    if (nn_shape_attr_parse(node, &p->shape, err, err_size)) {
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

/* Geometry from the shape attribute, checked against dY (and X). */
static int pool_grad_geom(const struct op_call *c, struct nn_geom *g)
{
    const struct pool_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *x = c->n_in > 1 ? c->in[1] : NULL;
    struct tensor xs = nn_shape_attr_tensor(&p->shape);
    char d1[128], d2[128];
    if (dy->dtype != ONNX_DTYPE_FLOAT || (x && x->dtype != ONNX_DTYPE_FLOAT))
        return op_error(c, "only float32 is supported, dY is %s", onnx_dtype_name(dy->dtype));
    if (x && !tensor_same_shape(x, &xs))
        return op_error(c, "X %s differs from the shape attribute %s",
                        tensor_describe(x, d1, sizeof d1), tensor_describe(&xs, d2, sizeof d2));
    if (nn_geom_resolve(c, &p->pool.w, &xs, p->pool.w.kernel, 1, g))
        return -1;
    g->n = xs.dims[0];
    g->c = g->m = xs.dims[1];
    g->group = 1;
    int ok = dy->rank == xs.rank && dy->dims[0] == g->n && dy->dims[1] == g->c;
    for (int i = 0; ok && i < g->nsp; i++)
        ok = dy->dims[2 + i] == g->out[3 - g->nsp + i];
    if (!ok)
        return op_error(c, "dY %s is not the pooled shape of %s", tensor_describe(dy, d1, sizeof d1),
                        tensor_describe(&xs, d2, sizeof d2));
    return 0;
}

static int pool_grad_infer(struct op_call *c)
{
    struct nn_geom g;
    if (pool_grad_geom(c, &g))
        return -1;
    const struct pool_grad_params *p = c->params;
    struct tensor *dx = c->out[0];
    *dx = nn_shape_attr_tensor(&p->shape);
    return 0;
}

static struct op_cost pool_grad_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct pool_grad_params *p = c->params;
    double k = 1.0;
    for (int i = 0; i < p->pool.w.n_kernel; i++)
        k *= (double)p->pool.w.kernel[i];
    cost.flops = k * (double)tensor_numel(c->in[0]);
    return cost;
}

static int maxpool_grad_cpu(struct op_call *c)
{
    struct nn_geom g;
    if (pool_grad_geom(c, &g))
        return -1;
    nn_maxpool_backward(&g, c->in[1]->data, c->in[0]->data, c->out[0]->data);
    return 0;
}

static int avgpool_grad_cpu(struct op_call *c)
{
    const struct pool_grad_params *p = c->params;
    struct nn_geom g;
    if (pool_grad_geom(c, &g))
        return -1;
    nn_avgpool_backward(&g, p->pool.count_include_pad, c->in[0]->data, c->out[0]->data);
    return 0;
}

const struct op_def op_max_pool = {
    .domain = "", .name = "MaxPool", .since = { 1, 8, 10, 11, 12, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 2,
    .parse = pool_parse, .infer = pool_infer, .cost = pool_cost,
    .kernel = { [BACKEND_CPU] = maxpool_cpu },
    .grad = maxpool_grad,
    .grad_saves_in = 1u << 0,
};

const struct op_def op_average_pool = {
    .domain = "", .name = "AveragePool", .since = { 7, 10, 11, 19, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = pool_parse, .infer = pool_infer, .cost = pool_cost,
    .kernel = { [BACKEND_CPU] = avgpool_cpu },
    .grad = avgpool_grad,
};

const struct op_def op_global_average_pool = {
    .domain = "", .name = "GlobalAveragePool", .since = { 1, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .infer = gap_infer, .cost = gap_cost,
    .kernel = { [BACKEND_CPU] = gap_cpu },
    .grad = gap_grad,
};

const struct op_def op_max_pool_grad = {
    .domain = "dtrexec", .name = "MaxPoolGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = pool_grad_parse, .infer = pool_grad_infer, .cost = pool_grad_cost,
    .kernel = { [BACKEND_CPU] = maxpool_grad_cpu },
};

const struct op_def op_average_pool_grad = {
    .domain = "dtrexec", .name = "AveragePoolGrad", .since = { 1 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = pool_grad_parse, .infer = pool_grad_infer, .cost = pool_grad_cost,
    .kernel = { [BACKEND_CPU] = avgpool_grad_cpu },
};

int nn_pool_geom(const struct op_call *c, struct nn_geom *g) { return pool_geom(c, g); }
int nn_pool_grad_geom(const struct op_call *c, struct nn_geom *g) { return pool_grad_geom(c, g); }
