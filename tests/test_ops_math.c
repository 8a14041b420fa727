/* tests/test_ops_math.c — the elementwise, comparison, cast, softmax and
 * reduction operators (ops/binary.c, unary.c, compare.c, cast.c, softmax.c,
 * reduce.c) called directly through the registry: parse, infer, kernel.
 * Expected values come from straightforward reference loops in this file or
 * from numpy (pasted constants, noted where used). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/ops.h"
#include "testops.h"
#include "testutil.h"

/* ---- helpers -------------------------------------------------------------- */

/* A tensor with a copy of `data` (or zeros when NULL); the short name keeps
 * the many calls inside expressions on one line. */
static struct tensor *mk(int dtype, int rank, const int64_t *dims, const void *data)
{
    return testops_tensor(dtype, rank, dims, data);
}

static uint32_t rng_state = 12345;

static struct tensor *mk_rand(int rank, const int64_t *dims)
{
    return testops_tensor_rand(&rng_state, rank, dims);
}

static struct onnx_attr attr_int(const char *name, int64_t v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INT, .i = v };
}

static struct onnx_attr attr_float(const char *name, float v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_FLOAT, .f = v };
}

static struct onnx_attr attr_string(const char *name, const char *v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_STRING, .s = (char *)v,
                               .s_len = strlen(v) };
}

static struct onnx_attr attr_ints(const char *name, int64_t *v, int n)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INTS, .ints = v, .n = n };
}

static char last_err[512];

/* Runs op `name` at `opset` on the inputs (NULL entries are omitted optional
 * inputs); returns the output (data allocated here) or NULL with last_err. */
static struct tensor *run(const char *name, int opset, struct onnx_attr *attrs, int n_attrs,
                          const struct tensor **in, int n_in)
{
    int version = 0;
    last_err[0] = 0;
    const struct op_def *d = op_registry_find("", name, opset, &version);
    ck_assert_msg(d != NULL, "%s not registered at opset %d", name, opset);
    struct onnx_node node = { .name = "n0", .op_type = (char *)name, .domain = "",
                              .n_inputs = n_in, .n_outputs = 1, .n_attrs = n_attrs,
                              .attrs = attrs };
    void *params = NULL;
    if (d->parse && d->parse(&node, version, &params, last_err, sizeof last_err))
        return NULL;
    struct tensor *out = testops_alloc(sizeof *out);
    struct tensor *outs[1] = { out };
    struct op_env env = { .backend = &backend_cpu, .threads = 2, .err = last_err,
                          .err_size = sizeof last_err };
    struct op_call c = { .def = d, .version = version, .params = params, .node_name = "n0",
                         .n_in = n_in, .in = in, .n_out = 1, .out = outs, .env = &env };
    int rc = d->infer(&c);
    if (!rc) {
        ck_assert_int_gt(onnx_dtype_size(out->dtype), 0);
        out->data = testops_alloc(tensor_size_bytes(out));
        rc = d->kernel[BACKEND_CPU](&c);
    }
    if (params)
        d->params_free ? d->params_free(params) : free(params);
    return rc ? NULL : out;
}

static struct tensor *run2(const char *name, int opset, const struct tensor *a,
                           const struct tensor *b)
{
    const struct tensor *in[2] = { a, b };
    return run(name, opset, NULL, 0, in, 2);
}

static void check_shape(const struct tensor *t, int rank, const int64_t *dims)
{
    ck_assert_int_eq(t->rank, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_msg(t->dims[i] == dims[i], "dim %d: expected %lld, got %lld", i,
                      (long long)dims[i], (long long)t->dims[i]);
}

static void check_close_f(const float *got, const double *want, int64_t n, double rtol, double atol)
{
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i])) {
            ck_assert_msg(isnan(got[i]), "expected NaN, got %.9g at index %lld", got[i],
                          (long long)i);
            continue;
        }
        double diff = fabs((double)got[i] - want[i]);
        ck_assert_msg(diff <= atol + rtol * fabs(want[i]), "expected %.9g, got %.9g at index %lld",
                      want[i], got[i], (long long)i);
    }
}

/* Offset of output element `lin` in t, seen through numpy broadcasting. */
static int64_t ref_offset(const struct tensor *t, const struct tensor *out, int64_t lin)
{
    int64_t off = 0, stride = 1;
    for (int i = out->rank - 1; i >= 0; i--) {
        int64_t idx = lin % out->dims[i];
        lin /= out->dims[i];
        int ti = i - (out->rank - t->rank);
        if (ti < 0)
            continue;
        if (t->dims[ti] != 1)
            off += idx * stride;
        stride *= t->dims[ti];
    }
    return off;
}

/* ---- binary arithmetic ------------------------------------------------------ */

static double ref_binary(const char *op, double x, double y)
{
    if (!strcmp(op, "Add"))
        return (float)x + (float)y;
    if (!strcmp(op, "Sub"))
        return (float)x - (float)y;
    if (!strcmp(op, "Mul"))
        return (float)x * (float)y;
    if (!strcmp(op, "Div"))
        return (float)x / (float)y;
    if (!strcmp(op, "Max"))
        return x > y ? x : y;
    return x < y ? x : y;
}

static void check_broadcast_case(const char *op, int ra, const int64_t *da, int rb,
                                 const int64_t *db, int ro, const int64_t *dout)
{
    struct tensor *a = mk_rand(ra, da), *b = mk_rand(rb, db);
    struct tensor *y = run2(op, 14, a, b);
    ck_assert_msg(y != NULL, "%s failed: %s", op, last_err);
    check_shape(y, ro, dout);
    int64_t n = tensor_numel(y);
    double *want = testops_alloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        want[i] = ref_binary(op, ((float *)a->data)[ref_offset(a, y, i)],
                             ((float *)b->data)[ref_offset(b, y, i)]);
    check_close_f(y->data, want, n, 1e-6, 0);
}

