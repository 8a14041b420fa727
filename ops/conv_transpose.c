/* ops/conv_transpose.c — ConvTranspose (opset 1, 11, 22), float32, 1-D/2-D/3-D,
 * groups, strides, dilations, pads, output_padding, output_shape, auto_pad,
 * optional bias.
 *
 * A transposed convolution is the adjoint of the convolution whose input is
 * our output: per image and group, col = W_g^T X_g (a GEMM) and col2im adds
 * the columns into the output. So the geometry below is that of the forward
 * convolution with in = our output and out = our input, the same nn_geom the
 * Conv kernel (and later ConvGradData) uses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/nn-params.h"

static int ct_parse(const struct onnx_node *node, int version, void **params,
                    char *err, size_t err_size)
{
    struct conv_transpose_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (ConvTranspose): out of memory", node->name);
        return -1;
    }
    if (nn_window_attrs_parse(node, &p->w, err, err_size))
        goto fail;
    p->group = onnx_node_attr_int(node, "group", 1);
    if (p->group < 1) {
        snprintf(err, err_size, "node '%s' (ConvTranspose): group = %lld must be >= 1",
                 node->name, (long long)p->group);
        goto fail;
    }
    p->n_output_padding = onnx_node_attr_ints(node, "output_padding", p->output_padding, NN_MAX_SPATIAL);
    p->n_output_shape = onnx_node_attr_ints(node, "output_shape", p->output_shape, NN_MAX_SPATIAL + 2);
    if (p->n_output_padding == -2 || p->n_output_shape == -2) {
        snprintf(err, err_size, "node '%s' (ConvTranspose): output_padding/output_shape has too "
                 "many entries", node->name);
        goto fail;
    }
    if (p->n_output_padding < 0)
        p->n_output_padding = 0;
    if (p->n_output_shape < 0)
        p->n_output_shape = 0;
    *params = p;
    return 0;
fail:
    free(p);
    return -1;
}

/* Geometry of the adjoint convolution: g->in is our output, g->out our input,
 * g->c our output channels and g->m our input channels. */
static int ct_geom(const struct op_call *c, struct nn_geom *g)
{
    const struct conv_transpose_params *p = c->params;
    const struct nn_window_attrs *a = &p->w;
    const struct tensor *x = c->in[0], *w = c->in[1];
    const struct tensor *b = c->n_in > 2 ? c->in[2] : NULL;
    char d1[128], d2[128];
    if (x->dtype != ONNX_DTYPE_FLOAT || w->dtype != ONNX_DTYPE_FLOAT || (b && b->dtype != ONNX_DTYPE_FLOAT))
        return op_error(c, "only float32 is supported, got X %s and W %s",
                        tensor_describe(x, d1, sizeof d1), tensor_describe(w, d2, sizeof d2));
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > NN_MAX_SPATIAL || w->rank != x->rank)
        return op_error(c, "X %s and W %s must have the same rank, 3 to %d",
                        tensor_describe(x, d1, sizeof d1), tensor_describe(w, d2, sizeof d2),
                        NN_MAX_SPATIAL + 2);
    if ((a->n_strides && a->n_strides != nsp) || (a->n_dilations && a->n_dilations != nsp)
        || (a->n_pads && a->n_pads != 2 * nsp) || (a->n_kernel && a->n_kernel != nsp)
        || (p->n_output_padding && p->n_output_padding != nsp)
        || (p->n_output_shape && p->n_output_shape != nsp && p->n_output_shape != nsp + 2))
        return op_error(c, "strides/dilations/kernel_shape/output_padding/output_shape must "
                        "have %d entries and pads %d", nsp, 2 * nsp);
    if (x->dims[1] != w->dims[0] || x->dims[1] % p->group)
        return op_error(c, "X %s channels must equal W %s dim 0 and divide by group %lld",
                        tensor_describe(x, d1, sizeof d1), tensor_describe(w, d2, sizeof d2),
                        (long long)p->group);
    g->nsp = nsp;
    g->n = x->dims[0];
    g->m = x->dims[1];
    g->c = w->dims[1] * p->group;
    g->group = p->group;
    if (b && (b->rank != 1 || b->dims[0] != g->c))
        return op_error(c, "B %s must be [%lld]", tensor_describe(b, d1, sizeof d1), (long long)g->c);
    nn_geom_reset_window(g);
    for (int i = 0; i < nsp; i++) {
        int j = 3 - nsp + i;
        int64_t in = x->dims[2 + i], k = w->dims[2 + i];
        if (a->n_kernel && a->kernel[i] != k)
            return op_error(c, "kernel_shape[%d] = %lld differs from W %s", i,
                            (long long)a->kernel[i], tensor_describe(w, d1, sizeof d1));
        int64_t s = a->n_strides ? a->strides[i] : 1;
        int64_t d = a->n_dilations ? a->dilations[i] : 1;
        int64_t op = p->n_output_padding ? p->output_padding[i] : 0;
        int64_t dk = d * (k - 1) + 1, lo, hi, out;
        int64_t full = s * (in - 1) + op + dk;      /* output size before padding */
        int64_t want = -1;
        if (p->n_output_shape)
            want = p->output_shape[p->n_output_shape == nsp ? i : 2 + i];
        else if (a->auto_pad == NN_AUTO_PAD_SAME_UPPER || a->auto_pad == NN_AUTO_PAD_SAME_LOWER)
            want = in * s;
        if (want >= 0) {
            /* total < 0 asks for more output than the input covers: the
             * extra positions at the end get only the bias, as with
             * output_padding (halving rounds down, as onnx's reference) */
            int64_t total = full - want;
            int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
            if (a->auto_pad == NN_AUTO_PAD_SAME_UPPER) {
                lo = half;
                hi = total - lo;
            } else {
                hi = half;
                lo = total - hi;
            }
            if (lo < 0)
                return op_error(c, "spatial axis %d: output size %lld needs negative leading "
                                "padding (the input can produce %lld)", i, (long long)want,
                                (long long)full);
            out = want;
        } else {
            lo = hi = 0;
            if (a->auto_pad == NN_AUTO_PAD_NOTSET && a->n_pads) {
                lo = a->pads[i];
                hi = a->pads[nsp + i];
            }
            out = full - lo - hi;
        }
        if (out < 1)
            return op_error(c, "spatial axis %d: output size %lld < 1", i, (long long)out);
        g->in[j] = out;
        g->out[j] = in;
        g->k[j] = k;
        g->stride[j] = s;
        g->dil[j] = d;
        g->pad_lo[j] = lo;
        g->pad_hi[j] = hi;
    }
    return 0;
}

