/* tests/test_ops_host_bridge.c — op_host_bridge (ops/host_bridge.c), the
 * device kernel of the rare operators, against their CPU kernels. A fake
 * device keeps every byte inverted, so a kernel that read or wrote device
 * memory directly instead of through the backend's copies would give other
 * values; the bridged results must equal the CPU's bit for bit. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

static int copies_in, copies_out;

static void invert(void *dst, const void *src, size_t bytes)
{
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < bytes; i++)
        d[i] = (unsigned char)~s[i];
}

static int fake_to_device(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    copies_out++;
    invert(dst, src, bytes);
    return 0;
}

static int fake_to_host(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    copies_in++;
    invert(dst, src, bytes);
    return 0;
}

static int fake_sync(void *ctx)
{
    (void)ctx;
    return 0;
}

static const struct backend fake_device = {
    .kind = BACKEND_CUDA, .name = "fake", .copy_to_device = fake_to_device, .copy_to_host = fake_to_host,
    .synchronize = fake_sync,
};

/* Runs op (domain, name) with n_in float inputs of n elements on the host
 * and through the bridge on the fake device; compares every output. */
static void compare(const char *domain, const char *name, struct onnx_attr *attrs, int n_attrs, int n_in,
                    struct tensor *const *inputs, int n_out)
{
    static char *names[16] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p" };
    struct onnx_node node = { .name = "bridge_node", .op_type = (char *)name, .domain = (char *)domain,
                              .n_inputs = n_in, .inputs = names, .n_outputs = n_out, .outputs = names,
                              .n_attrs = n_attrs, .attrs = attrs };
    int version = 0;
    const struct op_def *def = op_registry_find(domain, name, 22, &version);
    ck_assert_msg(def != NULL, "%s is not registered", name);
    ck_assert_msg(def->kernel[BACKEND_CUDA] == op_host_bridge, "%s does not run through the host bridge", name);
    char err[256] = "";
    void *params = NULL;
    ck_assert_msg(!def->parse || !def->parse(&node, version, &params, err, sizeof err), "parse: %s", err);
    struct tensor host_out[8], dev_in[16], dev_out[8];
    const struct tensor *in_ptr[16], *dev_in_ptr[16];
    struct tensor *out_ptr[8], *dev_out_ptr[8];
    for (int i = 0; i < n_in; i++) {
        in_ptr[i] = inputs[i];
        dev_in[i] = *inputs[i];
        size_t bytes = tensor_size_bytes(inputs[i]);
        dev_in[i].data = malloc(bytes);
        invert(dev_in[i].data, inputs[i]->data, bytes);
        dev_in_ptr[i] = &dev_in[i];
    }
    for (int k = 0; k < n_out; k++) {
        out_ptr[k] = &host_out[k];
        dev_out_ptr[k] = &dev_out[k];
    }
    struct op_env env = { .backend = &backend_cpu, .seed = 1234, .err = err, .err_size = sizeof err };
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = "bridge_node",
                         .n_in = n_in, .in = in_ptr, .n_out = n_out, .out = out_ptr, .env = &env };
    ck_assert_msg(def->infer(&c) == 0, "infer: %s", err);
    for (int k = 0; k < n_out; k++) {
        dev_out[k] = host_out[k];
        host_out[k].data = calloc(1, tensor_size_bytes(&host_out[k]) + 1);
        dev_out[k].data = calloc(1, tensor_size_bytes(&dev_out[k]) + 1);
    }
    ck_assert_msg(def->kernel[BACKEND_CPU](&c) == 0, "cpu kernel: %s", err);
    struct op_env dev_env = env;
    dev_env.backend = &fake_device;
    struct op_call d = c;
    d.in = dev_in_ptr;
    d.out = dev_out_ptr;
    d.env = &dev_env;
    copies_in = copies_out = 0;
    ck_assert_msg(op_host_bridge(&d) == 0, "bridge: %s", err);
    ck_assert_int_eq(copies_in, n_in);
    ck_assert_int_eq(copies_out, n_out);
    for (int k = 0; k < n_out; k++) {
        size_t bytes = tensor_size_bytes(&host_out[k]);
        unsigned char *back = malloc(bytes + 1);
        invert(back, dev_out[k].data, bytes);
        ck_assert_msg(!memcmp(back, host_out[k].data, bytes), "%s: output %d differs from the CPU's", name, k);
        free(back);
        free(host_out[k].data);
        free(dev_out[k].data);
    }
    for (int i = 0; i < n_in; i++)
        free(dev_in[i].data);
    if (params)
        (def->params_free ? def->params_free : free)(params);
}

