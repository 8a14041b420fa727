/* tests/test_ops_nn.c — the nn family (Conv, ConvTranspose, Gemm, MatMul,
 * BatchNormalization, LayerNormalization, MaxPool, AveragePool,
 * GlobalAveragePool): every ONNX node test of these ops run directly through
 * the registry (parse, infer, kernel; twice, to check determinism), and the
 * compute paths (im2col+sgemm, oneDNN plain, oneDNN blocked, col2im) against
 * straightforward reference loops on geometries the node tests do not cover.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/ops.h"
#include "testops.h"
#include "testutil.h"

/* ---- scratch that counts, and a bare op_call --------------------------- */

static char err_buf[512];

static struct op_env test_env = {
    .scratch_alloc = testops_scratch_alloc, .scratch_free = testops_scratch_free,
    .backend = &backend_cpu, .threads = 1, .err = err_buf, .err_size = sizeof err_buf,
};

static struct op_call bare_call(void)
{
    return (struct op_call){ .node_name = "test", .env = &test_env };
}

static uint64_t rng_state = 88172645463325252ull;

static float rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static float *rnd_array(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

static void assert_close(const float *got, const double *want, int64_t n, double tol, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= tol * (1.0 + fabs(want[i])),
                      "%s: expected %.6f, got %.6f at index %lld", what, want[i], got[i], (long long)i);
}

/* ---- ONNX node tests, run through the registry ------------------------------ */

static const char *const nn_ops[] = {
    "Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "LayerNormalization",
    "MaxPool", "AveragePool", "GlobalAveragePool", NULL,
};

static int is_nn_op(const char *op)
{
    for (int i = 0; nn_ops[i]; i++)
        if (!strcmp(nn_ops[i], op))
            return 1;
    return 0;
}

static int tensor_close(const struct tensor *got, const struct onnx_tensor *want, char *msg, size_t size)
{
    if (got->dtype != want->dtype || got->rank != want->rank) {
        snprintf(msg, size, "dtype/rank %d/%d, expected %d/%d", got->dtype, got->rank, want->dtype, want->rank);
        return 0;
    }
    for (int i = 0; i < got->rank; i++)
        if (got->dims[i] != want->dims[i]) {
            snprintf(msg, size, "dim %d is %lld, expected %lld", i, (long long)got->dims[i],
                     (long long)want->dims[i]);
            return 0;
        }
    struct tensor w = { .dtype = want->dtype, .rank = want->rank, .data = want->data };
    memcpy(w.dims, want->dims, sizeof w.dims);
    for (int64_t i = 0; i < tensor_numel(got); i++) {
        double a = tensor_get_double(got, i), b = tensor_get_double(&w, i);
        if (!(fabs(a - b) <= 1e-7 + 1e-3 * fabs(b))) {
            snprintf(msg, size, "expected %.7g, got %.7g at index %lld", b, a, (long long)i);
            return 0;
        }
    }
    return 1;
}

/* Runs one single-node test folder; returns 1 if it ran and passed, 0 if it
 * is not ours, and fails the test with the reason otherwise. */
static int run_node_folder(const char *dir)
{
    char path[1500], err[512];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    struct onnx_model *m = NULL;
    if (onnx_model_load(path, &m, err, sizeof err))
        return 0;
    const struct onnx_graph *gr = m->graph;
    if (gr->n_nodes != 1 || !is_nn_op(gr->nodes[0].op_type) || gr->n_initializers) {
        onnx_model_free(m);
        return 0;
    }
    const struct onnx_node *node = &gr->nodes[0];
    int version = 0;
    const struct op_def *def = op_registry_find("", node->op_type, onnx_model_opset(m, ""), &version);
    ck_assert_msg(def != NULL, "%s: %s not registered", dir, node->op_type);
    void *params = NULL;
    ck_assert_msg(!def->parse || !def->parse(node, version, &params, err, sizeof err), "%s: parse: %s", dir, err);

    struct onnx_tensor in_t[8] = { 0 }, out_t[8] = { 0 };
    struct tensor ins[8] = { 0 }, outs[8] = { 0 }, again[8] = { 0 };
    const struct tensor *in_p[8] = { 0 };
    struct tensor *out_p[8] = { 0 }, *again_p[8] = { 0 };
    int n_in = node->n_inputs, n_out = node->n_outputs;
    for (int i = 0, k = 0; i < n_in; i++) {
        if (!node->inputs[i][0])
            continue;
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k++);
        ck_assert_msg(!onnx_tensor_load(path, &in_t[i], err, sizeof err), "%s: %s", dir, err);
        ins[i] = (struct tensor){ .dtype = in_t[i].dtype, .rank = in_t[i].rank, .data = in_t[i].data };
        memcpy(ins[i].dims, in_t[i].dims, sizeof ins[i].dims);
        in_p[i] = &ins[i];
    }
    for (int i = 0, k = 0; i < n_out; i++) {
        if (!node->outputs[i][0])
            continue;
        snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, k++);
        ck_assert_msg(!onnx_tensor_load(path, &out_t[i], err, sizeof err), "%s: %s", dir, err);
        out_p[i] = &outs[i];
        again_p[i] = &again[i];
    }
    struct op_env env = test_env;
    env.err = err;
    env.err_size = sizeof err;
    struct op_call call = { .def = def, .version = version, .params = params, .node_name = node->name,
                            .n_in = n_in, .in = in_p, .n_out = n_out, .out = out_p, .env = &env };
    ck_assert_msg(!def->infer(&call), "%s: infer: %s", dir, err);
    for (int i = 0; i < n_out; i++)
        if (out_p[i]) {
            size_t bytes = tensor_size_bytes(out_p[i]);
            out_p[i]->data = malloc(bytes ? bytes : 1);
            memset(out_p[i]->data, 0x7f, bytes);  /* poison: unwritten output shows */
            again[i] = outs[i];
            again[i].data = malloc(bytes ? bytes : 1);
        }
    testops_scratch_live = 0;
    ck_assert_msg(!def->kernel[BACKEND_CPU](&call), "%s: kernel: %s", dir, err);
    struct op_call call2 = call;
    call2.out = again_p;
    ck_assert_msg(!def->kernel[BACKEND_CPU](&call2), "%s: kernel (2nd run): %s", dir, err);
    ck_assert_msg(testops_scratch_live == 0, "%s: %d scratch blocks left allocated", dir, testops_scratch_live);
    struct op_cost cost = def->cost(&call);
    ck_assert_msg(cost.bytes > 0 && cost.flops > 0, "%s: cost %g flops %g bytes", dir, cost.flops, cost.bytes);
    for (int i = 0; i < n_out; i++) {
        if (!out_p[i])
            continue;
        char msg[256];
        ck_assert_msg(tensor_close(out_p[i], &out_t[i], msg, sizeof msg), "%s: output %d: %s", dir, i, msg);
        ck_assert_msg(!memcmp(outs[i].data, again[i].data, tensor_size_bytes(&outs[i])),
                      "%s: output %d differs between two runs", dir, i);
        free(outs[i].data);
        free(again[i].data);
    }
    for (int i = 0; i < 8; i++) {
        onnx_tensor_clear(&in_t[i]);
        onnx_tensor_clear(&out_t[i]);
    }
    if (params)
        (def->params_free ? def->params_free : free)(params);
    onnx_model_free(m);
    return 1;
}

