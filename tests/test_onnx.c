/* tests/test_onnx.c — the onnx/ loader: real node-test models, tensors in
 * every encoding, external data, subgraphs, saving (checked in onnxruntime
 * when it is installed), and a hostile-input suite (generated bad files,
 * truncations, byte flips, deep nesting) that must fail cleanly.
 *
 * Test data beyond ../shared/data is generated at start-up by
 * tests/onnx/gen_onnx_cases.py into ./test_onnx_data (needs python3 with
 * numpy and onnx; the tests that need it fail if it cannot run).
 */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "onnx/onnx.h"
#include "testutil.h"

static char gen_dir[1024];
static int gen_ok;
static int have_ort;

static const char *node_model(const char *test)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/onnx-node/%s/model.onnx", testutil_data_dir(), test);
    return p;
}

static const char *node_tensor(const char *test, const char *file)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/onnx-node/%s/test_data_set_0/%s", testutil_data_dir(), test, file);
    return p;
}

static const char *gen_path(const char *rel)
{
    static char p[2][1200];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", gen_dir, rel);
    return p[k];
}

static struct onnx_model *load_ok(const char *path)
{
    struct onnx_model *m = NULL;
    char err[1024] = "";
    int rc = onnx_model_load(path, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "loading %s failed: %s", path, err);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(m->graph);
    return m;
}

static void tensor_ok(const char *path, struct onnx_tensor *t)
{
    char err[1024] = "";
    int rc = onnx_tensor_load(path, t, err, sizeof err);
    ck_assert_msg(rc == 0, "loading tensor %s failed: %s", path, err);
}

static void assert_dims(int rank, const int64_t *dims, int want_rank, const int64_t *want, const char *what)
{
    ck_assert_msg(rank == want_rank, "%s: expected rank %d, got %d", what, want_rank, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_msg(dims[i] == want[i], "%s: expected dim %d = %lld, got %lld", what, i, (long long)want[i],
                      (long long)dims[i]);
}

static void assert_same_tensor(const struct onnx_tensor *a, const struct onnx_tensor *b, const char *what)
{
    ck_assert_msg(a->dtype == b->dtype, "%s: dtype %s vs %s", what, onnx_dtype_name(a->dtype),
                  onnx_dtype_name(b->dtype));
    assert_dims(a->rank, a->dims, b->rank, b->dims, what);
    ck_assert_msg(a->size_bytes == b->size_bytes, "%s: %zu vs %zu bytes", what, a->size_bytes, b->size_bytes);
    if (a->size_bytes) {
        const unsigned char *x = a->data, *y = b->data;
        for (size_t i = 0; i < a->size_bytes; i++)
            ck_assert_msg(x[i] == y[i], "%s: byte %zu differs (%u vs %u)", what, i, x[i], y[i]);
    }
}

/* Every node input is a graph input, initializer, outer value (subgraphs) or
 * the output of an earlier node. */
static int order_is_topological(const struct onnx_graph *g, int allow_outer)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            const char *in = g->nodes[i].inputs[k];
            int found = !in[0];
            for (int j = 0; j < g->n_inputs && !found; j++)
                found = strcmp(g->inputs[j].name, in) == 0;
            for (int j = 0; j < g->n_initializers && !found; j++)
                found = strcmp(g->initializers[j].name, in) == 0;
            for (int j = 0; j < i && !found; j++)
                for (int o = 0; o < g->nodes[j].n_outputs && !found; o++)
                    found = strcmp(g->nodes[j].outputs[o], in) == 0;
            if (!found) {
                int later = 0;
                for (int j = i; j < g->n_nodes; j++)
                    for (int o = 0; o < g->nodes[j].n_outputs; o++)
                        later |= strcmp(g->nodes[j].outputs[o], in) == 0;
                if (later || !allow_outer)
                    return 0;
            }
        }
    return 1;
}

/* ---- dtype and attribute helpers ------------------------------------------ */

START_TEST(test_dtype_helpers)
{
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_FLOAT), 4);
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_DOUBLE), 8);
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_INT64), 8);
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_BOOL), 1);
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_FLOAT16), 2);
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_BFLOAT16), 2);
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_UINT32), 4);
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_COMPLEX128), 16);
    ck_assert_uint_eq(onnx_dtype_size(ONNX_DTYPE_STRING), sizeof(struct onnx_string));
    ck_assert_uint_eq(onnx_dtype_size(17), 0);
    ck_assert_uint_eq(onnx_dtype_size(-3), 0);
    ck_assert_str_eq(onnx_dtype_name(ONNX_DTYPE_FLOAT), "float32");
    ck_assert_str_eq(onnx_dtype_name(ONNX_DTYPE_INT8), "int8");
    ck_assert_str_eq(onnx_dtype_name(ONNX_DTYPE_BFLOAT16), "bfloat16");
    ck_assert_str_eq(onnx_dtype_name(22), "int4");
    ck_assert_str_eq(onnx_dtype_name(1000), "unknown");
    ck_assert_str_eq(onnx_dtype_name(-1), "unknown");
}
END_TEST

START_TEST(test_attr_helpers)
{
    int64_t ints[3] = {1, 2, 3};
    float floats[2] = {0.5f, 1.5f};
    struct onnx_attr attrs[5] = {
        {.name = "alpha", .type = ONNX_ATTR_FLOAT, .f = 0.25f},
        {.name = "axis", .type = ONNX_ATTR_INT, .i = -2},
        {.name = "mode", .type = ONNX_ATTR_STRING, .s = "linear", .s_len = 6},
        {.name = "pads", .type = ONNX_ATTR_INTS, .n = 3, .ints = ints},
        {.name = "scales", .type = ONNX_ATTR_FLOATS, .n = 2, .floats = floats},
    };
    struct onnx_node n = {.name = "n", .op_type = "X", .domain = "", .n_attrs = 5, .attrs = attrs};
    ck_assert_ptr_eq(onnx_node_attr(&n, "axis"), &attrs[1]);
    ck_assert_ptr_null(onnx_node_attr(&n, "nope"));
    ck_assert_int_eq(onnx_node_attr_int(&n, "axis", 7), -2);
    ck_assert_int_eq(onnx_node_attr_int(&n, "nope", 7), 7);
    ck_assert_int_eq(onnx_node_attr_int(&n, "mode", 7), 7);
    ck_assert_float_eq(onnx_node_attr_float(&n, "alpha", 1.0f), 0.25f);
    ck_assert_float_eq(onnx_node_attr_float(&n, "nope", 1.0f), 1.0f);
    ck_assert_str_eq(onnx_node_attr_string(&n, "mode", "nearest"), "linear");
    ck_assert_str_eq(onnx_node_attr_string(&n, "nope", "nearest"), "nearest");
    ck_assert_str_eq(onnx_node_attr_string(&n, "axis", "d"), "d");
    int64_t out[4];
    ck_assert_int_eq(onnx_node_attr_ints(&n, "pads", out, 4), 3);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[2], 3);
    ck_assert_int_eq(onnx_node_attr_ints(&n, "pads", out, 2), -2);
    ck_assert_int_eq(onnx_node_attr_ints(&n, "nope", out, 4), -1);
    ck_assert_int_eq(onnx_node_attr_ints(&n, "axis", out, 4), 1);
    ck_assert_int_eq(out[0], -2);
    float fo[2];
    ck_assert_int_eq(onnx_node_attr_floats(&n, "scales", fo, 2), 2);
    ck_assert_float_eq(fo[1], 1.5f);
    ck_assert_int_eq(onnx_node_attr_floats(&n, "scales", fo, 1), -2);
    ck_assert_int_eq(onnx_node_attr_floats(&n, "mode", fo, 2), -1);
}
END_TEST

