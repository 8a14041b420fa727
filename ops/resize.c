/* ops/resize.c — Resize (opset 10, 11, 13, 18, 19), modes nearest, linear
 * (N-linear: bilinear, trilinear, ... over every resized axis) and cubic.
 *
 * Coordinate transformations half_pixel, half_pixel_symmetric,
 * pytorch_half_pixel, align_corners, asymmetric and tf_crop_and_resize;
 * nearest modes round_prefer_floor/ceil, floor and ceil; output from
 * `scales` or `sizes`, optionally for a subset of `axes` and under a
 * keep_aspect_ratio_policy (18+). Opset 10 has neither attribute: it maps
 * asymmetrically and rounds the way Upsample did (floor when enlarging,
 * ceil when shrinking), as onnxruntime does.
 *
 * Nearest and linear run here: source coordinates follow the ONNX
 * reference (double precision, source indices clamped to the edge),
 * computed once per axis into two-tap index/weight tables; the kernel then
 * reads them per output row. Cubic, antialias, tf_crop_and_resize and
 * exclude_outside take the separable path of ops/resize_general.c. */
#include <math.h>
#include <stdlib.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

enum resize_coord {
    RESIZE_COORD_HALF_PIXEL = 0,
    RESIZE_COORD_HALF_PIXEL_SYMMETRIC,
    RESIZE_COORD_PYTORCH_HALF_PIXEL,
    RESIZE_COORD_ALIGN_CORNERS,
    RESIZE_COORD_ASYMMETRIC,
    RESIZE_COORD_TF_CROP_AND_RESIZE,
};

enum resize_nearest {
    RESIZE_NEAREST_ROUND_PREFER_FLOOR = 0,
    RESIZE_NEAREST_ROUND_PREFER_CEIL,
    RESIZE_NEAREST_FLOOR,
    RESIZE_NEAREST_CEIL,
    RESIZE_NEAREST_SIMPLE,         /* opset 10 */
};

static int resize_lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

static int resize_parse(const struct onnx_node *node, int version, void **params,
                        char *err, size_t err_size)
{
    static const char *const coords[] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                          "align_corners", "asymmetric", "tf_crop_and_resize" };
    static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil", "floor",
                                            "ceil" };
    static const char *const policies[] = { "stretch", "not_larger", "not_smaller" };
    struct resize_params p = { .n_axes = -1, .cubic_a = -0.75 };
    const char *mode = onnx_node_attr_string(node, "mode", "nearest");
    if (!strcmp(mode, "linear"))
        p.linear = 1;
    else if (!strcmp(mode, "cubic") && version >= 11)
        p.cubic = 1;
    else if (strcmp(mode, "nearest"))
        return shape_parse_error(err, err_size, node, "unsupported Resize mode '%s' (supported: nearest, linear%s)",
                                 mode, version >= 11 ? ", cubic" : "");
    if (version < 11) {
        p.coord = RESIZE_COORD_ASYMMETRIC;
        p.nearest = RESIZE_NEAREST_SIMPLE;
    } else {
        const char *coord = onnx_node_attr_string(node, "coordinate_transformation_mode",
                                                  "half_pixel");
        const char *nearest = onnx_node_attr_string(node, "nearest_mode", "round_prefer_floor");
        p.coord = resize_lookup(coord, coords, 6);
        if (p.coord < 0 || (version < 19 && p.coord == RESIZE_COORD_HALF_PIXEL_SYMMETRIC))
            return shape_parse_error(err, err_size, node,
                                     "unsupported Resize coordinate_transformation_mode '%s' "
                                     "(supported: half_pixel, %spytorch_half_pixel, align_corners, "
                                     "asymmetric, tf_crop_and_resize)", coord,
                                     version >= 19 ? "half_pixel_symmetric, " : "");
        p.nearest = resize_lookup(nearest, nearests, 4);
        if (p.nearest < 0)
            return shape_parse_error(err, err_size, node,
                                     "unsupported Resize nearest_mode '%s' (supported: "
                                     "round_prefer_floor, round_prefer_ceil, floor, ceil)", nearest);
        p.cubic_a = onnx_node_attr_float(node, "cubic_coeff_a", -0.75f);
        p.exclude_outside = onnx_node_attr_int(node, "exclude_outside", 0) != 0;
        p.extrapolation = onnx_node_attr_float(node, "extrapolation_value", 0.0f);
    }
    if (version >= 18) {
        p.antialias = onnx_node_attr_int(node, "antialias", 0) != 0;
        if (p.antialias && !p.linear && !p.cubic)
            return shape_parse_error(err, err_size, node, "antialias=1 needs mode linear or cubic, not nearest");
        const char *policy = onnx_node_attr_string(node, "keep_aspect_ratio_policy", "stretch");
        p.policy = resize_lookup(policy, policies, 3);
        if (p.policy < 0)
            return shape_parse_error(err, err_size, node,
                                     "unsupported Resize keep_aspect_ratio_policy '%s' "
                                     "(supported: stretch, not_larger, not_smaller)", policy);
        p.n_axes = onnx_node_attr_ints(node, "axes", p.axes, TENSOR_MAX_RANK);
        if (p.n_axes == -2)
            return shape_parse_error(err, err_size, node, "axes has more than %d entries",
                                     TENSOR_MAX_RANK);
    }
    p.general = p.cubic || p.antialias || p.exclude_outside || p.coord == RESIZE_COORD_TF_CROP_AND_RESIZE;
    struct resize_params *out = malloc(sizeof *out);
    if (!out)
        return shape_parse_error(err, err_size, node, "out of memory");
    *out = p;
    *params = out;
    return 0;
}

