/* ops/grid_sample.c — GridSample (opsets 16, 20, 22): samples X [N, C,
 * D1..Dr] at the normalised positions of grid [N, H1..Hr, r] into Y [N, C,
 * H1..Hr], r = 1..3 spatial axes (opset 16: r = 2 only), float and double;
 * modes linear / nearest / cubic (opset 16 names: bilinear, nearest,
 * bicubic), padding zeros / border / reflection, align_corners. The
 * arithmetic lives in ops/grid_sample-impl.h, shared with the CUDA kernels.
 * Version 22 only added types.
 *
 * Gradient: GridSampleGrad(dy, X, grid) -> (dX, dgrid): dX scatters dy
 * with each tap's weight (per channel plane, in point order: deterministic);
 * dgrid sums over channels dy times the derivative of the interpolation in
 * each coordinate (0 for nearest, and where border padding clamps). */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/grid_sample-impl.h"
#include "ops/misc-impl.h"
#include "ops/misc-params.h"

#define FLOATS_LIST "float, double"

static int gs_parse(const struct onnx_node *node, int version, void **params, char *err,
                    size_t err_size)
{
    const char *mode = onnx_node_attr_string(node, "mode", version < 20 ? "bilinear" : "linear");
    const char *pad = onnx_node_attr_string(node, "padding_mode", "zeros");
    struct grid_sample_params p = { .align = onnx_node_attr_int(node, "align_corners", 0) != 0 };
    /* the gradient kernel is emitted with opset 20's names */
    int old = version < 20 && strcmp(node->op_type, "GridSampleGrad");
    if (!strcmp(mode, old ? "bilinear" : "linear"))
        p.mode = GS_LINEAR;
    else if (!strcmp(mode, "nearest"))
        p.mode = GS_NEAREST;
    else if (!strcmp(mode, old ? "bicubic" : "cubic"))
        p.mode = GS_CUBIC;
    else
        return ew_parse_error(err, err_size, "mode '%s' is not one of %s", mode,
                              old ? "bilinear, nearest, bicubic" : "linear, nearest, cubic");
    if (!strcmp(pad, "zeros"))
        p.padding = GS_ZEROS;
    else if (!strcmp(pad, "border"))
        p.padding = GS_BORDER;
    else if (!strcmp(pad, "reflection"))
        p.padding = GS_REFLECTION;
    else
        return ew_parse_error(err, err_size,
                              "padding_mode '%s' is not one of zeros, border, reflection", pad);
    p.only_2d = version < 20 && strcmp(node->op_type, "GridSampleGrad");
    struct grid_sample_params *q = ew_params_new(sizeof *q, params, err, err_size);
    if (!q)
        return -1;
    *q = p;
    return 0;
}

int misc_grid_sample_geom(const struct op_call *c, struct gs_geom *g)
{
    const struct grid_sample_params *p = c->params;
    const int grad = c->n_in == 3;
    const struct tensor *x = c->in[grad], *grid = c->in[grad + 1];
    char a[128], b[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, FLOATS_LIST);
    if (grid->dtype != x->dtype)
        return op_error(c, "grid has dtype %s but X has %s; they must match",
                        onnx_dtype_name(grid->dtype), onnx_dtype_name(x->dtype));
    int r = x->rank - 2;
    if (r < 1 || r > GS_MAX_R || (p->only_2d && r != 2))
        return op_error(c, "X %s must have %s spatial axes", tensor_describe(x, a, sizeof a),
                        p->only_2d ? "2 (GridSample-16)" : "1 to 3");
    if (grid->rank != r + 2 || grid->dims[0] != x->dims[0] || grid->dims[r + 1] != r)
        return op_error(c, "grid %s must be [%lld, H1..H%d, %d] for X %s",
                        tensor_describe(grid, a, sizeof a), (long long)x->dims[0], r, r,
                        tensor_describe(x, b, sizeof b));
    memset(g, 0, sizeof *g);
    g->r = r;
    g->mode = p->mode;
    g->padding = p->padding;
    g->align = p->align;
    g->n = x->dims[0];
    g->c = x->dims[1];
    g->points = g->in_points = 1;
    for (int d = 0; d < r; d++) {
        g->dims[d] = x->dims[2 + d];
        g->in_points *= x->dims[2 + d];
        g->points *= grid->dims[1 + d];
    }
    return 0;
}

