/* tests/test_cuda_layout.c — the CUDA kernels of the layout family
 * (ops/cuda/layout*.c, recurrent.c) against the CPU kernels on the same
 * random inputs: Transpose, Concat, Split, Slice, SliceGrad, Gather,
 * GatherGrad, GatherElements, GatherElementsGrad, Expand, Tile, Range,
 * Shape, Size, Constant, ConstantOfShape, Pad (every mode), PadGrad, Resize
 * (nearest and linear, every coordinate mode), ResizeGrad, LSTM, GRU, RNN
 * and their gradients, GatherND, GatherNDGrad, ScatterND, ScatterElements,
 * Scatter and ScatterGrad under every reduction, ArgMax/ArgMin, TopK,
 * OneHot, CumSum, Trilu and Einsum (float and double) — over dtypes of
 * every element size, negative steps and indices, duplicate destinations,
 * ties, empty pieces and the axes the kernels special-case.
 *
 * Movement kernels must give the CPU's bytes exactly; the gradient scatters
 * add in the CPU's order, so they match to the last bit too (a tolerance of
 * 1e-6 covers a CPU build that fuses multiply-adds); the recurrent layers
 * and Einsum differ by cuBLAS's summation order. Every CUDA call runs twice and must
 * give the same bits (DTR's recomputation) and give back all its scratch.
 * Inputs an op reads on the host (op_def.host_inputs) stay host tensors, as
 * the runtime passes them. Without a CUDA build or device the suite says
 * why and passes. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "testcuda.h"
#include "testops.h"


static const struct backend *dev;
static uint32_t rng = 20250117u;

/* ---- attributes ---------------------------------------------------------------- */

static struct onnx_attr a_ints(const char *name, int n, const int64_t *v)
{
    int64_t *copy = testops_alloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    memcpy(copy, v, sizeof(int64_t) * (size_t)n);
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INTS, .ints = copy, .n = n };
}

static struct onnx_attr a_strs(const char *name, int n, const char *const *v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_STRINGS, .strings = (char **)v, .n = n };
}

static struct onnx_attr a_tensor(const char *name, struct onnx_tensor *t)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_TENSOR, .t = t };
}

#define NARGS(...) ((int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
#define INTS(...) NARGS(__VA_ARGS__), ((int64_t[]){ __VA_ARGS__ })

/* ---- tensors ---------------------------------------------------------------------- */

/* Random elements of any numeric dtype: floats in [-2, 2), integers in
 * [-50, 50) (unsigned: [0, 100)), bools 0/1, raw bytes for the rest. */
static struct tensor *rnd_t(int dtype, int rank, const int64_t *dims)
{
    struct tensor *t = testops_tensor(dtype, rank, dims, NULL);
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        float f = testops_frand(&rng);
        int64_t v = (int64_t)floorf(f * 25.0f);
        switch (dtype) {
        case ONNX_DTYPE_FLOAT: ((float *)t->data)[i] = f; break;
        case ONNX_DTYPE_DOUBLE: ((double *)t->data)[i] = (double)f * 1.0000001; break;
        case ONNX_DTYPE_INT64: ((int64_t *)t->data)[i] = v; break;
        case ONNX_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
        case ONNX_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
        case ONNX_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
        case ONNX_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)(v + 50); break;
        case ONNX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = f > 0; break;
        default: {
            size_t es = onnx_dtype_size(dtype);
            for (size_t b = 0; b < es; b++)
                ((uint8_t *)t->data)[(size_t)i * es + b] = (uint8_t)(testops_frand(&rng) * 60.0f + 128.0f);
        }
        }
    }
    return t;
}

#define RND(dt, ...) rnd_t(dt, NARGS(__VA_ARGS__), (int64_t[]){ __VA_ARGS__ })
#define F32(...) RND(ONNX_DTYPE_FLOAT, __VA_ARGS__)

static struct tensor *vec_i64(int n, const int64_t *v)
{
    int64_t d = n;
    return testops_tensor(ONNX_DTYPE_INT64, 1, &d, v);
}

#define I64(...) vec_i64(INTS(__VA_ARGS__))

static struct tensor *scalar_of(int dtype, double v)
{
    struct tensor *t = testops_tensor(dtype, 0, NULL, NULL);
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: *(float *)t->data = (float)v; break;
    case ONNX_DTYPE_DOUBLE: *(double *)t->data = v; break;
    case ONNX_DTYPE_INT64: *(int64_t *)t->data = (int64_t)v; break;
    case ONNX_DTYPE_INT32: *(int32_t *)t->data = (int32_t)v; break;
    case ONNX_DTYPE_INT16: *(int16_t *)t->data = (int16_t)v; break;
    }
    return t;
}

/* Indices in [-d, d) of an int dtype. */
static struct tensor *indices(int dtype, int64_t d, int rank, const int64_t *dims)
{
    struct tensor *t = testops_tensor(dtype, rank, dims, NULL);
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        int64_t v = (int64_t)floor((testops_frand(&rng) + 2.0) / 4.0 * 2.0 * (double)d) - d;
        v = v < -d ? -d : v >= d ? d - 1 : v;
        if (dtype == ONNX_DTYPE_INT64)
            ((int64_t *)t->data)[i] = v;
        else
            ((int32_t *)t->data)[i] = (int32_t)v;
    }
    return t;
}

#define IDX(dt, d, ...) indices(dt, d, NARGS(__VA_ARGS__), (int64_t[]){ __VA_ARGS__ })

/* ---- device memory ---------------------------------------------------------------- */


/* ---- one call on both backends ---------------------------------------------------- */

#define MAX_IO 12
#define MAX_ATTRS 12

struct run {
    const char *domain, *op;
    int opset;
    struct onnx_attr attrs[MAX_ATTRS];
    int n_attrs;
    int n_in;
    const struct tensor *in[MAX_IO];   /* host tensors; NULL: omitted */
    int n_out;
    uint32_t omit_out;                 /* bit i: output i not requested */
    double tol;                        /* 0: the CPU's bytes exactly */
    const char *what;                  /* the case, for messages */
};

static char err_buf[1024];

static struct op_env env_of(int device)
{
    return (struct op_env){
        .scratch_alloc = device ? testcuda_scratch_alloc : testops_scratch_alloc,
        .scratch_free = device ? testcuda_scratch_free : testops_scratch_free,
        .backend = device ? dev : &backend_cpu, .threads = 1, .training = 1,
        .err = err_buf, .err_size = sizeof err_buf,
    };
}

static const struct op_def *find_def(const struct run *r, int *version, void **params)
{
    return testcuda_find_def(r->domain, r->op, r->opset, NULL, r->n_in, r->n_out, r->attrs, r->n_attrs, r->what,
                             version, params, err_buf, sizeof err_buf);
}

