/* tests/test_cuda_nn.c — the CUDA kernels of the nn family (ops/cuda/nn*.c)
 * against the CPU kernels on the same random inputs: Conv, ConvGradData,
 * ConvGradWeight, ConvTranspose, MaxPool (Indices, int8/uint8), MaxPoolGrad,
 * AveragePool, AveragePoolGrad, GlobalAveragePool, BatchNormalization (all
 * three modes, running statistics, the recomputation rule), BatchNormGrad,
 * LayerNormalization, LayerNormGrad, Softmax, LogSoftmax and their
 * gradients — on geometries that exercise asymmetric pads, auto_pad,
 * ceil_mode, dilations, groups, 1-D and 3-D, output_padding/output_shape.
 *
 * Every CUDA call runs twice and must give the same bits (DTR's
 * recomputation), and must give back all its device scratch. Without a
 * CUDA build or a usable device the suite says why and passes. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/ops.h"
#include "testcuda.h"
#include "testops.h"


static const struct backend *dev;
static uint32_t rng = 20240611u;

/* ---- attributes ------------------------------------------------------------ */

/* The values are copied into a pool that lives as long as the process
 * (the case tables below keep their attributes across tests). */
static int64_t ints_pool[8192];
static int ints_used;

static struct onnx_attr a_ints(const char *name, int n, const int64_t *v)
{
    ck_assert_int_le(ints_used + n, (int)(sizeof ints_pool / sizeof ints_pool[0]));
    int64_t *copy = ints_pool + ints_used;
    ints_used += n;
    memcpy(copy, v, sizeof(int64_t) * (size_t)n);
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INTS, .ints = copy, .n = n };
}

#define INTS(...) (sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), ((int64_t[]){ __VA_ARGS__ })

/* ---- device memory ------------------------------------------------------------ */


/* ---- one operator call on both backends ------------------------------------------ */

#define MAX_IO 6

struct run {
    const char *domain, *op;
    int opset;
    const struct onnx_attr *attrs;
    int n_attrs;
    int n_in;
    const struct tensor *in[MAX_IO];   /* host tensors; NULL: omitted */
    int n_out;
    uint32_t omit_out;                 /* bit i: output i not requested */
    int training;
    double tol;                        /* |gpu - cpu| <= tol * max(1, max |cpu|) */
    /* results */
    struct tensor *cpu_out[MAX_IO];    /* host, from the CPU kernel */
    struct tensor *gpu_out[MAX_IO];    /* host copies of the CUDA outputs */
    struct tensor *gpu_in[MAX_IO];     /* device inputs after the CUDA call (host copies) */
};

static char err_buf[1024];

static struct op_env env_of(int training, int device)
{
    return (struct op_env){
        .scratch_alloc = device ? testcuda_scratch_alloc : testops_scratch_alloc,
        .scratch_free = device ? testcuda_scratch_free : testops_scratch_free,
        .backend = device ? dev : &backend_cpu, .threads = 1, .training = training,
        .err = err_buf, .err_size = sizeof err_buf,
    };
}

static const struct op_def *find_def(const struct run *r, int *version, void **params)
{
    return testcuda_find_def(r->domain, r->op, r->opset, NULL, r->n_in, r->n_out, r->attrs, r->n_attrs, NULL,
                             version, params, err_buf, sizeof err_buf);
}

static double max_abs(const struct tensor *t)
{
    double m = 0.0;
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        double v = fabs(tensor_get_double(t, i));
        m = v > m ? v : m;
    }
    return m;
}

static void compare(const char *what, int k, const struct tensor *want, const struct tensor *got,
                    double tol)
{
    ck_assert_int_eq(want->dtype, got->dtype);
    ck_assert(tensor_same_shape(want, got));
    double lim = tol * (max_abs(want) > 1.0 ? max_abs(want) : 1.0);
    for (int64_t i = 0; i < tensor_numel(want); i++) {
        double a = tensor_get_double(got, i), b = tensor_get_double(want, i);
        ck_assert_msg(fabs(a - b) <= lim || (isnan(a) && isnan(b)),
                      "%s output %d: expected %.9g (CPU), got %.9g (CUDA) at index %lld (limit %.3g)",
                      what, k, b, a, (long long)i, lim);
    }
}

/* Runs r on the CPU and twice on the GPU (the second time as a DTR
 * recomputation) and compares; inputs are not modified on the host except
 * by the CPU kernel itself. */
