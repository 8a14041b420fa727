/* ops/pad.c — Pad (opset 2, 11, 13, 18, 19, 21, 23, 24, 25), modes constant,
 * reflect, edge and wrap (wrap from 19). Before 11 the pads and the value are
 * attributes; from 11 pads and constant_value are inputs; from 18 an axes
 * input says which axes the pads are for. Negative pads crop.
 *
 * Every output index along an axis maps to one input index (or to "the
 * constant"), computed once per axis; an output row is then the constant,
 * or one memcpy of the input's kept run plus the few padded elements around
 * it. Indices are mapped against the whole input, so cropping one side and
 * padding the other behaves as "pad, then crop". */
#include <stdlib.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

enum pad_mode {
    PAD_MODE_CONSTANT = 0,
    PAD_MODE_REFLECT,
    PAD_MODE_EDGE,
    PAD_MODE_WRAP,
};

static int pad_parse(const struct onnx_node *node, int version, void **params,
                     char *err, size_t err_size)
{
    const char *mode = onnx_node_attr_string(node, "mode", "constant");
    int m;
    if (!strcmp(mode, "constant"))
        m = PAD_MODE_CONSTANT;
    else if (!strcmp(mode, "reflect"))
        m = PAD_MODE_REFLECT;
    else if (!strcmp(mode, "edge"))
        m = PAD_MODE_EDGE;
    else if (!strcmp(mode, "wrap") && version >= 19)
        m = PAD_MODE_WRAP;
    else
        return shape_parse_error(err, err_size, node,
                                 "unsupported mode '%s' (expected constant, reflect, edge%s)", mode,
                                 version >= 19 ? " or wrap" : "");
    struct pad_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->mode = m;
    if (version < 11) {
        p->n_pads = onnx_node_attr_ints(node, "pads", p->pads, 2 * TENSOR_MAX_RANK);
        if (p->n_pads < 0) {
            free(p);
            return shape_parse_error(err, err_size, node,
                                     "the pads attribute is required (at most %d values)",
                                     2 * TENSOR_MAX_RANK);
        }
        p->value = onnx_node_attr_float(node, "value", 0.0f);
    }
    *params = p;
    return 0;
}

/* Begin and end pads of every axis. */
int pad_amounts(const struct op_call *c, int64_t *begin, int64_t *end)
{
    const struct pad_params *p = c->params;
    const struct tensor *x = c->in[0];
    int rank = x->rank;
    int64_t pads[2 * TENSOR_MAX_RANK], axes[TENSOR_MAX_RANK];
    int n_pads, n_axes;
    if (c->version < 11) {
        n_pads = p->n_pads;
        memcpy(pads, p->pads, sizeof pads);
    } else {
        if (c->n_in < 2 || !c->in[1])
            return op_error(c, "input 'pads' is required");
        n_pads = shape_read_ints(c, c->in[1], "pads", pads, 2 * TENSOR_MAX_RANK);
        if (n_pads < 0)
            return -1;
    }
    if (c->version >= 18 && c->n_in > 3 && c->in[3]) {
        n_axes = shape_read_ints(c, c->in[3], "axes", axes, TENSOR_MAX_RANK);
        if (n_axes < 0 || shape_normalize_axes(c, axes, n_axes, rank))
            return -1;
    } else {
        n_axes = rank;
        for (int i = 0; i < rank; i++)
            axes[i] = i;
    }
    if (n_pads != 2 * n_axes)
        return op_error(c, "pads has %d values; expected %d (two per axis)", n_pads, 2 * n_axes);
    for (int i = 0; i < rank; i++)
        begin[i] = end[i] = 0;
    for (int i = 0; i < n_axes; i++) {
        begin[axes[i]] = pads[i];
        end[axes[i]] = pads[i + n_axes];
    }
    for (int i = 0; i < rank; i++) {
        int64_t d = x->dims[i], out;
        if (__builtin_add_overflow(d, begin[i], &out) || __builtin_add_overflow(out, end[i], &out))
            return op_error(c, "pads %lld and %lld on axis %d's %lld elements overflow int64 (limit 2^62 bytes)",
                            (long long)begin[i], (long long)end[i], i, (long long)d);
        if (out < 0)
            return op_error(c, "pads %lld and %lld crop more than axis %d's %lld elements",
                            (long long)begin[i], (long long)end[i], i, (long long)d);
        if (d == 0 && out > 0 && p->mode != PAD_MODE_CONSTANT)
            return op_error(c, "axis %d is empty; only constant mode can pad it", i);
    }
    return 0;
}

