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

const struct op_def op_expand = {
    .domain = "", .name = "Expand",
    .since = { 8, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = expand_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = expand_cpu },
    .host_inputs = 1u << 1,
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
        y->dims[i] = x->dims[i] * repeats[i];
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

const struct op_def op_tile = {
    .domain = "", .name = "Tile",
    .since = { 6, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = tile_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = tile_cpu },
    .host_inputs = 1u << 1,
};
