/* tests/test_ops_math_grad.c — the gradient kernels of the elementwise,
 * softmax and reduction family (domain dtrexec: ReluGrad ... ClipGrad,
 * DivGrad, PowGrad, MaxMinGrad, SoftmaxGrad, LogSoftmaxGrad,
 * ReduceSelectGrad) called directly through the registry. The finite-
 * difference checks in tests/grad/cases_math.py cannot see what happens
 * exactly at ties and kinks, nor on tensors big enough for the parallel
 * paths; these tests pin those down against reference loops. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "testops.h"
#include "testutil.h"

static struct tensor *mkf(int rank, const int64_t *dims, const float *data)
{
    return testops_tensor(ONNX_DTYPE_FLOAT, rank, dims, data);
}

static uint32_t rng_state = 777;

static float frand(void) { return testops_frand(&rng_state); }

static struct tensor *mk_rand(int rank, const int64_t *dims)
{
    return testops_tensor_rand(&rng_state, rank, dims);
}

static void *scratch_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    return malloc(bytes ? bytes : 1);
}

static void scratch_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static char last_err[512];

/* Runs dtrexec-domain op `name` with n_out outputs into outs[]; 0 on success. */
static int run(const char *name, struct onnx_attr *attrs, int n_attrs, const struct tensor **in,
               int n_in, int n_out, struct tensor **outs)
{
    int version = 0;
    last_err[0] = 0;
    const struct op_def *d = op_registry_find("dtrexec", name, 1, &version);
    ck_assert_msg(d != NULL, "%s is not registered in domain dtrexec", name);
    struct onnx_node node = { .name = "g0", .op_type = (char *)name, .domain = "dtrexec",
                              .n_inputs = n_in, .n_outputs = n_out, .n_attrs = n_attrs,
                              .attrs = attrs };
    void *params = NULL;
    if (d->parse && d->parse(&node, version, &params, last_err, sizeof last_err))
        return -1;
    for (int k = 0; k < n_out; k++)
        outs[k] = testops_alloc(sizeof **outs);
    struct op_env env = { .backend = &backend_cpu, .threads = 2, .err = last_err,
                          .err_size = sizeof last_err, .scratch_alloc = scratch_alloc,
                          .scratch_free = scratch_free };
    struct op_call c = { .def = d, .version = version, .params = params, .node_name = "g0",
                         .n_in = n_in, .in = in, .n_out = n_out, .out = outs, .env = &env };
    int rc = d->infer(&c);
    for (int k = 0; !rc && k < n_out; k++)
        outs[k]->data = testops_alloc(tensor_size_bytes(outs[k]));
    if (!rc)
        rc = d->kernel[BACKEND_CPU](&c);
    if (params)
        d->params_free ? d->params_free(params) : free(params);
    return rc;
}

static struct tensor *run1(const char *name, struct onnx_attr *attrs, int n_attrs,
                           const struct tensor **in, int n_in)
{
    struct tensor *out[1];
    ck_assert_msg(run(name, attrs, n_attrs, in, n_in, 1, out) == 0, "%s: %s", name, last_err);
    return out[0];
}

static void check_f(const struct tensor *t, const float *want, int64_t n, double tol)
{
    ck_assert_int_eq(tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++) {
        double got = ((const float *)t->data)[i];
        ck_assert_msg(fabs(got - want[i]) <= tol * (1 + fabs(want[i])),
                      "expected %.9g, got %.9g at index %lld", want[i], got, (long long)i);
    }
}

/* ---- ties and kinks -------------------------------------------------------- */

START_TEST(test_max_min_grad_ties_to_first)
{
    /* Max([1, 5, 2, 4], [1, 3, 5, 4], 4): ties at 0 (x0, x1) and 3 (all three) */
    int64_t d4[1] = { 4 }, d0[1] = { 1 };
    float x0[4] = { 1, 5, 2, 4 }, x1[4] = { 1, 3, 5, 4 }, x2[1] = { 4 };
    float y[4] = { 4, 5, 5, 4 }, dy[4] = { 10, 20, 30, 40 };
    const struct tensor *in[5] = { mkf(1, d4, dy), mkf(1, d4, y), mkf(1, d4, x0), mkf(1, d4, x1),
                                   mkf(1, d0, x2) };
    struct tensor *out[3];
    ck_assert_msg(run("MaxMinGrad", NULL, 0, in, 5, 3, out) == 0, "%s", last_err);
    /* y[0] = 4 comes from x2 alone; y[3] = 4 ties all three: the first wins */
    check_f(out[0], (float[]){ 0, 20, 0, 40 }, 4, 0);
    check_f(out[1], (float[]){ 0, 0, 30, 0 }, 4, 0);
    check_f(out[2], (float[]){ 10, 0, 0, 0 }, 4, 0);
}
END_TEST