static int pad_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int64_t begin[TENSOR_MAX_RANK], end[TENSOR_MAX_RANK];
    if (pad_amounts(c, begin, end))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        y->dims[i] = x->dims[i] + begin[i] + end[i];
    return 0;
}

/* Input index that output index o of an axis reads, or -1 for the constant. */
int64_t pad_source(int mode, int64_t o, int64_t begin, int64_t d)
{
    int64_t i = o - begin;
    if (i >= 0 && i < d)
        return i;
    switch (mode) {
    case PAD_MODE_EDGE:
        return i < 0 ? 0 : d - 1;
    case PAD_MODE_WRAP:
        return ((i % d) + d) % d;
    case PAD_MODE_REFLECT: {
        if (d == 1)
            return 0;
        int64_t period = 2 * (d - 1), m = ((i % period) + period) % period;
        return m < d ? m : period - m;
    }
    default:
        return -1;
    }
}

/* The constant as bytes of the data's type: constant_value (from 11) or the
 * `value` attribute converted (before 11). */
int pad_constant(const struct op_call *c, unsigned char *out, size_t esize)
{
    const struct pad_params *p = c->params;
    const struct tensor *x = c->in[0];
    memset(out, 0, esize);
    if (c->version >= 11) {
        const struct tensor *v = c->n_in > 2 ? c->in[2] : NULL;
        if (!v || tensor_numel(v) == 0)
            return 0;
        if (v->dtype != x->dtype)
            return op_error(c, "constant_value is %s but the data is %s", onnx_dtype_name(v->dtype),
                            onnx_dtype_name(x->dtype));
        memcpy(out, v->data, esize);
        return 0;
    }
    double v = p->value;
    switch (x->dtype) {
    case ONNX_DTYPE_FLOAT: { float f = (float)v; memcpy(out, &f, 4); break; }
    case ONNX_DTYPE_DOUBLE: memcpy(out, &v, 8); break;
    case ONNX_DTYPE_INT64: { int64_t t = (int64_t)v; memcpy(out, &t, 8); break; }
    case ONNX_DTYPE_INT32: { int32_t t = (int32_t)v; memcpy(out, &t, 4); break; }
    case ONNX_DTYPE_INT16: { int16_t t = (int16_t)v; memcpy(out, &t, 2); break; }
    case ONNX_DTYPE_INT8: { int8_t t = (int8_t)v; memcpy(out, &t, 1); break; }
    case ONNX_DTYPE_UINT8: case ONNX_DTYPE_BOOL: { uint8_t t = (uint8_t)v; memcpy(out, &t, 1); break; }
    default: break;
    }
    return 0;
}

static int pad_cpu(struct op_call *c)
{
    const struct pad_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int64_t begin[TENSOR_MAX_RANK], end[TENSOR_MAX_RANK];
    if (pad_amounts(c, begin, end))
        return -1;
    size_t esize = onnx_dtype_size(x->dtype);
    int64_t total = tensor_numel(y);
    if (total == 0)
        return 0;
    if (esize > 16)
        return op_error(c, "unsupported element type %s", onnx_dtype_name(x->dtype));
    unsigned char cval[16];
    if (pad_constant(c, cval, esize))
        return -1;
    int rank = y->rank;
    if (rank == 0) {
        memcpy(y->data, x->data, esize);
        return 0;
    }
    /* The index maps of all axes, back to back. */
    int64_t offs[TENSOR_MAX_RANK + 1];
    offs[0] = 0;
    for (int a = 0; a < rank; a++)
        offs[a + 1] = offs[a] + y->dims[a];
    int64_t *map = malloc(sizeof(int64_t) * (size_t)offs[rank]);
    if (!map)
        return op_error(c, "out of memory for %lld index entries", (long long)offs[rank]);
    for (int a = 0; a < rank; a++)
        for (int64_t o = 0; o < y->dims[a]; o++)
            map[offs[a] + o] = pad_source(p->mode, o, begin[a], x->dims[a]);

    int64_t xs[TENSOR_MAX_RANK];
    shape_strides(x, xs);
    int last = rank - 1;
    int64_t w = y->dims[last], d = x->dims[last];
    int64_t lo = begin[last] > 0 ? begin[last] : 0;
    int64_t hi = begin[last] + d < w ? begin[last] + d : w;
    const int64_t *lmap = map + offs[last];
    int64_t rows = total / w;
    const char *src = x->data;
    char *dst = y->data;
    int par = (double)total * (double)esize > SHAPE_PARALLEL_BYTES;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t row = 0; row < rows; row++) {
        char *dp = dst + (size_t)(row * w) * esize;
        int64_t rem = row, off = 0;
        int constant_row = 0;
        for (int a = last - 1; a >= 0; a--) {
            int64_t q = rem / y->dims[a], i = map[offs[a] + rem - q * y->dims[a]];
            if (i < 0)
                constant_row = 1;
            else
                off += i * xs[a];
            rem = q;
        }
        if (constant_row) {
            for (int64_t o = 0; o < w; o++)
                memcpy(dp + (size_t)o * esize, cval, esize);
            continue;
        }
        const char *sp = src + (size_t)off * esize;
        if (hi > lo)
            memcpy(dp + (size_t)lo * esize, sp + (size_t)(lo - begin[last]) * esize,
                   (size_t)(hi - lo) * esize);
        for (int64_t o = 0; o < w; o++) {
            if (o == lo && hi > lo) {
                o = hi - 1;
                continue;
            }
            int64_t i = lmap[o];
            memcpy(dp + (size_t)o * esize, i < 0 ? (const char *)cval : sp + (size_t)i * esize,
                   esize);
        }
    }
    free(map);
    return 0;
}

