/* tests/test_ops_rnn.c — LSTM, GRU, RNN, SoftmaxCrossEntropyLoss and
 * NegativeLogLikelihoodLoss kernels, driven through the registry as the
 * runtime drives them (parse, infer, kernel).
 *
 * Two kinds of expected values: outputs pasted from onnxruntime (and from
 * onnx.reference for batch-first LSTM, which onnxruntime's CPU provider does
 * not run) for a few fixed cases, and a plain per-element reference in double
 * precision, written from the ONNX spec and independent of the kernels, for
 * sweeps over directions, layouts, optional inputs and activations.
 * Inputs are fill(i) = sin(0.37 i + seed) * scale so Python can rebuild them:
 * the pasted arrays came from a script that builds each node with
 * onnx.helper, feeds the same fill() data and prints the outputs.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/rnn-impl.h"
#include "testops.h"

/* ---- pasted expectations ---------------------------------------------- */

static const float lstm_bidi_y[24] = { 0.157383353f, 0.149200827f, 0.352423042f, 0.240532488f, -0.0970352292f, -0.0932279974f, -0.0471495278f, 0.0326892063f, 0.141030163f, 0.197883978f, 0.00993837696f, 0.0422503911f, -0.0384760462f, 0.0473725796f, 0.131251782f, 0.175084874f, -0.0580896363f, 0.00659026066f, 0.0f, 0.0f, 0.121935181f, 0.275089651f, 0.0f, 0.0f };
static const float lstm_bidi_yh[8] = { -0.0580896363f, 0.00659026066f, 0.00993837696f, 0.0422503911f, -0.0970352292f, -0.0932279974f, -0.0471495278f, 0.0326892063f };
static const float lstm_bidi_yc[8] = { -0.14143008f, 0.00906069577f, 0.0188055336f, 0.0611244142f, -0.236337885f, -0.163188621f, -0.159242317f, 0.0544725806f };
static const float gru_rev_y[36] = { 0.073499769f, 0.114816815f, -0.0214267522f, -0.0327679813f, 0.178072155f, 0.206122041f, 0.0367845818f, -0.137537897f, -0.0579761863f, 0.366836727f, -0.0638747662f, -0.387347579f, 0.0f, 0.0f, 0.0f, 0.273627281f, -0.322882712f, -0.404076844f, 0.436562985f, -0.0150106251f, -0.289354861f, 0.0f, 0.0f, 0.0f, -0.33742395f, -0.09084858f, -0.0541119576f, 0.120613992f, 0.409968495f, 0.48019892f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
static const float gru_rev_yh[9] = { 0.073499769f, 0.114816815f, -0.0214267522f, -0.0327679813f, 0.178072155f, 0.206122041f, 0.0367845818f, -0.137537897f, -0.0579761863f };
static const float gru_lbr_y[72] = { -0.100238234f, 0.0876657516f, 0.349674076f, -0.109192386f, 0.0802388862f, 0.336904734f, -0.112709723f, 0.0442692712f, 0.210243285f, -0.00731571764f, 0.174503833f, 0.478258371f, -0.118130662f, 0.111147419f, 0.48187089f, -0.126296371f, 0.00298556685f, 0.22195442f, 0.13245523f, -0.145831779f, -0.203708068f, 0.475976318f, -0.373360723f, -0.46231854f, 0.521777928f, -0.373454213f, -0.505555153f, -0.113600932f, -0.222106904f, -0.107615218f, -0.270309716f, -0.319902271f, -0.0369165987f, -0.327130616f, -0.321287692f, 0.0466352999f, 0.317086518f, -0.151301786f, -0.406097472f, 0.190491974f, -0.127845645f, -0.108239189f, 0.27005285f, -0.19976677f, -0.041933924f, -0.2127157f, -0.12182568f, 0.161646008f, 0.00702959672f, 0.229459316f, 0.352021039f, 0.0851163939f, 0.29330644f, 0.444434851f, 0.150133103f, -0.0458928496f, 0.032317996f, 0.0189978331f, -0.0211254209f, 0.23250708f, 0.117629342f, -0.116935037f, -0.03215909f, 0.0847930014f, 0.323520452f, 0.524860859f, 0.0835432783f, 0.276449829f, 0.396389335f, 0.0206882432f, 0.01132931f, -0.00414815033f };
static const float gru_lbr_yh[18] = { 0.150133103f, -0.0458928496f, 0.032317996f, 0.0189978331f, -0.0211254209f, 0.23250708f, 0.117629342f, -0.116935037f, -0.03215909f, -0.00731571764f, 0.174503833f, 0.478258371f, -0.118130662f, 0.111147419f, 0.48187089f, -0.126296371f, 0.00298556685f, 0.22195442f };
static const float rnn_bidi_y[36] = { 0.818758845f, 0.0f, 0.0f, 0.236825407f, 0.0f, 0.0f, -0.155026719f, -0.064947091f, 0.14283967f, -0.0966868773f, -0.00147402589f, 0.528147936f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.499240845f, 0.0379865766f, 0.682314038f, 0.594979107f, 0.861897171f, 0.715785563f, 0.0638604239f, 0.0f, 0.0f, 0.485291898f, 0.0f, 0.0f, 0.0f, 0.699637175f, 0.61083281f, 0.069474414f, -0.0066099437f, 0.00409403443f, -0.00609040586f };
static const float rnn_bidi_yh[12] = { 0.0f, 0.0f, 0.485291898f, 0.0f, 0.0f, 0.0f, -0.155026719f, -0.064947091f, 0.14283967f, -0.0966868773f, -0.00147402589f, 0.528147936f };
static const float lstm_bf_y[12] = { -0.132505819f, -0.115489572f, -0.312483817f, -0.251658052f, -0.465012491f, -0.383415699f, -0.393627286f, -0.333260775f, -0.258264899f, -0.205043137f, -0.0200461373f, -0.0381237157f };
static const float lstm_bf_yh[4] = { -0.465012491f, -0.383415699f, -0.0200461373f, -0.0381237157f };
static const float lstm_bf_yc[4] = { -0.703277588f, -0.640204847f, -0.0507328659f, -0.0877125412f };
static const double sce_mean_z[1] = { 2.62290965 };
static const double sce_mean_lp[24] = { -1.94287854, -1.27585103, -0.750501812, -0.559718752, -0.561429787, -0.801512685, -1.36925766, -2.01992943, -2.71157198, -3.47235904, -4.03142799, -4.35922083, -4.40801232, -4.32739627, -3.96105147, -3.24830268, -2.60970546, -1.91786089, -1.15614858, -0.751751092, -0.545571661, -0.455257396, -0.817120289, -1.36835382 };
static const float sce_none_z[6] = { 1.9428786, 0.561429739, 4.3592205, 1.15614855, 2.60970545, 3.96105123 };
static const float nll_sum_z[1] = { -2.94821358 };

/* ---- running one node through the registry ---------------------------- */

static char err_buf[512];

struct test_attrs {
    int n;
    struct onnx_attr a[8];
};

static void attr_int(struct test_attrs *t, const char *name, int64_t v)
{
    t->a[t->n++] = (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INT, .i = v };
}

static void attr_float(struct test_attrs *t, const char *name, float v)
{
    t->a[t->n++] = (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_FLOAT, .f = v };
}

static void attr_string(struct test_attrs *t, const char *name, const char *v)
{
    t->a[t->n++] = (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_STRING, .s = (char *)v,
                                       .s_len = strlen(v) };
}

static void attr_strings(struct test_attrs *t, const char *name, const char **v, int n)
{
    t->a[t->n++] = (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_STRINGS, .strings = (char **)v,
                                       .n = n };
}

static void attr_floats(struct test_attrs *t, const char *name, float *v, int n)
{
    t->a[t->n++] = (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_FLOATS, .floats = v, .n = n };
}

/* Parses, infers and runs one node; outputs with want[i] get data (caller
 * frees). Returns the first failing stage's status with err_buf set. */
static int run_node(const char *op, int opset, struct test_attrs *attrs, const struct tensor *const *in,
                    int n_in, struct tensor *out_store, const int *want, int n_out, int *version_out)
{
    int version = 0;
    const struct op_def *def = op_registry_find("", op, opset, &version);
    ck_assert_msg(def != NULL, "%s not registered for opset %d", op, opset);
    if (version_out)
        *version_out = version;
    struct onnx_node node = { .name = "n0", .op_type = (char *)op, .domain = "",
                              .n_attrs = attrs ? attrs->n : 0, .attrs = attrs ? attrs->a : NULL };
    void *params = NULL;
    err_buf[0] = 0;
    if (def->parse && def->parse(&node, version, &params, err_buf, sizeof err_buf))
        return -1;
    struct op_env env = { .scratch_alloc = testops_scratch_alloc, .scratch_free = testops_scratch_free,
                          .backend = &backend_cpu, .threads = 1, .err = err_buf, .err_size = sizeof err_buf };
    struct tensor *outs[4] = { 0 };
    for (int i = 0; i < n_out; i++) {
        memset(&out_store[i], 0, sizeof out_store[i]);
        outs[i] = want[i] ? &out_store[i] : NULL;
    }
    struct op_call call = { .def = def, .version = version, .params = params, .node_name = "n0",
                            .n_in = n_in, .in = in, .n_out = n_out, .out = outs, .env = &env };
    int rc = def->infer(&call);
    for (int i = 0; rc == 0 && i < n_out; i++) {
        if (!outs[i])
            continue;
        size_t bytes = tensor_size_bytes(outs[i]);
        outs[i]->data = malloc(bytes ? bytes : 1);
        /* poison, so that anything the kernel forgets to write shows */
        memset(outs[i]->data, 0x7f, bytes);
    }
    if (rc == 0) {
        testops_scratch_live = 0;
        rc = def->kernel[BACKEND_CPU](&call);
        ck_assert_msg(testops_scratch_live == 0, "%s left %d scratch blocks allocated", op, testops_scratch_live);
        struct op_cost cost = def->cost(&call);
        ck_assert_msg(cost.bytes > 0 && cost.flops >= 0, "%s: cost %g flops %g bytes", op, cost.flops, cost.bytes);
    }
    if (params)
        (def->params_free ? def->params_free : free)(params);
    return rc;
}

static void free_outputs(struct tensor *outs, int n)
{
    for (int i = 0; i < n; i++) {
        free(outs[i].data);
        outs[i].data = NULL;
    }
}

static float fill(int64_t i, double seed, double scale)
{
    return (float)(sin(0.37 * (double)i + seed) * scale);
}

static struct tensor make_tensor(int dtype, int rank, const int64_t *dims, void *data)
{
    struct tensor t = { .dtype = dtype, .rank = rank, .data = data };
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

static float *filled(int64_t n, double seed, double scale)
{
    float *p = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        p[i] = fill(i, seed, scale);
    return p;
}

static void expect_close(const char *what, const float *got, const float *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs((double)got[i] - (double)want[i]);
        ck_assert_msg(diff <= tol * (1.0 + fabs((double)want[i])),
                      "%s: expected %.7g, got %.7g at index %lld", what, (double)want[i], (double)got[i],
                      (long long)i);
    }
}

static void expect_close_d(const char *what, const double *got, const double *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs(got[i] - want[i]);
        ck_assert_msg(diff <= tol * (1.0 + fabs(want[i])) || (isnan(got[i]) && isnan(want[i])),
                      "%s: expected %.10g, got %.10g at index %lld", what, want[i], got[i], (long long)i);
    }
}