/* ---- real node-test models -------------------------------------------------- */

START_TEST(test_conv_model)
{
    struct onnx_model *m = load_ok(node_model("test_conv_with_strides_padding"));
    ck_assert_int_eq(m->ir_version, 10);
    ck_assert_int_eq(onnx_model_opset(m, ""), 22);
    ck_assert_int_eq(onnx_model_opset(m, "ai.onnx"), 22);
    ck_assert_int_eq(onnx_model_opset(m, "com.microsoft"), 0);
    ck_assert_ptr_nonnull(m->path);
    const struct onnx_graph *g = m->graph;
    ck_assert_int_eq(g->n_nodes, 1);
    ck_assert_int_eq(g->n_initializers, 0);
    ck_assert_int_eq(g->n_inputs, 2);
    ck_assert_int_eq(g->n_default_inputs, 0);
    ck_assert_int_eq(g->n_outer_refs, 0);
    ck_assert_str_eq(g->inputs[0].name, "x");
    ck_assert_int_eq(g->inputs[0].kind, ONNX_VALUE_TENSOR);
    ck_assert_int_eq(g->inputs[0].elem_type, ONNX_DTYPE_FLOAT);
    assert_dims(g->inputs[0].rank, g->inputs[0].dims, 4, (int64_t[]){1, 1, 7, 5}, "x");
    assert_dims(g->inputs[1].rank, g->inputs[1].dims, 4, (int64_t[]){1, 1, 3, 3}, "W");
    ck_assert_int_eq(g->n_outputs, 1);
    ck_assert_str_eq(g->outputs[0].name, "y");
    assert_dims(g->outputs[0].rank, g->outputs[0].dims, 4, (int64_t[]){1, 1, 4, 3}, "y");
    const struct onnx_node *n = &g->nodes[0];
    ck_assert_str_eq(n->op_type, "Conv");
    ck_assert_str_eq(n->domain, "");
    ck_assert_str_eq(n->name, "Conv_0");      /* unnamed in the file */
    ck_assert_int_eq(n->n_inputs, 2);
    ck_assert_int_eq(n->n_attrs, 3);
    const struct onnx_attr *a = onnx_node_attr(n, "pads");
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->type, ONNX_ATTR_INTS);
    int64_t v[8];
    ck_assert_int_eq(onnx_node_attr_ints(n, "kernel_shape", v, 8), 2);
    ck_assert_int_eq(v[0], 3);
    ck_assert_int_eq(v[1], 3);
    ck_assert_int_eq(onnx_node_attr_ints(n, "pads", v, 8), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(v[i], 1);
    ck_assert_int_eq(onnx_node_attr_ints(n, "strides", v, 8), 2);
    ck_assert_int_eq(v[0], 2);
    ck_assert_int_eq(v[1], 2);
    onnx_model_free(m);
}
END_TEST

START_TEST(test_lstm_model)
{
    struct onnx_model *m = load_ok(node_model("test_lstm_defaults"));
    const struct onnx_graph *g = m->graph;
    ck_assert_int_eq(g->n_nodes, 1);
    const struct onnx_node *n = &g->nodes[0];
    ck_assert_str_eq(n->op_type, "LSTM");
    ck_assert_int_eq(n->n_inputs, 3);
    ck_assert_int_eq(n->n_outputs, 2);
    ck_assert_str_eq(n->outputs[0], "");       /* omitted optional output */
    ck_assert_str_eq(n->outputs[1], "Y_h");
    const struct onnx_attr *a = onnx_node_attr(n, "hidden_size");
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->type, ONNX_ATTR_INT);
    ck_assert_int_eq(a->i, 3);
    ck_assert_int_eq(onnx_model_opset(m, ""), 22);
    assert_dims(g->inputs[1].rank, g->inputs[1].dims, 3, (int64_t[]){1, 12, 2}, "W");
    onnx_model_free(m);
}
END_TEST

START_TEST(test_if_model)
{
    struct onnx_model *m = load_ok(node_model("test_if"));
    ck_assert_int_eq(m->ir_version, 6);
    ck_assert_int_eq(onnx_model_opset(m, ""), 11);
    const struct onnx_graph *g = m->graph;
    ck_assert_int_eq(g->n_inputs, 1);
    ck_assert_int_eq(g->inputs[0].elem_type, ONNX_DTYPE_BOOL);
    ck_assert_int_eq(g->inputs[0].rank, 0);
    const struct onnx_node *n = &g->nodes[0];
    ck_assert_str_eq(n->op_type, "If");
    const char *branches[2] = {"then_branch", "else_branch"};
    for (int b = 0; b < 2; b++) {
        const struct onnx_attr *a = onnx_node_attr(n, branches[b]);
        ck_assert_ptr_nonnull(a);
        ck_assert_int_eq(a->type, ONNX_ATTR_GRAPH);
        ck_assert_ptr_nonnull(a->g);
        ck_assert_int_eq(a->g->n_nodes, 1);
        ck_assert_int_eq(a->g->n_outputs, 1);
        ck_assert_int_eq(a->g->n_outer_refs, 0);
        const struct onnx_node *c = &a->g->nodes[0];
        ck_assert_str_eq(c->op_type, "Constant");
        const struct onnx_attr *v = onnx_node_attr(c, "value");
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(v->type, ONNX_ATTR_TENSOR);
        ck_assert_int_eq(v->t->dtype, ONNX_DTYPE_FLOAT);
        ck_assert_int_eq(v->t->rank, 1);
        ck_assert_int_eq(v->t->dims[0], 5);
        ck_assert_uint_eq(v->t->size_bytes, 20);
    }
    /* then_branch holds 1..5, else_branch 5..1 (onnx backend test case). */
    const float *tv = onnx_node_attr(n, "then_branch")->g->nodes[0].attrs[0].t->data;
    const float *ev = onnx_node_attr(n, "else_branch")->g->nodes[0].attrs[0].t->data;
    for (int i = 0; i < 5; i++) {
        ck_assert_float_eq(tv[i], (float)(i + 1));
        ck_assert_float_eq(ev[i], (float)(5 - i));
    }
    onnx_model_free(m);
}
END_TEST