static void run_both(struct run *r)
{
    int version;
    void *params;
    const struct op_def *def = find_def(r, &version, &params);
    op_kernel_fn gpu = testcuda_kernel(r->domain, r->op);
    ck_assert_msg(gpu != NULL, "no CUDA kernel for %s", r->op);

    /* device inputs first: the CPU kernel may update inputs in place */
    struct tensor *din[MAX_IO] = { 0 };
    for (int i = 0; i < r->n_in; i++)
        din[i] = testcuda_to_dev(r->in[i]);

    struct op_env cenv = env_of(r->training, 0);
    struct tensor *cout[MAX_IO] = { 0 };
    for (int i = 0; i < r->n_out; i++)
        if (!(r->omit_out >> i & 1))
            cout[i] = testops_alloc(sizeof(struct tensor));
    struct op_call cc = { .def = def, .version = version, .params = params, .node_name = "n0",
                          .n_in = r->n_in, .in = r->in, .n_out = r->n_out, .out = cout, .env = &cenv };
    ck_assert_msg(!def->infer(&cc), "%s: infer: %s", r->op, err_buf);
    for (int i = 0; i < r->n_out; i++)
        if (cout[i])
            cout[i]->data = testops_alloc(tensor_size_bytes(cout[i]));
    ck_assert_msg(!def->kernel[BACKEND_CPU](&cc), "%s: CPU kernel: %s", r->op, err_buf);

    struct op_env genv = env_of(r->training, 1);
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
            ck_assert(!dev->copy_to_device(dev->ctx, gout[pass][i]->data, poison, bytes));
        }
        genv.recomputing = pass == 1;
        testcuda_scratch_live = 0;
        struct op_call gc = cc;
        gc.env = &genv;
        gc.in = (const struct tensor *const *)din;
        gc.out = gout[pass];
        ck_assert_msg(!gpu(&gc), "%s: CUDA kernel (pass %d): %s", r->op, pass, err_buf);
        ck_assert(!dev->synchronize(dev->ctx));
        ck_assert_msg(testcuda_scratch_live == 0, "%s: %d device scratch blocks not given back", r->op,
                      testcuda_scratch_live);
    }
    for (int i = 0; i < r->n_out; i++) {
        if (!cout[i])
            continue;
        r->cpu_out[i] = cout[i];
        r->gpu_out[i] = testops_alloc(sizeof(struct tensor));
        *r->gpu_out[i] = *cout[i];
        r->gpu_out[i]->data = testcuda_to_host(gout[0][i]);
        void *again = testcuda_to_host(gout[1][i]);
        compare(r->op, i, cout[i], r->gpu_out[i], r->tol);
        ck_assert_msg(!memcmp(r->gpu_out[i]->data, again, tensor_size_bytes(cout[i])),
                      "%s output %d: the recomputation differs in its bits", r->op, i);
    }
    for (int i = 0; i < r->n_in; i++)
        if (din[i]) {
            r->gpu_in[i] = testops_alloc(sizeof(struct tensor));
            *r->gpu_in[i] = *din[i];
            r->gpu_in[i]->data = testcuda_to_host(din[i]);
        }
    if (params)
        (def->params_free ? def->params_free : free)(params);
    testcuda_free_all();
}

static struct tensor *rnd(int rank, const int64_t *dims)
{
    return testops_tensor_rand(&rng, rank, dims);
}

#define RND(...) rnd((int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), (int64_t[]){ __VA_ARGS__ })

/* Values on a coarse grid (many ties). */
static struct tensor *coarse(struct tensor *t)
{
    float *d = t->data;
    for (int64_t i = 0; i < tensor_numel(t); i++)
        d[i] = roundf(d[i] * 2.0f) / 2.0f;
    return t;
}

/* Positive values (variances). */
static struct tensor *positive(struct tensor *t)
{
    float *d = t->data;
    for (int64_t i = 0; i < tensor_numel(t); i++)
        d[i] = fabsf(d[i]) + 0.25f;
    return t;
}

/* cuDNN's FP32 sums against oneDNN's or OpenBLAS's: the order differs */
#define CONV_TOL 3e-5

/* ---- convolutions ------------------------------------------------------------------ */

struct conv_case {
    const char *name;
    int64_t x[5], w[5];
    int rank, bias;
    struct onnx_attr attrs[6];
    int n_attrs;
};

static struct conv_case conv_cases[16];
static int n_conv_cases;