START_TEST(test_max_min_grad_nan_goes_to_nan_input)
{
    int64_t d2[1] = { 2 };
    float x0[2] = { 1, 2 }, x1[2] = { NAN, 0 }, y[2] = { NAN, 2 }, dy[2] = { 3, 4 };
    const struct tensor *in[4] = { mkf(1, d2, dy), mkf(1, d2, y), mkf(1, d2, x0),
                                   mkf(1, d2, x1) };
    struct tensor *out[2];
    ck_assert_msg(run("MaxMinGrad", NULL, 0, in, 4, 2, out) == 0, "%s", last_err);
    check_f(out[0], (float[]){ 0, 4 }, 2, 0);
    check_f(out[1], (float[]){ 3, 0 }, 2, 0);
}
END_TEST

/* Big and broadcast: the chunked parallel walk against a reference loop. */
START_TEST(test_max_min_grad_parallel_broadcast)
{
    int64_t dout[3] = { 40, 50, 60 }, da[3] = { 40, 1, 60 }, db[2] = { 50, 1 };
    struct tensor *a = mk_rand(3, da), *b = mk_rand(2, db), *dy = mk_rand(3, dout);
    struct tensor *y = mkf(3, dout, NULL);
    float *yv = y->data;
    const float *av = a->data, *bv = b->data;
    for (int64_t i = 0; i < 40; i++)
        for (int64_t j = 0; j < 50; j++)
            for (int64_t k = 0; k < 60; k++) {
                float p = av[i * 60 + k], q = bv[j];
                yv[(i * 50 + j) * 60 + k] = p >= q ? p : q;
            }
    const struct tensor *in[4] = { dy, y, a, b };
    struct tensor *out[2];
    ck_assert_msg(run("MaxMinGrad", NULL, 0, in, 4, 2, out) == 0, "%s", last_err);
    const float *g = dy->data, *o0 = out[0]->data, *o1 = out[1]->data;
    for (int64_t i = 0; i < 40; i++)
        for (int64_t j = 0; j < 50; j++)
            for (int64_t k = 0; k < 60; k++) {
                int64_t e = (i * 50 + j) * 60 + k;
                int first = av[i * 60 + k] == yv[e];
                ck_assert_msg(o0[e] == (first ? g[e] : 0) && o1[e] == (first ? 0 : g[e]),
                              "wrong routing at %lld", (long long)e);
            }
}
END_TEST

START_TEST(test_reduce_select_grad_ties_to_first)
{
    /* x [2, 2, 3] reduced over axes 1 and 2 (keepdims shape [2, 1, 1]) */
    int64_t dx[3] = { 2, 2, 3 }, dk[3] = { 2, 1, 1 };
    float x[12] = { 1, 7, 3, 7, 0, 7, /**/ -1, -2, -1, -3, -1, -5 };
    float y[2] = { 7, -1 }, dy[2] = { 10, 20 };
    const struct tensor *in[3] = { mkf(3, dk, dy), mkf(3, dx, x), mkf(3, dk, y) };
    struct tensor *g = run1("ReduceSelectGrad", NULL, 0, in, 3);
    check_f(g, (float[]){ 0, 10, 0, 0, 0, 0, /**/ 20, 0, 0, 0, 0, 0 }, 12, 0);
    /* reduced over axis 0 only: columns tie across the two slabs */
    int64_t d0[3] = { 1, 2, 3 };
    float x2[12] = { 1, 2, 3, 4, 5, 6, /**/ 1, 9, 3, 0, 5, 7 };
    float y2[6] = { 1, 9, 3, 4, 5, 7 }, dy2[6] = { 1, 2, 3, 4, 5, 6 };
    const struct tensor *in2[3] = { mkf(3, d0, dy2), mkf(3, dx, x2), mkf(3, d0, y2) };
    g = run1("ReduceSelectGrad", NULL, 0, in2, 3);
    check_f(g, (float[]){ 1, 0, 3, 4, 5, 0, /**/ 0, 2, 0, 0, 0, 6 }, 12, 0);
}
END_TEST

/* Parallel slabs (axis 0 kept) and the sequential walk (axis 0 reduced), on
 * values with many ties, against a reference loop. */
