/* ops/conv.c — Conv (opset 1, 11, 22), float32, 1-D/2-D/3-D, groups
 * (depthwise included), strides, dilations, explicit pads and auto_pad, an
 * optional bias; plus the window geometry shared by the nn family
 * (conv_transpose.c, pool.c).
 *
 * Two compute paths, chosen per shape by nn_conv_forward():
 *  - im2col + OpenBLAS sgemm per image and group; a 1x1 stride-1 unpadded
 *    kernel is a GEMM on the input itself (no im2col);
 *  - oneDNN's convolution primitive on the plain NCDHW layout, cached per
 *    shape (dnnl.c).
 * The measurements behind the choice are in the comment above
 * nn_conv_forward().
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"

/* ---- attributes and geometry -------------------------------------------- */

static int ints_attr(const struct onnx_node *node, const char *name, int64_t *out, int max,
                     int *count, char *err, size_t err_size)
{
    int n = onnx_node_attr_ints(node, name, out, max);
    if (n == -2) {
        snprintf(err, err_size, "node '%s' (%s): attribute %s has more than %d entries",
                 node->name, node->op_type, name, max);
        return -1;
    }
    *count = n < 0 ? 0 : n;
    return 0;
}

int nn_window_attrs_parse(const struct onnx_node *node, struct nn_window_attrs *a,
                          char *err, size_t err_size)
{
    memset(a, 0, sizeof *a);
    const char *ap = onnx_node_attr_string(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET") || !*ap)
        a->auto_pad = NN_AUTO_PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
        a->auto_pad = NN_AUTO_PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
        a->auto_pad = NN_AUTO_PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
        a->auto_pad = NN_AUTO_PAD_VALID;
    else {
        snprintf(err, err_size, "node '%s' (%s): auto_pad '%s' is not one of NOTSET, "
                 "SAME_UPPER, SAME_LOWER, VALID", node->name, node->op_type, ap);
        return -1;
    }
    if (ints_attr(node, "kernel_shape", a->kernel, NN_MAX_SPATIAL, &a->n_kernel, err, err_size)
        || ints_attr(node, "strides", a->strides, NN_MAX_SPATIAL, &a->n_strides, err, err_size)
        || ints_attr(node, "dilations", a->dilations, NN_MAX_SPATIAL, &a->n_dilations, err, err_size)
        || ints_attr(node, "pads", a->pads, 2 * NN_MAX_SPATIAL, &a->n_pads, err, err_size))
        return -1;
    for (int i = 0; i < a->n_kernel; i++)
        if (a->kernel[i] < 1) {
            snprintf(err, err_size, "node '%s' (%s): kernel_shape[%d] = %lld must be >= 1",
                     node->name, node->op_type, i, (long long)a->kernel[i]);
            return -1;
        }
    for (int i = 0; i < a->n_strides; i++)
        if (a->strides[i] < 1) {
            snprintf(err, err_size, "node '%s' (%s): strides[%d] = %lld must be >= 1",
                     node->name, node->op_type, i, (long long)a->strides[i]);
            return -1;
        }
    for (int i = 0; i < a->n_dilations; i++)
        if (a->dilations[i] < 1) {
            snprintf(err, err_size, "node '%s' (%s): dilations[%d] = %lld must be >= 1",
                     node->name, node->op_type, i, (long long)a->dilations[i]);
            return -1;
        }
    for (int i = 0; i < a->n_pads; i++)
        if (a->pads[i] < 0) {
            snprintf(err, err_size, "node '%s' (%s): pads[%d] = %lld must be >= 0",
                     node->name, node->op_type, i, (long long)a->pads[i]);
            return -1;
        }
    if (a->n_pads % 2) {
        snprintf(err, err_size, "node '%s' (%s): pads has %d entries, expected 2 per spatial axis",
                 node->name, node->op_type, a->n_pads);
        return -1;
    }
    a->ceil_mode = onnx_node_attr_int(node, "ceil_mode", 0) != 0;
    return 0;
}

int nn_geom_resolve(const struct op_call *c, const struct nn_window_attrs *a,
                    const struct tensor *x, const int64_t *kernel_spatial,
                    int is_pool, struct nn_geom *g)
{
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > NN_MAX_SPATIAL)
        return op_error(c, "input must have 1 to %d spatial axes (rank 3..%d), got rank %d",
                        NN_MAX_SPATIAL, NN_MAX_SPATIAL + 2, x->rank);
    if ((a->n_strides && a->n_strides != nsp) || (a->n_dilations && a->n_dilations != nsp)
        || (a->n_pads && a->n_pads != 2 * nsp) || (a->n_kernel && a->n_kernel != nsp))
        return op_error(c, "kernel_shape/strides/dilations/pads must have %d (pads %d) entries "
                        "for a rank-%d input", nsp, 2 * nsp, x->rank);
    g->nsp = nsp;
    for (int j = 0; j < 3; j++) {
        g->in[j] = g->k[j] = g->out[j] = g->stride[j] = g->dil[j] = 1;
        g->pad_lo[j] = g->pad_hi[j] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        int j = 3 - nsp + i;
        int64_t in = x->dims[2 + i], k = kernel_spatial[i];
        int64_t s = a->n_strides ? a->strides[i] : 1;
        int64_t d = a->n_dilations ? a->dilations[i] : 1;
        int64_t dk = d * (k - 1) + 1, lo = 0, hi = 0, out;
        if (a->auto_pad == NN_AUTO_PAD_SAME_UPPER || a->auto_pad == NN_AUTO_PAD_SAME_LOWER) {
            out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + dk - in;
            if (total < 0)
                total = 0;
            lo = a->auto_pad == NN_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            hi = total - lo;
        } else {
            if (a->auto_pad == NN_AUTO_PAD_NOTSET && a->n_pads) {
                lo = a->pads[i];
                hi = a->pads[nsp + i];
            }
            int64_t span = in + lo + hi - dk;
            if (span < 0)
                return op_error(c, "spatial axis %d: window of %lld (kernel %lld, dilation %lld) "
                                "exceeds the padded input of %lld", i, (long long)dk,
                                (long long)k, (long long)d, (long long)(in + lo + hi));
            if (is_pool && a->ceil_mode) {
                out = (span + s - 1) / s + 1;
                /* the last window must start inside the input or its left padding */
                if ((out - 1) * s >= in + lo)
                    out--;
            } else {
                out = span / s + 1;
            }
        }
        if (out < 1)
            return op_error(c, "spatial axis %d: output size %lld < 1", i, (long long)out);
        g->in[j] = in;
        g->k[j] = k;
        g->stride[j] = s;
        g->dil[j] = d;
        g->pad_lo[j] = lo;
        g->pad_hi[j] = hi;
        g->out[j] = out;
    }
    return 0;
}

