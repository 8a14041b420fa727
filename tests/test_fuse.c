/* tests/test_fuse.c — the inference graph optimization (runtime/fuse.c,
 * ops/fused_conv.c): small Conv / BatchNormalization / Relu / Add graphs,
 * built here as onnx/ IR and saved, run by a session with
 * optimize_inference and by one without. The fused session's outputs must
 * match within 1e-4 relative, its runs must take fewer calls, and the
 * chains between convolutions must use the blocked layouts; training and
 * budgeted sessions must never be fused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx.h"
#include "runtime/dtrexec.h"
#include "runtime/fuse.h"
#include "runtime/session.h"

/* ---- a tiny model builder over the onnx/ IR ------------------------------------ */

#define TB_MAX 128

struct tb {
    struct onnx_node nodes[TB_MAX];
    struct onnx_tensor inits[TB_MAX];
    struct onnx_value_info inputs[4], outputs[4];
    int n_nodes, n_inits, n_inputs, n_outputs;
    uint32_t rng;
    char names[TB_MAX * 4][64];
    int n_names;
};

static char *tb_name(struct tb *b, const char *fmt, const char *a, const char *c)
{
    char *s = b->names[b->n_names++];
    snprintf(s, 64, fmt, a, c);
    return s;
}

static float tb_rand(struct tb *b)
{
    b->rng = b->rng * 1664525u + 1013904223u;
    return (float)(b->rng >> 8) / (float)(1u << 24);   /* [0, 1) */
}

/* An initializer of random values in [lo, hi). */
static const char *tb_init(struct tb *b, const char *name, int rank, const int64_t *dims, float lo, float hi)
{
    struct onnx_tensor *t = &b->inits[b->n_inits++];
    t->name = (char *)name;
    t->dtype = ONNX_DTYPE_FLOAT;
    t->rank = rank;
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= t->dims[i] = dims[i];
    float *d = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        d[i] = lo + (hi - lo) * tb_rand(b);
    t->data = d;
    t->size_bytes = sizeof(float) * (size_t)n;
    return name;
}

static struct onnx_node *tb_node(struct tb *b, const char *op, const char *name, int n_in, const char **in)
{
    struct onnx_node *n = &b->nodes[b->n_nodes++];
    n->name = (char *)name;
    n->op_type = (char *)op;
    n->domain = "";
    n->n_inputs = n_in;
    n->inputs = calloc((size_t)n_in, sizeof(char *));
    for (int i = 0; i < n_in; i++)
        n->inputs[i] = (char *)in[i];
    n->n_outputs = 1;
    n->outputs = calloc(1, sizeof(char *));
    n->outputs[0] = tb_name(b, "%s.out%s", name, "");
    n->attrs = calloc(8, sizeof *n->attrs);
    return n;
}

static void tb_attr_ints(struct onnx_node *n, const char *name, int count, int64_t v)
{
    struct onnx_attr *a = &n->attrs[n->n_attrs++];
    a->name = (char *)name;
    a->type = ONNX_ATTR_INTS;
    a->n = count;
    a->ints = malloc(sizeof(int64_t) * (size_t)count);
    for (int i = 0; i < count; i++)
        a->ints[i] = v;
}

static void tb_attr_int(struct onnx_node *n, const char *name, int64_t v)
{
    n->attrs[n->n_attrs++] = (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INT, .i = v };
}

static void tb_attr_float(struct onnx_node *n, const char *name, float v)
{
    n->attrs[n->n_attrs++] = (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_FLOAT, .f = v };
}

/* Conv of `nsp` spatial axes, kernel k, stride s, "same"-style padding. */
static const char *tb_conv(struct tb *b, const char *x, const char *name, int nsp, int64_t cin, int64_t cout,
                           int64_t k, int64_t s, int64_t group, int bias)
{
    int64_t wd[5] = { cout, cin / group, k, k, k };
    const char *in[3] = { x, tb_init(b, tb_name(b, "%s.w%s", name, ""), nsp + 2, wd, -0.5f, 0.5f), NULL };
    if (bias)
        in[2] = tb_init(b, tb_name(b, "%s.b%s", name, ""), 1, &cout, -0.5f, 0.5f);
    struct onnx_node *n = tb_node(b, "Conv", name, bias ? 3 : 2, in);
    tb_attr_ints(n, "kernel_shape", nsp, k);
    tb_attr_ints(n, "strides", nsp, s);
    tb_attr_ints(n, "pads", 2 * nsp, k / 2);
    if (group > 1)
        tb_attr_int(n, "group", group);
    return n->outputs[0];
}