START_TEST(test_broadcast_shapes)
{
    static const char *ops[] = { "Add", "Sub", "Mul", "Div", "Max", "Min" };
    for (int k = 0; k < 6; k++) {
        const char *op = ops[k];
        check_broadcast_case(op, 3, (int64_t[]){ 2, 3, 4 }, 3, (int64_t[]){ 2, 3, 4 }, 3,
                             (int64_t[]){ 2, 3, 4 });
        check_broadcast_case(op, 3, (int64_t[]){ 2, 3, 4 }, 1, (int64_t[]){ 4 }, 3,
                             (int64_t[]){ 2, 3, 4 });
        check_broadcast_case(op, 3, (int64_t[]){ 2, 3, 4 }, 0, NULL, 3, (int64_t[]){ 2, 3, 4 });
        check_broadcast_case(op, 0, NULL, 2, (int64_t[]){ 3, 5 }, 2, (int64_t[]){ 3, 5 });
        check_broadcast_case(op, 4, (int64_t[]){ 2, 3, 1, 5 }, 3, (int64_t[]){ 3, 4, 1 }, 4,
                             (int64_t[]){ 2, 3, 4, 5 });
        check_broadcast_case(op, 2, (int64_t[]){ 3, 1 }, 2, (int64_t[]){ 1, 7 }, 2,
                             (int64_t[]){ 3, 7 });
        check_broadcast_case(op, 4, (int64_t[]){ 2, 1, 3, 1 }, 4, (int64_t[]){ 1, 4, 1, 5 }, 4,
                             (int64_t[]){ 2, 4, 3, 5 });
    }
    testops_free_all();
}
END_TEST

/* Big enough for the parallel chunked walk (>= 65536 elements, rows longer
 * than one chunk and many short rows), and bit-identical when repeated. */
START_TEST(test_broadcast_large_deterministic)
{
    check_broadcast_case("Add", 3, (int64_t[]){ 64, 33, 40 }, 2, (int64_t[]){ 33, 1 }, 3,
                         (int64_t[]){ 64, 33, 40 });
    check_broadcast_case("Mul", 1, (int64_t[]){ 100000 }, 1, (int64_t[]){ 100000 }, 1,
                         (int64_t[]){ 100000 });
    check_broadcast_case("Sub", 2, (int64_t[]){ 3, 40000 }, 2, (int64_t[]){ 3, 1 }, 2,
                         (int64_t[]){ 3, 40000 });
    struct tensor *a = mk_rand(2, (int64_t[]){ 300, 400 }), *b = mk_rand(1, (int64_t[]){ 400 });
    struct tensor *y1 = run2("Add", 14, a, b), *y2 = run2("Add", 14, a, b);
    ck_assert(y1 && y2);
    ck_assert_int_eq(memcmp(y1->data, y2->data, tensor_size_bytes(y1)), 0);
    testops_free_all();
}
END_TEST

START_TEST(test_binary_errors)
{
    struct tensor *a = mk_rand(2, (int64_t[]){ 2, 3 }), *b = mk_rand(1, (int64_t[]){ 4 });
    ck_assert_ptr_null(run2("Add", 14, a, b));
    ck_assert_msg(strstr(last_err, "do not broadcast") && strstr(last_err, "n0"),
                  "message was: %s", last_err);
    struct tensor *i = mk(ONNX_DTYPE_INT32, 1, (int64_t[]){ 3 }, NULL);
    ck_assert_ptr_null(run2("Mul", 14, mk_rand(1, (int64_t[]){ 3 }), i));
    ck_assert_msg(strstr(last_err, "must match"), "message was: %s", last_err);
    struct tensor *h = mk(ONNX_DTYPE_FLOAT16, 1, (int64_t[]){ 3 }, NULL);
    ck_assert_ptr_null(run2("Add", 14, h, h));
    ck_assert_msg(strstr(last_err, "unsupported dtype"), "message was: %s", last_err);
    testops_free_all();
}
END_TEST

START_TEST(test_integer_arithmetic)
{
    int64_t d4[] = { 4 };
    /* wrap like numpy */
    int8_t i8a[] = { 127, -128, 100, -1 }, i8b[] = { 1, -1, 100, 1 };
    struct tensor *y = run2("Add", 14, mk(ONNX_DTYPE_INT8, 1, d4, i8a), mk(ONNX_DTYPE_INT8, 1, d4, i8b));
    ck_assert(y);
    int8_t i8want[] = { -128, 127, -56, 0 };
    ck_assert_int_eq(memcmp(y->data, i8want, 4), 0);
    uint16_t u16a[] = { 65535, 300, 2, 0 }, u16b[] = { 65535, 300, 3, 9 };
    y = run2("Mul", 14, mk(ONNX_DTYPE_UINT16, 1, d4, u16a), mk(ONNX_DTYPE_UINT16, 1, d4, u16b));
    ck_assert(y);
    uint16_t u16want[] = { 1, (uint16_t)(90000 % 65536), 6, 0 };
    ck_assert_int_eq(memcmp(y->data, u16want, 8), 0);
    int32_t i32a[] = { INT32_MAX, INT32_MIN, 5, -7 }, i32b[] = { 1, 1, 3, 2 };
    y = run2("Add", 14, mk(ONNX_DTYPE_INT32, 1, d4, i32a), mk(ONNX_DTYPE_INT32, 1, d4, i32b));
    ck_assert(y);
    ck_assert_int_eq(((int32_t *)y->data)[0], INT32_MIN);
    y = run2("Sub", 14, mk(ONNX_DTYPE_INT32, 1, d4, i32a), mk(ONNX_DTYPE_INT32, 1, d4, i32b));
    ck_assert(y);
    ck_assert_int_eq(((int32_t *)y->data)[1], INT32_MAX);
    /* division truncates toward zero; /0 gives 0; INT_MIN / -1 wraps */
    int32_t na[] = { -7, 7, INT32_MIN, 5 }, nb[] = { 2, -2, -1, 0 };
    y = run2("Div", 14, mk(ONNX_DTYPE_INT32, 1, d4, na), mk(ONNX_DTYPE_INT32, 1, d4, nb));
    ck_assert(y);
    int32_t dwant[] = { -3, -3, INT32_MIN, 0 };
    ck_assert_int_eq(memcmp(y->data, dwant, sizeof dwant), 0);
    uint64_t ua[] = { UINT64_MAX, 10, 7, 1 }, ub[] = { 2, 3, 0, 1 };
    y = run2("Div", 14, mk(ONNX_DTYPE_UINT64, 1, d4, ua), mk(ONNX_DTYPE_UINT64, 1, d4, ub));
    ck_assert(y);
    uint64_t uwant[] = { UINT64_MAX / 2, 3, 0, 1 };
    ck_assert_int_eq(memcmp(y->data, uwant, sizeof uwant), 0);
    testops_free_all();
}
END_TEST