static int gs_infer(struct op_call *c)
{
    const int grad = c->n_in == 3;
    struct gs_geom g;
    if (misc_grid_sample_geom(c, &g))
        return -1;
    const struct tensor *x = c->in[grad], *grid = c->in[grad + 1];
    if (grad) {
        const struct tensor *dy = c->in[0];
        int ok = dy->dtype == x->dtype && dy->rank == x->rank && dy->dims[0] == g.n &&
                 dy->dims[1] == g.c;
        for (int d = 0; ok && d < g.r; d++)
            ok = dy->dims[2 + d] == grid->dims[1 + d];
        if (!ok) {
            char a[128];
            return op_error(c, "dy %s does not match GridSample's output",
                            tensor_describe(dy, a, sizeof a));
        }
        for (int k = 0; k < 2; k++)
            if (c->out[k]) {
                const struct tensor *like = k ? grid : x;
                c->out[k]->dtype = like->dtype;
                c->out[k]->rank = like->rank;
                memcpy(c->out[k]->dims, like->dims, sizeof like->dims);
            }
        return 0;
    }
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    y->dims[0] = g.n;
    y->dims[1] = g.c;
    for (int d = 0; d < g.r; d++)
        y->dims[2 + d] = grid->dims[1 + d];
    return 0;
}

#define GS_CPU_DEF(T)                                                                   \
    static void gs_forward_##T(const struct gs_geom *g, const T *x, const T *grid, T *y) \
    {                                                                                   \
        struct gs_point pt;                                                             \
        for (int64_t n = 0; n < g->n; n++)                                              \
            for (int64_t p = 0; p < g->points; p++) {                                   \
                gs_point_##T(g, grid + (n * g->points + p) * g->r, &pt);                \
                for (int64_t ch = 0; ch < g->c; ch++)                                   \
                    y[(n * g->c + ch) * g->points + p] =                                \
                        gs_sample_##T(g, &pt, x + (n * g->c + ch) * g->in_points);      \
            }                                                                           \
    }                                                                                   \
    static void gs_backward_##T(const struct gs_geom *g, const T *dy, const T *x,       \
                                const T *grid, T *dx, T *dgrid)                         \
    {                                                                                   \
        struct gs_point pt;                                                             \
        int k[GS_MAX_R];                                                                \
        if (dx) {                                                                       \
            for (int64_t pl = 0; pl < g->n * g->c; pl++) {                              \
                T *d = dx + pl * g->in_points;                                          \
                const int64_t n = pl / g->c;                                            \
                for (int64_t i = 0; i < g->in_points; i++)                              \
                    d[i] = 0;                                                           \
                for (int64_t p = 0; p < g->points; p++) {                               \
                    gs_point_##T(g, grid + (n * g->points + p) * g->r, &pt);            \
                    const double v = (double)dy[pl * g->points + p];                    \
                    for (int tap = 0, nt = gs_tap_count(g, &pt); tap < nt; tap++) {     \
                        int64_t off = gs_tap(g, &pt, tap, k);                           \
                        double w = v;                                                   \
                        for (int e = 0; e < g->r; e++)                                  \
                            w *= pt.w[e][k[e]];                                         \
                        if (off >= 0)                                                   \
                            d[off] = (T)((double)d[off] + w);                           \
                    }                                                                   \
                }                                                                       \
            }                                                                           \
        }                                                                               \
        if (dgrid) {                                                                    \
            for (int64_t n = 0; n < g->n; n++)                                          \
                for (int64_t p = 0; p < g->points; p++) {                               \
                    double tot[GS_MAX_R] = { 0 }, dg[GS_MAX_R];                         \
                    gs_point_##T(g, grid + (n * g->points + p) * g->r, &pt);            \
                    for (int64_t ch = 0; ch < g->c; ch++) {                             \
                        gs_dgrid_##T(g, &pt, x + (n * g->c + ch) * g->in_points, dg);   \
                        const double v = (double)dy[(n * g->c + ch) * g->points + p];   \
                        for (int d = 0; d < g->r; d++)                                  \
                            tot[d] += v * dg[d];                                        \
                    }                                                                   \
                    for (int d = 0; d < g->r; d++)                                      \
                        dgrid[(n * g->points + p) * g->r + g->r - 1 - d] = (T)tot[d];   \
                }                                                                       \
        }                                                                               \
    }