static void check_select_big(const int64_t *kept)
{
    int64_t dx[3] = { 200, 30, 20 };
    struct tensor *x = mkf(3, dx, NULL), *y = mkf(3, kept, NULL), *dy = mk_rand(3, kept);
    float *xv = x->data, *yv = y->data;
    int64_t n = tensor_numel(x), st[3] = { kept[0] > 1 ? kept[1] * kept[2] : 0,
                                           kept[1] > 1 ? kept[2] : 0, kept[2] > 1 ? 1 : 0 };
    for (int64_t i = 0; i < n; i++)
        xv[i] = (float)(int)(frand() * 3);       /* few distinct values: ties everywhere */
    for (int64_t i = 0; i < tensor_numel(y); i++)
        yv[i] = -1e9f;
    for (int64_t i = 0; i < 200; i++)
        for (int64_t j = 0; j < 30; j++)
            for (int64_t k = 0; k < 20; k++) {
                int64_t o = i * st[0] + j * st[1] + k * st[2];
                float v = xv[(i * 30 + j) * 20 + k];
                yv[o] = v > yv[o] ? v : yv[o];
            }
    const struct tensor *in[3] = { dy, x, y };
    struct tensor *g = run1("ReduceSelectGrad", NULL, 0, in, 3);
    uint8_t *taken = testops_alloc((size_t)tensor_numel(y));
    for (int64_t i = 0; i < 200; i++)
        for (int64_t j = 0; j < 30; j++)
            for (int64_t k = 0; k < 20; k++) {
                int64_t o = i * st[0] + j * st[1] + k * st[2], e = (i * 30 + j) * 20 + k;
                float want = 0;
                if (!taken[o] && xv[e] == yv[o]) {
                    want = ((float *)dy->data)[o];
                    taken[o] = 1;
                }
                ck_assert_msg(((float *)g->data)[e] == want, "expected %g, got %g at %lld",
                              want, ((float *)g->data)[e], (long long)e);
            }
}

START_TEST(test_reduce_select_grad_big)
{
    check_select_big((int64_t[]){ 200, 1, 1 });
    check_select_big((int64_t[]){ 200, 1, 20 });
    check_select_big((int64_t[]){ 1, 30, 1 });
}
END_TEST

START_TEST(test_clip_grad_bounds_inclusive)
{
    int64_t d5[1] = { 5 };
    float x[5] = { -1.0f, -0.5f, 0.0f, 0.8f, 1.0f }, dy[5] = { 1, 2, 3, 4, 5 };
    float lo = -0.5f, hi = 0.8f;
    const struct tensor *in[4] = { mkf(1, d5, dy), mkf(1, d5, x), mkf(0, NULL, &lo),
                                   mkf(0, NULL, &hi) };
    check_f(run1("ClipGrad", NULL, 0, in, 4), (float[]){ 0, 2, 3, 4, 0 }, 5, 0);
    in[2] = NULL;                  /* no lower bound */
    check_f(run1("ClipGrad", NULL, 0, in, 4), (float[]){ 1, 2, 3, 4, 0 }, 5, 0);
    check_f(run1("ClipGrad", NULL, 0, in, 2), (float[]){ 1, 2, 3, 4, 5 }, 5, 0);
}
END_TEST

START_TEST(test_kinks_give_zero_or_one_side)
{
    int64_t d3[1] = { 3 };
    float z[3] = { -1, 0, 2 }, dy[3] = { 5, 6, 7 };
    const struct tensor *in[2] = { mkf(1, d3, dy), mkf(1, d3, z) };
    check_f(run1("ReluGrad", NULL, 0, in, 2), (float[]){ 0, 0, 7 }, 3, 0);
    check_f(run1("AbsGrad", NULL, 0, in, 2), (float[]){ -5, 0, 7 }, 3, 0);
    struct onnx_attr alpha = { .name = "alpha", .type = ONNX_ATTR_FLOAT, .f = 0.25f };
    check_f(run1("LeakyReluGrad", &alpha, 1, in, 2), (float[]){ 1.25f, 6, 7 }, 3, 0);
}
END_TEST

/* ---- values against reference loops ---------------------------------------- */

/* Softmax (or LogSoftmax) gradient over [outer, len, inner] in double. */
static void ref_softmax_grad(const float *dy, const float *y, float *dx, int64_t outer,
                             int64_t len, int64_t inner, int log)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double s = 0;
            for (int64_t k = 0; k < len; k++) {
                int64_t e = (o * len + k) * inner + j;
                s += log ? dy[e] : (double)dy[e] * y[e];
            }
            for (int64_t k = 0; k < len; k++) {
                int64_t e = (o * len + k) * inner + j;
                dx[e] = (float)(log ? dy[e] - exp((double)y[e]) * s : y[e] * (dy[e] - s));
            }
        }
}

static void check_softmax_grad(int log, int rank, const int64_t *dims, int axis, int coerce,
                               int64_t outer, int64_t len, int64_t inner)
{
    struct tensor *dy = mk_rand(rank, dims), *y = mk_rand(rank, dims);
    int64_t n = tensor_numel(dy);
    float *want = testops_alloc(sizeof(float) * (size_t)n);
    ref_softmax_grad(dy->data, y->data, want, outer, len, inner, log);
    struct onnx_attr a[2] = {
        { .name = "axis", .type = ONNX_ATTR_INT, .i = axis },
        { .name = "coerce_2d", .type = ONNX_ATTR_INT, .i = coerce },
    };
    const struct tensor *in[2] = { dy, y };
    check_f(run1(log ? "LogSoftmaxGrad" : "SoftmaxGrad", a, 2, in, 2), want, n, 1e-4);
}

