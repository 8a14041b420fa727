/* tests/test_cuda_elem.c — the CUDA kernels of the elementwise family
 * (ops/cuda/elem*.c) against the CPU kernels on the same random inputs:
 * broadcasting arithmetic over every numeric dtype up to rank 8, variadic
 * Sum/Max/Min, Pow with mixed dtypes, the unary ops and their gradients,
 * Clip in both forms, comparisons, Where, Cast between all 13 dtypes on
 * special values (bit-exact), the four reductions over many axis sets and
 * layouts (inner, outer, segmented, empty), ReduceProd, ReduceL1,
 * ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp and
 * ReduceExtGrad (case "reduce_ext"), ReduceSelectGrad, MaxMinGrad,
 * DivGrad, PowGrad, Dropout and DropoutGrad (the same mask bit for bit),
 * both losses and their gradients, the three optimizer steps, and the ops
 * of ops/activation.c, unary_math.c, mod.c and logical.c with their
 * gradient kernels over float, double, float16 and bfloat16 (Mod, Sign and
 * PRelu over the integers too, And/Or/Xor in both broadcasting forms),
 * and the quant family (case "quant": QuantizeLinear and DequantizeLinear
 * per tensor, per axis and blocked, DynamicQuantizeLinear), bit-exact.
 *
 * Every CUDA call runs twice and must give the same bits (DTR's
 * recomputation) and give back all its device scratch. Without a CUDA build
 * or a usable device the suite says why and passes. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/ops.h"
#include "testcuda.h"
#include "testops.h"


static const struct backend *dev;
static uint32_t rng = 777u;

/* ---- attributes -------------------------------------------------------------- */

static struct onnx_attr a_ints(const char *name, int n, int64_t *v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INTS, .ints = v, .n = n };
}

/* ---- device memory ------------------------------------------------------------- */


static struct tensor *clone(const struct tensor *t)
{
    return t ? testops_tensor(t->dtype, t->rank, t->dims, t->data) : NULL;
}

/* A device tensor holding a copy of host tensor t. */
static struct tensor *upload(const struct tensor *t)
{
    struct tensor *d = testops_alloc(sizeof *d);
    *d = *t;
    size_t bytes = tensor_size_bytes(t);
    d->data = dev->alloc(dev->ctx, bytes ? bytes : 1);
    ck_assert_ptr_nonnull(d->data);
    ck_assert_int_eq(dev->copy_to_device(dev->ctx, d->data, t->data, bytes), 0);
    return d;
}

/* A host copy of device tensor d. */
static struct tensor *download(const struct tensor *d)
{
    struct tensor *h = testops_tensor(d->dtype, d->rank, d->dims, NULL);
    ck_assert_int_eq(dev->copy_to_host(dev->ctx, h->data, d->data, tensor_size_bytes(d)), 0);
    return h;
}

/* ---- random tensors --------------------------------------------------------------- */

static double urand(void) { return (testops_frand(&rng) + 2.0) / 4.0; }   /* [0, 1) */

/* Elements uniform in [lo, hi) (integers: [lo, hi]); bool 0/1. */
static struct tensor *rnd(int dtype, int rank, const int64_t *dims, double lo, double hi)
{
    struct tensor *t = testops_tensor(dtype, rank, dims, NULL);
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v = lo + (hi - lo) * urand();
        double iv = floor(lo + (hi - lo + 1) * urand());
        if (iv > hi)
            iv = hi;
        switch (dtype) {
        case ONNX_DTYPE_FLOAT: ((float *)t->data)[i] = (float)v; break;
        case ONNX_DTYPE_DOUBLE: ((double *)t->data)[i] = v; break;
        case ONNX_DTYPE_FLOAT16: ((uint16_t *)t->data)[i] = ew_f32_to_f16((float)v); break;
        case ONNX_DTYPE_BFLOAT16: ((uint16_t *)t->data)[i] = ew_f32_to_bf16((float)v); break;
        case ONNX_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)iv; break;
        case ONNX_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)iv; break;
        case ONNX_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)iv; break;
        case ONNX_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)iv; break;
        case ONNX_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)iv; break;
        case ONNX_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)iv; break;
        case ONNX_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)iv; break;
        case ONNX_DTYPE_UINT64: ((uint64_t *)t->data)[i] = (uint64_t)iv; break;
        case ONNX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = urand() < 0.5; break;
        default: ck_abort_msg("rnd: dtype %d", dtype);
        }
    }
    return t;
}

/* A range that suits a dtype: signed around 0, unsigned from 0; small ints
 * go past their range in products (wrap). */
static struct tensor *rnd_for(int dtype, int rank, const int64_t *dims)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: case ONNX_DTYPE_DOUBLE: return rnd(dtype, rank, dims, -2, 2);
    case ONNX_DTYPE_INT8: return rnd(dtype, rank, dims, -100, 100);
    case ONNX_DTYPE_UINT8: case ONNX_DTYPE_UINT16: case ONNX_DTYPE_UINT32: case ONNX_DTYPE_UINT64:
        return rnd(dtype, rank, dims, 0, 250);
    default: return rnd(dtype, rank, dims, -1000, 1000);
    }
}

static struct tensor *scalar_f64(double v)
{
    return testops_tensor(ONNX_DTYPE_DOUBLE, 0, NULL, &v);
}

static struct tensor *i64s(int n, const int64_t *v)
{
    int64_t d[1] = { n };
    return testops_tensor(ONNX_DTYPE_INT64, 1, d, v);
}

/* ---- comparison ---------------------------------------------------------------------- */

static double elem_as_double(const struct tensor *t, int64_t i)
{
    switch (t->dtype) {
    case ONNX_DTYPE_FLOAT16: return ew_f16_to_f32(((const uint16_t *)t->data)[i]);
    case ONNX_DTYPE_BFLOAT16: return ew_bf16_to_f32(((const uint16_t *)t->data)[i]);
    default: return tensor_get_double(t, i);
    }
}

static int is_floating(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE ||
           dtype == ONNX_DTYPE_FLOAT16 || dtype == ONNX_DTYPE_BFLOAT16;
}

/* got (from the device) against want (CPU): integers and bool exactly,
 * floating values within atol + rtol |want| (NaN equal to NaN, infinities
 * exact). */