/* ---- recurrent layers against onnxruntime ----------------------------- */

START_TEST(test_lstm_bidirectional_ort)
{
    const int64_t S = 3, B = 2, I = 3, H = 2, D = 2, G = 4;
    float *x = filled(S * B * I, 0.1, 1.0), *w = filled(D * G * H * I, 0.2, 0.5),
          *r = filled(D * G * H * H, 0.3, 0.5), *b = filled(D * 2 * G * H, 0.4, 0.3),
          *h0 = filled(D * B * H, 0.5, 0.4), *c0 = filled(D * B * H, 0.6, 0.4), *p = filled(D * 3 * H, 0.7, 0.3);
    int32_t sl[2] = { 3, 2 };
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ S, B, I }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, I }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, H }, r);
    struct tensor tb = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 2 * G * H }, b);
    struct tensor tsl = make_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ B }, sl);
    struct tensor th = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, B, H }, h0);
    struct tensor tc = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, B, H }, c0);
    struct tensor tp = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 3 * H }, p);
    const struct tensor *in[8] = { &tx, &tw, &tr, &tb, &tsl, &th, &tc, &tp };
    struct test_attrs a = { 0 };
    attr_int(&a, "hidden_size", H);
    attr_string(&a, "direction", "bidirectional");
    struct tensor out[3];
    int want[3] = { 1, 1, 1 };
    ck_assert_msg(run_node("LSTM", 22, &a, in, 8, out, want, 3, NULL) == 0, "%s", err_buf);
    ck_assert_int_eq(out[0].rank, 4);
    ck_assert(out[0].dims[0] == S && out[0].dims[1] == D && out[0].dims[2] == B && out[0].dims[3] == H);
    expect_close("LSTM Y", out[0].data, lstm_bidi_y, 24, 1e-5);
    expect_close("LSTM Y_h", out[1].data, lstm_bidi_yh, 8, 1e-5);
    expect_close("LSTM Y_c", out[2].data, lstm_bidi_yc, 8, 1e-5);
    free_outputs(out, 3);
    free(x); free(w); free(r); free(b); free(h0); free(c0); free(p);
}
END_TEST

START_TEST(test_gru_reverse_clip_ort)
{
    const int64_t S = 4, B = 3, I = 2, H = 3, D = 1, G = 3;
    float *x = filled(S * B * I, 1.1, 1.5), *w = filled(D * G * H * I, 1.2, 0.6),
          *r = filled(D * G * H * H, 1.3, 0.6), *b = filled(D * 2 * G * H, 1.4, 0.3),
          *h0 = filled(D * B * H, 1.5, 0.4);
    int32_t sl[3] = { 4, 1, 3 };
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ S, B, I }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, I }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, H }, r);
    struct tensor tb = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 2 * G * H }, b);
    struct tensor tsl = make_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ B }, sl);
    struct tensor th = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, B, H }, h0);
    const struct tensor *in[6] = { &tx, &tw, &tr, &tb, &tsl, &th };
    struct test_attrs a = { 0 };
    attr_int(&a, "hidden_size", H);
    attr_string(&a, "direction", "reverse");
    attr_float(&a, "clip", 0.8f);
    struct tensor out[2];
    int want[2] = { 1, 1 };
    ck_assert_msg(run_node("GRU", 22, &a, in, 6, out, want, 2, NULL) == 0, "%s", err_buf);
    expect_close("GRU Y", out[0].data, gru_rev_y, 36, 1e-5);
    expect_close("GRU Y_h", out[1].data, gru_rev_yh, 9, 1e-5);
    free_outputs(out, 2);
    free(x); free(w); free(r); free(b); free(h0);
}
END_TEST

START_TEST(test_gru_linear_before_reset_ort)
{
    const int64_t S = 4, B = 3, I = 2, H = 3, D = 2, G = 3;
    float *x = filled(S * B * I, 1.1, 1.5), *w1 = filled(G * H * I, 1.2, 0.6), *r1 = filled(G * H * H, 1.3, 0.6);
    /* second direction: W with its rows in reverse order * 0.7, R * -0.5 */
    float *w = malloc(D * G * H * I * sizeof(float)), *r = malloc(D * G * H * H * sizeof(float));
    for (int64_t i = 0; i < G * H; i++)
        for (int64_t j = 0; j < I; j++) {
            w[i * I + j] = w1[i * I + j];
            w[G * H * I + i * I + j] = w1[(G * H - 1 - i) * I + j] * 0.7f;
        }
    for (int64_t i = 0; i < G * H * H; i++) {
        r[i] = r1[i];
        r[G * H * H + i] = r1[i] * -0.5f;
    }
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ S, B, I }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, I }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, H }, r);
    const struct tensor *in[6] = { &tx, &tw, &tr, NULL, NULL, NULL };
    struct test_attrs a = { 0 };
    attr_int(&a, "hidden_size", H);
    attr_string(&a, "direction", "bidirectional");
    attr_int(&a, "linear_before_reset", 1);
    struct tensor out[2];
    int want[2] = { 1, 1 };
    ck_assert_msg(run_node("GRU", 22, &a, in, 6, out, want, 2, NULL) == 0, "%s", err_buf);
    expect_close("GRU lbr Y", out[0].data, gru_lbr_y, 72, 1e-5);
    expect_close("GRU lbr Y_h", out[1].data, gru_lbr_yh, 18, 1e-5);
    free_outputs(out, 2);
    free(x); free(w1); free(r1); free(w); free(r);
}
END_TEST

START_TEST(test_rnn_activations_ort)
{
    const int64_t S = 3, B = 2, I = 2, H = 3, D = 2;
    float *x = filled(S * B * I, 2.1, 1.0), *w = filled(D * H * I, 2.2, 0.7), *r = filled(D * H * H, 2.3, 0.5),
          *b = filled(D * 2 * H, 2.4, 0.3);
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ S, B, I }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, H, I }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, H, H }, r);
    struct tensor tb = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 2 * H }, b);
    const struct tensor *in[4] = { &tx, &tw, &tr, &tb };
    const char *acts[2] = { "Relu", "LeakyRelu" };
    float alpha[1] = { 0.1f };
    struct test_attrs a = { 0 };
    attr_int(&a, "hidden_size", H);
    attr_string(&a, "direction", "bidirectional");
    attr_strings(&a, "activations", acts, 2);
    attr_floats(&a, "activation_alpha", alpha, 1);
    struct tensor out[2];
    int want[2] = { 1, 1 };
    ck_assert_msg(run_node("RNN", 22, &a, in, 4, out, want, 2, NULL) == 0, "%s", err_buf);
    expect_close("RNN Y", out[0].data, rnn_bidi_y, S * D * B * H, 1e-5);
    expect_close("RNN Y_h", out[1].data, rnn_bidi_yh, D * B * H, 1e-5);
    free_outputs(out, 2);
    free(x); free(w); free(r); free(b);
}
END_TEST

