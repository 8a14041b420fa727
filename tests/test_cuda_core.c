/* tests/test_cuda_core.c — the CUDA backend's foundation: the module's
 * kernel tables and lookup (every family's table found), opening the device (or failing to,
 * with a reason, and the runtime reporting it), the backend's memory, copy
 * and timer primitives, and the GEMM family (ops/cuda/blas.c) against the
 * CPU kernels on the same random inputs: every transpose combination,
 * Gemm's bias shapes and K = 0, MatMul's 1-D promotion and each batching
 * path (folded, strided, per entry), MatMulTrans. Each CUDA product runs
 * twice and must repeat its bits (DTR's recomputation).
 *
 * Without the CUDA module (a build without CUDA) the suite checks that the
 * device is refused cleanly and passes; without a usable
 * device it checks the graceful failure and skips the device cases with a
 * message. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "runtime/dtrexec.h"
#include "testcuda.h"
#include "testops.h"


static const struct backend *dev;
static char why[512];
static uint32_t rng = 4242u;

/* ---- registry -------------------------------------------------------------- */

START_TEST(registry_lists_and_finds)
{
    ck_assert_ptr_nonnull(testcuda_kernel("", "Gemm"));
    ck_assert_ptr_nonnull(testcuda_kernel("", "MatMul"));
    ck_assert_ptr_nonnull(testcuda_kernel("dtrexec", "MatMulTrans"));
    ck_assert_ptr_null(testcuda_kernel("", "MatMulTrans"));   /* domains are distinct */
    ck_assert_ptr_null(testcuda_kernel("", "NoSuchOperator"));
    ck_assert_ptr_null(testcuda_kernel_name_at(-1, NULL));
    int n = 0;
    for (const char *dom, *name; (name = testcuda_kernel_name_at(n, &dom)); n++) {
        ck_assert_msg(testcuda_kernel(dom, name) != NULL, "listed kernel %s/%s not found", dom, name);
        /* Each (domain, name) once: a second entry would never be found. */
        for (int k = 0; k < n; k++) {
            const char *dk, *nk = testcuda_kernel_name_at(k, &dk);
            ck_assert_msg(strcmp(nk, name) || strcmp(dk, dom), "kernel %s/%s listed twice (%d and %d)", dom,
                          name, k, n);
        }
        /* Every kernel belongs to a registered operator. */
        int version = 0;
        ck_assert_msg(op_registry_find(dom, name, 1000, &version) != NULL, "CUDA kernel %s/%s has no operator",
                      dom, name);
    }
    ck_assert_int_ge(n, 3);
}
END_TEST

/* ---- opening and reporting ----------------------------------------------------- */

START_TEST(device_check_reports)
{
    ck_assert_int_eq(dtrx_device_check("cpu"), DTRX_OK);
    ck_assert_int_eq(dtrx_device_check("tpu"), DTRX_ERR_INPUT);
    ck_assert_msg(strstr(dtrx_last_error(), "unknown device 'tpu'"), "got: %s", dtrx_last_error());
    enum dtrx_status st = dtrx_device_check("cuda");
    if (dev) {
        ck_assert_int_eq(st, DTRX_OK);
        return;
    }
    ck_assert_int_eq(st, DTRX_ERR_INPUT);
    ck_assert_msg(!strncmp(dtrx_last_error(), "device 'cuda' is not available: ", 32) &&
                      strlen(dtrx_last_error()) > 32,
                  "got: %s", dtrx_last_error());
    /* A session on the device fails the same way, before reading the model. */
    struct dtrx_options o;
    dtrx_options_init(&o);
    o.device = "cuda";
    struct dtrx_session *s = NULL;
    ck_assert_int_eq(dtrx_session_create("/nonexistent.onnx", &o, &s), DTRX_ERR_INPUT);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(dtrx_last_error(), "device 'cuda' is not available"), "got: %s", dtrx_last_error());
}
END_TEST

START_TEST(open_without_device_says_why)
{
    if (dev)
        return;   /* the device case is backend_primitives */
    char reason[256] = "";
    const struct backend *b = testcuda_open(reason, sizeof reason);
    ck_assert_ptr_null(b);
    ck_assert_msg(reason[0] != 0, "no reason given");
    testcuda_close(NULL);   /* harmless */
    /* A second attempt fails the same way rather than crashing. */
    ck_assert_ptr_null(testcuda_open(NULL, 0));
}
END_TEST

/* ---- device primitives --------------------------------------------------------- */