/* ---- im2col ---------------------------------------------------------------- */

/* Range of output positions o in [0, n_out) whose input i0 + o*s lies in
 * [0, n_in): [*lo, *hi). */
static void nn_valid_range(int64_t i0, int64_t s, int64_t n_in, int64_t n_out,
                           int64_t *lo, int64_t *hi)
{
    int64_t a = i0 >= 0 ? 0 : (-i0 + s - 1) / s;
    int64_t b = i0 >= n_in ? 0 : (n_in - 1 - i0) / s + 1;
    if (b > n_out)
        b = n_out;
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
}

void nn_im2col(const struct nn_geom *g, const float *x, int64_t cg, float *col)
{
    const int64_t K = nn_geom_k_size(g), outsz = nn_geom_out_size(g), insz = nn_geom_in_size(g);
    const int64_t rows = cg * K;
#pragma omp parallel for schedule(static) if (rows * outsz > 65536)
    for (int64_t r = 0; r < rows; r++) {
        int64_t ci = r / K, kk = r % K;
        int64_t kw = kk % g->k[2], kh = (kk / g->k[2]) % g->k[1], kd = kk / (g->k[2] * g->k[1]);
        float *dst = col + r * outsz;
        const float *xc = x + ci * insz;
        int64_t w0 = kw * g->dil[2] - g->pad_lo[2], wlo, whi;
        nn_valid_range(w0, g->stride[2], g->in[2], g->out[2], &wlo, &whi);
        for (int64_t od = 0; od < g->out[0]; od++) {
            int64_t id = od * g->stride[0] - g->pad_lo[0] + kd * g->dil[0];
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                int64_t ih = oh * g->stride[1] - g->pad_lo[1] + kh * g->dil[1];
                float *d = dst + (od * g->out[1] + oh) * g->out[2];
                if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
                    memset(d, 0, sizeof(float) * g->out[2]);
                    continue;
                }
                const float *src = xc + (id * g->in[1] + ih) * g->in[2];
                for (int64_t ow = 0; ow < wlo; ow++)
                    d[ow] = 0.0f;
                if (g->stride[2] == 1) {
                    memcpy(d + wlo, src + w0 + wlo, sizeof(float) * (whi - wlo));
                } else {
                    for (int64_t ow = wlo; ow < whi; ow++)
                        d[ow] = src[w0 + ow * g->stride[2]];
                }
                for (int64_t ow = whi; ow < g->out[2]; ow++)
                    d[ow] = 0.0f;
            }
        }
    }
}