GS_CPU_DEF(float)
GS_CPU_DEF(double)

static int gs_cpu(struct op_call *c)
{
    struct gs_geom g;
    if (misc_grid_sample_geom(c, &g))
        return -1;
    const int grad = c->n_in == 3;
    const struct tensor *x = c->in[grad], *grid = c->in[grad + 1];
    void *o0 = c->out[0] ? c->out[0]->data : NULL;
    void *o1 = grad && c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    if (x->dtype == ONNX_DTYPE_FLOAT) {
        if (grad)
            gs_backward_float(&g, c->in[0]->data, x->data, grid->data, o0, o1);
        else
            gs_forward_float(&g, x->data, grid->data, o0);
    } else {
        if (grad)
            gs_backward_double(&g, c->in[0]->data, x->data, grid->data, o0, o1);
        else
            gs_forward_double(&g, x->data, grid->data, o0);
    }
    return 0;
}

static struct op_cost gs_cost(const struct op_call *c)
{
    const struct grid_sample_params *p = c->params;
    const struct tensor *x = c->in[c->n_in == 3];
    int taps = p->mode == GS_LINEAR ? 2 : p->mode == GS_CUBIC ? 4 : 1, t = 1;
    for (int d = 2; d < x->rank; d++)
        t *= taps;
    return ew_cost_scaled(c, 4.0 * t * (c->n_in == 3 ? 3 : 1));
}

static int gs_grad(struct grad_ctx *g)
{
    const struct grid_sample_params *p = g->fwd->params;
    if (g->dy[0] < 0 || (!g->need_dx[0] && !g->need_dx[1]))
        return 0;
    static const char *const modes[] = { [GS_LINEAR] = "linear", [GS_NEAREST] = "nearest",
                                         [GS_CUBIC] = "cubic" };
    static const char *const pads[] = { [GS_ZEROS] = "zeros", [GS_BORDER] = "border",
                                        [GS_REFLECTION] = "reflection" };
    struct onnx_attr a[3] = {
        { .name = "mode", .type = ONNX_ATTR_STRING, .s = (char *)modes[p->mode] },
        { .name = "padding_mode", .type = ONNX_ATTR_STRING, .s = (char *)pads[p->padding] },
        { .name = "align_corners", .type = ONNX_ATTR_INT, .i = p->align },
    };
    a[0].s_len = strlen(a[0].s);
    a[1].s_len = strlen(a[1].s);
    int in[3] = { g->dy[0], g->in[0], g->in[1] }, out[2];
    if (g->emit(g, "GridSampleGrad", a, 3, 3, in, 2, out))
        return -1;
    if (g->need_dx[0] && g->add_dx(g, 0, out[0]))
        return -1;
    if (g->need_dx[1] && g->add_dx(g, 1, out[1]))
        return -1;
    return 0;
}

const struct op_def op_grid_sample = {
    .domain = "", .name = "GridSample", .since = { 16, 20, 22 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gs_parse, .infer = gs_infer, .cost = gs_cost,
    .kernel = { [BACKEND_CPU] = gs_cpu },
    .grad = gs_grad, .grad_saves_in = 3u,
};

const struct op_def op_grid_sample_grad = {
    .domain = "dtrexec", .name = "GridSampleGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 2,
    .parse = gs_parse, .infer = gs_infer, .cost = gs_cost,
    .kernel = { [BACKEND_CPU] = gs_cpu },
};