static const char *tb_bn(struct tb *b, const char *x, const char *name, int64_t c)
{
    const char *in[5] = {
        x,
        tb_init(b, tb_name(b, "%s.scale%s", name, ""), 1, &c, 0.5f, 1.5f),
        tb_init(b, tb_name(b, "%s.bias%s", name, ""), 1, &c, -0.5f, 0.5f),
        tb_init(b, tb_name(b, "%s.mean%s", name, ""), 1, &c, -0.5f, 0.5f),
        tb_init(b, tb_name(b, "%s.var%s", name, ""), 1, &c, 0.25f, 2.0f),
    };
    struct onnx_node *n = tb_node(b, "BatchNormalization", name, 5, in);
    tb_attr_float(n, "epsilon", 1e-3f);
    return n->outputs[0];
}

static const char *tb_op(struct tb *b, const char *op, const char *name, const char *x, const char *y)
{
    const char *in[2] = { x, y };
    return tb_node(b, op, name, y ? 2 : 1, in)->outputs[0];
}

static void tb_input(struct tb *b, const char *name, int rank, const int64_t *dims, const char *dim0)
{
    struct onnx_value_info *v = &b->inputs[b->n_inputs++];
    v->name = (char *)name;
    v->elem_type = ONNX_DTYPE_FLOAT;
    v->rank = rank;
    for (int i = 0; i < rank; i++)
        v->dims[i] = dims[i];
    if (dim0) {
        v->dims[0] = -1;
        v->dim_params[0] = (char *)dim0;
    }
}

static void tb_output(struct tb *b, const char *name)
{
    struct onnx_value_info *v = &b->outputs[b->n_outputs++];
    v->name = (char *)name;
    v->elem_type = ONNX_DTYPE_FLOAT;
    v->rank = -1;
}

static int tb_opset = 13;

static void tb_save(struct tb *b, const char *path)
{
    struct onnx_graph g = {
        .name = "fuse_test", .n_nodes = b->n_nodes, .nodes = b->nodes, .n_initializers = b->n_inits,
        .initializers = b->inits, .n_inputs = b->n_inputs, .inputs = b->inputs, .n_outputs = b->n_outputs,
        .outputs = b->outputs,
    };
    struct onnx_opset opset = { .domain = "", .version = tb_opset };
    struct onnx_model m = { .ir_version = 7, .producer_name = "test_fuse", .n_opsets = 1, .opsets = &opset,
                            .graph = &g };
    char err[512] = "";
    ck_assert_msg(onnx_model_save(&m, path, err, sizeof err) == 0, "saving %s: %s", path, err);
}

/* Frees what the builder allocated; the struct can then build again. */
static void tb_free(struct tb *b)
{
    for (int i = 0; i < b->n_inits; i++)
        free(b->inits[i].data);
    for (int i = 0; i < b->n_nodes; i++) {
        struct onnx_node *n = &b->nodes[i];
        for (int k = 0; k < n->n_attrs; k++) {
            free(n->attrs[k].ints);
            if (n->attrs[k].t) {
                free(n->attrs[k].t->data);
                free(n->attrs[k].t);
            }
        }
        free(n->attrs);
        free(n->inputs);
        free(n->outputs);
    }
    memset(b, 0, sizeof *b);
}

/* ---- the models --------------------------------------------------------------- */

/* A ResNet-like stem and bottleneck, with the cases the pass must tell
 * apart: BN + Relu; a residual Add fed by a downsample branch (Conv + BN
 * alone); a depthwise conv between blocked values; channels off the
 * 16-block (24); a depthwise conv with a residual
 * and LeakyRelu; Clip (ReLU6); a BN output that is also a graph output (not fused beyond it);
 * a broadcast Add (not a residual); a conv with a bias and no BN. */