START_TEST(test_loop_model)
{
    struct onnx_model *m = load_ok(node_model("test_loop11"));
    const struct onnx_graph *g = m->graph;
    ck_assert_int_eq(g->n_inputs, 3);
    ck_assert_int_eq(g->n_outputs, 2);
    ck_assert_int_eq(g->inputs[0].elem_type, ONNX_DTYPE_INT64);
    const struct onnx_node *n = &g->nodes[0];
    ck_assert_str_eq(n->op_type, "Loop");
    const struct onnx_attr *body = onnx_node_attr(n, "body");
    ck_assert_ptr_nonnull(body);
    ck_assert_int_eq(body->type, ONNX_ATTR_GRAPH);
    const struct onnx_graph *b = body->g;
    ck_assert_str_eq(b->name, "loop_body");
    ck_assert_int_eq(b->n_inputs, 3);
    ck_assert_int_eq(b->n_outputs, 3);
    ck_assert_int_eq(b->n_nodes, 9);
    ck_assert_str_eq(b->inputs[0].name, "iter_count");
    ck_assert_msg(order_is_topological(b, 1), "loop body not in topological order");
    int unsq = 0;
    for (int i = 0; i < b->n_nodes; i++)
        if (strcmp(b->nodes[i].op_type, "Unsqueeze") == 0) {
            int64_t axes[2];
            ck_assert_int_eq(onnx_node_attr_ints(&b->nodes[i], "axes", axes, 2), 1);
            ck_assert_int_eq(axes[0], 0);
            unsq++;
        }
    ck_assert_int_eq(unsq, 2);
    onnx_model_free(m);
}
END_TEST

START_TEST(test_resize_model)
{
    struct onnx_model *m = load_ok(node_model("test_resize_upsample_scales_linear"));
    ck_assert_int_eq(onnx_model_opset(m, ""), 19);
    const struct onnx_node *n = &m->graph->nodes[0];
    ck_assert_str_eq(n->op_type, "Resize");
    ck_assert_int_eq(n->n_inputs, 3);
    ck_assert_str_eq(n->inputs[1], "");
    const struct onnx_attr *a = onnx_node_attr(n, "mode");
    ck_assert_int_eq(a->type, ONNX_ATTR_STRING);
    ck_assert_str_eq(a->s, "linear");
    ck_assert_uint_eq(a->s_len, 6);
    onnx_model_free(m);
}
END_TEST

/* Every model of the node-test corpus loads, in topological order. */
START_TEST(test_all_node_models)
{
    char list[1200];
    snprintf(list, sizeof list, "%s/onnx-node/MANIFEST.jsonl", testutil_data_dir());
    FILE *f = fopen(list, "r");
    ck_assert_msg(f != NULL, "cannot open %s", list);
    char line[8192];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, "\"test\": \""), *e;
        if (!p || !(e = strchr(p + 9, '"')))
            continue;
        *e = 0;
        struct onnx_model *m = load_ok(node_model(p + 9));
        ck_assert_msg(order_is_topological(m->graph, 0), "%s: not topological", p + 9);
        onnx_model_free(m);
        count++;
    }
    fclose(f);
    ck_assert_int_ge(count, 600);
}
END_TEST

/* ---- tensors -------------------------------------------------------------------- */

START_TEST(test_node_tensors_vs_npy)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    static const struct { const char *test, *file; int dtype; } cases[] = {
        {"test_conv_with_strides_padding", "input_0", ONNX_DTYPE_FLOAT},
        {"test_conv_with_strides_padding", "input_1", ONNX_DTYPE_FLOAT},
        {"test_conv_with_strides_padding", "output_0", ONNX_DTYPE_FLOAT},
        {"test_add_int8", "input_0", ONNX_DTYPE_INT8},
        {"test_add_uint16", "input_1", ONNX_DTYPE_UINT16},
        {"test_add_uint64", "input_0", ONNX_DTYPE_UINT64},
        {"test_maxpool_2d_uint8", "output_0", ONNX_DTYPE_UINT8},
        {"test_cast_FLOAT16_to_DOUBLE", "input_0", ONNX_DTYPE_FLOAT16},
        {"test_cast_DOUBLE_to_FLOAT", "input_0", ONNX_DTYPE_DOUBLE},
        {"test_pow_types_float32_int64", "input_1", ONNX_DTYPE_INT64},
        {"test_div_int32_trunc", "input_0", ONNX_DTYPE_INT32},
        {"test_training_dropout", "input_2", ONNX_DTYPE_BOOL},
        {"test_lstm_defaults", "output_0", ONNX_DTYPE_FLOAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char file[64], rel[256];
        snprintf(file, sizeof file, "%s.pb", cases[i].file);
        snprintf(rel, sizeof rel, "node_npy/%s_%s.npy", cases[i].test, cases[i].file);
        struct onnx_tensor a, b;
        tensor_ok(node_tensor(cases[i].test, file), &a);
        tensor_ok(gen_path(rel), &b);
        ck_assert_msg(a.dtype == cases[i].dtype, "%s: expected %s, got %s", rel,
                      onnx_dtype_name(cases[i].dtype), onnx_dtype_name(a.dtype));
        ck_assert_str_eq(b.name, "");
        assert_same_tensor(&a, &b, rel);
        onnx_tensor_clear(&a);
        onnx_tensor_clear(&b);
    }
    struct onnx_tensor x;
    tensor_ok(node_tensor("test_conv_with_strides_padding", "input_0.pb"), &x);
    ck_assert_str_eq(x.name, "x");
    ck_assert_int_eq(onnx_tensor_numel(&x), 35);
    /* The conv test's input is np.arange(35). */
    for (int i = 0; i < 35; i++)
        ck_assert_float_eq(((float *)x.data)[i], (float)i);
    onnx_tensor_clear(&x);
}
END_TEST

