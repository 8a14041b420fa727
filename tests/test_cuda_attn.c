/* tests/test_cuda_attn.c — the CUDA kernels of the norm and attn families
 * (ops/cuda/norm.c, attn.c) against the CPU kernels on the same random
 * inputs: RMSNormalization, RMSNormGrad, GroupNormalization (18: Scale per
 * group; 21: per channel), InstanceNormalization, GroupNormGrad,
 * RotaryEmbedding (halves, interleaved, partial, 3-D, with and without
 * position_ids), Attention (3-D and 4-D, grouped-query, bool and float
 * masks shorter than the keys, causal, past/present, every
 * qk_matmul_output mode, softcap, windows, nonpad_kv_seqlen, a fully
 * masked row) and AttentionGrad (with and without dY, dPresent, a past
 * cache).
 *
 * The GPU sums in another order than the CPU, so values agree to a
 * tolerance relative to the largest CPU value. Every CUDA call runs twice
 * and must give the same bits (DTR's recomputation) and give back all its
 * scratch. These two families need no cuDNN, so tests/cuda_emu/run.sh also
 * builds this suite with the kernels run on the host. Without a CUDA build
 * or device the suite says why and passes. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "testcuda.h"
#include "testops.h"


static const struct backend *dev;
static uint32_t rng = 20260101u;

#define NARGS(...) ((int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))

static struct tensor *f32(int rank, const int64_t *dims)
{
    return testops_tensor_rand(&rng, rank, dims);
}

#define F32(...) f32(NARGS(__VA_ARGS__), (int64_t[]){ __VA_ARGS__ })

/* Positive values in [0.5, 1.5) (scales). */
static struct tensor *pos_of(struct tensor *t)
{
    float *d = t->data;
    for (int64_t i = 0; i < tensor_numel(t); i++)
        d[i] = fabsf(d[i]) * 0.5f + 0.5f;
    return t;
}

static struct tensor *i64_of(int rank, const int64_t *dims, const int64_t *v)
{
    return testops_tensor(ONNX_DTYPE_INT64, rank, dims, v);
}

/* A bool tensor from 0/1 values. */
static struct tensor *bool_of(int rank, const int64_t *dims, const uint8_t *v)
{
    return testops_tensor(ONNX_DTYPE_BOOL, rank, dims, v);
}

/* ---- one call on both backends ---------------------------------------------------- */

#define MAX_IO 12
#define MAX_ATTRS 12

struct run {
    const char *domain, *op;
    int opset;
    struct onnx_attr attrs[MAX_ATTRS];
    int n_attrs;
    int n_in;
    const struct tensor *in[MAX_IO];   /* host tensors; NULL: omitted */
    int n_out;
    uint32_t omit_out;                 /* bit i: output i not requested */
    double tol;                        /* 0: the CPU's bytes exactly */
    const char *what;                  /* the case, for messages */
};

static char err_buf[1024];

static struct op_env env_of(int device)
{
    return (struct op_env){
        .scratch_alloc = device ? testcuda_scratch_alloc : testops_scratch_alloc,
        .scratch_free = device ? testcuda_scratch_free : testops_scratch_free,
        .backend = device ? dev : &backend_cpu, .threads = 1, .training = 1,
        .err = err_buf, .err_size = sizeof err_buf,
    };
}

static const struct op_def *find_def(const struct run *r, int *version, void **params)
{
    return testcuda_find_def(r->domain, r->op, r->opset, NULL, r->n_in, r->n_out, r->attrs, r->n_attrs, r->what,
                             version, params, err_buf, sizeof err_buf);
}

