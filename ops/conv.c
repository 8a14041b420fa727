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
 *
 * Gradients: ConvGradData and ConvGradWeight (domain dtrexec), oneDNN's
 * backward-data / backward-weights primitives through the same cache and
 * runner as the forward, with im2col/col2im + sgemm as the fallback; the
 * path choice and its measurements are above nn_conv_backward_data().
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/nn-params.h"

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

/* -1 with a message naming the first entry of attribute `name` below `min`. */
static int ints_attr_check_min(const struct onnx_node *node, const char *name, const int64_t *v,
                               int n, int64_t min, char *err, size_t err_size)
{
    for (int i = 0; i < n; i++)
        if (v[i] < min) {
            snprintf(err, err_size, "node '%s' (%s): %s[%d] = %lld must be >= %lld",
                     node->name, node->op_type, name, i, (long long)v[i], (long long)min);
            return -1;
        }
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
    if (ints_attr_check_min(node, "kernel_shape", a->kernel, a->n_kernel, 1, err, err_size)
        || ints_attr_check_min(node, "strides", a->strides, a->n_strides, 1, err, err_size)
        || ints_attr_check_min(node, "dilations", a->dilations, a->n_dilations, 1, err, err_size)
        || ints_attr_check_min(node, "pads", a->pads, a->n_pads, 0, err, err_size))
        return -1;
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
    nn_geom_reset_window(g);
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

/* The columns of one image and group (cg * K rows of the output size) in
 * *col, or NULL for a pointwise geometry, whose GEMM reads the image itself;
 * -1 with a message naming the `what` scratch when there is none. */
static int conv_col_scratch(const struct op_call *c, const struct nn_geom *g, const char *what,
                            float **col)
{
    const int64_t cg = g->c / g->group, K = nn_geom_k_size(g), outsz = nn_geom_out_size(g);
    *col = NULL;
    if (nn_geom_is_pointwise(g))
        return 0;
    *col = nn_scratch_alloc(c, sizeof(float) * (size_t)(cg * K * outsz));
    if (!*col)
        return op_error(c, "cannot get %lld bytes of %s scratch",
                        (long long)(sizeof(float) * cg * K * outsz), what);
    return 0;
}

int nn_conv_forward_gemm(const struct op_call *c, const struct nn_geom *g,
                         const float *x, const float *w, const float *b, float *y)
{
    const int64_t cg = g->c / g->group, mg = g->m / g->group;
    const int64_t K = nn_geom_k_size(g), outsz = nn_geom_out_size(g), insz = nn_geom_in_size(g);
    const int pointwise = nn_geom_is_pointwise(g);
    float *col;
    if (conv_col_scratch(c, g, "im2col", &col))
        return -1;
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

/* One key type for every oneDNN primitive of the convolution family: the
 * convolution itself (forward, backward-data, backward-weights; on the plain
 * layouts or on the layouts oneDNN prefers) and the reorders between one
 * argument's plain layout and the blocked primitive's. Padding zeroed. */
enum conv_dnnl_kind {
    CONV_DNNL_PLAIN = 1,               /* convolution on NCDHW / OIDHW as they are */
    CONV_DNNL_BLOCKED,                 /* convolution on the layouts oneDNN prefers */
    CONV_DNNL_REORDER_IN,              /* argument `arg`: plain -> the blocked layout */
    CONV_DNNL_REORDER_OUT,             /* argument `arg`: blocked layout -> plain */
};

enum conv_dnnl_prim {
    CONV_PRIM_FWD = 0,
    CONV_PRIM_BWD_DATA,
    CONV_PRIM_BWD_WEIGHTS,
};

struct conv_dnnl_key {
    int32_t kind;                      /* enum conv_dnnl_kind */
    int32_t prim;                      /* enum conv_dnnl_prim */
    int32_t has_bias;
    int32_t arg;                       /* the reordered argument (DNNL_ARG_*) */
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

/* The plain-layout descriptor of one argument of any of the three primitives. */
static void conv_dnnl_plain_md(const struct nn_geom *g, int has_bias, int arg, dnnl_memory_desc_t *md)
{
    dnnl_memory_desc_t src, wei, bia, dst;
    conv_dnnl_mds(g, has_bias, 0, &src, &wei, &bia, &dst);
    switch (arg) {
    case DNNL_ARG_SRC: case DNNL_ARG_DIFF_SRC: *md = src; break;
    case DNNL_ARG_WEIGHTS: case DNNL_ARG_DIFF_WEIGHTS: *md = wei; break;
    case DNNL_ARG_BIAS: case DNNL_ARG_DIFF_BIAS: *md = bia; break;
    default: *md = dst; break;
    }
}

/* Strides, dilations and pads of the geometry as oneDNN takes them. */
static void conv_dnnl_window(const struct nn_geom *g, dnnl_dims_t strides, dnnl_dims_t dil,
                             dnnl_dims_t pl, dnnl_dims_t pr)
{
    for (int i = 0; i < g->nsp; i++) {
        int j = 3 - (int)g->nsp + i;
        strides[i] = g->stride[j];
        dil[i] = g->dil[j] - 1;        /* oneDNN counts the gaps */
        pl[i] = g->pad_lo[j];
        pr[i] = g->pad_hi[j];
    }
}

static dnnl_status_t conv_dnnl_pd(const struct nn_geom *g, int has_bias, int prim, int any,
                                  dnnl_engine_t eng, const_dnnl_primitive_attr_t attr,
                                  dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t src, wei, bia, dst;
    conv_dnnl_mds(g, has_bias, any, &src, &wei, &bia, &dst);
    dnnl_dims_t strides, dil, pl, pr;
    conv_dnnl_window(g, strides, dil, pl, pr);
    dnnl_convolution_desc_t fd, bd;
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(
        &fd, prim == CONV_PRIM_FWD ? dnnl_forward_inference : dnnl_forward_training,
        dnnl_convolution_direct, &src, &wei, has_bias ? &bia : NULL, &dst, strides, dil, pl, pr);
    if (st != dnnl_success)
        return st;
    if (prim == CONV_PRIM_FWD)
        return dnnl_primitive_desc_create(pd, &fd, attr, eng, NULL);
    /* backward primitives are created against a forward one (oneDNN's "hint") */
    dnnl_primitive_desc_t hint = NULL;
    if ((st = dnnl_primitive_desc_create(&hint, &fd, NULL, eng, NULL)) != dnnl_success)
        return st;
    if (prim == CONV_PRIM_BWD_DATA)
        st = dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &src, &wei,
                                                              &dst, strides, dil, pl, pr);
    else
        st = dnnl_dilated_convolution_backward_weights_desc_init(
            &bd, dnnl_convolution_direct, &src, &wei, has_bias ? &bia : NULL, &dst, strides, dil, pl, pr);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(pd, &bd, attr, eng, hint);
    dnnl_primitive_desc_destroy(hint);
    return st;
}

static dnnl_status_t conv_dnnl_build(const void *key, dnnl_engine_t eng,
                                     const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd)
{
    const struct conv_dnnl_key *k = key;
    if (k->kind == CONV_DNNL_PLAIN || k->kind == CONV_DNNL_BLOCKED)
        return conv_dnnl_pd(&k->g, k->has_bias, k->prim, k->kind == CONV_DNNL_BLOCKED, eng, attr, pd);
    /* a reorder between the plain layout and the blocked primitive's */
    dnnl_primitive_desc_t cpd;
    dnnl_status_t st = conv_dnnl_pd(&k->g, k->has_bias, k->prim, 1, eng, NULL, &cpd);
    if (st != dnnl_success)
        return st;
    dnnl_memory_desc_t plain;
    conv_dnnl_plain_md(&k->g, k->has_bias, k->arg, &plain);
    const dnnl_memory_desc_t *blocked = dnnl_primitive_desc_query_md(cpd, dnnl_query_exec_arg_md, k->arg);
    if (k->kind == CONV_DNNL_REORDER_IN)
        st = dnnl_reorder_primitive_desc_create(pd, &plain, eng, blocked, eng, attr);
    else
        st = dnnl_reorder_primitive_desc_create(pd, blocked, eng, &plain, eng, attr);
    dnnl_primitive_desc_destroy(cpd);
    return st;
}

static void conv_dnnl_key_make(const struct nn_geom *g, int has_bias, int prim, int kind, int arg,
                               struct conv_dnnl_key *k)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->prim = prim;
    k->has_bias = has_bias;
    k->arg = arg;
    k->g = *g;
}

/* One argument of a convolution primitive: its data in the plain layout, and
 * whether the primitive writes it. */
struct conv_dnnl_io {
    int arg;
    void *data;
    int is_out;
};

/* The layouts of one blocked call: per argument its plain descriptor, the
 * one the primitive wants, whether they are the same, and where its copy
 * lies in the reorder buffer of `total` bytes. */
struct conv_dnnl_layout {
    dnnl_memory_desc_t plain[6], want[6];
    size_t off[6], total;
    int same[6];
};

static int64_t conv_arg_image_elems(const struct nn_geom *g, int arg);

/* Weights and bias come first in the buffer, so that every chunk of a batch
 * finds them at the same place. */
static int conv_dnnl_layout_get(const struct op_call *c, const struct nn_geom *g, int has_bias, int prim,
                                int blocked, int n, const struct conv_dnnl_io *io, struct conv_dnnl_layout *l)
{
    struct conv_dnnl_key key;
    conv_dnnl_key_make(g, has_bias, prim, blocked ? CONV_DNNL_BLOCKED : CONV_DNNL_PLAIN, 0, &key);
    l->total = 0;
    for (int i = 0; i < n; i++) {
        conv_dnnl_plain_md(g, has_bias, io[i].arg, &l->plain[i]);
        l->same[i] = 1;
        l->off[i] = 0;
        if (blocked) {
            if (nn_dnnl_arg_md(c, &key, sizeof key, conv_dnnl_build, io[i].arg, &l->want[i]))
                return -1;
            l->same[i] = dnnl_memory_desc_equal(&l->plain[i], &l->want[i]);
        }
    }
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if (!l->same[i] && (conv_arg_image_elems(g, io[i].arg) != 0) == pass) {
                l->off[i] = l->total;
                l->total += (dnnl_memory_desc_get_size(&l->want[i]) + 63) / 64 * 64;
            }
    return 0;
}

/* Runs the primitive on layout l, the reordered copies in buf; with
 * `shared_ready`, buf already holds the weights (and bias) in l's layout. */
static int conv_dnnl_run_layout(const struct op_call *c, const struct nn_geom *g, int has_bias, int prim,
                                int blocked, int n, const struct conv_dnnl_io *io,
                                const struct conv_dnnl_layout *l, char *buf, int shared_ready)
{
    struct conv_dnnl_key key, rkey;
    conv_dnnl_key_make(g, has_bias, prim, blocked ? CONV_DNNL_BLOCKED : CONV_DNNL_PLAIN, 0, &key);
    struct nn_dnnl_arg args[6];
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        args[i] = (struct nn_dnnl_arg){ io[i].arg, l->same[i] ? &l->plain[i] : &l->want[i],
                                        l->same[i] ? io[i].data : buf + l->off[i] };
        if (l->same[i] || io[i].is_out || (shared_ready && !conv_arg_image_elems(g, io[i].arg)))
            continue;
        conv_dnnl_key_make(g, has_bias, prim, CONV_DNNL_REORDER_IN, io[i].arg, &rkey);
        struct nn_dnnl_arg a[2] = { { DNNL_ARG_FROM, &l->plain[i], io[i].data },
                                    { DNNL_ARG_TO, &l->want[i], buf + l->off[i] } };
        rc = nn_dnnl_run(c, &rkey, sizeof rkey, conv_dnnl_build, 2, a);
    }
    if (!rc)
        rc = nn_dnnl_run(c, &key, sizeof key, conv_dnnl_build, n, args);
    for (int i = 0; i < n && !rc; i++) {
        if (l->same[i] || !io[i].is_out)
            continue;
        conv_dnnl_key_make(g, has_bias, prim, CONV_DNNL_REORDER_OUT, io[i].arg, &rkey);
        struct nn_dnnl_arg a[2] = { { DNNL_ARG_FROM, &l->want[i], buf + l->off[i] },
                                    { DNNL_ARG_TO, &l->plain[i], io[i].data } };
        rc = nn_dnnl_run(c, &rkey, sizeof rkey, conv_dnnl_build, 2, a);
    }
    return rc;
}

