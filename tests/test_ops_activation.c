/* tests/test_ops_activation.c — what the node tests and finite differences
 * do not pin down in ops/activation.c, unary_math.c, mod.c and logical.c:
 * the derivative at the kinks (PyTorch's choices: HardSwish, HardSigmoid,
 * Elu, Celu, PRelu), Round's halves to even, Sign of NaN and signed zeros,
 * Mod's integer corner cases (zero divisor, INT_MIN by -1) and numpy.mod's
 * float special values, opset 1's legacy broadcasting of And/Or/Xor, the
 * registry's version resolution and the error messages. Expected values
 * are written out here (numpy's where noted). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/ops.h"
#include "testops.h"

static char last_err[512];

static struct onnx_attr attr_int(const char *name, int64_t v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INT, .i = v };
}

static struct onnx_attr attr_float(const char *name, float v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_FLOAT, .f = v };
}

/* Runs domain:name at `opset` on the inputs; the output, or NULL with last_err. */
static struct tensor *run(const char *domain, const char *name, int opset,
                          struct onnx_attr *attrs, int n_attrs, const struct tensor **in, int n_in)
{
    int version = 0;
    last_err[0] = 0;
    const struct op_def *d = op_registry_find(domain, name, opset, &version);
    ck_assert_msg(d != NULL, "%s not registered at opset %d", name, opset);
    struct onnx_node node = { .name = "n0", .op_type = (char *)name, .domain = (char *)domain,
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
        out->data = testops_alloc(tensor_size_bytes(out));
        rc = d->kernel[BACKEND_CPU](&c);
    }
    if (params)
        d->params_free ? d->params_free(params) : free(params);
    return rc ? NULL : out;
}

static struct tensor *vec_f(int n, const float *v)
{
    return testops_tensor(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ n }, v);
}

/* got[i] == want[i] exactly (NaN matches NaN; the sign of zero counts). */
static void check_exact_f(const struct tensor *t, int n, const float *want, const char *what)
{
    ck_assert_msg(t != NULL, "%s failed: %s", what, last_err);
    const float *got = t->data;
    for (int i = 0; i < n; i++) {
        int same = isnan(want[i]) ? isnan(got[i])
                                  : got[i] == want[i] && signbit(got[i]) == signbit(want[i]);
        ck_assert_msg(same, "%s: expected %.9g, got %.9g at index %d", what, want[i], got[i], i);
    }
}

static void check_close_f(const struct tensor *t, int n, const float *want, const char *what)
{
    ck_assert_msg(t != NULL, "%s failed: %s", what, last_err);
    const float *got = t->data;
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabsf(got[i] - want[i]) <= 1e-6f + 1e-6f * fabsf(want[i]),
                      "%s: expected %.9g, got %.9g at index %d", what, want[i], got[i], i);
}

/* ---- derivatives at the kinks ----------------------------------------------------------- */

/* grad(dy = 1, X = x) of a (dy, X) gradient kernel */
static struct tensor *grad_at(const char *kernel, struct onnx_attr *attrs, int n_attrs, int n,
                              const float *x)
{
    float ones[16];
    for (int i = 0; i < n; i++)
        ones[i] = 1;
    const struct tensor *in[2] = { vec_f(n, ones), vec_f(n, x) };
    return run("dtrexec", kernel, 1, attrs, n_attrs, in, 2);
}