static void compare(const struct run *r, int k, const struct tensor *want, const void *got)
{
    if (r->tol == 0) {
        if (!memcmp(want->data, got, tensor_size_bytes(want)))
            return;
        size_t es = onnx_dtype_size(want->dtype);
        for (int64_t i = 0; i < tensor_numel(want); i++)
            ck_assert_msg(!memcmp((const char *)want->data + i * es, (const char *)got + i * es, es),
                          "%s (%s) output %d: element %lld differs from the CPU's (%s)", r->op, r->what, k,
                          (long long)i, onnx_dtype_name(want->dtype));
    }
    struct tensor g = *want;
    g.data = (void *)got;
    double scale = 1.0;
    for (int64_t i = 0; i < tensor_numel(want); i++)
        scale = fmax(scale, fabs(tensor_get_double(want, i)));
    for (int64_t i = 0; i < tensor_numel(want); i++) {
        double a = tensor_get_double(&g, i), b = tensor_get_double(want, i);
        ck_assert_msg(fabs(a - b) <= r->tol * scale || (isnan(a) && isnan(b)),
                      "%s (%s) output %d: expected %.9g (CPU), got %.9g (CUDA) at index %lld", r->op, r->what,
                      k, b, a, (long long)i);
    }
}

/* Infers on the CPU call and allocates its outputs; 0 or the infer status. */
static int cpu_call(struct run *r, const struct op_def *def, int version, void *params, struct op_env *env,
                    struct tensor **cout, struct op_call *cc)
{
    for (int i = 0; i < r->n_out; i++)
        cout[i] = r->omit_out >> i & 1 ? NULL : testops_alloc(sizeof(struct tensor));
    *cc = (struct op_call){ .def = def, .version = version, .params = params, .node_name = "n0",
                            .n_in = r->n_in, .in = r->in, .n_out = r->n_out, .out = cout, .env = env };
    if (def->infer(cc))
        return -1;
    for (int i = 0; i < r->n_out; i++)
        if (cout[i])
            cout[i]->data = testops_alloc(tensor_size_bytes(cout[i]));
    return 0;
}

/* The inputs as the runtime hands them to a CUDA kernel. */
static void dev_inputs(const struct run *r, const struct op_def *def, struct tensor **din)
{
    for (int i = 0; i < r->n_in; i++)
        din[i] = def->host_inputs >> i & 1 ? (struct tensor *)r->in[i] : testcuda_to_dev(r->in[i]);
}

static void run_both(struct run *r)
{
    int version;
    void *params;
    const struct op_def *def = find_def(r, &version, &params);
    op_kernel_fn gpu = testcuda_kernel(r->domain, r->op);
    ck_assert_msg(gpu != NULL, "no CUDA kernel for %s", r->op);
    struct tensor *din[MAX_IO] = { 0 };
    dev_inputs(r, def, din);

    struct op_env cenv = env_of(0);
    struct tensor *cout[MAX_IO] = { 0 };
    struct op_call cc;
    ck_assert_msg(!cpu_call(r, def, version, params, &cenv, cout, &cc), "%s (%s): infer: %s", r->op, r->what,
                  err_buf);
    ck_assert_msg(!def->kernel[BACKEND_CPU](&cc), "%s (%s): CPU kernel: %s", r->op, r->what, err_buf);

    struct op_env genv = env_of(1);
    struct tensor *gout[2][MAX_IO] = { { 0 } };
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < r->n_out; i++) {
            if (!cout[i])
                continue;
            gout[pass][i] = testops_alloc(sizeof(struct tensor));
            *gout[pass][i] = *cout[i];
            size_t bytes = tensor_size_bytes(cout[i]);
            gout[pass][i]->data = testcuda_alloc(bytes);
            void *poison = testops_alloc(bytes);
            memset(poison, 0x7f, bytes);       /* an unwritten output shows */
            if (bytes)
                ck_assert(!dev->copy_to_device(dev->ctx, gout[pass][i]->data, poison, bytes));
        }
        genv.recomputing = pass == 1;
        testcuda_scratch_live = 0;
        struct op_call gc = cc;
        gc.env = &genv;
        gc.in = (const struct tensor *const *)din;
        gc.out = gout[pass];
        ck_assert_msg(!gpu(&gc), "%s (%s): CUDA kernel (pass %d): %s", r->op, r->what, pass, err_buf);
        ck_assert(!dev->synchronize(dev->ctx));
        ck_assert_msg(testcuda_scratch_live == 0, "%s (%s): %d device scratch blocks not given back", r->op, r->what,
                      testcuda_scratch_live);
    }
    for (int i = 0; i < r->n_out; i++) {
        if (!cout[i])
            continue;
        void *first = testcuda_to_host(gout[0][i]), *again = testcuda_to_host(gout[1][i]);
        compare(r, i, cout[i], first);
        ck_assert_msg(!memcmp(first, again, tensor_size_bytes(cout[i])),
                      "%s (%s) output %d: the recomputation differs in its bits", r->op, r->what, i);
    }
    if (params)
        (def->params_free ? def->params_free : free)(params);
    testcuda_free_all();
}

/* Both kernels must refuse the call with the same message. */
static void fail_both(struct run *r)
{
    int version;
    void *params;
    const struct op_def *def = find_def(r, &version, &params);
    op_kernel_fn gpu = testcuda_kernel(r->domain, r->op);
    struct tensor *din[MAX_IO] = { 0 };
    dev_inputs(r, def, din);
    struct op_env cenv = env_of(0);
    struct tensor *cout[MAX_IO] = { 0 };
    struct op_call cc;
    ck_assert(!cpu_call(r, def, version, params, &cenv, cout, &cc));
    ck_assert_msg(def->kernel[BACKEND_CPU](&cc) != 0, "%s (%s): the CPU kernel accepted it", r->op, r->what);
    char want[sizeof err_buf];
    strcpy(want, err_buf);
    struct op_env genv = env_of(1);
    struct tensor *gout[MAX_IO] = { 0 };
    for (int i = 0; i < r->n_out; i++)
        if (cout[i]) {
            gout[i] = testops_alloc(sizeof(struct tensor));
            *gout[i] = *cout[i];
            gout[i]->data = testcuda_alloc(tensor_size_bytes(cout[i]));
        }
    struct op_call gc = cc;
    gc.env = &genv;
    gc.in = (const struct tensor *const *)din;
    gc.out = gout;
    testcuda_scratch_live = 0;
    err_buf[0] = 0;
    ck_assert_msg(gpu(&gc) != 0, "%s (%s): the CUDA kernel accepted it", r->op, r->what);
    ck_assert_msg(!strcmp(want, err_buf), "%s (%s): CPU says '%s', CUDA says '%s'", r->op, r->what, want, err_buf);
    ck_assert_int_eq(testcuda_scratch_live, 0);
    if (params)
        (def->params_free ? def->params_free : free)(params);
    testcuda_free_all();
}

#define RUN(...) run_both(&(struct run){ __VA_ARGS__ })

/* ---- the cases ------------------------------------------------------------------------ */