/* Images per call of a blocked convolution. Its reorder buffers are about
 * as large as its source and destination together, which a budget must
 * hold beside them: ResNet-50's first layer at batch 16 and 128x128 (3
 * channels in, 8 out) asked for 5.0 MiB of them and made budgets below
 * 0.35x of the peak infeasible. So the batch runs in chunks whose plain
 * source and destination stay within an eighth of the whole call's, or
 * 256 KiB where that is more (fewer, larger calls for small layers); at
 * least one image a chunk. The weights are reordered once for all chunks.
 * Chunking costs little: six unbudgeted training steps of that model take
 * 0.51-0.62 s of CPU time without it and 0.52-0.53 s with it (one thread,
 * three runs each). The chunks follow from the shape alone, so a recomputation
 * takes the same path and gives the same bits; per image the chunks
 * compute what the whole batch would (forward, backward-data), and the
 * weight gradient adds the chunks' partial sums in chunk order. */
#define CONV_CHUNK_PARTS 8
static int64_t conv_chunk_bytes = (int64_t)256 << 10;

int64_t nn_conv_chunk_bytes_set(int64_t bytes)
{
    int64_t old = conv_chunk_bytes;
    if (bytes > 0)
        conv_chunk_bytes = bytes;
    return old;
}

static int64_t conv_chunk_images(const struct nn_geom *g)
{
    int64_t per = (int64_t)sizeof(float) * (g->c * nn_geom_in_size(g) + g->m * nn_geom_out_size(g));
    return op_chunk_items(g->n, per, CONV_CHUNK_PARTS, conv_chunk_bytes);
}