START_TEST(backend_primitives)
{
    if (!dev) {
        printf("test_cuda_core: device cases SKIPPED: no CUDA device (%s)\n", why);
        return;
    }
    ck_assert_int_eq(dev->kind, BACKEND_CUDA);
    ck_assert_str_eq(dev->name, "cuda");
    /* Shared: a second open is the same backend, and closing it once keeps it. */
    const struct backend *again = testcuda_open(NULL, 0);
    ck_assert_ptr_eq(again, dev);
    testcuda_close(again);

    enum { N = 1 << 16 };
    unsigned char *host = malloc(N), *back = malloc(N), *want = malloc(N);
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 131 + 7);
    unsigned char *d = dev->alloc(dev->ctx, N);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(dev->copy_to_device(dev->ctx, d, host, N), 0);
    ck_assert_int_eq(dev->copy_to_host(dev->ctx, back, d, N), 0);
    ck_assert_int_eq(memcmp(host, back, N), 0);
    /* copy() is memmove: overlapping moves up and down, near (bounced
     * through the host) and far (in pieces), as arena compaction does. */
    static const long shifts[] = { -40000, -4096, -100, -1, 1, 64, 5000, 30000 };
    for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; k++) {
        long sh = shifts[k];
        size_t len = N - (size_t)labs(sh);
        size_t src = sh < 0 ? (size_t)-sh : 0, dst = sh < 0 ? 0 : (size_t)sh;
        ck_assert_int_eq(dev->copy_to_device(dev->ctx, d, host, N), 0);
        memcpy(want, host, N);
        memmove(want + dst, want + src, len);
        ck_assert_int_eq(dev->copy(dev->ctx, d + dst, d + src, len), 0);
        ck_assert_int_eq(dev->copy_to_host(dev->ctx, back, d, N), 0);
        ck_assert_msg(!memcmp(want, back, N), "overlapping copy by %ld bytes differs from memmove", sh);
    }
    ck_assert_int_eq(dev->synchronize(dev->ctx), 0);
    ck_assert_ptr_nonnull(dev->timer_start);
    ck_assert_int_eq(dev->timer_start(dev->ctx), 0);
    ck_assert_int_eq(dev->copy(dev->ctx, d, d + N / 2, N / 2), 0);
    double secs = dev->timer_stop_seconds(dev->ctx);
    ck_assert_msg(secs >= 0 && secs < 10, "timer gave %g s", secs);
    /* An impossible allocation fails without poisoning later calls. */
    ck_assert_ptr_null(dev->alloc(dev->ctx, (size_t)1 << 50));
    ck_assert_int_eq(dev->copy_to_host(dev->ctx, back, d, 16), 0);
    dev->free(dev->ctx, d);
    free(host);
    free(back);
    free(want);
}
END_TEST

/* ---- GEMM family against the CPU -------------------------------------------- */

static void *dev_scratch_alloc(void *ctx, size_t bytes) { return dev->alloc(dev->ctx, bytes ? bytes : 1); }
static void dev_scratch_free(void *ctx, void *ptr) { dev->free(dev->ctx, ptr); }