static void check_same(const char *what, const struct tensor *want, const struct tensor *got,
                       double rtol, double atol)
{
    char a[128], b[128];
    ck_assert_msg(want->dtype == got->dtype && tensor_same_shape(want, got),
                  "%s: CPU gives %s, CUDA %s", what, tensor_describe(want, a, sizeof a),
                  tensor_describe(got, b, sizeof b));
    int64_t n = tensor_numel(want);
    if (!is_floating(want->dtype)) {
        for (int64_t i = 0; i < n; i++) {
            int64_t w = tensor_get_int(want, i), g = tensor_get_int(got, i);
            ck_assert_msg(w == g, "%s: element %lld: CPU %lld, CUDA %lld", what, (long long)i,
                          (long long)w, (long long)g);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double w = elem_as_double(want, i), g = elem_as_double(got, i);
        if (isnan(w) || isinf(w)) {
            ck_assert_msg((isnan(w) && isnan(g)) || w == g, "%s: element %lld: CPU %.9g, CUDA %.9g",
                          what, (long long)i, w, g);
            continue;
        }
        ck_assert_msg(fabs(w - g) <= atol + rtol * fabs(w),
                      "%s: element %lld: CPU %.12g, CUDA %.12g (diff %.3g)", what, (long long)i, w,
                      g, fabs(w - g));
    }
}

/* ---- running one op on both backends ---------------------------------------------------- */

#define MAX_IO 36

struct run {
    const char *domain, *op;
    int opset;
    struct onnx_attr *attrs;
    int n_attrs;
    const struct tensor **in;          /* host tensors; NULL entries are omitted inputs */
    int n_in, n_out;
    double rtol, atol;
    int training;
    uint64_t seed;
    const char *node_name;
    const char *label;                 /* what the case is, for messages */
};

struct result {
    int rc;
    char err[512];
    struct tensor *out[MAX_IO];        /* host copies */
    struct tensor *mutated[MAX_IO];    /* host copies of inputs an op updates in place */
};

static const struct op_def *find_def(const struct run *r, int *version, void **params, char *err,
                                     size_t err_size)
{
    return testcuda_find_def(r->domain, r->op, r->opset, r->node_name, r->n_in, r->n_out, r->attrs, r->n_attrs,
                             r->label, version, params, err, err_size);
}

static void free_params(const struct op_def *def, void *params)
{
    if (params)
        def->params_free ? def->params_free(params) : free(params);
}

static void run_cpu(const struct run *r, struct result *res)
{
    int version;
    void *params;
    const struct op_def *def = find_def(r, &version, &params, res->err, sizeof res->err);
    const struct tensor *in[MAX_IO];
    struct tensor *out[MAX_IO];
    for (int i = 0; i < r->n_in; i++)
        in[i] = clone(r->in[i]);
    for (int k = 0; k < r->n_out; k++)
        out[k] = testops_alloc(sizeof *out[k]);
    struct op_env env = { .scratch_alloc = testops_scratch_alloc,
                          .scratch_free = testops_scratch_free, .backend = &backend_cpu,
                          .threads = 2, .seed = r->seed, .training = r->training,
                          .err = res->err, .err_size = sizeof res->err };
    struct op_call c = { .def = def, .version = version, .params = params,
                         .node_name = r->node_name ? r->node_name : "n0", .n_in = r->n_in,
                         .in = in, .n_out = r->n_out, .out = out, .env = &env };
    res->rc = def->infer(&c);
    if (!res->rc) {
        for (int k = 0; k < r->n_out; k++)
            out[k]->data = testops_alloc(tensor_size_bytes(out[k]));
        res->rc = def->kernel[BACKEND_CPU](&c);
    }
    for (int k = 0; k < r->n_out; k++)
        res->out[k] = out[k];
    for (int i = 0; i < r->n_in; i++)
        res->mutated[i] = (def->mutates >> i) & 1 ? (struct tensor *)in[i] : NULL;
    free_params(def, params);
}

static void run_gpu(const struct run *r, struct result *res)
{
    int version;
    void *params;
    const struct op_def *def = find_def(r, &version, &params, res->err, sizeof res->err);
    op_kernel_fn kernel = testcuda_kernel(r->domain, r->op);
    ck_assert_msg(kernel != NULL, "no CUDA kernel for %s", r->op);
    const struct tensor *in[MAX_IO];
    struct tensor *out[MAX_IO];
    /* host_inputs stay on the host, as the runtime hands them over */
    for (int i = 0; i < r->n_in; i++)
        in[i] = !r->in[i] ? NULL : (def->host_inputs >> i) & 1 ? clone(r->in[i]) : upload(r->in[i]);
    for (int k = 0; k < r->n_out; k++)
        out[k] = testops_alloc(sizeof *out[k]);
    struct op_env env = { .scratch_alloc = testcuda_scratch_alloc, .scratch_free = testcuda_scratch_free,
                          .backend = dev, .threads = 2, .seed = r->seed,
                          .training = r->training, .err = res->err, .err_size = sizeof res->err };
    struct op_call c = { .def = def, .version = version, .params = params,
                         .node_name = r->node_name ? r->node_name : "n0", .n_in = r->n_in,
                         .in = in, .n_out = r->n_out, .out = out, .env = &env };
    int live = testcuda_scratch_live;
    res->rc = def->infer(&c);
    if (!res->rc) {
        for (int k = 0; k < r->n_out; k++) {
            size_t bytes = tensor_size_bytes(out[k]);
            out[k]->data = dev->alloc(dev->ctx, bytes ? bytes : 1);
            ck_assert_ptr_nonnull(out[k]->data);
        }
        res->rc = kernel(&c);
        ck_assert_int_eq(dev->synchronize(dev->ctx), 0);
        for (int k = 0; k < r->n_out; k++) {
            res->out[k] = download(out[k]);
            dev->free(dev->ctx, out[k]->data);
        }
    }
    ck_assert_msg(testcuda_scratch_live == live, "%s: %d scratch blocks not given back",
                  r->label ? r->label : r->op, testcuda_scratch_live - live);
    for (int i = 0; i < r->n_in; i++) {
        res->mutated[i] = NULL;
        if (!in[i] || (def->host_inputs >> i) & 1)
            continue;
        if ((def->mutates >> i) & 1)
            res->mutated[i] = download(in[i]);
        dev->free(dev->ctx, in[i]->data);
    }
    free_params(def, params);
}

static int bits_equal(const struct tensor *a, const struct tensor *b)
{
    return tensor_same_shape(a, b) && !memcmp(a->data, b->data, tensor_size_bytes(a));
}

/* Runs r on both backends and compares; the CUDA run twice, bit-equal.
 * Returns 0 when both succeeded, 1 when both failed (messages checked
 * non-empty). */
static int compare(const struct run *r)
{
    static struct result cpu, gpu, again;
    const char *what = r->label ? r->label : r->op;
    memset(&cpu, 0, sizeof cpu);
    memset(&gpu, 0, sizeof gpu);
    memset(&again, 0, sizeof again);
    run_cpu(r, &cpu);
    run_gpu(r, &gpu);
    ck_assert_msg((cpu.rc == 0) == (gpu.rc == 0), "%s: CPU %s (%s) but CUDA %s (%s)", what,
                  cpu.rc ? "fails" : "succeeds", cpu.err, gpu.rc ? "fails" : "succeeds", gpu.err);
    if (cpu.rc) {
        ck_assert_msg(gpu.err[0] != 0, "%s: CUDA failed without a message", what);
        return 1;
    }
    char label[256];
    for (int k = 0; k < r->n_out; k++) {
        snprintf(label, sizeof label, "%s output %d", what, k);
        check_same(label, cpu.out[k], gpu.out[k], r->rtol, r->atol);
    }
    for (int i = 0; i < r->n_in; i++)
        if (cpu.mutated[i]) {
            snprintf(label, sizeof label, "%s updated input %d", what, i);
            check_same(label, cpu.mutated[i], gpu.mutated[i], r->rtol, r->atol);
        }
    run_gpu(r, &again);
    ck_assert_int_eq(again.rc, 0);
    for (int k = 0; k < r->n_out; k++)
        ck_assert_msg(bits_equal(gpu.out[k], again.out[k]), "%s: output %d differs on a rerun",
                      what, k);
    for (int i = 0; i < r->n_in; i++)
        if (gpu.mutated[i])
            ck_assert_msg(bits_equal(gpu.mutated[i], again.mutated[i]),
                          "%s: updated input %d differs on a rerun", what, i);
    return 0;
}

/* Tolerances: float math may differ in the last bits between libm and
 * CUDA's; double a little less. */
static double rtol_of(int dtype) { return dtype == ONNX_DTYPE_DOUBLE ? 1e-12 : 4e-6; }
static double atol_of(int dtype) { return dtype == ONNX_DTYPE_DOUBLE ? 1e-14 : 1e-6; }

static void compare_simple(const char *domain, const char *op, int opset, struct onnx_attr *attrs,
                           int n_attrs, const struct tensor **in, int n_in, const char *label)
{
    struct run r = { .domain = domain, .op = op, .opset = opset, .attrs = attrs,
                     .n_attrs = n_attrs, .in = in, .n_in = n_in, .n_out = 1,
                     .rtol = rtol_of(in[0]->dtype), .atol = atol_of(in[0]->dtype), .label = label };
    ck_assert_msg(compare(&r) == 0, "%s failed on both backends", label);
}

static const char *dn(int dtype) { return onnx_dtype_name(dtype); }

/* ---- broadcasting arithmetic --------------------------------------------------------------- */

static const int numeric[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT8,
                               ONNX_DTYPE_INT16, ONNX_DTYPE_INT32, ONNX_DTYPE_INT64,
                               ONNX_DTYPE_UINT8, ONNX_DTYPE_UINT16, ONNX_DTYPE_UINT32,
                               ONNX_DTYPE_UINT64 };
#define N_NUMERIC 10

struct shape_pair {
    int ra;
    int64_t a[8];
    int rb;
    int64_t b[8];
};

static const struct shape_pair pairs[] = {
    { 3, { 3, 4, 5 }, 3, { 3, 4, 5 } },
    { 4, { 2, 3, 1, 5 }, 3, { 3, 4, 1 } },
    { 0, { 0 }, 2, { 3, 5 } },
    { 2, { 7, 1 }, 0, { 0 } },
    { 8, { 2, 1, 2, 1, 2, 1, 2, 3 }, 8, { 1, 2, 1, 2, 1, 2, 1, 3 } },
    { 4, { 2, 1, 3, 1 }, 4, { 1, 4, 1, 5 } },
    { 2, { 0, 3 }, 1, { 3 } },
};

START_TEST(test_binary_arith)
{
    static const char *ops[] = { "Add", "Sub", "Mul", "Div", "Max", "Min" };
    char label[128];
    for (int o = 0; o < 6; o++)
        for (int t = 0; t < N_NUMERIC; t++)
            for (size_t s = 0; s < sizeof pairs / sizeof pairs[0]; s++) {
                const struct shape_pair *p = &pairs[s];
                const struct tensor *in[2] = { rnd_for(numeric[t], p->ra, p->a),
                                               rnd_for(numeric[t], p->rb, p->b) };
                snprintf(label, sizeof label, "%s %s shapes #%zu", ops[o], dn(numeric[t]), s);
                compare_simple("", ops[o], 14, NULL, 0, in, 2, label);
                testops_free_all();
            }
    /* a large broadcast, more elements than one grid covers */
    int64_t big[2] = { 9000, 1025 }, row[1] = { 1025 };
    for (int t = 0; t < 2; t++) {
        int dt = t ? ONNX_DTYPE_INT32 : ONNX_DTYPE_FLOAT;
        const struct tensor *in[2] = { rnd_for(dt, 2, big), rnd_for(dt, 1, row) };
        compare_simple("", "Add", 14, NULL, 0, in, 2, "large Add");
        const struct tensor *in2[2] = { in[1], in[0] };
        compare_simple("", "Mul", 14, NULL, 0, in2, 2, "large Mul");
        testops_free_all();
    }
}
END_TEST

START_TEST(test_variadic_and_nan)
{
    int64_t d0[3] = { 2, 3, 4 }, d1[2] = { 3, 1 }, d2[1] = { 4 };
    static const char *ops[] = { "Sum", "Max", "Min" };
    static const int types[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_INT32, ONNX_DTYPE_DOUBLE,
                                 ONNX_DTYPE_UINT8 };
    char label[128];
    for (int o = 0; o < 3; o++)
        for (int t = 0; t < 4; t++) {
            const struct tensor *in[3] = { rnd_for(types[t], 3, d0), rnd_for(types[t], 2, d1),
                                           rnd_for(types[t], 1, d2) };
            snprintf(label, sizeof label, "%s of 3 %s", ops[o], dn(types[t]));
            compare_simple("", ops[o], 13, NULL, 0, in, 3, label);
            snprintf(label, sizeof label, "%s of 1 %s", ops[o], dn(types[t]));
            compare_simple("", ops[o], 13, NULL, 0, in, 1, label);
            testops_free_all();
        }
    /* NaN wins Max and Min from either side */
    float a[4] = { NAN, 1, NAN, -2 }, b[4] = { 0, NAN, NAN, 3 };
    int64_t d4[1] = { 4 };
    const struct tensor *in[2] = { testops_tensor(ONNX_DTYPE_FLOAT, 1, d4, a),
                                   testops_tensor(ONNX_DTYPE_FLOAT, 1, d4, b) };
    compare_simple("", "Max", 13, NULL, 0, in, 2, "Max NaN");
    compare_simple("", "Min", 13, NULL, 0, in, 2, "Min NaN");
    testops_free_all();
}
END_TEST

START_TEST(test_pow)
{
    static const int bases[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT32,
                                 ONNX_DTYPE_INT64 };
    static const int expos[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT32,
                                 ONNX_DTYPE_INT64, ONNX_DTYPE_UINT8, ONNX_DTYPE_INT8 };
    int64_t da[2] = { 5, 6 }, db[1] = { 6 };
    char label[128];
    for (int b = 0; b < 4; b++)
        for (int e = 0; e < 6; e++) {
            int bt = bases[b], et = expos[e];
            const struct tensor *in[2] = {
                is_floating(bt) ? rnd(bt, 2, da, 0.1, 3) : rnd(bt, 2, da, -5, 5),
                is_floating(et) ? rnd(et, 1, db, -3, 3)
                : et == ONNX_DTYPE_UINT8 ? rnd(et, 1, db, 0, 7) : rnd(et, 1, db, -2, 7),
            };
            snprintf(label, sizeof label, "Pow %s ^ %s", dn(bt), dn(et));
            struct run r = { .domain = "", .op = "Pow", .opset = 15, .in = in, .n_in = 2,
                             .n_out = 1, .rtol = rtol_of(bt) * 4, .atol = atol_of(bt),
                             .label = label };
            ck_assert_int_eq(compare(&r), 0);
            testops_free_all();
        }
}
END_TEST

/* ---- comparisons, Where ---------------------------------------------------------------------- */

START_TEST(test_compare_where)
{
    static const char *ops[] = { "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual" };
    static const int types[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT32,
                                 ONNX_DTYPE_INT64, ONNX_DTYPE_UINT8, ONNX_DTYPE_INT8 };
    int64_t da[3] = { 3, 4, 5 }, db[2] = { 4, 1 };
    char label[128];
    for (int o = 0; o < 5; o++)
        for (int t = 0; t < 6; t++) {
            /* small integers so that equality happens */
            const struct tensor *in[2] = { rnd(types[t], 3, da, 0, 3), rnd(types[t], 2, db, 0, 3) };
            snprintf(label, sizeof label, "%s %s", ops[o], dn(types[t]));
            compare_simple("", ops[o], 16, NULL, 0, in, 2, label);
            testops_free_all();
        }
    const struct tensor *bin[2] = { rnd(ONNX_DTYPE_BOOL, 3, da, 0, 1),
                                    rnd(ONNX_DTYPE_BOOL, 2, db, 0, 1) };
    compare_simple("", "Equal", 19, NULL, 0, bin, 2, "Equal bool");
    testops_free_all();

    static const int wtypes[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT64,
                                  ONNX_DTYPE_BOOL, ONNX_DTYPE_FLOAT16, ONNX_DTYPE_INT16 };
    int64_t dc[3] = { 3, 1, 5 }, dx[2] = { 4, 5 }, dy[3] = { 3, 4, 1 };
    for (int t = 0; t < 6; t++) {
        const struct tensor *in[3] = { rnd(ONNX_DTYPE_BOOL, 3, dc, 0, 1),
                                       rnd(wtypes[t], 2, dx, -3, 3), rnd(wtypes[t], 3, dy, -3, 3) };
        snprintf(label, sizeof label, "Where %s", dn(wtypes[t]));
        compare_simple("", "Where", 16, NULL, 0, in, 3, label);
        testops_free_all();
    }
}
END_TEST

/* ---- unary ops ------------------------------------------------------------------------------- */

struct unary_case {
    const char *op;
    int opset;
    double lo, hi;
    int types[6];
};

START_TEST(test_unary)
{
    static const struct unary_case cases[] = {
        { "Sqrt", 13, 0.01, 4, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE } },
        { "Exp", 13, -20, 20, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE } },
        { "Log", 13, 0.001, 50, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE } },
        { "Tanh", 13, -5, 5, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE } },
        { "Erf", 13, -4, 4, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE } },
        { "Reciprocal", 13, 0.1, 9, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE } },
        { "Sigmoid", 13, -30, 30, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE } },
        { "Neg", 13, -100, 100, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT8,
                                  ONNX_DTYPE_INT32, ONNX_DTYPE_INT64 } },
        { "Abs", 13, -100, 100, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT8,
                                  ONNX_DTYPE_INT32, ONNX_DTYPE_UINT8, ONNX_DTYPE_INT64 } },
        { "Relu", 14, -100, 100, { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT32,
                                   ONNX_DTYPE_INT8 } },
        { "Not", 1, 0, 1, { ONNX_DTYPE_BOOL } },
    };
    int64_t small[2] = { 7, 33 }, large[1] = { (1 << 20) + 3 };
    char label[128];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int t = 0; t < 6 && cases[k].types[t]; t++)
            for (int big = 0; big < 2; big++) {
                int dt = cases[k].types[t];
                const struct tensor *in[1] = { rnd(dt, big ? 1 : 2, big ? large : small,
                                                   cases[k].lo, cases[k].hi) };
                snprintf(label, sizeof label, "%s %s%s", cases[k].op, dn(dt), big ? " large" : "");
                compare_simple("", cases[k].op, cases[k].opset, NULL, 0, in, 1, label);
                testops_free_all();
            }
    for (int t = 0; t < 2; t++) {
        int dt = t ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT;
        const struct tensor *in[1] = { rnd(dt, 2, small, -6, 6) };
        struct onnx_attr alpha = a_float("alpha", 0.2f);
        compare_simple("", "LeakyRelu", 16, &alpha, 1, in, 1, "LeakyRelu");
        struct onnx_attr none = a_str("approximate", "none"), tanh_ = a_str("approximate", "tanh");
        compare_simple("", "Gelu", 20, &none, 1, in, 1, "Gelu");
        compare_simple("", "Gelu", 20, &tanh_, 1, in, 1, "Gelu tanh");
        testops_free_all();
    }
}
END_TEST