static void model_resnetish(const char *path, int nsp, int symbolic_batch)
{
    static struct tb b;
    memset(&b, 0, sizeof b);
    b.rng = 12345u + (uint32_t)nsp;
    int64_t xd[5] = { 2, 3, 16, 16, 16 };
    tb_input(&b, "x", nsp + 2, xd, symbolic_batch ? "N" : NULL);
    const char *y = tb_conv(&b, "x", "stem", nsp, 3, 32, 3, 1, 1, 0);
    y = tb_op(&b, "Relu", "stem.relu", tb_bn(&b, y, "stem.bn", 32), NULL);
    /* bottleneck 32 -> 16 -> 16 -> 64, downsample 32 -> 64 */
    const char *z = tb_conv(&b, y, "b.conv1", nsp, 32, 16, 1, 1, 1, 0);
    z = tb_op(&b, "Relu", "b.relu1", tb_bn(&b, z, "b.bn1", 16), NULL);
    z = tb_conv(&b, z, "b.conv2", nsp, 16, 16, 3, 1, 1, 0);
    z = tb_op(&b, "Relu", "b.relu2", tb_bn(&b, z, "b.bn2", 16), NULL);
    z = tb_bn(&b, tb_conv(&b, z, "b.conv3", nsp, 16, 64, 1, 1, 1, 0), "b.bn3", 64);
    const char *d = tb_bn(&b, tb_conv(&b, y, "b.down", nsp, 32, 64, 1, 1, 1, 0), "b.down.bn", 64);
    y = tb_op(&b, "Relu", "b.relu3", tb_op(&b, "Add", "b.add", z, d), NULL);
    /* identity block 64 -> 16 -> 16 -> 64 with the block input as residual */
    z = tb_op(&b, "Relu", "c.relu1", tb_bn(&b, tb_conv(&b, y, "c.conv1", nsp, 64, 16, 1, 1, 1, 0), "c.bn1", 16), NULL);
    z = tb_op(&b, "Relu", "c.relu2", tb_bn(&b, tb_conv(&b, z, "c.conv2", nsp, 16, 16, 3, 2, 1, 0), "c.bn2", 16), NULL);
    z = tb_bn(&b, tb_conv(&b, z, "c.conv3", nsp, 16, 64, 1, 1, 1, 0), "c.bn3", 64);
    const char *dd = tb_bn(&b, tb_conv(&b, y, "c.down", nsp, 64, 64, 1, 2, 1, 0), "c.down.bn", 64);
    y = tb_op(&b, "Relu", "c.relu3", tb_op(&b, "Add", "c.add", dd, z), NULL);
    /* a depthwise conv between blocked values */
    y = tb_op(&b, "Relu", "d.relu", tb_bn(&b, tb_conv(&b, y, "d.dw", nsp, 64, 64, 3, 1, 64, 0), "d.bn", 64), NULL);
    /* 24 channels, Clip (ReLU6), depthwise, LeakyRelu */
    z = tb_bn(&b, tb_conv(&b, y, "e.conv", nsp, 64, 24, 3, 1, 1, 0), "e.bn", 24);
    const char *lim[3] = { z, tb_init(&b, "e.lo", 0, NULL, 0.0f, 0.0f), tb_init(&b, "e.hi", 0, NULL, 6.0f, 6.0f) };
    z = tb_node(&b, "Clip", "e.clip", 3, lim)->outputs[0];
    const char *dw = tb_bn(&b, tb_conv(&b, z, "e.dw", nsp, 24, 24, 3, 1, 24, 0), "e.dw.bn", 24);
    z = tb_op(&b, "Add", "e.add", dw, z);       /* a residual off the 16-block: added by FusedConv's loop */
    struct onnx_node *lr = tb_node(&b, "LeakyRelu", "e.leaky", 1, &z);
    tb_attr_float(lr, "alpha", 0.1f);
    z = lr->outputs[0];
    /* a BN output that is also a graph output, then a broadcast Add */
    const char *g = tb_bn(&b, tb_conv(&b, z, "g.conv", nsp, 24, 32, 1, 1, 1, 1), "g.bn", 32);
    tb_output(&b, g);
    int64_t bd[5] = { 1, 32, 1, 1, 1 };
    const char *h = tb_op(&b, "Relu", "g.relu", g, NULL);
    h = tb_op(&b, "Add", "h.add", tb_conv(&b, h, "h.conv", nsp, 32, 32, 3, 1, 1, 1),
              tb_init(&b, "h.bcast", nsp + 2, bd, -1.0f, 1.0f));
    tb_output(&b, tb_op(&b, "Relu", "h.relu", h, NULL));
    tb_save(&b, path);
    tb_free(&b);
}