/* Constant mode: dx = Pad(dy) by the negated pads, which crops what was
 * padded and zero-fills what was cropped; constant_value (a float input
 * from opset 11) receives the sum of dy over the padded positions, that is
 * sum(dy) - sum(dx). Other modes read some inputs several times, so their
 * dx is a scatter-add (PadGrad). Reads pads and axes, hence grad_saves_in. */
static int pad_grad(struct grad_ctx *g)
{
    const struct pad_params *p = g->fwd->params;
    const struct tensor *x = g->fwd->in[0];
    int want_value = p->mode == PAD_MODE_CONSTANT && g->fwd->version >= 11 && g->fwd->n_in > 2 &&
                     g->in[2] >= 0 && g->need_dx[2];
    if ((!g->need_dx[0] && !want_value) || g->dy[0] < 0)
        return 0;
    int64_t begin[TENSOR_MAX_RANK], end[TENSOR_MAX_RANK], pads[2 * TENSOR_MAX_RANK];
    if (pad_amounts(g->fwd, begin, end))
        return shape_grad_fwd_error(g);
    int rank = x->rank, dx;
    if (p->mode == PAD_MODE_CONSTANT) {
        for (int a = 0; a < rank; a++) {
            pads[a] = -begin[a];
            pads[a + rank] = -end[a];
        }
        int in[2] = { g->dy[0], grad_const_i64(g, 2 * rank, pads) };
        if (in[1] < 0 || g->emit(g, "Pad", NULL, 0, 2, in, 1, &dx))
            return -1;
    } else {
        int64_t dims[TENSOR_MAX_RANK];
        for (int a = 0; a < rank; a++) {
            dims[a] = x->dims[a];
            pads[a] = begin[a];
            pads[a + rank] = end[a];
        }
        struct onnx_attr attrs[3] = { shape_attr_int("mode", p->mode),
                                      shape_attr_ints("shape", rank, dims),
                                      shape_attr_ints("pads", 2 * rank, pads) };
        if (g->emit(g, "PadGrad", attrs, 3, 1, &g->dy[0], 1, &dx))
            return -1;
    }
    if (g->need_dx[0] && g->add_dx(g, 0, dx))
        return -1;
    if (!want_value)
        return 0;
    struct onnx_attr keep = shape_attr_int("keepdims", 0);
    int all, kept, dv, in[2];
    if (g->emit(g, "ReduceSum", &keep, 1, 1, &g->dy[0], 1, &all) ||
        g->emit(g, "ReduceSum", &keep, 1, 1, &dx, 1, &kept))
        return -1;
    in[0] = all;
    in[1] = kept;
    if (g->emit(g, "Sub", NULL, 0, 2, in, 1, &dv) ||
        shape_grad_reshape(g, dv, g->fwd->in[2], &dv))
        return -1;
    return g->add_dx(g, 2, dv);
}

const struct op_def op_pad = {
    .domain = "", .name = "Pad",
    .since = { 2, 11, 13, 18, 19, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 4, .min_out = 1, .max_out = 1,
    .parse = pad_parse,
    .infer = pad_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = pad_cpu },
    .host_inputs = (1u << 1) | (1u << 2) | (1u << 3),
    .grad = pad_grad,
    .grad_saves_in = (1u << 1) | (1u << 3),
};