START_TEST(test_lstm_batch_first_reference)
{
    const int64_t S = 3, B = 2, I = 2, H = 2, D = 1, G = 4;
    float *x = filled(S * B * I, 3.1, 1.0), *w = filled(D * G * H * I, 3.2, 0.5),
          *r = filled(D * G * H * H, 3.3, 0.5), *b = filled(D * 2 * G * H, 3.4, 0.3),
          *h0 = filled(D * B * H, 3.5, 0.4), *c0 = filled(D * B * H, 3.6, 0.4);
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ B, S, I }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, I }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, H }, r);
    struct tensor tb = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 2 * G * H }, b);
    struct tensor th = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ B, D, H }, h0);
    struct tensor tc = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ B, D, H }, c0);
    const struct tensor *in[7] = { &tx, &tw, &tr, &tb, NULL, &th, &tc };
    struct test_attrs a = { 0 };
    attr_int(&a, "hidden_size", H);
    attr_int(&a, "layout", 1);
    struct tensor out[3];
    int want[3] = { 1, 1, 1 };
    int version;
    ck_assert_msg(run_node("LSTM", 21, &a, in, 7, out, want, 3, &version) == 0, "%s", err_buf);
    ck_assert_int_eq(version, 14);
    ck_assert(out[0].dims[0] == B && out[0].dims[1] == S && out[0].dims[2] == D && out[0].dims[3] == H);
    ck_assert(out[1].dims[0] == B && out[1].dims[1] == D && out[1].dims[2] == H);
    expect_close("LSTM layout=1 Y", out[0].data, lstm_bf_y, S * B * H, 1e-5);
    expect_close("LSTM layout=1 Y_h", out[1].data, lstm_bf_yh, B * H, 1e-5);
    expect_close("LSTM layout=1 Y_c", out[2].data, lstm_bf_yc, B * H, 1e-5);
    free_outputs(out, 3);
    free(x); free(w); free(r); free(b); free(h0); free(c0);
}
END_TEST

/* ---- recurrent layers against a plain reference ----------------------- */

struct ref_act {
    const char *name;
    double alpha, beta;
};

struct ref_cfg {
    int kind;                  /* enum rnn_kind */
    const char *direction;
    int layout, opset;
    int64_t S, B, I, H;
    int has_b, has_sl, has_h0, has_c0, has_p;
    float clip;                /* 0: no clip attribute */
    int input_forget, lbr;
    int n_acts;                /* 0: defaults */
    struct ref_act acts[6];
};

static double ref_act_eval(const struct ref_act *a, double x)
{
    const char *n = a->name;
    if (!strcmp(n, "Sigmoid")) return 1.0 / (1.0 + exp(-x));
    if (!strcmp(n, "Tanh")) return tanh(x);
    if (!strcmp(n, "Relu")) return x > 0 ? x : 0;
    if (!strcmp(n, "Affine")) return a->alpha * x + a->beta;
    if (!strcmp(n, "LeakyRelu")) return x >= 0 ? x : a->alpha * x;
    if (!strcmp(n, "ThresholdedRelu")) return x > a->alpha ? x : 0;
    if (!strcmp(n, "ScaledTanh")) return a->alpha * tanh(a->beta * x);
    if (!strcmp(n, "HardSigmoid")) return fmax(0.0, fmin(1.0, a->alpha * x + a->beta));
    if (!strcmp(n, "Elu")) return x >= 0 ? x : a->alpha * (exp(x) - 1.0);
    if (!strcmp(n, "Softsign")) return x / (1.0 + fabs(x));
    if (!strcmp(n, "Softplus")) return log(1.0 + exp(x));
    ck_abort_msg("reference has no activation %s", n);
    return 0;
}

static int ref_uses_alpha(const char *n)
{
    return !strcmp(n, "Affine") || !strcmp(n, "LeakyRelu") || !strcmp(n, "ThresholdedRelu") ||
           !strcmp(n, "ScaledTanh") || !strcmp(n, "HardSigmoid") || !strcmp(n, "Elu");
}

static int ref_uses_beta(const char *n)
{
    return !strcmp(n, "Affine") || !strcmp(n, "ScaledTanh") || !strcmp(n, "HardSigmoid");
}

static int ref_gates(int kind) { return kind == RNN_KIND_LSTM ? 4 : kind == RNN_KIND_GRU ? 3 : 1; }

struct ref_data {
    float *x, *w, *r, *b, *h0, *c0, *p;
    int32_t *sl;
};

/* Straight from the ONNX operator definitions: one time step, one batch
 * row, one gate value at a time, in double. */
static void ref_run(const struct ref_cfg *c, const struct ref_data *in, double *y, double *yh, double *yc)
{
    const int64_t S = c->S, B = c->B, I = c->I, H = c->H, G = ref_gates(c->kind);
    const int D = !strcmp(c->direction, "bidirectional") ? 2 : 1;
    const int per_dir = c->kind == RNN_KIND_LSTM ? 3 : c->kind == RNN_KIND_GRU ? 2 : 1;
    static const struct ref_act dflt[3][3] = {
        [RNN_KIND_RNN] = { { "Tanh" } },
        [RNN_KIND_GRU] = { { "Sigmoid" }, { "Tanh" } },
        [RNN_KIND_LSTM] = { { "Sigmoid" }, { "Tanh" }, { "Tanh" } },
    };
    memset(y, 0, (size_t)(S * D * B * H) * sizeof(double));
    double *h = calloc((size_t)H, sizeof(double)), *cs = calloc((size_t)H, sizeof(double));
    double *pre = calloc((size_t)(G * H), sizeof(double)), *hn = calloc((size_t)H, sizeof(double));
    for (int d = 0; d < D; d++) {
        int reverse = !strcmp(c->direction, "reverse") || d == 1;
        const struct ref_act *f = c->n_acts ? &c->acts[d * per_dir] : dflt[c->kind];
        const float *W = in->w + d * G * H * I, *R = in->r + d * G * H * H;
        const float *Wb = in->b ? in->b + d * 2 * G * H : NULL;
        const float *Rb = Wb ? Wb + G * H : NULL;
        const float *P = in->p ? in->p + d * 3 * H : NULL;
        for (int64_t b = 0; b < B; b++) {
            int64_t state = c->layout ? (b * D + d) * H : (d * B + b) * H;
            for (int64_t j = 0; j < H; j++) {
                h[j] = in->h0 ? in->h0[state + j] : 0.0;
                cs[j] = in->c0 ? in->c0[state + j] : 0.0;
            }
            int64_t len = in->sl ? in->sl[b] : S;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = reverse ? len - 1 - s : s;
                const float *xt = in->x + (c->layout ? (b * S + t) * I : (t * B + b) * I);
                /* X·W^T + Wb for every gate; R·H + Rb for all but GRU's h */
                for (int64_t q = 0; q < G * H; q++) {
                    double v = Wb ? Wb[q] : 0.0;
                    for (int64_t i = 0; i < I; i++)
                        v += (double)W[q * I + i] * xt[i];
                    if (c->kind != RNN_KIND_GRU || q < 2 * H) {
                        v += Rb ? Rb[q] : 0.0;
                        for (int64_t k = 0; k < H; k++)
                            v += (double)R[q * H + k] * h[k];
                    }
                    pre[q] = v;
                }
#define CLIP(v) (c->clip > 0 ? fmax(-c->clip, fmin(c->clip, (v))) : (v))
                if (c->kind == RNN_KIND_RNN) {
                    for (int64_t j = 0; j < H; j++)
                        hn[j] = ref_act_eval(&f[0], CLIP(pre[j]));
                } else if (c->kind == RNN_KIND_GRU) {
                    for (int64_t j = 0; j < H; j++) {
                        double z = ref_act_eval(&f[0], CLIP(pre[j]));
                        double rr = ref_act_eval(&f[0], CLIP(pre[H + j]));
                        double acc = pre[2 * H + j];
                        double rh = Rb ? Rb[2 * H + j] : 0.0;
                        for (int64_t k = 0; k < H; k++) {
                            double rk = ref_act_eval(&f[0], CLIP(pre[H + k]));
                            rh += (double)R[(2 * H + j) * H + k] * (c->lbr ? h[k] : rk * h[k]);
                        }
                        acc += c->lbr ? rr * rh : rh;
                        double hh = ref_act_eval(&f[1], CLIP(acc));
                        hn[j] = (1.0 - z) * hh + z * h[j];
                    }
                } else {
                    for (int64_t j = 0; j < H; j++) {
                        double gi = ref_act_eval(&f[0], CLIP(pre[j] + (P ? P[j] * cs[j] : 0.0)));
                        double gf = c->input_forget ? 1.0 - gi
                                                    : ref_act_eval(&f[0], CLIP(pre[2 * H + j] + (P ? P[2 * H + j] * cs[j] : 0.0)));
                        double gc = ref_act_eval(&f[1], CLIP(pre[3 * H + j]));
                        double cn = gf * cs[j] + gi * gc;
                        double go = ref_act_eval(&f[0], CLIP(pre[H + j] + (P ? P[H + j] * cn : 0.0)));
                        hn[j] = go * ref_act_eval(&f[2], cn);
                        cs[j] = cn;
                    }
                }
#undef CLIP
                for (int64_t j = 0; j < H; j++) {
                    h[j] = hn[j];
                    int64_t off = c->layout ? ((b * S + t) * D + d) * H : ((t * D + d) * B + b) * H;
                    y[off + j] = h[j];
                }
            }
            for (int64_t j = 0; j < H; j++) {
                yh[state + j] = h[j];
                if (yc)
                    yc[state + j] = cs[j];
            }
        }
    }
    free(h); free(cs); free(pre); free(hn);
}