/* Elements per image of a batch-chunked argument; 0 for weights and bias. */
static int64_t conv_arg_image_elems(const struct nn_geom *g, int arg)
{
    switch (arg) {
    case DNNL_ARG_SRC: case DNNL_ARG_DIFF_SRC: return g->c * nn_geom_in_size(g);
    case DNNL_ARG_DST: case DNNL_ARG_DIFF_DST: return g->m * nn_geom_out_size(g);
    default: return 0;
    }
}

/* Runs convolution primitive `prim` on plain-layout arguments. Blocked: the
 * primitive runs on the layouts oneDNN prefers, each argument reordered
 * into scratch before (inputs) or after (outputs) the call — an argument
 * whose preferred layout is the plain one is used in place — over the batch
 * in chunks of conv_chunk_images(). One reorder buffer, sized for the first
 * (largest) chunk, serves every chunk; the weight gradient's later chunks
 * write their partial sums after it and add them in. */
static int conv_dnnl_exec(const struct op_call *c, const struct nn_geom *g, int has_bias, int prim,
                          int blocked, int n, const struct conv_dnnl_io *io)
{
    struct nn_geom gc = *g;
    gc.n = blocked ? conv_chunk_images(g) : g->n;
    struct conv_dnnl_layout l;
    if (conv_dnnl_layout_get(c, &gc, has_bias, prim, blocked, n, io, &l))
        return -1;
    size_t w_elems = (size_t)(g->m * (g->c / g->group) * nn_geom_k_size(g));
    size_t acc_elems = gc.n < g->n && prim == CONV_PRIM_BWD_WEIGHTS ? w_elems + (size_t)(has_bias ? g->m : 0) : 0;
    size_t bytes = l.total + sizeof(float) * acc_elems;
    char *buf = NULL;
    if (bytes && !(buf = nn_scratch_alloc(c, bytes)))
        return op_error(c, "cannot get %zu bytes of scratch for oneDNN's blocked layouts", bytes);
    float *acc = buf ? (float *)(buf + l.total) : NULL;
    struct conv_dnnl_layout first = l;
    int rc = 0;
    for (int64_t i0 = 0; i0 < g->n && !rc; i0 += gc.n) {
        int64_t nb = gc.n;
        int shared_ready = i0 > 0;
        if (g->n - i0 < nb) {
            gc.n = g->n - i0;   /* the last chunk, smaller: its buffers fit the first one's */
            if ((rc = conv_dnnl_layout_get(c, &gc, has_bias, prim, blocked, n, io, &l)))
                break;
            if (l.total > first.total) {
                rc = op_error(c, "oneDNN's layouts for %lld images need more than for %lld", (long long)gc.n,
                              (long long)nb);
                break;
            }
            for (int i = 0; i < n; i++)   /* the weights' layout may differ for fewer images */
                if (!conv_arg_image_elems(g, io[i].arg)
                    && (l.same[i] != first.same[i] || l.off[i] != first.off[i]
                        || (!l.same[i] && !dnnl_memory_desc_equal(&l.want[i], &first.want[i]))))
                    shared_ready = 0;
        }
        struct conv_dnnl_io part[6];
        for (int i = 0; i < n; i++) {
            part[i] = io[i];
            int64_t per = conv_arg_image_elems(g, io[i].arg);
            if (per)
                part[i].data = (float *)io[i].data + i0 * per;
            else if (i0 && io[i].is_out)   /* weight gradient: a partial sum */
                part[i].data = acc + (io[i].arg == DNNL_ARG_DIFF_BIAS ? w_elems : 0);
        }
        rc = conv_dnnl_run_layout(c, &gc, has_bias, prim, blocked, n, part, &l, buf, shared_ready);
        for (int i = 0; i < n && !rc && i0; i++) {
            if (conv_arg_image_elems(g, io[i].arg) || !io[i].is_out)
                continue;
            size_t cnt = io[i].arg == DNNL_ARG_DIFF_BIAS ? (size_t)g->m : w_elems;
            float *dst = io[i].data, *src = part[i].data;
            for (size_t j = 0; j < cnt; j++)
                dst[j] += src[j];
        }
        gc.n = nb;
    }
    nn_scratch_free(c, buf);
    return rc;
}