static void conv_cases_init(void)
{
    if (n_conv_cases)
        return;
    struct conv_case *c = conv_cases;
    *c++ = (struct conv_case){ "2-D 3x3 pad 1 bias", { 2, 3, 7, 7 }, { 4, 3, 3, 3 }, 4, 1,
                               { a_ints("pads", INTS(1, 1, 1, 1)) }, 1 };
    *c++ = (struct conv_case){ "2-D asymmetric pads, strides, dilations", { 2, 3, 9, 8 }, { 5, 3, 3, 2 }, 4, 0,
                               { a_ints("pads", INTS(0, 1, 2, 0)), a_ints("strides", INTS(2, 1)),
                                 a_ints("dilations", INTS(1, 2)) }, 3 };
    *c++ = (struct conv_case){ "grouped", { 2, 4, 6, 6 }, { 6, 2, 3, 3 }, 4, 1,
                               { a_int("group", 2), a_ints("pads", INTS(1, 0, 1, 0)) }, 2 };
    *c++ = (struct conv_case){ "depthwise SAME_UPPER stride 2", { 1, 4, 8, 7 }, { 4, 1, 3, 3 }, 4, 1,
                               { a_int("group", 4), a_str("auto_pad", "SAME_UPPER"),
                                 a_ints("strides", INTS(2, 2)) }, 3 };
    *c++ = (struct conv_case){ "SAME_LOWER stride 2", { 1, 3, 8, 8 }, { 2, 3, 4, 4 }, 4, 0,
                               { a_str("auto_pad", "SAME_LOWER"), a_ints("strides", INTS(2, 2)) }, 2 };
    *c++ = (struct conv_case){ "1-D pads 2/1 stride 2", { 2, 3, 11 }, { 5, 3, 3 }, 3, 1,
                               { a_ints("pads", INTS(2, 1)), a_ints("strides", INTS(2)) }, 2 };
    *c++ = (struct conv_case){ "3-D", { 1, 2, 5, 6, 4 }, { 3, 2, 3, 2, 2 }, 5, 1,
                               { a_ints("pads", INTS(1, 0, 1, 1, 1, 0)), a_ints("strides", INTS(1, 2, 1)) }, 2 };
    *c++ = (struct conv_case){ "1x1", { 3, 8, 5, 5 }, { 16, 8, 1, 1 }, 4, 1, { { 0 } }, 0 };
    *c++ = (struct conv_case){ "VALID stride 3, trailing input unused", { 2, 2, 10, 11 }, { 3, 2, 2, 3 }, 4, 0,
                               { a_str("auto_pad", "VALID"), a_ints("strides", INTS(3, 3)) }, 2 };
    *c++ = (struct conv_case){ "wide channels", { 4, 64, 9, 9 }, { 32, 64, 3, 3 }, 4, 1,
                               { a_ints("pads", INTS(1, 1, 1, 1)) }, 1 };
    n_conv_cases = (int)(c - conv_cases);
}

START_TEST(test_conv)
{
    conv_cases_init();
    if (_i >= n_conv_cases)
        return;
    const struct conv_case *cc = &conv_cases[_i];
    struct tensor *x = rnd(cc->rank, cc->x), *w = rnd(cc->rank, cc->w);
    struct tensor *b = cc->bias ? rnd(1, (int64_t[]){ cc->w[0] }) : NULL;
    struct run r = { .domain = "", .op = "Conv", .opset = 22, .attrs = cc->attrs, .n_attrs = cc->n_attrs,
                     .n_in = cc->bias ? 3 : 2, .in = { x, w, b }, .n_out = 1, .tol = CONV_TOL };
    run_both(&r);

    /* the gradients on the forward's resolved geometry, as conv_grad emits them */
    int version;
    void *params;
    const struct op_def *def = find_def(&r, &version, &params);
    struct op_env cenv = env_of(0, 0);
    struct tensor yshape = *r.cpu_out[0];
    struct op_call fc = { .def = def, .version = version, .params = params, .node_name = "n0",
                          .n_in = r.n_in, .in = r.in, .n_out = 1,
                          .out = (struct tensor *const[]){ &yshape }, .env = &cenv };
    struct nn_geom g;
    ck_assert_msg(!nn_conv_geom(&fc, &g), "%s", err_buf);
    free(params);
    struct tensor *dy = rnd(yshape.rank, yshape.dims);
    struct nn_geom_attrs at;
    nn_geom_attrs_make(&g, x->rank, x->dims, &at);
    struct run rd = { .domain = "dtrexec", .op = "ConvGradData", .opset = 1, .attrs = at.a,
                      .n_attrs = at.n, .n_in = 2, .in = { dy, w }, .n_out = 1, .tol = CONV_TOL };
    run_both(&rd);
    struct nn_geom_attrs aw;
    nn_geom_attrs_make(&g, w->rank, w->dims, &aw);
    struct run rw = { .domain = "dtrexec", .op = "ConvGradWeight", .opset = 1, .attrs = aw.a,
                      .n_attrs = aw.n, .n_in = 2, .in = { x, dy }, .n_out = 2, .tol = CONV_TOL };
    run_both(&rw);
    struct run rw1 = rw;               /* dW alone */
    rw1.n_out = 1;
    run_both(&rw1);
    testops_free_all();
}
END_TEST