START_TEST(test_raw_typed_npy_identical)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    static const char *names[] = {"float32", "float64", "int64", "int32", "int16", "uint16", "int8",
                                  "uint8", "bool", "float16", "uint32", "uint64", "scalar", "empty"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char r[128], t[128], n[128];
        snprintf(r, sizeof r, "tensors/%s_raw.pb", names[i]);
        snprintf(t, sizeof t, "tensors/%s_typed.pb", names[i]);
        snprintf(n, sizeof n, "tensors/%s.npy", names[i]);
        struct onnx_tensor a, b, c;
        tensor_ok(gen_path(r), &a);
        tensor_ok(gen_path(t), &b);
        tensor_ok(gen_path(n), &c);
        ck_assert_str_eq(a.name, names[i]);
        assert_same_tensor(&a, &b, t);
        assert_same_tensor(&a, &c, n);
        onnx_tensor_clear(&a);
        onnx_tensor_clear(&b);
        onnx_tensor_clear(&c);
    }
    struct onnx_tensor a, b;
    tensor_ok(gen_path("tensors/bfloat16_raw.pb"), &a);
    tensor_ok(gen_path("tensors/bfloat16_typed.pb"), &b);
    ck_assert_int_eq(a.dtype, ONNX_DTYPE_BFLOAT16);
    assert_same_tensor(&a, &b, "bfloat16");
    ck_assert_uint_eq(((uint16_t *)a.data)[0], 0x3FC0);
    ck_assert_uint_eq(((uint16_t *)a.data)[1], 0xC010);
    onnx_tensor_clear(&a);
    onnx_tensor_clear(&b);

    /* Spot values written by the generator. */
    tensor_ok(gen_path("tensors/int64_typed.pb"), &a);
    ck_assert_int_eq(((int64_t *)a.data)[0], -((int64_t)1 << 40));
    ck_assert_int_eq(((int64_t *)a.data)[3], (int64_t)1 << 62);
    onnx_tensor_clear(&a);
    tensor_ok(gen_path("tensors/float16_typed.pb"), &a);
    ck_assert_uint_eq(((uint16_t *)a.data)[0], 0x3E00);    /* 1.5 */
    ck_assert_uint_eq(((uint16_t *)a.data)[2], 0x7BFF);    /* 65504 */
    onnx_tensor_clear(&a);
    tensor_ok(gen_path("tensors/uint64.npy"), &a);
    ck_assert(((uint64_t *)a.data)[1] == UINT64_MAX);
    onnx_tensor_clear(&a);
    tensor_ok(gen_path("tensors/scalar_typed.pb"), &a);
    ck_assert_int_eq(a.rank, 0);
    ck_assert_int_eq(onnx_tensor_numel(&a), 1);
    ck_assert_float_eq(((float *)a.data)[0], 3.25f);
    onnx_tensor_clear(&a);
    tensor_ok(gen_path("tensors/empty.npy"), &a);
    ck_assert_int_eq(a.rank, 2);
    ck_assert_int_eq(onnx_tensor_numel(&a), 0);
    ck_assert_uint_eq(a.size_bytes, 0);
    onnx_tensor_clear(&a);
}
END_TEST

START_TEST(test_npy_versions)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    for (int v = 1; v <= 3; v++) {
        char rel[64];
        snprintf(rel, sizeof rel, "npy/v%d.npy", v);
        struct onnx_tensor t;
        tensor_ok(gen_path(rel), &t);
        ck_assert_int_eq(t.dtype, ONNX_DTYPE_FLOAT);
        assert_dims(t.rank, t.dims, 2, (int64_t[]){3, 4}, rel);
        for (int i = 0; i < 12; i++)
            ck_assert_msg(((float *)t.data)[i] == (float)i, "%s: expected %d at %d, got %g", rel, i, i,
                          ((float *)t.data)[i]);
        onnx_tensor_clear(&t);
    }
}
END_TEST

START_TEST(test_tensor_save_roundtrip)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    static const char *names[] = {"float32", "float64", "int64", "int8", "bool", "float16", "uint64", "scalar", "empty"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char n[128], out[128];
        snprintf(n, sizeof n, "tensors/%s_raw.pb", names[i]);
        snprintf(out, sizeof out, "saved_%s.pb", names[i]);
        struct onnx_tensor a, b;
        char err[1024];
        tensor_ok(gen_path(n), &a);
        ck_assert_msg(onnx_tensor_save(&a, gen_path(out), err, sizeof err) == 0, "save: %s", err);
        tensor_ok(gen_path(out), &b);
        ck_assert_str_eq(a.name, b.name);
        assert_same_tensor(&a, &b, out);
        onnx_tensor_clear(&a);
        onnx_tensor_clear(&b);
    }
    /* A .npy saved as TensorProto keeps its values. */
    struct onnx_tensor a, b;
    char err[1024];
    tensor_ok(gen_path("npy/v2.npy"), &a);
    ck_assert_int_eq(onnx_tensor_save(&a, gen_path("saved_npy.pb"), err, sizeof err), 0);
    tensor_ok(gen_path("saved_npy.pb"), &b);
    assert_same_tensor(&a, &b, "npy->pb");
    onnx_tensor_clear(&a);
    onnx_tensor_clear(&b);
    /* A tensor whose data is missing is refused, naming it (string tensors
     * save as string_data: tests/strings_check.py). */
    struct onnx_tensor s = {.name = "s", .dtype = ONNX_DTYPE_STRING, .rank = 0};
    ck_assert_int_eq(onnx_tensor_save(&s, gen_path("saved_bad.pb"), err, sizeof err), -1);
    ck_assert_msg(strstr(err, "tensor 's' has no data"), "message: %s", err);
}
END_TEST

/* ---- generated models: features ------------------------------------------------- */

static void check_w_values(const struct onnx_tensor *t, float scale, const char *what)
{
    ck_assert_int_eq(t->dtype, ONNX_DTYPE_FLOAT);
    assert_dims(t->rank, t->dims, 2, (int64_t[]){2, 3}, what);
    for (int i = 0; i < 6; i++) {
        float want = ((float)i * 0.5f - 1.0f) * scale;
        ck_assert_msg(((float *)t->data)[i] == want, "%s: expected %g at %d, got %g", what, want, i,
                      ((float *)t->data)[i]);
    }
}

START_TEST(test_external_data)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    struct onnx_model *m = load_ok(gen_path("ext_ok/model.onnx"));
    const struct onnx_graph *g = m->graph;
    ck_assert_int_eq(g->n_initializers, 3);
    check_w_values(&g->initializers[0], 1.0f, "w1");
    check_w_values(&g->initializers[1], 2.0f, "w2");
    const struct onnx_tensor *w3 = &g->initializers[2];
    ck_assert_int_eq(w3->dtype, ONNX_DTYPE_INT64);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(((int64_t *)w3->data)[i], i);
    onnx_model_free(m);
    m = load_ok(gen_path("ext_sub/model.onnx"));
    check_w_values(&m->graph->initializers[0], 1.0f, "sub/w.bin");
    onnx_model_free(m);

    /* From a buffer without a directory, external data cannot be resolved. */
    FILE *f = fopen(gen_path("ext_ok/model.onnx"), "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char err[1024];
    ck_assert_int_eq(onnx_model_load_buffer(buf, n, NULL, &m, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "external data"), "message: %s", err);
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/ext_ok", gen_dir);
    ck_assert_msg(onnx_model_load_buffer(buf, n, dir, &m, err, sizeof err) == 0, "%s", err);
    ck_assert_ptr_null(m->path);
    check_w_values(&m->graph->initializers[1], 2.0f, "w2 from buffer");
    onnx_model_free(m);
}
END_TEST

START_TEST(test_ir3_initializer_inputs)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    struct onnx_model *m = load_ok(gen_path("ir3.onnx"));
    const struct onnx_graph *g = m->graph;
    ck_assert_int_eq(m->ir_version, 3);
    ck_assert_int_eq(onnx_model_opset(m, ""), 7);
    ck_assert_int_eq(g->n_inputs, 1);
    ck_assert_str_eq(g->inputs[0].name, "x");
    ck_assert_int_eq(g->n_default_inputs, 1);
    ck_assert_str_eq(g->default_inputs[0].name, "w");
    assert_dims(g->default_inputs[0].rank, g->default_inputs[0].dims, 2, (int64_t[]){2, 3}, "w input");
    ck_assert_int_eq(g->n_initializers, 1);
    check_w_values(&g->initializers[0], 1.0f, "w");
    onnx_model_free(m);
}
END_TEST