/* ---- running and comparing --------------------------------------------------- */

static char model_path[256];

static void setup_model(int nsp, int symbolic)
{
    snprintf(model_path, sizeof model_path, "/tmp/dtrx_test_fuse_%d_%d_%d.onnx", (int)getpid(), nsp, symbolic);
    model_resnetish(model_path, nsp, symbolic);
}

static struct dtrx_session *open_session(int optimize, size_t budget)
{
    struct dtrx_options o;
    dtrx_options_init(&o);
    o.threads = 1;
    o.seed = 7;
    o.optimize_inference = optimize;
    o.budget_bytes = budget;
    struct dtrx_session *s = NULL;
    ck_assert_msg(dtrx_session_create(model_path, &o, &s) == DTRX_OK, "%s", dtrx_last_error());
    return s;
}

static long long run_calls(struct dtrx_session *s)
{
    struct dtrx_stats before, after;
    dtrx_session_stats(s, &before);
    ck_assert_msg(dtrx_session_run(s) == DTRX_OK, "run: %s", dtrx_last_error());
    dtrx_session_stats(s, &after);
    return after.op_calls - before.op_calls;
}

/* Every output within 1e-4 relative to its largest magnitude: folding the
 * BatchNormalization rounds differently, and deep chains cancel (a single
 * element's relative error can be large where the value nears zero). */
static void assert_outputs_close(struct dtrx_session *a, struct dtrx_session *b, const char *what)
{
    ck_assert_int_eq(dtrx_session_output_count(a), dtrx_session_output_count(b));
    for (int i = 0; i < dtrx_session_output_count(a); i++) {
        struct dtrx_tensor ta, tb;
        ck_assert(dtrx_session_get_output(a, i, &ta) == DTRX_OK);
        ck_assert(dtrx_session_get_output(b, i, &tb) == DTRX_OK);
        ck_assert_int_eq(ta.rank, tb.rank);
        for (int d = 0; d < ta.rank; d++)
            ck_assert_int_eq(ta.dims[d], tb.dims[d]);
        const float *x = ta.data, *y = tb.data;
        float scale = 0.0f;
        for (int64_t k = 0; k < dtrx_tensor_numel(&ta); k++)
            scale = fmaxf(scale, fabsf(x[k]));
        for (int64_t k = 0; k < dtrx_tensor_numel(&ta); k++)
            ck_assert_msg(fabsf(x[k] - y[k]) <= 1e-4f * scale,
                          "%s: output %d differs at %lld: unfused %.8g, fused %.8g (largest |value| %.8g)",
                          what, i, (long long)k, x[k], y[k], scale);
    }
}

static int fused_calls(const struct dtrx_session *s, const char *attr)
{
    int n = 0;
    for (int k = 0; k < s->n_calls; k++) {
        const struct rt_call *c = &s->calls[k];
        if (!strcmp(c->def->name, "FusedConv") && (!attr || onnx_node_attr_int(c->emitted, attr, 0)))
            n++;
    }
    return n;
}