static int conv_forward_dnnl_any(const struct op_call *c, const struct nn_geom *g, const float *x,
                                 const float *w, const float *b, float *y, int blocked)
{
    struct conv_dnnl_io io[4] = {
        { DNNL_ARG_SRC, (void *)x, 0 }, { DNNL_ARG_WEIGHTS, (void *)w, 0 },
        { DNNL_ARG_DST, y, 1 }, { DNNL_ARG_BIAS, (void *)b, 0 },
    };
    return conv_dnnl_exec(c, g, b != NULL, CONV_PRIM_FWD, blocked, b ? 4 : 3, io);
}

int nn_conv_forward_dnnl(const struct op_call *c, const struct nn_geom *g,
                         const float *x, const float *w, const float *b, float *y)
{
    return conv_forward_dnnl_any(c, g, x, w, b, y, 0);
}

/* Reorders src and weights into oneDNN's preferred (channel-blocked) layouts,
 * convolves there and reorders the result back, all through scratch memory. */
int nn_conv_forward_dnnl_blocked(const struct op_call *c, const struct nn_geom *g,
                                 const float *x, const float *w, const float *b, float *y)
{
    return conv_forward_dnnl_any(c, g, x, w, b, y, 1);
}

const char *nn_conv_dnnl_impl(const struct nn_geom *g, int has_bias, int blocked)
{
    struct conv_dnnl_key key;
    conv_dnnl_key_make(g, has_bias, CONV_PRIM_FWD, blocked ? CONV_DNNL_BLOCKED : CONV_DNNL_PLAIN, 0, &key);
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
/* oneDNN's blocked layouts for grouped convolutions and for spatial kernels
 * with at least 196 output positions (14x14), the plain layout otherwise.
 * Blocked needs reorder buffers about as large as the activations, which a
 * budget must hold beside them, but it is much faster: ResNet-50, one
 * thread, training step at batch 4 and 112x112: 550 ms blocked vs 810 ms
 * plain; inference at batch 1: 95-98 vs 103-133 ms (ops-nn measurements per
 * shape are above conv_bwd_* below). The choice depends on shapes only, so
 * a recomputation takes the same path. */
static int conv_use_blocked(const struct nn_geom *g)
{
    return g->group > 1 || (nn_geom_k_size(g) > 1 && g->n * nn_geom_out_size(g) >= 196);
}

int nn_conv_forward(const struct op_call *c, const struct nn_geom *g,
                    const float *x, const float *w, const float *b, float *y)
{
    switch (nn_conv_path_choose(c, g, b != NULL, NN_CONV_FWD)) {
    case NN_CONV_PATH_BLOCKED: return nn_conv_forward_dnnl_blocked(c, g, x, w, b, y);
    case NN_CONV_PATH_PLAIN: return nn_conv_forward_dnnl(c, g, x, w, b, y);
    default: return nn_conv_forward_gemm(c, g, x, w, b, y);
    }
}

/* ---- backward: data and weights ------------------------------------------------ */

static int conv_backward_data_dnnl(const struct op_call *c, const struct nn_geom *g, const float *dy,
                                   const float *w, float *dx, int blocked)
{
    struct conv_dnnl_io io[3] = {
        { DNNL_ARG_DIFF_DST, (void *)dy, 0 }, { DNNL_ARG_WEIGHTS, (void *)w, 0 },
        { DNNL_ARG_DIFF_SRC, dx, 1 },
    };
    return conv_dnnl_exec(c, g, 0, CONV_PRIM_BWD_DATA, blocked, 3, io);
}

static int conv_backward_weights_dnnl(const struct op_call *c, const struct nn_geom *g, const float *x,
                                      const float *dy, float *dw, float *db, int blocked)
{
    struct conv_dnnl_io io[4] = {
        { DNNL_ARG_SRC, (void *)x, 0 }, { DNNL_ARG_DIFF_DST, (void *)dy, 0 },
        { DNNL_ARG_DIFF_WEIGHTS, dw, 1 }, { DNNL_ARG_DIFF_BIAS, db, 1 },
    };
    return conv_dnnl_exec(c, g, db != NULL, CONV_PRIM_BWD_WEIGHTS, blocked, db ? 4 : 3, io);
}

int nn_conv_backward_data_dnnl(const struct op_call *c, const struct nn_geom *g, const float *dy,
                               const float *w, float *dx, int blocked)
{
    return conv_backward_data_dnnl(c, g, dy, w, dx, blocked);
}

int nn_conv_backward_weights_dnnl(const struct op_call *c, const struct nn_geom *g, const float *x,
                                  const float *dy, float *dw, float *db, int blocked)
{
    return conv_backward_weights_dnnl(c, g, x, dy, dw, db, blocked);
}

/* dx = W^T dy per image and group (a GEMM into columns), then col2im. */
int nn_conv_backward_data_gemm(const struct op_call *c, const struct nn_geom *g, const float *dy,
                               const float *w, float *dx)
{
    const int64_t cg = g->c / g->group, mg = g->m / g->group;
    const int64_t K = nn_geom_k_size(g), outsz = nn_geom_out_size(g), insz = nn_geom_in_size(g);
    const int pointwise = nn_geom_is_pointwise(g);
    float *col;
    if (conv_col_scratch(c, g, "col2im", &col))
        return -1;
    if (!pointwise)
        memset(dx, 0, sizeof(float) * (size_t)(g->n * g->c * insz));
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *dyg = dy + (n * g->m + gi * mg) * outsz;
            const float *wg = w + gi * mg * cg * K;
            float *dxg = dx + (n * g->c + gi * cg) * insz;
            if (pointwise) {
                nn_sgemm(1, 0, cg, outsz, mg, 1.0f, wg, cg, dyg, outsz, 0.0f, dxg, insz);
            } else {
                nn_sgemm(1, 0, cg * K, outsz, mg, 1.0f, wg, cg * K, dyg, outsz, 0.0f, col, outsz);
                nn_col2im(g, col, cg, dxg);
            }
        }
    nn_scratch_free(c, col);
    return 0;
}