START_TEST(test_conv_transpose)
{
    struct tensor *x2 = RND(1, 2, 3, 3), *w2 = RND(2, 3, 3, 3), *b3 = RND(3);
    struct onnx_attr a1[] = { a_ints("strides", INTS(2, 2)), a_ints("output_padding", INTS(1, 1)) };
    struct run r = { .domain = "", .op = "ConvTranspose", .opset = 22, .attrs = a1, .n_attrs = 2,
                     .n_in = 3, .in = { x2, w2, b3 }, .n_out = 1, .tol = CONV_TOL };
    run_both(&r);

    struct onnx_attr a2[] = { a_ints("strides", INTS(2, 1)), a_ints("pads", INTS(1, 0, 0, 1)) };
    r = (struct run){ .domain = "", .op = "ConvTranspose", .opset = 22, .attrs = a2, .n_attrs = 2,
                      .n_in = 2, .in = { x2, w2 }, .n_out = 1, .tol = CONV_TOL };
    run_both(&r);

    /* output_shape one past what the input covers: the last position gets the bias only */
    struct tensor *x1 = RND(2, 1, 3), *w1 = RND(1, 2, 3), *b2 = RND(2);
    struct onnx_attr a3[] = { a_ints("strides", INTS(2)), a_ints("output_shape", INTS(8)) };
    r = (struct run){ .domain = "", .op = "ConvTranspose", .opset = 22, .attrs = a3, .n_attrs = 2,
                      .n_in = 3, .in = { x1, w1, b2 }, .n_out = 1, .tol = CONV_TOL };
    run_both(&r);

    /* groups and dilations, 1-D; SAME_UPPER */
    struct tensor *xg = RND(2, 4, 5), *wg = RND(4, 3, 3);
    struct onnx_attr a4[] = { a_int("group", 2), a_ints("dilations", INTS(2)), a_str("auto_pad", "SAME_UPPER"),
                              a_ints("strides", INTS(2)) };
    r = (struct run){ .domain = "", .op = "ConvTranspose", .opset = 22, .attrs = a4, .n_attrs = 4,
                      .n_in = 2, .in = { xg, wg }, .n_out = 1, .tol = CONV_TOL };
    run_both(&r);

    /* 3-D with output_padding larger than... within the stride */
    struct tensor *x3 = RND(1, 2, 3, 2, 3), *w3 = RND(2, 2, 2, 3, 2);
    struct onnx_attr a5[] = { a_ints("strides", INTS(3, 2, 2)), a_ints("output_padding", INTS(2, 1, 0)),
                              a_ints("pads", INTS(1, 0, 0, 0, 1, 1)) };
    r = (struct run){ .domain = "", .op = "ConvTranspose", .opset = 22, .attrs = a5, .n_attrs = 3,
                      .n_in = 2, .in = { x3, w3 }, .n_out = 1, .tol = CONV_TOL };
    run_both(&r);
    testops_free_all();
}
END_TEST

/* Without scratch a convolution that needs it fails with a message, marks
 * the call's scratch as failed (the runtime then evicts and retries) and
 * leaves nothing allocated. */
START_TEST(test_conv_no_scratch)
{
    struct tensor *x = RND(1, 2, 6, 6), *w = RND(3, 2, 3, 3);
    struct onnx_attr at[] = { a_ints("pads", INTS(0, 1, 2, 0)) };
    struct run r = { .domain = "", .op = "Conv", .opset = 22, .attrs = at, .n_attrs = 1, .n_in = 2,
                     .in = { x, w }, .n_out = 1 };
    int version;
    void *params;
    const struct op_def *def = find_def(&r, &version, &params);
    struct op_env env = env_of(0, 1);
    struct tensor y = { 0 };
    const struct tensor *din[2] = { testcuda_to_dev(x), testcuda_to_dev(w) };
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = "n0",
                         .n_in = 2, .in = din, .n_out = 1, .out = (struct tensor *const[]){ &y },
                         .env = &env };
    ck_assert(!def->infer(&c));
    y.data = testcuda_alloc(tensor_size_bytes(&y));
    testcuda_scratch_live = 0;
    testcuda_scratch_refuse = 1;
    int rc = testcuda_kernel("", "Conv")(&c);
    testcuda_scratch_refuse = 0;
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(env.scratch_failed, "scratch_failed not set");
    ck_assert_msg(strstr(err_buf, "scratch") != NULL, "message: %s", err_buf);
    ck_assert_int_eq(testcuda_scratch_live, 0);
    free(params);
    testcuda_free_all();
    testops_free_all();
}
END_TEST