START_TEST(test_kinks_follow_pytorch)
{
    /* hardswish_backward: 0 below -3, x/3 + 1/2 on [-3, 3] (both ends), 1 above */
    float hx[6] = { -3.5f, -3, -1.5f, 0, 3, 3.5f };
    float hw[6] = { 0, -0.5f, 0, 0.5f, 1.5f, 1 };
    check_close_f(grad_at("HardSwishGrad", NULL, 0, 6, hx), 6, hw, "HardSwishGrad");
    /* hardsigmoid_backward: alpha strictly inside (0 < alpha x + beta < 1), 0 at the corners */
    struct onnx_attr hs[2] = { attr_float("alpha", 0.25f), attr_float("beta", 0.5f) };
    float sx[5] = { -2, -1.999f, 0, 1.999f, 2 }, sw[5] = { 0, 0.25f, 0.25f, 0.25f, 0 };
    check_close_f(grad_at("HardSigmoidGrad", hs, 2, 5, sx), 5, sw, "HardSigmoidGrad");
    /* elu_backward: the exponential side at x = 0 (alpha e^0) */
    struct onnx_attr ea = attr_float("alpha", 0.5f);
    float ex[3] = { -1, 0, 1 }, ew[3] = { 0.5f * expf(-1), 0.5f, 1 };
    check_close_f(grad_at("EluGrad", &ea, 1, 3, ex), 3, ew, "EluGrad");
    struct onnx_attr ca = attr_float("alpha", 2.0f);
    float cw[3] = { expf(-0.5f), 1, 1 };
    check_close_f(grad_at("CeluGrad", &ca, 1, 3, ex), 3, cw, "CeluGrad");
    /* prelu: x > 0 is the identity; x = 0 takes the slope's side for both gradients */
    float px[3] = { -2, 0, 3 }, slope = 0.25f, dy[3] = { 1, 1, 1 };
    const struct tensor *pin[3] = { vec_f(3, dy), vec_f(3, px),
                                    testops_tensor(ONNX_DTYPE_FLOAT, 0, NULL, &slope) };
    struct onnx_attr w0 = attr_int("wrt", 0), w1 = attr_int("wrt", 1);
    float pw0[3] = { 0.25f, 0.25f, 1 }, pw1[3] = { -2, 0, 0 };
    check_close_f(run("dtrexec", "PReluGrad", 1, &w0, 1, pin, 3), 3, pw0, "PReluGrad wrt X");
    check_close_f(run("dtrexec", "PReluGrad", 1, &w1, 1, pin, 3), 3, pw1, "PReluGrad wrt slope");
    testops_free_all();
}
END_TEST

/* ---- rounding and Sign ------------------------------------------------------------------ */

START_TEST(test_round_sign_floor)
{
    float x[9] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4999998f, -0.0f, NAN };
    const struct tensor *in[1] = { vec_f(9, x) };
    /* numpy.round: halves to even, -0.5 to -0 */
    float r[9] = { 0, 2, 2, -0.0f, -2, -2, 2, -0.0f, NAN };
    check_exact_f(run("", "Round", 22, NULL, 0, in, 1), 9, r, "Round");
    float s[9] = { 1, 1, 1, -1, -1, -1, 1, -0.0f, NAN };
    check_exact_f(run("", "Sign", 13, NULL, 0, in, 1), 9, s, "Sign");
    float f[9] = { 0, 1, 2, -1, -2, -3, 2, -0.0f, NAN };
    check_exact_f(run("", "Floor", 13, NULL, 0, in, 1), 9, f, "Floor");
    float c[9] = { 1, 2, 3, -0.0f, -1, -2, 3, -0.0f, NAN };
    check_exact_f(run("", "Ceil", 6, NULL, 0, in, 1), 9, c, "Ceil");
    int8_t iv[4] = { -128, -3, 0, 127 }, is[4] = { -1, -1, 0, 1 };
    const struct tensor *iin[1] = { testops_tensor(ONNX_DTYPE_INT8, 1, (int64_t[]){ 4 }, iv) };
    struct tensor *sg = run("", "Sign", 13, NULL, 0, iin, 1);
    ck_assert_ptr_nonnull(sg);
    ck_assert_int_eq(sg->dtype, ONNX_DTYPE_INT8);
    ck_assert_mem_eq(sg->data, is, 4);
    testops_free_all();
}
END_TEST

/* ---- Mod ---------------------------------------------------------------------------------- */