/* dW_g = sum over images of dy_g im2col(x_g)^T, accumulated image by image
 * in order; db = sum of dy per output channel. */
int nn_conv_backward_weights_gemm(const struct op_call *c, const struct nn_geom *g, const float *x,
                                  const float *dy, float *dw, float *db)
{
    const int64_t cg = g->c / g->group, mg = g->m / g->group;
    const int64_t K = nn_geom_k_size(g), outsz = nn_geom_out_size(g), insz = nn_geom_in_size(g);
    const int pointwise = nn_geom_is_pointwise(g);
    float *col;
    if (conv_col_scratch(c, g, "im2col", &col))
        return -1;
    memset(dw, 0, sizeof(float) * (size_t)(g->m * cg * K));
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = x + (n * g->c + gi * cg) * insz;
            const float *dyg = dy + (n * g->m + gi * mg) * outsz;
            const float *bmat = xg;
            if (!pointwise) {
                nn_im2col(g, xg, cg, col);
                bmat = col;
            }
            nn_sgemm(0, 1, mg, cg * K, outsz, 1.0f, dyg, outsz, bmat, outsz, 1.0f,
                     dw + gi * mg * cg * K, cg * K);
        }
    nn_scratch_free(c, col);
    if (db) {
#pragma omp parallel for schedule(static) if (g->n * g->m * outsz > 65536)
        for (int64_t o = 0; o < g->m; o++) {
            double sum = 0.0;
            for (int64_t n = 0; n < g->n; n++) {
                const float *p = dy + (n * g->m + o) * outsz;
                for (int64_t i = 0; i < outsz; i++)
                    sum += p[i];
            }
            db[o] = (float)sum;
        }
    }
    return 0;
}

/* Path choice for the backward kernels, from measurements on ResNet-50's
 * convolution shapes at batch 8 (one thread, this machine's Xeon, oneDNN 2.6,
 * OpenBLAS 0.3.21; ms per call, best of 3 on a shared machine, so +-15%):
 *
 *   shape (in HxW, C->M, k, s)  forward | data: gemm  plain blocked | weights: gemm plain blocked
 *   224   3->64   k7 s2          17.8   |      25.9   33.6   94.0   |        34.0  37.6   18.9
 *    56  64->64   k1 s1           1.6   |       2.1    1.5    3.9   |         3.3   2.6    4.7
 *    56  64->64   k3 s1          15.7   |      17.3   30.7   14.5   |        22.4  30.3   14.4
 *    56  64->256  k1 s1           7.3   |       7.1    6.5   10.2   |        12.2  10.2   17.0
 *    56 256->64   k1 s1           6.6   |      10.1    9.4   13.6   |         8.8   9.3   19.2
 *    56 128->128  k3 s2          17.9   |      18.8   22.3   15.2   |        20.0  24.3   18.4
 *    56 256->512  k1 s2          16.5   |      15.8   14.6   33.6   |        17.7  18.9   35.3
 *    28 128->128  k3 s1          14.1   |      15.7   21.7   12.7   |        17.0  21.3   13.3
 *    28 512->128  k1 s1           5.3   |       5.7    5.7    8.2   |         7.2   6.8    9.5
 *    28 256->256  k3 s2          13.2   |      19.1   19.1   13.7   |        17.0  17.6   16.5
 *    14 256->256  k3 s1          13.1   |      20.9   19.3   11.8   |        15.7  16.4   15.9
 *    14 1024->256 k1 s1           5.9   |       7.9    7.3    6.9   |         6.6   6.4    8.1
 *     7 512->512  k3 s1          15.9   |      26.4   27.4   14.3   |        20.3  19.9   18.1
 *     7 2048->512 k1 s1           9.3   |      11.2   11.1    8.0   |         8.4   8.2   12.2
 *   sum of 21 distinct shapes   248.6   |     293.0  312.9  389.0   |       306.5 314.3  340.9
 *
 * As in the forward: spatial kernels run best on the blocked layouts
 * (oneDNN's direct "brgconv"/"jit" kernels, even with reorders on every
 * call), 1x1 kernels on the plain layout ("gemm:jit"), grouped and
 * depthwise convolutions only have fast kernels blocked. The exception is
 * the first layer (3 input channels): its blocked backward-data is 3-4x
 * slower than anything else, and im2col/col2im + sgemm is the fastest there.
 * With this choice the 21 shapes take 250 ms (data) + 265 ms (weights)
 * against 249 ms forward: the backward costs about twice the forward, as
 * expected from its arithmetic. */

int nn_conv_backward_data(const struct op_call *c, const struct nn_geom *g, const float *dy,
                          const float *w, float *dx)
{
    enum nn_conv_path path = nn_conv_path_choose(c, g, 0, NN_CONV_BWD_DATA);
    if (path == NN_CONV_PATH_GEMM)
        return nn_conv_backward_data_gemm(c, g, dy, w, dx);
    return conv_backward_data_dnnl(c, g, dy, w, dx, path == NN_CONV_PATH_BLOCKED);
}

int nn_conv_backward_weights(const struct op_call *c, const struct nn_geom *g, const float *x,
                             const float *dy, float *dw, float *db)
{
    enum nn_conv_path path = nn_conv_path_choose(c, g, db != NULL, NN_CONV_BWD_WEIGHTS);
    if (path == NN_CONV_PATH_GEMM)
        return nn_conv_backward_weights_gemm(c, g, x, dy, dw, db);
    return conv_backward_weights_dnnl(c, g, x, dy, dw, db, path == NN_CONV_PATH_BLOCKED);
}