START_TEST(test_clip)
{
    int64_t d[2] = { 6, 11 };
    static const int types[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT32,
                                 ONNX_DTYPE_UINT8, ONNX_DTYPE_INT64 };
    char label[128];
    for (int t = 0; t < 5; t++) {
        int dt = types[t];
        struct tensor *x = rnd_for(dt, 2, d);
        struct tensor *lo = rnd(dt, 0, NULL, 0, 20), *hi = rnd(dt, 0, NULL, 100, 200);
        const struct tensor *both[3] = { x, lo, hi }, *only_hi[3] = { x, NULL, hi };
        snprintf(label, sizeof label, "Clip-13 %s both bounds", dn(dt));
        compare_simple("", "Clip", 13, NULL, 0, both, 3, label);
        snprintf(label, sizeof label, "Clip-13 %s max only", dn(dt));
        compare_simple("", "Clip", 13, NULL, 0, only_hi, 3, label);
        snprintf(label, sizeof label, "Clip-13 %s unbounded", dn(dt));
        compare_simple("", "Clip", 13, NULL, 0, both, 1, label);
        /* lo > hi: hi wins */
        const struct tensor *crossed[3] = { x, hi, lo };
        snprintf(label, sizeof label, "Clip-13 %s crossed", dn(dt));
        compare_simple("", "Clip", 13, NULL, 0, crossed, 3, label);
        testops_free_all();
    }
    struct onnx_attr attrs[2] = { a_float("min", -0.5f), a_float("max", 0.75f) };
    const struct tensor *in[1] = { rnd(ONNX_DTYPE_FLOAT, 2, d, -2, 2) };
    compare_simple("", "Clip", 6, attrs, 2, in, 1, "Clip-6 attributes");
    compare_simple("", "Clip", 6, attrs, 1, in, 1, "Clip-6 min only");
    testops_free_all();
}
END_TEST

/* ---- Cast ------------------------------------------------------------------------------------ */

static const int cast_types[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT8,
                                  ONNX_DTYPE_INT16, ONNX_DTYPE_INT32, ONNX_DTYPE_INT64,
                                  ONNX_DTYPE_UINT8, ONNX_DTYPE_UINT16, ONNX_DTYPE_UINT32,
                                  ONNX_DTYPE_UINT64, ONNX_DTYPE_BOOL, ONNX_DTYPE_FLOAT16,
                                  ONNX_DTYPE_BFLOAT16 };