int resize_make_plan(const struct op_call *c, struct resize_plan *pl)
{
    const struct resize_params *p = c->params;
    const struct tensor *x = c->in[0];
    int rank = x->rank;
    const struct tensor *scales, *sizes = NULL;
    if (c->version < 11) {
        scales = c->n_in > 1 ? c->in[1] : NULL;
    } else {
        scales = c->n_in > 2 ? c->in[2] : NULL;
        sizes = c->n_in > 3 ? c->in[3] : NULL;
    }
    /* An empty tensor stands for an omitted input (Resize-11 had to pass one). */
    if (scales && tensor_numel(scales) == 0)
        scales = NULL;
    if (sizes && tensor_numel(sizes) == 0)
        sizes = NULL;
    if (!scales == !sizes)
        return op_error(c, "exactly one of scales and sizes must be given");
    int64_t axes[TENSOR_MAX_RANK];
    int n_axes = p->n_axes;
    if (n_axes >= 0) {
        memcpy(axes, p->axes, sizeof axes);
        if (shape_normalize_axes(c, axes, n_axes, rank))
            return -1;
    } else {
        n_axes = rank;
        for (int i = 0; i < rank; i++)
            axes[i] = i;
    }
    for (int i = 0; i < rank; i++) {
        pl->out[i] = x->dims[i];
        pl->scale[i] = 1.0;
        pl->roi[i] = 0;
        pl->roi[rank + i] = 1;
    }
    const struct tensor *roi = c->version >= 11 && c->n_in > 1 ? c->in[1] : NULL;
    if (p->coord == RESIZE_COORD_TF_CROP_AND_RESIZE && roi && tensor_numel(roi) > 0) {
        if (roi->dtype != ONNX_DTYPE_FLOAT && roi->dtype != ONNX_DTYPE_DOUBLE && roi->dtype != ONNX_DTYPE_FLOAT16)
            return op_error(c, "roi must be float, got %s", onnx_dtype_name(roi->dtype));
        if (tensor_numel(roi) != 2 * n_axes)
            return op_error(c, "roi has %lld values; expected %d (start and end per resized axis)",
                            (long long)tensor_numel(roi), 2 * n_axes);
        for (int i = 0; i < n_axes; i++) {
            pl->roi[axes[i]] = tensor_get_double(roi, i);
            pl->roi[rank + axes[i]] = tensor_get_double(roi, n_axes + i);
        }
    }
    const struct tensor *given = scales ? scales : sizes;
    if (given->rank != 1 || given->dims[0] != n_axes)
        return op_error(c, "%s has %lld values; expected %d (one per %s)",
                        scales ? "scales" : "sizes", (long long)tensor_numel(given), n_axes,
                        p->n_axes >= 0 ? "entry of axes" : "input axis");
    if (scales) {
        if (scales->dtype != ONNX_DTYPE_FLOAT && scales->dtype != ONNX_DTYPE_DOUBLE)
            return op_error(c, "scales must be float, got %s", onnx_dtype_name(scales->dtype));
        for (int i = 0; i < n_axes; i++) {
            int a = (int)axes[i];
            double s = tensor_get_double(scales, i);
            if (!(s > 0) || !isfinite(s))
                return op_error(c, "scales[%d] is %g; expected > 0", i, s);
            pl->scale[a] = s;
            pl->out[a] = (int64_t)floor(s * (double)x->dims[a]);
        }
    } else {
        if (sizes->dtype != ONNX_DTYPE_INT64)
            return op_error(c, "sizes must be int64, got %s", onnx_dtype_name(sizes->dtype));
        for (int i = 0; i < n_axes; i++) {
            int a = (int)axes[i];
            int64_t n = tensor_get_int(sizes, i);
            if (n < 0)
                return op_error(c, "sizes[%d] is %lld; expected >= 0", i, (long long)n);
            if (x->dims[a] == 0 && n > 0)
                return op_error(c, "cannot resize empty axis %d to %lld", a, (long long)n);
            pl->out[a] = n;
            pl->scale[a] = x->dims[a] ? (double)n / (double)x->dims[a] : 1.0;
        }
        if (p->policy) {
            /* One scale for the resized axes: the smallest (not_larger) or
             * largest (not_smaller) ratio, lengths rounded half up. */
            double scale = pl->scale[axes[0]];
            for (int i = 1; i < n_axes; i++) {
                double s = pl->scale[axes[i]];
                scale = p->policy == 1 ? (s < scale ? s : scale) : (s > scale ? s : scale);
            }
            for (int i = 0; i < n_axes; i++) {
                int a = (int)axes[i];
                pl->scale[a] = scale;
                pl->out[a] = (int64_t)(scale * (double)x->dims[a] + 0.5);
            }
        }
    }
    return 0;
}