static struct tensor float_tensor(float *data, int64_t n)
{
    return (struct tensor){ .dtype = ONNX_DTYPE_FLOAT, .rank = 1, .dims = { n }, .data = data };
}

START_TEST(test_bridge_adam)
{
    float r = 0.1f, x[5] = { 1, -2, 3, 0.5f, -0.25f }, g[5] = { 0.3f, 0.2f, -0.1f, 1, 2 };
    float v[5] = { 0.1f, 0, 0.2f, -0.3f, 0 }, h[5] = { 0.5f, 1, 0.1f, 0.2f, 0 };
    int64_t t = 2;
    struct tensor tr = { .dtype = ONNX_DTYPE_FLOAT, .rank = 0, .data = &r };
    struct tensor tt = { .dtype = ONNX_DTYPE_INT64, .rank = 0, .data = &t };
    struct tensor tx = float_tensor(x, 5), tg = float_tensor(g, 5), tv = float_tensor(v, 5), th = float_tensor(h, 5);
    struct tensor *ins[6] = { &tr, &tt, &tx, &tg, &tv, &th };
    struct onnx_attr attrs[1] = { { .name = "norm_coefficient", .type = ONNX_ATTR_FLOAT, .f = 0.01f } };
    compare("ai.onnx.preview.training", "Adam", attrs, 1, 6, ins, 3);
}
END_TEST

START_TEST(test_bridge_bernoulli_uniform)
{
    float p[64];
    for (int i = 0; i < 64; i++)
        p[i] = (float)i / 63;
    struct tensor tp = float_tensor(p, 64);
    struct tensor *ins[1] = { &tp };
    compare("", "Bernoulli", NULL, 0, 1, ins, 1);   /* unseeded: the call's seed and the node's name */
    struct onnx_attr attrs[3] = { { .name = "low", .type = ONNX_ATTR_FLOAT, .f = -1 },
                                  { .name = "high", .type = ONNX_ATTR_FLOAT, .f = 3 },
                                  { .name = "seed", .type = ONNX_ATTR_FLOAT, .f = 7 } };
    compare("", "RandomUniformLike", attrs, 3, 1, ins, 1);
}
END_TEST

START_TEST(test_bridge_tfidf)
{
    int64_t x[8] = { 1, 2, 3, 1, 2, 4, 2, 3 };
    struct tensor tx = { .dtype = ONNX_DTYPE_INT64, .rank = 1, .dims = { 8 }, .data = x };
    struct tensor *ins[1] = { &tx };
    int64_t counts[2] = { 0, 3 }, idx[5] = { 0, 1, 2, 3, 4 }, pool[7] = { 1, 2, 3, 1, 2, 2, 3 };
    struct onnx_attr attrs[7] = {
        { .name = "mode", .type = ONNX_ATTR_STRING, .s = "TF", .s_len = 2 },
        { .name = "min_gram_length", .type = ONNX_ATTR_INT, .i = 1 },
        { .name = "max_gram_length", .type = ONNX_ATTR_INT, .i = 2 },
        { .name = "max_skip_count", .type = ONNX_ATTR_INT, .i = 1 },
        { .name = "ngram_counts", .type = ONNX_ATTR_INTS, .n = 2, .ints = counts },
        { .name = "ngram_indexes", .type = ONNX_ATTR_INTS, .n = 5, .ints = idx },
        { .name = "pool_int64s", .type = ONNX_ATTR_INTS, .n = 7, .ints = pool },
    };
    compare("", "TfIdfVectorizer", attrs, 7, 1, ins, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("host_bridge");
    TCase *tc = tcase_create("bridge");
    tcase_add_test(tc, test_bridge_adam);
    tcase_add_test(tc, test_bridge_bernoulli_uniform);
    tcase_add_test(tc, test_bridge_tfidf);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