/* Special values as dtype `to`, made by the CPU's own Cast from double. */
static struct tensor *specials_as(int to)
{
    static const double v[] = { 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 127.0, 128.0,
                                -129.0, 255.0, 256.0, 65504.0, 65520.0, 70000.0, -70000.0,
                                2147483647.0, 2147483648.0, -2147483649.0, 4294967296.0,
                                9.3e18, -9.3e18, 1.9e19, 1e30, -1e30, 3.4e38, 1e300, 1e-8,
                                5.96e-8, 2.98e-8, 1e-40, 1e-310, 0.1, 1.0 / 3, 3.14159265358979,
                                NAN, INFINITY, -INFINITY, 12345.678, -0.75 };
    int64_t n[1] = { (int64_t)(sizeof v / sizeof v[0]) };
    struct tensor *src = testops_tensor(ONNX_DTYPE_DOUBLE, 1, n, v);
    if (to == ONNX_DTYPE_DOUBLE)
        return src;
    struct onnx_attr attr = a_int("to", to);
    const struct op_def *def = op_registry_find("", "Cast", 21, &(int){ 0 });
    struct onnx_node node = { .name = "mk", .op_type = "Cast", .domain = "", .n_inputs = 1,
                              .n_outputs = 1, .n_attrs = 1, .attrs = &attr };
    char err[256];
    void *params = NULL;
    ck_assert_int_eq(def->parse(&node, 21, &params, err, sizeof err), 0);
    struct tensor *out = testops_alloc(sizeof *out);
    const struct tensor *in[1] = { src };
    struct op_env env = { .backend = &backend_cpu, .threads = 1, .err = err,
                          .err_size = sizeof err };
    struct op_call c = { .def = def, .version = 21, .params = params, .node_name = "mk", .n_in = 1,
                         .in = in, .n_out = 1, .out = &out, .env = &env };
    ck_assert_int_eq(def->infer(&c), 0);
    out->data = testops_alloc(tensor_size_bytes(out));
    ck_assert_int_eq(def->kernel[BACKEND_CPU](&c), 0);
    free(params);
    return out;
}

START_TEST(test_cast)
{
    char label[128];
    for (int s = 0; s < 13; s++)
        for (int d = 0; d < 13; d++) {
            struct onnx_attr to = a_int("to", cast_types[d]);
            const struct tensor *in[1] = { specials_as(cast_types[s]) };
            snprintf(label, sizeof label, "Cast %s -> %s", dn(cast_types[s]), dn(cast_types[d]));
            struct run r = { .domain = "", .op = "Cast", .opset = 21, .attrs = &to, .n_attrs = 1,
                             .in = in, .n_in = 1, .n_out = 1, .label = label };
            ck_assert_int_eq(compare(&r), 0);   /* bit-exact (rtol = atol = 0) */
            testops_free_all();
        }
    int64_t d[2] = { 4, 9 };
    const struct tensor *in[2] = { rnd(ONNX_DTYPE_FLOAT, 2, d, -300, 300),
                                   rnd(ONNX_DTYPE_INT16, 1, d, 0, 1) };
    struct run r = { .domain = "", .op = "CastLike", .opset = 21, .in = in, .n_in = 2,
                     .n_out = 1, .label = "CastLike float -> int16" };
    ck_assert_int_eq(compare(&r), 0);
    testops_free_all();
}
END_TEST

/* ---- reductions ------------------------------------------------------------------------------ */

static const char *const reduce_ops[] = { "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin" };
/* the first opset where the axes are an input */
static const int reduce_input_opset[] = { 13, 18, 18, 18 };

/* Runs reduce op o over `axes` (n_axes; -1: none given) both as an
 * attribute (opset 11) and as an input, keepdims 0 and 1. */
static void check_reduce(int o, const struct tensor *x, int n_axes, int64_t *axes, double rtol,
                         double atol, int noop)
{
    char label[160];
    for (int as_input = 0; as_input < 2; as_input++)
        for (int keep = 0; keep < 2; keep++) {
            struct onnx_attr attrs[3];
            int na = 0;
            attrs[na++] = a_int("keepdims", keep);
            if (noop)
                attrs[na++] = a_int("noop_with_empty_axes", 1);
            const struct tensor *in[2] = { x, NULL };
            int n_in = 1;
            if (n_axes >= 0 && !as_input)
                attrs[na++] = a_ints("axes", n_axes, axes);
            if (n_axes >= 0 && as_input) {
                in[1] = i64s(n_axes, axes);
                n_in = 2;
            }
            if (noop && !as_input)
                continue;      /* noop_with_empty_axes exists with the axes input only */
            snprintf(label, sizeof label, "%s %s %s axes(%d) keepdims=%d%s%s", reduce_ops[o],
                     dn(x->dtype), as_input ? "input" : "attribute", n_axes, keep,
                     noop ? " noop" : "", tensor_numel(x) > 100000 ? " large" : "");
            struct run r = { .domain = "", .op = reduce_ops[o],
                             .opset = as_input ? reduce_input_opset[o] : 11, .attrs = attrs,
                             .n_attrs = na, .in = in, .n_in = n_in, .n_out = 1, .rtol = rtol,
                             .atol = atol, .label = label };
            ck_assert_int_eq(compare(&r), 0);
        }
}

START_TEST(test_reduce_axes)
{
    static const int types[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT32,
                                 ONNX_DTYPE_INT64, ONNX_DTYPE_UINT8, ONNX_DTYPE_BOOL };
    static int64_t axes_sets[][4] = { { 0 }, { 1 }, { 3 }, { 0, 2 }, { 1, 3 }, { 0, 1, 2, 3 },
                                      { -1 }, { 2, 0 } };
    static const int n_axes[] = { 1, 1, 1, 2, 2, 4, 1, 2 };
    int64_t d[4] = { 3, 4, 5, 6 };
    for (int t = 0; t < 6; t++) {
        struct tensor *x = types[t] == ONNX_DTYPE_BOOL ? rnd(types[t], 4, d, 0, 1)
                                                       : rnd(types[t], 4, d, 0, 100);
        for (int o = 0; o < 4; o++) {
            /* Sum and Mean of bool are refused by both */
            if (types[t] == ONNX_DTYPE_BOOL && o < 2)
                continue;
            double rtol = 1e-5, atol = 1e-4;
            for (size_t s = 0; s < sizeof n_axes / sizeof n_axes[0]; s++)
                check_reduce(o, x, n_axes[s], axes_sets[s], rtol, atol, 0);
            check_reduce(o, x, -1, NULL, rtol, atol, 0);        /* no axes: everything */
            check_reduce(o, x, 0, NULL, rtol, atol, 1);         /* empty axes, noop */
        }
        testops_free_all();
    }
}
END_TEST

START_TEST(test_reduce_layouts)
{
    /* segmented inner, segmented outer, full, two reduced groups, a warp
     * per output, a thread per output, and empty tensors */
    static const struct {
        int rank;
        int64_t dims[3];
        int n_axes;
        int64_t axes[2];
    } cases[] = {
        { 2, { 3, 300000 }, 1, { 1 } },
        { 2, { 300000, 3 }, 1, { 0 } },
        { 1, { 1 << 20 }, 1, { 0 } },
        { 3, { 64, 100, 8 }, 2, { 0, 2 } },
        { 2, { 500, 40 }, 1, { 1 } },
        { 2, { 4096, 7 }, 1, { 1 } },
        { 3, { 40, 3000, 5 }, 1, { 1 } },
        { 2, { 0, 3 }, 1, { 0 } },
        { 2, { 3, 0 }, 1, { 0 } },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int t = 0; t < 2; t++) {
            int dt = t ? ONNX_DTYPE_INT32 : ONNX_DTYPE_FLOAT;
            struct tensor *x = rnd(dt, cases[k].rank, cases[k].dims, -2, 2);
            int64_t count = 1;
            for (int a = 0; a < cases[k].n_axes; a++)
                count *= cases[k].dims[cases[k].axes[a]];
            /* float sums in another order: error grows like sqrt(count) */
            double atol = 4e-5 * sqrt((double)count + 1);
            for (int o = 0; o < 4; o++)
                check_reduce(o, x, cases[k].n_axes, (int64_t *)cases[k].axes, 1e-5, atol, 0);
            testops_free_all();
        }
}
END_TEST

/* ---- gradients ------------------------------------------------------------------------------- */

START_TEST(test_unary_grads)
{
    static const struct {
        const char *op;
        double lo, hi;
    } cases[] = {
        { "ReluGrad", -2, 2 }, { "SigmoidGrad", 0.01, 0.99 }, { "TanhGrad", -0.99, 0.99 },
        { "SqrtGrad", 0.1, 3 }, { "ReciprocalGrad", -3, 3 }, { "AbsGrad", -2, 2 },
        { "ErfGrad", -3, 3 }, { "LeakyReluGrad", -2, 2 }, { "GeluGrad", -5, 5 },
        { "ClipGrad", -2, 2 },
    };
    int64_t d[2] = { 9, 130 };
    char label[128];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int t = 0; t < 2; t++) {
            int dt = t ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT;
            struct tensor *dy = rnd(dt, 2, d, -2, 2), *z = rnd(dt, 2, d, cases[k].lo, cases[k].hi);
            const struct tensor *in[4] = { dy, z, NULL, NULL };
            struct onnx_attr attr = a_float("alpha", 0.3f);
            int n_attrs = !strcmp(cases[k].op, "LeakyReluGrad");
            snprintf(label, sizeof label, "%s %s", cases[k].op, dn(dt));
            compare_simple("dtrexec", cases[k].op, 1, n_attrs ? &attr : NULL, n_attrs, in, 2,
                           label);
            if (!strcmp(cases[k].op, "GeluGrad")) {
                struct onnx_attr tanh_ = a_str("approximate", "tanh");
                compare_simple("dtrexec", "GeluGrad", 1, &tanh_, 1, in, 2, "GeluGrad tanh");
            }
            if (!strcmp(cases[k].op, "ClipGrad")) {
                double lo = -0.5, hi = 1.0;
                float lof = -0.5f, hif = 1.0f;
                in[2] = testops_tensor(dt, 0, NULL, t ? (void *)&lo : (void *)&lof);
                in[3] = testops_tensor(dt, 0, NULL, t ? (void *)&hi : (void *)&hif);
                compare_simple("dtrexec", "ClipGrad", 1, NULL, 0, in, 4, "ClipGrad bounded");
                in[2] = NULL;
                compare_simple("dtrexec", "ClipGrad", 1, NULL, 0, in, 4, "ClipGrad max only");
            }
            testops_free_all();
        }
}
END_TEST