static int resize_infer(struct op_call *c)
{
    struct resize_plan pl;
    if (resize_make_plan(c, &pl))
        return -1;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, pl.out, sizeof(int64_t) * (size_t)x->rank);
    return 0;
}

/* Source coordinate of output index o along an axis (the ONNX reference's
 * formulas; out_f is scale * in, the unrounded output length). */
static double resize_source(int coord, int64_t o, double scale, int64_t in, int64_t out)
{
    double y = (double)o, out_f = scale * (double)in;
    switch (coord) {
    case RESIZE_COORD_ALIGN_CORNERS:
        return out_f == 1 ? 0 : y * (double)(in - 1) / (out_f - 1);
    case RESIZE_COORD_ASYMMETRIC:
        return y / scale;
    case RESIZE_COORD_PYTORCH_HALF_PIXEL:
        return out_f == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    case RESIZE_COORD_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / out_f, center = (double)in / 2;
        return center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
    }
    default:
        return (y + 0.5) / scale - 0.5;
    }
}

void resize_taps(const struct resize_params *p, double scale, int64_t in, int64_t out,
                        struct resize_tap *taps)
{
    for (int64_t o = 0; o < out; o++) {
        double x = resize_source(p->coord, o, scale, in, out);
        double fl = floor(x), ratio = x - fl;
        int64_t i0 = (int64_t)fl, i1 = i0 + 1;
        double w = 0;
        if (p->linear) {
            w = ratio;
        } else {
            int up;
            switch (p->nearest) {
            case RESIZE_NEAREST_ROUND_PREFER_CEIL: up = ratio >= 0.5; break;
            case RESIZE_NEAREST_FLOOR: up = 0; break;
            case RESIZE_NEAREST_CEIL: up = ratio > 0; break;
            case RESIZE_NEAREST_SIMPLE: up = scale < 1 && ratio > 0; break;
            default: up = ratio > 0.5; break;
            }
            i0 = i1 = up ? i1 : i0;
        }
        taps[o].i0 = i0 < 0 ? 0 : i0 > in - 1 ? in - 1 : i0;
        taps[o].i1 = i1 < 0 ? 0 : i1 > in - 1 ? in - 1 : i1;
        taps[o].w = w;
    }
}