START_TEST(test_node_folders)
{
    char root[1024];
    snprintf(root, sizeof root, "%s/onnx-node", testutil_data_dir());
    DIR *d = opendir(root);
    ck_assert_msg(d != NULL, "cannot open %s", root);
    struct dirent *e;
    int ran = 0;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "test_", 5))
            continue;
        char dir[1300];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        ran += run_node_folder(dir);
    }
    closedir(d);
    /* 6 Conv + 11 ConvTranspose + 11 Gemm + 7 MatMul + 4 BatchNorm + 19 LayerNorm
     * + 20 MaxPool + 19 AveragePool + 2 GlobalAveragePool single-node tests */
    ck_assert_msg(ran == 99, "ran %d single-node nn tests, expected 99", ran);
}
END_TEST

/* ---- convolution paths against a reference loop ------------------------------ */

static void conv_reference(const struct nn_geom *g, const float *x, const float *w, const float *b, double *y)
{
    int64_t cg = g->c / g->group, mg = g->m / g->group;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < g->m; m++)
            for (int64_t od = 0; od < g->out[0]; od++)
                for (int64_t oh = 0; oh < g->out[1]; oh++)
                    for (int64_t ow = 0; ow < g->out[2]; ow++) {
                        double s = b ? b[m] : 0.0;
                        int64_t gi = m / mg;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t kd = 0; kd < g->k[0]; kd++)
                                for (int64_t kh = 0; kh < g->k[1]; kh++)
                                    for (int64_t kw = 0; kw < g->k[2]; kw++) {
                                        int64_t id = od * g->stride[0] - g->pad_lo[0] + kd * g->dil[0];
                                        int64_t ih = oh * g->stride[1] - g->pad_lo[1] + kh * g->dil[1];
                                        int64_t iw = ow * g->stride[2] - g->pad_lo[2] + kw * g->dil[2];
                                        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1] || iw < 0 || iw >= g->in[2])
                                            continue;
                                        double xv = x[(((n * g->c + gi * cg + ci) * g->in[0] + id) * g->in[1] + ih) * g->in[2] + iw];
                                        double wv = w[(((m * cg + ci) * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw];
                                        s += xv * wv;
                                    }
                        y[(((n * g->m + m) * g->out[0] + od) * g->out[1] + oh) * g->out[2] + ow] = s;
                    }
}

/* nsp, n, c, m, group, in, k, stride, dil, pad_lo, pad_hi (per spatial axis, model order) */
struct conv_case {
    int nsp;
    int64_t n, c, m, group;
    int64_t in[3], k[3], s[3], d[3], pl[3], ph[3];
    int bias;
};