START_TEST(test_div_pow_grads)
{
    int64_t dd[3] = { 2, 3, 4 }, db[1] = { 4 }, da[2] = { 3, 1 };
    char label[128];
    for (int t = 0; t < 2; t++) {
        int dt = t ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT;
        const struct tensor *in[3] = { rnd(dt, 3, dd, -2, 2), rnd(dt, 2, da, 0.2, 2),
                                       rnd(dt, 1, db, 0.5, 2) };
        snprintf(label, sizeof label, "DivGrad %s", dn(dt));
        compare_simple("dtrexec", "DivGrad", 1, NULL, 0, in, 3, label);
        for (int wrt = 0; wrt < 2; wrt++) {
            struct onnx_attr a = a_int("wrt", wrt);
            snprintf(label, sizeof label, "PowGrad wrt=%d %s", wrt, dn(dt));
            struct run r = { .domain = "dtrexec", .op = "PowGrad", .opset = 1, .attrs = &a,
                             .n_attrs = 1, .in = in, .n_in = 3, .n_out = 1,
                             .rtol = rtol_of(dt) * 4, .atol = atol_of(dt), .label = label };
            ck_assert_int_eq(compare(&r), 0);
        }
        testops_free_all();
    }
}
END_TEST

/* Values with many ties: integers in [0, 3]. */
static struct tensor *ties(int dt, int rank, const int64_t *dims)
{
    struct tensor *t = rnd(dt, rank, dims, 0, 3);
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        if (dt == ONNX_DTYPE_FLOAT)
            ((float *)t->data)[i] = floorf(((float *)t->data)[i]);
        else
            ((double *)t->data)[i] = floor(((double *)t->data)[i]);
    }
    return t;
}

/* Runs a CPU op for its output (the forward a gradient test needs). */
static struct tensor *cpu_out(const char *op, int opset, struct onnx_attr *attrs, int n_attrs,
                              const struct tensor **in, int n_in)
{
    static struct result res;
    struct run r = { .domain = "", .op = op, .opset = opset, .attrs = attrs, .n_attrs = n_attrs,
                     .in = in, .n_in = n_in, .n_out = 1, .label = op };
    memset(&res, 0, sizeof res);
    run_cpu(&r, &res);
    ck_assert_msg(res.rc == 0, "%s: %s", op, res.err);
    return res.out[0];
}

START_TEST(test_select_maxmin_grads)
{
    int64_t d[3] = { 4, 50, 6 };
    static int64_t axes_sets[][2] = { { 1 }, { 0, 2 }, { 2 }, { 0 } };
    static const int n_axes[] = { 1, 2, 1, 1 };
    char label[128];
    for (int t = 0; t < 2; t++) {
        int dt = t ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT;
        struct tensor *x = ties(dt, 3, d);
        if (dt == ONNX_DTYPE_DOUBLE)     /* NaN wins the forward and matches itself */
            ((double *)x->data)[7] = NAN;
        else
            ((float *)x->data)[7] = NAN;
        for (int s = 0; s < 4; s++) {
            struct onnx_attr attrs[2] = { a_ints("axes", n_axes[s], axes_sets[s]),
                                          a_int("keepdims", 1) };
            const struct tensor *fin[1] = { x };
            struct tensor *y = cpu_out(s & 1 ? "ReduceMin" : "ReduceMax", 13, attrs, 2, fin, 1);
            struct tensor *dy = rnd(dt, y->rank, y->dims, -2, 2);
            const struct tensor *in[3] = { dy, x, y };
            snprintf(label, sizeof label, "ReduceSelectGrad %s axes #%d", dn(dt), s);
            compare_simple("dtrexec", "ReduceSelectGrad", 1, NULL, 0, in, 3, label);
        }
        /* MaxMinGrad(dy, Y, X0, X1, X2) with broadcasting and ties */
        int64_t d0[3] = { 3, 4, 5 }, d1[2] = { 4, 1 }, d2[1] = { 5 };
        const struct tensor *xs[3] = { ties(dt, 3, d0), ties(dt, 2, d1), ties(dt, 1, d2) };
        for (int m = 0; m < 2; m++) {
            struct tensor *y = cpu_out(m ? "Min" : "Max", 13, NULL, 0, xs, 3);
            const struct tensor *in[5] = { rnd(dt, 3, d0, -2, 2), y, xs[0], xs[1], xs[2] };
            snprintf(label, sizeof label, "MaxMinGrad %s %s", m ? "Min" : "Max", dn(dt));
            struct run r = { .domain = "dtrexec", .op = "MaxMinGrad", .opset = 1, .in = in,
                             .n_in = 5, .n_out = 3, .label = label };
            ck_assert_int_eq(compare(&r), 0);
        }
        testops_free_all();
    }
}
END_TEST

/* ---- Dropout --------------------------------------------------------------------------------- */

START_TEST(test_dropout)
{
    int64_t d[2] = { 300, 257 };
    uint8_t yes = 1, no = 0;
    char label[128];
    for (int t = 0; t < 2; t++) {
        int dt = t ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT;
        struct tensor *x = rnd(dt, 2, d, -2, 2);
        struct tensor *train = testops_tensor(ONNX_DTYPE_BOOL, 0, NULL, &yes);
        struct tensor *infer_ = testops_tensor(ONNX_DTYPE_BOOL, 0, NULL, &no);
        struct tensor *ratio = scalar_f64(0.3);
        struct onnx_attr seed = a_int("seed", 42);
        const struct tensor *in[3] = { x, ratio, train };
        for (int seeded = 0; seeded < 2; seeded++) {
            snprintf(label, sizeof label, "Dropout-13 training %s%s", dn(dt),
                     seeded ? " seeded" : "");
            struct run r = { .domain = "", .op = "Dropout", .opset = 13,
                             .attrs = seeded ? &seed : NULL, .n_attrs = seeded, .in = in,
                             .n_in = 3, .n_out = 2, .seed = 1234567, .node_name = "drop/1",
                             .label = label };
            ck_assert_int_eq(compare(&r), 0);     /* y and the mask bit for bit */
        }
        const struct tensor *inf_in[3] = { x, ratio, infer_ };
        struct run ri = { .domain = "", .op = "Dropout", .opset = 13, .in = inf_in, .n_in = 3,
                          .n_out = 2, .label = "Dropout-13 inference" };
        ck_assert_int_eq(compare(&ri), 0);
        /* opset 7: ratio attribute, env->training, mask of the input's dtype */
        struct onnx_attr r7 = a_float("ratio", 0.6f);
        const struct tensor *in7[1] = { x };
        struct run r = { .domain = "", .op = "Dropout", .opset = 7, .attrs = &r7, .n_attrs = 1,
                         .in = in7, .n_in = 1, .n_out = 2, .training = 1, .seed = 99,
                         .label = "Dropout-7 training" };
        ck_assert_int_eq(compare(&r), 0);
        r.training = 0;
        r.label = "Dropout-7 inference";
        ck_assert_int_eq(compare(&r), 0);
        /* DropoutGrad regenerates the mask from the key */
        struct onnx_attr key = a_int("key", (int64_t)0x5eed1234abcdLL);
        const struct tensor *gin[2] = { rnd(dt, 2, d, -1, 1), ratio };
        struct run rg = { .domain = "dtrexec", .op = "DropoutGrad", .opset = 1, .attrs = &key,
                          .n_attrs = 1, .in = gin, .n_in = 2, .n_out = 1, .label = "DropoutGrad" };
        ck_assert_int_eq(compare(&rg), 0);
        testops_free_all();
    }
}
END_TEST

/* ---- losses ---------------------------------------------------------------------------------- */

/* Targets in [0, c), a fifth of them `ignore` when ignore >= 0. */
static struct tensor *targets(int dtype, int rank, const int64_t *dims, int64_t c, int64_t ignore)
{
    struct tensor *t = testops_tensor(dtype, rank, dims, NULL);
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        int64_t v = (int64_t)(urand() * (double)c);
        if (ignore >= 0 && urand() < 0.2)
            v = ignore;
        if (dtype == ONNX_DTYPE_INT32)
            ((int32_t *)t->data)[i] = (int32_t)v;
        else
            ((int64_t *)t->data)[i] = v;
    }
    return t;
}