START_TEST(test_pow_types)
{
    int64_t d3[] = { 3 };
    float xf[] = { 2, -3, 0.5f };
    int64_t e64[] = { 3, 2, -1 };
    struct tensor *y = run2("Pow", 15, mk(ONNX_DTYPE_FLOAT, 1, d3, xf), mk(ONNX_DTYPE_INT64, 1, d3, e64));
    ck_assert_msg(y != NULL, "%s", last_err);
    ck_assert_int_eq(y->dtype, ONNX_DTYPE_FLOAT);
    check_close_f(y->data, (double[]){ 8, 9, 2 }, 3, 1e-6, 0);
    int32_t xi[] = { 2, -3, 7 };
    float ef[] = { 10, 3, 0.5f };
    y = run2("Pow", 15, mk(ONNX_DTYPE_INT32, 1, d3, xi), mk(ONNX_DTYPE_FLOAT, 1, d3, ef));
    ck_assert(y);
    ck_assert_int_eq(y->dtype, ONNX_DTYPE_INT32);
    int32_t want[] = { 1024, -27, 2 };  /* numpy: int(7 ** 0.5) = 2 */
    ck_assert_int_eq(memcmp(y->data, want, sizeof want), 0);
    int64_t bi[] = { 3, -2, 5 }, ei[] = { 40, 3, 0 };
    y = run2("Pow", 15, mk(ONNX_DTYPE_INT64, 1, d3, bi), mk(ONNX_DTYPE_INT64, 1, d3, ei));
    ck_assert(y);
    ck_assert_int_eq(((int64_t *)y->data)[0], (int64_t)12157665459056928801ULL); /* 3^40 wraps */
    ck_assert_int_eq(((int64_t *)y->data)[1], -8);
    ck_assert_int_eq(((int64_t *)y->data)[2], 1);
    /* opset 7 resolves to the 7 implementation and broadcasts a scalar */
    float e0 = 2;
    y = run2("Pow", 7, mk(ONNX_DTYPE_FLOAT, 1, d3, xf), mk(ONNX_DTYPE_FLOAT, 0, NULL, &e0));
    ck_assert(y);
    check_close_f(y->data, (double[]){ 4, 9, 0.25 }, 3, 1e-6, 0);
    testops_free_all();
}
END_TEST

START_TEST(test_variadic)
{
    float a[] = { 1, 5, NAN }, b[] = { 4 }, c2[] = { 0, 10, 2, 3, -1, 7 };
    struct tensor *ta = mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 3 }, a);
    struct tensor *tb = mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 1 }, b);
    struct tensor *tc = mk(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ 2, 3 }, c2);
    const struct tensor *in[3] = { ta, tb, tc };
    struct tensor *y = run("Sum", 13, NULL, 0, in, 3);
    ck_assert_msg(y != NULL, "%s", last_err);
    check_shape(y, 2, (int64_t[]){ 2, 3 });
    check_close_f(y->data, (double[]){ 5, 19, NAN, 8, 8, NAN }, 6, 1e-6, 0);
    y = run("Max", 13, NULL, 0, in, 3);
    ck_assert(y);
    check_close_f(y->data, (double[]){ 4, 10, NAN, 4, 5, NAN }, 6, 0, 0);
    y = run("Min", 8, NULL, 0, in, 3);
    ck_assert(y);
    check_close_f(y->data, (double[]){ 0, 4, NAN, 1, -1, NAN }, 6, 0, 0);
    y = run("Sum", 13, NULL, 0, in, 1);
    ck_assert(y);
    check_close_f(y->data, (double[]){ 1, 5, NAN }, 3, 0, 0);
    testops_free_all();
}
END_TEST

/* ---- unary ----------------------------------------------------------------- */

static struct tensor *run1(const char *name, int opset, struct onnx_attr *attrs, int n_attrs,
                           const struct tensor *x)
{
    const struct tensor *in[1] = { x };
    return run(name, opset, attrs, n_attrs, in, 1);
}

