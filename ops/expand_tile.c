/* ops/expand_tile.c — Expand (opset 8, 13) and Tile (6, 13).
 *
 * Both are strided copies with zero strides: Expand broadcasts the input
 * (numpy rules, in both directions) to the `shape` input; Tile views its
 * output as (repeat, dim) axis pairs, the repeat axes having stride 0, so
 * every copy still moves whole contiguous rows. */
#include "ops/shape-impl.h"

/* ---- Expand ----------------------------------------------------------------- */

static int expand_shape(struct op_call *c, struct tensor *out)
{
    const struct tensor *x = c->in[0];
    struct tensor target = { .dtype = x->dtype };
    int n = shape_read_ints(c, c->in[1], "shape", target.dims, TENSOR_MAX_RANK);
    if (n < 0)
        return -1;
    target.rank = n;
    for (int i = 0; i < n; i++)
        if (target.dims[i] < 0)
            return op_error(c, "shape[%d] is %lld; expected >= 0", i, (long long)target.dims[i]);
    const struct tensor *ts[2] = { x, &target };
    char msg[256];
    if (broadcast_shape(ts, 2, out, msg, sizeof msg))
        return op_error(c, "cannot expand: %s", msg);
    out->dtype = x->dtype;
    return 0;
}

static int expand_infer(struct op_call *c)
{
    struct tensor shape;
    if (expand_shape(c, &shape))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = shape.dtype;
    y->rank = shape.rank;
    memcpy(y->dims, shape.dims, sizeof y->dims);
    return 0;
}

static int expand_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int64_t st[TENSOR_MAX_RANK];
    broadcast_strides(x, y, st);
    shape_copy_strided(y->data, x->data, onnx_dtype_size(x->dtype), y->rank, y->dims, st);
    return 0;
}

/* dx = dy summed over the broadcast axes: the one shared reduction. */
static int expand_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    return grad_add_dx_broadcast(g, 0, g->dy[0]);
}

const struct op_def op_expand = {
    .domain = "", .name = "Expand",
    .since = { 8, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = expand_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = expand_cpu },
    .host_inputs = 1u << 1,
    .grad = expand_grad,
};

/* ---- Tile ----------------------------------------------------------------- */

static int tile_repeats(const struct op_call *c, int64_t *repeats)
{
    const struct tensor *x = c->in[0];
    int n = shape_read_ints(c, c->in[1], "repeats", repeats, TENSOR_MAX_RANK);
    if (n < 0)
        return -1;
    if (n != x->rank)
        return op_error(c, "repeats has %d values but the input has rank %d", n, x->rank);
    for (int i = 0; i < n; i++)
        if (repeats[i] < 0)
            return op_error(c, "repeats[%d] is %lld; expected >= 0", i, (long long)repeats[i]);
    return 0;
}

static int tile_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int64_t repeats[TENSOR_MAX_RANK];
    if (tile_repeats(c, repeats))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        if (__builtin_mul_overflow(x->dims[i], repeats[i], &y->dims[i]))
            return op_error(c, "dimension %d of %lld repeated %lld times overflows int64 (limit 2^62 bytes in all)",
                            i, (long long)x->dims[i], (long long)repeats[i]);
    return 0;
}

static int tile_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int64_t repeats[TENSOR_MAX_RANK];
    if (tile_repeats(c, repeats))
        return -1;
    int64_t xs[TENSOR_MAX_RANK], dims[SHAPE_COPY_MAX_RANK], st[SHAPE_COPY_MAX_RANK];
    shape_strides(x, xs);
    for (int i = 0; i < x->rank; i++) {
        dims[2 * i] = repeats[i];
        st[2 * i] = 0;
        dims[2 * i + 1] = x->dims[i];
        st[2 * i + 1] = xs[i];
    }
    shape_copy_strided(c->out[0]->data, x->data, onnx_dtype_size(x->dtype), 2 * x->rank, dims, st);
    return 0;
}

/* dx = dy summed over the tiles. dy seen as (repeat, dim) axis pairs (runs
 * of untiled axes merged) is reduced over the repeat axes by one ReduceSum;
 * when the pairs do not fit the rank limit, the tiled axes are reduced one
 * at a time through [before, repeat, after] views. The repeats follow from
 * the shapes, so nothing is saved. */
static int tile_grad(struct grad_ctx *g)
{
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    const struct tensor *x = g->fwd->in[0], *y = g->fwd->out[0];
    if (tensor_numel(x) == 0 || tensor_numel(y) == 0) {   /* also repeats of 0 */
        int z = shape_grad_zeros(g, x);
        return z < 0 ? -1 : g->add_dx(g, 0, z);
    }
    struct tensor pairs = { .dtype = y->dtype };
    int64_t axes[TENSOR_MAX_RANK];
    int n_axes = 0, fits = 1, merge = 0;
    for (int a = 0; a < x->rank && fits; a++) {
        int64_t r = y->dims[a] / x->dims[a];
        if (r == 1) {
            if (merge)
                pairs.dims[pairs.rank - 1] *= x->dims[a];
            else if ((fits = pairs.rank < TENSOR_MAX_RANK))
                pairs.dims[pairs.rank++] = x->dims[a];
            merge = 1;
            continue;
        }
        if ((fits = pairs.rank + 2 <= TENSOR_MAX_RANK)) {
            axes[n_axes++] = pairs.rank;
            pairs.dims[pairs.rank++] = r;
            pairs.dims[pairs.rank++] = x->dims[a];
        }
        merge = 0;
    }
    if (!n_axes && fits)
        return g->add_dx(g, 0, g->dy[0]);
    struct onnx_attr keep = shape_attr_int("keepdims", 0);
    int h = g->dy[0];
    if (fits) {
        int in[2];
        if (shape_grad_reshape(g, h, &pairs, &in[0]) ||
            (in[1] = grad_const_i64(g, n_axes, axes)) < 0 ||
            g->emit(g, "ReduceSum", &keep, 1, 2, in, 1, &h))
            return -1;
    } else {
        int64_t cur[TENSOR_MAX_RANK], one = 1;
        memcpy(cur, y->dims, sizeof cur);
        for (int a = 0; a < x->rank; a++) {
            int64_t r = cur[a] / x->dims[a];
            if (r == 1)
                continue;
            struct tensor view = { .dtype = y->dtype, .rank = 3,
                                   .dims = { shape_prod(cur, 0, a), r,
                                             x->dims[a] * shape_prod(cur, a + 1, x->rank) } };
            int in[2];
            if (shape_grad_reshape(g, h, &view, &in[0]) ||
                (in[1] = grad_const_i64(g, 1, &one)) < 0 ||
                g->emit(g, "ReduceSum", &keep, 1, 2, in, 1, &h))
                return -1;
            cur[a] = x->dims[a];
        }
    }
    int dx;
    if (shape_grad_reshape(g, h, x, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_tile = {
    .domain = "", .name = "Tile",
    .since = { 6, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = tile_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = tile_cpu },
    .host_inputs = 1u << 1,
    .grad = tile_grad,
};