START_TEST(test_table)
{
    static const char *const ops[][2] = {
        { "", "Transpose" }, { "", "Concat" }, { "", "Split" }, { "", "Slice" }, { "dtrexec", "SliceGrad" },
        { "", "Gather" }, { "dtrexec", "GatherGrad" }, { "", "GatherElements" },
        { "dtrexec", "GatherElementsGrad" }, { "", "Expand" }, { "", "Tile" }, { "", "Range" }, { "", "Shape" },
        { "", "Size" }, { "", "Constant" }, { "", "ConstantOfShape" }, { "", "Pad" }, { "dtrexec", "PadGrad" },
        { "", "Resize" }, { "dtrexec", "ResizeGrad" }, { "", "LSTM" }, { "", "GRU" }, { "", "RNN" },
        { "dtrexec", "LSTMGrad" }, { "dtrexec", "GRUGrad" }, { "dtrexec", "RNNGrad" },
        { "", "GatherND" }, { "dtrexec", "GatherNDGrad" }, { "", "ScatterND" }, { "", "ScatterElements" },
        { "", "Scatter" }, { "dtrexec", "ScatterGrad" }, { "", "ArgMax" }, { "", "ArgMin" }, { "", "TopK" },
        { "", "OneHot" }, { "", "CumSum" }, { "", "Trilu" }, { "", "Einsum" },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        ck_assert_msg(testcuda_kernel(ops[i][0], ops[i][1]) != NULL, "no CUDA kernel for %s", ops[i][1]);
}
END_TEST

START_TEST(test_transpose)
{
    static const int dtypes[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_UINT8, ONNX_DTYPE_INT16, ONNX_DTYPE_DOUBLE,
                                  ONNX_DTYPE_COMPLEX128, ONNX_DTYPE_BOOL };
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        int dt = dtypes[i];
        RUN(.op = "Transpose", .opset = 13, .what = "perm 0,2,3,1", .n_in = 1, .in = { RND(dt, 2, 3, 4, 5) },
            .n_out = 1, .attrs = { a_ints("perm", INTS(0, 2, 3, 1)) }, .n_attrs = 1);
        RUN(.op = "Transpose", .opset = 13, .what = "default reverse", .n_in = 1, .in = { RND(dt, 3, 1, 4, 7) },
            .n_out = 1);
        /* the tiled path: unit-stride source on the next-to-last axis, odd sizes */
        RUN(.op = "Transpose", .opset = 21, .what = "tiled 0,2,1", .n_in = 1, .in = { RND(dt, 3, 70, 45) },
            .n_out = 1, .attrs = { a_ints("perm", INTS(0, 2, 1)) }, .n_attrs = 1);
        RUN(.op = "Transpose", .opset = 13, .what = "batch of tiles", .n_in = 1, .in = { RND(dt, 33, 2, 65) },
            .n_out = 1, .attrs = { a_ints("perm", INTS(2, 1, 0)) }, .n_attrs = 1);
        RUN(.op = "Transpose", .opset = 13, .what = "empty", .n_in = 1, .in = { RND(dt, 3, 0, 2) }, .n_out = 1,
            .attrs = { a_ints("perm", INTS(1, 2, 0)) }, .n_attrs = 1);
    }
}
END_TEST

START_TEST(test_concat_split)
{
    RUN(.op = "Concat", .opset = 13, .what = "axis 1", .n_in = 3,
        .in = { F32(2, 3, 4), F32(2, 1, 4), F32(2, 5, 4) }, .n_out = 1, .attrs = { a_int("axis", 1) },
        .n_attrs = 1);
    RUN(.op = "Concat", .opset = 13, .what = "axis -1, an empty piece, int8", .n_in = 3,
        .in = { RND(ONNX_DTYPE_INT8, 3, 5), RND(ONNX_DTYPE_INT8, 3, 0), RND(ONNX_DTYPE_INT8, 3, 3) },
        .n_out = 1, .attrs = { a_int("axis", -1) }, .n_attrs = 1);
    RUN(.op = "Concat", .opset = 11, .what = "axis 0, int64 (one copy each)", .n_in = 2,
        .in = { RND(ONNX_DTYPE_INT64, 2, 3), RND(ONNX_DTYPE_INT64, 4, 3) }, .n_out = 1,
        .attrs = { a_int("axis", 0) }, .n_attrs = 1);
    RUN(.op = "Concat", .opset = 13, .what = "16-byte rows", .n_in = 2,
        .in = { F32(5, 8), F32(5, 4) }, .n_out = 1, .attrs = { a_int("axis", 1) }, .n_attrs = 1);
    RUN(.op = "Split", .opset = 13, .what = "split input", .n_in = 2, .in = { F32(3, 6, 2), I64(2, 3, 1) },
        .n_out = 3, .attrs = { a_int("axis", 1) }, .n_attrs = 1);
    RUN(.op = "Split", .opset = 18, .what = "num_outputs, uneven, uint16", .n_in = 1,
        .in = { RND(ONNX_DTYPE_UINT16, 7, 3) }, .n_out = 3, .attrs = { a_int("num_outputs", 3) }, .n_attrs = 1);
    RUN(.op = "Split", .opset = 11, .what = "equal parts, an output omitted", .n_in = 1,
        .in = { RND(ONNX_DTYPE_DOUBLE, 2, 4, 6) }, .n_out = 3, .omit_out = 2u, .attrs = { a_int("axis", -1) },
        .n_attrs = 1);
}
END_TEST

START_TEST(test_slice)
{
    RUN(.op = "Slice", .opset = 13, .what = "negative step, clamped ends", .n_in = 5,
        .in = { F32(5, 6, 7), I64(4, -1), I64(-100, 0), I64(0, 2), I64(-2, -3) }, .n_out = 1);
    RUN(.op = "Slice", .opset = 13, .what = "contiguous rows, int32", .n_in = 4,
        .in = { RND(ONNX_DTYPE_INT32, 6, 8, 4), I64(1, 0), I64(5, INT64_MAX), I64(0, 2) }, .n_out = 1);
    RUN(.op = "Slice", .opset = 10, .what = "steps of 3, bool", .n_in = 5,
        .in = { RND(ONNX_DTYPE_BOOL, 10, 11), I64(1, 0), I64(10, 11), I64(0, 1), I64(3, 2) }, .n_out = 1);
    RUN(.op = "Slice", .opset = 1, .what = "attributes", .n_in = 1, .in = { F32(4, 5) }, .n_out = 1,
        .attrs = { a_ints("starts", INTS(1)), a_ints("ends", INTS(-1)), a_ints("axes", INTS(1)) }, .n_attrs = 3);
    RUN(.op = "Slice", .opset = 13, .what = "empty", .n_in = 3, .in = { F32(4, 5), I64(3), I64(1) }, .n_out = 1);
    RUN(.domain = "dtrexec", .op = "SliceGrad", .opset = 1, .what = "negative steps", .n_in = 1,
        .in = { F32(2, 3, 4) }, .n_out = 1,
        .attrs = { a_ints("shape", INTS(4, 6, 9)), a_ints("starts", INTS(3, 0, 8)), a_ints("steps", INTS(-1, 2, -2)) },
        .n_attrs = 3);
    RUN(.domain = "dtrexec", .op = "SliceGrad", .opset = 1, .what = "rows, double", .n_in = 1,
        .in = { RND(ONNX_DTYPE_DOUBLE, 3, 4) }, .n_out = 1,
        .attrs = { a_ints("shape", INTS(5, 4)), a_ints("starts", INTS(1, 0)), a_ints("steps", INTS(1, 1)) },
        .n_attrs = 3);
}
END_TEST