void nn_col2im(const struct nn_geom *g, const float *col, int64_t cg, float *x)
{
    const int64_t K = nn_geom_k_size(g), outsz = nn_geom_out_size(g), insz = nn_geom_in_size(g);
    /* One channel per iteration: rows of the same channel add into the same
     * pixels, so they stay in one thread, in a fixed order (determinism). */
#pragma omp parallel for schedule(static) if (cg * K * outsz > 65536)
    for (int64_t ci = 0; ci < cg; ci++) {
        float *xc = x + ci * insz;
        for (int64_t kk = 0; kk < K; kk++) {
            int64_t kw = kk % g->k[2], kh = (kk / g->k[2]) % g->k[1], kd = kk / (g->k[2] * g->k[1]);
            const float *src = col + (ci * K + kk) * outsz;
            int64_t w0 = kw * g->dil[2] - g->pad_lo[2], wlo, whi;
            nn_valid_range(w0, g->stride[2], g->in[2], g->out[2], &wlo, &whi);
            for (int64_t od = 0; od < g->out[0]; od++) {
                int64_t id = od * g->stride[0] - g->pad_lo[0] + kd * g->dil[0];
                if (id < 0 || id >= g->in[0])
                    continue;
                for (int64_t oh = 0; oh < g->out[1]; oh++) {
                    int64_t ih = oh * g->stride[1] - g->pad_lo[1] + kh * g->dil[1];
                    if (ih < 0 || ih >= g->in[1])
                        continue;
                    const float *s = src + (od * g->out[1] + oh) * g->out[2];
                    float *d = xc + (id * g->in[1] + ih) * g->in[2] + w0;
                    for (int64_t ow = wlo; ow < whi; ow++)
                        d[ow * g->stride[2]] += s[ow];
                }
            }
        }
    }
}

/* ---- im2col + sgemm ------------------------------------------------------------ */

static int nn_geom_is_pointwise(const struct nn_geom *g)
{
    for (int j = 0; j < 3; j++)
        if (g->k[j] != 1 || g->stride[j] != 1 || g->pad_lo[j] || g->pad_hi[j])
            return 0;
    return 1;
}