static void compare_fd(const char *what, const float *got, const double *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)got[i] - want[i]) <= tol * (1.0 + fabs(want[i])),
                      "%s: expected %.7g, got %.7g at index %lld", what, want[i], (double)got[i], (long long)i);
}

static const char *const kind_names[3] = { "RNN", "GRU", "LSTM" };

/* Runs cfg through the registry and the reference and compares all outputs;
 * then again with only Y_h (then only Y) requested, which must reproduce the
 * same bits. */
static void check_against_reference(const struct ref_cfg *c, const char *label)
{
    const int64_t S = c->S, B = c->B, I = c->I, H = c->H, G = ref_gates(c->kind);
    const int64_t D = !strcmp(c->direction, "bidirectional") ? 2 : 1;
    struct ref_data in = { 0 };
    in.x = filled(S * B * I, 0.11, 1.2);
    in.w = filled(D * G * H * I, 0.23, 0.6);
    in.r = filled(D * G * H * H, 0.37, 0.5);
    if (c->has_b)
        in.b = filled(D * 2 * G * H, 0.41, 0.4);
    if (c->has_h0)
        in.h0 = filled(D * B * H, 0.53, 0.5);
    if (c->has_c0 && c->kind == RNN_KIND_LSTM)
        in.c0 = filled(D * B * H, 0.67, 0.5);
    if (c->has_p && c->kind == RNN_KIND_LSTM)
        in.p = filled(D * 3 * H, 0.79, 0.4);
    if (c->has_sl) {
        in.sl = malloc((size_t)B * sizeof(int32_t));
        for (int64_t b = 0; b < B; b++)
            in.sl[b] = (int32_t)(S - (b * 2) % S);
    }
    int64_t xd[3] = { c->layout ? B : S, c->layout ? S : B, I };
    int64_t sd[3] = { c->layout ? B : D, c->layout ? D : B, H };
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, xd, in.x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, I }, in.w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, H }, in.r);
    struct tensor tb = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 2 * G * H }, in.b);
    struct tensor tsl = make_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ B }, in.sl);
    struct tensor th = make_tensor(ONNX_DTYPE_FLOAT, 3, sd, in.h0);
    struct tensor tc = make_tensor(ONNX_DTYPE_FLOAT, 3, sd, in.c0);
    struct tensor tp = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 3 * H }, in.p);
    const struct tensor *ins[8] = { &tx, &tw, &tr, in.b ? &tb : NULL, in.sl ? &tsl : NULL, in.h0 ? &th : NULL,
                                    in.c0 ? &tc : NULL, in.p ? &tp : NULL };
    int n_in = c->kind == RNN_KIND_LSTM ? 8 : 6;
    int n_out = c->kind == RNN_KIND_LSTM ? 3 : 2;

    struct test_attrs a = { 0 };
    const char *act_names[6];
    float alphas[6], betas[6];
    int na = 0, nb = 0;
    attr_int(&a, "hidden_size", H);
    attr_string(&a, "direction", c->direction);
    if (c->layout)
        attr_int(&a, "layout", 1);
    if (c->clip > 0)
        attr_float(&a, "clip", c->clip);
    if (c->input_forget)
        attr_int(&a, "input_forget", 1);
    if (c->lbr)
        attr_int(&a, "linear_before_reset", 1);
    if (c->n_acts) {
        for (int i = 0; i < c->n_acts; i++) {
            act_names[i] = c->acts[i].name;
            if (ref_uses_alpha(c->acts[i].name))
                alphas[na++] = (float)c->acts[i].alpha;
            if (ref_uses_beta(c->acts[i].name))
                betas[nb++] = (float)c->acts[i].beta;
        }
        attr_strings(&a, "activations", act_names, c->n_acts);
        if (na)
            attr_floats(&a, "activation_alpha", alphas, na);
        if (nb)
            attr_floats(&a, "activation_beta", betas, nb);
    }

    double *y = malloc((size_t)(S * D * B * H) * sizeof(double));
    double *yh = malloc((size_t)(D * B * H) * sizeof(double)), *yc = malloc((size_t)(D * B * H) * sizeof(double));
    ref_run(c, &in, y, yh, c->kind == RNN_KIND_LSTM ? yc : NULL);

    struct tensor out[3];
    int all[3] = { 1, 1, 1 };
    char what[160];
    ck_assert_msg(run_node(kind_names[c->kind], c->opset, &a, ins, n_in, out, all, n_out, NULL) == 0,
                  "%s: %s", label, err_buf);
    snprintf(what, sizeof what, "%s Y", label);
    compare_fd(what, out[0].data, y, S * D * B * H, 2e-5);
    snprintf(what, sizeof what, "%s Y_h", label);
    compare_fd(what, out[1].data, yh, D * B * H, 2e-5);
    if (c->kind == RNN_KIND_LSTM) {
        snprintf(what, sizeof what, "%s Y_c", label);
        compare_fd(what, out[2].data, yc, D * B * H, 2e-5);
    }

    struct tensor only[3];
    int want_h[3] = { 0, 1, 0 };
    ck_assert_msg(run_node(kind_names[c->kind], c->opset, &a, ins, n_in, only, want_h, n_out, NULL) == 0,
                  "%s (Y_h only): %s", label, err_buf);
    ck_assert_msg(!memcmp(only[1].data, out[1].data, tensor_size_bytes(&out[1])),
                  "%s: Y_h differs when Y is not requested", label);
    free_outputs(only, n_out);
    int want_y[3] = { 1, 0, 0 };
    ck_assert_msg(run_node(kind_names[c->kind], c->opset, &a, ins, n_in, only, want_y, 1, NULL) == 0,
                  "%s (Y only): %s", label, err_buf);
    ck_assert_msg(!memcmp(only[0].data, out[0].data, tensor_size_bytes(&out[0])),
                  "%s: Y differs when Y_h is not requested", label);
    free_outputs(only, 1);

    free_outputs(out, n_out);
    free(y); free(yh); free(yc);
    free(in.x); free(in.w); free(in.r); free(in.b); free(in.h0); free(in.c0); free(in.p); free(in.sl);
}

static const struct ref_act custom_acts[3][6] = {
    [RNN_KIND_RNN] = { { "LeakyRelu", 0.2, 0 }, { "ScaledTanh", 0.5, 2.0 } },
    [RNN_KIND_GRU] = { { "HardSigmoid", 0.25, 0.55 }, { "Affine", 0.6, 0.1 },
                       { "Sigmoid", 0, 0 }, { "Softsign", 0, 0 } },
    [RNN_KIND_LSTM] = { { "HardSigmoid", 0.3, 0.4 }, { "ScaledTanh", 0.9, 1.1 }, { "Softsign", 0, 0 },
                        { "Sigmoid", 0, 0 }, { "Elu", 0.8, 0 }, { "Softplus", 0, 0 } },
};

START_TEST(test_recurrent_sweep)
{
    static const char *const dirs[3] = { "forward", "reverse", "bidirectional" };
    int k = 0;
    for (int kind = 0; kind < 3; kind++)
        for (int dir = 0; dir < 3; dir++)
            for (int layout = 0; layout < 2; layout++)
                for (int variant = 0; variant < 2; variant++, k++) {
                    struct ref_cfg c = {
                        .kind = kind, .direction = dirs[dir], .layout = layout,
                        .opset = layout ? 14 + 8 * variant : (variant ? 22 : 7),
                        .S = 3 + k % 3, .B = 2 + k % 3, .I = 1 + k % 4, .H = 2 + k % 3,
                        .has_b = (k % 3) != 1, .has_sl = variant == 1 || k % 5 == 0,
                        .has_h0 = (k % 2) == 0, .has_c0 = (k % 4) < 2, .has_p = (k % 3) != 2,
                        .clip = (k % 4 == 1) ? 0.6f : 0.0f, .input_forget = kind == RNN_KIND_LSTM && k % 5 == 2,
                        .lbr = variant,
                    };
                    if (k % 3 == 0) {
                        int per = kind == RNN_KIND_LSTM ? 3 : kind == RNN_KIND_GRU ? 2 : 1;
                        c.n_acts = per * (dir == 2 ? 2 : 1);
                        memcpy(c.acts, custom_acts[kind], sizeof c.acts);
                    }
                    char label[128];
                    snprintf(label, sizeof label, "%s %s layout=%d case %d", kind_names[kind], dirs[dir], layout, k);
                    check_against_reference(&c, label);
                }
}
END_TEST