/* onnx/half.c's conversions: every finite float16 survives float and back;
 * a float halfway between two neighbours rounds to the even one; overflow
 * goes to infinity; bfloat16 rounds to nearest even. (tests/half_check.py
 * runs whole float16/bfloat16 models.) */
START_TEST(test_half_conversions)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = onnx_half_to_float((uint16_t)h, ONNX_DTYPE_FLOAT16);
        if (isnan(f)) {
            ck_assert_int_eq(h & 0x7c00, 0x7c00);
            continue;
        }
        ck_assert_uint_eq(onnx_float_to_half(f, ONNX_DTYPE_FLOAT16), h);
        if ((h & 0x7fff) < 0x7bff) {   /* halfway to the next magnitude: the even one wins */
            float next = onnx_half_to_float((uint16_t)(h + 1), ONNX_DTYPE_FLOAT16);
            float mid = (float)(((double)f + (double)next) / 2);
            uint16_t r = onnx_float_to_half(mid, ONNX_DTYPE_FLOAT16);
            ck_assert_uint_eq(r, (h & 1) ? h + 1 : h);
        }
        float b = onnx_half_to_float((uint16_t)h, ONNX_DTYPE_BFLOAT16);
        if (!isnan(b))
            ck_assert_uint_eq(onnx_float_to_half(b, ONNX_DTYPE_BFLOAT16), h);
    }
    ck_assert_uint_eq(onnx_float_to_half(65504.0f, ONNX_DTYPE_FLOAT16), 0x7bff);
    ck_assert_uint_eq(onnx_float_to_half(65520.0f, ONNX_DTYPE_FLOAT16), 0x7c00);
    ck_assert_uint_eq(onnx_float_to_half(-1e30f, ONNX_DTYPE_FLOAT16), 0xfc00);
    ck_assert_uint_eq(onnx_float_to_half(1e-30f, ONNX_DTYPE_FLOAT16), 0);
    ck_assert_uint_eq(onnx_float_to_half(1.0f + 0x1p-8f, ONNX_DTYPE_BFLOAT16), 0x3f80);   /* tie: even */
    ck_assert_uint_eq(onnx_float_to_half(1.0f + 0x1p-8f + 0x1p-20f, ONNX_DTYPE_BFLOAT16), 0x3f81);
    ck_assert(isnan(onnx_half_to_float(onnx_float_to_half(NAN, ONNX_DTYPE_BFLOAT16), ONNX_DTYPE_BFLOAT16)));
}
END_TEST

/* What `pip install onnx` writes today (1.23: make_model's IR 14, opset 28). */
START_TEST(test_ir14_opset28)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    struct onnx_model *m = load_ok(gen_path("ir14_opset28.onnx"));
    ck_assert_int_eq(m->ir_version, 14);
    ck_assert_int_eq(onnx_model_opset(m, ""), 28);
    ck_assert_int_eq(m->graph->n_initializers, 1);
    check_w_values(&m->graph->initializers[0], 1.0f, "w");
    onnx_model_free(m);
}
END_TEST

START_TEST(test_symbolic_dims_and_opsets)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    struct onnx_model *m = load_ok(gen_path("symbolic.onnx"));
    const struct onnx_graph *g = m->graph;
    ck_assert_int_eq(onnx_model_opset(m, ""), 13);
    ck_assert_int_eq(onnx_model_opset(m, "ai.onnx"), 13);
    ck_assert_int_eq(onnx_model_opset(m, "com.example"), 2);
    ck_assert_int_eq(onnx_model_opset(m, "com.other"), 0);
    ck_assert_int_eq(m->n_opsets, 2);
    ck_assert_str_eq(m->opsets[0].domain, "");
    const struct onnx_value_info *x = &g->inputs[0];
    ck_assert_int_eq(x->rank, 2);
    ck_assert_int_eq(x->dims[0], -1);
    ck_assert_str_eq(x->dim_params[0], "N");
    ck_assert_int_eq(x->dims[1], 3);
    ck_assert_ptr_null(x->dim_params[1]);
    ck_assert_int_eq(g->n_value_info, 1);
    ck_assert_str_eq(g->value_info[0].name, "h");
    ck_assert_str_eq(g->value_info[0].dim_params[0], "N");
    ck_assert_int_eq(g->value_info[0].elem_type, ONNX_DTYPE_FLOAT);
    onnx_model_free(m);
    /* A negative dim_value (an old exporter's "unknown") reads as unknown. */
    m = load_ok(gen_path("negative_value_info_dim.onnx"));
    ck_assert_int_eq(m->graph->inputs[0].dims[0], -1);
    ck_assert_int_eq(m->graph->inputs[0].dims[1], 3);
    onnx_model_free(m);
}
END_TEST

START_TEST(test_out_of_order_sorted)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    struct onnx_model *m = load_ok(gen_path("out_of_order.onnx"));
    const struct onnx_graph *g = m->graph;
    ck_assert_int_eq(g->n_nodes, 4);
    ck_assert_msg(order_is_topological(g, 0), "nodes not sorted");
    /* The If reads 'a' only through its branches: it must still come after Abs. */
    ck_assert_str_eq(g->nodes[0].op_type, "Abs");
    ck_assert_str_eq(g->nodes[1].op_type, "If");
    ck_assert_str_eq(g->nodes[2].name, "Relu_1");
    ck_assert_str_eq(g->nodes[3].name, "Relu_0");
    ck_assert_str_eq(g->nodes[0].name, "Abs_3");
    const struct onnx_attr *t = onnx_node_attr(&g->nodes[1], "then_branch");
    ck_assert_int_eq(t->g->n_outer_refs, 1);
    ck_assert_str_eq(t->g->outer_refs[0], "a");
    ck_assert_int_eq(g->n_outer_refs, 0);
    onnx_model_free(m);

    m = load_ok(gen_path("long_chain.onnx"));
    ck_assert_int_eq(m->graph->n_nodes, 20000);
    ck_assert_str_eq(m->graph->nodes[0].inputs[0], "v0");
    ck_assert_str_eq(m->graph->nodes[0].name, "Relu_19999");
    ck_assert_str_eq(m->graph->nodes[19999].outputs[0], "v20000");
    for (int i = 1; i < 20000; i++)
        ck_assert_str_eq(m->graph->nodes[i].inputs[0], m->graph->nodes[i - 1].outputs[0]);
    onnx_model_free(m);
}
END_TEST