int nn_conv_forward_gemm(const struct op_call *c, const struct nn_geom *g,
                         const float *x, const float *w, const float *b, float *y)
{
    const int64_t cg = g->c / g->group, mg = g->m / g->group;
    const int64_t K = nn_geom_k_size(g), outsz = nn_geom_out_size(g), insz = nn_geom_in_size(g);
    const int pointwise = nn_geom_is_pointwise(g);
    float *col = NULL;
    if (!pointwise) {
        col = nn_scratch_alloc(c, sizeof(float) * (size_t)(cg * K * outsz));
        if (!col)
            return op_error(c, "cannot get %lld bytes of im2col scratch",
                            (long long)(sizeof(float) * cg * K * outsz));
    }
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = x + (n * g->c + gi * cg) * insz;
            float *yg = y + (n * g->m + gi * mg) * outsz;
            const float *wg = w + gi * mg * cg * K;
            const float *bmat = xg;
            if (!pointwise) {
                nn_im2col(g, xg, cg, col);
                bmat = col;
            }
            float beta = 0.0f;
            if (b) {
                for (int64_t o = 0; o < mg; o++) {
                    float bv = b[gi * mg + o];
                    float *row = yg + o * outsz;
                    for (int64_t i = 0; i < outsz; i++)
                        row[i] = bv;
                }
                beta = 1.0f;
            }
            nn_sgemm(0, 0, mg, outsz, cg * K, 1.0f, wg, cg * K, bmat, outsz, beta, yg, outsz);
        }
    }
    nn_scratch_free(c, col);
    return 0;
}

/* ---- oneDNN ----------------------------------------------------------------- */

/* The cache key: every field that shapes the primitive, padding zeroed. */
enum conv_dnnl_kind {
    CONV_DNNL_PLAIN = 1,               /* convolution on NCDHW / OIDHW as they are */
    CONV_DNNL_BLOCKED,                 /* convolution on the layouts oneDNN prefers */
    CONV_DNNL_REORDER_SRC,             /* NCDHW -> the blocked source layout */
    CONV_DNNL_REORDER_WEI,             /* OIDHW -> the blocked weights layout */
    CONV_DNNL_REORDER_DST,             /* blocked destination -> NCDHW */
};

struct conv_dnnl_key {
    int32_t kind;                      /* enum conv_dnnl_kind */
    int32_t has_bias;
    struct nn_geom g;
};

static void conv_dnnl_mds(const struct nn_geom *g, int has_bias, int any,
                          dnnl_memory_desc_t *src, dnnl_memory_desc_t *wei,
                          dnnl_memory_desc_t *bia, dnnl_memory_desc_t *dst)
{
    int nsp = (int)g->nsp, nd = nsp + 2;
    dnnl_dims_t sd = { g->n, g->c }, dd = { g->n, g->m }, wd, bd = { g->m };
    for (int i = 0; i < nsp; i++) {
        sd[2 + i] = g->in[3 - nsp + i];
        dd[2 + i] = g->out[3 - nsp + i];
    }
    static const dnnl_format_tag_t act[4] = { 0, dnnl_ncw, dnnl_nchw, dnnl_ncdhw };
    static const dnnl_format_tag_t wt[4] = { 0, dnnl_oiw, dnnl_oihw, dnnl_oidhw };
    static const dnnl_format_tag_t gwt[4] = { 0, dnnl_goiw, dnnl_goihw, dnnl_goidhw };
    dnnl_memory_desc_init_by_tag(src, nd, sd, dnnl_f32, any ? dnnl_format_tag_any : act[nsp]);
    dnnl_memory_desc_init_by_tag(dst, nd, dd, dnnl_f32, any ? dnnl_format_tag_any : act[nsp]);
    if (g->group > 1) {
        wd[0] = g->group;
        wd[1] = g->m / g->group;
        wd[2] = g->c / g->group;
        for (int i = 0; i < nsp; i++)
            wd[3 + i] = g->k[3 - nsp + i];
        dnnl_memory_desc_init_by_tag(wei, nd + 1, wd, dnnl_f32, any ? dnnl_format_tag_any : gwt[nsp]);
    } else {
        wd[0] = g->m;
        wd[1] = g->c;
        for (int i = 0; i < nsp; i++)
            wd[2 + i] = g->k[3 - nsp + i];
        dnnl_memory_desc_init_by_tag(wei, nd, wd, dnnl_f32, any ? dnnl_format_tag_any : wt[nsp]);
    }
    memset(bia, 0, sizeof *bia);
    if (has_bias)
        dnnl_memory_desc_init_by_tag(bia, 1, bd, dnnl_f32, dnnl_x);
}