/* Big enough for the OpenMP branches; the result must match the reference
 * and be bit-identical from run to run. */
START_TEST(test_recurrent_large_deterministic)
{
    for (int kind = 0; kind < 3; kind++) {
        struct ref_cfg c = { .kind = kind, .direction = "bidirectional", .opset = 22, .S = 5, .B = 72,
                             .I = 16, .H = 40, .has_b = 1, .has_sl = 1, .has_h0 = 1, .has_c0 = 1,
                             .has_p = 1, .lbr = 0 };
        char label[64];
        snprintf(label, sizeof label, "large %s", kind_names[kind]);
        check_against_reference(&c, label);
    }
    const int64_t S = 4, B = 64, I = 8, H = 48, G = 4;
    float *x = filled(S * B * I, 0.5, 1.0), *w = filled(G * H * I, 0.6, 0.3), *r = filled(G * H * H, 0.7, 0.2);
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ S, B, I }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, G * H, I }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, G * H, H }, r);
    const struct tensor *in[3] = { &tx, &tw, &tr };
    struct tensor o1[3], o2[3];
    int want[3] = { 1, 1, 1 };
    ck_assert_msg(run_node("LSTM", 22, NULL, in, 3, o1, want, 3, NULL) == 0, "%s", err_buf);
    ck_assert_msg(run_node("LSTM", 22, NULL, in, 3, o2, want, 3, NULL) == 0, "%s", err_buf);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(!memcmp(o1[i].data, o2[i].data, tensor_size_bytes(&o1[i])),
                      "LSTM output %d differs between two identical runs", i);
    free_outputs(o1, 3);
    free_outputs(o2, 3);
    free(x); free(w); free(r);
}
END_TEST

/* The gradient kernels walk back through time in chunks, each replayed from
 * the state at its start (rnn_chunk_steps_set): for every kind,
 * direction, layout, sequence lengths, peepholes and clip, chunks of 1, 2
 * and 4 steps give the one-chunk gradients (which gradcheck checks against
 * finite differences) to float rounding, and the same bits run to run. */
static int run_grad_node(const char *op, struct test_attrs *attrs, const struct tensor *const *in,
                         struct tensor *out, int n_out)
{
    int version = 0;
    const struct op_def *def = op_registry_find("dtrexec", op, 1, &version);
    ck_assert_msg(def != NULL, "%s not registered", op);
    struct onnx_node node = { .name = "g0", .op_type = (char *)op, .domain = "dtrexec",
                              .n_attrs = attrs->n, .attrs = attrs->a };
    void *params = NULL;
    err_buf[0] = 0;
    if (def->parse && def->parse(&node, version, &params, err_buf, sizeof err_buf))
        return -1;
    struct op_env env = { .scratch_alloc = testops_scratch_alloc, .scratch_free = testops_scratch_free,
                          .backend = &backend_cpu, .threads = 1, .err = err_buf, .err_size = sizeof err_buf };
    struct tensor *outs[7];
    for (int i = 0; i < n_out; i++) {
        memset(&out[i], 0, sizeof out[i]);
        outs[i] = &out[i];
    }
    struct op_call call = { .def = def, .version = version, .params = params, .node_name = "g0",
                            .n_in = 11, .in = in, .n_out = n_out, .out = outs, .env = &env };
    int rc = def->infer(&call);
    for (int i = 0; rc == 0 && i < n_out; i++) {
        size_t bytes = tensor_size_bytes(outs[i]);
        outs[i]->data = malloc(bytes ? bytes : 1);
        memset(outs[i]->data, 0x7f, bytes);
    }
    if (rc == 0) {
        testops_scratch_live = 0;
        rc = def->kernel[BACKEND_CPU](&call);
        ck_assert_msg(testops_scratch_live == 0, "%s left %d scratch blocks allocated", op, testops_scratch_live);
    }
    free(params);
    return rc;
}

START_TEST(test_recurrent_grad_chunks)
{
    static const char *const ops[3] = { [RNN_KIND_RNN] = "RNNGrad", [RNN_KIND_GRU] = "GRUGrad",
                                        [RNN_KIND_LSTM] = "LSTMGrad" };
    static const char *const dirs[3] = { "forward", "reverse", "bidirectional" };
    const int64_t S = 7, B = 3, I = 5, H = 4;
    int k = 0;
    for (int kind = 0; kind < 3; kind++)
        for (int dir = 0; dir < 3; dir++)
            for (int variant = 0; variant < 2; variant++, k++) {
                const int lstm = kind == RNN_KIND_LSTM, D = dir == 2 ? 2 : 1, G = rnn_gate_count(kind);
                const int layout = variant, has_sl = variant || k % 3 == 0;
                struct test_attrs a = { 0 };
                attr_string(&a, "direction", dirs[dir]);
                attr_int(&a, "hidden_size", H);
                attr_int(&a, "layout", layout);
                if (k % 4 == 1)
                    attr_float(&a, "clip", 0.7f);
                if (kind == RNN_KIND_GRU)
                    attr_int(&a, "linear_before_reset", variant);
                int64_t xd[3] = { S, B, I }, sd[3] = { D, B, H }, yd[4] = { S, D, B, H };
                if (layout) {
                    xd[0] = B; xd[1] = S;
                    sd[0] = B; sd[1] = D;
                    yd[0] = B; yd[1] = S; yd[2] = D;
                }
                float *x = filled(S * B * I, 0.1 + k, 1.0), *w = filled(D * G * H * I, 0.7 + k, 0.5);
                float *r = filled(D * G * H * H, 1.3 + k, 0.5), *bb = filled(D * 2 * G * H, 1.9 + k, 0.3);
                float *h0 = filled(D * B * H, 2.3 + k, 0.4), *c0 = filled(D * B * H, 2.9 + k, 0.4);
                float *pp = filled(D * 3 * H, 3.1 + k, 0.3), *dy = filled(S * D * B * H, 3.7 + k, 1.0);
                float *dyh = filled(D * B * H, 4.1 + k, 1.0), *dyc = filled(D * B * H, 4.3 + k, 1.0);
                int32_t sl[3] = { 7, 3, 5 };
                if (k % 2)
                    sl[1] = 0;
                struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, xd, x);
                struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, I }, w);
                struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ D, G * H, H }, r);
                struct tensor tb = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 2 * G * H }, bb);
                struct tensor tsl = make_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ B }, sl);
                struct tensor th0 = make_tensor(ONNX_DTYPE_FLOAT, 3, sd, h0);
                struct tensor tc0 = make_tensor(ONNX_DTYPE_FLOAT, 3, sd, c0);
                struct tensor tp = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ D, 3 * H }, pp);
                struct tensor tdy = make_tensor(ONNX_DTYPE_FLOAT, 4, yd, dy);
                struct tensor tdyh = make_tensor(ONNX_DTYPE_FLOAT, 3, sd, dyh);
                struct tensor tdyc = make_tensor(ONNX_DTYPE_FLOAT, 3, sd, dyc);
                const struct tensor *in[11] = { &tx, &tw, &tr, &tb, has_sl ? &tsl : NULL, &th0,
                                                lstm ? &tc0 : NULL, lstm && k % 3 != 2 ? &tp : NULL,
                                                &tdy, &tdyh, lstm ? &tdyc : NULL };
                const int n_out = lstm ? 7 : 5;
                struct tensor whole[7], again[7], part[7];
                int64_t saved = rnn_chunk_steps_set(0);
                ck_assert_msg(!run_grad_node(ops[kind], &a, in, whole, n_out), "%s case %d: %s", ops[kind], k, err_buf);
                static const int64_t chunk_steps[3] = { 1, 2, 4 };
                for (int cs = 0; cs < 3; cs++) {
                    rnn_chunk_steps_set(chunk_steps[cs]);
                    ck_assert_msg(!run_grad_node(ops[kind], &a, in, part, n_out) &&
                                  !run_grad_node(ops[kind], &a, in, again, n_out),
                                  "%s case %d chunks of %lld: %s", ops[kind], k, (long long)chunk_steps[cs], err_buf);
                    for (int o = 0; o < n_out; o++) {
                        char what[128];
                        snprintf(what, sizeof what, "%s %s layout=%d case %d chunks of %lld, output %d", ops[kind],
                                 dirs[dir], layout, k, (long long)chunk_steps[cs], o);
                        expect_close(what, part[o].data, whole[o].data, (int64_t)tensor_numel(&whole[o]), 1e-5);
                        ck_assert_msg(!memcmp(part[o].data, again[o].data, tensor_size_bytes(&part[o])),
                                      "%s: not the same bits run to run", what);
                    }
                    free_outputs(part, n_out);
                    free_outputs(again, n_out);
                }
                /* the forward op, chunked the same way */
                const int n_fwd = lstm ? 3 : 2, want[3] = { 1, 1, 1 };
                struct tensor fw[3], fc[3];
                rnn_chunk_steps_set(0);
                ck_assert_msg(!run_node(kind_names[kind], 22, &a, in, lstm ? 8 : 6, fw, want, n_fwd, NULL),
                              "%s case %d: %s", kind_names[kind], k, err_buf);
                for (int cs = 0; cs < 3; cs++) {
                    rnn_chunk_steps_set(chunk_steps[cs]);
                    ck_assert_msg(!run_node(kind_names[kind], 22, &a, in, lstm ? 8 : 6, fc, want, n_fwd, NULL),
                                  "%s case %d: %s", kind_names[kind], k, err_buf);
                    for (int o = 0; o < n_fwd; o++) {
                        char what[128];
                        snprintf(what, sizeof what, "%s %s layout=%d case %d chunks of %lld, output %d",
                                 kind_names[kind], dirs[dir], layout, k, (long long)chunk_steps[cs], o);
                        expect_close(what, fc[o].data, fw[o].data, (int64_t)tensor_numel(&fw[o]), 1e-6);
                    }
                    free_outputs(fc, n_fwd);
                }
                free_outputs(fw, n_fwd);
                rnn_chunk_steps_set(saved);
                free_outputs(whole, n_out);
                free(x); free(w); free(r); free(bb); free(h0); free(c0); free(pp); free(dy); free(dyh); free(dyc);
            }
}
END_TEST