START_TEST(test_unary_float)
{
    float xs[] = { -3.5f, -1, -0.25f, 0.125f, 0.5f, 2, 30, -30 };
    int64_t d[] = { 8 };
    struct tensor *x = mk(ONNX_DTYPE_FLOAT, 1, d, xs);
    double want[8];
    struct tensor *y;
#define CHECK_UNARY(name, opset, expr)                                                  \
    y = run1(name, opset, NULL, 0, x);                                                  \
    ck_assert_msg(y != NULL, "%s: %s", name, last_err);                                 \
    for (int i = 0; i < 8; i++) {                                                       \
        double v = xs[i];                                                               \
        want[i] = (expr);                                                               \
    }                                                                                   \
    check_close_f(y->data, want, 8, 1e-6, 1e-30);
    CHECK_UNARY("Exp", 13, exp(v))
    CHECK_UNARY("Neg", 13, -v)
    CHECK_UNARY("Abs", 6, fabs(v))
    CHECK_UNARY("Reciprocal", 13, 1 / v)
    CHECK_UNARY("Relu", 14, v < 0 ? 0 : v)
    CHECK_UNARY("Relu", 6, v < 0 ? 0 : v)
    CHECK_UNARY("Sigmoid", 13, 1 / (1 + exp(-v)))
    CHECK_UNARY("Tanh", 13, tanh(v))
    CHECK_UNARY("Erf", 13, erf(v))
    CHECK_UNARY("Gelu", 20, 0.5 * v * (1 + erf(v / sqrt(2))))
    CHECK_UNARY("LeakyRelu", 16, v < 0 ? 0.01 * v : v)
#undef CHECK_UNARY
    struct onnx_attr a[] = { attr_string("approximate", "tanh") };
    y = run1("Gelu", 20, a, 1, x);
    ck_assert(y);
    for (int i = 0; i < 8; i++) {
        double v = xs[i];
        want[i] = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    }
    check_close_f(y->data, want, 8, 1e-5, 1e-7);
    struct onnx_attr alpha[] = { attr_float("alpha", 0.5f) };
    y = run1("LeakyRelu", 6, alpha, 1, x);
    ck_assert(y);
    ck_assert_float_eq(((float *)y->data)[0], -1.75f);
    struct onnx_attr bad[] = { attr_string("approximate", "fast") };
    ck_assert_ptr_null(run1("Gelu", 20, bad, 1, x));
    ck_assert_msg(strstr(last_err, "approximate"), "message was: %s", last_err);
    float pos[] = { 4, 0.25f, 1e-3f, 0 };
    y = run1("Sqrt", 13, NULL, 0, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 4 }, pos));
    ck_assert(y);
    check_close_f(y->data, (double[]){ 2, 0.5, sqrt(1e-3), 0 }, 4, 1e-6, 0);
    y = run1("Log", 13, NULL, 0, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 4 }, pos));
    ck_assert(y);
    check_close_f(y->data, (double[]){ log(4), log(0.25), log(1e-3) }, 3, 1e-6, 0);
    ck_assert(isinf(((float *)y->data)[3]) && ((float *)y->data)[3] < 0);
    testops_free_all();
}
END_TEST

START_TEST(test_unary_double_and_int)
{
    double xd[] = { -2, 0.5, 3 };
    struct tensor *y = run1("Exp", 13, NULL, 0, mk(ONNX_DTYPE_DOUBLE, 1, (int64_t[]){ 3 }, xd));
    ck_assert(y);
    ck_assert_int_eq(y->dtype, ONNX_DTYPE_DOUBLE);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(((double *)y->data)[i], exp(xd[i]), 1e-15);
    int32_t xi[] = { -5, 0, 7, INT32_MIN };
    y = run1("Relu", 14, NULL, 0, mk(ONNX_DTYPE_INT32, 1, (int64_t[]){ 4 }, xi));
    ck_assert(y);
    int32_t want[] = { 0, 0, 7, 0 };
    ck_assert_int_eq(memcmp(y->data, want, sizeof want), 0);
    y = run1("Abs", 13, NULL, 0, mk(ONNX_DTYPE_INT32, 1, (int64_t[]){ 4 }, xi));
    ck_assert(y);
    int32_t awant[] = { 5, 0, 7, INT32_MIN };
    ck_assert_int_eq(memcmp(y->data, awant, sizeof awant), 0);
    uint8_t b[] = { 0, 1, 1 };
    y = run1("Not", 1, NULL, 0, mk(ONNX_DTYPE_BOOL, 1, (int64_t[]){ 3 }, b));
    ck_assert(y);
    ck_assert_int_eq(((uint8_t *)y->data)[0], 1);
    ck_assert_int_eq(((uint8_t *)y->data)[1], 0);
    ck_assert_ptr_null(run1("Exp", 13, NULL, 0, mk(ONNX_DTYPE_INT32, 1, (int64_t[]){ 4 }, xi)));
    ck_assert_msg(strstr(last_err, "unsupported dtype int32") || strstr(last_err, "unsupported dtype"),
                  "message was: %s", last_err);
    testops_free_all();
}
END_TEST

START_TEST(test_clip_versions)
{
    float xs[] = { -3, -1, 0, 1, 3 };
    int64_t d[] = { 5 };
    struct tensor *x = mk(ONNX_DTYPE_FLOAT, 1, d, xs);
    struct onnx_attr a[] = { attr_float("min", -1.5f), attr_float("max", 2) };
    struct tensor *y = run1("Clip", 6, a, 2, x);
    ck_assert_msg(y != NULL, "%s", last_err);
    check_close_f(y->data, (double[]){ -1.5, -1, 0, 1, 2 }, 5, 0, 0);
    y = run1("Clip", 6, NULL, 0, x);          /* no bounds: identity */
    ck_assert(y);
    check_close_f(y->data, (double[]){ -3, -1, 0, 1, 3 }, 5, 0, 0);
    float lo = 0.5f, hi = -0.5f;
    const struct tensor *in[3] = { x, mk(ONNX_DTYPE_FLOAT, 0, NULL, &lo), NULL };
    y = run("Clip", 13, NULL, 0, in, 3);      /* only min */
    ck_assert(y);
    check_close_f(y->data, (double[]){ 0.5, 0.5, 0.5, 1, 3 }, 5, 0, 0);
    in[2] = mk(ONNX_DTYPE_FLOAT, 0, NULL, &hi);  /* min > max: max wins, like numpy.clip */
    y = run("Clip", 13, NULL, 0, in, 3);
    ck_assert(y);
    check_close_f(y->data, (double[]){ -0.5, -0.5, -0.5, -0.5, -0.5 }, 5, 0, 0);
    int8_t xi[] = { -128, -5, 0, 5, 127 }, maxv = 4;
    const struct tensor *ini[3] = { mk(ONNX_DTYPE_INT8, 1, d, xi), NULL,
                                    mk(ONNX_DTYPE_INT8, 0, NULL, &maxv) };
    y = run("Clip", 13, NULL, 0, ini, 3);
    ck_assert(y);
    int8_t want[] = { -128, -5, 0, 4, 4 };
    ck_assert_int_eq(memcmp(y->data, want, sizeof want), 0);
    const struct tensor *bad[2] = { x, mk(ONNX_DTYPE_DOUBLE, 0, NULL, NULL) };
    ck_assert_ptr_null(run("Clip", 13, NULL, 0, bad, 2));
    ck_assert_msg(strstr(last_err, "min"), "message was: %s", last_err);
    testops_free_all();
}
END_TEST

/* ---- comparisons and Where -------------------------------------------------- */