/* ---- PadGrad (domain dtrexec) ----------------------------------------------
 * The transpose of Pad in reflect, edge or wrap mode: y = zeros of `shape`
 * (the input's), then every dy element is added to the input element its
 * output position copied (pad_source per axis; constant positions add
 * nothing). One pass in dy order, so the sums are the same every run. */

static int pad_grad_parse(const struct onnx_node *node, int version, void **params,
                          char *err, size_t err_size)
{
    (void)version;
    struct pad_grad_params *p = calloc(1, sizeof *p);
    int64_t pads[2 * TENSOR_MAX_RANK];
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    if (shape_parse_target(node, &p->target, err, err_size)) {
        free(p);
        return -1;
    }
    int rank = p->target.rank;
    p->mode = (int)onnx_node_attr_int(node, "mode", PAD_MODE_CONSTANT);
    int n = onnx_node_attr_ints(node, "pads", pads, 2 * TENSOR_MAX_RANK);
    if (n != 2 * rank || p->mode < PAD_MODE_CONSTANT || p->mode > PAD_MODE_WRAP) {
        free(p);
        return shape_parse_error(err, err_size, node,
                                 "pads must have %d values (two per axis of shape) and mode 0..3",
                                 2 * rank);
    }
    for (int a = 0; a < rank; a++) {
        p->begin[a] = pads[a];
        p->end[a] = pads[a + rank];
    }
    *params = p;
    return 0;
}

static int pad_grad_infer(struct op_call *c)
{
    const struct pad_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    int ok = dy->rank == p->target.rank;
    for (int a = 0; ok && a < dy->rank; a++) {
        ok = dy->dims[a] == p->target.dims[a] + p->begin[a] + p->end[a];
        if (ok && p->target.dims[a] == 0 && dy->dims[a] > 0 && p->mode != PAD_MODE_CONSTANT)
            ok = 0;
    }
    if (!ok) {
        char buf[128];
        return op_error(c, "dy %s is not the padding of shape by pads", tensor_describe(dy, buf, sizeof buf));
    }
    struct tensor *y = c->out[0];
    *y = p->target;
    y->dtype = dy->dtype;
    y->data = NULL;
    return 0;
}

static int pad_grad_cpu(struct op_call *c)
{
    const struct pad_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    struct tensor *y = c->out[0];
    memset(y->data, 0, tensor_size_bytes(y));
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    int rank = dy->rank;
    int64_t total = tensor_numel(dy);
    if (total == 0)
        return 0;
    int dbl = dy->dtype == ONNX_DTYPE_DOUBLE;
    if (rank == 0) {
        memcpy(y->data, dy->data, dbl ? 8 : 4);
        return 0;
    }
    int64_t offs[TENSOR_MAX_RANK + 1];
    offs[0] = 0;
    for (int a = 0; a < rank; a++)
        offs[a + 1] = offs[a] + dy->dims[a];
    int64_t *map = malloc(sizeof(int64_t) * (size_t)offs[rank]);
    if (!map)
        return op_error(c, "out of memory for %lld index entries", (long long)offs[rank]);
    for (int a = 0; a < rank; a++)
        for (int64_t o = 0; o < dy->dims[a]; o++)
            map[offs[a] + o] = pad_source(p->mode, o, p->begin[a], y->dims[a]);
    int64_t ys[TENSOR_MAX_RANK];
    shape_strides(y, ys);
    int last = rank - 1;
    int64_t w = dy->dims[last], rows = total / w;
    const int64_t *lmap = map + offs[last];
    for (int64_t row = 0; row < rows; row++) {
        int64_t rem = row, off = 0;
        int constant_row = 0;
        for (int a = last - 1; a >= 0; a--) {
            int64_t q = rem / dy->dims[a], i = map[offs[a] + rem - q * dy->dims[a]];
            if (i < 0)
                constant_row = 1;
            else
                off += i * ys[a];
            rem = q;
        }
        if (constant_row)
            continue;
        for (int64_t o = 0; o < w; o++) {
            int64_t i = lmap[o];
            if (i < 0)
                continue;
            if (dbl)
                ((double *)y->data)[off + i] += ((const double *)dy->data)[row * w + o];
            else
                ((float *)y->data)[off + i] += ((const float *)dy->data)[row * w + o];
        }
    }
    free(map);
    return 0;
}

const struct op_def op_pad_grad = {
    .domain = "dtrexec", .name = "PadGrad",
    .since = { 1 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = pad_grad_parse,
    .infer = pad_grad_infer,
    .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = pad_grad_cpu },
};