/* The taps of output row `row` (all axes but the last) into rt[0..last-1];
 * returns the row's input offset with every axis at its first tap. */
static inline int64_t resize_row_taps(int64_t row, int last, const int64_t *ydims,
                                      const struct resize_tap *taps, const int64_t *offs,
                                      const int64_t *xs, const struct resize_tap **rt)
{
    int64_t rem = row, base = 0;
    for (int a = last - 1; a >= 0; a--) {
        int64_t q = rem / ydims[a];
        rt[a] = taps + offs[a] + (rem - q * ydims[a]);
        base += rt[a]->i0 * xs[a];
        rem = q;
    }
    return base;
}

/* Weight of one corner of the N-linear interpolation over the k active
 * axes (bit j set: axis active[j] takes its second tap), and its input
 * offset moved from *off onto those second taps. */
static inline double resize_corner(int corner, int k, const int *active,
                                   const struct resize_tap *const *rt, const int64_t *xs,
                                   int64_t *off)
{
    double weight = 1;
    for (int j = 0; j < k; j++) {
        const struct resize_tap *t = rt[active[j]];
        if (corner >> j & 1) {
            weight *= t->w;
            *off += (t->i1 - t->i0) * xs[active[j]];
        } else {
            weight *= 1 - t->w;
        }
    }
    return weight;
}