/* The saved buffers a training version reads: consistent with the outputs
 * and with the LSTM equations. */
START_TEST(test_lstm_saved_state)
{
    struct rnn_params p = { .kind = RNN_KIND_LSTM, .direction = RNN_DIRECTION_BIDIRECTIONAL,
                            .num_directions = 2, .acts_per_dir = 3, .has_clip = 1, .clip = 0.9f };
    for (int i = 0; i < 6; i++)
        p.acts[i] = (struct rnn_act){ .kind = i % 3 == 0 ? RNN_ACT_SIGMOID : RNN_ACT_TANH };
    struct rnn_dims d = { .seq = 4, .batch = 3, .input = 3, .hidden = 5, .dirs = 2 };
    const int64_t G = 4, H = d.hidden, rows = d.dirs * d.seq * d.batch;
    float *x = filled(d.seq * d.batch * d.input, 0.1, 1.0), *w = filled(2 * G * H * d.input, 0.2, 0.7),
          *r = filled(2 * G * H * H, 0.3, 0.6), *pp = filled(2 * 3 * H, 0.4, 0.5);
    int32_t lens[3] = { 4, 2, 3 };
    float *y = malloc((size_t)(d.seq * 2 * d.batch * H) * sizeof(float));
    float *yh = malloc((size_t)(2 * d.batch * H) * sizeof(float)), *yc = malloc((size_t)(2 * d.batch * H) * sizeof(float));
    struct rnn_saved sv = {
        .gates = calloc((size_t)(rows * G * H), sizeof(float)),
        .gates_pre = calloc((size_t)(rows * G * H), sizeof(float)),
        .cells = calloc((size_t)(rows * H), sizeof(float)),
        .hiddens = calloc((size_t)(rows * H), sizeof(float)),
    };
    float *work = malloc(rnn_work_floats(&p, &d) * sizeof(float));
    struct rnn_io io = { .x = x, .w = w, .r = r, .p = pp, .seq_lens = lens, .y = y, .y_h = yh, .y_c = yc };
    rnn_forward_f32(&p, &d, &io, &sv, work);
    for (int dir = 0; dir < 2; dir++)
        for (int64_t b = 0; b < d.batch; b++)
            for (int64_t t = 0; t < lens[b]; t++) {
                int64_t row = (dir * d.seq + t) * d.batch + b;
                const float *g = sv.gates + row * G * H, *pre = sv.gates_pre + row * G * H;
                const float *cell = sv.cells + row * H, *hid = sv.hiddens + row * H;
                const float *yrow = y + ((t * 2 + dir) * d.batch + b) * H;
                for (int64_t j = 0; j < H; j++) {
                    ck_assert_msg(hid[j] == yrow[j], "saved H differs from Y at t=%lld b=%lld", (long long)t, (long long)b);
                    float o = g[H + j];
                    ck_assert_msg(fabsf(hid[j] - o * tanhf(cell[j])) < 1e-6f, "H != o*tanh(C) at t=%lld", (long long)t);
                    float pi = fmaxf(-0.9f, fminf(0.9f, pre[j]));
                    ck_assert_msg(fabsf(g[j] - 1.0f / (1.0f + expf(-pi))) < 1e-6f, "i gate != sigmoid(clip(pre))");
                }
                /* the last step of each direction is what Y_h and Y_c hold */
                int64_t last = dir == 0 ? lens[b] - 1 : 0;
                if (t == last)
                    for (int64_t j = 0; j < H; j++) {
                        ck_assert(yc[(dir * d.batch + b) * H + j] == cell[j]);
                        ck_assert(yh[(dir * d.batch + b) * H + j] == hid[j]);
                    }
            }
    free(x); free(w); free(r); free(pp); free(y); free(yh); free(yc); free(work);
    free(sv.gates); free(sv.gates_pre); free(sv.cells); free(sv.hiddens);
}
END_TEST

/* onnxruntime: a length-0 sequence gives Y_h = 0 (not initial_h) and Y = 0. */
START_TEST(test_zero_length_sequence)
{
    const int64_t S = 2, B = 2;
    float x[4] = { 1, 1, 1, 1 }, w[3] = { 1, 1, 1 }, r[3] = { 1, 1, 1 }, h0[2] = { 0.5f, 0.5f };
    int32_t lens[2] = { 0, 2 };
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ S, B, 1 }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, 3, 1 }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, 3, 1 }, r);
    struct tensor tsl = make_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ B }, lens);
    struct tensor th = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, B, 1 }, h0);
    const struct tensor *in[6] = { &tx, &tw, &tr, NULL, &tsl, &th };
    struct tensor out[2];
    int want[2] = { 1, 1 };
    ck_assert_msg(run_node("GRU", 22, NULL, in, 6, out, want, 2, NULL) == 0, "%s", err_buf);
    static const float y[4] = { 0.0f, 0.5706418f, 0.0f, 0.6273391f }, yh[2] = { 0.0f, 0.6273391f };
    expect_close("GRU Y, length 0", out[0].data, y, 4, 1e-6);
    expect_close("GRU Y_h, length 0", out[1].data, yh, 2, 1e-6);
    free_outputs(out, 2);
}
END_TEST

START_TEST(test_recurrent_errors)
{
    const int64_t S = 2, B = 2, I = 3, H = 2;
    float *x = filled(S * B * I, 0, 1), *w = filled(4 * H * I, 1, 1), *r = filled(4 * H * H, 2, 1);
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ S, B, I }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, 4 * H, I }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, 4 * H, H }, r);
    struct tensor tw_bad = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, 4 * H, I - 1 }, w);
    struct tensor out[3];
    int want[3] = { 1, 1, 1 };

    const struct tensor *bad_w[3] = { &tx, &tw_bad, &tr };
    ck_assert(run_node("LSTM", 22, NULL, bad_w, 3, out, want, 3, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "W is float32[1,8,2]") && strstr(err_buf, "[1,8,3]"), "message: %s", err_buf);

    int32_t lens[2] = { 2, 3 };
    struct tensor tsl = make_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ B }, lens);
    const struct tensor *bad_len[5] = { &tx, &tw, &tr, NULL, &tsl };
    ck_assert(run_node("LSTM", 22, NULL, bad_len, 5, out, want, 3, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "sequence_lens[1] = 3"), "message: %s", err_buf);
    free_outputs(out, 3);

    const struct tensor *ok[3] = { &tx, &tw, &tr };
    struct test_attrs a = { 0 };
    attr_string(&a, "direction", "sideways");
    ck_assert(run_node("LSTM", 22, &a, ok, 3, out, want, 3, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "n0") && strstr(err_buf, "sideways"), "message: %s", err_buf);

    const char *swish[3] = { "Sigmoid", "Swish", "Tanh" };
    struct test_attrs b = { 0 };
    attr_strings(&b, "activations", swish, 3);
    ck_assert(run_node("LSTM", 22, &b, ok, 3, out, want, 3, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "Swish"), "message: %s", err_buf);

    struct test_attrs cnt = { 0 };
    attr_strings(&cnt, "activations", swish, 2);
    ck_assert(run_node("LSTM", 22, &cnt, ok, 3, out, want, 3, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "2 activations"), "message: %s", err_buf);

    double xd[12] = { 0 };
    struct tensor txd = make_tensor(ONNX_DTYPE_DOUBLE, 3, (int64_t[]){ S, B, I }, xd);
    const struct tensor *dbl[3] = { &txd, &tw, &tr };
    ck_assert(run_node("LSTM", 22, NULL, dbl, 3, out, want, 3, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "float32"), "message: %s", err_buf);

    struct test_attrs hs = { 0 };
    attr_int(&hs, "hidden_size", 3);
    ck_assert(run_node("LSTM", 22, &hs, ok, 3, out, want, 3, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "W is"), "hidden_size mismatch message: %s", err_buf);
    free(x); free(w); free(r);
}
END_TEST