START_TEST(test_losses)
{
    static const struct {
        int rank;
        int64_t dims[4];
    } shapes[] = {
        { 2, { 8, 5 } }, { 4, { 4, 5, 3, 2 } }, { 2, { 16, 3000 } }, { 3, { 2, 7, 4000 } },
    };
    static const char *reductions[] = { "none", "sum", "mean" };
    char label[160];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int variant = 0; variant < 4; variant++) {
            int dt = variant & 1 ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT;
            int tt = variant & 2 ? ONNX_DTYPE_INT32 : ONNX_DTYPE_INT64;
            int with_ignore = variant >= 2, with_weight = variant == 1 || variant == 2;
            int rank = shapes[s].rank;
            const int64_t *dims = shapes[s].dims;
            int64_t c = dims[1], tdims[3] = { dims[0], dims[2], dims[3] };
            struct tensor *x = rnd(dt, rank, dims, -3, 3);
            struct tensor *t = targets(tt, rank - 1, tdims, c, with_ignore ? 1 : -1);
            struct tensor *w = with_weight ? rnd(dt, 1, &c, 0.2, 2) : NULL;
            for (int red = 0; red < 3; red++) {
                struct onnx_attr attrs[2] = { a_str("reduction", reductions[red]),
                                              a_int("ignore_index", 1) };
                int n_attrs = with_ignore ? 2 : 1;
                const struct tensor *in[3] = { x, t, w };
                for (int op = 0; op < 2; op++) {
                    const char *name = op ? "NegativeLogLikelihoodLoss" : "SoftmaxCrossEntropyLoss";
                    snprintf(label, sizeof label, "%s %s %s shape #%zu %s%s", name, dn(dt),
                             reductions[red], s, with_weight ? "weighted " : "",
                             with_ignore ? "ignore_index" : "");
                    struct run r = { .domain = "", .op = name, .opset = 13, .attrs = attrs,
                                     .n_attrs = n_attrs, .in = in, .n_in = with_weight ? 3 : 2,
                                     .n_out = op ? 1 : 2,
                                     .rtol = dt == ONNX_DTYPE_FLOAT ? 1e-5 : 1e-11,
                                     .atol = dt == ONNX_DTYPE_FLOAT ? 1e-6 : 1e-13,
                                     .label = label };
                    ck_assert_int_eq(compare(&r), 0);

                    /* the gradient, with dloss shaped by the reduction and, for
                     * SCE, a dlog_prob */
                    struct tensor *dy = red == 0 ? rnd(dt, rank - 1, tdims, -1, 1)
                                                 : rnd(dt, 0, NULL, 0.5, 1.5);
                    struct tensor *dlp = op ? NULL : rnd(dt, rank, dims, -1, 1);
                    const struct tensor *gin[5] = { x, t, w, dy, dlp };
                    snprintf(label, sizeof label, "%sGrad %s %s shape #%zu %s%s", name, dn(dt),
                             reductions[red], s, with_weight ? "weighted " : "",
                             with_ignore ? "ignore_index" : "");
                    struct run rg = r;
                    rg.domain = "dtrexec";
                    rg.op = op ? "NegativeLogLikelihoodLossGrad" : "SoftmaxCrossEntropyLossGrad";
                    rg.opset = 1;
                    rg.in = gin;
                    rg.n_in = op ? 4 : 5;
                    rg.n_out = 1;
                    ck_assert_int_eq(compare(&rg), 0);
                }
            }
            testops_free_all();
        }
    /* a label out of range fails on both, with a message */
    int64_t d[2] = { 4, 3 }, td[1] = { 4 };
    int64_t bad[4] = { 0, 2, 3, 1 };
    const struct tensor *in[2] = { rnd(ONNX_DTYPE_FLOAT, 2, d, -1, 1),
                                   testops_tensor(ONNX_DTYPE_INT64, 1, td, bad) };
    struct run r = { .domain = "", .op = "SoftmaxCrossEntropyLoss", .opset = 13, .in = in,
                     .n_in = 2, .n_out = 1, .label = "SCE bad label" };
    ck_assert_int_eq(compare(&r), 1);
    testops_free_all();
}
END_TEST

/* ---- optimizers ------------------------------------------------------------------------------ */

START_TEST(test_optimizers)
{
    int64_t d[2] = { 333, 77 };
    struct tensor *w = rnd(ONNX_DTYPE_FLOAT, 2, d, -1, 1), *g = rnd(ONNX_DTYPE_FLOAT, 2, d, -1, 1);
    struct tensor *b = rnd(ONNX_DTYPE_FLOAT, 2, d, -0.1, 0.1);
    struct tensor *m = rnd(ONNX_DTYPE_FLOAT, 2, d, -0.1, 0.1);
    struct tensor *v = rnd(ONNX_DTYPE_FLOAT, 2, d, 0, 0.01);
    struct onnx_attr sgd[2] = { a_float("lr", 0.05f), a_float("weight_decay", 0.01f) };
    const struct tensor *in2[2] = { w, g }, *in3[3] = { w, g, b }, *in4[4] = { w, g, m, v };
    struct run r = { .domain = "dtrexec", .op = "SGDUpdate", .opset = 1, .attrs = sgd,
                     .n_attrs = 2, .in = in2, .n_in = 2, .n_out = 0, .rtol = 1e-6, .atol = 1e-7,
                     .label = "SGDUpdate" };
    ck_assert_int_eq(compare(&r), 0);
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        struct onnx_attr mom[4] = { a_float("lr", 0.05f), a_float("momentum", 0.9f),
                                    a_float("weight_decay", 0.001f), a_int("nesterov", nesterov) };
        r.op = "MomentumUpdate";
        r.attrs = mom;
        r.n_attrs = 4;
        r.in = in3;
        r.n_in = 3;
        r.label = nesterov ? "MomentumUpdate nesterov" : "MomentumUpdate";
        ck_assert_int_eq(compare(&r), 0);
    }
    for (int variant = 0; variant < 3; variant++) {
        struct onnx_attr adam[5] = { a_float("lr", 0.001f), a_float("weight_decay", 0.01f),
                                     a_int("step", 3), a_int("decoupled", variant > 0),
                                     a_int("hf_bias_correction", variant == 2) };
        static const char *names[] = { "AdamUpdate L2", "AdamUpdate AdamW", "AdamUpdate HF" };
        r.op = "AdamUpdate";
        r.attrs = adam;
        r.n_attrs = 5;
        r.in = in4;
        r.n_in = 4;
        r.label = names[variant];
        ck_assert_int_eq(compare(&r), 0);
    }
    testops_free_all();
}
END_TEST

/* ---- ReduceProd, L1, L2, SumSquare, LogSum, LogSumExp and ReduceExtGrad --------------- */

