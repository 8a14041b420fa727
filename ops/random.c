/* ops/random.c — Bernoulli (opset 15, 22) and RandomUniformLike (1, 22).
 *
 * Bernoulli: y[i] = 1 where draw u[i] < x[i] (the probability, float,
 * double, float16 or bfloat16 in [0, 1]), else 0, in `dtype` (any numeric
 * type or bool; default x's type). RandomUniformLike: y[i] = low + (high -
 * low) u[i] in [low, high), shaped like x (any type), in `dtype` (float,
 * double, float16 or bfloat16; default x's type, which must then be one).
 *
 * The draws are Dropout's counter-based generator (ew_rand_uniform in
 * ops/elementwise-impl.h): u[i] is a pure function of a key and i. With a
 * `seed` attribute the key is the seed's alone, so the op gives the same
 * tensor at every run and call; without one it is the call's env->seed
 * mixed with a hash of the node's name, as Dropout's. Either way a DTR
 * recomputation replays the same values bit for bit. The ONNX node tests
 * (test_bernoulli*) expect numpy's generator and cannot match; statistics,
 * ranges and determinism are checked by tests/rare_ops_check.py.
 *
 * Neither has a gradient (a draw, and a tensor that depends only on x's
 * shape) nor a CUDA kernel of their own: on --device
 * cuda they run on host copies (op_host_bridge). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/train-params.h"
#include "ops/shape-impl.h"

static int random_float_type(int dt)
{
    return dt == ONNX_DTYPE_FLOAT || dt == ONNX_DTYPE_DOUBLE || dt == ONNX_DTYPE_FLOAT16 ||
           dt == ONNX_DTYPE_BFLOAT16;
}

static int bernoulli_out_type(int dt)
{
    switch (dt) {
    case ONNX_DTYPE_UINT8: case ONNX_DTYPE_UINT16: case ONNX_DTYPE_UINT32: case ONNX_DTYPE_UINT64:
    case ONNX_DTYPE_INT8: case ONNX_DTYPE_INT16: case ONNX_DTYPE_INT32: case ONNX_DTYPE_INT64:
    case ONNX_DTYPE_BOOL:
        return 1;
    default:
        return random_float_type(dt);
    }
}

static int random_parse(const struct onnx_node *node, int uniform, void **params, char *err, size_t err_size)
{
    struct random_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->high = 1;
    static const char *const floats[] = { "seed", "low", "high" };
    for (int k = 0; k < (uniform ? 3 : 1); k++) {
        const struct onnx_attr *a = onnx_node_attr(node, floats[k]);
        if (!a)
            continue;
        if (a->type != ONNX_ATTR_FLOAT || !isfinite(a->f)) {
            free(p);
            return shape_parse_error(err, err_size, node, "attribute %s must be a finite float", floats[k]);
        }
        if (k == 0) {
            p->has_seed = 1;
            p->seed = a->f;
        } else if (k == 1) {
            p->low = a->f;
        } else {
            p->high = a->f;
        }
    }
    if (uniform && !(p->low <= p->high)) {
        double low = p->low, high = p->high;
        free(p);
        return shape_parse_error(err, err_size, node, "low %g is above high %g", low, high);
    }
    const struct onnx_attr *d = onnx_node_attr(node, "dtype");
    if (d) {
        int ok = d->type == ONNX_ATTR_INT && (uniform ? random_float_type((int)d->i) : bernoulli_out_type((int)d->i));
        if (!ok) {
            int64_t v = d->type == ONNX_ATTR_INT ? d->i : -1;
            free(p);
            return shape_parse_error(err, err_size, node, "dtype %lld is not %s", (long long)v,
                                     uniform ? "float, double, float16 or bfloat16" : "a numeric type or bool");
        }
        p->dtype = (int)d->i;
    }
    *params = p;
    return 0;
}

static int bernoulli_parse(const struct onnx_node *n, int v, void **p, char *e, size_t s)
{
    (void)v;
    return random_parse(n, 0, p, e, s);
}

static int uniform_like_parse(const struct onnx_node *n, int v, void **p, char *e, size_t s)
{
    (void)v;
    return random_parse(n, 1, p, e, s);
}

static int random_infer(struct op_call *c)
{
    const struct random_params *p = c->params;
    const struct tensor *x = c->in[0];
    int uniform = !strcmp(c->def->name, "RandomUniformLike");
    if (!uniform && !random_float_type(x->dtype))
        return op_error(c, "the probabilities must be float, double, float16 or bfloat16, not %s",
                        onnx_dtype_name(x->dtype));
    int dt = p->dtype ? p->dtype : x->dtype;
    if (uniform && !random_float_type(dt))
        return op_error(c, "input is %s and no dtype is given; the output must be float, double, float16 or "
                        "bfloat16", onnx_dtype_name(x->dtype));
    struct tensor *y = c->out[0];
    y->dtype = dt;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

/* The key of a call: the seed attribute alone, or env->seed with the node's
 * name (FNV-1a), as Dropout's. */