static dnnl_status_t conv_dnnl_pd(const struct nn_geom *g, int has_bias, int any,
                                  dnnl_engine_t eng, const_dnnl_primitive_attr_t attr,
                                  dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t src, wei, bia, dst;
    conv_dnnl_mds(g, has_bias, any, &src, &wei, &bia, &dst);
    dnnl_dims_t strides, dil, pl, pr;
    for (int i = 0; i < g->nsp; i++) {
        int j = 3 - (int)g->nsp + i;
        strides[i] = g->stride[j];
        dil[i] = g->dil[j] - 1;        /* oneDNN counts the gaps */
        pl[i] = g->pad_lo[j];
        pr[i] = g->pad_hi[j];
    }
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &wei,
        has_bias ? &bia : NULL, &dst, strides, dil, pl, pr);
    if (st != dnnl_success)
        return st;
    return dnnl_primitive_desc_create(pd, &cd, attr, eng, NULL);
}

static dnnl_status_t conv_dnnl_build(const void *key, dnnl_engine_t eng,
                                     const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd)
{
    const struct conv_dnnl_key *k = key;
    if (k->kind == CONV_DNNL_PLAIN || k->kind == CONV_DNNL_BLOCKED)
        return conv_dnnl_pd(&k->g, k->has_bias, k->kind == CONV_DNNL_BLOCKED, eng, attr, pd);
    /* a reorder between the plain layout and the blocked convolution's */
    dnnl_primitive_desc_t cpd;
    dnnl_status_t st = conv_dnnl_pd(&k->g, k->has_bias, 1, eng, NULL, &cpd);
    if (st != dnnl_success)
        return st;
    dnnl_memory_desc_t src, wei, bia, dst;
    conv_dnnl_mds(&k->g, k->has_bias, 0, &src, &wei, &bia, &dst);
    if (k->kind == CONV_DNNL_REORDER_SRC)
        st = dnnl_reorder_primitive_desc_create(pd, &src, eng,
                                                dnnl_primitive_desc_query_md(cpd, dnnl_query_src_md, 0),
                                                eng, attr);
    else if (k->kind == CONV_DNNL_REORDER_WEI)
        st = dnnl_reorder_primitive_desc_create(pd, &wei, eng,
                                                dnnl_primitive_desc_query_md(cpd, dnnl_query_weights_md, 0),
                                                eng, attr);
    else
        st = dnnl_reorder_primitive_desc_create(pd, dnnl_primitive_desc_query_md(cpd, dnnl_query_dst_md, 0),
                                                eng, &dst, eng, attr);
    dnnl_primitive_desc_destroy(cpd);
    return st;
}

static void conv_dnnl_key_make(const struct nn_geom *g, int has_bias, int kind,
                               struct conv_dnnl_key *k)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->has_bias = has_bias;
    k->g = *g;
}

int nn_conv_forward_dnnl(const struct op_call *c, const struct nn_geom *g,
                         const float *x, const float *w, const float *b, float *y)
{
    struct conv_dnnl_key key;
    conv_dnnl_key_make(g, b != NULL, CONV_DNNL_PLAIN, &key);
    dnnl_memory_desc_t src, wei, bia, dst;
    conv_dnnl_mds(g, b != NULL, 0, &src, &wei, &bia, &dst);
    struct nn_dnnl_arg args[4] = {
        { DNNL_ARG_SRC, &src, (void *)x },
        { DNNL_ARG_WEIGHTS, &wei, (void *)w },
        { DNNL_ARG_DST, &dst, y },
        { DNNL_ARG_BIAS, &bia, (void *)b },
    };
    return nn_dnnl_run(c, &key, sizeof key, conv_dnnl_build, b ? 4 : 3, args);
}