/* ---- pooling ------------------------------------------------------------------------- */

struct pool_case {
    const char *name;
    int64_t x[5];
    int rank;
    struct onnx_attr attrs[6];
    int n_attrs;
};

static struct pool_case pool_cases[16];
static int n_pool_cases;

static void pool_cases_init(void)
{
    if (n_pool_cases)
        return;
    struct pool_case *p = pool_cases;
    *p++ = (struct pool_case){ "k3 s2 p1", { 2, 3, 9, 9 }, 4,
                               { a_ints("kernel_shape", INTS(3, 3)), a_ints("strides", INTS(2, 2)),
                                 a_ints("pads", INTS(1, 1, 1, 1)) }, 3 };
    *p++ = (struct pool_case){ "ceil_mode, asymmetric pads", { 1, 2, 6, 7 }, 4,
                               { a_ints("kernel_shape", INTS(3, 2)), a_ints("strides", INTS(2, 2)),
                                 a_ints("pads", INTS(1, 0, 0, 1)), a_int("ceil_mode", 1) }, 4 };
    *p++ = (struct pool_case){ "dilations", { 1, 2, 8, 8 }, 4,
                               { a_ints("kernel_shape", INTS(2, 2)), a_ints("dilations", INTS(2, 3)),
                                 a_ints("pads", INTS(1, 1, 0, 2)) }, 3 };
    *p++ = (struct pool_case){ "SAME_UPPER", { 2, 2, 7, 5 }, 4,
                               { a_ints("kernel_shape", INTS(3, 3)), a_ints("strides", INTS(2, 2)),
                                 a_str("auto_pad", "SAME_UPPER") }, 3 };
    *p++ = (struct pool_case){ "1-D ceil_mode", { 2, 3, 10 }, 3,
                               { a_ints("kernel_shape", INTS(3)), a_ints("strides", INTS(2)),
                                 a_ints("pads", INTS(1, 1)), a_int("ceil_mode", 1) }, 4 };
    *p++ = (struct pool_case){ "3-D", { 1, 2, 5, 4, 6 }, 5,
                               { a_ints("kernel_shape", INTS(2, 2, 3)), a_ints("strides", INTS(1, 2, 2)),
                                 a_ints("pads", INTS(0, 1, 1, 1, 0, 1)) }, 3 };
    *p++ = (struct pool_case){ "overlapping k3 s1", { 4, 8, 12, 12 }, 4,
                               { a_ints("kernel_shape", INTS(3, 3)), a_ints("pads", INTS(1, 1, 1, 1)) }, 2 };
    n_pool_cases = (int)(p - pool_cases);
}

static void pool_grad_attrs(const struct op_def *def, int version, void *params, const struct tensor *x,
                            const struct onnx_attr *fwd, int n_fwd, struct onnx_attr *out, int *n_out,
                            struct nn_geom_attrs *at)
{
    struct op_env cenv = env_of(0, 0);
    struct tensor yshape = { 0 };
    struct op_call fc = { .def = def, .version = version, .params = params, .node_name = "n0",
                          .n_in = 1, .in = (const struct tensor *const[]){ x }, .n_out = 1,
                          .out = (struct tensor *const[]){ &yshape }, .env = &cenv };
    struct nn_geom g;
    ck_assert_msg(!nn_pool_geom(&fc, &g), "%s", err_buf);
    nn_geom_attrs_make(&g, x->rank, x->dims, at);
    memcpy(out, at->a, sizeof(struct onnx_attr) * (size_t)at->n);
    int n = at->n;
    int64_t ceil_mode = 0, include = 0;
    for (int i = 0; i < n_fwd; i++) {
        if (!strcmp(fwd[i].name, "ceil_mode"))
            ceil_mode = fwd[i].i;
        if (!strcmp(fwd[i].name, "count_include_pad"))
            include = fwd[i].i;
    }
    out[n++] = a_int("ceil_mode", ceil_mode);
    out[n++] = a_int("count_include_pad", include);
    *n_out = n;
}