/* Runs op on the CPU and on the device (twice), compares within rtol. */
static void compare_op(const char *domain, const char *op, int opset, struct onnx_attr *attrs, int n_attrs,
                       const struct tensor *const *in, int n_in, const char *label)
{
    int version = 0;
    const struct op_def *def = op_registry_find(domain, op, opset, &version);
    ck_assert_ptr_nonnull(def);
    char err[512] = "";
    struct onnx_node node = { .name = "n0", .op_type = (char *)op, .domain = (char *)domain, .n_inputs = n_in,
                              .n_outputs = 1, .n_attrs = n_attrs, .attrs = attrs };
    void *params = NULL;
    ck_assert_int_eq(def->parse ? def->parse(&node, version, &params, err, sizeof err) : 0, 0);
    struct tensor y_cpu = { 0 }, y_dev = { 0 }, *out_cpu[1] = { &y_cpu }, *out_dev[1] = { &y_dev };
    struct op_env env = { .scratch_alloc = testops_scratch_alloc, .scratch_free = testops_scratch_free,
                          .backend = &backend_cpu, .threads = 1, .err = err, .err_size = sizeof err };
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = "n0", .n_in = n_in,
                         .in = in, .n_out = 1, .out = out_cpu, .env = &env };
    ck_assert_msg(def->infer(&c) == 0, "%s: %s", label, err);
    y_cpu.data = testops_alloc(tensor_size_bytes(&y_cpu));
    ck_assert_msg(def->kernel[BACKEND_CPU](&c) == 0, "%s: %s", label, err);

    const struct tensor *din[3];
    struct tensor dt[3];
    for (int i = 0; i < n_in; i++) {
        dt[i] = *in[i];
        size_t bytes = tensor_size_bytes(in[i]);
        dt[i].data = dev->alloc(dev->ctx, bytes ? bytes : 1);
        ck_assert_int_eq(dev->copy_to_device(dev->ctx, dt[i].data, in[i]->data, bytes), 0);
        din[i] = &dt[i];
    }
    struct op_env denv = env;
    denv.backend = dev;
    denv.scratch_alloc = dev_scratch_alloc;
    denv.scratch_free = dev_scratch_free;
    struct op_call dc = c;
    dc.in = din;
    dc.out = out_dev;
    dc.env = &denv;
    ck_assert_int_eq(def->infer(&dc), 0);
    size_t bytes = tensor_size_bytes(&y_dev);
    ck_assert_msg(bytes == tensor_size_bytes(&y_cpu), "%s: shapes differ", label);
    y_dev.data = dev->alloc(dev->ctx, bytes ? bytes : 1);
    float *got = testops_alloc(bytes), *got2 = testops_alloc(bytes);
    op_kernel_fn k = testcuda_kernel(domain, op);
    ck_assert_ptr_nonnull(k);
    for (int run = 0; run < 2; run++) {
        /* Poison the output: a kernel must write every element. */
        float *nan = malloc(bytes ? bytes : 1);
        memset(nan, 0xff, bytes);
        ck_assert_int_eq(dev->copy_to_device(dev->ctx, y_dev.data, nan, bytes), 0);
        free(nan);
        ck_assert_msg(k(&dc) == 0, "%s: CUDA: %s", label, err);
        ck_assert_int_eq(dev->copy_to_host(dev->ctx, run ? got2 : got, y_dev.data, bytes), 0);
    }
    ck_assert_msg(!memcmp(got, got2, bytes), "%s: a rerun gave other bits", label);
    const float *want = y_cpu.data;
    int64_t n = tensor_numel(&y_cpu);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(want[i] - got[i]) <= 1e-4f + 1e-4f * fabsf(want[i]),
                      "%s: element %lld: CPU %.9g, CUDA %.9g", label, (long long)i, want[i], got[i]);
    for (int i = 0; i < n_in; i++)
        dev->free(dev->ctx, dt[i].data);
    dev->free(dev->ctx, y_dev.data);
    if (params)
        def->params_free ? def->params_free(params) : free(params);
}

static struct tensor *rnd(int rank, const int64_t *dims) { return testops_tensor_rand(&rng, rank, dims); }

START_TEST(gemm_against_cpu)
{
    if (!dev)
        return;
    const int64_t m = 37, n = 29, k = 53;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int bias = 0; bias < 6; bias++) {
                int64_t ad[2] = { ta ? k : m, ta ? m : k }, bd[2] = { tb ? n : k, tb ? k : n };
                /* no C, scalar, [n], [1,n], [m,1], [m,n] */
                int64_t cd[5][2] = { { 1, 1 }, { n, 0 }, { 1, n }, { m, 1 }, { m, n } };
                int crank[5] = { 0, 1, 2, 2, 2 };
                const struct tensor *in[3] = { rnd(2, ad), rnd(2, bd), bias ? rnd(crank[bias - 1], cd[bias - 1]) : NULL };
                struct onnx_attr at[4] = {
                    { .name = "transA", .type = ONNX_ATTR_INT, .i = ta },
                    { .name = "transB", .type = ONNX_ATTR_INT, .i = tb },
                    { .name = "alpha", .type = ONNX_ATTR_FLOAT, .f = 0.75f },
                    { .name = "beta", .type = ONNX_ATTR_FLOAT, .f = bias == 2 ? 1.0f : -1.5f },
                };
                char label[64];
                snprintf(label, sizeof label, "Gemm transA=%d transB=%d bias %d", ta, tb, bias);
                compare_op("", "Gemm", 13, at, 4, in, bias ? 3 : 2, label);
            }
    /* K = 0: Y = beta C, or zeros. */
    int64_t ad[2] = { 4, 0 }, bd[2] = { 0, 5 }, cd[1] = { 5 };
    const struct tensor *in[3] = { rnd(2, ad), rnd(2, bd), rnd(1, cd) };
    struct onnx_attr beta = { .name = "beta", .type = ONNX_ATTR_FLOAT, .f = 2.0f };
    compare_op("", "Gemm", 13, &beta, 1, in, 3, "Gemm K=0 with C");
    compare_op("", "Gemm", 13, NULL, 0, in, 2, "Gemm K=0");
}
END_TEST