static int ct_infer(struct op_call *c)
{
    struct nn_geom g;
    if (ct_geom(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_FLOAT;
    y->rank = (int)g.nsp + 2;
    y->dims[0] = g.n;
    y->dims[1] = g.c;
    for (int i = 0; i < g.nsp; i++)
        y->dims[2 + i] = g.in[3 - g.nsp + i];
    return 0;
}

static struct op_cost ct_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *x = c->in[0], *w = c->in[1];
    /* each input element scatters into (M/group) * kernel outputs */
    if (w->rank >= 2)
        cost.flops = 2.0 * nn_weight_taps(w) * (double)tensor_numel(x);
    return cost;
}

static int ct_cpu(struct op_call *c)
{
    struct nn_geom g;
    if (ct_geom(c, &g))
        return -1;
    const float *x = c->in[0]->data, *w = c->in[1]->data;
    const struct tensor *bt = c->n_in > 2 ? c->in[2] : NULL;
    float *y = c->out[0]->data;
    const int64_t cg = g.c / g.group, mg = g.m / g.group, K = nn_geom_k_size(&g);
    const int64_t xsz = nn_geom_out_size(&g), ysz = nn_geom_in_size(&g);
    float *col = nn_scratch_alloc(c, sizeof(float) * (size_t)(cg * K * xsz));
    if (!col)
        return op_error(c, "cannot get %lld bytes of col2im scratch",
                        (long long)(sizeof(float) * cg * K * xsz));
    memset(y, 0, sizeof(float) * (size_t)(g.n * g.c * ysz));
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t gi = 0; gi < g.group; gi++) {
            const float *xg = x + (n * g.m + gi * mg) * xsz;
            const float *wg = w + gi * mg * cg * K;    /* [mg, cg * K] */
            float *yg = y + (n * g.c + gi * cg) * ysz;
            nn_sgemm(1, 0, cg * K, xsz, mg, 1.0f, wg, cg * K, xg, xsz, 0.0f, col, xsz);
            nn_col2im(&g, col, cg, yg);
        }
    }
    nn_scratch_free(c, col);
    if (bt) {
        const float *b = bt->data;
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t ch = 0; ch < g.c; ch++) {
                float *yp = y + (n * g.c + ch) * ysz;
                for (int64_t i = 0; i < ysz; i++)
                    yp[i] += b[ch];
            }
    }
    return 0;
}