START_TEST(test_every_attribute_kind)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    struct onnx_model *m = load_ok(gen_path("attributes.onnx"));
    const struct onnx_node *n = &m->graph->nodes[0];
    ck_assert_str_eq(n->name, "every");
    ck_assert_str_eq(n->domain, "com.example");
    ck_assert_int_eq(n->n_attrs, 10);
    const struct onnx_attr *a;
    a = onnx_node_attr(n, "f");
    ck_assert_int_eq(a->type, ONNX_ATTR_FLOAT);
    ck_assert_float_eq(a->f, 1.5f);
    a = onnx_node_attr(n, "i");
    ck_assert_int_eq(a->type, ONNX_ATTR_INT);
    ck_assert_int_eq(a->i, -7);
    a = onnx_node_attr(n, "s");
    ck_assert_int_eq(a->type, ONNX_ATTR_STRING);
    ck_assert_str_eq(a->s, "hello");
    a = onnx_node_attr(n, "t");
    ck_assert_int_eq(a->type, ONNX_ATTR_TENSOR);
    ck_assert_int_eq(a->t->dtype, ONNX_DTYPE_INT32);
    ck_assert_int_eq(((int32_t *)a->t->data)[2], 3);
    a = onnx_node_attr(n, "g");
    ck_assert_int_eq(a->type, ONNX_ATTR_GRAPH);
    ck_assert_str_eq(a->g->nodes[0].op_type, "Identity");
    ck_assert_int_eq(a->g->n_outer_refs, 1);
    ck_assert_str_eq(a->g->outer_refs[0], "x");
    a = onnx_node_attr(n, "floats");
    ck_assert_int_eq(a->type, ONNX_ATTR_FLOATS);
    ck_assert_int_eq(a->n, 2);
    ck_assert_float_eq(a->floats[1], -2.0f);
    a = onnx_node_attr(n, "ints");
    ck_assert_int_eq(a->type, ONNX_ATTR_INTS);
    ck_assert_int_eq(a->n, 4);
    ck_assert_int_eq(a->ints[3], 4);
    a = onnx_node_attr(n, "strings");
    ck_assert_int_eq(a->type, ONNX_ATTR_STRINGS);
    ck_assert_int_eq(a->n, 2);
    ck_assert_str_eq(a->strings[1], "bc");
    a = onnx_node_attr(n, "tensors");
    ck_assert_int_eq(a->type, ONNX_ATTR_TENSORS);
    ck_assert_int_eq(a->n, 2);
    ck_assert_int_eq(a->tensors[1]->dtype, ONNX_DTYPE_INT64);
    ck_assert_int_eq(((int64_t *)a->tensors[1]->data)[1], 2);
    a = onnx_node_attr(n, "graphs");
    ck_assert_int_eq(a->type, ONNX_ATTR_GRAPHS);
    ck_assert_int_eq(a->n, 2);
    ck_assert_str_eq(a->graphs[1]->name, "attr_g");
    onnx_model_free(m);
}
END_TEST

START_TEST(test_big_weights)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct onnx_model *m = load_ok(gen_path("big_weights.onnx"));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_int_eq(m->graph->n_initializers, 16);
    size_t total = 0;
    for (int k = 0; k < 16; k++) {
        const struct onnx_tensor *t = &m->graph->initializers[k];
        const float *d = t->data;
        ck_assert_float_eq(d[0], (float)k + 0.5f);
        ck_assert_float_eq(d[1024 * 1024 - 1], (float)k + 0.5f);
        total += t->size_bytes;
    }
    ck_assert_uint_eq(total, (size_t)64 << 20);
    /* Generous: a linear loader takes well under a second even sanitized. */
    ck_assert_msg(s < 20.0, "loading 64 MiB took %.2f s", s);
    onnx_model_free(m);
}
END_TEST

/* ---- saving ------------------------------------------------------------------------ */

static int run_ort_check(const char *model, const char *ins, const char *outs)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 %s/tests/onnx/ort_check.py '%s' --in %s --out %s", DTRX_SOURCE_DIR, model, ins,
             outs);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void assert_same_graph(const struct onnx_graph *a, const struct onnx_graph *b)
{
    ck_assert_int_eq(a->n_nodes, b->n_nodes);
    ck_assert_int_eq(a->n_inputs, b->n_inputs);
    ck_assert_int_eq(a->n_outputs, b->n_outputs);
    ck_assert_int_eq(a->n_initializers, b->n_initializers);
    ck_assert_int_eq(a->n_default_inputs, b->n_default_inputs);
    for (int i = 0; i < a->n_initializers; i++)
        assert_same_tensor(&a->initializers[i], &b->initializers[i], a->initializers[i].name);
    for (int i = 0; i < a->n_inputs; i++) {
        ck_assert_str_eq(a->inputs[i].name, b->inputs[i].name);
        ck_assert_int_eq(a->inputs[i].elem_type, b->inputs[i].elem_type);
        assert_dims(a->inputs[i].rank, a->inputs[i].dims, b->inputs[i].rank, b->inputs[i].dims, a->inputs[i].name);
    }
    for (int i = 0; i < a->n_nodes; i++) {
        const struct onnx_node *x = &a->nodes[i], *y = &b->nodes[i];
        ck_assert_str_eq(x->name, y->name);
        ck_assert_str_eq(x->op_type, y->op_type);
        ck_assert_str_eq(x->domain, y->domain);
        ck_assert_int_eq(x->n_inputs, y->n_inputs);
        ck_assert_int_eq(x->n_outputs, y->n_outputs);
        ck_assert_int_eq(x->n_attrs, y->n_attrs);
        for (int k = 0; k < x->n_inputs; k++)
            ck_assert_str_eq(x->inputs[k], y->inputs[k]);
        for (int k = 0; k < x->n_attrs; k++) {
            const struct onnx_attr *p = &x->attrs[k], *q = &y->attrs[k];
            ck_assert_str_eq(p->name, q->name);
            ck_assert_int_eq(p->type, q->type);
            ck_assert_int_eq(p->n, q->n);
            if (p->type == ONNX_ATTR_INT)
                ck_assert_int_eq(p->i, q->i);
            if (p->type == ONNX_ATTR_FLOAT)
                ck_assert_float_eq(p->f, q->f);
            if (p->type == ONNX_ATTR_STRING)
                ck_assert_str_eq(p->s, q->s);
            if (p->type == ONNX_ATTR_INTS)
                for (int j = 0; j < p->n; j++)
                    ck_assert_int_eq(p->ints[j], q->ints[j]);
            if (p->type == ONNX_ATTR_STRINGS)
                for (int j = 0; j < p->n; j++)
                    ck_assert_str_eq(p->strings[j], q->strings[j]);
            if (p->type == ONNX_ATTR_TENSOR)
                assert_same_tensor(p->t, q->t, p->name);
            if (p->type == ONNX_ATTR_GRAPH)
                assert_same_graph(p->g, q->g);
            if (p->type == ONNX_ATTR_GRAPHS)
                for (int j = 0; j < p->n; j++)
                    assert_same_graph(p->graphs[j], q->graphs[j]);
        }
    }
}

static void roundtrip(const char *src, const char *dst)
{
    struct onnx_model *a = load_ok(src);
    char err[1024];
    ck_assert_msg(onnx_model_save(a, dst, err, sizeof err) == 0, "saving %s: %s", dst, err);
    struct onnx_model *b = load_ok(dst);
    ck_assert_int_eq(a->ir_version, b->ir_version);
    ck_assert_int_eq(a->n_opsets, b->n_opsets);
    for (int i = 0; i < a->n_opsets; i++)
        ck_assert_int_eq(onnx_model_opset(b, a->opsets[i].domain), a->opsets[i].version);
    assert_same_graph(a->graph, b->graph);
    onnx_model_free(a);
    onnx_model_free(b);
}