/* ---- the path within the workspace cap -------------------------------------
 * Each path's workspace differs by much more than its speed: torchvision
 * ResNet-18's layer4 (512->512 3x3 on 7x7, batch 16) asked oneDNN's blocked
 * backward-weights primitive for 38.6 MB of scratchpad (per-thread
 * reduction buffers of the 9.4 MB weight gradient) where im2col + sgemm
 * needs one image's columns, 0.9 MB, at about the same speed (the table
 * above: 20.3 against 18.1 ms at batch 8). A budget must hold a call's
 * workspace beside its inputs and outputs, so the workspace sets the floor
 * below which nothing trains. Hence: the fastest path by the rules above
 * whose workspace fits the cap, else the one with the least workspace.
 *
 * The cap is the bytes of the call's own tensors (X or dX, Y or dY, W or
 * dW): a call never needs more than twice what it touches. It depends on
 * the shapes (and, through oneDNN's scratchpad, the thread count) only —
 * not on the budget or the arena's free space — so a recomputation takes
 * the path of the first execution, and a budgeted run takes the paths of
 * the unbudgeted one, which budget_check.py asserts bit for bit. */

static int64_t conv_workspace_cap_forced;

int64_t nn_conv_workspace_cap_set(int64_t bytes)
{
    int64_t old = conv_workspace_cap_forced;
    conv_workspace_cap_forced = bytes;
    return old;
}

size_t nn_conv_workspace_cap(const struct nn_geom *g)
{
    if (conv_workspace_cap_forced > 0)
        return (size_t)conv_workspace_cap_forced;
    int64_t elems = g->n * g->c * nn_geom_in_size(g) + g->n * g->m * nn_geom_out_size(g)
                    + g->m * (g->c / g->group) * nn_geom_k_size(g);
    return sizeof(float) * (size_t)elems;
}

/* The arguments of primitive `prim`, as conv_dnnl_exec takes them (data NULL). */
static int conv_dnnl_args(int prim, int has_bias, struct conv_dnnl_io *io)
{
    static const int args[3][4] = {
        { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS },
        { DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC, 0 },
        { DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS },
    };
    int n = prim == CONV_PRIM_BWD_DATA ? 3 : has_bias ? 4 : 3;
    for (int i = 0; i < n; i++)
        io[i] = (struct conv_dnnl_io){ args[prim][i], NULL, i >= 2 };
    return n;
}

/* What conv_dnnl_exec takes from the scratch allocator at once: the reorder
 * buffer (and the weight gradient's partial sums) plus the largest
 * scratchpad of the primitives it runs, for the first chunk of the batch
 * and a smaller last one. -1 when oneDNN has no implementation. */
static int conv_dnnl_workspace(const struct op_call *c, const struct nn_geom *g, int has_bias, int prim, int blocked,
                               size_t *bytes)
{
    struct conv_dnnl_io io[4];
    int n = conv_dnnl_args(prim, has_bias, io);
    struct nn_geom gc = *g;
    gc.n = blocked ? conv_chunk_images(g) : g->n;
    int64_t last = gc.n > 0 ? g->n % gc.n : 0;   /* an empty batch: one part of none */
    size_t w_elems = (size_t)(g->m * (g->c / g->group) * nn_geom_k_size(g));
    size_t acc_elems = gc.n < g->n && prim == CONV_PRIM_BWD_WEIGHTS ? w_elems + (size_t)(has_bias ? g->m : 0) : 0;
    size_t most = 0, buf = 0;
    for (int part = 0; part < (last ? 2 : 1); part++) {
        if (part)
            gc.n = last;
        struct conv_dnnl_layout l;
        struct conv_dnnl_key key;
        size_t pad;
        if (conv_dnnl_layout_get(c, &gc, has_bias, prim, blocked, n, io, &l))
            return -1;
        if (!part)
            buf = l.total + sizeof(float) * acc_elems;
        conv_dnnl_key_make(&gc, has_bias, prim, blocked ? CONV_DNNL_BLOCKED : CONV_DNNL_PLAIN, 0, &key);
        if (nn_dnnl_scratch_bytes(c, &key, sizeof key, conv_dnnl_build, &pad))
            return -1;
        most = pad > most ? pad : most;
        for (int i = 0; i < n; i++) {
            if (l.same[i])
                continue;
            conv_dnnl_key_make(&gc, has_bias, prim, io[i].is_out ? CONV_DNNL_REORDER_OUT : CONV_DNNL_REORDER_IN,
                               io[i].arg, &key);
            if (nn_dnnl_scratch_bytes(c, &key, sizeof key, conv_dnnl_build, &pad))
                return -1;
            most = pad > most ? pad : most;
        }
    }
    *bytes = buf + most;
    return 0;
}

int nn_conv_path_workspace(const struct op_call *c, const struct nn_geom *g, int has_bias, enum nn_conv_dir dir,
                           enum nn_conv_path path, size_t *bytes)
{
    if (path == NN_CONV_PATH_GEMM) {
        *bytes = nn_geom_is_pointwise(g) ? 0
                 : sizeof(float) * (size_t)(g->c / g->group * nn_geom_k_size(g) * nn_geom_out_size(g));
        return 0;
    }
    static const int prims[] = { [NN_CONV_FWD] = CONV_PRIM_FWD, [NN_CONV_BWD_DATA] = CONV_PRIM_BWD_DATA,
                                 [NN_CONV_BWD_WEIGHTS] = CONV_PRIM_BWD_WEIGHTS };
    return conv_dnnl_workspace(c, g, has_bias, prims[dir], path == NN_CONV_PATH_BLOCKED, bytes);
}

enum nn_conv_path nn_conv_path_choose(const struct op_call *c, const struct nn_geom *g, int has_bias,
                                      enum nn_conv_dir dir)
{
    /* by speed: the rules and tables above */
    enum nn_conv_path order[3] = { NN_CONV_PATH_PLAIN, NN_CONV_PATH_BLOCKED, NN_CONV_PATH_GEMM };
    if (conv_use_blocked(g)) {
        order[0] = NN_CONV_PATH_BLOCKED;
        order[1] = NN_CONV_PATH_PLAIN;
    }
    if (dir == NN_CONV_BWD_DATA && g->group == 1 && g->c < 16 && nn_geom_k_size(g) > 1) {
        order[2] = order[1];   /* the first layer's backward-data: im2col + sgemm first */
        order[1] = order[0];
        order[0] = NN_CONV_PATH_GEMM;
    }
    /* Querying a oneDNN path builds its primitives, which the call then
     * runs from the cache; a failed query leaves a message behind that the
     * path taken clears by succeeding. */
    size_t cap = nn_conv_workspace_cap(g), best_bytes = SIZE_MAX;
    enum nn_conv_path best = NN_CONV_PATH_GEMM;
    for (int i = 0; i < 3; i++) {
        size_t bytes;
        if (nn_conv_path_workspace(c, g, has_bias, dir, order[i], &bytes))
            continue;
        if (bytes <= cap)
            return order[i];
        if (bytes < best_bytes) {
            best_bytes = bytes;
            best = order[i];
        }
    }
    return best;
}