START_TEST(test_compare_where)
{
    float a[] = { 1, 2, 3, 4, 5, 6 }, b[] = { 2, 5, 3 };
    struct tensor *ta = mk(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ 2, 3 }, a);
    struct tensor *tb = mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 3 }, b);
    struct tensor *lt = run2("Less", 13, ta, tb), *eq = run2("Equal", 19, ta, tb);
    struct tensor *gt = run2("Greater", 9, ta, tb), *le = run2("LessOrEqual", 16, ta, tb);
    ck_assert(lt && eq && gt && le);
    ck_assert_int_eq(lt->dtype, ONNX_DTYPE_BOOL);
    uint8_t lwant[] = { 1, 1, 0, 0, 0, 0 }, ewant[] = { 0, 0, 1, 0, 1, 0 };
    uint8_t gwant[] = { 0, 0, 0, 1, 0, 1 }, lewant[] = { 1, 1, 1, 0, 1, 0 };
    ck_assert_int_eq(memcmp(lt->data, lwant, 6), 0);
    ck_assert_int_eq(memcmp(eq->data, ewant, 6), 0);
    ck_assert_int_eq(memcmp(gt->data, gwant, 6), 0);
    ck_assert_int_eq(memcmp(le->data, lewant, 6), 0);
    uint8_t ba[] = { 1, 0 }, bb[] = { 1 };
    struct tensor *beq = run2("Equal", 11, mk(ONNX_DTYPE_BOOL, 1, (int64_t[]){ 2 }, ba),
                              mk(ONNX_DTYPE_BOOL, 1, (int64_t[]){ 1 }, bb));
    ck_assert(beq);
    ck_assert_int_eq(((uint8_t *)beq->data)[0], 1);
    ck_assert_int_eq(((uint8_t *)beq->data)[1], 0);
    /* Where: condition [2,1], x [3], y scalar -> [2,3] */
    uint8_t cond[] = { 1, 0 };
    int64_t xv[] = { 10, 20, 30 }, yv = -1;
    const struct tensor *in[3] = { mk(ONNX_DTYPE_BOOL, 2, (int64_t[]){ 2, 1 }, cond),
                                   mk(ONNX_DTYPE_INT64, 1, (int64_t[]){ 3 }, xv),
                                   mk(ONNX_DTYPE_INT64, 0, NULL, &yv) };
    struct tensor *w = run("Where", 16, NULL, 0, in, 3);
    ck_assert_msg(w != NULL, "%s", last_err);
    check_shape(w, 2, (int64_t[]){ 2, 3 });
    int64_t wwant[] = { 10, 20, 30, -1, -1, -1 };
    ck_assert_int_eq(memcmp(w->data, wwant, sizeof wwant), 0);
    in[0] = mk(ONNX_DTYPE_INT32, 1, (int64_t[]){ 1 }, NULL);
    ck_assert_ptr_null(run("Where", 16, NULL, 0, in, 3));
    ck_assert_msg(strstr(last_err, "bool"), "message was: %s", last_err);
    testops_free_all();
}
END_TEST

/* ---- Cast ------------------------------------------------------------------ */

static struct tensor *cast_to(int to, int opset, const struct tensor *x)
{
    struct onnx_attr a[] = { attr_int("to", to) };
    return run1("Cast", opset, a, 1, x);
}

START_TEST(test_cast_float16)
{
    /* Every finite half survives half -> float -> half exactly. */
    int64_t n = 65536;
    uint16_t *h = malloc(sizeof(uint16_t) * (size_t)n);
    ck_assert_ptr_nonnull(h);
    for (int64_t i = 0; i < n; i++)
        h[i] = (uint16_t)i;
    struct tensor *th = mk(ONNX_DTYPE_FLOAT16, 1, &n, h);
    struct tensor *f = cast_to(ONNX_DTYPE_FLOAT, 25, th);
    ck_assert(f);
    struct tensor *back = cast_to(ONNX_DTYPE_FLOAT16, 25, f);
    struct tensor *d = cast_to(ONNX_DTYPE_DOUBLE, 25, th);
    struct tensor *back_d = cast_to(ONNX_DTYPE_FLOAT16, 25, d);
    ck_assert(back && d && back_d);
    for (int64_t i = 0; i < n; i++) {
        float v = ((float *)f->data)[i];
        if (isnan(v)) {
            ck_assert_msg((((uint16_t *)back->data)[i] & 0x7c00) == 0x7c00 &&
                              (((uint16_t *)back->data)[i] & 0x3ff),
                          "NaN half %04llx did not stay NaN", (long long)i);
            continue;
        }
        ck_assert_msg(((uint16_t *)back->data)[i] == h[i], "half %04llx -> %g -> %04x",
                      (long long)i, v, ((uint16_t *)back->data)[i]);
        ck_assert_msg(((uint16_t *)back_d->data)[i] == h[i], "half %04llx via double",
                      (long long)i);
    }
    free(h);
    /* Known roundings (numpy float16): ties to even, overflow, subnormals. */
    float xs[] = { 65519.0f, 65520.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048,
                   0x1p-25f, 0x1.8p-25f, 0x1p-24f, -0.0f, 0x1.ffcp-15f, 1e-8f };
    uint16_t want[] = { 0x7bff, 0x7c00, 0x3c00, 0x3c02, 0x0000, 0x0001, 0x0001, 0x8000,
                        0x0400, 0x0000 };
    struct tensor *y = cast_to(ONNX_DTYPE_FLOAT16, 19, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 10 }, xs));
    ck_assert(y);
    for (int i = 0; i < 10; i++)
        ck_assert_msg(((uint16_t *)y->data)[i] == want[i], "float %a -> half %04x, expected %04x",
                      xs[i], ((uint16_t *)y->data)[i], want[i]);
    /* double just above a half tie must round up (no double rounding via float) */
    double dx[] = { 1.0 + 1.0 / 2048 + 1e-12 };
    y = cast_to(ONNX_DTYPE_FLOAT16, 19, mk(ONNX_DTYPE_DOUBLE, 1, (int64_t[]){ 1 }, dx));
    ck_assert(y);
    ck_assert_int_eq(((uint16_t *)y->data)[0], 0x3c01);
    testops_free_all();
}
END_TEST