static void check_fused_matches(int nsp)
{
    setup_model(nsp, 0);
    struct dtrx_session *plain = open_session(0, 0), *fused = open_session(1, 0);
    ck_assert(dtrx_session_fill_inputs(plain) == DTRX_OK);
    ck_assert(dtrx_session_fill_inputs(fused) == DTRX_OK);
    long long n_plain = run_calls(plain);
    long long n_first = run_calls(fused);
    ck_assert_int_eq(n_first, n_plain);          /* the first run is the model's own */
    ck_assert_int_eq(fused_calls(fused, NULL), 0);
    assert_outputs_close(plain, fused, "first run");
    long long n_fused = run_calls(fused);
    ck_assert_msg(n_fused < n_plain, "fused run made %lld calls, unfused %lld", n_fused, n_plain);
    /* 14 convolutions, each its own fused call */
    ck_assert_int_eq(fused_calls(fused, NULL), 14);
    /* all but the last three convolutions and e.conv write blocked values */
    ck_assert_int_eq(fused_calls(fused, "y_blocked"), 10);
    ck_assert_msg(fused_calls(fused, "r_blocked") >= 1, "no blocked residual");
    int residuals = 0;
    for (int k = 0; k < fused->n_calls; k++)
        residuals += fused->calls[k].n_in > 7 && fused->calls[k].in[7] >= 0;
    ck_assert_int_eq(residuals, 3);   /* b.add, c.add, e.add; not the broadcast h.add */
    run_calls(plain);
    assert_outputs_close(plain, fused, "fused run");
    /* later runs read the weight cache the first fused run wrote: bit-identical */
    struct dtrx_tensor t;
    ck_assert(dtrx_session_get_output(fused, 1, &t) == DTRX_OK);
    size_t bytes = sizeof(float) * (size_t)dtrx_tensor_numel(&t);
    float *keep = malloc(bytes);
    memcpy(keep, t.data, bytes);
    ck_assert_int_eq(run_calls(fused), n_fused);
    ck_assert(dtrx_session_get_output(fused, 1, &t) == DTRX_OK);
    ck_assert_msg(!memcmp(keep, t.data, bytes), "a run from the weight cache differs from the run that filled it");
    free(keep);
    dtrx_session_destroy(plain);
    dtrx_session_destroy(fused);
    unlink(model_path);
}

START_TEST(test_fused_2d_matches_unfused)
{
    check_fused_matches(2);
}
END_TEST

START_TEST(test_fused_1d_and_3d_match_unfused)
{
    check_fused_matches(1);
    check_fused_matches(3);
}
END_TEST

/* The batch changes after the rewrite: fused calls take the new shapes. */
START_TEST(test_fused_new_batch)
{
    setup_model(2, 1);
    struct dtrx_session *plain = open_session(0, 0), *fused = open_session(1, 0);
    for (int round = 0; round < 3; round++) {
        int64_t n = round == 2 ? 3 : 1;
        struct dtrx_tensor x = { .dtype = ONNX_DTYPE_FLOAT, .rank = 4, .dims = { n, 3, 16, 16 } };
        float *d = malloc(sizeof(float) * (size_t)dtrx_tensor_numel(&x));
        for (int64_t i = 0; i < dtrx_tensor_numel(&x); i++)
            d[i] = (float)sin(0.37 * (double)i + round);
        x.data = d;
        ck_assert(dtrx_session_set_input(plain, 0, &x) == DTRX_OK);
        ck_assert(dtrx_session_set_input(fused, 0, &x) == DTRX_OK);
        free(d);
        run_calls(plain);
        run_calls(fused);
        assert_outputs_close(plain, fused, round == 2 ? "batch 3" : "batch 1");
    }
    ck_assert_int_gt(fused_calls(fused, NULL), 0);
    dtrx_session_destroy(plain);
    dtrx_session_destroy(fused);
    unlink(model_path);
}
END_TEST

/* Training sessions are never fused (and bit-identical to unoptimized
 * ones); a fused session refuses to train; budgets keep the model's calls. */