START_TEST(test_gather)
{
    RUN(.op = "Gather", .opset = 13, .what = "axis 1, negative int64 indices", .n_in = 2,
        .in = { F32(3, 7, 5), IDX(ONNX_DTYPE_INT64, 7, 2, 4) }, .n_out = 1, .attrs = { a_int("axis", 1) },
        .n_attrs = 1);
    RUN(.op = "Gather", .opset = 13, .what = "embedding rows, int32 indices", .n_in = 2,
        .in = { F32(50, 16), IDX(ONNX_DTYPE_INT32, 50, 3, 9) }, .n_out = 1);
    RUN(.op = "Gather", .opset = 11, .what = "last axis, uint8, scalar index", .n_in = 2,
        .in = { RND(ONNX_DTYPE_UINT8, 4, 6), scalar_of(ONNX_DTYPE_INT64, -2) }, .n_out = 1,
        .attrs = { a_int("axis", -1) }, .n_attrs = 1);
    RUN(.op = "GatherElements", .opset = 13, .what = "axis 0", .n_in = 2,
        .in = { F32(4, 3), IDX(ONNX_DTYPE_INT64, 4, 6, 3) }, .n_out = 1);
    RUN(.op = "GatherElements", .opset = 13, .what = "axis 2, smaller indices, int16", .n_in = 2,
        .in = { RND(ONNX_DTYPE_INT16, 3, 4, 5), IDX(ONNX_DTYPE_INT32, 5, 2, 3, 7) }, .n_out = 1,
        .attrs = { a_int("axis", 2) }, .n_attrs = 1);
    /* repeated indices: the scatter-adds accumulate, in index order */
    RUN(.domain = "dtrexec", .op = "GatherGrad", .opset = 1, .what = "axis 1, repeats", .tol = 1e-6, .n_in = 2,
        .in = { F32(3, 40, 5), IDX(ONNX_DTYPE_INT64, 6, 40) }, .n_out = 1,
        .attrs = { a_int("axis", 1), a_ints("shape", INTS(3, 6, 5)) }, .n_attrs = 2);
    RUN(.domain = "dtrexec", .op = "GatherGrad", .opset = 1, .what = "embedding, double, 2-D indices",
        .tol = 1e-12, .n_in = 2, .in = { RND(ONNX_DTYPE_DOUBLE, 7, 9, 4), IDX(ONNX_DTYPE_INT32, 11, 7, 9) },
        .n_out = 1, .attrs = { a_int("axis", 0), a_ints("shape", INTS(11, 4)) }, .n_attrs = 2);
    RUN(.domain = "dtrexec", .op = "GatherElementsGrad", .opset = 1, .what = "axis 1, repeats", .tol = 1e-6,
        .n_in = 2, .in = { F32(4, 30, 3), IDX(ONNX_DTYPE_INT64, 5, 4, 30, 3) }, .n_out = 1,
        .attrs = { a_int("axis", 1), a_ints("shape", INTS(4, 5, 3)) }, .n_attrs = 2);
    RUN(.domain = "dtrexec", .op = "GatherElementsGrad", .opset = 1, .what = "indices smaller than shape",
        .tol = 1e-6, .n_in = 2, .in = { F32(2, 3), IDX(ONNX_DTYPE_INT32, 4, 2, 3) }, .n_out = 1,
        .attrs = { a_int("axis", 0), a_ints("shape", INTS(4, 5)) }, .n_attrs = 2);
}
END_TEST

START_TEST(test_gather_errors)
{
    struct tensor *idx = I64(1, 7, -2);
    fail_both(&(struct run){ .op = "Gather", .opset = 13, .what = "index 7 of 5", .n_in = 2,
                             .in = { F32(5, 2), idx }, .n_out = 1 });
    fail_both(&(struct run){ .op = "GatherElements", .opset = 13, .what = "index -6 of 5", .n_in = 2,
                             .in = { F32(5), vec_i64(2, (int64_t[]){ 1, -6 }) }, .n_out = 1 });
    fail_both(&(struct run){ .domain = "dtrexec", .op = "GatherGrad", .opset = 1, .what = "index 7 of 5",
                             .n_in = 2, .in = { F32(3, 2), idx }, .n_out = 1,
                             .attrs = { a_int("axis", 0), a_ints("shape", INTS(5, 2)) }, .n_attrs = 2 });
}
END_TEST

START_TEST(test_expand_tile)
{
    RUN(.op = "Expand", .opset = 13, .what = "both directions", .n_in = 2, .in = { F32(3, 1, 4), I64(2, 1, 5, 1) },
        .n_out = 1);
    RUN(.op = "Expand", .opset = 13, .what = "scalar, int64", .n_in = 2,
        .in = { scalar_of(ONNX_DTYPE_INT64, 42), I64(3, 4) }, .n_out = 1);
    RUN(.op = "Tile", .opset = 13, .what = "2-D", .n_in = 2, .in = { F32(2, 3), I64(2, 3) }, .n_out = 1);
    RUN(.op = "Tile", .opset = 13, .what = "3-D uint16", .n_in = 2,
        .in = { RND(ONNX_DTYPE_UINT16, 2, 1, 3), I64(1, 3, 2) }, .n_out = 1);
    RUN(.op = "Tile", .opset = 13, .what = "zero repeats", .n_in = 2, .in = { F32(2, 3), I64(0, 2) }, .n_out = 1);
}
END_TEST

START_TEST(test_range_shape_constant)
{
    RUN(.op = "Range", .opset = 11, .what = "float", .n_in = 3,
        .in = { scalar_of(ONNX_DTYPE_FLOAT, -1.5), scalar_of(ONNX_DTYPE_FLOAT, 7.25), scalar_of(ONNX_DTYPE_FLOAT, 0.3) },
        .n_out = 1);
    RUN(.op = "Range", .opset = 11, .what = "double", .n_in = 3,
        .in = { scalar_of(ONNX_DTYPE_DOUBLE, 0.1), scalar_of(ONNX_DTYPE_DOUBLE, -3), scalar_of(ONNX_DTYPE_DOUBLE, -0.07) },
        .n_out = 1);
    static const int ints[] = { ONNX_DTYPE_INT64, ONNX_DTYPE_INT32, ONNX_DTYPE_INT16 };
    for (int i = 0; i < 3; i++)
        RUN(.op = "Range", .opset = 11, .what = "integers, negative delta", .n_in = 3,
            .in = { scalar_of(ints[i], 100), scalar_of(ints[i], -17), scalar_of(ints[i], -3) }, .n_out = 1);
    RUN(.op = "Shape", .opset = 13, .what = "all dims", .n_in = 1, .in = { F32(2, 3, 4, 5) }, .n_out = 1);
    RUN(.op = "Shape", .opset = 15, .what = "start -3, end -1", .n_in = 1, .in = { F32(2, 3, 4, 5) }, .n_out = 1,
        .attrs = { a_int("start", -3), a_int("end", -1) }, .n_attrs = 2);
    RUN(.op = "Shape", .opset = 15, .what = "scalar", .n_in = 1, .in = { scalar_of(ONNX_DTYPE_FLOAT, 1) },
        .n_out = 1);
    RUN(.op = "Size", .opset = 13, .what = "4-D", .n_in = 1, .in = { F32(2, 3, 4, 5) }, .n_out = 1);

    static int32_t vals[6] = { 1, -2, 3, -4, 5, -6 };
    struct onnx_tensor t = { .dtype = ONNX_DTYPE_INT32, .rank = 2, .dims = { 2, 3 }, .data = vals,
                             .size_bytes = sizeof vals };
    RUN(.op = "Constant", .opset = 13, .what = "int32 tensor", .n_out = 1, .attrs = { a_tensor("value", &t) },
        .n_attrs = 1);
    RUN(.op = "Constant", .opset = 13, .what = "value_floats", .n_out = 1,
        .attrs = { { .name = "value_floats", .type = ONNX_ATTR_FLOATS, .n = 3, .floats = (float[]){ 1, 2.5f, -3 } } },
        .n_attrs = 1);
    static int16_t seven = 7;
    struct onnx_tensor one = { .dtype = ONNX_DTYPE_INT16, .rank = 1, .dims = { 1 }, .data = &seven,
                               .size_bytes = sizeof seven };
    RUN(.op = "ConstantOfShape", .opset = 20, .what = "int16 7", .n_in = 1, .in = { I64(3, 5, 7) }, .n_out = 1,
        .attrs = { a_tensor("value", &one) }, .n_attrs = 1);
    RUN(.op = "ConstantOfShape", .opset = 20, .what = "default zeros", .n_in = 1, .in = { I64(4, 9) }, .n_out = 1);
}
END_TEST