/* ---- gradient -------------------------------------------------------------------
 * Y = ConvTranspose(X, W) is the adjoint of the convolution with geometry
 * `g` (ct_geom: its input is our Y, its output our X), so its gradients are
 * convolutions on that same geometry:
 *   dX = Conv(dY, W)                       (the convolution itself),
 *   dW = ConvGradWeight(dY, X)             (roles swapped: dY is the input),
 *   dB = dY summed over all axes but 1.
 * Output positions that output_shape adds past the last window (negative
 * end padding) receive only the bias, so dY is sliced to the covered part
 * first and the padding becomes 0. */
static int ct_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    const struct op_call *f = g->fwd;
    const struct tensor *x = f->in[0], *w = f->in[1], *y = f->out[0];
    struct nn_geom geo;
    if (ct_geom(f, &geo))
        return grad_error(g, "%s", f->env && f->env->err ? f->env->err : "bad geometry");
    int nsp = (int)geo.nsp, dy = g->dy[0];
    int64_t starts[NN_MAX_SPATIAL], ends[NN_MAX_SPATIAL], axes[NN_MAX_SPATIAL];
    int n_cut = 0;
    for (int i = 0; i < nsp; i++) {
        int j = 3 - nsp + i;
        if (geo.pad_hi[j] < 0) {
            starts[n_cut] = 0;
            ends[n_cut] = geo.in[j] + geo.pad_hi[j];
            axes[n_cut++] = 2 + i;
            geo.in[j] += geo.pad_hi[j];
            geo.pad_hi[j] = 0;
        }
        int64_t span = geo.in[j] + geo.pad_lo[j] + geo.pad_hi[j] - geo.dil[j] * (geo.k[j] - 1) - 1;
        if (span < 0 || span / geo.stride[j] + 1 != geo.out[j])
            return grad_error(g, "spatial axis %d: output_padding/output_shape give an output "
                              "the convolution of dY does not map back onto X", i);
    }
    if (n_cut) {
        int in[4] = { dy, grad_const_i64(g, n_cut, starts), grad_const_i64(g, n_cut, ends),
                      grad_const_i64(g, n_cut, axes) };
        if (in[1] < 0 || in[2] < 0 || in[3] < 0 || g->emit(g, "Slice", NULL, 0, 4, in, 1, &dy))
            return -1;
    }
    struct nn_geom_attrs at;
    if (g->need_dx[0]) {
        nn_geom_attrs_make(&geo, x->rank, x->dims, &at);
        int in[2] = { dy, g->in[1] }, dx;
        /* Conv takes every attribute but `shape` (the last) */
        if (g->emit(g, "Conv", at.a, at.n - 1, 2, in, 1, &dx) || g->add_dx(g, 0, dx))
            return -1;
    }
    if (g->need_dx[1]) {
        nn_geom_attrs_make(&geo, w->rank, w->dims, &at);
        int in[2] = { dy, g->in[0] }, dw;
        if (g->emit(g, "ConvGradWeight", at.a, at.n, 2, in, 1, &dw) || g->add_dx(g, 1, dw))
            return -1;
    }
    if (f->n_in > 2 && f->in[2] && g->need_dx[2]) {
        int64_t red[NN_MAX_SPATIAL + 1];
        int n_red = 0;
        for (int i = 0; i < y->rank; i++)
            if (i != 1)
                red[n_red++] = i;
        struct onnx_attr keep = { .name = "keepdims", .type = ONNX_ATTR_INT, .i = 0 };
        int in[2] = { g->dy[0], grad_const_i64(g, n_red, red) }, db;
        if (in[1] < 0 || g->emit(g, "ReduceSum", &keep, 1, 2, in, 1, &db) || g->add_dx(g, 2, db))
            return -1;
    }
    return 0;
}

const struct op_def op_conv_transpose = {
    .domain = "", .name = "ConvTranspose", .since = { 1, 11, 22 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = ct_parse, .infer = ct_infer, .cost = ct_cost,
    .kernel = { [BACKEND_CPU] = ct_cpu },
    .grad = ct_grad,
    .grad_saves_in = (1u << 0) | (1u << 1),
};

int nn_conv_transpose_geom(const struct op_call *c, struct nn_geom *g) { return ct_geom(c, g); }