START_TEST(test_mod_corners)
{
    int32_t a[6] = { 7, -7, 7, -7, INT32_MIN, 5 }, b[6] = { 3, 3, -3, -3, -1, 0 };
    /* Python's % (fmod=0) and C's % (fmod=1); by 0 and INT_MIN by -1 give 0 */
    int32_t floored[6] = { 1, 2, -2, -1, 0, 0 }, truncated[6] = { 1, -1, 1, -1, 0, 0 };
    const struct tensor *in[2] = { testops_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ 6 }, a),
                                   testops_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ 6 }, b) };
    struct onnx_attr f0 = attr_int("fmod", 0), f1 = attr_int("fmod", 1);
    struct tensor *y0 = run("", "Mod", 13, &f0, 1, in, 2), *y1 = run("", "Mod", 13, &f1, 1, in, 2);
    ck_assert_msg(y0 && y1, "Mod failed: %s", last_err);
    for (int i = 0; i < 6; i++) {
        ck_assert_msg(((int32_t *)y0->data)[i] == floored[i], "fmod=0 index %d: %d", i,
                      ((int32_t *)y0->data)[i]);
        ck_assert_msg(((int32_t *)y1->data)[i] == truncated[i], "fmod=1 index %d: %d", i,
                      ((int32_t *)y1->data)[i]);
    }
    /* numpy.mod and numpy.fmod on special values */
    float fa[8] = { 0.0f, -0.0f, 5.5f, -5.5f, 3, -3, INFINITY, 2 };
    float fb[8] = { -2, 2, 2, 2, INFINITY, INFINITY, 2, 0 };
    float npmod[8] = { -0.0f, 0.0f, 1.5f, 0.5f, 3, INFINITY, NAN, NAN };
    float npfmod[8] = { 0.0f, -0.0f, 1.5f, -1.5f, 3, -3, NAN, NAN };
    const struct tensor *fin[2] = { vec_f(8, fa), vec_f(8, fb) };
    check_exact_f(run("", "Mod", 28, &f0, 1, fin, 2), 8, npmod, "Mod fmod=0 float");
    check_exact_f(run("", "Mod", 10, &f1, 1, fin, 2), 8, npfmod, "Mod fmod=1 float");
    /* errors */
    struct onnx_attr bad = attr_int("fmod", 2);
    ck_assert_ptr_null(run("", "Mod", 13, &bad, 1, fin, 2));
    ck_assert_msg(strstr(last_err, "fmod=2"), "message was: %s", last_err);
    const struct tensor *mixed[2] = { in[0], fin[1] };
    ck_assert_ptr_null(run("", "Mod", 13, &f0, 1, mixed, 2));
    ck_assert_msg(strstr(last_err, "n0") && strstr(last_err, "must match"), "message was: %s",
                  last_err);
    testops_free_all();
}
END_TEST

/* ---- And, Or, Xor ------------------------------------------------------------------------- */

START_TEST(test_logical_legacy_broadcast)
{
    uint8_t a[6] = { 1, 0, 1, 0, 1, 1 }, b[3] = { 1, 1, 0 }, c[2] = { 0, 1 };
    const struct tensor *in[2] = { testops_tensor(ONNX_DTYPE_BOOL, 2, (int64_t[]){ 2, 3 }, a),
                                   testops_tensor(ONNX_DTYPE_BOOL, 1, (int64_t[]){ 3 }, b) };
    /* opset 7: numpy broadcasting of [3] over [2, 3] */
    uint8_t and7[6] = { 1, 0, 0, 0, 1, 0 };
    struct tensor *y = run("", "And", 7, NULL, 0, in, 2);
    ck_assert_msg(y != NULL, "And-7: %s", last_err);
    ck_assert_mem_eq(y->data, and7, 6);
    /* opset 1 without broadcast: shapes must be equal */
    ck_assert_ptr_null(run("", "And", 1, NULL, 0, in, 2));
    ck_assert_msg(strstr(last_err, "broadcast is 0"), "message was: %s", last_err);
    /* opset 1, broadcast = 1: trailing by default; axis = 0 aligns [2] with A's first dim */
    struct onnx_attr bc[2] = { attr_int("broadcast", 1), attr_int("axis", 0) };
    y = run("", "Or", 1, bc, 1, in, 2);
    uint8_t or1[6] = { 1, 1, 1, 1, 1, 1 };
    ck_assert_msg(y != NULL, "Or-1: %s", last_err);
    ck_assert_mem_eq(y->data, or1, 6);
    const struct tensor *in0[2] = { in[0],
                                    testops_tensor(ONNX_DTYPE_BOOL, 1, (int64_t[]){ 2 }, c) };
    y = run("", "Xor", 1, bc, 2, in0, 2);
    uint8_t xor1[6] = { 1, 0, 1, 1, 0, 0 };
    ck_assert_msg(y != NULL, "Xor-1 axis 0: %s", last_err);
    ck_assert_mem_eq(y->data, xor1, 6);
    ck_assert_ptr_null(run("", "Xor", 1, bc, 1, in0, 2));   /* [2] does not end A's shape */
    ck_assert_msg(strstr(last_err, "does not match"), "message was: %s", last_err);
    const struct tensor *notbool[2] = { vec_f(3, (float[]){ 1, 0, 1 }), in[1] };
    ck_assert_ptr_null(run("", "And", 7, NULL, 0, notbool, 2));
    ck_assert_msg(strstr(last_err, "unsupported dtype"), "message was: %s", last_err);
    testops_free_all();
}
END_TEST