START_TEST(test_cast_bfloat16_and_ints)
{
    float xs[] = { 1.0f, 1.0f + 0x1p-8f, 1.0f + 0x1.8p-8f, 0.47892547f, -2.5f, INFINITY };
    uint16_t want[] = { 0x3f80, 0x3f80, 0x3f81, 0x3ef5, 0xc020, 0x7f80 };
    struct tensor *y = cast_to(ONNX_DTYPE_BFLOAT16, 25, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 6 }, xs));
    ck_assert(y);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((uint16_t *)y->data)[i] == want[i], "float %a -> bf16 %04x, expected %04x",
                      xs[i], ((uint16_t *)y->data)[i], want[i]);
    float fi[] = { 2.9f, -2.9f, 1e10f, -1e10f, NAN, 0 };
    y = cast_to(ONNX_DTYPE_INT32, 13, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 6 }, fi));
    ck_assert(y);
    int32_t iwant[] = { 2, -2, INT32_MAX, INT32_MIN, 0, 0 };
    ck_assert_int_eq(memcmp(y->data, iwant, sizeof iwant), 0);
    y = cast_to(ONNX_DTYPE_BOOL, 13, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 6 }, fi));
    ck_assert(y);
    uint8_t bwant[] = { 1, 1, 1, 1, 1, 0 };
    ck_assert_int_eq(memcmp(y->data, bwant, sizeof bwant), 0);
    int64_t big[] = { -1, 300, INT64_MAX };
    y = cast_to(ONNX_DTYPE_UINT8, 13, mk(ONNX_DTYPE_INT64, 1, (int64_t[]){ 3 }, big));
    ck_assert(y);
    uint8_t uwant[] = { 255, 44, 255 };
    ck_assert_int_eq(memcmp(y->data, uwant, sizeof uwant), 0);
    y = cast_to(ONNX_DTYPE_DOUBLE, 6, mk(ONNX_DTYPE_INT64, 1, (int64_t[]){ 3 }, big));
    ck_assert(y);
    ck_assert_double_eq(((double *)y->data)[1], 300.0);
    /* CastLike takes the dtype of its second input */
    const struct tensor *in[2] = { mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 6 }, fi),
                                   mk(ONNX_DTYPE_INT8, 0, NULL, NULL) };
    y = run("CastLike", 21, NULL, 0, in, 2);
    ck_assert(y);
    ck_assert_int_eq(y->dtype, ONNX_DTYPE_INT8);
    int8_t cwant[] = { 2, -2, 127, -128, 0, 0 };
    ck_assert_int_eq(memcmp(y->data, cwant, sizeof cwant), 0);
    /* exotic types are refused at parse time with a clear message */
    ck_assert_ptr_null(cast_to(17, 25, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 6 }, fi)));
    ck_assert_msg(strstr(last_err, "unsupported") && strstr(last_err, "FLOAT8E4M3FN"),
                  "message was: %s", last_err);
    ck_assert_ptr_null(cast_to(ONNX_DTYPE_STRING, 25, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 6 }, fi)));
    ck_assert_msg(strstr(last_err, "unsupported"), "message was: %s", last_err);
    testops_free_all();
}
END_TEST

/* ---- Softmax ----------------------------------------------------------------- */

/* Reference: softmax over [outer, len, inner] in double. */
static void ref_softmax(const float *x, double *y, int64_t outer, int64_t len, int64_t inner,
                        int log_out)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < len; k++)
                m = fmax(m, x[(o * len + k) * inner + j]);
            for (int64_t k = 0; k < len; k++)
                s += exp(x[(o * len + k) * inner + j] - m);
            for (int64_t k = 0; k < len; k++) {
                double v = x[(o * len + k) * inner + j] - m;
                y[(o * len + k) * inner + j] = log_out ? v - log(s) : exp(v) / s;
            }
        }
}

START_TEST(test_softmax_versions)
{
    int64_t dims[] = { 3, 4, 70 };           /* 70 columns: one full block and a partial one */
    struct tensor *x = mk_rand(3, dims);
    double *want = testops_alloc(sizeof(double) * 3 * 4 * 70);
    for (int log_out = 0; log_out < 2; log_out++) {
        const char *name = log_out ? "LogSoftmax" : "Softmax";
        for (int axis = -3; axis < 3; axis++) {
            int a = axis < 0 ? axis + 3 : axis;
            int64_t outer = 1, mid = dims[a], inner = 1;
            for (int i = 0; i < a; i++)
                outer *= dims[i];
            for (int i = a + 1; i < 3; i++)
                inner *= dims[i];
            struct onnx_attr attr[] = { attr_int("axis", axis) };
            struct tensor *y = run1(name, 13, attr, 1, x);
            ck_assert_msg(y != NULL, "%s", last_err);
            ref_softmax(x->data, want, outer, mid, inner, log_out);
            check_close_f(y->data, want, 840, 1e-5, 1e-7);
            /* opset 11: everything from axis on is one row */
            y = run1(name, 11, attr, 1, x);
            ck_assert(y);
            ref_softmax(x->data, want, outer, mid * inner, 1, log_out);
            check_close_f(y->data, want, 840, 1e-5, 1e-7);
        }
        /* default axis: 1 (coerced) before 13, -1 from 13 */
        struct tensor *y = run1(name, 1, NULL, 0, x);
        ck_assert(y);
        ref_softmax(x->data, want, 3, 280, 1, log_out);
        check_close_f(y->data, want, 840, 1e-5, 1e-7);
        y = run1(name, 13, NULL, 0, x);
        ck_assert(y);
        ref_softmax(x->data, want, 12, 70, 1, log_out);
        check_close_f(y->data, want, 840, 1e-5, 1e-7);
    }
    /* large inputs do not overflow */
    float big[] = { 10000, 10001, 10002, 10003 };
    struct tensor *y = run1("Softmax", 13, NULL, 0, mk(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 4 }, big));
    ck_assert(y);
    check_close_f(y->data, (double[]){ 0.0320586, 0.08714432, 0.23688282, 0.64391426 }, 4, 1e-5, 0);
    struct onnx_attr bad[] = { attr_int("axis", 3) };
    ck_assert_ptr_null(run1("Softmax", 13, bad, 1, x));
    ck_assert_msg(strstr(last_err, "axis 3"), "message was: %s", last_err);
    testops_free_all();
}
END_TEST