START_TEST(test_recurrent_versions)
{
    static const char *const ops[3] = { "LSTM", "GRU", "RNN" };
    for (int i = 0; i < 3; i++) {
        int v = 0;
        ck_assert_ptr_null(op_registry_find("", ops[i], 6, &v));
        ck_assert_ptr_nonnull(op_registry_find("", ops[i], 7, &v));
        ck_assert_int_eq(v, 7);
        op_registry_find("", ops[i], 13, &v);
        ck_assert_int_eq(v, 7);
        op_registry_find("", ops[i], 21, &v);
        ck_assert_int_eq(v, 14);
        op_registry_find("", ops[i], 25, &v);
        ck_assert_int_eq(v, 22);
    }
    /* layout is an opset-14 attribute: an opset-13 model keeps seq-major */
    const int64_t S = 2, B = 3, I = 1, H = 1;
    float x[6] = { 1, 2, 3, 4, 5, 6 }, w[1] = { 1 }, r[1] = { 0 };
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ S, B, I }, x);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, 1, 1 }, w);
    struct tensor tr = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 1, 1, 1 }, r);
    const struct tensor *in[3] = { &tx, &tw, &tr };
    struct test_attrs a = { 0 };
    attr_int(&a, "layout", 1);
    const char *relu[1] = { "Relu" };
    attr_strings(&a, "activations", relu, 1);
    struct tensor out[2];
    int want[2] = { 1, 1 };
    ck_assert_msg(run_node("RNN", 13, &a, in, 3, out, want, 2, NULL) == 0, "%s", err_buf);
    ck_assert(out[0].dims[0] == S && out[0].dims[2] == B);
    /* with R = 0 and W = 1, Y is relu(x) in X's own layout */
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(((float *)out[0].data)[i], x[i]);
    ck_assert_float_eq(((float *)out[1].data)[0], 4);
    free_outputs(out, 2);
    ck_assert_msg(run_node("RNN", 14, &a, in, 3, out, want, 2, NULL) == 0, "%s", err_buf);
    ck_assert(out[0].dims[0] == S && out[0].dims[1] == B);   /* [batch=2, seq=3, 1, 1] */
    ck_assert_float_eq(((float *)out[1].data)[0], 3);
    ck_assert_float_eq(((float *)out[1].data)[1], 6);
    free_outputs(out, 2);
    (void)H;
}
END_TEST

/* ---- losses ----------------------------------------------------------- */

static int64_t sce_targets[6] = { 0, 1, 3, 2, 1, 0 };

START_TEST(test_sce_mean_weight_ii_double)
{
    double x[24], w[4] = { 0.5, 1.0, 2.0, 1.5 };
    for (int i = 0; i < 24; i++)
        x[i] = sin(0.37 * i + 0.3) * 2.0;
    struct tensor tx = make_tensor(ONNX_DTYPE_DOUBLE, 3, (int64_t[]){ 2, 4, 3 }, x);
    struct tensor ty = make_tensor(ONNX_DTYPE_INT64, 2, (int64_t[]){ 2, 3 }, sce_targets);
    struct tensor tw = make_tensor(ONNX_DTYPE_DOUBLE, 1, (int64_t[]){ 4 }, w);
    const struct tensor *in[3] = { &tx, &ty, &tw };
    struct test_attrs a = { 0 };
    attr_string(&a, "reduction", "mean");
    attr_int(&a, "ignore_index", 1);
    struct tensor out[2];
    int want[2] = { 1, 1 };
    ck_assert_msg(run_node("SoftmaxCrossEntropyLoss", 13, &a, in, 3, out, want, 2, NULL) == 0, "%s", err_buf);
    ck_assert_int_eq(out[0].rank, 0);
    ck_assert_int_eq(out[0].dtype, ONNX_DTYPE_DOUBLE);
    ck_assert(out[1].rank == 3 && out[1].dims[1] == 4);
    expect_close_d("SCE mean", out[0].data, sce_mean_z, 1, 1e-8);
    expect_close_d("SCE log_prob", out[1].data, sce_mean_lp, 24, 1e-8);
    free_outputs(out, 2);
}
END_TEST

START_TEST(test_sce_none_float)
{
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)(sin(0.37 * i + 0.3) * 2.0);
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 3, (int64_t[]){ 2, 4, 3 }, x);
    struct tensor ty = make_tensor(ONNX_DTYPE_INT64, 2, (int64_t[]){ 2, 3 }, sce_targets);
    const struct tensor *in[2] = { &tx, &ty };
    struct test_attrs a = { 0 };
    attr_string(&a, "reduction", "none");
    struct tensor out[2];
    int want[2] = { 1, 0 };
    ck_assert_msg(run_node("SoftmaxCrossEntropyLoss", 12, &a, in, 2, out, want, 2, NULL) == 0, "%s", err_buf);
    ck_assert(out[0].rank == 2 && out[0].dims[0] == 2 && out[0].dims[1] == 3);
    expect_close("SCE none", out[0].data, sce_none_z, 6, 1e-6);
    free_outputs(out, 2);
}
END_TEST

START_TEST(test_nll_sum_weight_float)
{
    float x[9], w[3] = { 1, 2, 3 };
    for (int i = 0; i < 9; i++)
        x[i] = fill(i, 1.0, 1.0);
    int32_t y[3] = { 2, 0, 1 };   /* int32 targets are allowed too */
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ 3, 3 }, x);
    struct tensor ty = make_tensor(ONNX_DTYPE_INT32, 1, (int64_t[]){ 3 }, y);
    struct tensor tw = make_tensor(ONNX_DTYPE_FLOAT, 1, (int64_t[]){ 3 }, w);
    const struct tensor *in[3] = { &tx, &ty, &tw };
    struct test_attrs a = { 0 };
    attr_string(&a, "reduction", "sum");
    struct tensor out[1];
    int want[1] = { 1 };
    int version;
    ck_assert_msg(run_node("NegativeLogLikelihoodLoss", 22, &a, in, 3, out, want, 1, &version) == 0, "%s", err_buf);
    ck_assert_int_eq(version, 22);
    expect_close("NLL sum", out[0].data, nll_sum_z, 1, 1e-6);
    free_outputs(out, 1);
}
END_TEST

/* Reference: ONNX's definition, one position at a time, in double. */
static void ref_loss(int sce, int reduction, const double *x, const int64_t *y, const double *w, int has_ii,
                     int64_t ii, int64_t n, int64_t c, int64_t d, double *out, double *logp)
{
    double sum = 0, wsum = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++) {
            const double *col = x + i * c * d + k;
            if (sce) {
                double mx = -INFINITY, s = 0;
                for (int64_t j = 0; j < c; j++)
                    mx = fmax(mx, col[j * d]);
                for (int64_t j = 0; j < c; j++)
                    s += exp(col[j * d] - mx);
                for (int64_t j = 0; j < c; j++)
                    logp[i * c * d + j * d + k] = col[j * d] - mx - log(s);
                col = logp + i * c * d + k;
            }
            int64_t t = y[i * d + k];
            double l = 0, wt = 0;
            if (!(has_ii && t == ii)) {
                wt = w ? w[t] : 1.0;
                l = -col[t * d] * wt;
            }
            if (reduction == LOSS_REDUCTION_NONE)
                out[i * d + k] = l;
            sum += l;
            wsum += wt;
        }
    if (reduction == LOSS_REDUCTION_SUM)
        out[0] = sum;
    if (reduction == LOSS_REDUCTION_MEAN)
        out[0] = sum / wsum;
}

