/* tests/test_ops_attn.c — bad input to Attention, AttentionGrad,
 * RotaryEmbedding, RMSNormalization, GroupNormalization and
 * InstanceNormalization (ops/attention.c, rotary.c, rms_norm.c,
 * group_norm.c): each is refused, by the parser, shape inference or the
 * kernel, with a message that names the node and the problem — never a
 * crash. Their forward results are checked by the ONNX node tests, their
 * gradients by tests/grad/cases_nn.py, their CUDA kernels by
 * tests/test_cuda_attn.c. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "testops.h"

static char err_buf[1024];
static uint32_t rng = 777u;

static struct op_env env = {
    .scratch_alloc = testops_scratch_alloc, .scratch_free = testops_scratch_free, .backend = &backend_cpu,
    .threads = 1, .err = err_buf, .err_size = sizeof err_buf,
};

#define NARGS(...) ((int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
#define F32(...) testops_tensor_rand(&rng, NARGS(__VA_ARGS__), (int64_t[]){ __VA_ARGS__ })

static struct onnx_attr ai(const char *name, int64_t v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INT, .i = v };
}

static struct onnx_attr af(const char *name, float v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_FLOAT, .f = v };
}

#define MAX_IO 10

struct bad {
    const char *domain, *op;
    int opset;
    struct onnx_attr attrs[6];
    int n_attrs;
    int n_in;
    const struct tensor *in[MAX_IO];
    int n_out;
    const char *want;              /* a piece of the message */
};

/* Parse, infer, allocate, run: the first step that fails must name node
 * "bad7" and contain b->want; every step succeeding is a failure. */
static void refused(const struct bad *b)
{
    int version;
    const struct op_def *def = op_registry_find(b->domain ? b->domain : "", b->op, b->opset, &version);
    ck_assert_msg(def != NULL, "%s not registered at opset %d", b->op, b->opset);
    struct onnx_node node = { .name = "bad7", .op_type = (char *)b->op, .domain = (char *)(b->domain ? b->domain : ""),
                              .n_inputs = b->n_in, .n_outputs = b->n_out, .n_attrs = b->n_attrs,
                              .attrs = (struct onnx_attr *)b->attrs };
    void *params = NULL;
    err_buf[0] = 0;
    int rc = def->parse ? def->parse(&node, version, &params, err_buf, sizeof err_buf) : 0;
    if (rc == 0) {
        struct tensor *out[MAX_IO];
        for (int i = 0; i < b->n_out; i++)
            out[i] = testops_alloc(sizeof(struct tensor));
        struct op_call c = { .def = def, .version = version, .params = params, .node_name = "bad7",
                             .n_in = b->n_in, .in = b->in, .n_out = b->n_out, .out = out, .env = &env };
        rc = def->infer(&c);
        if (rc == 0) {
            for (int i = 0; i < b->n_out; i++)
                out[i]->data = testops_alloc(tensor_size_bytes(out[i]) + 1);
            rc = def->kernel[BACKEND_CPU](&c);
        }
        free(params);
    }
    ck_assert_msg(rc != 0, "%s: accepted, expected a refusal saying '%s'", b->op, b->want);
    ck_assert_msg(strstr(err_buf, "bad7") && strstr(err_buf, b->want), "%s: message '%s' should name bad7 and say '%s'",
                  b->op, err_buf, b->want);
}

#define REFUSED(...) refused(&(struct bad){ __VA_ARGS__ })

START_TEST(test_attention_bad)
{
    static const int64_t np_v[] = { 9 };
    struct tensor *nonpad = testops_tensor(ONNX_DTYPE_INT64, 1, (int64_t[]){ 1 }, np_v);
    REFUSED(.op = "Attention", .opset = 23, .n_in = 3, .in = { F32(1, 3, 8), F32(1, 3, 8), F32(1, 3, 8) }, .n_out = 1,
            .want = "q_num_heads");
    REFUSED(.op = "Attention", .opset = 23, .n_in = 3, .in = { F32(1, 3, 2, 4), F32(1, 2, 2, 4), F32(1, 2, 2, 4) },
            .n_out = 1, .want = "not a multiple");
    REFUSED(.op = "Attention", .opset = 23, .n_in = 3, .in = { F32(1, 2, 2, 4), F32(1, 2, 3, 5), F32(1, 2, 3, 4) },
            .n_out = 1, .want = "head size");
    REFUSED(.op = "Attention", .opset = 23, .n_in = 4,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4), F32(2, 5) }, .n_out = 1,
            .want = "does not broadcast");
    REFUSED(.op = "Attention", .opset = 23, .n_in = 4,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4), F32(3, 6) }, .n_out = 1,
            .want = "does not broadcast");
    REFUSED(.op = "Attention", .opset = 23, .n_in = 5,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4), NULL, F32(1, 2, 2, 4) }, .n_out = 1,
            .want = "together");
    REFUSED(.op = "Attention", .opset = 23, .n_in = 6,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4), NULL, F32(1, 2, 2, 3), F32(1, 2, 2, 4) },
            .n_out = 1, .want = "past_key");
    REFUSED(.op = "Attention", .opset = 24, .n_in = 7,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4), NULL, NULL, NULL, nonpad }, .n_out = 1,
            .want = "nonpad_kv_seqlen[0] = 9");
    REFUSED(.op = "Attention", .opset = 25, .attrs = { ai("q_num_heads", 2) }, .n_attrs = 1, .n_in = 3,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4) }, .n_out = 1, .want = "4-D");
    REFUSED(.op = "Attention", .opset = 23, .attrs = { ai("qk_matmul_output_mode", 4) }, .n_attrs = 1, .n_in = 3,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4) }, .n_out = 1, .want = "qk_matmul_output_mode");
    REFUSED(.op = "Attention", .opset = 23, .attrs = { af("softcap", -1.0f) }, .n_attrs = 1, .n_in = 3,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4) }, .n_out = 1, .want = "softcap");
    REFUSED(.op = "Attention", .opset = 25, .attrs = { ai("left_window_size", -3) }, .n_attrs = 1, .n_in = 3,
            .in = { F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4) }, .n_out = 1, .want = "left_window_size");
    REFUSED(.op = "Attention", .opset = 23, .n_in = 3,
            .in = { testops_tensor(ONNX_DTYPE_INT64, 4, (int64_t[]){ 1, 1, 1, 1 }, NULL), F32(1, 1, 1, 1),
                    F32(1, 1, 1, 1) }, .n_out = 1, .want = "float32");
    /* the gradient: dY of the wrong shape */
    REFUSED(.domain = "dtrexec", .op = "AttentionGrad", .opset = 1, .n_in = 4,
            .in = { F32(1, 2, 3, 5), F32(1, 2, 3, 4), F32(1, 2, 5, 4), F32(1, 2, 5, 4) }, .n_out = 3, .want = "dY");
}
END_TEST