/* Reorders src and weights into oneDNN's preferred (channel-blocked) layouts,
 * convolves there and reorders the result back, all through scratch memory.
 * A tensor whose preferred layout is the plain one is used in place. */
int nn_conv_forward_dnnl_blocked(const struct op_call *c, const struct nn_geom *g,
                                 const float *x, const float *w, const float *b, float *y)
{
    const int has_bias = b != NULL;
    struct conv_dnnl_key key;
    conv_dnnl_key_make(g, has_bias, CONV_DNNL_BLOCKED, &key);
    dnnl_memory_desc_t src, wei, bia, dst, bsrc, bwei, bdst;
    conv_dnnl_mds(g, has_bias, 0, &src, &wei, &bia, &dst);
    if (nn_dnnl_arg_md(c, &key, sizeof key, conv_dnnl_build, DNNL_ARG_SRC, &bsrc)
        || nn_dnnl_arg_md(c, &key, sizeof key, conv_dnnl_build, DNNL_ARG_WEIGHTS, &bwei)
        || nn_dnnl_arg_md(c, &key, sizeof key, conv_dnnl_build, DNNL_ARG_DST, &bdst))
        return -1;
    int same_src = dnnl_memory_desc_equal(&src, &bsrc), same_wei = dnnl_memory_desc_equal(&wei, &bwei);
    int same_dst = dnnl_memory_desc_equal(&dst, &bdst);
    size_t off_wei = same_src ? 0 : (dnnl_memory_desc_get_size(&bsrc) + 63) / 64 * 64;
    size_t off_dst = off_wei + (same_wei ? 0 : (dnnl_memory_desc_get_size(&bwei) + 63) / 64 * 64);
    size_t total = off_dst + (same_dst ? 0 : dnnl_memory_desc_get_size(&bdst));
    char *buf = NULL;
    if (total) {
        buf = nn_scratch_alloc(c, total);
        if (!buf)
            return op_error(c, "cannot get %zu bytes of scratch for blocked layouts", total);
    }
    void *ps = same_src ? (void *)x : buf, *pw = same_wei ? (void *)w : buf + off_wei;
    void *pd = same_dst ? (void *)y : buf + off_dst;
    int rc = 0;
    struct conv_dnnl_key rkey;
    if (!same_src) {
        conv_dnnl_key_make(g, has_bias, CONV_DNNL_REORDER_SRC, &rkey);
        struct nn_dnnl_arg a[2] = { { DNNL_ARG_FROM, &src, (void *)x }, { DNNL_ARG_TO, &bsrc, ps } };
        rc = nn_dnnl_run(c, &rkey, sizeof rkey, conv_dnnl_build, 2, a);
    }
    if (!rc && !same_wei) {
        conv_dnnl_key_make(g, has_bias, CONV_DNNL_REORDER_WEI, &rkey);
        struct nn_dnnl_arg a[2] = { { DNNL_ARG_FROM, &wei, (void *)w }, { DNNL_ARG_TO, &bwei, pw } };
        rc = nn_dnnl_run(c, &rkey, sizeof rkey, conv_dnnl_build, 2, a);
    }
    if (!rc) {
        struct nn_dnnl_arg a[4] = {
            { DNNL_ARG_SRC, &bsrc, ps }, { DNNL_ARG_WEIGHTS, &bwei, pw },
            { DNNL_ARG_DST, &bdst, pd }, { DNNL_ARG_BIAS, &bia, (void *)b },
        };
        rc = nn_dnnl_run(c, &key, sizeof key, conv_dnnl_build, has_bias ? 4 : 3, a);
    }
    if (!rc && !same_dst) {
        conv_dnnl_key_make(g, has_bias, CONV_DNNL_REORDER_DST, &rkey);
        struct nn_dnnl_arg a[2] = { { DNNL_ARG_FROM, &bdst, pd }, { DNNL_ARG_TO, &dst, y } };
        rc = nn_dnnl_run(c, &rkey, sizeof rkey, conv_dnnl_build, 2, a);
    }
    nn_scratch_free(c, buf);
    return rc;
}