START_TEST(test_maxpool)
{
    pool_cases_init();
    if (_i >= n_pool_cases)
        return;
    const struct pool_case *pc = &pool_cases[_i];
    for (int ties = 0; ties < 2; ties++) {
        struct tensor *x = rnd(pc->rank, pc->x);
        if (ties)
            coarse(x);
        struct run r = { .domain = "", .op = "MaxPool", .opset = 22, .attrs = pc->attrs,
                         .n_attrs = pc->n_attrs, .n_in = 1, .in = { x }, .n_out = 1, .tol = 0 };
        run_both(&r);
        r.n_out = 2;                   /* with Indices */
        run_both(&r);
        struct onnx_attr so[8];
        memcpy(so, pc->attrs, sizeof(struct onnx_attr) * (size_t)pc->n_attrs);
        so[pc->n_attrs] = a_int("storage_order", 1);
        r.attrs = so;
        r.n_attrs = pc->n_attrs + 1;
        run_both(&r);

        /* int8 and uint8 */
        for (int dt = 0; dt < 2; dt++) {
            struct tensor *q = testops_tensor(dt ? ONNX_DTYPE_UINT8 : ONNX_DTYPE_INT8, x->rank, x->dims, NULL);
            for (int64_t i = 0; i < tensor_numel(x); i++) {
                int v = (int)(((float *)x->data)[i] * (ties ? 2.0f : 60.0f));
                if (dt)
                    ((uint8_t *)q->data)[i] = (uint8_t)(v + 128);
                else
                    ((int8_t *)q->data)[i] = (int8_t)v;
            }
            struct run rq = { .domain = "", .op = "MaxPool", .opset = 22, .attrs = pc->attrs,
                              .n_attrs = pc->n_attrs, .n_in = 1, .in = { q }, .n_out = 2, .tol = 0 };
            run_both(&rq);
        }

        /* the gradient, ties routed to the first maximum as on the CPU */
        int version;
        void *params;
        const struct op_def *def = find_def(&r, &version, &params);
        struct onnx_attr ga[10];
        int n_ga;
        struct nn_geom_attrs at;
        pool_grad_attrs(def, version, params, x, pc->attrs, pc->n_attrs, ga, &n_ga, &at);
        free(params);
        struct tensor *dy = rnd(r.cpu_out[0]->rank, r.cpu_out[0]->dims);
        struct run rg = { .domain = "dtrexec", .op = "MaxPoolGrad", .opset = 1, .attrs = ga,
                          .n_attrs = n_ga, .n_in = 2, .in = { dy, x }, .n_out = 1, .tol = 1e-6 };
        run_both(&rg);
    }
    testops_free_all();
}
END_TEST

START_TEST(test_avgpool)
{
    pool_cases_init();
    if (_i >= n_pool_cases)
        return;
    const struct pool_case *pc = &pool_cases[_i];
    for (int include = 0; include < 2; include++) {
        struct tensor *x = rnd(pc->rank, pc->x);
        struct onnx_attr at[8];
        memcpy(at, pc->attrs, sizeof(struct onnx_attr) * (size_t)pc->n_attrs);
        at[pc->n_attrs] = a_int("count_include_pad", include);
        struct run r = { .domain = "", .op = "AveragePool", .opset = 22, .attrs = at,
                         .n_attrs = pc->n_attrs + 1, .n_in = 1, .in = { x }, .n_out = 1, .tol = 1e-6 };
        run_both(&r);

        int version;
        void *params;
        const struct op_def *def = find_def(&r, &version, &params);
        struct onnx_attr ga[10];
        int n_ga;
        struct nn_geom_attrs gat;
        pool_grad_attrs(def, version, params, x, at, pc->n_attrs + 1, ga, &n_ga, &gat);
        free(params);
        struct tensor *dy = rnd(r.cpu_out[0]->rank, r.cpu_out[0]->dims);
        struct run rg = { .domain = "dtrexec", .op = "AveragePoolGrad", .opset = 1, .attrs = ga,
                          .n_attrs = n_ga, .n_in = 1, .in = { dy }, .n_out = 1, .tol = 1e-6 };
        run_both(&rg);
    }
    testops_free_all();
}
END_TEST

START_TEST(test_global_avgpool)
{
    struct tensor *xs[] = { RND(2, 3, 5, 7), RND(2, 3, 4), RND(1, 2, 3, 4, 5), RND(3, 5, 40, 40) };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        struct run r = { .domain = "", .op = "GlobalAveragePool", .opset = 22, .n_in = 1,
                         .in = { xs[i] }, .n_out = 1, .tol = 1e-6 };
        run_both(&r);
    }
    testops_free_all();
}
END_TEST

/* ---- batch normalization ------------------------------------------------------------------ */