START_TEST(test_training_and_budget_never_fused)
{
    setup_model(2, 0);
    struct dtrx_session *a = open_session(1, 0), *b = open_session(0, 0);
    struct dtrx_train_options to;
    dtrx_train_options_init(&to);
    to.lr = 0.01f;
    ck_assert(dtrx_session_fill_inputs(a) == DTRX_OK && dtrx_session_fill_inputs(b) == DTRX_OK);
    ck_assert(dtrx_session_train_begin(a, &to) == DTRX_OK && dtrx_session_train_begin(b, &to) == DTRX_OK);
    for (int step = 0; step < 3; step++) {
        double la, lb;
        ck_assert_msg(dtrx_session_train_step(a, &la) == DTRX_OK, "%s", dtrx_last_error());
        ck_assert_msg(dtrx_session_train_step(b, &lb) == DTRX_OK, "%s", dtrx_last_error());
        ck_assert_msg(la == lb, "step %d: loss %.17g with optimize_inference, %.17g without", step, la, lb);
        ck_assert_int_eq(fused_calls(a, NULL), 0);
    }
    run_calls(a);
    run_calls(a);
    ck_assert_int_eq(fused_calls(a, NULL), 0);
    dtrx_session_destroy(a);
    dtrx_session_destroy(b);

    struct dtrx_session *f = open_session(1, 0);
    ck_assert(dtrx_session_fill_inputs(f) == DTRX_OK);
    run_calls(f);
    run_calls(f);
    ck_assert_int_gt(fused_calls(f, NULL), 0);
    ck_assert_int_eq(dtrx_session_train_begin(f, &to), DTRX_ERR_INPUT);
    ck_assert_msg(strstr(dtrx_last_error(), "optimize"), "message: %s", dtrx_last_error());
    dtrx_session_destroy(f);

    struct dtrx_session *g = open_session(1, 64u << 20);
    ck_assert(dtrx_session_fill_inputs(g) == DTRX_OK);
    long long n1 = run_calls(g), n2 = run_calls(g);
    ck_assert_int_eq(n1, n2);
    ck_assert_int_eq(fused_calls(g, NULL), 0);
    dtrx_session_destroy(g);
    unlink(model_path);
}
END_TEST


/* ---- training: the exporter's decomposed GELU ----------------------------------- */

/* A Constant node holding the float scalar v. */
static const char *tb_const(struct tb *b, const char *name, float v)
{
    struct onnx_node *n = tb_node(b, "Constant", name, 0, NULL);
    struct onnx_tensor *t = calloc(1, sizeof *t);
    float *d = malloc(sizeof *d);
    *d = v;
    t->dtype = ONNX_DTYPE_FLOAT;
    t->data = d;
    t->size_bytes = sizeof *d;
    n->attrs[n->n_attrs++] = (struct onnx_attr){ .name = "value", .type = ONNX_ATTR_TENSOR, .t = t };
    return n->outputs[0];
}

/* x[4,6] -> MatMul -> GELU -> MatMul -> y[4,3]. form 0: the TorchScript
 * exporter's Div/Erf/Add/Mul/Mul (opset 17); form 1: the Gelu op (opset
 * 20); form 2: the decomposed chain with x/sqrt 2 also read by a second
 * Mul (kept unfused: the intermediate is needed); form 3: the Gelu op
 * followed by a training-mode Dropout of Constant ratio 0 (an Identity). */
static void model_gelu(const char *path, int form)
{
    struct tb b = { .rng = 11 };
    int64_t xd[2] = { 4, 6 }, w1[2] = { 6, 8 }, w2[2] = { 8, 3 };
    tb_input(&b, "x", 2, xd, NULL);
    const char *h = tb_op(&b, "MatMul", "fc1", "x", tb_init(&b, "w1", 2, w1, -1.5f, 1.5f));
    const char *g;
    if (form == 1 || form == 3) {
        g = tb_op(&b, "Gelu", "gelu", h, NULL);
        if (form == 3) {
            const char *in[3] = { g, tb_const(&b, "c_ratio", 0.0f), NULL };
            struct onnx_node *tm = tb_node(&b, "Constant", "c_train", 0, NULL);
            struct onnx_tensor *t = calloc(1, sizeof *t);
            uint8_t *d = malloc(1);
            *d = 1;
            t->dtype = ONNX_DTYPE_BOOL;
            t->data = d;
            t->size_bytes = 1;
            tm->attrs[tm->n_attrs++] = (struct onnx_attr){ .name = "value", .type = ONNX_ATTR_TENSOR, .t = t };
            in[2] = tm->outputs[0];
            g = tb_node(&b, "Dropout", "drop", 3, in)->outputs[0];
        }
    } else {
        const char *d = tb_op(&b, "Div", "div", h, tb_const(&b, "c_sqrt2", 1.41421353816986083984375f));
        const char *e = tb_op(&b, "Erf", "erf", d, NULL);
        const char *a = tb_op(&b, "Add", "add", e, tb_const(&b, "c_one", 1.0f));
        const char *m = tb_op(&b, "Mul", "mul", h, a);
        g = tb_op(&b, "Mul", "half", m, tb_const(&b, "c_half", 0.5f));
        if (form == 2)
            g = tb_op(&b, "Add", "extra", g, tb_op(&b, "Mul", "sq", d, d));
    }
    const char *y = tb_op(&b, "MatMul", "fc2", g, tb_init(&b, "w2", 2, w2, -1.0f, 1.0f));
    tb_output(&b, y);
    tb_opset = form == 1 || form == 3 ? 20 : 17;
    tb_save(&b, path);
    tb_opset = 13;
    tb_free(&b);
}