static void compare(const struct run *r, int k, const struct tensor *want, const void *got)
{
    if (r->tol == 0) {
        if (!memcmp(want->data, got, tensor_size_bytes(want)))
            return;
        size_t es = onnx_dtype_size(want->dtype);
        for (int64_t i = 0; i < tensor_numel(want); i++)
            ck_assert_msg(!memcmp((const char *)want->data + i * es, (const char *)got + i * es, es),
                          "%s (%s) output %d: element %lld differs from the CPU's (%s)", r->op, r->what, k,
                          (long long)i, onnx_dtype_name(want->dtype));
    }
    struct tensor g = *want;
    g.data = (void *)got;
    double scale = 1.0;
    for (int64_t i = 0; i < tensor_numel(want); i++)
        scale = fmax(scale, fabs(tensor_get_double(want, i)));
    for (int64_t i = 0; i < tensor_numel(want); i++) {
        double a = tensor_get_double(&g, i), b = tensor_get_double(want, i);
        ck_assert_msg(a == b || fabs(a - b) <= r->tol * scale || (isnan(a) && isnan(b)),
                      "%s (%s) output %d: expected %.9g (CPU), got %.9g (CUDA) at index %lld", r->op, r->what,
                      k, b, a, (long long)i);
    }
}

/* Infers on the CPU call and allocates its outputs; 0 or the infer status. */
static int cpu_call(struct run *r, const struct op_def *def, int version, void *params, struct op_env *env,
                    struct tensor **cout, struct op_call *cc)
{
    for (int i = 0; i < r->n_out; i++)
        cout[i] = r->omit_out >> i & 1 ? NULL : testops_alloc(sizeof(struct tensor));
    *cc = (struct op_call){ .def = def, .version = version, .params = params, .node_name = "n0",
                            .n_in = r->n_in, .in = r->in, .n_out = r->n_out, .out = cout, .env = env };
    if (def->infer(cc))
        return -1;
    for (int i = 0; i < r->n_out; i++)
        if (cout[i])
            cout[i]->data = testops_alloc(tensor_size_bytes(cout[i]));
    return 0;
}

/* The inputs as the runtime hands them to a CUDA kernel. */
static void dev_inputs(const struct run *r, const struct op_def *def, struct tensor **din)
{
    for (int i = 0; i < r->n_in; i++)
        din[i] = def->host_inputs >> i & 1 ? (struct tensor *)r->in[i] : testcuda_to_dev(r->in[i]);
}

static void run_both(struct run *r)
{
    int version;
    void *params;
    const struct op_def *def = find_def(r, &version, &params);
    op_kernel_fn gpu = testcuda_kernel(r->domain, r->op);
    ck_assert_msg(gpu != NULL, "no CUDA kernel for %s", r->op);
    struct tensor *din[MAX_IO] = { 0 };
    dev_inputs(r, def, din);

    struct op_env cenv = env_of(0);
    struct tensor *cout[MAX_IO] = { 0 };
    struct op_call cc;
    ck_assert_msg(!cpu_call(r, def, version, params, &cenv, cout, &cc), "%s (%s): infer: %s", r->op, r->what,
                  err_buf);
    ck_assert_msg(!def->kernel[BACKEND_CPU](&cc), "%s (%s): CPU kernel: %s", r->op, r->what, err_buf);

    struct op_env genv = env_of(1);
    struct tensor *gout[2][MAX_IO] = { { 0 } };
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < r->n_out; i++) {
            if (!cout[i])
                continue;
            gout[pass][i] = testops_alloc(sizeof(struct tensor));
            *gout[pass][i] = *cout[i];
            size_t bytes = tensor_size_bytes(cout[i]);
            gout[pass][i]->data = testcuda_alloc(bytes);
            void *poison = testops_alloc(bytes);
            memset(poison, 0x7f, bytes);       /* an unwritten output shows */
            if (bytes)
                ck_assert(!dev->copy_to_device(dev->ctx, gout[pass][i]->data, poison, bytes));
        }
        genv.recomputing = pass == 1;
        testcuda_scratch_live = 0;
        struct op_call gc = cc;
        gc.env = &genv;
        gc.in = (const struct tensor *const *)din;
        gc.out = gout[pass];
        ck_assert_msg(!gpu(&gc), "%s (%s): CUDA kernel (pass %d): %s", r->op, r->what, pass, err_buf);
        ck_assert(!dev->synchronize(dev->ctx));
        ck_assert_msg(testcuda_scratch_live == 0, "%s (%s): %d device scratch blocks not given back", r->op, r->what,
                      testcuda_scratch_live);
    }
    for (int i = 0; i < r->n_out; i++) {
        if (!cout[i])
            continue;
        void *first = testcuda_to_host(gout[0][i]), *again = testcuda_to_host(gout[1][i]);
        compare(r, i, cout[i], first);
        ck_assert_msg(!memcmp(first, again, tensor_size_bytes(cout[i])),
                      "%s (%s) output %d: the recomputation differs in its bits", r->op, r->what, i);
    }
    if (params)
        (def->params_free ? def->params_free : free)(params);
    testcuda_free_all();
}