START_TEST(test_batch_norm)
{
    const int64_t shapes[][5] = { { 4, 3, 5, 6 }, { 8, 5 }, { 2, 4, 3, 3, 2 }, { 16, 8, 40, 40 } };
    const int ranks[] = { 4, 2, 5, 4 };
    for (int s = 0; s < 4; s++) {
        int64_t ch = shapes[s][1];
        struct tensor *x = rnd(ranks[s], shapes[s]), *scale = RND(ch), *bias = RND(ch);
        struct tensor *mean = RND(ch), *var = positive(RND(ch));
        struct onnx_attr at[] = { a_float("epsilon", 1e-3f), a_float("momentum", 0.8f),
                                  a_int("training_mode", 1) };
        /* inference */
        struct run r = { .domain = "", .op = "BatchNormalization", .opset = 15, .attrs = at, .n_attrs = 2,
                         .n_in = 5, .in = { x, scale, bias, mean, var }, .n_out = 1, .tol = 1e-5 };
        run_both(&r);
        /* ONNX training mode: Y and the running statistics */
        r.n_attrs = 3;
        r.n_out = 3;
        run_both(&r);
        /* opset 9: asking for outputs 1..4 trains; saved mean and variance */
        r = (struct run){ .domain = "", .op = "BatchNormalization", .opset = 9, .attrs = at, .n_attrs = 2,
                          .n_in = 5, .in = { x, scale, bias, mean, var }, .n_out = 5, .tol = 1e-5 };
        run_both(&r);
        r.omit_out = 1u << 1 | 1u << 2;  /* only the saved statistics */
        run_both(&r);

        /* PyTorch-style: an inference node while training updates the
         * running statistics in place, once: the second (recomputing) CUDA
         * pass must leave them as the first pass made them */
        struct tensor *m2 = testops_tensor(ONNX_DTYPE_FLOAT, 1, &ch, mean->data);
        struct tensor *v2 = testops_tensor(ONNX_DTYPE_FLOAT, 1, &ch, var->data);
        r = (struct run){ .domain = "", .op = "BatchNormalization", .opset = 15, .attrs = at, .n_attrs = 2,
                          .n_in = 5, .in = { x, scale, bias, m2, v2 }, .n_out = 1, .training = 1,
                          .tol = 1e-5 };
        run_both(&r);
        ck_assert_msg(memcmp(m2->data, mean->data, sizeof(float) * (size_t)ch),
                      "the CPU kernel did not update the running mean");
        compare("running mean", 3, m2, r.gpu_in[3], 1e-6);
        compare("running var", 4, v2, r.gpu_in[4], 1e-6);

        /* the gradient, with batch statistics and with the given ones */
        struct tensor *dy = rnd(ranks[s], shapes[s]);
        for (int batch = 0; batch < 2; batch++) {
            struct onnx_attr ga[] = { a_float("epsilon", 1e-3f), a_int("batch_stats", batch) };
            struct run rg = { .domain = "dtrexec", .op = "BatchNormGrad", .opset = 1, .attrs = ga,
                              .n_attrs = 2, .n_in = 5, .in = { dy, x, scale, mean, var }, .n_out = 3,
                              .tol = 2e-5 };
            run_both(&rg);
            rg.omit_out = 1u << 1;       /* no dscale */
            run_both(&rg);
        }
    }
    testops_free_all();
}
END_TEST

/* ---- layer normalization -------------------------------------------------------------------- */