START_TEST(test_pad)
{
    static const char *const modes[] = { "constant", "reflect", "edge", "wrap" };
    for (int m = 0; m < 4; m++) {
        RUN(.op = "Pad", .opset = 19, .what = modes[m], .n_in = 3,
            .in = { F32(3, 4, 5), I64(1, 2, 0, 2, 3, 1), scalar_of(ONNX_DTYPE_FLOAT, 1.5) }, .n_out = 1,
            .attrs = { a_str("mode", modes[m]) }, .n_attrs = 1);
        RUN(.op = "Pad", .opset = 19, .what = "crop one side, pad the other, int64", .n_in = 2,
            .in = { RND(ONNX_DTYPE_INT64, 4, 6), I64(-1, 2, 3, -2) }, .n_out = 1,
            .attrs = { a_str("mode", modes[m]) }, .n_attrs = 1);
        RUN(.op = "Pad", .opset = 19, .what = "axes input, pads wider than the axis", .n_in = 4,
            .in = { RND(ONNX_DTYPE_UINT8, 2, 3, 4), I64(5, 6), NULL, I64(-1) }, .n_out = 1,
            .attrs = { a_str("mode", modes[m]) }, .n_attrs = 1);
        if (m == 0)
            continue;
        RUN(.domain = "dtrexec", .op = "PadGrad", .opset = 1, .what = modes[m], .tol = 1e-6, .n_in = 1,
            .in = { F32(6, 9, 7) }, .n_out = 1,
            .attrs = { a_int("mode", m), a_ints("shape", INTS(3, 4, 5)), a_ints("pads", INTS(1, 2, 0, 2, 3, 2)) },
            .n_attrs = 3);
        RUN(.domain = "dtrexec", .op = "PadGrad", .opset = 1, .what = "wide pads, double", .tol = 1e-12, .n_in = 1,
            .in = { RND(ONNX_DTYPE_DOUBLE, 2, 13) }, .n_out = 1,
            .attrs = { a_int("mode", m), a_ints("shape", INTS(2, 3)), a_ints("pads", INTS(0, 5, 0, 5)) },
            .n_attrs = 3);
    }
    RUN(.op = "Pad", .opset = 2, .what = "opset 2 attributes", .n_in = 1, .in = { RND(ONNX_DTYPE_INT32, 3, 3) },
        .n_out = 1, .attrs = { a_ints("pads", INTS(1, 0, 0, 2)), a_float("value", -7.0f) }, .n_attrs = 2);
    RUN(.domain = "dtrexec", .op = "PadGrad", .opset = 1, .what = "constant with crops", .tol = 1e-6, .n_in = 1,
        .in = { F32(5, 3) }, .n_out = 1,
        .attrs = { a_int("mode", 0), a_ints("shape", INTS(4, 4)), a_ints("pads", INTS(2, -1, -1, 0)) },
        .n_attrs = 3);
}
END_TEST

START_TEST(test_resize)
{
    static const char *const coords[] = { "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                          "half_pixel_symmetric" };
    static const char *const nearest[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
    struct tensor *roi = testops_tensor(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 0 }, NULL);
    struct tensor *up = testops_tensor(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 4 }, (float[]){ 1, 1, 1.7f, 2.5f });
    struct tensor *down = testops_tensor(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 4 }, (float[]){ 1, 1, 0.6f, 0.45f });
    for (int ci = 0; ci < 5; ci++) {
        for (int s = 0; s < 2; s++) {
            const struct tensor *scales = s ? down : up;
            RUN(.op = "Resize", .opset = 19, .what = coords[ci], .n_in = 3, .in = { F32(2, 3, 7, 9), roi, scales },
                .n_out = 1, .attrs = { a_str("mode", "linear"), a_str("coordinate_transformation_mode", coords[ci]) },
                .n_attrs = 2);
            RUN(.op = "Resize", .opset = 19, .what = nearest[ci % 4], .n_in = 3,
                .in = { RND(ONNX_DTYPE_UINT8, 2, 3, 7, 9), roi, scales }, .n_out = 1,
                .attrs = { a_str("mode", "nearest"), a_str("coordinate_transformation_mode", coords[ci]),
                           a_str("nearest_mode", nearest[ci % 4]) },
                .n_attrs = 3);
        }
    }
    RUN(.op = "Resize", .opset = 13, .what = "sizes, trilinear, double", .n_in = 4,
        .in = { RND(ONNX_DTYPE_DOUBLE, 1, 2, 3, 4, 5), roi, NULL, I64(1, 2, 5, 3, 8) }, .n_out = 1,
        .attrs = { a_str("mode", "linear") }, .n_attrs = 1);
    RUN(.op = "Resize", .opset = 18, .what = "axes", .n_in = 4, .in = { F32(2, 5, 6), roi, NULL, I64(9, 4) },
        .n_out = 1, .attrs = { a_str("mode", "linear"), a_ints("axes", INTS(1, 2)) }, .n_attrs = 2);
    RUN(.op = "Resize", .opset = 10, .what = "opset 10", .n_in = 2,
        .in = { F32(1, 2, 5, 5), testops_tensor(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 4 }, (float[]){ 1, 1, 2, 0.5f }) },
        .n_out = 1);
    RUN(.op = "Resize", .opset = 13, .what = "integer scale: no blending", .n_in = 3,
        .in = { F32(1, 1, 4, 4), roi, testops_tensor(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 4 }, (float[]){ 1, 1, 1, 1 }) },
        .n_out = 1, .attrs = { a_str("mode", "linear") }, .n_attrs = 1);

    /* ResizeGrad, with the scales the forward plan would pass; coord in the
     * order of ops/resize.c's enum */
    static const char *const coord_enum[] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                              "align_corners", "asymmetric" };
    for (int ci = 0; ci < 5; ci++) {
        for (int lin = 0; lin < 2; lin++) {
            struct tensor *sc = testops_tensor(ONNX_DTYPE_DOUBLE, 1, (int64_t[]){ 4 },
                                               (double[]){ 1, 1, 11.0 / 7.0, ci % 2 ? 4.0 / 9.0 : 2.5 });
            int64_t oh = 11, ow = ci % 2 ? 4 : 22;
            RUN(.domain = "dtrexec", .op = "ResizeGrad", .opset = 1, .what = coord_enum[ci], .tol = 1e-6, .n_in = 2,
                .in = { F32(2, 3, oh, ow), sc }, .n_out = 1,
                .attrs = { a_ints("shape", INTS(2, 3, 7, 9)), a_int("linear", lin), a_int("coord", ci),
                           a_int("nearest", ci % 4) },
                .n_attrs = 4);
        }
    }
    struct tensor *sc3 = testops_tensor(ONNX_DTYPE_DOUBLE, 1, (int64_t[]){ 3 }, (double[]){ 2.5, 1.0 / 3.0, 1.5 });
    RUN(.domain = "dtrexec", .op = "ResizeGrad", .opset = 1, .what = "3 blending axes, double", .tol = 1e-12,
        .n_in = 2, .in = { RND(ONNX_DTYPE_DOUBLE, 5, 3, 6), sc3 }, .n_out = 1,
        .attrs = { a_ints("shape", INTS(2, 9, 4)), a_int("linear", 1), a_int("coord", 3) }, .n_attrs = 3);
}
END_TEST