static const struct conv_case conv_cases[] = {
    { 2, 1, 3, 8, 1, { 20, 18 }, { 7, 7 }, { 2, 2 }, { 1, 1 }, { 3, 3 }, { 3, 3 }, 1 },
    { 2, 2, 16, 16, 1, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { 2, 1, 16, 32, 1, { 9, 9 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0 },
    { 2, 1, 16, 32, 1, { 9, 9 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
    { 2, 1, 8, 8, 8, { 16, 15 }, { 3, 3 }, { 1, 2 }, { 1, 1 }, { 1, 0 }, { 1, 2 }, 1 },  /* depthwise */
    { 2, 2, 8, 12, 4, { 15, 17 }, { 3, 2 }, { 2, 1 }, { 2, 3 }, { 2, 0 }, { 1, 3 }, 0 }, /* groups, dilation */
    { 1, 2, 4, 6, 2, { 30 }, { 5 }, { 3 }, { 2 }, { 4 }, { 1 }, 1 },                    /* 1-D */
    { 3, 1, 3, 4, 1, { 7, 8, 6 }, { 3, 2, 3 }, { 1, 2, 1 }, { 1, 1, 2 }, { 1, 0, 2 }, { 1, 1, 0 }, 1 },
};

static void conv_geom_make(const struct conv_case *cc, struct nn_geom *g)
{
    memset(g, 0, sizeof *g);
    g->nsp = cc->nsp;
    g->n = cc->n;
    g->c = cc->c;
    g->m = cc->m;
    g->group = cc->group;
    for (int j = 0; j < 3; j++) {
        g->in[j] = g->k[j] = g->out[j] = g->stride[j] = g->dil[j] = 1;
    }
    for (int i = 0; i < cc->nsp; i++) {
        int j = 3 - cc->nsp + i;
        g->in[j] = cc->in[i];
        g->k[j] = cc->k[i];
        g->stride[j] = cc->s[i];
        g->dil[j] = cc->d[i];
        g->pad_lo[j] = cc->pl[i];
        g->pad_hi[j] = cc->ph[i];
        g->out[j] = (cc->in[i] + cc->pl[i] + cc->ph[i] - cc->d[i] * (cc->k[i] - 1) - 1) / cc->s[i] + 1;
    }
}

START_TEST(test_conv_paths)
{
    const struct conv_case *cc = &conv_cases[_i];
    struct nn_geom g;
    conv_geom_make(cc, &g);
    int64_t xs = g.n * g.c * nn_geom_in_size(&g), ws = g.m * (g.c / g.group) * nn_geom_k_size(&g);
    int64_t ys = g.n * g.m * nn_geom_out_size(&g);
    float *x = rnd_array(xs), *w = rnd_array(ws), *b = cc->bias ? rnd_array(g.m) : NULL;
    double *ref = malloc(sizeof(double) * ys);
    conv_reference(&g, x, w, b, ref);
    float *y = malloc(sizeof(float) * ys), *y2 = malloc(sizeof(float) * ys);
    struct op_call c = bare_call();
    int (*paths[4])(const struct op_call *, const struct nn_geom *, const float *, const float *,
                    const float *, float *) = {
        nn_conv_forward_gemm, nn_conv_forward_dnnl, nn_conv_forward_dnnl_blocked, nn_conv_forward,
    };
    static const char *names[4] = { "im2col+sgemm", "oneDNN plain", "oneDNN blocked", "chosen" };
    for (int p = 0; p < 4; p++) {
        testops_scratch_live = 0;
        ck_assert_msg(!paths[p](&c, &g, x, w, b, y), "case %d %s: %s", _i, names[p], err_buf);
        ck_assert_msg(!paths[p](&c, &g, x, w, b, y2), "case %d %s (cached): %s", _i, names[p], err_buf);
        ck_assert_msg(testops_scratch_live == 0, "case %d %s: scratch left allocated", _i, names[p]);
        char what[64];
        snprintf(what, sizeof what, "case %d %s", _i, names[p]);
        assert_close(y, ref, ys, 1e-4, what);
        ck_assert_msg(!memcmp(y, y2, sizeof(float) * ys), "%s: not deterministic", what);
    }
    free(x); free(w); free(b); free(ref); free(y); free(y2);
}
END_TEST

/* The adjoints of conv_reference, by scattering every product of the
 * forward into dx and dw: dx = sum w * dy, dw = sum dy * x, db = sum dy. */
static void conv_backward_reference(const struct nn_geom *g, const float *x, const float *w,
                                    const float *dy, double *dx, double *dw, double *db)
{
    const int64_t cg = g->c / g->group, mg = g->m / g->group;
    memset(dx, 0, sizeof(double) * (size_t)(g->n * g->c * nn_geom_in_size(g)));
    memset(dw, 0, sizeof(double) * (size_t)(g->m * cg * nn_geom_k_size(g)));
    memset(db, 0, sizeof(double) * (size_t)g->m);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < g->m; m++)
            for (int64_t od = 0; od < g->out[0]; od++)
                for (int64_t oh = 0; oh < g->out[1]; oh++)
                    for (int64_t ow = 0; ow < g->out[2]; ow++) {
                        double gy = dy[(((n * g->m + m) * g->out[0] + od) * g->out[1] + oh) * g->out[2] + ow];
                        db[m] += gy;
                        int64_t gi = m / mg;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t kd = 0; kd < g->k[0]; kd++)
                                for (int64_t kh = 0; kh < g->k[1]; kh++)
                                    for (int64_t kw = 0; kw < g->k[2]; kw++) {
                                        int64_t id = od * g->stride[0] - g->pad_lo[0] + kd * g->dil[0];
                                        int64_t ih = oh * g->stride[1] - g->pad_lo[1] + kh * g->dil[1];
                                        int64_t iw = ow * g->stride[2] - g->pad_lo[2] + kw * g->dil[2];
                                        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1] || iw < 0 || iw >= g->in[2])
                                            continue;
                                        int64_t xi = (((n * g->c + gi * cg + ci) * g->in[0] + id) * g->in[1] + ih) * g->in[2] + iw;
                                        int64_t wi = (((m * cg + ci) * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw;
                                        dx[xi] += w[wi] * gy;
                                        dw[wi] += x[xi] * gy;
                                    }
                    }
}

/* Every backward path (im2col/col2im + sgemm, oneDNN plain, oneDNN blocked,
 * the chosen one) against the scattering reference, twice each: results
 * must be bit-identical between runs (DTR recomputation). */
START_TEST(test_conv_backward_paths)
{
    const struct conv_case *cc = &conv_cases[_i];
    struct nn_geom g;
    conv_geom_make(cc, &g);
    int64_t xs = g.n * g.c * nn_geom_in_size(&g), ws = g.m * (g.c / g.group) * nn_geom_k_size(&g);
    int64_t ys = g.n * g.m * nn_geom_out_size(&g);
    float *x = rnd_array(xs), *w = rnd_array(ws), *dy = rnd_array(ys);
    double *rdx = malloc(sizeof(double) * xs), *rdw = malloc(sizeof(double) * ws);
    double *rdb = malloc(sizeof(double) * g.m);
    conv_backward_reference(&g, x, w, dy, rdx, rdw, rdb);
    float *dx = malloc(sizeof(float) * xs), *dx2 = malloc(sizeof(float) * xs);
    float *dw = malloc(sizeof(float) * ws), *dw2 = malloc(sizeof(float) * ws);
    float *db = malloc(sizeof(float) * g.m), *db2 = malloc(sizeof(float) * g.m);
    struct op_call c = bare_call();
    static const char *names[4] = { "im2col+sgemm", "oneDNN plain", "oneDNN blocked", "chosen" };
    for (int p = 0; p < 4; p++) {
        char what[96];
        for (int run = 0; run < 2; run++) {
            float *ox = run ? dx2 : dx, *ow = run ? dw2 : dw, *ob = run ? db2 : db;
            float *pb = cc->bias ? ob : NULL;
            int rd, rw;
            testops_scratch_live = 0;
            switch (p) {
            case 0:
                rd = nn_conv_backward_data_gemm(&c, &g, dy, w, ox);
                rw = nn_conv_backward_weights_gemm(&c, &g, x, dy, ow, pb);
                break;
            case 1: case 2:
                rd = nn_conv_backward_data_dnnl(&c, &g, dy, w, ox, p == 2);
                rw = nn_conv_backward_weights_dnnl(&c, &g, x, dy, ow, pb, p == 2);
                break;
            default:
                rd = nn_conv_backward_data(&c, &g, dy, w, ox);
                rw = nn_conv_backward_weights(&c, &g, x, dy, ow, pb);
                break;
            }
            ck_assert_msg(!rd && !rw, "case %d %s: %s", _i, names[p], err_buf);
            ck_assert_msg(testops_scratch_live == 0, "case %d %s: scratch left allocated", _i, names[p]);
        }
        snprintf(what, sizeof what, "case %d %s dX", _i, names[p]);
        assert_close(dx, rdx, xs, 1e-4, what);
        ck_assert_msg(!memcmp(dx, dx2, sizeof(float) * xs), "%s: not deterministic", what);
        snprintf(what, sizeof what, "case %d %s dW", _i, names[p]);
        assert_close(dw, rdw, ws, 1e-4, what);
        ck_assert_msg(!memcmp(dw, dw2, sizeof(float) * ws), "%s: not deterministic", what);
        if (cc->bias) {
            snprintf(what, sizeof what, "case %d %s dB", _i, names[p]);
            assert_close(db, rdb, g.m, 1e-4, what);
            ck_assert_msg(!memcmp(db, db2, sizeof(float) * g.m), "%s: not deterministic", what);
        }
    }
    free(x); free(w); free(dy); free(rdx); free(rdw); free(rdb);
    free(dx); free(dx2); free(dw); free(dw2); free(db); free(db2);
}
END_TEST

/* The blocked paths run the batch in chunks (nn_conv_chunk_bytes_set): on
 * a first layer (3 channels, 7x7, stride 2) and a 3x3 layer, 5 images cut
 * into 2 + 2 + 1, every result equals the reference, repeats bit for bit,
 * and asks for less scratch at once than the whole batch. The forward and
 * backward-data chunks compute per image what the whole batch does, so
 * they equal the unchunked results bit for bit. */
static size_t chunk_scratch_max;

static void *chunk_scratch_alloc(void *ctx, size_t bytes)
{
    if (bytes > chunk_scratch_max)
        chunk_scratch_max = bytes;
    return testops_scratch_alloc(ctx, bytes);
}

static const struct conv_case chunk_cases[] = {
    { 2, 5, 3, 8, 1, { 64, 64 }, { 7, 7 }, { 2, 2 }, { 1, 1 }, { 3, 3 }, { 3, 3 }, 1 },
    { 2, 5, 16, 16, 1, { 20, 20 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
};

START_TEST(test_conv_chunked)
{
    const struct conv_case *cc = &chunk_cases[_i];
    struct nn_geom g;
    conv_geom_make(cc, &g);
    int64_t xs = g.n * g.c * nn_geom_in_size(&g), ws = g.m * (g.c / g.group) * nn_geom_k_size(&g);
    int64_t ys = g.n * g.m * nn_geom_out_size(&g);
    float *x = rnd_array(xs), *w = rnd_array(ws), *b = rnd_array(g.m), *dy = rnd_array(ys);
    double *ry = malloc(sizeof(double) * ys), *rdx = malloc(sizeof(double) * xs);
    double *rdw = malloc(sizeof(double) * ws), *rdb = malloc(sizeof(double) * g.m);
    conv_reference(&g, x, w, b, ry);
    conv_backward_reference(&g, x, w, dy, rdx, rdw, rdb);
    /* 0: the whole batch at once; 1, 2: chunks of at most 2 images */
    float *y[3], *dx[3], *dw[3], *db[3];
    size_t most[3][3];   /* [run][forward, backward-data, backward-weights] */
    int64_t per = (int64_t)sizeof(float) * (g.c * nn_geom_in_size(&g) + g.m * nn_geom_out_size(&g));
    struct op_env env = test_env;
    env.scratch_alloc = chunk_scratch_alloc;
    struct op_call c = bare_call();
    c.env = &env;
    int64_t saved = nn_conv_chunk_bytes_set(0);
    for (int r = 0; r < 3; r++) {
        y[r] = malloc(sizeof(float) * ys);
        dx[r] = malloc(sizeof(float) * xs);
        dw[r] = malloc(sizeof(float) * ws);
        db[r] = malloc(sizeof(float) * g.m);
        nn_conv_chunk_bytes_set(r ? 2 * per + per / 2 : per * g.n * 4);
        chunk_scratch_max = 0;
        testops_scratch_live = 0;
        ck_assert_msg(!nn_conv_forward_dnnl_blocked(&c, &g, x, w, b, y[r]), "case %d run %d: %s", _i, r, err_buf);
        most[r][0] = chunk_scratch_max;
        chunk_scratch_max = 0;
        ck_assert_msg(!nn_conv_backward_data_dnnl(&c, &g, dy, w, dx[r], 1), "case %d run %d: %s", _i, r, err_buf);
        most[r][1] = chunk_scratch_max;
        chunk_scratch_max = 0;
        ck_assert_msg(!nn_conv_backward_weights_dnnl(&c, &g, x, dy, dw[r], db[r], 1), "case %d run %d: %s", _i, r,
                      err_buf);
        most[r][2] = chunk_scratch_max;
        ck_assert_msg(testops_scratch_live == 0, "case %d run %d: scratch left allocated", _i, r);
    }
    nn_conv_chunk_bytes_set(saved);
    char what[64];
    for (int r = 0; r < 3; r++) {
        snprintf(what, sizeof what, "case %d run %d Y", _i, r);
        assert_close(y[r], ry, ys, 1e-4, what);
        snprintf(what, sizeof what, "case %d run %d dX", _i, r);
        assert_close(dx[r], rdx, xs, 1e-4, what);
        snprintf(what, sizeof what, "case %d run %d dW", _i, r);
        assert_close(dw[r], rdw, ws, 1e-4, what);
        snprintf(what, sizeof what, "case %d run %d dB", _i, r);
        assert_close(db[r], rdb, g.m, 1e-4, what);
    }
    ck_assert_msg(!memcmp(y[1], y[2], sizeof(float) * ys) && !memcmp(dx[1], dx[2], sizeof(float) * xs)
                  && !memcmp(dw[1], dw[2], sizeof(float) * ws) && !memcmp(db[1], db[2], sizeof(float) * g.m),
                  "case %d: chunked runs differ", _i);
    ck_assert_msg(!memcmp(y[0], y[1], sizeof(float) * ys), "case %d: chunked forward differs from the whole batch", _i);
    ck_assert_msg(!memcmp(dx[0], dx[1], sizeof(float) * xs), "case %d: chunked backward-data differs from the whole batch",
                  _i);
    /* Some of oneDNN's implementations keep a per-thread buffer of one
     * image (AVX2's backward-data of the 3-channel layer: 1.2 MB either
     * way), which no chunking shrinks; none may grow, and the rest shrink. */
    size_t whole = 0, chunked = 0;
    for (int k = 0; k < 3; k++) {
        ck_assert_msg(most[1][k] <= most[0][k], "case %d kernel %d: chunks asked for %zu bytes of scratch at once, "
                      "the whole batch %zu", _i, k, most[1][k], most[0][k]);
        whole += most[0][k];
        chunked += most[1][k];
    }
    ck_assert_msg(chunked < whole, "case %d: chunks asked for %zu bytes of scratch in all, the whole batch %zu", _i,
                  chunked, whole);
    for (int r = 0; r < 3; r++) {
        free(y[r]); free(dx[r]); free(dw[r]); free(db[r]);
    }
    free(x); free(w); free(b); free(dy); free(ry); free(rdx); free(rdw); free(rdb);
}
END_TEST

/* The path within the workspace cap (nn_conv_path_choose): on every
 * geometry, direction and cap (the rule's; each path's own workspace; 1
 * byte), the chosen path's workspace fits the cap, or no path fits and it
 * has the least; the dispatcher gives the forced path's bytes exactly (the
 * same path), close to the reference; and no path holds more scratch at
 * once than nn_conv_path_workspace() said. */
#define WS_SLOTS 16
static void *ws_ptr[WS_SLOTS];
static size_t ws_size[WS_SLOTS], ws_live, ws_most;

static void *ws_scratch_alloc(void *ctx, size_t bytes)
{
    void *p = testops_scratch_alloc(ctx, bytes);
    for (int i = 0; p && i < WS_SLOTS; i++)
        if (!ws_ptr[i]) {
            ws_ptr[i] = p;
            ws_size[i] = bytes;
            ws_live += bytes;
            ws_most = ws_live > ws_most ? ws_live : ws_most;
            break;
        }
    return p;
}

static void ws_scratch_free(void *ctx, void *p)
{
    for (int i = 0; p && i < WS_SLOTS; i++)
        if (ws_ptr[i] == p) {
            ws_live -= ws_size[i];
            ws_ptr[i] = NULL;
        }
    testops_scratch_free(ctx, p);
}

/* Runs direction `dir` on path `path` (-1: the dispatcher) into out (Y, dX
 * or dW; dB after dW). */
static int ws_run(const struct op_call *c, const struct nn_geom *g, int dir, int path, const float *x,
                  const float *w, const float *b, const float *dy, float *out)
{
    int64_t ws = g->m * (g->c / g->group) * nn_geom_k_size(g);
    float *db = b ? out + ws : NULL;
    switch (dir) {
    case NN_CONV_FWD:
        return path < 0 ? nn_conv_forward(c, g, x, w, b, out)
               : path == NN_CONV_PATH_GEMM ? nn_conv_forward_gemm(c, g, x, w, b, out)
               : path == NN_CONV_PATH_PLAIN ? nn_conv_forward_dnnl(c, g, x, w, b, out)
               : nn_conv_forward_dnnl_blocked(c, g, x, w, b, out);
    case NN_CONV_BWD_DATA:
        return path < 0 ? nn_conv_backward_data(c, g, dy, w, out)
               : path == NN_CONV_PATH_GEMM ? nn_conv_backward_data_gemm(c, g, dy, w, out)
               : nn_conv_backward_data_dnnl(c, g, dy, w, out, path == NN_CONV_PATH_BLOCKED);
    default:
        return path < 0 ? nn_conv_backward_weights(c, g, x, dy, out, db)
               : path == NN_CONV_PATH_GEMM ? nn_conv_backward_weights_gemm(c, g, x, dy, out, db)
               : nn_conv_backward_weights_dnnl(c, g, x, dy, out, db, path == NN_CONV_PATH_BLOCKED);
    }
}

START_TEST(test_conv_workspace_choice)
{
    const struct conv_case *cc = &conv_cases[_i];
    struct nn_geom g;
    conv_geom_make(cc, &g);
    int64_t xs = g.n * g.c * nn_geom_in_size(&g), ws = g.m * (g.c / g.group) * nn_geom_k_size(&g);
    int64_t ys = g.n * g.m * nn_geom_out_size(&g);
    float *x = rnd_array(xs), *w = rnd_array(ws), *b = cc->bias ? rnd_array(g.m) : NULL, *dy = rnd_array(ys);
    double *ref[3] = { malloc(sizeof(double) * ys), malloc(sizeof(double) * xs),
                       malloc(sizeof(double) * (ws + g.m)) };
    conv_reference(&g, x, w, b, ref[0]);
    conv_backward_reference(&g, x, w, dy, ref[1], ref[2], ref[2] + ws);
    int64_t most = xs > ys ? xs : ys;
    most = most > ws + g.m ? most : ws + g.m;
    float *got = malloc(sizeof(float) * most), *want = malloc(sizeof(float) * most);
    struct op_env env = test_env;
    env.scratch_alloc = ws_scratch_alloc;
    env.scratch_free = ws_scratch_free;
    struct op_call c = bare_call();
    c.env = &env;
    static const char *dirs[3] = { "forward", "backward-data", "backward-weights" };
    for (int dir = 0; dir < 3; dir++) {
        int64_t n_out = dir == NN_CONV_FWD ? ys : dir == NN_CONV_BWD_DATA ? xs : ws + (b ? g.m : 0);
        size_t bytes[3], least = SIZE_MAX;
        int have[3];
        for (int p = 0; p < 3; p++) {
            have[p] = !nn_conv_path_workspace(&c, &g, b != NULL, dir, p, &bytes[p]);
            if (!have[p])
                continue;
            least = bytes[p] < least ? bytes[p] : least;
            ws_live = ws_most = 0;
            ck_assert_msg(!ws_run(&c, &g, dir, p, x, w, b, dy, got), "case %d %s path %d: %s", _i, dirs[dir], p,
                          err_buf);
            ck_assert_msg(ws_most <= bytes[p], "case %d %s path %d: held %zu bytes of scratch, estimated %zu", _i,
                          dirs[dir], p, ws_most, bytes[p]);
        }
        ck_assert_msg(have[NN_CONV_PATH_GEMM], "case %d: im2col + sgemm is always there", _i);
        int64_t caps[5] = { 0, (int64_t)bytes[0], (int64_t)bytes[1], (int64_t)bytes[2], 1 };
        for (int k = 0; k < 5; k++) {
            if (k && (!caps[k] || (k >= 1 && k <= 3 && !have[k - 1])))
                continue;
            int64_t saved = nn_conv_workspace_cap_set(caps[k]);
            size_t cap = nn_conv_workspace_cap(&g);
            enum nn_conv_path path = nn_conv_path_choose(&c, &g, b != NULL, dir);
            ck_assert_msg(path == nn_conv_path_choose(&c, &g, b != NULL, dir), "case %d %s: the choice changed", _i,
                          dirs[dir]);
            ck_assert_msg(have[path] && (bytes[path] <= cap || bytes[path] == least),
                          "case %d %s cap %zu: chose path %d of %zu bytes (paths: %zu %zu %zu)", _i, dirs[dir], cap,
                          (int)path, bytes[path], bytes[0], bytes[1], bytes[2]);
            ck_assert_msg(!ws_run(&c, &g, dir, -1, x, w, b, dy, got) && !ws_run(&c, &g, dir, path, x, w, b, dy, want),
                          "case %d %s: %s", _i, dirs[dir], err_buf);
            nn_conv_workspace_cap_set(saved);
            ck_assert_msg(!memcmp(got, want, sizeof(float) * (size_t)n_out),
                          "case %d %s cap %zu: the dispatcher's result differs from path %d's", _i, dirs[dir], cap,
                          (int)path);
            char what[96];
            snprintf(what, sizeof what, "case %d %s cap %zu", _i, dirs[dir], cap);
            assert_close(got, ref[dir], n_out, 1e-4, what);
        }
    }
    ck_assert_msg(testops_scratch_live == 0, "case %d: scratch left allocated", _i);
    free(x); free(w); free(b); free(dy); free(ref[0]); free(ref[1]); free(ref[2]); free(got); free(want);
}
END_TEST

/* Pooling: our loops and oneDNN agree wherever oneDNN is used, on geometries
 * with ceil_mode, dilations, asymmetric pads, 1-D and 3-D. */
struct pool_case {
    int rank;
    int64_t dims[5], k[3], s[3], d[3], pads[6];
    int ceil_mode;
};

static const struct pool_case pool_cases[] = {
    { 4, { 2, 3, 11, 12 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1, 1, 1 }, 0 },
    { 4, { 1, 4, 10, 9 }, { 3, 2 }, { 2, 3 }, { 1, 1 }, { 0, 1, 1, 0 }, 1 },
    { 4, { 1, 2, 13, 13 }, { 3, 3 }, { 2, 2 }, { 2, 2 }, { 1, 1, 1, 1 }, 1 },
    { 3, { 2, 3, 17 }, { 4 }, { 3 }, { 1 }, { 2, 1 }, 1 },
    { 5, { 1, 2, 7, 8, 9 }, { 2, 3, 2 }, { 2, 2, 3 }, { 1, 2, 1 }, { 0, 1, 1, 1, 0, 0 }, 1 },
};

START_TEST(test_pool_paths)
{
    const struct pool_case *pc = &pool_cases[_i];
    int nsp = pc->rank - 2;
    struct nn_window_attrs a = { .n_kernel = nsp, .n_strides = nsp, .n_dilations = nsp,
                                 .n_pads = 2 * nsp, .ceil_mode = pc->ceil_mode };
    memcpy(a.kernel, pc->k, sizeof pc->k);
    memcpy(a.strides, pc->s, sizeof pc->s);
    memcpy(a.dilations, pc->d, sizeof pc->d);
    memcpy(a.pads, pc->pads, sizeof pc->pads);
    struct tensor x = { .dtype = ONNX_DTYPE_FLOAT, .rank = pc->rank };
    memcpy(x.dims, pc->dims, sizeof pc->dims);
    struct op_call c = bare_call();
    struct nn_geom g;
    ck_assert_msg(!nn_geom_resolve(&c, &a, &x, pc->k, 1, &g), "case %d: %s", _i, err_buf);
    g.n = x.dims[0];
    g.c = g.m = x.dims[1];
    g.group = 1;
    int64_t xs = tensor_numel(&x), ys = g.n * g.c * nn_geom_out_size(&g);
    float *xd = rnd_array(xs), *own = malloc(sizeof(float) * ys), *dn = malloc(sizeof(float) * ys);
    double *ref = malloc(sizeof(double) * ys);
    for (int kind = 0; kind < 3; kind++) {
        if (kind == NN_POOL_MAX)
            ck_assert(!nn_maxpool_forward(&c, &g, ONNX_DTYPE_FLOAT, xd, own, NULL, 0));
        else
            ck_assert(!nn_avgpool_forward(&c, &g, kind == NN_POOL_AVG_INCLUDE_PAD, xd, own));
        if (nn_pool_forward_dnnl(&c, &g, kind, xd, dn))
            continue;                  /* oneDNN declined: only our loop is used */
        for (int64_t i = 0; i < ys; i++)
            ref[i] = own[i];
        char what[64];
        snprintf(what, sizeof what, "pool case %d kind %d", _i, kind);
        assert_close(dn, ref, ys, 1e-5, what);
    }
    free(xd); free(own); free(dn); free(ref);
}
END_TEST

/* ConvTranspose through the registry against a scatter reference. */
START_TEST(test_conv_transpose_reference)
{
    /* X [2, 4, 5, 6], W [4, 3, 3, 2] group 2 -> M = 6, strides 2x3, dilations 1x2,
     * pads (1, 0, 0, 2), output_padding (1, 0) */
    int64_t xd[4] = { 2, 4, 5, 6 }, wd[4] = { 4, 3, 3, 2 }, bd[1] = { 6 };
    int64_t strides[2] = { 2, 3 }, dil[2] = { 1, 2 }, pads[4] = { 1, 0, 0, 2 }, opad[2] = { 1, 0 };
    int64_t group = 2, M = 6;
    float *x = rnd_array(2 * 4 * 5 * 6), *w = rnd_array(4 * 3 * 3 * 2), *b = rnd_array(6);
    struct onnx_attr attrs[5] = {
        { .name = "strides", .type = ONNX_ATTR_INTS, .ints = strides, .n = 2 },
        { .name = "dilations", .type = ONNX_ATTR_INTS, .ints = dil, .n = 2 },
        { .name = "pads", .type = ONNX_ATTR_INTS, .ints = pads, .n = 4 },
        { .name = "output_padding", .type = ONNX_ATTR_INTS, .ints = opad, .n = 2 },
        { .name = "group", .type = ONNX_ATTR_INT, .i = group },
    };
    struct onnx_node node = { .name = "ct", .op_type = "ConvTranspose", .domain = "", .n_attrs = 5, .attrs = attrs };
    int version;
    const struct op_def *def = op_registry_find("", "ConvTranspose", 22, &version);
    ck_assert(def != NULL);
    void *params = NULL;
    ck_assert_msg(!def->parse(&node, version, &params, err_buf, sizeof err_buf), "%s", err_buf);
    struct tensor tx = { .dtype = ONNX_DTYPE_FLOAT, .rank = 4, .data = x }, tw = { .dtype = ONNX_DTYPE_FLOAT, .rank = 4, .data = w };
    struct tensor tb = { .dtype = ONNX_DTYPE_FLOAT, .rank = 1, .data = b }, ty = { 0 };
    memcpy(tx.dims, xd, sizeof xd);
    memcpy(tw.dims, wd, sizeof wd);
    memcpy(tb.dims, bd, sizeof bd);
    const struct tensor *in[3] = { &tx, &tw, &tb };
    struct tensor *out[1] = { &ty };
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = "ct",
                         .n_in = 3, .in = in, .n_out = 1, .out = out, .env = &test_env };
    ck_assert_msg(!def->infer(&c), "%s", err_buf);
    /* out = s*(in-1) + opad + d*(k-1)+1 - pads */
    int64_t oh = 2 * 4 + 1 + 3 - 1 - 0, ow = 3 * 5 + 0 + 2 * 1 + 1 - 0 - 2;
    ck_assert_msg(ty.rank == 4 && ty.dims[0] == 2 && ty.dims[1] == M && ty.dims[2] == oh && ty.dims[3] == ow,
                  "output [%lld,%lld,%lld,%lld], expected [2,6,%lld,%lld]", (long long)ty.dims[0],
                  (long long)ty.dims[1], (long long)ty.dims[2], (long long)ty.dims[3], (long long)oh, (long long)ow);
    int64_t ys = 2 * M * oh * ow;
    ty.data = malloc(sizeof(float) * ys);
    testops_scratch_live = 0;
    ck_assert_msg(!def->kernel[BACKEND_CPU](&c), "%s", err_buf);
    ck_assert_int_eq(testops_scratch_live, 0);
    double *ref = calloc(ys, sizeof(double));
    for (int64_t n = 0; n < 2; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t i = 0; i < oh * ow; i++)
                ref[(n * M + m) * oh * ow + i] = b[m];
    for (int64_t n = 0; n < 2; n++)
        for (int64_t ci = 0; ci < 4; ci++) {
            int64_t gi = ci / 2;
            for (int64_t h = 0; h < 5; h++)
                for (int64_t wv = 0; wv < 6; wv++)
                    for (int64_t mo = 0; mo < 3; mo++)
                        for (int64_t kh = 0; kh < 3; kh++)
                            for (int64_t kw = 0; kw < 2; kw++) {
                                int64_t y0 = h * 2 + kh * 1 - 1, y1 = wv * 3 + kw * 2 - 0;
                                if (y0 < 0 || y0 >= oh || y1 < 0 || y1 >= ow)
                                    continue;
                                int64_t m = gi * 3 + mo;
                                ref[((n * M + m) * oh + y0) * ow + y1] +=
                                    (double)x[((n * 4 + ci) * 5 + h) * 6 + wv] * w[((ci * 3 + mo) * 3 + kh) * 2 + kw];
                            }
        }
    assert_close(ty.data, ref, ys, 1e-4, "ConvTranspose");
    free(ref); free(ty.data); free(x); free(w); free(b); free(params);
}
END_TEST

/* MatMul with broadcast batch axes, through the registry. */
START_TEST(test_matmul_broadcast)
{
    int64_t ad[4] = { 2, 1, 3, 5 }, bd[3] = { 4, 5, 7 };
    float *a = rnd_array(2 * 3 * 5), *bm = rnd_array(4 * 5 * 7);
    struct tensor ta = { .dtype = ONNX_DTYPE_FLOAT, .rank = 4, .data = a }, tb = { .dtype = ONNX_DTYPE_FLOAT, .rank = 3, .data = bm };
    memcpy(ta.dims, ad, sizeof ad);
    memcpy(tb.dims, bd, sizeof bd);
    struct tensor ty = { 0 };
    const struct tensor *in[2] = { &ta, &tb };
    struct tensor *out[1] = { &ty };
    int version;
    const struct op_def *def = op_registry_find("", "MatMul", 13, &version);
    ck_assert(def != NULL);
    struct op_call c = { .def = def, .version = version, .node_name = "mm", .n_in = 2, .in = in,
                         .n_out = 1, .out = out, .env = &test_env };
    ck_assert_msg(!def->infer(&c), "%s", err_buf);
    ck_assert_msg(ty.rank == 4 && ty.dims[0] == 2 && ty.dims[1] == 4 && ty.dims[2] == 3 && ty.dims[3] == 7,
                  "MatMul shape wrong: rank %d", ty.rank);
    ty.data = malloc(sizeof(float) * 2 * 4 * 3 * 7);
    ck_assert_msg(!def->kernel[BACKEND_CPU](&c), "%s", err_buf);
    double ref[2 * 4 * 3 * 7];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int r = 0; r < 3; r++)
                for (int col = 0; col < 7; col++) {
                    double s = 0;
                    for (int k = 0; k < 5; k++)
                        s += (double)a[(i * 3 + r) * 5 + k] * bm[(j * 5 + k) * 7 + col];
                    ref[((i * 4 + j) * 3 + r) * 7 + col] = s;
                }
    assert_close(ty.data, ref, 2 * 4 * 3 * 7, 1e-5, "MatMul broadcast");
    free(ty.data); free(a); free(bm);
}
END_TEST

/* Bit-identical results whatever the addresses (a recomputed tensor lands
 * elsewhere in the arena): inputs and outputs at offsets of 4, 16 and 64
 * bytes from an aligned base, through the chosen conv path and nn_sgemm. */
START_TEST(test_address_independence)
{
    struct nn_geom g;
    conv_geom_make(&conv_cases[1], &g);
    int64_t xs = g.n * g.c * nn_geom_in_size(&g), ws = g.m * (g.c / g.group) * nn_geom_k_size(&g);
    int64_t ys = g.n * g.m * nn_geom_out_size(&g);
    float *x0 = rnd_array(xs), *w0 = rnd_array(ws), *b0 = rnd_array(g.m);
    const int64_t M = 37, N = 45, K = 70;
    float *a0 = rnd_array(M * K), *bm0 = rnd_array(K * N);
    float *ref_y = NULL, *ref_c = NULL;
    static const int offsets[3] = { 1, 4, 16 };  /* in floats: 4, 16, 64 bytes */
    struct op_call c = bare_call();
    for (int t = 0; t < 3; t++) {
        int o = offsets[t];
        float *buf = aligned_alloc(64, sizeof(float) * (size_t)((xs + ws + ys + M * K + K * N + M * N + 6 * 16 + 64) / 16 * 16 + 64));
        float *x = buf + o, *w = x + xs + o, *y = w + ws + o, *a = y + ys + o, *bm = a + M * K + o, *cm = bm + K * N + o;
        memcpy(x, x0, sizeof(float) * xs);
        memcpy(w, w0, sizeof(float) * ws);
        memcpy(a, a0, sizeof(float) * M * K);
        memcpy(bm, bm0, sizeof(float) * K * N);
        ck_assert_msg(!nn_conv_forward(&c, &g, x, w, b0, y), "%s", err_buf);
        nn_sgemm(0, 0, M, N, K, 1.0f, a, K, bm, N, 0.0f, cm, N);
        if (!ref_y) {
            ref_y = malloc(sizeof(float) * ys);
            ref_c = malloc(sizeof(float) * M * N);
            memcpy(ref_y, y, sizeof(float) * ys);
            memcpy(ref_c, cm, sizeof(float) * M * N);
        } else {
            ck_assert_msg(!memcmp(ref_y, y, sizeof(float) * ys), "conv result depends on addresses (offset %d)", o);
            ck_assert_msg(!memcmp(ref_c, cm, sizeof(float) * M * N), "sgemm result depends on addresses (offset %d)", o);
        }
        free(buf);
    }
    free(x0); free(w0); free(b0); free(a0); free(bm0); free(ref_y); free(ref_c);
}
END_TEST

/* Bad attributes are refused with a message naming the node and attribute. */
START_TEST(test_conv_bad_attrs)
{
    struct onnx_attr a = { .name = "auto_pad", .type = ONNX_ATTR_STRING, .s = "SAME", .s_len = 4 };
    struct onnx_node node = { .name = "conv7", .op_type = "Conv", .domain = "", .n_attrs = 1, .attrs = &a };
    int version;
    const struct op_def *def = op_registry_find("", "Conv", 13, &version);
    ck_assert_int_eq(version, 11);
    void *params = NULL;
    char err[256] = "";
    ck_assert_int_eq(def->parse(&node, version, &params, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "conv7") && strstr(err, "auto_pad"), "message was: %s", err);
    ck_assert(params == NULL);
}
END_TEST

/* Opset resolution: each op answers at opset 7 and at 25. */
/* BatchNormalization exported for inference (Y only, no training_mode) run
 * while training behaves like PyTorch's BatchNorm2d.train(): Y from the batch
 * statistics, running_mean/running_var updated in place with
 * running = m * running + (1 - m) * batch and the UNBIASED batch variance,
 * once per step (not when DTR recomputes the call). Expected values from
 * numpy with PyTorch's formulas (torch momentum = 1 - m = 0.1):
 *   x = ((i*37 % 23)/7 - 1.5 for i in range(24)).reshape(2,3,2,2)
 *   bm = x.mean((0,2,3)); bv = x.var((0,2,3)); bvu = x.var((0,2,3), ddof=1)
 *   rm1 = 0.9*rm + 0.1*bm; rv1 = 0.9*rv + 0.1*bvu
 *   y = (x - bm) / sqrt(bv + 1e-5) * s + b */
START_TEST(test_batchnorm_running_stats)
{
    float x[24], scale[3] = { 1.0f, 0.5f, 2.0f }, bias[3] = { 0.1f, -0.2f, 0.3f };
    float rm[3] = { 0.5f, -0.5f, 0.0f }, rv[3] = { 1.0f, 2.0f, 0.5f }, y[24], y2[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)((i * 37 % 23) / 7.0 - 1.5);
    static const double want_rm1[3] = { 0.44464284, -0.43571427, -0.00714286 };
    static const double want_rv1[3] = { 1.01803935, 1.89037895, 0.56720114 };
    static const double want_rm2[3] = { 0.3948214, -0.37785712, -0.01357143 };
    static const double want_rv2[3] = { 1.0342747, 1.79172, 0.62768215 };
    static const double want_y[24] = {
        -1.3232378, 0.6446959, -0.6204043, 1.3475295, -0.3204822, -1.0433750, 0.0811249, -0.6417679,
        3.1213686, 0.5821369, -1.9570951, 1.9928212, -0.3392709, 1.6286629, 0.3635626, -0.9015377,
        0.2417678, -0.4811251, 0.6433750, -0.0795179, -1.3928211, 2.5570948, 0.0178632, -2.5213690,
    };
    struct onnx_attr attrs[2] = {
        { .name = "momentum", .type = ONNX_ATTR_FLOAT, .f = 0.9f },
        { .name = "epsilon", .type = ONNX_ATTR_FLOAT, .f = 1e-5f },
    };
    struct onnx_node node = { .name = "bn", .op_type = "BatchNormalization", .domain = "",
                              .n_attrs = 2, .attrs = attrs };
    int version = 0;
    const struct op_def *def = op_registry_find("", "BatchNormalization", 15, &version);
    ck_assert_msg(def && version == 15, "BatchNormalization-15 not found");
    void *params = NULL;
    char err[256];
    ck_assert_msg(!def->parse(&node, version, &params, err, sizeof err), "parse: %s", err);
    struct tensor tx = { .dtype = ONNX_DTYPE_FLOAT, .rank = 4, .dims = { 2, 3, 2, 2 }, .data = x };
    struct tensor ts = { .dtype = ONNX_DTYPE_FLOAT, .rank = 1, .dims = { 3 }, .data = scale };
    struct tensor tb = ts, tm = ts, tv = ts, ty = { 0 };
    tb.data = bias;
    tm.data = rm;
    tv.data = rv;
    const struct tensor *in[5] = { &tx, &ts, &tb, &tm, &tv };
    struct tensor *out[1] = { &ty };
    struct op_env env = test_env;
    env.training = 1;
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = "bn",
                         .n_in = 5, .in = in, .n_out = 1, .out = out, .env = &env };
    ck_assert_msg(!def->infer(&c), "infer: %s", err_buf);
    ty.data = y;
    ck_assert_msg(!def->kernel[BACKEND_CPU](&c), "kernel: %s", err_buf);
    assert_close(y, want_y, 24, 1e-5, "training Y");
    assert_close(rm, want_rm1, 3, 1e-6, "running_mean after step 1");
    assert_close(rv, want_rv1, 3, 1e-6, "running_var after step 1");
    /* a DTR recomputation: the same Y, the statistics untouched */
    env.recomputing = 1;
    ty.data = y2;
    ck_assert_msg(!def->kernel[BACKEND_CPU](&c), "kernel (recomputing): %s", err_buf);
    ck_assert_msg(!memcmp(y, y2, sizeof y), "recomputed Y differs");
    assert_close(rm, want_rm1, 3, 1e-6, "running_mean after a recomputation");
    assert_close(rv, want_rv1, 3, 1e-6, "running_var after a recomputation");
    env.recomputing = 0;
    ck_assert_msg(!def->kernel[BACKEND_CPU](&c), "kernel (step 2): %s", err_buf);
    assert_close(rm, want_rm2, 3, 1e-6, "running_mean after step 2");
    assert_close(rv, want_rv2, 3, 1e-6, "running_var after step 2");
    /* inference: the running statistics, unchanged */
    env.training = 0;
    ck_assert_msg(!def->kernel[BACKEND_CPU](&c), "kernel (inference): %s", err_buf);
    double want_inf[24];
    for (int i = 0; i < 24; i++) {
        int ch = (i / 4) % 3;
        want_inf[i] = (x[i] - want_rm2[ch]) / sqrt(want_rv2[ch] + 1e-5) * scale[ch] + bias[ch];
    }
    assert_close(y2, want_inf, 24, 1e-5, "inference Y");
    assert_close(rm, want_rm2, 3, 1e-6, "running_mean after inference");
    free(params);
}
END_TEST

/* MaxPoolGrad routes dy to the same tap the forward's Indices name: the
 * first maximum in window order, also on ties (x is all equal within rows,
 * k 2x2 stride 1: overlapping windows with four-way ties). */
START_TEST(test_maxpool_grad_ties)
{
    float x[9] = { 1, 1, 1, 2, 2, 2, 2, 2, 2 }, dy[4] = { 1, 10, 100, 1000 }, dx[9];
    struct nn_window_attrs a = { .n_kernel = 2, .kernel = { 2, 2 } };
    struct tensor xt = { .dtype = ONNX_DTYPE_FLOAT, .rank = 4, .dims = { 1, 1, 3, 3 }, .data = x };
    struct op_call c = bare_call();
    struct nn_geom g;
    ck_assert_msg(!nn_geom_resolve(&c, &a, &xt, a.kernel, 1, &g), "geometry: %s", err_buf);
    g.n = 1;
    g.c = g.m = 1;
    g.group = 1;
    int64_t ind[4];
    float y[4];
    ck_assert(!nn_maxpool_forward(&c, &g, ONNX_DTYPE_FLOAT, x, y, ind, 0));
    nn_maxpool_backward(&g, x, dy, dx);
    double want[9] = { 0 };
    for (int o = 0; o < 4; o++)
        want[ind[o]] += dy[o];
    /* windows (0,0),(0,1) take row 1's first 2 (index 3, 4); (1,*) likewise */
    ck_assert_msg(ind[0] == 3 && ind[1] == 4 && ind[2] == 3 && ind[3] == 4,
                  "forward indices %lld %lld %lld %lld", (long long)ind[0], (long long)ind[1],
                  (long long)ind[2], (long long)ind[3]);
    assert_close(dx, want, 9, 0, "MaxPoolGrad on ties");
}
END_TEST

START_TEST(test_registry_versions)
{
    for (int i = 0; nn_ops[i]; i++) {
        int v = 0;
        const struct op_def *d = op_registry_find("", nn_ops[i], 25, &v);
        ck_assert_msg(d != NULL, "%s missing at opset 25", nn_ops[i]);
        if (strcmp(nn_ops[i], "LayerNormalization"))
            ck_assert_msg(op_registry_find("", nn_ops[i], 7, &v) != NULL, "%s missing at opset 7", nn_ops[i]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ops_nn");
    TCase *tc = tcase_create("node");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_node_folders);
    suite_add_tcase(s, tc);
    tc = tcase_create("kernels");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_conv_paths, 0, (int)(sizeof conv_cases / sizeof conv_cases[0]));
    tcase_add_loop_test(tc, test_pool_paths, 0, (int)(sizeof pool_cases / sizeof pool_cases[0]));
    tcase_add_loop_test(tc, test_conv_backward_paths, 0, (int)(sizeof conv_cases / sizeof conv_cases[0]));
    tcase_add_test(tc, test_batchnorm_running_stats);
    tcase_add_test(tc, test_maxpool_grad_ties);
    tcase_add_test(tc, test_conv_transpose_reference);
    tcase_add_test(tc, test_matmul_broadcast);
    tcase_add_test(tc, test_address_independence);
    tcase_add_test(tc, test_conv_bad_attrs);
    tcase_add_test(tc, test_registry_versions);
    tcase_add_loop_test(tc, test_conv_chunked, 0, (int)(sizeof chunk_cases / sizeof chunk_cases[0]));
    tcase_add_loop_test(tc, test_conv_workspace_choice, 0, (int)(sizeof conv_cases / sizeof conv_cases[0]));
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