static uint64_t random_key(const struct op_call *c)
{
    const struct random_params *p = c->params;
    if (p->has_seed) {
        double seed = p->seed;
        uint64_t bits;
        memcpy(&bits, &seed, sizeof bits);
        return ew_rand_mix(bits ^ 0x5EEDull);
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = c->node_name ? c->node_name : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return ew_rand_mix(ew_rand_mix(c->env ? c->env->seed : 0) ^ h);
}

static double load_prob(const struct tensor *x, int64_t i)
{
    switch (x->dtype) {
    case ONNX_DTYPE_FLOAT16: return ew_f16_to_f32(((const uint16_t *)x->data)[i]);
    case ONNX_DTYPE_BFLOAT16: return ew_bf16_to_f32(((const uint16_t *)x->data)[i]);
    default: return tensor_get_double(x, i);
    }
}

/* Writes v (0 or 1 for Bernoulli) as element i of y. */
static void store_value(struct tensor *y, int64_t i, double v)
{
    switch (y->dtype) {
    case ONNX_DTYPE_FLOAT: ((float *)y->data)[i] = (float)v; break;
    case ONNX_DTYPE_DOUBLE: ((double *)y->data)[i] = v; break;
    case ONNX_DTYPE_FLOAT16: ((uint16_t *)y->data)[i] = ew_f64_to_f16(v); break;
    case ONNX_DTYPE_BFLOAT16: ((uint16_t *)y->data)[i] = ew_f64_to_bf16(v); break;
    case ONNX_DTYPE_INT8: case ONNX_DTYPE_UINT8: case ONNX_DTYPE_BOOL: ((uint8_t *)y->data)[i] = (uint8_t)v; break;
    case ONNX_DTYPE_INT16: case ONNX_DTYPE_UINT16: ((uint16_t *)y->data)[i] = (uint16_t)v; break;
    case ONNX_DTYPE_INT32: case ONNX_DTYPE_UINT32: ((uint32_t *)y->data)[i] = (uint32_t)v; break;
    default: ((uint64_t *)y->data)[i] = (uint64_t)v; break;   /* int64, uint64 */
    }
}

static int bernoulli_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int64_t n = tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        double prob = load_prob(x, i);
        if (!(prob >= 0 && prob <= 1))
            return op_error(c, "probability %g at index %lld is outside [0, 1]", prob, (long long)i);
    }
    uint64_t key = random_key(c);
    for (int64_t i = 0; i < n; i++)
        store_value(y, i, ew_rand_uniform(key, i) < load_prob(x, i) ? 1 : 0);
    return 0;
}

/* The largest float16/bfloat16 below the one with bits h (sign-magnitude). */
static uint16_t half_below(uint16_t h)
{
    if (h == 0 || h == 0x8000)
        return 0x8001;
    return h & 0x8000 ? (uint16_t)(h + 1) : (uint16_t)(h - 1);
}

static int uniform_like_cpu(struct op_call *c)
{
    const struct random_params *p = c->params;
    struct tensor *y = c->out[0];
    int64_t n = tensor_numel(y);
    uint64_t key = random_key(c);
    double low = p->low, high = p->high;
    /* Rounding to the output type can reach `high`: such a value becomes
     * the type's largest value below it, so the range stays [low, high). */
    for (int64_t i = 0; i < n; i++) {
        double v = low + (high - low) * ew_rand_uniform(key, i);
        switch (y->dtype) {
        case ONNX_DTYPE_FLOAT: {
            float f = (float)v;
            if (f >= (float)high && high > low)
                f = nextafterf((float)high, -INFINITY);
            ((float *)y->data)[i] = f;
            break;
        }
        case ONNX_DTYPE_FLOAT16: case ONNX_DTYPE_BFLOAT16: {
            int bf = y->dtype == ONNX_DTYPE_BFLOAT16;
            uint16_t h = bf ? ew_f64_to_bf16(v) : ew_f64_to_f16(v);
            uint16_t top = bf ? ew_f64_to_bf16(high) : ew_f64_to_f16(high);
            double back = bf ? ew_bf16_to_f32(h) : ew_f16_to_f32(h);
            double hi = bf ? ew_bf16_to_f32(top) : ew_f16_to_f32(top);
            if (back >= hi && high > low)
                h = half_below(top);
            ((uint16_t *)y->data)[i] = h;
            break;
        }
        default:
            ((double *)y->data)[i] = v >= high && high > low ? nextafter(high, -INFINITY) : v;
            break;
        }
    }
    return 0;
}

static struct op_cost random_cost(const struct op_call *c)
{
    double n = (double)tensor_numel(c->out[0]);
    return (struct op_cost){ .flops = 12 * n,
                             .bytes = (double)tensor_size_bytes(c->in[0]) + (double)tensor_size_bytes(c->out[0]) };
}

const struct op_def op_bernoulli = {
    .domain = "", .name = "Bernoulli", .since = { 15, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = bernoulli_parse, .params_free = free, .infer = random_infer, .cost = random_cost,
    .kernel = { [BACKEND_CPU] = bernoulli_cpu, [BACKEND_CUDA] = op_host_bridge },
};

const struct op_def op_random_uniform_like = {
    .domain = "", .name = "RandomUniformLike", .since = { 1, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = uniform_like_parse, .params_free = free, .infer = random_infer, .cost = random_cost,
    .kernel = { [BACKEND_CPU] = uniform_like_cpu, [BACKEND_CUDA] = op_host_bridge },
};