/* ---- reductions ------------------------------------------------------------- */

enum { R_SUM, R_MEAN, R_MAX };

/* Reference reduction of float x over mask into y (output laid out without
 * the reduced axes, which is the same order with or without keepdims). */
static void ref_reduce(const struct tensor *x, const int *mask, int kind, double *y, int64_t out_n)
{
    int64_t *count = testops_alloc(sizeof(int64_t) * (size_t)(out_n ? out_n : 1));
    for (int64_t i = 0; i < out_n; i++)
        y[i] = kind == R_MAX ? -INFINITY : 0;
    for (int64_t lin = 0; lin < tensor_numel(x); lin++) {
        int64_t rem = lin, o = 0, ostride = 1;
        for (int d = x->rank - 1; d >= 0; d--) {
            int64_t idx = rem % x->dims[d];
            rem /= x->dims[d];
            if (!mask[d]) {
                o += idx * ostride;
                ostride *= x->dims[d];
            }
        }
        double v = ((float *)x->data)[lin];
        y[o] = kind == R_MAX ? fmax(y[o], v) : y[o] + v;
        count[o]++;
    }
    if (kind == R_MEAN)
        for (int64_t i = 0; i < out_n; i++)
            y[i] = y[i] / (double)count[i];
}

static void check_reduce(const char *name, int opset, int kind, struct tensor *x, int *axes_list,
                         int n_axes, int keepdims)
{
    int mask[8] = { 0 };
    int64_t axes[8];
    for (int i = 0; i < n_axes; i++) {
        axes[i] = axes_list[i];
        mask[axes_list[i] < 0 ? axes_list[i] + x->rank : axes_list[i]] = 1;
    }
    if (n_axes == 0)
        for (int i = 0; i < x->rank; i++)
            mask[i] = 1;
    int axes_input = (!strcmp(name, "ReduceSum") && opset >= 13) || opset >= 18;
    struct onnx_attr attrs[2] = { attr_int("keepdims", keepdims), attr_ints("axes", axes, n_axes) };
    struct tensor *y;
    if (axes_input) {
        const struct tensor *in[2] = { x, n_axes ? mk(ONNX_DTYPE_INT64, 1, (int64_t[]){ n_axes }, axes)
                                                 : NULL };
        y = run(name, opset, attrs, 1, in, 2);
    } else {
        y = run1(name, opset, attrs, n_axes ? 2 : 1, x);
    }
    ck_assert_msg(y != NULL, "%s: %s", name, last_err);
    int r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!mask[i])
            ck_assert_int_eq(y->dims[r++], x->dims[i]);
        else if (keepdims)
            ck_assert_int_eq(y->dims[r++], 1);
    }
    ck_assert_int_eq(y->rank, r);
    int64_t n = tensor_numel(y);
    double *want = testops_alloc(sizeof(double) * (size_t)(n ? n : 1));
    ref_reduce(x, mask, kind, want, n);
    /* float accumulation over up to 2400 values in [-2, 2) */
    check_close_f(y->data, want, n, 1e-4, 5e-5);
}

START_TEST(test_reduce_axes)
{
    struct tensor *x = mk_rand(4, (int64_t[]){ 3, 4, 5, 6 });
    int cases[][4] = { { 0 }, { 3 }, { 1, 2 }, { 0, 2 }, { 1, 3 }, { 0, 3 }, { -1 }, { 0, 1, 2, 3 } };
    int ncases[] = { 1, 1, 2, 2, 2, 2, 1, 4 };
    for (int c = 0; c < 8; c++)
        for (int keep = 0; keep < 2; keep++) {
            check_reduce("ReduceSum", 11, R_SUM, x, cases[c], ncases[c], keep);
            check_reduce("ReduceSum", 13, R_SUM, x, cases[c], ncases[c], keep);
            check_reduce("ReduceMean", 13, R_MEAN, x, cases[c], ncases[c], keep);
            check_reduce("ReduceMean", 18, R_MEAN, x, cases[c], ncases[c], keep);
            check_reduce("ReduceMax", 13, R_MAX, x, cases[c], ncases[c], keep);
            check_reduce("ReduceMax", 20, R_MAX, x, cases[c], ncases[c], keep);
        }
    check_reduce("ReduceSum", 13, R_SUM, x, NULL, 0, 1);  /* no axes: everything */
    check_reduce("ReduceMax", 18, R_MAX, x, NULL, 0, 0);
    /* large: parallel paths over leading kept axis and over kept columns */
    struct tensor *big = mk_rand(3, (int64_t[]){ 40, 50, 60 });
    check_reduce("ReduceSum", 13, R_SUM, big, (int[]){ 2 }, 1, 0);
    check_reduce("ReduceSum", 13, R_SUM, big, (int[]){ 0 }, 1, 0);
    check_reduce("ReduceMean", 18, R_MEAN, big, (int[]){ 0, 2 }, 2, 1);
    check_reduce("ReduceMax", 18, R_MAX, big, (int[]){ 1 }, 1, 1);
    testops_free_all();
}
END_TEST