/* ---- the Conv operator ------------------------------------------------------ */

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
    /* each output element: a dot product over C/group * kernel */
    if (y && w->rank >= 2)
        cost.flops = 2.0 * nn_weight_taps(w) * (double)tensor_numel(y);
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


/* ---- gradients ---------------------------------------------------------------
 * Conv's backward is two calls in the dtrexec domain on the forward's
 * resolved geometry, given as explicit attributes (pads resolved, no
 * auto_pad), so that they need nothing of the forward node:
 *   ConvGradData(dy, W; strides, dilations, pads, group, kernel_shape, shape = X's dims) -> dX
 *   ConvGradWeight(X, dy; the same, shape = W's dims) -> dW [, dB]
 * Both are deterministic: oneDNN's primitives are cached per thread count
 * (a fixed work split) and our GEMM path reduces in a fixed order. */

void nn_geom_attrs_make(const struct nn_geom *g, int n_shape, const int64_t *shape,
                        struct nn_geom_attrs *at)
{
    int nsp = (int)g->nsp;
    for (int i = 0; i < nsp; i++) {
        int j = 3 - nsp + i;
        at->strides[i] = g->stride[j];
        at->dilations[i] = g->dil[j];
        at->kernel[i] = g->k[j];
        at->pads[i] = g->pad_lo[j];
        at->pads[nsp + i] = g->pad_hi[j];
    }
    for (int i = 0; i < n_shape; i++)
        at->shape[i] = shape[i];
    at->a[0] = (struct onnx_attr){ .name = "strides", .type = ONNX_ATTR_INTS, .n = nsp, .ints = at->strides };
    at->a[1] = (struct onnx_attr){ .name = "dilations", .type = ONNX_ATTR_INTS, .n = nsp, .ints = at->dilations };
    at->a[2] = (struct onnx_attr){ .name = "pads", .type = ONNX_ATTR_INTS, .n = 2 * nsp, .ints = at->pads };
    at->a[3] = (struct onnx_attr){ .name = "kernel_shape", .type = ONNX_ATTR_INTS, .n = nsp, .ints = at->kernel };
    at->a[4] = (struct onnx_attr){ .name = "group", .type = ONNX_ATTR_INT, .i = g->group };
    at->a[5] = (struct onnx_attr){ .name = "shape", .type = ONNX_ATTR_INTS, .n = n_shape, .ints = at->shape };
    at->n = 6;
}

static int conv_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    const struct op_call *f = g->fwd;
    struct nn_geom geo;
    if (conv_geom(f, &geo))
        return grad_error(g, "%s", f->env && f->env->err ? f->env->err : "bad geometry");
    const struct tensor *x = f->in[0], *w = f->in[1];
    int has_b = f->n_in > 2 && f->in[2] && g->need_dx[2];
    struct nn_geom_attrs at;
    if (g->need_dx[1] || has_b) {
        nn_geom_attrs_make(&geo, w->rank, w->dims, &at);
        int in[2] = { g->in[0], g->dy[0] }, out[2];
        if (g->emit(g, "ConvGradWeight", at.a, at.n, 2, in, has_b ? 2 : 1, out))
            return -1;
        if (g->need_dx[1] && g->add_dx(g, 1, out[0]))
            return -1;
        if (has_b && g->add_dx(g, 2, out[1]))
            return -1;
    }
    if (g->need_dx[0]) {
        nn_geom_attrs_make(&geo, x->rank, x->dims, &at);
        int in[2] = { g->dy[0], g->in[1] }, dx;
        if (g->emit(g, "ConvGradData", at.a, at.n, 2, in, 1, &dx) || g->add_dx(g, 0, dx))
            return -1;
    }
    return 0;
}

int nn_shape_attr_parse(const struct onnx_node *node, struct nn_shape_attr *s,
                        char *err, size_t err_size)
{
    s->n = onnx_node_attr_ints(node, "shape", s->dims, NN_MAX_SPATIAL + 2);
    if (s->n < 3) {
        snprintf(err, err_size, "node '%s' (%s): attribute shape must list 3 to %d dims",
                 node->name, node->op_type, NN_MAX_SPATIAL + 2);
        return -1;
    }
    return 0;
}