static struct dtrx_session *gelu_session(const char *path, size_t budget)
{
    struct dtrx_options o;
    dtrx_options_init(&o);
    o.threads = 1;
    o.seed = 7;
    o.budget_bytes = budget;
    struct dtrx_session *s = NULL;
    ck_assert_msg(dtrx_session_create(path, &o, &s) == DTRX_OK, "%s", dtrx_last_error());
    ck_assert(dtrx_session_fill_inputs(s) == DTRX_OK);
    struct dtrx_train_options to;
    dtrx_train_options_init(&to);
    to.lr = 0.05f;
    ck_assert_msg(dtrx_session_train_begin(s, &to) == DTRX_OK, "%s", dtrx_last_error());
    return s;
}

/* Training rewrites the decomposed chain into one Gelu call: the losses of
 * three steps (so the gradients and updates too) are those of the model
 * written with the Gelu op, bit for bit; the decomposed chain itself trains
 * to the same losses within float rounding; a chain whose intermediate is
 * read elsewhere stays as it is. */
START_TEST(test_training_fuses_decomposed_gelu)
{
    char paths[4][256];
    struct dtrx_session *s[5];
    for (int f = 0; f < 4; f++) {
        snprintf(paths[f], sizeof paths[f], "/tmp/dtrx_test_fuse_gelu_%d_%d.onnx", (int)getpid(), f);
        model_gelu(paths[f], f);
        s[f] = gelu_session(paths[f], 0);
    }
    s[4] = s[3];
    s[3] = gelu_session(paths[0], 4096);   /* budgeted: DTR over the fused call */
    for (int step = 0; step < 3; step++) {
        double l[5];
        for (int f = 0; f < 5; f++)
            ck_assert_msg(dtrx_session_train_step(s[f], &l[f]) == DTRX_OK, "form %d: %s", f, dtrx_last_error());
        ck_assert_msg(l[0] == l[1], "step %d: fused loss %.17g, Gelu model %.17g", step, l[0], l[1]);
        ck_assert_msg(l[3] == l[1], "step %d: budgeted fused loss %.17g, Gelu model %.17g", step, l[3], l[1]);
        ck_assert_msg(isfinite(l[2]) && l[2] != l[0], "step %d: the unfused variant computes another function", step);
        ck_assert_msg(l[4] == l[1], "step %d: Gelu + Dropout(0) loss %.17g, Gelu alone %.17g", step, l[4], l[1]);
    }
    ck_assert_int_eq(rt_fuse_train_count(s[0], "Gelu"), 1);
    ck_assert_int_eq(rt_fuse_train_count(s[1], "Gelu"), 0);
    ck_assert_int_eq(rt_fuse_train_count(s[2], "Gelu"), 0);
    ck_assert_int_eq(rt_fuse_train_count(s[4], "Identity"), 1);
    ck_assert_int_eq(rt_fuse_train_count(s[0], "Identity"), 0);
    for (int f = 0; f < 5; f++)
        dtrx_session_destroy(s[f]);
    for (int f = 0; f < 4; f++)
        unlink(paths[f]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fuse");
    TCase *tc = tcase_create("inference");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_fused_2d_matches_unfused);
    tcase_add_test(tc, test_fused_1d_and_3d_match_unfused);
    tcase_add_test(tc, test_fused_new_batch);
    tcase_add_test(tc, test_training_and_budget_never_fused);
    tcase_add_test(tc, test_training_fuses_decomposed_gelu);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