/* ---- recurrent layers ---------------------------------------------------------------- */

#define RNN_TOL 2e-4

struct rnn_case {
    const char *op, *direction, *what;
    int64_t seq, batch, input, hidden;
    int layout, lens, init, peep, clip, bias, input_forget, lbr, acts;
};

static const struct rnn_case rnn_cases[] = {
    { "LSTM", "forward", "plain", 5, 3, 4, 6, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "LSTM", "bidirectional", "lengths, states, peepholes", 6, 4, 3, 5, 0, 1, 1, 1, 0, 1, 0, 0, 0 },
    { "LSTM", "reverse", "batch-first, clip, input_forget", 4, 3, 5, 4, 1, 1, 1, 0, 1, 1, 1, 0, 0 },
    { "LSTM", "forward", "activations, no bias", 3, 2, 3, 4, 0, 0, 1, 1, 0, 0, 0, 0, 1 },
    { "GRU", "forward", "plain", 5, 3, 4, 6, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "GRU", "bidirectional", "linear_before_reset, lengths", 6, 4, 3, 5, 0, 1, 1, 0, 0, 1, 0, 1, 0 },
    { "GRU", "reverse", "batch-first, clip, activations", 4, 3, 5, 4, 1, 1, 1, 0, 1, 1, 0, 0, 1 },
    { "RNN", "forward", "plain", 5, 3, 4, 6, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
    { "RNN", "bidirectional", "batch-first, lengths, Relu", 6, 4, 3, 5, 1, 1, 1, 0, 1, 1, 0, 0, 1 },
};

/* Small weights keep the states away from saturation, so the comparison
 * sees the arithmetic. */
static struct tensor *small(struct tensor *t)
{
    for (int64_t i = 0; i < tensor_numel(t); i++)
        ((float *)t->data)[i] *= 0.3f;
    return t;
}

static void rnn_setup(const struct rnn_case *k, struct run *fwd, struct run *grad)
{
    const int g = !strcmp(k->op, "LSTM") ? 4 : !strcmp(k->op, "GRU") ? 3 : 1;
    const int64_t dirs = !strcmp(k->direction, "bidirectional") ? 2 : 1, h = k->hidden;
    const int lstm = g == 4;
    memset(fwd, 0, sizeof *fwd);
    fwd->op = k->op;
    fwd->opset = 22;
    fwd->what = k->what;
    fwd->tol = RNN_TOL;
    struct onnx_attr *a = fwd->attrs;
    a[fwd->n_attrs++] = a_str("direction", k->direction);
    a[fwd->n_attrs++] = a_int("hidden_size", h);
    a[fwd->n_attrs++] = a_int("layout", k->layout);
    if (k->clip)
        a[fwd->n_attrs++] = a_float("clip", 0.4f);
    if (k->input_forget)
        a[fwd->n_attrs++] = a_int("input_forget", 1);
    if (k->lbr)
        a[fwd->n_attrs++] = a_int("linear_before_reset", 1);
    if (k->acts) {
        static const char *const lstm_acts[] = { "HardSigmoid", "Softsign", "ScaledTanh" };
        static const char *const gru_acts[] = { "Sigmoid", "LeakyRelu" };
        static const char *const rnn_acts[] = { "Relu" };
        const char *const *names = lstm ? lstm_acts : g == 3 ? gru_acts : rnn_acts;
        a[fwd->n_attrs++] = a_strs("activations", lstm ? 3 : g == 3 ? 2 : 1, names);
        if (lstm) {
            a[fwd->n_attrs++] = (struct onnx_attr){ .name = "activation_alpha", .type = ONNX_ATTR_FLOATS, .n = 2,
                                                    .floats = (float[]){ 0.3f, 0.8f } };
            a[fwd->n_attrs++] = (struct onnx_attr){ .name = "activation_beta", .type = ONNX_ATTR_FLOATS, .n = 2,
                                                    .floats = (float[]){ 0.4f, 1.2f } };
        }
    }
    int64_t x_dims[3] = { k->layout ? k->batch : k->seq, k->layout ? k->seq : k->batch, k->input };
    int64_t s_dims[3] = { k->layout ? k->batch : dirs, k->layout ? dirs : k->batch, h };
    fwd->in[0] = testops_tensor_rand(&rng, 3, x_dims);
    fwd->in[1] = small(testops_tensor_rand(&rng, 3, (int64_t[]){ dirs, g * h, k->input }));
    fwd->in[2] = small(testops_tensor_rand(&rng, 3, (int64_t[]){ dirs, g * h, h }));
    fwd->n_in = 3;
    if (k->bias)
        fwd->in[3] = small(testops_tensor_rand(&rng, 2, (int64_t[]){ dirs, 2 * g * h }));
    if (k->lens) {
        int32_t *lens = testops_alloc(sizeof(int32_t) * (size_t)k->batch);
        for (int64_t b = 0; b < k->batch; b++)
            lens[b] = (int32_t)((b * 5 + 3) % (k->seq + 1));   /* includes 0 and the full length */
        lens[0] = (int32_t)k->seq;
        lens[k->batch - 1] = 0;
        fwd->in[4] = testops_tensor(ONNX_DTYPE_INT32, 1, &k->batch, lens);
    }
    if (k->init) {
        fwd->in[5] = testops_tensor_rand(&rng, 3, s_dims);
        if (lstm)
            fwd->in[6] = testops_tensor_rand(&rng, 3, s_dims);
    }
    if (k->peep)
        fwd->in[7] = small(testops_tensor_rand(&rng, 2, (int64_t[]){ dirs, 3 * h }));
    for (int i = 3; i < 8; i++)
        if (fwd->in[i])
            fwd->n_in = i + 1;
    fwd->n_out = lstm ? 3 : 2;

    *grad = *fwd;
    grad->domain = "dtrexec";
    grad->op = lstm ? "LSTMGrad" : g == 3 ? "GRUGrad" : "RNNGrad";
    grad->opset = 1;
    int64_t y_dims[4] = { k->layout ? k->batch : k->seq, k->layout ? k->seq : dirs, k->layout ? dirs : k->batch, h };
    grad->n_in = 11;
    grad->in[8] = testops_tensor_rand(&rng, 4, y_dims);
    grad->in[9] = testops_tensor_rand(&rng, 3, s_dims);
    grad->in[10] = lstm ? testops_tensor_rand(&rng, 3, s_dims) : NULL;
    grad->n_out = lstm ? 7 : 5;
}

START_TEST(test_recurrent)
{
    const struct rnn_case *k = &rnn_cases[_i];
    struct run fwd, grad;
    rnn_setup(k, &fwd, &grad);
    run_both(&fwd);
    run_both(&grad);
}
END_TEST

/* ---- the suite ----------------------------------------------------------------------- */

/* ---- GatherND, the scatters, the selection and prefix ops, Einsum ------------------- */

/* An int64 index tensor of any shape from its values. */
static struct tensor *idx_of(int rank, const int64_t *dims, const int64_t *v)
{
    return testops_tensor(ONNX_DTYPE_INT64, rank, dims, v);
}

START_TEST(test_index_nd)
{
    RUN(.op = "GatherND", .opset = 13, .what = "tuples of 2, repeats", .n_in = 2,
        .in = { F32(4, 5, 3), IDX(ONNX_DTYPE_INT64, 4, 6, 2) }, .n_out = 1);
    RUN(.op = "GatherND", .opset = 13, .what = "batch_dims 1", .n_in = 2,
        .in = { F32(3, 5, 4), IDX(ONNX_DTYPE_INT64, 5, 3, 7, 1) }, .n_out = 1,
        .attrs = { a_int("batch_dims", 1) }, .n_attrs = 1);
    RUN(.op = "GatherND", .opset = 12, .what = "full tuples, uint8, int32 indices", .n_in = 2,
        .in = { RND(ONNX_DTYPE_UINT8, 4, 4), IDX(ONNX_DTYPE_INT32, 4, 9, 2) }, .n_out = 1);
    RUN(.domain = "dtrexec", .op = "GatherNDGrad", .opset = 1, .what = "repeats add in order", .tol = 1e-6,
        .n_in = 2, .in = { F32(30, 3), IDX(ONNX_DTYPE_INT64, 4, 30, 2) }, .n_out = 1,
        .attrs = { a_int("batch_dims", 0), a_ints("shape", INTS(4, 5, 3)) }, .n_attrs = 2);
    RUN(.domain = "dtrexec", .op = "GatherNDGrad", .opset = 1, .what = "batch_dims 1, double", .tol = 1e-12,
        .n_in = 2, .in = { RND(ONNX_DTYPE_DOUBLE, 3, 7, 4), IDX(ONNX_DTYPE_INT32, 5, 3, 7, 1) }, .n_out = 1,
        .attrs = { a_int("batch_dims", 1), a_ints("shape", INTS(3, 5, 4)) }, .n_attrs = 2);
    static const char *const reds[] = { "none", "add", "mul", "max", "min" };
    for (int r = 0; r < 5; r++) {
        RUN(.op = "ScatterND", .opset = 18, .what = reds[r], .n_in = 3,
            .in = { F32(5, 5, 3), IDX(ONNX_DTYPE_INT64, 5, 8, 2), F32(8, 3) }, .n_out = 1,
            .attrs = { a_str("reduction", reds[r]) }, .n_attrs = 1);
        RUN(.op = "ScatterElements", .opset = 18, .what = reds[r], .n_in = 3,
            .in = { F32(4, 6), IDX(ONNX_DTYPE_INT64, 4, 3, 6), F32(3, 6) }, .n_out = 1,
            .attrs = { a_int("axis", 0), a_str("reduction", reds[r]) }, .n_attrs = 2);
        for (int el = 0; el < 2; el++) {
            const struct tensor *dy = el ? F32(4, 6) : F32(5, 5, 3), *x = el ? F32(4, 6) : F32(5, 5, 3);
            const struct tensor *ix = el ? IDX(ONNX_DTYPE_INT64, 6, 4, 5) : IDX(ONNX_DTYPE_INT32, 5, 9, 2);
            const struct tensor *u = el ? F32(4, 5) : F32(9, 3);
            RUN(.domain = "dtrexec", .op = "ScatterGrad", .opset = 1, .what = reds[r], .tol = 1e-6, .n_in = 4,
                .in = { dy, x, ix, u }, .n_out = 2,
                .attrs = { a_int("elements", el), a_int("axis", -1), a_int("reduction", r) }, .n_attrs = 3);
        }
    }
    RUN(.op = "ScatterND", .opset = 13, .what = "rows, int16", .n_in = 3,
        .in = { RND(ONNX_DTYPE_INT16, 6, 4), IDX(ONNX_DTYPE_INT64, 6, 5, 1), RND(ONNX_DTYPE_INT16, 5, 4) },
        .n_out = 1);
    RUN(.op = "ScatterND", .opset = 16, .what = "add, int32", .n_in = 3,
        .in = { RND(ONNX_DTYPE_INT32, 6, 4), IDX(ONNX_DTYPE_INT64, 6, 7, 1), RND(ONNX_DTYPE_INT32, 7, 4) },
        .n_out = 1, .attrs = { a_str("reduction", "add") }, .n_attrs = 1);
    RUN(.op = "ScatterElements", .opset = 16, .what = "axis -1, mul, int64", .n_in = 3,
        .in = { RND(ONNX_DTYPE_INT64, 4, 6), IDX(ONNX_DTYPE_INT32, 6, 4, 5), RND(ONNX_DTYPE_INT64, 4, 5) },
        .n_out = 1, .attrs = { a_int("axis", -1), a_str("reduction", "mul") }, .n_attrs = 2);
    RUN(.op = "Scatter", .opset = 9, .what = "deprecated form", .n_in = 3,
        .in = { RND(ONNX_DTYPE_DOUBLE, 3, 5), IDX(ONNX_DTYPE_INT64, 5, 3, 4), RND(ONNX_DTYPE_DOUBLE, 3, 4) },
        .n_out = 1, .attrs = { a_int("axis", 1) }, .n_attrs = 1);
    RUN(.domain = "dtrexec", .op = "ScatterGrad", .opset = 1, .what = "dUpdates only, double", .tol = 1e-12,
        .n_in = 4, .in = { RND(ONNX_DTYPE_DOUBLE, 5, 2), RND(ONNX_DTYPE_DOUBLE, 5, 2), IDX(ONNX_DTYPE_INT64, 5, 6, 1),
                           RND(ONNX_DTYPE_DOUBLE, 6, 2) },
        .n_out = 2, .omit_out = 1u, .attrs = { a_int("reduction", 2) }, .n_attrs = 1);
}
END_TEST

START_TEST(test_select_prefix)
{
    static const int dts[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_INT32, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_UINT8 };
    for (int i = 0; i < 4; i++) {
        RUN(.op = "ArgMax", .opset = 13, .what = "axis 1, ties first", .n_in = 1, .in = { RND(dts[i], 3, 9, 4) },
            .n_out = 1, .attrs = { a_int("axis", 1), a_int("keepdims", 0) }, .n_attrs = 2);
        RUN(.op = "ArgMin", .opset = 13, .what = "last axis, ties last", .n_in = 1, .in = { RND(dts[i], 5, 7) },
            .n_out = 1, .attrs = { a_int("axis", -1), a_int("select_last_index", 1) }, .n_attrs = 2);
        RUN(.op = "TopK", .opset = 11, .what = "middle axis", .n_in = 2, .in = { RND(dts[i], 4, 9, 3), I64(4) },
            .n_out = 2, .attrs = { a_int("axis", 1) }, .n_attrs = 1);
        RUN(.op = "TopK", .opset = 11, .what = "smallest, ties", .n_in = 2, .in = { RND(dts[i], 5, 12), I64(5) },
            .n_out = 2, .attrs = { a_int("largest", 0) }, .n_attrs = 1);
    }
    RUN(.op = "TopK", .opset = 1, .what = "attribute k, values only", .n_in = 1, .in = { F32(3, 6) }, .n_out = 2,
        .omit_out = 2u, .attrs = { a_int("k", 2) }, .n_attrs = 1);
    RUN(.op = "TopK", .opset = 11, .what = "k 0", .n_in = 2, .in = { F32(3, 6), I64(0) }, .n_out = 2);
    RUN(.op = "OneHot", .opset = 11, .what = "axis 1, negative and out-of-range", .n_in = 3,
        .in = { IDX(ONNX_DTYPE_INT64, 6, 3, 4), scalar_of(ONNX_DTYPE_INT64, 5), F32(2) }, .n_out = 1,
        .attrs = { a_int("axis", 1) }, .n_attrs = 1);
    RUN(.op = "OneHot", .opset = 9, .what = "float indices, int32 values", .n_in = 3,
        .in = { F32(4, 3), scalar_of(ONNX_DTYPE_FLOAT, 3), RND(ONNX_DTYPE_INT32, 2) }, .n_out = 1);
    for (int e = 0; e < 2; e++)
        for (int r = 0; r < 2; r++)
            RUN(.op = "CumSum", .opset = 14, .what = "exclusive/reverse", .n_in = 2,
                .in = { F32(3, 5, 4), scalar_of(ONNX_DTYPE_INT64, 1) }, .n_out = 1,
                .attrs = { a_int("exclusive", e), a_int("reverse", r) }, .n_attrs = 2);
    RUN(.op = "CumSum", .opset = 11, .what = "int64, last axis, int32 axis", .n_in = 2,
        .in = { RND(ONNX_DTYPE_INT64, 4, 6), scalar_of(ONNX_DTYPE_INT32, -1) }, .n_out = 1);
    RUN(.op = "CumSum", .opset = 14, .what = "double, axis 0", .n_in = 2,
        .in = { RND(ONNX_DTYPE_DOUBLE, 7, 3), scalar_of(ONNX_DTYPE_INT64, 0) }, .n_out = 1);
    RUN(.op = "Trilu", .opset = 14, .what = "upper, k -2", .n_in = 2,
        .in = { F32(2, 5, 7), scalar_of(ONNX_DTYPE_INT64, -2) }, .n_out = 1);
    RUN(.op = "Trilu", .opset = 14, .what = "lower, k 3, uint8", .n_in = 2,
        .in = { RND(ONNX_DTYPE_UINT8, 3, 6, 4), scalar_of(ONNX_DTYPE_INT64, 3) }, .n_out = 1,
        .attrs = { a_int("upper", 0) }, .n_attrs = 1);
    RUN(.op = "Trilu", .opset = 14, .what = "no k, double", .n_in = 1, .in = { RND(ONNX_DTYPE_DOUBLE, 4, 4) },
        .n_out = 1);
}
END_TEST

START_TEST(test_einsum)
{
    static const struct {
        const char *eq;
        int n;
        int64_t dims[3][4];
        int rank[3];
    } cases[] = {
        { "bhid,bhjd->bhij", 2, { { 2, 3, 5, 4 }, { 2, 3, 6, 4 } }, { 4, 4 } },
        { "bhij,bhjd->bhid", 2, { { 2, 3, 5, 6 }, { 2, 3, 6, 4 } }, { 4, 4 } },
        { "...ij,...jk->...ik", 2, { { 2, 1, 3, 4 }, { 5, 4, 2 } }, { 4, 3 } },
        { "...ii->...i", 1, { { 2, 3, 3 } }, { 3 } },
        { "ij,jk,kl->il", 3, { { 2, 3 }, { 3, 4 }, { 4, 5 } }, { 2, 2, 2 } },
        { "bid,d->bi", 2, { { 2, 3, 4 }, { 4 } }, { 3, 1 } },
        { "ijk->", 1, { { 2, 3, 4 } }, { 3 } },
        { "ij,ij->i", 2, { { 3, 4 }, { 1, 4 } }, { 2, 2 } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int dbl = 0; dbl < 2; dbl++) {
            struct run r = { .op = "Einsum", .opset = 12, .what = cases[i].eq, .tol = dbl ? 1e-12 : 1e-5,
                             .n_in = cases[i].n, .n_out = 1, .attrs = { a_str("equation", cases[i].eq) },
                             .n_attrs = 1 };
            for (int k = 0; k < cases[i].n; k++)
                r.in[k] = rnd_t(dbl ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT, cases[i].rank[k], cases[i].dims[k]);
            run_both(&r);
        }
    }
}
END_TEST

START_TEST(test_index_errors)
{
    fail_both(&(struct run){ .op = "GatherND", .opset = 13, .what = "index 5 of 4 on axis 1", .n_in = 2,
                             .in = { F32(3, 4), idx_of(2, (int64_t[]){ 2, 2 }, (int64_t[]){ 1, 2, 0, 5 }) },
                             .n_out = 1 });
    fail_both(&(struct run){ .op = "ScatterND", .opset = 13, .what = "index -4 of 3", .n_in = 3,
                             .in = { F32(3, 2), idx_of(2, (int64_t[]){ 2, 1 }, (int64_t[]){ 0, -4 }), F32(2, 2) },
                             .n_out = 1 });
    fail_both(&(struct run){ .op = "ScatterElements", .opset = 13, .what = "index 3 of 3", .n_in = 3,
                             .in = { F32(3, 2), idx_of(2, (int64_t[]){ 1, 2 }, (int64_t[]){ 0, 3 }), F32(1, 2) },
                             .n_out = 1 });
}
END_TEST

static void teardown(void)
{
    testops_free_all();
}

int main(void)
{
    char why[256] = "";
    dev = testcuda_open(why, sizeof why);
    testcuda_dev = dev;
    testcuda_sync_frees = 1;   /* the kernels free scratch with work still queued */
    if (!dev) {
        printf("test_cuda_layout: skipped, no CUDA device: %s\n", why);
        return 0;
    }
    Suite *s = suite_create("cuda_layout");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_transpose);
    tcase_add_test(tc, test_concat_split);
    tcase_add_test(tc, test_slice);
    tcase_add_test(tc, test_gather);
    tcase_add_test(tc, test_gather_errors);
    tcase_add_test(tc, test_expand_tile);
    tcase_add_test(tc, test_range_shape_constant);
    tcase_add_test(tc, test_pad);
    tcase_add_test(tc, test_resize);
    tcase_add_test(tc, test_index_nd);
    tcase_add_test(tc, test_select_prefix);
    tcase_add_test(tc, test_einsum);
    tcase_add_test(tc, test_index_errors);
    tcase_add_loop_test(tc, test_recurrent, 0, (int)(sizeof rnn_cases / sizeof rnn_cases[0]));
    suite_add_tcase(s, tc);
    int failed = testcuda_run(s);
    testcuda_close(dev);
    return failed ? 1 : 0;
}