START_TEST(test_softmax_grad_geometries)
{
    int64_t d3[3] = { 3, 5, 70 };
    for (int log = 0; log < 2; log++) {
        check_softmax_grad(log, 3, d3, -1, 0, 15, 70, 1);   /* rows */
        check_softmax_grad(log, 3, d3, 1, 0, 3, 5, 70);     /* column blocks, ragged last */
        check_softmax_grad(log, 3, d3, 1, 1, 3, 350, 1);    /* opset < 13: coerced to 2-D */
        check_softmax_grad(log, 3, d3, -3, 1, 1, 1050, 1);
    }
    int64_t big[2] = { 300, 400 };                          /* parallel rows */
    check_softmax_grad(0, 2, big, 1, 0, 300, 400, 1);
    check_softmax_grad(1, 2, big, 0, 0, 1, 300, 400);       /* parallel column blocks */
}
END_TEST

START_TEST(test_div_pow_grad_broadcast)
{
    int64_t da[2] = { 2, 3 }, db[1] = { 3 };
    float a[6] = { 1, 2, 3, 4, 0, 0.5f }, b[3] = { 2, 0, -1 }, dy[6] = { 1, 1, 1, 2, 2, 2 };
    const struct tensor *in[3] = { mkf(2, da, dy), mkf(2, da, a), mkf(1, db, b) };
    float want_div[6], want_pa[6], want_pb[6];
    for (int i = 0; i < 6; i++) {
        float av = a[i], bv = b[i % 3], d = dy[i];
        want_div[i] = -d * av / (bv * bv);
        want_pa[i] = bv == 0 ? 0 : d * bv * powf(av, bv - 1);
        want_pb[i] = av == 0 && bv >= 0 ? 0 : d * powf(av, bv) * logf(av);
    }
    /* b[1] = 0: the division is by zero there, inf/NaN like the forward */
    struct tensor *g = run1("DivGrad", NULL, 0, in, 3);
    for (int i = 0; i < 6; i++)
        if (b[i % 3] != 0)
            ck_assert_msg(fabsf(((float *)g->data)[i] - want_div[i]) <= 1e-6f * fabsf(want_div[i]),
                          "DivGrad at %d", i);
    struct onnx_attr wrt = { .name = "wrt", .type = ONNX_ATTR_INT, .i = 0 };
    check_f(run1("PowGrad", &wrt, 1, in, 3), want_pa, 6, 1e-6);
    wrt.i = 1;
    check_f(run1("PowGrad", &wrt, 1, in, 3), want_pb, 6, 1e-6);
    wrt.i = 2;
    struct tensor *out[1];
    ck_assert_int_ne(run("PowGrad", &wrt, 1, in, 3, 1, out), 0);
}
END_TEST

/* Same inputs, same bits, through the parallel chunked walker. */
START_TEST(test_grad_kernels_deterministic)
{
    int64_t d[2] = { 512, 300 };
    struct tensor *dy = mk_rand(2, d), *z = mk_rand(2, d);
    const struct tensor *in[2] = { dy, z };
    static const char *const names[] = { "SigmoidGrad", "TanhGrad", "GeluGrad", "ErfGrad",
                                         "SoftmaxGrad" };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        struct tensor *a = run1(names[k], NULL, 0, in, 2), *b = run1(names[k], NULL, 0, in, 2);
        ck_assert_msg(!memcmp(a->data, b->data, tensor_size_bytes(a)), "%s differs", names[k]);
    }
}
END_TEST

static void teardown(void) { testops_free_all(); }

static Suite *math_grad_suite(void)
{
    Suite *s = suite_create("ops_math_grad");
    TCase *tc = tcase_create("kernels");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_max_min_grad_ties_to_first);
    tcase_add_test(tc, test_max_min_grad_nan_goes_to_nan_input);
    tcase_add_test(tc, test_max_min_grad_parallel_broadcast);
    tcase_add_test(tc, test_reduce_select_grad_ties_to_first);
    tcase_add_test(tc, test_reduce_select_grad_big);
    tcase_add_test(tc, test_clip_grad_bounds_inclusive);
    tcase_add_test(tc, test_kinks_give_zero_or_one_side);
    tcase_add_test(tc, test_softmax_grad_geometries);
    tcase_add_test(tc, test_div_pow_grad_broadcast);
    tcase_add_test(tc, test_grad_kernels_deterministic);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(math_grad_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