START_TEST(test_loss_sweep)
{
    static const char *const red_names[3] = { "none", "sum", "mean" };
    static const int64_t shapes[3][5] = { { 2, 5, 4 }, { 3, 4, 2, 3, 0 }, { 2, 3, 3, 2, 2 } };
    static const int ranks[3] = { 2, 4, 5 };
    int k = 0;
    for (int sce = 0; sce < 2; sce++)
        for (int red = 0; red < 3; red++)
            for (int shape = 0; shape < 3; shape++)
                for (int opt = 0; opt < 6; opt++, k++) {
                    const int has_w = opt & 1, ii_mode = opt / 2;   /* 0 none, 1 in range, 2 negative */
                    const int dbl = k % 2, i32 = k % 3 == 0;
                    int rank = ranks[shape];
                    int64_t dims[5];
                    memcpy(dims, shapes[shape], sizeof dims);
                    int64_t n = dims[0], c = dims[1], d = 1;
                    for (int i = 2; i < rank; i++)
                        d *= dims[i];
                    int64_t total = n * c * d, count = n * d;
                    double *xd = malloc((size_t)total * sizeof(double)), *wd = malloc((size_t)c * sizeof(double));
                    float *xf = malloc((size_t)total * sizeof(float)), *wf = malloc((size_t)c * sizeof(float));
                    int64_t *y = malloc((size_t)count * sizeof(int64_t));
                    int32_t *y32 = malloc((size_t)count * sizeof(int32_t));
                    for (int64_t i = 0; i < total; i++)
                        xd[i] = xf[i] = fill(i, 0.1 * k, 3.0);
                    for (int64_t i = 0; i < c; i++)
                        wd[i] = wf[i] = 0.5f + 0.25f * (float)i;
                    int64_t ii = ii_mode == 1 ? 2 : -7;
                    for (int64_t i = 0; i < count; i++) {
                        y[i] = (i * 7 + 3) % c;
                        if (ii_mode && i % 4 == 1)
                            y[i] = ii;
                        y32[i] = (int32_t)y[i];
                    }
                    struct tensor tx = make_tensor(dbl ? ONNX_DTYPE_DOUBLE : ONNX_DTYPE_FLOAT, rank, dims,
                                                   dbl ? (void *)xd : (void *)xf);
                    struct tensor ty = make_tensor(i32 ? ONNX_DTYPE_INT32 : ONNX_DTYPE_INT64, rank - 1,
                                                   (int64_t[]){ dims[0], dims[2], dims[3], dims[4] }, i32 ? (void *)y32 : (void *)y);
                    struct tensor tw = make_tensor(tx.dtype, 1, &c, dbl ? (void *)wd : (void *)wf);
                    const struct tensor *in[3] = { &tx, &ty, has_w ? &tw : NULL };
                    struct test_attrs a = { 0 };
                    attr_string(&a, "reduction", red_names[red]);
                    if (ii_mode)
                        attr_int(&a, "ignore_index", ii);

                    /* the reference sees the same (rounded) inputs as the kernel */
                    double *xr = malloc((size_t)total * sizeof(double)), *wr = malloc((size_t)c * sizeof(double));
                    for (int64_t i = 0; i < total; i++)
                        xr[i] = dbl ? xd[i] : xf[i];
                    for (int64_t i = 0; i < c; i++)
                        wr[i] = dbl ? wd[i] : wf[i];
                    double *want_out = malloc((size_t)count * sizeof(double)), *want_lp = malloc((size_t)total * sizeof(double));
                    ref_loss(sce, red, xr, y, has_w ? wr : NULL, ii_mode != 0, ii, n, c, d, want_out, want_lp);

                    struct tensor out[2];
                    int want[2] = { 1, sce };
                    char label[128];
                    snprintf(label, sizeof label, "%s reduction=%s rank=%d weight=%d ii=%d %s case %d",
                             sce ? "SCE" : "NLL", red_names[red], rank, has_w, ii_mode, dbl ? "f64" : "f32", k);
                    ck_assert_msg(run_node(sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", 13, &a, in, 3,
                                           out, want, sce ? 2 : 1, NULL) == 0, "%s: %s", label, err_buf);
                    int64_t n_out = red == LOSS_REDUCTION_NONE ? count : 1;
                    ck_assert_msg(tensor_numel(&out[0]) == n_out && out[0].dtype == tx.dtype, "%s: output shape", label);
                    double tol = dbl ? 1e-10 : 2e-6;
                    for (int64_t i = 0; i < n_out; i++) {
                        double got = dbl ? ((double *)out[0].data)[i] : ((float *)out[0].data)[i];
                        ck_assert_msg(fabs(got - want_out[i]) <= tol * (1 + fabs(want_out[i])),
                                      "%s: expected %.10g, got %.10g at index %lld", label, want_out[i], got, (long long)i);
                    }
                    if (sce)
                        for (int64_t i = 0; i < total; i++) {
                            double got = dbl ? ((double *)out[1].data)[i] : ((float *)out[1].data)[i];
                            ck_assert_msg(fabs(got - want_lp[i]) <= tol * (1 + fabs(want_lp[i])),
                                          "%s log_prob: expected %.10g, got %.10g at index %lld", label, want_lp[i], got,
                                          (long long)i);
                        }
                    free_outputs(out, sce ? 2 : 1);
                    free(xd); free(wd); free(xf); free(wf); free(y); free(y32); free(xr); free(wr);
                    free(want_out); free(want_lp);
                }
}
END_TEST

START_TEST(test_loss_errors)
{
    float x[10] = { 0 };
    int64_t y[2] = { 1, 5 };
    struct tensor tx = make_tensor(ONNX_DTYPE_FLOAT, 2, (int64_t[]){ 2, 5 }, x);
    struct tensor ty = make_tensor(ONNX_DTYPE_INT64, 1, (int64_t[]){ 2 }, y);
    const struct tensor *in[2] = { &tx, &ty };
    struct tensor out[2];
    int want[2] = { 1, 1 };
    ck_assert(run_node("NegativeLogLikelihoodLoss", 13, NULL, in, 2, out, want, 1, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "label 5 at flat index 1 is outside [0, 5)"), "message: %s", err_buf);
    free_outputs(out, 1);
    ck_assert(run_node("SoftmaxCrossEntropyLoss", 13, NULL, in, 2, out, want, 2, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "outside [0, 5)"), "message: %s", err_buf);
    free_outputs(out, 2);

    /* the same label is fine once it is the ignore_index (all positions
     * but one ignored: mean is that one's loss, log(5)) */
    struct test_attrs a = { 0 };
    attr_int(&a, "ignore_index", 5);
    ck_assert_msg(run_node("SoftmaxCrossEntropyLoss", 13, &a, in, 2, out, want, 2, NULL) == 0, "%s", err_buf);
    ck_assert_msg(fabsf(((float *)out[0].data)[0] - logf(5.0f)) < 1e-6f, "got %g", ((float *)out[0].data)[0]);
    free_outputs(out, 2);

    int64_t y_neg[2] = { -1, 0 };
    struct tensor tyn = make_tensor(ONNX_DTYPE_INT64, 1, (int64_t[]){ 2 }, y_neg);
    const struct tensor *neg[2] = { &tx, &tyn };
    ck_assert(run_node("NegativeLogLikelihoodLoss", 13, NULL, neg, 2, out, want, 1, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "label -1"), "message: %s", err_buf);
    free_outputs(out, 1);

    struct tensor ty_bad = make_tensor(ONNX_DTYPE_INT64, 1, (int64_t[]){ 3 }, y);
    const struct tensor *bad[2] = { &tx, &ty_bad };
    ck_assert(run_node("NegativeLogLikelihoodLoss", 13, NULL, bad, 2, out, want, 1, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "target is int64[3]"), "message: %s", err_buf);

    struct test_attrs r = { 0 };
    attr_string(&r, "reduction", "max");
    ck_assert(run_node("NegativeLogLikelihoodLoss", 13, &r, in, 2, out, want, 1, NULL) != 0);
    ck_assert_msg(strstr(err_buf, "reduction 'max'"), "message: %s", err_buf);

    int v = 0;
    ck_assert_ptr_null(op_registry_find("", "SoftmaxCrossEntropyLoss", 11, &v));
    op_registry_find("", "SoftmaxCrossEntropyLoss", 25, &v);
    ck_assert_int_eq(v, 13);
    op_registry_find("", "NegativeLogLikelihoodLoss", 21, &v);
    ck_assert_int_eq(v, 13);
}
END_TEST

static Suite *ops_rnn_suite(void)
{
    Suite *s = suite_create("ops_rnn");
    TCase *ort = tcase_create("recurrent_fixed");
    tcase_add_test(ort, test_lstm_bidirectional_ort);
    tcase_add_test(ort, test_gru_reverse_clip_ort);
    tcase_add_test(ort, test_gru_linear_before_reset_ort);
    tcase_add_test(ort, test_rnn_activations_ort);
    tcase_add_test(ort, test_lstm_batch_first_reference);
    suite_add_tcase(s, ort);
    TCase *sweep = tcase_create("recurrent_reference");
    tcase_set_timeout(sweep, 120);
    tcase_add_test(sweep, test_recurrent_sweep);
    tcase_add_test(sweep, test_recurrent_large_deterministic);
    tcase_add_test(sweep, test_recurrent_grad_chunks);
    tcase_add_test(sweep, test_lstm_saved_state);
    tcase_add_test(sweep, test_zero_length_sequence);
    tcase_add_test(sweep, test_recurrent_errors);
    tcase_add_test(sweep, test_recurrent_versions);
    suite_add_tcase(s, sweep);
    TCase *loss = tcase_create("losses");
    tcase_add_test(loss, test_sce_mean_weight_ii_double);
    tcase_add_test(loss, test_sce_none_float);
    tcase_add_test(loss, test_nll_sum_weight_float);
    tcase_add_test(loss, test_loss_sweep);
    tcase_add_test(loss, test_loss_errors);
    suite_add_tcase(s, loss);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ops_rnn_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