START_TEST(test_model_save_roundtrip)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    roundtrip(node_model("test_conv_with_strides_padding"), gen_path("saved_conv.onnx"));
    roundtrip(node_model("test_loop11"), gen_path("saved_loop.onnx"));
    roundtrip(node_model("test_if"), gen_path("saved_if.onnx"));
    roundtrip(gen_path("ir3.onnx"), gen_path("saved_ir3.onnx"));
    roundtrip(gen_path("ext_ok/model.onnx"), gen_path("saved_ext.onnx"));
    roundtrip(gen_path("attributes.onnx"), gen_path("saved_attributes.onnx"));
    roundtrip(gen_path("out_of_order.onnx"), gen_path("saved_ooo.onnx"));
    roundtrip(gen_path("symbolic.onnx"), gen_path("saved_symbolic.onnx"));
}
END_TEST

START_TEST(test_saved_models_run_in_onnxruntime)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    if (!have_ort) {
        fprintf(stderr, "test_onnx: onnxruntime not installed, skipping the onnxruntime check\n");
        return;
    }
    char err[1024];
    struct onnx_model *m = load_ok(node_model("test_conv_with_strides_padding"));
    ck_assert_int_eq(onnx_model_save(m, gen_path("ort_conv.onnx"), err, sizeof err), 0);
    onnx_model_free(m);
    char ins[2048], outs[1024];
    snprintf(ins, sizeof ins, "%s ", node_tensor("test_conv_with_strides_padding", "input_0.pb"));
    strcat(ins, node_tensor("test_conv_with_strides_padding", "input_1.pb"));
    snprintf(outs, sizeof outs, "%s", node_tensor("test_conv_with_strides_padding", "output_0.pb"));
    ck_assert_int_eq(run_ort_check(gen_path("ort_conv.onnx"), ins, outs), 0);

    m = load_ok(node_model("test_loop11"));
    ck_assert_int_eq(onnx_model_save(m, gen_path("ort_loop.onnx"), err, sizeof err), 0);
    onnx_model_free(m);
    ins[0] = 0;
    for (int i = 0; i < 3; i++) {
        char f[32];
        snprintf(f, sizeof f, "input_%d.pb", i);
        strcat(ins, node_tensor("test_loop11", f));
        strcat(ins, " ");
    }
    snprintf(outs, sizeof outs, "%s ", node_tensor("test_loop11", "output_0.pb"));
    strcat(outs, node_tensor("test_loop11", "output_1.pb"));
    ck_assert_int_eq(run_ort_check(gen_path("ort_loop.onnx"), ins, outs), 0);

    /* IR 3 with its initializer as a graph input, weights from external data. */
    m = load_ok(gen_path("ir3.onnx"));
    ck_assert_int_eq(onnx_model_save(m, gen_path("ort_ir3.onnx"), err, sizeof err), 0);
    onnx_model_free(m);
    snprintf(ins, sizeof ins, "%s", gen_path("ir3_in.pb"));
    snprintf(outs, sizeof outs, "%s", gen_path("ir3_out.pb"));
    ck_assert_int_eq(run_ort_check(gen_path("ort_ir3.onnx"), ins, outs), 0);
}
END_TEST

/* ---- hostile input ---------------------------------------------------------------- */

START_TEST(test_hostile_manifest)
{
    ck_assert_msg(gen_ok, "generated test data missing");
    FILE *f = fopen(gen_path("manifest.tsv"), "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *kind = strtok(line, "\t"), *rel = strtok(NULL, "\t"), *key = strtok(NULL, "\t");
        ck_assert_ptr_nonnull(key);
        char err[1024] = "";
        int rc;
        const char *p = gen_path(rel);
        if (strcmp(kind, "model") == 0) {
            struct onnx_model *m = (struct onnx_model *)1;
            rc = onnx_model_load(p, &m, err, sizeof err);
            ck_assert_msg(rc != 0 || (onnx_model_free(m), 0), "%s loaded but should fail (%s)", rel, key);
            ck_assert_ptr_null(m);
        } else {
            struct onnx_tensor t;
            rc = onnx_tensor_load(p, &t, err, sizeof err);
            ck_assert_msg(rc != 0 || (onnx_tensor_clear(&t), 0), "%s loaded but should fail (%s)", rel, key);
            ck_assert_ptr_null(t.data);
        }
        ck_assert_msg(strstr(err, key) != NULL, "%s: message lacks '%s': %s", rel, key, err);
        ck_assert_msg(strstr(err, rel) != NULL, "%s: message does not name the file: %s", rel, err);
        count++;
    }
    fclose(f);
    ck_assert_int_ge(count, 50);
}
END_TEST

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Loads a mutated buffer: it may load (a mutation can leave a valid model)
 * or fail with a message, but it must never crash or leak (ASan checks). */
static int load_mutant(const unsigned char *b, size_t n)
{
    struct onnx_model *m = NULL;
    char err[512] = "";
    /* A heap copy of exactly n bytes, so that ASan catches any over-read. */
    unsigned char *copy = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, b, n);
    int rc = onnx_model_load_buffer(copy, n, NULL, &m, err, sizeof err);
    free(copy);
    if (rc == 0) {
        ck_assert_ptr_nonnull(m);
        onnx_model_free(m);
        return 0;
    }
    ck_assert_ptr_null(m);
    ck_assert_msg(err[0] != 0, "failure without a message");
    return 1;
}

static const char *const fuzz_models[] = {"test_if", "test_loop11", "test_lstm_defaults",
                                          "test_conv_with_strides_padding", "test_resize_upsample_scales_linear",
                                          "test_constant"};

START_TEST(test_truncations)
{
    for (size_t k = 0; k < sizeof fuzz_models / sizeof fuzz_models[0]; k++) {
        size_t n;
        unsigned char *b = slurp(node_model(fuzz_models[k]), &n);
        int failed = 0, tried = 0;
        size_t step = n > 1500 ? n / 1500 : 1;
        for (size_t cut = 0; cut < n; cut += step, tried++)
            failed += load_mutant(b, cut);
        /* A cut at a field boundary can leave a well-formed prefix, but the
         * prefix then lacks the graph, its outputs or the opset imports. */
        ck_assert_msg(failed == tried, "%s: %d of %d truncations loaded", fuzz_models[k], tried - failed, tried);
        ck_assert_int_eq(load_mutant(b, n), 0);
        free(b);
    }
}
END_TEST

START_TEST(test_byte_flips)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t k = 0; k < sizeof fuzz_models / sizeof fuzz_models[0]; k++) {
        size_t n;
        unsigned char *b = slurp(node_model(fuzz_models[k]), &n);
        unsigned char *c = malloc(n);
        int failed = 0;
        for (int trial = 0; trial < 1500; trial++) {
            memcpy(c, b, n);
            int flips = 1 + trial % 4;
            for (int f = 0; f < flips; f++) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                size_t at = (size_t)(s % n);
                /* Mix of random bytes and the values that break parsers most. */
                static const unsigned char hostile[] = {0x00, 0xff, 0x80, 0x7f, 0x0a, 0x12, 0x3a};
                c[at] = (trial & 1) ? (unsigned char)(s >> 32) : hostile[(s >> 40) % sizeof hostile];
            }
            failed += load_mutant(c, n);
        }
        ck_assert_int_gt(failed, 0);
        free(c);
        free(b);
    }
}
END_TEST