struct mm_case {
    int ra, rb;
    int64_t a[4], b[4];
    const char *what;
};

START_TEST(matmul_against_cpu)
{
    if (!dev)
        return;
    static const struct mm_case cases[] = {
        { 2, 2, { 33, 17 }, { 17, 21 }, "matrix" },
        { 1, 2, { 17 }, { 17, 21 }, "1-D A" },
        { 2, 1, { 33, 17 }, { 17 }, "1-D B" },
        { 1, 1, { 17 }, { 17 }, "dot" },
        { 3, 2, { 4, 33, 17 }, { 17, 21 }, "shared B folded" },
        { 4, 4, { 2, 3, 9, 8 }, { 2, 3, 8, 7 }, "dense batches (strided)" },
        { 3, 3, { 1, 9, 8 }, { 5, 8, 7 }, "broadcast A (strided, A stride 0)" },
        { 4, 4, { 2, 1, 9, 8 }, { 1, 3, 8, 7 }, "outer broadcast (per entry)" },
        { 2, 3, { 9, 8 }, { 6, 8, 7 }, "A one matrix under batched B" },
        { 3, 1, { 6, 9, 8 }, { 8 }, "batched A, 1-D B" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct tensor *in[2] = { rnd(cases[i].ra, cases[i].a), rnd(cases[i].rb, cases[i].b) };
        compare_op("", "MatMul", 13, NULL, 0, in, 2, cases[i].what);
    }
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int64_t ad[4] = { 2, 3, ta ? 8 : 9, ta ? 9 : 8 }, bd[4] = { 1, 3, tb ? 7 : 8, tb ? 8 : 7 };
            int64_t a2[2] = { ta ? 8 : 45, ta ? 45 : 8 };
            struct onnx_attr at[2] = { { .name = "transA", .type = ONNX_ATTR_INT, .i = ta },
                                       { .name = "transB", .type = ONNX_ATTR_INT, .i = tb } };
            const struct tensor *in[2] = { rnd(4, ad), rnd(4, bd) };
            char label[64];
            snprintf(label, sizeof label, "MatMulTrans transA=%d transB=%d", ta, tb);
            compare_op("dtrexec", "MatMulTrans", 1, at, 2, in, 2, label);
            int64_t bd2[2] = { tb ? 7 : 8, tb ? 8 : 7 };
            const struct tensor *in2[2] = { rnd(2, a2), rnd(2, bd2) };
            snprintf(label, sizeof label, "MatMulTrans 2-D transA=%d transB=%d", ta, tb);
            compare_op("dtrexec", "MatMulTrans", 1, at, 2, in2, 2, label);
        }
    int64_t ad[2] = { 3, 0 }, bd[2] = { 0, 4 };
    const struct tensor *in[2] = { rnd(2, ad), rnd(2, bd) };
    compare_op("", "MatMul", 13, NULL, 0, in, 2, "MatMul K=0");
}
END_TEST

static Suite *cuda_core_suite(void)
{
    Suite *s = suite_create("cuda_core");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, registry_lists_and_finds);
    tcase_add_test(tc, device_check_reports);
    tcase_add_test(tc, open_without_device_says_why);
    tcase_add_test(tc, backend_primitives);
    tcase_add_test(tc, gemm_against_cpu);
    tcase_add_test(tc, matmul_against_cpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!testcuda_module(why, sizeof why)) {
        /* Without the module, asking for the device must still fail cleanly. */
        if (dtrx_device_check("cuda") != DTRX_ERR_INPUT || !strstr(dtrx_last_error(), "not available")) {
            printf("test_cuda_core: dtrx_device_check(\"cuda\") did not report the missing backend: %s\n",
                   dtrx_last_error());
            return 1;
        }
        printf("test_cuda_core: SKIPPED, no CUDA module (%s)\n", dtrx_last_error());
        return 0;
    }
    dev = testcuda_open(why, sizeof why);
    if (!dev)
        printf("test_cuda_core: no CUDA device (%s): checking the failure paths, SKIPPING the device cases\n", why);
    int failed = testcuda_run(cuda_core_suite());
    testops_free_all();
    testcuda_close(dev);
    return failed ? 1 : 0;
}