const char *nn_conv_dnnl_impl(const struct nn_geom *g, int has_bias, int blocked)
{
    struct conv_dnnl_key key;
    conv_dnnl_key_make(g, has_bias, blocked ? CONV_DNNL_BLOCKED : CONV_DNNL_PLAIN, &key);
    return nn_dnnl_impl_name(&key, sizeof key);
}

/* Path choice, from measurements on ResNet-50's convolution shapes (batch 1,
 * one thread, Xeon with AVX-512, oneDNN 2.6, OpenBLAS 0.3.21; ms per call,
 * best of 5):
 *
 *   shape (in HxW, C->M, kernel, stride)  im2col+sgemm  oneDNN plain  oneDNN blocked
 *   224 3->64 k7 s2                            9.66          6.10          2.35
 *   56 64->64 k1 s1                            1.65          0.23          0.37
 *   56 64->64 k3 s1                           14.45          2.67          1.54
 *   56 64->256 k1 s1                           3.71          0.73          1.15
 *   56 256->128 k1 s1                          7.02          1.33          1.97
 *   56 128->128 k3 s2                          8.99          2.43          1.76
 *   56 256->512 k1 s2                          7.11          1.65          1.99
 *   28 128->128 k3 s1                          8.19          2.18          1.53
 *   28 512->128 k1 s1                          3.54          0.64          0.95
 *   14 256->256 k3 s1                          8.00          1.90          1.56
 *   14 1024->256 k1 s1                         3.44          0.70          0.96
 *    7 512->512 k3 s1                         10.24          2.28          2.46
 *    7 2048->512 k1 s1                         4.17          0.93          1.68
 *   sum of the 17 distinct shapes            104.6          26.7          24.8
 *
 * oneDNN on the plain layout runs its own JIT GEMM convolution ("gemm:jit")
 * and beats im2col + OpenBLAS everywhere (OpenBLAS 0.3.21 does not know this
 * CPU and is weak on the short-K, wide-N products of a convolution). For
 * kernels larger than 1x1 the blocked direct convolution ("brgconv") wins
 * even after reordering source, weights and result on every call — except
 * on tiny images where the weight reorder dominates; for 1x1 kernels the
 * reorders cost more than they save. Hence: blocked for spatial kernels on
 * >= 14x14-sized outputs, plain oneDNN otherwise, im2col + sgemm only if
 * oneDNN has no implementation. The weight reorder is not cached because the
 * weights may change between calls (training).
 *
 * Grouped convolutions always take the blocked path: depthwise 3x3 (ms,
 * im2col+sgemm / plain / blocked) 32x112x112 0.94/2.42/0.46, 144x56x56
 * 1.25/3.03/0.67, 576x14x14 0.91/0.85/0.11, 960x7x7 1.01/0.56/0.07 — oneDNN's
 * plain-layout path has no depthwise kernel, its blocked one does. */
int nn_conv_forward(const struct op_call *c, const struct nn_geom *g,
                    const float *x, const float *w, const float *b, float *y)
{
    int rc;
    if (g->group > 1 || (nn_geom_k_size(g) > 1 && g->n * nn_geom_out_size(g) >= 196))
        rc = nn_conv_forward_dnnl_blocked(c, g, x, w, b, y);
    else
        rc = nn_conv_forward_dnnl(c, g, x, w, b, y);
    if (rc == 0)
        return 0;
    return nn_conv_forward_gemm(c, g, x, w, b, y);
}