/* ---- hand-built deep nesting -------------------------------------------------------- */

/* Protobuf bytes built back to front, so nesting costs linear time. */
struct rbuf {
    unsigned char *mem;
    size_t cap, start;
};

static void rb_put(struct rbuf *r, const void *p, size_t n)
{
    ck_assert_uint_ge(r->start, n);
    r->start -= n;
    memcpy(r->mem + r->start, p, n);
}

static void rb_varint(struct rbuf *r, uint64_t v)
{
    unsigned char tmp[10];
    int n = 0;
    do {
        tmp[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    rb_put(r, tmp, (size_t)n);
}

/* Wraps everything written since `end` as field `field` (length-delimited). */
static void rb_wrap(struct rbuf *r, size_t end, unsigned field)
{
    rb_varint(r, end - r->start);
    rb_varint(r, (uint64_t)field << 3 | 2);
}

static void rb_string(struct rbuf *r, unsigned field, const char *s)
{
    rb_put(r, s, strlen(s));
    rb_varint(r, strlen(s));
    rb_varint(r, (uint64_t)field << 3 | 2);
}

static void rb_int(struct rbuf *r, unsigned field, uint64_t v)
{
    rb_varint(r, v);
    rb_varint(r, (uint64_t)field << 3);
}

/* A model whose graph holds an If whose then_branch holds an If ... `levels` deep. */
static unsigned char *nested_model(int levels, size_t *len, struct rbuf *r)
{
    r->cap = (size_t)levels * 64 + 256;
    r->mem = malloc(r->cap);
    ck_assert_ptr_nonnull(r->mem);
    r->start = r->cap;
    size_t end = r->cap;
    /* innermost graph: no nodes, output "o" produced by nothing would fail, so
     * it has a Constant-free body with no outputs at all */
    rb_string(r, 2, "inner");
    for (int i = 0; i < levels; i++) {
        /* wrap current graph as AttributeProto.g (6), add name and type GRAPH */
        rb_wrap(r, end, 6);
        rb_int(r, 20, 5);
        rb_string(r, 1, "then_branch");
        rb_wrap(r, end, 5);                  /* NodeProto.attribute */
        rb_string(r, 4, "If");               /* op_type */
        rb_string(r, 2, "o");                /* output */
        rb_wrap(r, end, 1);                  /* GraphProto.node */
        /* graph output "o" (ValueInfoProto name) */
        size_t vi_end = r->start;
        rb_string(r, 1, "o");
        rb_wrap(r, vi_end, 12);
        rb_string(r, 2, "g");
    }
    rb_wrap(r, end, 7);                      /* ModelProto.graph */
    size_t op_end = r->start;
    rb_int(r, 2, 13);
    rb_string(r, 1, "");
    rb_wrap(r, op_end, 8);                   /* opset_import */
    rb_int(r, 1, 8);                         /* ir_version */
    *len = r->cap - r->start;
    return r->mem + r->start;
}

START_TEST(test_deep_nesting)
{
    struct rbuf r;
    size_t n;
    unsigned char *b = nested_model(40, &n, &r);
    struct onnx_model *m;
    char err[1024];
    ck_assert_msg(onnx_model_load_buffer(b, n, NULL, &m, err, sizeof err) == 0, "40 levels: %s", err);
    int depth = 0;
    for (const struct onnx_graph *g = m->graph; g->n_nodes; g = g->nodes[0].attrs[0].g)
        depth++;
    ck_assert_int_eq(depth, 40);
    onnx_model_free(m);
    free(r.mem);

    b = nested_model(70, &n, &r);
    ck_assert_int_eq(onnx_model_load_buffer(b, n, NULL, &m, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "nested deeper than 64"), "70 levels: %s", err);
    free(r.mem);

    /* Far beyond any limit: refused by the wire-format pre-check before
     * protobuf-c's recursive unpacker could exhaust the stack. */
    b = nested_model(200000, &n, &r);
    ck_assert_int_eq(onnx_model_load_buffer(b, n, NULL, &m, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "nested deeper"), "200000 levels: %s", err);
    free(r.mem);
}
END_TEST

static Suite *onnx_suite(void)
{
    Suite *s = suite_create("onnx");
    TCase *tc = tcase_create("helpers");
    tcase_add_test(tc, test_dtype_helpers);
    tcase_add_test(tc, test_attr_helpers);
    suite_add_tcase(s, tc);

    tc = tcase_create("node_models");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_conv_model);
    tcase_add_test(tc, test_lstm_model);
    tcase_add_test(tc, test_if_model);
    tcase_add_test(tc, test_loop_model);
    tcase_add_test(tc, test_resize_model);
    tcase_add_test(tc, test_all_node_models);
    suite_add_tcase(s, tc);

    tc = tcase_create("tensors");
    tcase_add_test(tc, test_node_tensors_vs_npy);
    tcase_add_test(tc, test_raw_typed_npy_identical);
    tcase_add_test(tc, test_npy_versions);
    tcase_add_test(tc, test_tensor_save_roundtrip);
    suite_add_tcase(s, tc);

    tc = tcase_create("features");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_external_data);
    tcase_add_test(tc, test_ir3_initializer_inputs);
    tcase_add_test(tc, test_ir14_opset28);
    tcase_add_test(tc, test_half_conversions);
    tcase_add_test(tc, test_symbolic_dims_and_opsets);
    tcase_add_test(tc, test_out_of_order_sorted);
    tcase_add_test(tc, test_every_attribute_kind);
    tcase_add_test(tc, test_big_weights);
    suite_add_tcase(s, tc);

    tc = tcase_create("save");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_model_save_roundtrip);
    tcase_add_test(tc, test_saved_models_run_in_onnxruntime);
    suite_add_tcase(s, tc);

    tc = tcase_create("hostile");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_hostile_manifest);
    tcase_add_test(tc, test_truncations);
    tcase_add_test(tc, test_byte_flips);
    tcase_add_test(tc, test_deep_nesting);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    char cwd[512];
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, ".");
    snprintf(gen_dir, sizeof gen_dir, "%s/test_onnx_data", cwd);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 %s/tests/onnx/gen_onnx_cases.py '%s' '%s/onnx-node' >/dev/null",
             DTRX_SOURCE_DIR, gen_dir, testutil_data_dir());
    int rc = system(cmd);
    gen_ok = rc == 0;
    if (!gen_ok)
        fprintf(stderr, "test_onnx: generating test data failed (%s); python3 with numpy and onnx needed\n", cmd);
    rc = system("python3 -c 'import onnxruntime' >/dev/null 2>&1");
    have_ort = rc == 0;

    SRunner *sr = srunner_create(onnx_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