static int resize_cpu(struct op_call *c)
{
    const struct resize_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int rank = x->rank;
    int64_t total = tensor_numel(y);
    size_t esize = onnx_dtype_size(x->dtype);
    if (total == 0)
        return 0;
    if ((p->linear || p->cubic) && x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "%s mode supports float and double, got %s", p->cubic ? "cubic" : "linear",
                        onnx_dtype_name(x->dtype));
    if (rank == 0) {
        memcpy(y->data, x->data, esize);
        return 0;
    }
    struct resize_plan pl;
    if (resize_make_plan(c, &pl))
        return -1;
    if (p->general)
        return resize_general_forward(c, p, pl.scale, pl.roi, x, y);
    int64_t offs[TENSOR_MAX_RANK + 1];
    offs[0] = 0;
    for (int a = 0; a < rank; a++)
        offs[a + 1] = offs[a] + y->dims[a];
    struct resize_tap *taps = malloc(sizeof *taps * (size_t)offs[rank]);
    if (!taps)
        return op_error(c, "out of memory for %lld resize taps", (long long)offs[rank]);
    /* Axes along which some output blends two sources: the corners of the
     * N-linear interpolation run over these only. */
    int active[TENSOR_MAX_RANK], k = 0;
    for (int a = 0; a < rank; a++) {
        resize_taps(p, pl.scale[a], x->dims[a], y->dims[a], taps + offs[a]);
        int blends = 0;
        for (int64_t o = 0; o < y->dims[a]; o++)
            blends |= taps[offs[a] + o].w != 0;
        if (blends)
            active[k++] = a;
    }
    int64_t xs[TENSOR_MAX_RANK];
    shape_strides(x, xs);
    int last = rank - 1;
    int64_t w = y->dims[last], rows = total / w;
    const struct resize_tap *lt = taps + offs[last];
    const char *src = x->data;
    char *dst = y->data;
    int par = (double)total * (double)esize > SHAPE_PARALLEL_BYTES / 4;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t row = 0; row < rows; row++) {
        const struct resize_tap *rt[TENSOR_MAX_RANK];
        int64_t base = resize_row_taps(row, last, y->dims, taps, offs, xs, rt);
        char *dp = dst + (size_t)(row * w) * esize;
        if (k == 0) {
            for (int64_t o = 0; o < w; o++)
                memcpy(dp + (size_t)o * esize, src + (size_t)(base + lt[o].i0) * esize, esize);
            continue;
        }
        /* base holds every axis at i0; a corner moves the active axes it
         * takes the second tap of to i1. */
        for (int64_t o = 0; o < w; o++) {
            rt[last] = lt + o;
            double sum = 0;
            for (int corner = 0; corner < (1 << k); corner++) {
                int64_t off = base + lt[o].i0;
                double weight = resize_corner(corner, k, active, rt, xs, &off);
                if (weight == 0)
                    continue;
                sum += weight * (x->dtype == ONNX_DTYPE_FLOAT ? ((const float *)src)[off]
                                                              : ((const double *)src)[off]);
            }
            if (x->dtype == ONNX_DTYPE_FLOAT)
                ((float *)dp)[o] = (float)sum;
            else
                ((double *)dp)[o] = sum;
        }
    }
    free(taps);
    return 0;
}

static struct op_cost resize_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct resize_params *p = c->params;
    /* Linear: a weighted sum over 2^k corners; 4 corners (2-D) at ~2 flops each. */
    cost.flops = (double)tensor_numel(c->out[0]) * (p && p->cubic ? 32 : p && p->linear ? 8 : 0);
    return cost;
}

/* dx = the transpose of the interpolation (ResizeGrad): every dy element
 * goes back to the source elements it was read from, with the same
 * weights. The exact double scales of the forward plan travel as a double
 * constant, so the taps are recomputed bit for bit. Reads roi, scales and
 * sizes (to make the plan), hence grad_saves_in. */