START_TEST(test_layer_norm)
{
    struct {
        int64_t x[4];
        int rank;
        int64_t axis;
        int64_t scale[3];
        int scale_rank, bias;
    } cases[] = {
        { { 4, 5, 16 }, 3, -1, { 16 }, 1, 1 },
        { { 3, 4, 5 }, 3, 1, { 5 }, 1, 1 },          /* Scale broadcast to [4, 5] */
        { { 3, 4, 5 }, 3, 1, { 4, 1 }, 2, 0 },
        { { 3, 1500 }, 2, 1, { 1500 }, 1, 1 },       /* a block per row */
        { { 300, 70 }, 2, -1, { 70 }, 1, 1 },        /* several row chunks in the gradient */
        { { 2, 260, 1100 }, 3, 2, { 1100 }, 1, 0 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct tensor *x = rnd(cases[k].rank, cases[k].x);
        struct tensor *scale = rnd(cases[k].scale_rank, cases[k].scale);
        struct tensor *bias = cases[k].bias ? rnd(cases[k].scale_rank, cases[k].scale) : NULL;
        struct onnx_attr at[] = { a_int("axis", cases[k].axis), a_float("epsilon", 1e-4f) };
        struct run r = { .domain = "", .op = "LayerNormalization", .opset = 17, .attrs = at, .n_attrs = 2,
                         .n_in = bias ? 3 : 2, .in = { x, scale, bias }, .n_out = 3, .tol = 1e-5 };
        run_both(&r);
        r.n_out = 1;
        run_both(&r);

        struct tensor *dy = rnd(cases[k].rank, cases[k].x);
        int axis = op_axis(cases[k].axis, x->rank);
        struct onnx_attr ga[] = { a_int("axis", axis), a_float("epsilon", 1e-4f) };
        struct run rg = { .domain = "dtrexec", .op = "LayerNormGrad", .opset = 1, .attrs = ga, .n_attrs = 2,
                          .n_in = 3, .in = { dy, x, scale }, .n_out = 3, .tol = 2e-5 };
        run_both(&rg);
        rg.omit_out = 1u << 2;
        run_both(&rg);
    }
    testops_free_all();
}
END_TEST

/* ---- softmax ------------------------------------------------------------------------------ */

static struct tensor *to_double(const struct tensor *t)
{
    struct tensor *d = testops_tensor(ONNX_DTYPE_DOUBLE, t->rank, t->dims, NULL);
    for (int64_t i = 0; i < tensor_numel(t); i++)
        ((double *)d->data)[i] = ((float *)t->data)[i] * 8.0;   /* large values: the max shift */
    return d;
}

START_TEST(test_softmax)
{
    struct {
        int64_t x[4];
        int rank, opset;
        int64_t axis;
    } cases[] = {
        { { 3, 7 }, 2, 13, -1 },
        { { 2, 5, 3, 4 }, 4, 13, 1 },      /* inner > 1 */
        { { 2, 3, 4 }, 3, 11, 1 },         /* coerced to 2-D */
        { { 4, 3000 }, 2, 13, 1 },
        { { 2, 3, 4 }, 3, 1, 0 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int dbl = 0; dbl < 2; dbl++) {
            struct tensor *x = rnd(cases[k].rank, cases[k].x);
            if (dbl)
                x = to_double(x);
            for (int lg = 0; lg < 2; lg++) {
                const char *op = lg ? "LogSoftmax" : "Softmax";
                struct onnx_attr at[] = { a_int("axis", cases[k].axis) };
                struct run r = { .domain = "", .op = op, .opset = cases[k].opset, .attrs = at, .n_attrs = 1,
                                 .n_in = 1, .in = { x }, .n_out = 1, .tol = dbl ? 1e-12 : 1e-6 };
                run_both(&r);

                struct tensor *dy = rnd(cases[k].rank, cases[k].x);
                if (dbl)
                    dy = to_double(dy);
                struct onnx_attr ga[] = { a_int("axis", cases[k].axis),
                                          a_int("coerce_2d", cases[k].opset < 13) };
                struct run rg = { .domain = "dtrexec", .op = lg ? "LogSoftmaxGrad" : "SoftmaxGrad",
                                  .opset = 1, .attrs = ga, .n_attrs = 2, .n_in = 2,
                                  .in = { dy, r.cpu_out[0] }, .n_out = 1, .tol = dbl ? 1e-12 : 1e-5 };
                run_both(&rg);
            }
        }
    }
    testops_free_all();
}
END_TEST

/* Every operator of the family has a CUDA kernel. */
START_TEST(test_table)
{
    static const char *const ops[][2] = {
        { "", "Conv" }, { "dtrexec", "ConvGradData" }, { "dtrexec", "ConvGradWeight" },
        { "", "ConvTranspose" }, { "", "MaxPool" }, { "dtrexec", "MaxPoolGrad" },
        { "", "AveragePool" }, { "dtrexec", "AveragePoolGrad" }, { "", "GlobalAveragePool" },
        { "", "BatchNormalization" }, { "dtrexec", "BatchNormGrad" }, { "", "LayerNormalization" },
        { "dtrexec", "LayerNormGrad" }, { "", "Softmax" }, { "", "LogSoftmax" },
        { "dtrexec", "SoftmaxGrad" }, { "dtrexec", "LogSoftmaxGrad" },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        ck_assert_msg(testcuda_kernel(ops[i][0], ops[i][1]) != NULL, "no CUDA kernel for %s", ops[i][1]);
}
END_TEST

int main(void)
{
    char why[256] = "";
    dev = testcuda_open(why, sizeof why);
    testcuda_dev = dev;
    if (!dev) {
        printf("test_cuda_nn: skipped, no CUDA device: %s\n", why);
        return 0;
    }
    Suite *s = suite_create("cuda_nn");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_table);
    tcase_add_loop_test(tc, test_conv, 0, 16);
    tcase_add_test(tc, test_conv_transpose);
    tcase_add_test(tc, test_conv_no_scratch);
    tcase_add_loop_test(tc, test_maxpool, 0, 16);
    tcase_add_loop_test(tc, test_avgpool, 0, 16);
    tcase_add_test(tc, test_global_avgpool);
    tcase_add_test(tc, test_batch_norm);
    tcase_add_test(tc, test_layer_norm);
    tcase_add_test(tc, test_softmax);
    suite_add_tcase(s, tc);
    int failed = testcuda_run(s);
    testcuda_close(dev);
    return failed ? 1 : 0;
}