static int conv_grad_parse(const struct onnx_node *node, int version, void **params,
                           char *err, size_t err_size)
{
    void *cp = NULL;
    if (conv_parse(node, version, &cp, err, err_size))
        return -1;
    struct conv_grad_params *p = calloc(1, sizeof *p);
    if (!p) {
        free(cp);
        snprintf(err, err_size, "node '%s' (%s): out of memory", node->name, node->op_type);
        return -1;
    }
    p->conv = *(struct conv_params *)cp;
    free(cp);
    if (nn_shape_attr_parse(node, &p->shape, err, err_size)) {
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

/* Geometry of a gradient call from X's dims, W's dims and dy, checked. */
static int conv_grad_geom(const struct op_call *c, const struct tensor *x, const struct tensor *w,
                          const struct tensor *dy, struct nn_geom *g)
{
    const struct conv_grad_params *p = c->params;
    char d1[128], d2[128], d3[128];
    if (x->rank != w->rank || dy->rank != x->rank)
        goto bad;
    if (nn_geom_resolve(c, &p->conv.w, x, w->dims + 2, 0, g))
        return -1;
    g->n = x->dims[0];
    g->c = x->dims[1];
    g->m = w->dims[0];
    g->group = p->conv.group;
    if (g->c % g->group || g->m % g->group || w->dims[1] != g->c / g->group
        || dy->dims[0] != g->n || dy->dims[1] != g->m)
        goto bad;
    for (int i = 0; i < g->nsp; i++)
        if (dy->dims[2 + i] != g->out[3 - g->nsp + i])
            goto bad;
    return 0;
bad:
    return op_error(c, "X %s, W %s and dY %s do not fit one convolution of group %lld",
                    tensor_describe(x, d1, sizeof d1), tensor_describe(w, d2, sizeof d2),
                    tensor_describe(dy, d3, sizeof d3), (long long)p->conv.group);
}

static int conv_grad_check_float(const struct op_call *c)
{
    for (int i = 0; i < 2; i++)
        if (c->in[i]->dtype != ONNX_DTYPE_FLOAT)
            return op_error(c, "only float32 is supported, input %d is %s", i,
                            onnx_dtype_name(c->in[i]->dtype));
    return 0;
}

/* The shape attribute as a tensor (dims only). */
static struct tensor conv_grad_shape(const struct op_call *c)
{
    const struct conv_grad_params *p = c->params;
    return nn_shape_attr_tensor(&p->shape);
}

static int conv_grad_data_infer(struct op_call *c)
{
    struct nn_geom g;
    struct tensor xs = conv_grad_shape(c);
    if (conv_grad_check_float(c) || conv_grad_geom(c, &xs, c->in[1], c->in[0], &g))
        return -1;
    struct tensor *dx = c->out[0];
    *dx = xs;
    dx->data = NULL;
    return 0;
}

static int conv_grad_weight_infer(struct op_call *c)
{
    struct nn_geom g;
    struct tensor ws = conv_grad_shape(c);
    if (conv_grad_check_float(c) || conv_grad_geom(c, c->in[0], &ws, c->in[1], &g))
        return -1;
    struct tensor *dw = c->out[0];
    *dw = ws;
    dw->data = NULL;
    if (c->n_out > 1 && c->out[1])
        *c->out[1] = (struct tensor){ .dtype = ONNX_DTYPE_FLOAT, .rank = 1, .dims = { g.m } };
    return 0;
}

/* Both are as much arithmetic as the forward: one product per (output
 * element, weight tap of its group). */
static struct op_cost conv_grad_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct conv_grad_params *p = c->params;
    const struct tensor *dy = c->in[!strcmp(c->def->name, "ConvGradData") ? 0 : 1];
    const struct tensor *x = !strcmp(c->def->name, "ConvGradData") ? NULL : c->in[0];
    double per = 1.0;
    if (x) {
        per = (double)(x->dims[1] / (p->conv.group ? p->conv.group : 1));
        for (int i = 2; i < p->shape.n; i++)
            per *= (double)p->shape.dims[i];
    } else {
        per = nn_weight_taps(c->in[1]);
    }
    cost.flops = 2.0 * per * (double)tensor_numel(dy);
    return cost;
}

static int conv_grad_data_cpu(struct op_call *c)
{
    struct nn_geom g;
    struct tensor xs = conv_grad_shape(c);
    if (conv_grad_geom(c, &xs, c->in[1], c->in[0], &g))
        return -1;
    return nn_conv_backward_data(c, &g, c->in[0]->data, c->in[1]->data, c->out[0]->data);
}

static int conv_grad_weight_cpu(struct op_call *c)
{
    struct nn_geom g;
    struct tensor ws = conv_grad_shape(c);
    if (conv_grad_geom(c, c->in[0], &ws, c->in[1], &g))
        return -1;
    float *db = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    return nn_conv_backward_weights(c, &g, c->in[0]->data, c->in[1]->data, c->out[0]->data, db);
}

const struct op_def op_conv = {
    .domain = "", .name = "Conv", .since = { 1, 11, 22 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = conv_parse, .infer = conv_infer, .cost = conv_cost,
    .kernel = { [BACKEND_CPU] = conv_cpu },
    .grad = conv_grad,
    .grad_saves_in = (1u << 0) | (1u << 1),
};

const struct op_def op_conv_grad_data = {
    .domain = "dtrexec", .name = "ConvGradData", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = conv_grad_parse, .infer = conv_grad_data_infer, .cost = conv_grad_cost,
    .kernel = { [BACKEND_CPU] = conv_grad_data_cpu },
};

const struct op_def op_conv_grad_weight = {
    .domain = "dtrexec", .name = "ConvGradWeight", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 2,
    .parse = conv_grad_parse, .infer = conv_grad_weight_infer, .cost = conv_grad_cost,
    .kernel = { [BACKEND_CPU] = conv_grad_weight_cpu },
};

int nn_conv_geom(const struct op_call *c, struct nn_geom *g) { return conv_geom(c, g); }

int nn_conv_use_blocked(const struct nn_geom *g) { return conv_use_blocked(g); }

void nn_conv_dnnl_mds(const struct nn_geom *g, int has_bias, int any, dnnl_memory_desc_t *src,
                      dnnl_memory_desc_t *wei, dnnl_memory_desc_t *bia, dnnl_memory_desc_t *dst)
{
    conv_dnnl_mds(g, has_bias, any, src, wei, bia, dst);
}

dnnl_status_t nn_conv_dnnl_fwd_desc(const struct nn_geom *g, const dnnl_memory_desc_t *src,
                                    const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *bia,
                                    const dnnl_memory_desc_t *dst, dnnl_convolution_desc_t *d)
{
    dnnl_dims_t strides, dil, pl, pr;
    conv_dnnl_window(g, strides, dil, pl, pr);
    return dnnl_dilated_convolution_forward_desc_init(d, dnnl_forward_inference, dnnl_convolution_direct, src,
                                                      wei, bia, dst, strides, dil, pl, pr);
}

int nn_conv_grad_geom(const struct op_call *c, const struct tensor *x, const struct tensor *w,
                      const struct tensor *dy, struct nn_geom *g)
{
    return conv_grad_geom(c, x, w, dy, g);
}