/* ---- the Conv operator ------------------------------------------------------ */

struct conv_params {
    struct nn_window_attrs w;
    int64_t group;
};

static int conv_parse(const struct onnx_node *node, int version, void **params,
                      char *err, size_t err_size)
{
    struct conv_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (Conv): out of memory", node->name);
        return -1;
    }
    if (nn_window_attrs_parse(node, &p->w, err, err_size)) {
        free(p);
        return -1;
    }
    p->group = onnx_node_attr_int(node, "group", 1);
    if (p->group < 1) {
        snprintf(err, err_size, "node '%s' (Conv): group = %lld must be >= 1", node->name,
                 (long long)p->group);
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

static int conv_geom(const struct op_call *c, struct nn_geom *g)
{
    const struct conv_params *p = c->params;
    const struct tensor *x = c->in[0], *w = c->in[1];
    const struct tensor *b = c->n_in > 2 ? c->in[2] : NULL;
    char d1[128], d2[128];
    if (x->dtype != ONNX_DTYPE_FLOAT || w->dtype != ONNX_DTYPE_FLOAT || (b && b->dtype != ONNX_DTYPE_FLOAT))
        return op_error(c, "only float32 is supported, got X %s and W %s",
                        tensor_describe(x, d1, sizeof d1), tensor_describe(w, d2, sizeof d2));
    if (w->rank != x->rank)
        return op_error(c, "W %s must have the rank of X %s",
                        tensor_describe(w, d1, sizeof d1), tensor_describe(x, d2, sizeof d2));
    if (nn_geom_resolve(c, &p->w, x, w->dims + 2, 0, g))
        return -1;
    for (int i = 0; i < p->w.n_kernel; i++)
        if (p->w.kernel[i] != w->dims[2 + i])
            return op_error(c, "kernel_shape[%d] = %lld differs from W %s", i,
                            (long long)p->w.kernel[i], tensor_describe(w, d1, sizeof d1));
    g->n = x->dims[0];
    g->c = x->dims[1];
    g->m = w->dims[0];
    g->group = p->group;
    if (g->c % g->group || g->m % g->group || w->dims[1] != g->c / g->group)
        return op_error(c, "channels do not match group %lld: X %s, W %s", (long long)g->group,
                        tensor_describe(x, d1, sizeof d1), tensor_describe(w, d2, sizeof d2));
    if (b && (b->rank != 1 || b->dims[0] != g->m))
        return op_error(c, "B %s must be [%lld]", tensor_describe(b, d1, sizeof d1), (long long)g->m);
    return 0;
}

static int conv_infer(struct op_call *c)
{
    struct nn_geom g;
    if (conv_geom(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_FLOAT;
    y->rank = g.nsp + 2;
    y->dims[0] = g.n;
    y->dims[1] = g.m;
    for (int i = 0; i < g.nsp; i++)
        y->dims[2 + i] = g.out[3 - g.nsp + i];
    return 0;
}

static struct op_cost conv_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *w = c->in[1], *y = c->out[0];
    if (y && w->rank >= 2) {
        /* each output element: a dot product over C/group * kernel */
        double per = 1.0;
        for (int i = 1; i < w->rank; i++)
            per *= (double)w->dims[i];
        cost.flops = 2.0 * per * (double)tensor_numel(y);
    }
    return cost;
}

static int conv_cpu(struct op_call *c)
{
    struct nn_geom g;
    if (conv_geom(c, &g))
        return -1;
    const struct tensor *b = c->n_in > 2 ? c->in[2] : NULL;
    return nn_conv_forward(c, &g, c->in[0]->data, c->in[1]->data, b ? b->data : NULL,
                           c->out[0]->data);
}

const struct op_def op_conv = {
    .domain = "", .name = "Conv", .since = { 1, 11, 22 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = conv_parse, .infer = conv_infer, .cost = conv_cost,
    .kernel = { [BACKEND_CPU] = conv_cpu },
};