START_TEST(test_rotary_bad)
{
    static const int64_t pos_v[] = { 0, 1, 60 };
    struct tensor *pos = testops_tensor(ONNX_DTYPE_INT64, 2, (int64_t[]){ 1, 3 }, pos_v);
    REFUSED(.op = "RotaryEmbedding", .opset = 23, .n_in = 3, .in = { F32(1, 3, 8), F32(1, 3, 2), F32(1, 3, 2) },
            .n_out = 1, .want = "num_heads");
    REFUSED(.op = "RotaryEmbedding", .opset = 23, .attrs = { ai("rotary_embedding_dim", 3) }, .n_attrs = 1, .n_in = 4,
            .in = { F32(1, 2, 3, 8), F32(10, 2), F32(10, 2), pos }, .n_out = 1, .want = "even");
    REFUSED(.op = "RotaryEmbedding", .opset = 23, .n_in = 4, .in = { F32(1, 2, 3, 8), F32(10, 3), F32(10, 3), pos },
            .n_out = 1, .want = "cos_cache");
    REFUSED(.op = "RotaryEmbedding", .opset = 23, .n_in = 4, .in = { F32(1, 2, 3, 8), F32(10, 4), F32(10, 4), pos },
            .n_out = 1, .want = "position_ids[2] = 60");
    REFUSED(.op = "RotaryEmbedding", .opset = 23, .n_in = 3, .in = { F32(1, 2, 3, 8), F32(10, 4), F32(9, 4) },
            .n_out = 1, .want = "differ in shape");
}
END_TEST

START_TEST(test_norm_bad)
{
    REFUSED(.op = "RMSNormalization", .opset = 23, .attrs = { ai("stash_type", 0) }, .n_attrs = 1, .n_in = 2,
            .in = { F32(2, 4), F32(4) }, .n_out = 1, .want = "stash_type");
    REFUSED(.op = "RMSNormalization", .opset = 23, .attrs = { ai("axis", 2) }, .n_attrs = 1, .n_in = 2,
            .in = { F32(2, 4), F32(4) }, .n_out = 1, .want = "axis");
    REFUSED(.op = "RMSNormalization", .opset = 23, .n_in = 2, .in = { F32(2, 4), F32(3) }, .n_out = 1,
            .want = "does not broadcast");
    REFUSED(.op = "GroupNormalization", .opset = 21, .n_in = 3, .in = { F32(2, 4, 3), F32(4), F32(4) }, .n_out = 1,
            .want = "num_groups");
    REFUSED(.op = "GroupNormalization", .opset = 21, .attrs = { ai("num_groups", 3) }, .n_attrs = 1, .n_in = 3,
            .in = { F32(2, 4, 3), F32(4), F32(4) }, .n_out = 1, .want = "does not divide");
    REFUSED(.op = "GroupNormalization", .opset = 21, .attrs = { ai("num_groups", 2) }, .n_attrs = 1, .n_in = 3,
            .in = { F32(2, 4, 3), F32(2), F32(2) }, .n_out = 1, .want = "must be [4]");
    REFUSED(.op = "GroupNormalization", .opset = 18, .attrs = { ai("num_groups", 2) }, .n_attrs = 1, .n_in = 3,
            .in = { F32(2, 4, 3), F32(3), F32(3) }, .n_out = 1, .want = "must be [2]");
    REFUSED(.op = "InstanceNormalization", .opset = 22, .n_in = 3, .in = { F32(4), F32(4), F32(4) }, .n_out = 1,
            .want = "[N, C, ...]");
    REFUSED(.op = "InstanceNormalization", .opset = 22, .n_in = 3, .in = { F32(2, 3, 4), F32(3), F32(2) }, .n_out = 1,
            .want = "bias");
}
END_TEST

static void teardown(void)
{
    testops_free_all();
}

int main(void)
{
    Suite *s = suite_create("ops_attn");
    TCase *tc = tcase_create("bad_input");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_attention_bad);
    tcase_add_test(tc, test_rotary_bad);
    tcase_add_test(tc, test_norm_bad);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