#define RUN(...) run_both(&(struct run){ __VA_ARGS__ })

/* ---- the cases ------------------------------------------------------------------------ */

START_TEST(test_table)
{
    static const char *const ops[][2] = {
        { "", "RMSNormalization" }, { "dtrexec", "RMSNormGrad" }, { "", "GroupNormalization" },
        { "", "InstanceNormalization" }, { "dtrexec", "GroupNormGrad" }, { "", "RotaryEmbedding" },
        { "", "Attention" }, { "dtrexec", "AttentionGrad" },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        ck_assert_msg(testcuda_kernel(ops[i][0], ops[i][1]) != NULL, "no CUDA kernel for %s", ops[i][1]);
}
END_TEST

START_TEST(test_rms_norm)
{
    struct {
        int64_t x[3], scale[2];
        int rank, scale_rank;
        int64_t axis;
        const char *what;
    } cases[] = {
        { { 4, 16 }, { 16 }, 2, 1, -1, "rows of 16" },
        { { 3, 4, 5 }, { 5 }, 3, 1, 1, "scale broadcast to [4, 5]" },
        { { 3, 4, 5 }, { 4, 1 }, 3, 2, 0, "one row, scale [4, 1]" },
        { { 3, 1500 }, { 1500 }, 2, 1, 1, "long rows" },
        { { 300, 70 }, { 70 }, 2, 1, -1, "many rows" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct tensor *x = f32(cases[k].rank, cases[k].x);
        struct tensor *s = pos_of(f32(cases[k].scale_rank, cases[k].scale));
        struct tensor *dy = f32(cases[k].rank, cases[k].x);
        int axis = op_axis(cases[k].axis, cases[k].rank);
        RUN(.op = "RMSNormalization", .opset = 23, .what = cases[k].what, .n_in = 2, .in = { x, s }, .n_out = 1,
            .attrs = { a_int("axis", cases[k].axis), a_float("epsilon", 1e-4f) }, .n_attrs = 2, .tol = 1e-5);
        RUN(.domain = "dtrexec", .op = "RMSNormGrad", .opset = 1, .what = cases[k].what, .n_in = 3,
            .in = { dy, x, s }, .n_out = 2, .attrs = { a_int("axis", axis), a_float("epsilon", 1e-4f) },
            .n_attrs = 2, .tol = 2e-5);
        RUN(.domain = "dtrexec", .op = "RMSNormGrad", .opset = 1, .what = cases[k].what, .n_in = 3,
            .in = { dy, x, s }, .n_out = 2, .omit_out = 1u << 1,
            .attrs = { a_int("axis", axis), a_float("epsilon", 1e-4f) }, .n_attrs = 2, .tol = 2e-5);
    }
}
END_TEST

START_TEST(test_group_norm)
{
    struct {
        int64_t x[4];
        int rank, opset, per_group;
        int64_t groups;          /* 0: InstanceNormalization */
        const char *what;
    } cases[] = {
        { { 2, 4, 3, 3 }, 4, 21, 0, 2, "21, two groups" },
        { { 2, 6, 5 }, 3, 18, 1, 3, "18, scale per group" },
        { { 1, 32, 16, 16 }, 4, 21, 0, 8, "long rows" },
        { { 3, 5, 2 }, 3, 21, 0, 1, "one group" },
        { { 2, 3, 7 }, 3, 22, 0, 0, "instance norm" },
        { { 2, 4, 300 }, 3, 6, 0, 0, "instance norm, long rows" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct tensor *x = f32(cases[k].rank, cases[k].x);
        int64_t np = cases[k].per_group ? cases[k].groups : cases[k].x[1];
        struct tensor *s = pos_of(F32(np)), *b = F32(np), *dy = f32(cases[k].rank, cases[k].x);
        if (cases[k].groups)
            RUN(.op = "GroupNormalization", .opset = cases[k].opset, .what = cases[k].what, .n_in = 3,
                .in = { x, s, b }, .n_out = 1, .attrs = { a_int("num_groups", cases[k].groups),
                a_float("epsilon", 1e-4f) }, .n_attrs = 2, .tol = 1e-5);
        else
            RUN(.op = "InstanceNormalization", .opset = cases[k].opset, .what = cases[k].what, .n_in = 3,
                .in = { x, s, b }, .n_out = 1, .attrs = { a_float("epsilon", 1e-4f) }, .n_attrs = 1, .tol = 1e-5);
        for (uint32_t omit = 0; omit < 4; omit += 3)
            RUN(.domain = "dtrexec", .op = "GroupNormGrad", .opset = 1, .what = cases[k].what, .n_in = 3,
                .in = { dy, x, s }, .n_out = 3, .omit_out = omit << 1,
                .attrs = { a_int("num_groups", cases[k].groups), a_float("epsilon", 1e-4f),
                           a_int("scale_per_group", cases[k].per_group) }, .n_attrs = 3, .tol = 2e-5);
    }
}
END_TEST

/* cos/sin tables of `rows` positions and `half` frequencies. */
static void rope_caches(int64_t rows, int64_t half, int rank, const int64_t *dims, struct tensor **c,
                        struct tensor **s)
{
    *c = testops_tensor(ONNX_DTYPE_FLOAT, rank, dims, NULL);
    *s = testops_tensor(ONNX_DTYPE_FLOAT, rank, dims, NULL);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < half; i++) {
            double a = (double)r / pow(10000.0, (double)i / (double)half);
            ((float *)(*c)->data)[r * half + i] = (float)cos(a);
            ((float *)(*s)->data)[r * half + i] = (float)sin(a);
        }
}

START_TEST(test_rotary)
{
    static const int64_t pos_v[] = { 0, 3, 5, 7, 1, 11 };
    struct tensor *pos = i64_of(2, (int64_t[]){ 2, 3 }, pos_v), *c4, *s4, *c2, *s2, *c1, *s1, *cb, *sb;
    rope_caches(12, 4, 2, (int64_t[]){ 12, 4 }, &c4, &s4);
    rope_caches(12, 2, 2, (int64_t[]){ 12, 2 }, &c2, &s2);
    rope_caches(12, 1, 2, (int64_t[]){ 12, 1 }, &c1, &s1);
    rope_caches(6, 2, 3, (int64_t[]){ 2, 3, 2 }, &cb, &sb);
    RUN(.op = "RotaryEmbedding", .opset = 23, .what = "4-D halves", .n_in = 4, .in = { F32(2, 2, 3, 8), c4, s4, pos },
        .n_out = 1, .tol = 1e-6);
    RUN(.op = "RotaryEmbedding", .opset = 23, .what = "4-D interleaved", .n_in = 4,
        .in = { F32(2, 2, 3, 8), c4, s4, pos }, .n_out = 1, .attrs = { a_int("interleaved", 1) }, .n_attrs = 1,
        .tol = 1e-6);
    RUN(.op = "RotaryEmbedding", .opset = 23, .what = "4-D partial", .n_in = 4, .in = { F32(2, 2, 3, 8), c2, s2, pos },
        .n_out = 1, .attrs = { a_int("rotary_embedding_dim", 4) }, .n_attrs = 1, .tol = 1e-6);
    RUN(.op = "RotaryEmbedding", .opset = 23, .what = "3-D interleaved partial", .n_in = 4,
        .in = { F32(2, 3, 12), c1, s1, pos }, .n_out = 1,
        .attrs = { a_int("num_heads", 2), a_int("interleaved", 1), a_int("rotary_embedding_dim", 2) }, .n_attrs = 3,
        .tol = 1e-6);
    RUN(.op = "RotaryEmbedding", .opset = 23, .what = "3-D, no position_ids", .n_in = 3, .in = { F32(2, 3, 8), cb, sb },
        .n_out = 1, .attrs = { a_int("num_heads", 2) }, .n_attrs = 1, .tol = 1e-6);
}
END_TEST

/* One forward case and its gradient (dY random, dPresent when asked). */
static void attention_case(const char *what, int opset, struct tensor *const in[7], int n_in, int n_out,
                           const struct onnx_attr *attrs, int n_attrs, int qk_modes)
{
    struct run r = { .op = "Attention", .opset = opset, .what = what, .n_in = n_in, .n_out = n_out,
                     .n_attrs = n_attrs, .tol = 2e-5 };
    for (int i = 0; i < n_in; i++)
        r.in[i] = in[i];
    memcpy(r.attrs, attrs, sizeof(struct onnx_attr) * (size_t)n_attrs);
    for (int mode = 0; mode < (qk_modes ? 4 : 1); mode++) {
        struct run m = r;
        if (qk_modes) {
            m.n_out = 4;
            m.attrs[m.n_attrs++] = a_int("qk_matmul_output_mode", mode);
        }
        run_both(&m);
    }
    /* the gradient: dY of Y's shape, from a CPU run of the forward */
    int version;
    void *params;
    struct run fr = r;
    fr.n_out = 3;
    const struct op_def *def = find_def(&fr, &version, &params);
    struct op_env env = env_of(0);
    struct tensor *cout[MAX_IO] = { 0 };
    struct op_call cc;
    ck_assert_msg(!cpu_call(&fr, def, version, params, &env, cout, &cc), "%s: %s", what, err_buf);
    if (params)
        (def->params_free ? def->params_free : free)(params);
    struct tensor *dy = f32(cout[0]->rank, cout[0]->dims), *dpk = f32(4, cout[1]->dims),
                  *dpv = f32(4, cout[2]->dims);
    int has_past = n_in > 5 && in[4];
    struct run g = { .domain = "dtrexec", .op = "AttentionGrad", .opset = 1, .what = what, .n_in = 10,
                     .n_out = has_past ? 5 : 3, .n_attrs = n_attrs, .tol = 5e-5 };
    memcpy(g.attrs, attrs, sizeof(struct onnx_attr) * (size_t)n_attrs);
    g.in[0] = dy;
    for (int i = 0; i < 7; i++)
        g.in[1 + i] = i < n_in ? in[i] : NULL;
    g.n_in = 8;
    run_both(&g);                          /* dY only */
    g.n_in = 10;
    g.in[8] = dpk;
    g.in[9] = dpv;
    run_both(&g);                          /* dY and the present outputs' gradients */
    g.in[0] = NULL;
    run_both(&g);                          /* only the present outputs' gradients */
    g.in[0] = dy;
    g.in[9] = NULL;
    g.omit_out = 1u << 0;                  /* no dQ wanted */
    run_both(&g);
}

#define ATT(what, opset, n_out, qk, ins, ...)                                                           \
    do {                                                                                                \
        struct tensor *in_[7] = { ins };                                                                \
        int n_ = 7;                                                                                     \
        while (n_ > 3 && !in_[n_ - 1])                                                                  \
            n_--;                                                                                       \
        struct onnx_attr at_[] = { __VA_ARGS__ };                                                       \
        attention_case(what, opset, in_, n_, n_out, at_, (int)(sizeof at_ / sizeof at_[0]), qk);        \
    } while (0)

#define COMMA ,

START_TEST(test_attention)
{
    static const uint8_t bm[] = { 1, 0, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1 };
    static const uint8_t first_off[] = { 0, 1, 1 };
    static const int64_t nonpad[] = { 4, 2 };
    ATT("4-D", 23, 1, 1, F32(2, 2, 3, 4) COMMA F32(2, 2, 5, 4) COMMA F32(2, 2, 5, 3), a_int("is_causal", 0));
    ATT("4-D, grouped-query, causal", 23, 1, 0, F32(2, 4, 4, 3) COMMA F32(2, 2, 4, 3) COMMA F32(2, 2, 4, 3),
        a_int("is_causal", 1));
    ATT("3-D grouped-query", 23, 1, 0, F32(2, 3, 8) COMMA F32(2, 4, 4) COMMA F32(2, 4, 6), a_int("q_num_heads", 4),
        a_int("kv_num_heads", 2));
    ATT("bool mask [3, 4]", 23, 1, 1,
        F32(2, 2, 3, 4) COMMA F32(2, 1, 4, 4) COMMA F32(2, 1, 4, 4) COMMA bool_of(2, (int64_t[]){ 3, 4 }, bm),
        a_float("scale", 0.5f));
    ATT("float mask shorter than the keys, causal", 23, 1, 1,
        F32(1, 2, 3, 4) COMMA F32(1, 2, 5, 4) COMMA F32(1, 2, 5, 4) COMMA F32(2, 3, 4), a_int("is_causal", 1));
    ATT("softcap", 23, 1, 1, F32(1, 2, 3, 4) COMMA F32(1, 2, 4, 4) COMMA F32(1, 2, 4, 4), a_float("softcap", 0.8f),
        a_float("scale", 2.0f));
    ATT("past and present, grouped-query, causal", 23, 3, 1,
        F32(1, 4, 2, 3) COMMA F32(1, 2, 2, 3) COMMA F32(1, 2, 2, 3) COMMA NULL COMMA F32(1, 2, 3, 3) COMMA
        F32(1, 2, 3, 3), a_int("is_causal", 1));
    ATT("3-D, past, rank-2 mask", 23, 3, 0,
        F32(1, 2, 8) COMMA F32(1, 2, 8) COMMA F32(1, 2, 8) COMMA F32(1, 5) COMMA F32(1, 2, 3, 4) COMMA
        F32(1, 2, 3, 4), a_int("q_num_heads", 2), a_int("kv_num_heads", 2));
    ATT("window", 25, 1, 0, F32(1, 2, 5, 3) COMMA F32(1, 2, 5, 3) COMMA F32(1, 2, 5, 3),
        a_int("left_window_size", 2), a_int("right_window_size", 1));
    ATT("nonpad, causal", 24, 1, 1,
        F32(2, 2, 2, 3) COMMA F32(2, 2, 5, 3) COMMA F32(2, 2, 5, 3) COMMA NULL COMMA NULL COMMA NULL COMMA
        i64_of(1, (int64_t[]){ 2 }, nonpad), a_int("is_causal", 1));
    ATT("a fully masked row", 23, 1, 1,
        F32(1, 1, 3, 2) COMMA F32(1, 1, 3, 2) COMMA F32(1, 1, 3, 2) COMMA bool_of(1, (int64_t[]){ 3 }, first_off),
        a_int("is_causal", 1));
    ATT("long rows", 23, 1, 0, F32(1, 2, 3, 8) COMMA F32(1, 2, 700, 8) COMMA F32(1, 2, 700, 8), a_int("is_causal", 0));
}
END_TEST

static void teardown(void)
{
    testops_free_all();
}

int main(void)
{
    char why[256] = "";
    dev = testcuda_open(why, sizeof why);
    testcuda_dev = dev;
    testcuda_sync_frees = 1;   /* the kernels free scratch with work still queued */
    if (!dev) {
        printf("test_cuda_attn: skipped, no CUDA device: %s\n", why);
        return 0;
    }
    Suite *s = suite_create("cuda_attn");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_rms_norm);
    tcase_add_test(tc, test_group_norm);
    tcase_add_test(tc, test_rotary);
    tcase_add_test(tc, test_attention);
    suite_add_tcase(s, tc);
    int failed = testcuda_run(s);
    testcuda_close(dev);
    return failed ? 1 : 0;
}