/* ---- errors and versions ---------------------------------------------------------------- */

START_TEST(test_errors_and_versions)
{
    float x[6] = { -1, 0, 1, 2, -3, 4 };
    const struct tensor *in[1] = { testops_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ 2, 3 }, x) };
    struct onnx_attr zero = attr_float("alpha", 0);
    ck_assert_ptr_null(run("", "Celu", 12, &zero, 1, in, 1));
    ck_assert_msg(strstr(last_err, "alpha=0"), "message was: %s", last_err);
    struct onnx_attr neg = attr_int("detect_negative", 3);
    ck_assert_ptr_null(run("", "IsInf", 10, &neg, 1, in, 1));
    ck_assert_msg(strstr(last_err, "detect_negative=3"), "message was: %s", last_err);
    /* a slope that would broadcast X to a bigger shape */
    const struct tensor *pin[2] = {
        in[0], testops_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 2, 2, 3 }, NULL)
    };
    ck_assert_ptr_null(run("", "PRelu", 16, NULL, 0, pin, 2));
    ck_assert_msg(strstr(last_err, "does not broadcast into X"), "message was: %s", last_err);
    const struct tensor *iin[1] = { testops_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ 2 }, NULL) };
    ck_assert_ptr_null(run("", "Elu", 22, NULL, 0, iin, 1));
    ck_assert_msg(strstr(last_err, "unsupported dtype int32") && strstr(last_err, "n0"),
                  "message was: %s", last_err);
    /* since-versions resolve to the highest not above the opset */
    static const struct { const char *op; int opset, want; } v[] = {
        { "HardSigmoid", 21, 6 }, { "HardSigmoid", 25, 22 }, { "HardSwish", 14, 14 },
        { "Softplus", 7, 1 }, { "Elu", 22, 22 }, { "Selu", 7, 6 }, { "Celu", 27, 12 },
        { "Celu", 28, 28 }, { "Mish", 21, 18 }, { "Swish", 24, 24 }, { "PRelu", 15, 9 },
        { "PRelu", 16, 16 }, { "Mod", 12, 10 }, { "Mod", 28, 28 }, { "And", 6, 1 },
        { "Xor", 25, 7 }, { "Sin", 21, 7 }, { "Cos", 22, 22 }, { "Sign", 12, 9 },
        { "Floor", 12, 6 }, { "Ceil", 13, 13 }, { "Round", 11, 11 }, { "IsNaN", 19, 13 },
        { "IsNaN", 20, 20 }, { "IsInf", 19, 10 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        int got = 0;
        ck_assert_msg(op_registry_find("", v[i].op, v[i].opset, &got) != NULL, "%s at %d",
                      v[i].op, v[i].opset);
        ck_assert_msg(got == v[i].want, "%s at opset %d: version %d, expected %d", v[i].op,
                      v[i].opset, got, v[i].want);
    }
    ck_assert_ptr_null(op_registry_find("", "Swish", 23, NULL));
    ck_assert_ptr_null(op_registry_find("", "Mish", 17, NULL));
    testops_free_all();
}
END_TEST

static Suite *activation_suite(void)
{
    Suite *s = suite_create("ops_activation");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_kinks_follow_pytorch);
    tcase_add_test(tc, test_round_sign_floor);
    tcase_add_test(tc, test_mod_corners);
    tcase_add_test(tc, test_logical_legacy_broadcast);
    tcase_add_test(tc, test_errors_and_versions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(activation_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