static const char *const rx_ops[] = { "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                      "ReduceLogSum", "ReduceLogSumExp" };

START_TEST(test_reduce_ext)
{
    static const int types[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_INT32, ONNX_DTYPE_INT64,
                                 ONNX_DTYPE_UINT32 };
    static int64_t axes_sets[][3] = { { 0 }, { 2 }, { 0, 2 }, { -1, 1 }, { 0, 1, 2 } };
    static const int n_axes[] = { 1, 1, 2, 2, 3 };
    int64_t d[3] = { 3, 70, 5 };
    char label[160];
    for (int o = 0; o < 6; o++)
        for (int t = 0; t < 5; t++) {
            int dt = types[t];
            /* products stay near 1, logs see positive sums */
            struct tensor *x = o == 0 ? rnd(dt, 3, d, dt == ONNX_DTYPE_UINT32 ? 0 : -2, 2)
                               : o == 4 ? rnd(dt, 3, d, 1, 3) : rnd(dt, 3, d, dt == ONNX_DTYPE_UINT32 ? 0 : -3, 3);
            if (o == 0 && is_floating(dt))
                x = rnd(dt, 3, d, 0.9, 1.1);
            for (size_t s = 0; s <= sizeof n_axes / sizeof n_axes[0]; s++)
                for (int as_input = 0; as_input < 2; as_input++)
                    for (int keep = 0; keep < 2; keep++) {
                        struct onnx_attr attrs[3];
                        int na = 0, n_in = 1, noop = s == sizeof n_axes / sizeof n_axes[0];
                        attrs[na++] = a_int("keepdims", keep);
                        const struct tensor *in[2] = { x, NULL };
                        if (noop && !as_input)
                            continue;
                        if (noop) {
                            attrs[na++] = a_int("noop_with_empty_axes", 1);
                            in[1] = i64s(0, NULL);
                            n_in = 2;
                        } else if (as_input) {
                            in[1] = i64s(n_axes[s], axes_sets[s]);
                            n_in = 2;
                        } else {
                            attrs[na++] = a_ints("axes", n_axes[s], axes_sets[s]);
                        }
                        snprintf(label, sizeof label, "%s %s axes set %zu %s keepdims=%d%s", rx_ops[o], dn(dt), s,
                                 as_input ? "input" : "attribute", keep, noop ? " noop" : "");
                        struct run r = { .domain = "", .op = rx_ops[o], .opset = as_input ? 18 : 13,
                                         .attrs = attrs, .n_attrs = na, .in = in, .n_in = n_in, .n_out = 1,
                                         .rtol = dt == ONNX_DTYPE_DOUBLE ? 1e-12 : 1e-6,
                                         .atol = dt == ONNX_DTYPE_DOUBLE ? 1e-12 : 1e-6, .label = label };
                        ck_assert_int_eq(compare(&r), 0);
                    }
            testops_free_all();
        }
}
END_TEST

START_TEST(test_reduce_ext_grad)
{
    int64_t xd[3] = { 4, 300, 3 }, kd[3][3] = { { 4, 1, 3 }, { 1, 1, 1 }, { 1, 300, 1 } };
    char label[160];
    for (int kind = 0; kind < 6; kind++)
        for (int t = 0; t < 2; t++) {
            int dt = t ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT;
            struct tensor *x = kind == 4 ? rnd(dt, 3, xd, 1, 3) : rnd(dt, 3, xd, -2, 2);
            if (kind == 0) {
                /* a group with one zero and one with two */
                x = rnd(dt, 3, xd, 0.9, 1.1);
                for (int z = 0; z < 3; z++) {
                    int64_t at = z == 0 ? 7 * 3 : z == 1 ? 310 * 3 + 1 : 450 * 3 + 1;
                    if (dt == ONNX_DTYPE_DOUBLE)
                        ((double *)x->data)[at] = 0;
                    else
                        ((float *)x->data)[at] = 0;
                }
            }
            for (int k = 0; k < 3; k++) {
                struct tensor *dy = rnd(dt, 3, kd[k], -1, 1), *y = rnd(dt, 3, kd[k], 0.5, 2);
                struct onnx_attr attrs[1] = { a_int("kind", kind) };
                const struct tensor *in[3] = { dy, x, y };
                snprintf(label, sizeof label, "ReduceExtGrad kind %d %s keep shape %d", kind, dn(dt), k);
                struct run r = { .domain = "dtrexec", .op = "ReduceExtGrad", .opset = 1, .attrs = attrs,
                                 .n_attrs = 1, .in = in, .n_in = kind == 1 || kind == 3 ? 2 : 3, .n_out = 1,
                                 .rtol = dt == ONNX_DTYPE_DOUBLE ? 1e-12 : 1e-6,
                                 .atol = dt == ONNX_DTYPE_DOUBLE ? 1e-12 : 1e-6, .label = label };
                ck_assert_int_eq(compare(&r), 0);
            }
            testops_free_all();
        }
}
END_TEST

/* ---- activations, rounding, Mod, PRelu, logical ops (ops/activation.c, ...) ------------- */

static const int reals[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_FLOAT16,
                             ONNX_DTYPE_BFLOAT16 };

/* float16 and bfloat16 results are float results rounded once: a last-bit
 * difference in float may round them one 16-bit step apart. */
static double rtol_real(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT16 ? 2e-3 : dtype == ONNX_DTYPE_BFLOAT16 ? 1.6e-2
                                                                            : rtol_of(dtype);
}
static double atol_real(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT16 || dtype == ONNX_DTYPE_BFLOAT16 ? 1e-3 : atol_of(dtype);
}

static void compare_real(const char *domain, const char *op, int opset, struct onnx_attr *attrs,
                         int n_attrs, const struct tensor **in, int n_in, const char *label)
{
    int dt = in[0]->dtype;
    struct run r = { .domain = domain, .op = op, .opset = opset, .attrs = attrs,
                     .n_attrs = n_attrs, .in = in, .n_in = n_in, .n_out = 1,
                     .rtol = rtol_real(dt), .atol = atol_real(dt), .label = label };
    ck_assert_msg(compare(&r) == 0, "%s failed on both backends", label);
}

struct act_case {
    const char *op;
    int opset;
    int has_grad_kernel;           /* <op>Grad(dy, X) exists */
    double lo, hi;
    int n_attrs;
    const char *names[2];
    float values[2];
};

static const struct act_case act_cases[] = {
    { "Sin", 22, 0, -7, 7, 0, { 0 }, { 0 } },
    { "Cos", 22, 0, -7, 7, 0, { 0 }, { 0 } },
    { "Floor", 13, 0, -5.5, 5.5, 0, { 0 }, { 0 } },
    { "Ceil", 13, 0, -5.5, 5.5, 0, { 0 }, { 0 } },
    { "Round", 22, 0, -5.5, 5.5, 0, { 0 }, { 0 } },
    { "Sign", 13, 0, -3, 3, 0, { 0 }, { 0 } },
    { "HardSigmoid", 22, 1, -5, 5, 2, { "alpha", "beta" }, { 0.3f, 0.4f } },
    { "HardSwish", 22, 1, -5, 5, 0, { 0 }, { 0 } },
    { "Softplus", 22, 1, -30, 30, 0, { 0 }, { 0 } },
    { "Elu", 22, 1, -6, 3, 1, { "alpha" }, { 0.7f } },
    { "Selu", 22, 1, -6, 3, 2, { "alpha", "gamma" }, { 1.5f, 0.9f } },
    { "Celu", 12, 1, -6, 3, 1, { "alpha" }, { 1.5f } },
    { "Mish", 22, 1, -12, 12, 0, { 0 }, { 0 } },
    { "Swish", 24, 1, -12, 12, 1, { "alpha" }, { 1.3f } },
};

START_TEST(test_activations)
{
    int64_t small[2] = { 7, 33 }, large[1] = { (1 << 20) + 3 };
    char label[160];
    for (size_t k = 0; k < sizeof act_cases / sizeof act_cases[0]; k++) {
        const struct act_case *ac = &act_cases[k];
        struct onnx_attr attrs[2];
        for (int a = 0; a < ac->n_attrs; a++)
            attrs[a] = a_float(ac->names[a], ac->values[a]);
        for (int t = 0; t < 4; t++)
            for (int big = 0; big < 2; big++) {
                int dt = reals[t];
                const struct tensor *in[1] = { rnd(dt, big ? 1 : 2, big ? large : small, ac->lo,
                                                   ac->hi) };
                snprintf(label, sizeof label, "%s %s%s", ac->op, dn(dt), big ? " large" : "");
                compare_real("", ac->op, ac->opset, attrs, ac->n_attrs, in, 1, label);
                testops_free_all();
            }
        /* the gradient kernels over (dy, X) */
        if (!ac->has_grad_kernel)
            continue;
        char grad[64];
        snprintf(grad, sizeof grad, "%sGrad", ac->op);
        for (int t = 0; t < 4; t++) {
            int dt = reals[t];
            const struct tensor *in[2] = { rnd(dt, 2, small, -2, 2),
                                           rnd(dt, 2, small, ac->lo, ac->hi) };
            snprintf(label, sizeof label, "%s %s", grad, dn(dt));
            compare_real("dtrexec", grad, 1, attrs, ac->n_attrs, in, 2, label);
            testops_free_all();
        }
    }
    /* Sign over the integers */
    static const int ints[] = { ONNX_DTYPE_INT8, ONNX_DTYPE_INT16, ONNX_DTYPE_INT32,
                                ONNX_DTYPE_INT64, ONNX_DTYPE_UINT8, ONNX_DTYPE_UINT16,
                                ONNX_DTYPE_UINT32, ONNX_DTYPE_UINT64 };
    for (int t = 0; t < 8; t++) {
        const struct tensor *in[1] = { rnd(ints[t], 2, small, t < 4 ? -3 : 0, 3) };
        snprintf(label, sizeof label, "Sign %s", dn(ints[t]));
        compare_simple("", "Sign", 13, NULL, 0, in, 1, label);
        testops_free_all();
    }
}
END_TEST

START_TEST(test_isnan_isinf)
{
    float v[8] = { 0, -1.5f, INFINITY, -INFINITY, NAN, 3e38f, -0.0f, 1e-40f };
    int64_t d[1] = { 8 };
    char label[128];
    for (int t = 0; t < 4; t++) {
        struct tensor *x = testops_tensor(reals[t], 1, d, NULL);
        for (int i = 0; i < 8; i++)
            switch (reals[t]) {
            case ONNX_DTYPE_FLOAT: ((float *)x->data)[i] = v[i]; break;
            case ONNX_DTYPE_DOUBLE: ((double *)x->data)[i] = v[i]; break;
            case ONNX_DTYPE_FLOAT16: ((uint16_t *)x->data)[i] = ew_f32_to_f16(v[i]); break;
            default: ((uint16_t *)x->data)[i] = ew_f32_to_bf16(v[i]); break;
            }
        const struct tensor *in[1] = { x };
        snprintf(label, sizeof label, "IsNaN %s", dn(reals[t]));
        compare_simple("", "IsNaN", 20, NULL, 0, in, 1, label);
        for (int neg = 0; neg < 2; neg++)
            for (int pos = 0; pos < 2; pos++) {
                struct onnx_attr a[2] = { a_int("detect_negative", neg),
                                          a_int("detect_positive", pos) };
                snprintf(label, sizeof label, "IsInf %s neg=%d pos=%d", dn(reals[t]), neg, pos);
                compare_simple("", "IsInf", 20, a, 2, in, 1, label);
            }
        testops_free_all();
    }
}
END_TEST

START_TEST(test_prelu_mod_logical)
{
    int64_t dx[4] = { 2, 3, 4, 5 }, dc[3] = { 3, 1, 1 }, dl[1] = { 5 };
    const struct { int rank; const int64_t *dims; } slopes[] = { { 3, dc }, { 1, dl }, { 0, NULL },
                                                                 { 4, dx } };
    static const int prelu_types[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_FLOAT16,
                                       ONNX_DTYPE_BFLOAT16, ONNX_DTYPE_INT32, ONNX_DTYPE_INT64,
                                       ONNX_DTYPE_UINT32, ONNX_DTYPE_UINT64 };
    char label[160];
    for (int t = 0; t < 8; t++)
        for (int s = 0; s < 4; s++) {
            int dt = prelu_types[t];
            const struct tensor *in[3] = { rnd(dt, 4, dx, t < 6 ? -50 : 0, 50),
                                           rnd(dt, slopes[s].rank, slopes[s].dims, -2, 2), NULL };
            snprintf(label, sizeof label, "PRelu %s slope #%d", dn(dt), s);
            compare_real("", "PRelu", 16, NULL, 0, in, 2, label);
            if (t < 4)
                for (int wrt = 0; wrt < 2; wrt++) {
                    const struct tensor *gin[3] = { rnd(dt, 4, dx, -2, 2), in[0], in[1] };
                    struct onnx_attr a = a_int("wrt", wrt);
                    snprintf(label, sizeof label, "PReluGrad wrt=%d %s slope #%d", wrt, dn(dt), s);
                    compare_real("dtrexec", "PReluGrad", 1, &a, 1, gin, 3, label);
                }
            testops_free_all();
        }
    /* SwiGLU: two inputs of one shape, default and explicit alpha */
    for (int t = 0; t < 4; t++)
        for (int al = 0; al < 2; al++) {
            int dt = prelu_types[t];
            const struct tensor *in[2] = { rnd(dt, 4, dx, -12, 12), rnd(dt, 4, dx, -3, 3) };
            struct onnx_attr a = a_float("alpha", 1.7f);
            snprintf(label, sizeof label, "SwiGLU %s alpha=%s", dn(dt), al ? "1.7" : "default");
            compare_real("", "SwiGLU", 28, &a, al, in, 2, label);
            testops_free_all();
        }
    /* Mod: both modes over every type, broadcasting both ways, zero divisors included */
    int64_t da[3] = { 3, 1, 5 }, db[2] = { 4, 5 };
    static const int mod_types[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_FLOAT16,
                                     ONNX_DTYPE_BFLOAT16, ONNX_DTYPE_INT8, ONNX_DTYPE_INT16,
                                     ONNX_DTYPE_INT32, ONNX_DTYPE_INT64, ONNX_DTYPE_UINT8,
                                     ONNX_DTYPE_UINT16, ONNX_DTYPE_UINT32, ONNX_DTYPE_UINT64 };
    for (int t = 0; t < 12; t++)
        for (int f = 0; f < 2; f++) {
            int dt = mod_types[t], sgn = t < 8;
            const struct tensor *in[2] = { rnd(dt, 3, da, sgn ? -40 : 0, 40),
                                           rnd(dt, 2, db, sgn ? -6 : 0, 6) };
            struct onnx_attr a = a_int("fmod", f);
            snprintf(label, sizeof label, "Mod fmod=%d %s", f, dn(dt));
            compare_real("", "Mod", 13, &a, 1, in, 2, label);
            if (t < 4) {
                const struct tensor *gin[3] = { rnd(dt, 3, (int64_t[]){ 3, 4, 5 }, -2, 2), in[0],
                                                in[1] };
                snprintf(label, sizeof label, "ModGrad fmod=%d %s", f, dn(dt));
                compare_real("dtrexec", "ModGrad", 1, &a, 1, gin, 3, label);
            }
            testops_free_all();
        }
    /* And, Or, Xor: numpy broadcasting (7) and the legacy form (1) */
    static const char *logic[] = { "And", "Or", "Xor" };
    int64_t l4[4] = { 2, 3, 4, 5 }, l2[2] = { 3, 4 }, lb[2] = { 4, 1 };
    for (int o = 0; o < 3; o++) {
        const struct tensor *in[2] = { rnd(ONNX_DTYPE_BOOL, 4, l4, 0, 1),
                                       rnd(ONNX_DTYPE_BOOL, 2, lb, 0, 1) };
        snprintf(label, sizeof label, "%s broadcast", logic[o]);
        compare_simple("", logic[o], 7, NULL, 0, in, 2, label);
        const struct tensor *leg[2] = { in[0], rnd(ONNX_DTYPE_BOOL, 2, l2, 0, 1) };
        struct onnx_attr a[2] = { a_int("broadcast", 1), a_int("axis", 1) };
        snprintf(label, sizeof label, "%s opset 1 axis 1", logic[o]);
        compare_simple("", logic[o], 1, a, 2, leg, 2, label);
        testops_free_all();
    }
}
END_TEST

/* ---- quantization (ops/quant_linear.c, ops/cuda/quant.c) ----------------------------------- */

static void compare_exact(const char *op, int opset, struct onnx_attr *attrs, int n_attrs,
                          const struct tensor **in, int n_in, int n_out, const char *label)
{
    struct run r = { .domain = "", .op = op, .opset = opset, .attrs = attrs, .n_attrs = n_attrs,
                     .in = in, .n_in = n_in, .n_out = n_out, .rtol = 0, .atol = 0, .label = label };
    ck_assert_msg(compare(&r) == 0, "%s failed on both backends", label);
}

START_TEST(test_quant)
{
    static const int qt[3] = { ONNX_DTYPE_UINT8, ONNX_DTYPE_INT8, ONNX_DTYPE_INT16 };
    int64_t xd[3] = { 4, 9, 33 }, one[1] = { 1 }, ax[1] = { 9 }, bd[3] = { 4, 9, 5 };
    char label[128];
    for (int q = 0; q < 3; q++) {
        struct onnx_attr a1 = { .name = "axis", .type = ONNX_ATTR_INT, .i = 1 };
        struct onnx_attr ab[2] = { { .name = "axis", .type = ONNX_ATTR_INT, .i = -1 },
                                   { .name = "block_size", .type = ONNX_ATTR_INT, .i = 7 } };
        const struct tensor *x = rnd(ONNX_DTYPE_FLOAT, 3, xd, -300, 300), *xq = rnd_for(qt[q], 3, xd);
        const struct tensor *sc[3] = { rnd(ONNX_DTYPE_FLOAT, 1, one, 0.5, 2), rnd(ONNX_DTYPE_FLOAT, 1, ax, 0.5, 2),
                                       rnd(ONNX_DTYPE_FLOAT, 3, bd, 0.5, 2) };
        const struct tensor *zp[3] = { rnd_for(qt[q], 1, one), rnd_for(qt[q], 1, ax), rnd_for(qt[q], 3, bd) };
        for (int m = 0; m < 3; m++) {
            struct onnx_attr *at = m == 0 ? NULL : m == 1 ? &a1 : ab;
            int na = m == 0 ? 0 : m == 1 ? 1 : 2;
            const struct tensor *qin[3] = { x, sc[m], zp[m] }, *din[3] = { xq, sc[m], zp[m] };
            snprintf(label, sizeof label, "QuantizeLinear %s mode %d", dn(qt[q]), m);
            compare_exact("QuantizeLinear", 21, at, na, qin, 3, 1, label);
            snprintf(label, sizeof label, "DequantizeLinear %s mode %d", dn(qt[q]), m);
            compare_exact("DequantizeLinear", 21, at, na, din, 3, 1, label);
        }
        testops_free_all();
    }
    /* more elements than one block folds */
    int64_t big[2] = { 700, 301 };
    const struct tensor *xb = rnd(ONNX_DTYPE_FLOAT, 2, big, -5, 3);
    compare_exact("DynamicQuantizeLinear", 11, NULL, 0, &xb, 1, 3, "DynamicQuantizeLinear");
    testops_free_all();
}
END_TEST

/* Two cases: "broadcast" holds the ops that run through the one
 * broadcasting kernel (tests/cuda_emu/run_elem.sh runs it on the host),
 * "other" the reductions, losses, dropout and optimizers; "reduce_ext"
 * and "quant" are their own. */
static Suite *cuda_elem_suite(void)
{
    Suite *s = suite_create("cuda_elem");
    TCase *tc = tcase_create("broadcast");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_binary_arith);
    tcase_add_test(tc, test_variadic_and_nan);
    tcase_add_test(tc, test_pow);
    tcase_add_test(tc, test_compare_where);
    tcase_add_test(tc, test_unary);
    tcase_add_test(tc, test_clip);
    tcase_add_test(tc, test_cast);
    tcase_add_test(tc, test_unary_grads);
    tcase_add_test(tc, test_div_pow_grads);
    tcase_add_test(tc, test_activations);
    tcase_add_test(tc, test_isnan_isinf);
    tcase_add_test(tc, test_prelu_mod_logical);
    suite_add_tcase(s, tc);
    TCase *other = tcase_create("other");
    tcase_set_timeout(other, 600);
    tcase_add_test(other, test_reduce_axes);
    tcase_add_test(other, test_reduce_layouts);
    tcase_add_test(other, test_select_maxmin_grads);
    tcase_add_test(other, test_dropout);
    tcase_add_test(other, test_losses);
    tcase_add_test(other, test_optimizers);
    suite_add_tcase(s, other);
    /* its own case, so the host emulator can run it alone (CK_RUN_CASE) */
    TCase *rx = tcase_create("reduce_ext");
    tcase_set_timeout(rx, 600);
    tcase_add_test(rx, test_reduce_ext);
    tcase_add_test(rx, test_reduce_ext_grad);
    suite_add_tcase(s, rx);
    TCase *quant = tcase_create("quant");
    tcase_set_timeout(quant, 600);
    tcase_add_test(quant, test_quant);
    suite_add_tcase(s, quant);
    return s;
}

int main(void)
{
    char why[512] = "";
    dev = testcuda_open(why, sizeof why);
    testcuda_dev = dev;
    if (!dev) {
        printf("test_cuda_elem: SKIPPED, no usable CUDA device: %s\n", why);
        return 0;
    }
    int failed = testcuda_run(cuda_elem_suite());
    testcuda_close(dev);
    return failed ? 1 : 0;
}