START_TEST(test_reduce_special)
{
    struct tensor *x = mk_rand(3, (int64_t[]){ 3, 2, 2 });
    /* noop_with_empty_axes: identity */
    struct onnx_attr noop[] = { attr_int("noop_with_empty_axes", 1) };
    const struct tensor *in[2] = { x, mk(ONNX_DTYPE_INT64, 1, (int64_t[]){ 0 }, NULL) };
    struct tensor *y = run("ReduceSum", 13, noop, 1, in, 2);
    ck_assert(y);
    check_shape(y, 3, (int64_t[]){ 3, 2, 2 });
    ck_assert_int_eq(memcmp(y->data, x->data, 48), 0);
    /* empty set: Sum 0, Max -inf, Mean NaN */
    struct tensor *e = mk(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 2, 0, 4 }, NULL);
    int64_t ax1 = 1;
    const struct tensor *ein[2] = { e, mk(ONNX_DTYPE_INT64, 1, (int64_t[]){ 1 }, &ax1) };
    y = run("ReduceSum", 13, NULL, 0, ein, 2);
    ck_assert(y);
    check_shape(y, 3, (int64_t[]){ 2, 1, 4 });
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(((float *)y->data)[i], 0);
    y = run("ReduceMax", 18, NULL, 0, ein, 2);
    ck_assert(y);
    ck_assert(isinf(((float *)y->data)[0]) && ((float *)y->data)[0] < 0);
    y = run("ReduceMean", 18, NULL, 0, ein, 2);
    ck_assert(y);
    ck_assert(isnan(((float *)y->data)[3]));
    /* reduce over a non-empty axis of an empty tensor gives an empty output */
    int64_t ax2 = 2;
    ein[1] = mk(ONNX_DTYPE_INT64, 1, (int64_t[]){ 1 }, &ax2);
    y = run("ReduceSum", 13, NULL, 0, ein, 2);
    ck_assert(y);
    check_shape(y, 3, (int64_t[]){ 2, 0, 1 });
    /* integer reductions */
    int32_t iv[] = { 1, -7, 3, 4, 5, 6 };
    struct tensor *ti = mk(ONNX_DTYPE_INT32, 2, (int64_t[]){ 2, 3 }, iv);
    int64_t axes1[] = { 1 };
    struct onnx_attr a[] = { attr_int("keepdims", 0), attr_ints("axes", axes1, 1) };
    y = run1("ReduceMax", 13, a, 2, ti);
    ck_assert(y);
    ck_assert_int_eq(((int32_t *)y->data)[0], 3);
    ck_assert_int_eq(((int32_t *)y->data)[1], 6);
    y = run1("ReduceSum", 11, a, 2, ti);
    ck_assert(y);
    ck_assert_int_eq(((int32_t *)y->data)[0], -3);
    ck_assert_int_eq(((int32_t *)y->data)[1], 15);
    y = run1("ReduceMin", 13, a, 2, ti);
    ck_assert(y);
    ck_assert_int_eq(((int32_t *)y->data)[0], -7);
    /* errors: out-of-range axis, axes attribute where an input is expected */
    int64_t ax9 = 9;
    in[1] = mk(ONNX_DTYPE_INT64, 1, (int64_t[]){ 1 }, &ax9);
    ck_assert_ptr_null(run("ReduceSum", 13, NULL, 0, in, 2));
    ck_assert_msg(strstr(last_err, "axis 9"), "message was: %s", last_err);
    ck_assert_ptr_null(run1("ReduceMean", 18, a, 2, x));
    ck_assert_msg(strstr(last_err, "axes"), "message was: %s", last_err);
    testops_free_all();
}
END_TEST

/* The vectorisable expf behind Exp, Sigmoid, Gelu(tanh) and Softmax: within
 * 2 ulp of exp() over a sample of every float bit pattern. */
START_TEST(test_expf_accuracy)
{
    for (uint64_t b = 0; b <= 0xffffffffu; b += 4099) {
        float x = ew_f32_from_bits((uint32_t)b), got = ew_expf(x);
        if (isnan(x)) {
            ck_assert_msg(isnan(got), "exp(NaN) gave %g", got);
            continue;
        }
        float want = (float)exp((double)x);
        if (isinf(want) || want == 0) {
            ck_assert_msg(got == want, "exp(%a): expected %g, got %g", x, want, got);
            continue;
        }
        double ulp = want < FLT_MIN ? 0x1p-149 : nextafterf(want, INFINITY) - want;
        double err = fabs((double)got - exp((double)x)) / ulp;
        ck_assert_msg(err <= 2, "exp(%a): %.2f ulp off (got %a)", x, err, got);
    }
    ck_assert_float_eq(ew_expf(0), 1.0f);
    ck_assert(isinf(ew_expf(INFINITY)) && ew_expf(-INFINITY) == 0);
}
END_TEST

START_TEST(test_registry_versions)
{
    int v = 0;
    ck_assert_ptr_nonnull(op_registry_find("", "Add", 7, &v));
    ck_assert_int_eq(v, 7);
    ck_assert_ptr_nonnull(op_registry_find("", "Add", 25, &v));
    ck_assert_int_eq(v, 14);
    ck_assert_ptr_nonnull(op_registry_find("", "Clip", 10, &v));
    ck_assert_int_eq(v, 6);
    ck_assert_ptr_nonnull(op_registry_find("", "ReduceMax", 25, &v));
    ck_assert_int_eq(v, 20);
    ck_assert_ptr_nonnull(op_registry_find("ai.onnx", "Cast", 25, &v));
    ck_assert_int_eq(v, 25);
    ck_assert_ptr_null(op_registry_find("", "Gelu", 19, &v));
}
END_TEST

static Suite *math_suite(void)
{
    Suite *s = suite_create("ops_math");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_broadcast_shapes);
    tcase_add_test(tc, test_broadcast_large_deterministic);
    tcase_add_test(tc, test_binary_errors);
    tcase_add_test(tc, test_integer_arithmetic);
    tcase_add_test(tc, test_pow_types);
    tcase_add_test(tc, test_variadic);
    tcase_add_test(tc, test_unary_float);
    tcase_add_test(tc, test_unary_double_and_int);
    tcase_add_test(tc, test_clip_versions);
    tcase_add_test(tc, test_compare_where);
    tcase_add_test(tc, test_cast_float16);
    tcase_add_test(tc, test_cast_bfloat16_and_ints);
    tcase_add_test(tc, test_softmax_versions);
    tcase_add_test(tc, test_reduce_axes);
    tcase_add_test(tc, test_reduce_special);
    tcase_add_test(tc, test_expf_accuracy);
    tcase_add_test(tc, test_registry_versions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(math_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