static int resize_grad(struct grad_ctx *g)
{
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    const struct resize_params *p = g->fwd->params;
    const struct tensor *x = g->fwd->in[0];
    struct resize_plan pl;
    if (resize_make_plan(g->fwd, &pl))
        return shape_grad_fwd_error(g);
    int rank = x->rank;
    struct tensor scales = { .dtype = ONNX_DTYPE_DOUBLE, .rank = 1, .dims = { rank }, .data = pl.scale };
    struct tensor roi = { .dtype = ONNX_DTYPE_DOUBLE, .rank = 1, .dims = { 2 * rank }, .data = pl.roi };
    int64_t dims[TENSOR_MAX_RANK];
    for (int a = 0; a < rank; a++)
        dims[a] = x->dims[a];
    struct onnx_attr attrs[9] = {
        shape_attr_ints("shape", rank, dims), shape_attr_int("linear", p->linear),
        shape_attr_int("coord", p->coord), shape_attr_int("nearest", p->nearest),
        shape_attr_int("cubic", p->cubic), shape_attr_int("antialias", p->antialias),
        shape_attr_int("exclude_outside", p->exclude_outside),
        { .name = "cubic_coeff_a", .type = ONNX_ATTR_FLOAT, .f = (float)p->cubic_a },
        shape_attr_int("general", p->general),
    };
    int in[3] = { g->dy[0], g->constant(g, &scales), p->general ? g->constant(g, &roi) : -1 }, dx;
    if (in[1] < 0 || (p->general && in[2] < 0) ||
        g->emit(g, "ResizeGrad", attrs, 9, p->general ? 3 : 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_resize = {
    .domain = "", .name = "Resize",
    .since = { 10, 11, 13, 18, 19 },
    .min_in = 1, .max_in = 4, .min_out = 1, .max_out = 1,
    .parse = resize_parse,
    .infer = resize_infer,
    .cost = resize_cost,
    .kernel = { [BACKEND_CPU] = resize_cpu },
    .host_inputs = (1u << 1) | (1u << 2) | (1u << 3),
    .grad = resize_grad,
    .grad_saves_in = (1u << 1) | (1u << 2) | (1u << 3),
};

/* ---- ResizeGrad (domain dtrexec) -------------------------------------------
 * Inputs dy (the forward output's gradient) and the forward plan's scales
 * (double, one per axis), and for the separable path (attribute general,
 * with the mode's attributes) the plan's roi (double, starts then ends);
 * y = zeros of `shape` (the forward input's). The separable path is
 * resize_general_backward's; the rest of this comment is the 2-tap one. Each
 * dy element is added to the 2^k corners it interpolated, with their
 * weights. Leading axes the forward did not resize (N and C of an image)
 * map one to one, so slabs over them have disjoint targets and run in
 * parallel; inside a slab the scatter walks dy in order: deterministic. */

static int resize_grad_parse(const struct onnx_node *node, int version, void **params,
                             char *err, size_t err_size)
{
    (void)version;
    struct resize_grad_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    if (shape_parse_target(node, &p->target, err, err_size)) {
        free(p);
        return -1;
    }
    p->mode.n_axes = -1;
    p->mode.linear = onnx_node_attr_int(node, "linear", 0) != 0;
    p->mode.coord = (int)onnx_node_attr_int(node, "coord", RESIZE_COORD_HALF_PIXEL);
    p->mode.nearest = (int)onnx_node_attr_int(node, "nearest", RESIZE_NEAREST_ROUND_PREFER_FLOOR);
    p->mode.cubic = onnx_node_attr_int(node, "cubic", 0) != 0;
    p->mode.antialias = onnx_node_attr_int(node, "antialias", 0) != 0;
    p->mode.exclude_outside = onnx_node_attr_int(node, "exclude_outside", 0) != 0;
    p->mode.cubic_a = onnx_node_attr_float(node, "cubic_coeff_a", -0.75f);
    p->mode.general = onnx_node_attr_int(node, "general", 0) != 0;
    if (p->mode.coord < 0 || p->mode.coord > RESIZE_COORD_TF_CROP_AND_RESIZE || p->mode.nearest < 0 ||
        p->mode.nearest > RESIZE_NEAREST_SIMPLE) {
        free(p);
        return shape_parse_error(err, err_size, node, "coord must be 0..5 and nearest 0..4");
    }
    *params = p;
    return 0;
}

static int resize_grad_infer(struct op_call *c)
{
    const struct resize_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *scales = c->in[1];
    if (dy->rank != p->target.rank)
        return op_error(c, "dy has rank %d but shape has %d", dy->rank, p->target.rank);
    if (scales->dtype != ONNX_DTYPE_DOUBLE || scales->rank != 1 || scales->dims[0] != dy->rank)
        return op_error(c, "scales must be double[%d]", dy->rank);
    if (p->mode.general && (c->n_in < 3 || !c->in[2] || c->in[2]->dtype != ONNX_DTYPE_DOUBLE ||
                            tensor_numel(c->in[2]) != 2 * dy->rank))
        return op_error(c, "the separable path needs roi as double[%d]", 2 * dy->rank);
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    for (int a = 0; a < dy->rank; a++)
        if (p->target.dims[a] == 0 && dy->dims[a] > 0)
            return op_error(c, "axis %d: %lld gradients for an empty input axis", a,
                            (long long)dy->dims[a]);
    struct tensor *y = c->out[0];
    *y = p->target;
    y->dtype = dy->dtype;
    y->data = NULL;
    return 0;
}

static int resize_grad_cpu(struct op_call *c)
{
    const struct resize_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *scales = c->in[1];
    struct tensor *x = c->out[0];
    int rank = dy->rank, dbl = dy->dtype == ONNX_DTYPE_DOUBLE;
    memset(x->data, 0, tensor_size_bytes(x));
    int64_t total = tensor_numel(dy);
    if (total == 0)
        return 0;
    if (rank == 0) {
        memcpy(x->data, dy->data, dbl ? 8 : 4);
        return 0;
    }
    if (p->mode.general)
        return resize_general_backward(c, &p->mode, scales->data, c->in[2]->data, dy, x);
    int64_t offs[TENSOR_MAX_RANK + 1];
    offs[0] = 0;
    for (int a = 0; a < rank; a++)
        offs[a + 1] = offs[a] + dy->dims[a];
    struct resize_tap *taps = malloc(sizeof *taps * (size_t)offs[rank]);
    if (!taps)
        return op_error(c, "out of memory for %lld resize taps", (long long)offs[rank]);
    int active[TENSOR_MAX_RANK], k = 0, lead = 0, leading = 1;
    for (int a = 0; a < rank; a++) {
        const double *sc = scales->data;
        resize_taps(&p->mode, sc[a], x->dims[a], dy->dims[a], taps + offs[a]);
        int blends = 0, identity = dy->dims[a] == x->dims[a];
        for (int64_t o = 0; o < dy->dims[a]; o++) {
            blends |= taps[offs[a] + o].w != 0;
            identity &= taps[offs[a] + o].i0 == o && taps[offs[a] + o].w == 0;
        }
        if (blends)
            active[k++] = a;
        leading &= identity;
        lead += leading;
    }
    int last = rank - 1;
    if (lead > last)
        lead = last;
    int64_t xs[TENSOR_MAX_RANK];
    shape_strides(x, xs);
    int64_t w = dy->dims[last], rows = total / w;
    int64_t slabs = shape_prod(dy->dims, 0, lead), per_slab = slabs ? rows / slabs : 0;
    const struct resize_tap *lt = taps + offs[last];
    int par = total > 16384 && slabs > 1;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t slab = 0; slab < slabs; slab++) {
        for (int64_t row = slab * per_slab; row < (slab + 1) * per_slab; row++) {
            const struct resize_tap *rt[TENSOR_MAX_RANK];
            int64_t base = resize_row_taps(row, last, dy->dims, taps, offs, xs, rt);
            for (int64_t o = 0; o < w; o++) {
                rt[last] = lt + o;
                double g = dbl ? ((const double *)dy->data)[row * w + o]
                               : ((const float *)dy->data)[row * w + o];
                for (int corner = 0; corner < (1 << k); corner++) {
                    int64_t off = base + lt[o].i0;
                    double weight = resize_corner(corner, k, active, rt, xs, &off);
                    if (weight == 0)
                        continue;
                    if (dbl)
                        ((double *)x->data)[off] += weight * g;
                    else
                        ((float *)x->data)[off] = (float)(((float *)x->data)[off] + weight * g);
                }
            }
        }
    }
    free(taps);
    return 0;
}

static struct op_cost resize_grad_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct resize_grad_params *p = c->params;
    cost.flops = (double)tensor_numel(c->in[0]) * (p && p->mode.linear ? 8 : 1);
    return cost;
}

const struct op_def op_resize_grad = {
    .domain = "dtrexec", .name = "ResizeGrad",
    .since = { 1 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = resize_grad_parse,
    .infer = resize_grad_infer,
    .cost = resize_grad_cost,
    .kernel = { [BACKEND_CPU] = resize_grad_cpu },
    .host_inputs = (1u << 1) | (1u << 2),
};
