/* tests/cuda_emu/window_check.c — the "window" family's CUDA kernels
 * (ops/cuda/window.c, window_kernels.cu: LpPool, MaxUnpool, Col2Im and
 * their gradients) run on the host (see run_family.sh window) against the CPU
 * kernels of the same operators, on the same random inputs: 1-3 spatial
 * axes, every p, padding, strides, dilations, ceil_mode, repeated and
 * out-of-range unpooling indices; DFT (real, complex, onesided, inverse,
 * irfft, padded and truncated lengths) and STFT; float and double. Each emulated call
 * runs twice and must give the same bits. Exits 1 on any mismatch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda-impl.h"

extern const struct cuda_kernel_entry cuda_kernels_window[];

#include "emu_check.h"

/* Runs op on the CPU and (twice) through the window family; compares. */
static void run(const char *what, const char *domain, const char *op, int opset, struct onnx_attr *attrs,
                int n_attrs, int n_in, struct tensor **in, int n_out)
{
    emu_run(cuda_kernels_window, what, domain, op, opset, attrs, n_attrs, n_in, in, n_out);
}

#define DIMS(...) ((int64_t[]){ __VA_ARGS__ })
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define T(dtype, lo, hi, ...) mk(dtype, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__), lo, hi)
static struct onnx_attr ai(const char *n, int64_t v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_INT, .i = v }; }
static struct onnx_attr af(const char *n, float v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_FLOAT, .f = v }; }
static struct onnx_attr as(const char *n, const char *v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_STRING, .s = (char *)v, .s_len = strlen(v) }; }
static struct onnx_attr aints(const char *n, int k, int64_t *v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_INTS, .ints = v, .n = k }; }


/* Runs op and expects both the CPU and the emulated CUDA kernel to refuse
 * it with a message containing `want`. */
static void refuse(const char *what, const char *op, struct onnx_attr *attrs, int n_attrs, int n_in,
                   struct tensor **in, int64_t out_numel, const char *want)
{
    int version;
    const struct op_def *def = op_registry_find("", op, 22, &version);
    char err[512] = "";
    void *params = NULL;
    struct onnx_node node = { .name = (char *)what, .op_type = (char *)op, .domain = "",
                              .n_attrs = n_attrs, .attrs = attrs };
    cases++;
    if (def->parse(&node, version, &params, err, sizeof err)) {
        printf("FAIL %s: parse: %s\n", what, err);
        failures++;
        return;
    }
    keep(params);
    struct tensor y;
    struct tensor *outs[1] = { &y };
    struct op_env env = { .scratch_alloc = scratch, .scratch_free = scratch_free, .backend = &emu,
                          .threads = 1, .err = err, .err_size = sizeof err };
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = what,
                         .n_in = n_in, .in = (const struct tensor *const *)in, .n_out = 1,
                         .out = outs, .env = &env };
    memset(&y, 0, sizeof y);
    if (def->infer(&c)) {
        printf("FAIL %s: infer: %s\n", what, err);
        failures++;
        return;
    }
    (void)out_numel;
    y.data = keep(calloc(1, tensor_size_bytes(&y) + 8));
    cuda_kernel_fn fn = NULL;
    for (const struct cuda_kernel_entry *e = cuda_kernels_window; e->name; e++)
        if (!strcmp(e->name, op) && !strcmp(e->domain, ""))
            fn = e->kernel;
    for (int b = 0; b < 2; b++) {
        err[0] = 0;
        env.backend = b ? &emu : &backend_cpu;
        int rc = b ? fn(&c) : def->kernel[BACKEND_CPU](&c);
        if (rc == 0 || !strstr(err, want)) {
            printf("FAIL %s: the %s kernel gave %d, '%s' (wanted an error with '%s')\n", what,
                   b ? "cuda" : "cpu", rc, err, want);
            failures++;
        }
    }
}

int main(void)
{
    const int fl[2] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE };
    for (int t = 0; t < 2; t++) {
        const int F = fl[t];
        /* ---- LpPool and LpPoolGrad ---- */
        struct {
            const char *what;
            int nsp;
            int64_t x[5], k[3], st[3], dil[3], pads[6];
            float p;
            int ceil;
            const char *autopad;
        } lp[] = {
            { "lp 1d p2", 1, { 2, 3, 11 }, { 3 }, { 2 }, { 1 }, { 1, 0 }, 2, 0, NULL },
            { "lp 2d p3 pads", 2, { 1, 2, 6, 7 }, { 3, 2 }, { 2, 1 }, { 1, 1 }, { 1, 0, 1, 1 }, 3, 0, NULL },
            { "lp 2d p1 dil ceil", 2, { 2, 1, 7, 8 }, { 2, 2 }, { 2, 2 }, { 2, 1 }, { 0, 0, 0, 0 }, 1, 1, NULL },
            { "lp 2d p4 same_lower", 2, { 1, 2, 5, 5 }, { 2, 3 }, { 1, 1 }, { 1, 1 }, { 0 }, 4, 0, "SAME_LOWER" },
            { "lp 3d p2.5", 3, { 1, 2, 4, 5, 3 }, { 2, 2, 2 }, { 1, 2, 1 }, { 1, 1, 1 }, { 0, 1, 0, 1, 0, 1 }, 2.5f, 0, NULL },
        };
        for (int i = 0; i < (int)(sizeof lp / sizeof lp[0]); i++) {
            int n = lp[i].nsp;
            struct onnx_attr a[7];
            int na = 0;
            a[na++] = aints("kernel_shape", n, lp[i].k);
            a[na++] = aints("strides", n, lp[i].st);
            a[na++] = aints("dilations", n, lp[i].dil);
            a[na++] = af("p", lp[i].p);
            a[na++] = ai("ceil_mode", lp[i].ceil);
            if (lp[i].autopad)
                a[na++] = as("auto_pad", lp[i].autopad);
            else
                a[na++] = aints("pads", 2 * n, lp[i].pads);
            struct tensor *x = mk(F, n + 2, lp[i].x, -2, 2);
            run(lp[i].what, "", "LpPool", 22, a, na, 1, &x, 1);
            /* the gradient on the forward's own output, with the resolved pads */
            int version;
            const struct op_def *def = op_registry_find("", "LpPool", 22, &version);
            void *params = NULL;
            char err[256];
            struct onnx_node node = { .name = "lp", .op_type = "LpPool", .n_attrs = na, .attrs = a };
            if (def->parse(&node, version, &params, err, sizeof err)) {
                printf("FAIL %s: parse: %s\n", lp[i].what, err);
                failures++;
                continue;
            }
            keep(params);
            struct tensor *y = keep(calloc(1, sizeof *y));
            struct tensor *outs[1] = { y };
            const struct tensor *ins[1] = { x };
            struct op_env env = { .scratch_alloc = scratch, .scratch_free = scratch_free,
                                  .backend = &backend_cpu, .threads = 1, .err = err, .err_size = sizeof err };
            struct op_call c = { .def = def, .version = version, .params = params, .n_in = 1, .in = ins,
                                 .n_out = 1, .out = outs, .env = &env };
            if (def->infer(&c)) {
                printf("FAIL %s: infer: %s\n", lp[i].what, err);
                failures++;
                continue;
            }
            y->data = keep(calloc(1, tensor_size_bytes(y) + 8));
            def->kernel[BACKEND_CPU](&c);
            struct tensor *dy = mk(F, y->rank, y->dims, -1, 1);
            int64_t pads[6] = { 0 };
            if (lp[i].autopad)
                /* SAME_LOWER of k 2, 3 at stride 1: the extra pad goes first */
                pads[0] = 1, pads[1] = 1, pads[3] = 1;
            else
                memcpy(pads, lp[i].pads, sizeof pads);
            struct onnx_attr ga[7] = { aints("kernel_shape", n, lp[i].k), aints("strides", n, lp[i].st),
                                       aints("dilations", n, lp[i].dil), af("p", lp[i].p),
                                       ai("ceil_mode", lp[i].ceil), aints("pads", 2 * n, pads),
                                       aints("shape", n + 2, x->dims) };
            struct tensor *g[3] = { dy, x, y };
            run(lp[i].what, "dtrexec", "LpPoolGrad", 1, ga, 7, 3, g, 1);
        }
        /* ---- Col2Im and Col2ImGrad ---- */
        struct {
            const char *what;
            int nsp;
            int64_t img[3], blk[3], st[3], dil[3], pads[6];
            int64_t n, c;
        } ci[] = {
            { "col2im 2d", 2, { 5, 6 }, { 2, 3 }, { 1, 1 }, { 1, 1 }, { 0 }, 2, 3 },
            { "col2im 2d strided", 2, { 7, 6 }, { 3, 2 }, { 2, 2 }, { 1, 2 }, { 1, 0, 1, 1 }, 1, 2 },
            { "col2im 1d", 1, { 9 }, { 4 }, { 3 }, { 2 }, { 2, 1 }, 2, 1 },
            { "col2im 3d", 3, { 3, 4, 5 }, { 2, 2, 3 }, { 1, 2, 1 }, { 1, 1, 1 }, { 0, 1, 0, 0, 0, 1 }, 1, 2 },
        };
        for (int i = 0; i < (int)(sizeof ci / sizeof ci[0]); i++) {
            int n = ci[i].nsp;
            int64_t kernel = 1, cols = 1;
            for (int d = 0; d < n; d++) {
                kernel *= ci[i].blk[d];
                cols *= (ci[i].img[d] + ci[i].pads[d] + ci[i].pads[n + d] - ci[i].dil[d] * (ci[i].blk[d] - 1) - 1)
                        / ci[i].st[d] + 1;
            }
            struct onnx_attr a[3] = { aints("strides", n, ci[i].st), aints("dilations", n, ci[i].dil),
                                      aints("pads", 2 * n, ci[i].pads) };
            double imgv[3], blkv[3];
            for (int d = 0; d < n; d++)
                imgv[d] = (double)ci[i].img[d], blkv[d] = (double)ci[i].blk[d];
            struct tensor *is = mk_vals(ONNX_DTYPE_INT64, 1, DIMS(n), imgv);
            struct tensor *bs = mk_vals(ONNX_DTYPE_INT64, 1, DIMS(n), blkv);
            struct tensor *in[3] = { T(F, -1, 1, ci[i].n, ci[i].c * kernel, cols), is, bs };
            run(ci[i].what, "", "Col2Im", 18, a, 3, 3, in, 1);
            int64_t yd[5] = { ci[i].n, ci[i].c, ci[i].img[0], ci[i].img[1], ci[i].img[2] };
            struct tensor *gin[3] = { mk(F, n + 2, yd, -1, 1), is, bs };
            run(ci[i].what, "dtrexec", "Col2ImGrad", 1, a, 3, 3, gin, 1);
        }
        /* ---- MaxUnpool and MaxUnpoolGrad ---- */
        {
            int64_t k[2] = { 2, 2 }, st[2] = { 2, 2 };
            struct onnx_attr a[2] = { aints("kernel_shape", 2, k), aints("strides", 2, st) };
            /* X [2, 2, 2, 3] into [2, 2, 4, 6]: one place per window, some repeated */
            double iv[24];
            for (int j = 0; j < 24; j++) {
                int plane = j / 6, r = j % 6 / 3, col = j % 3;
                iv[j] = plane * 24 + (2 * r + (j & 1)) * 6 + 2 * col + (j % 5 == 0);
            }
            iv[7] = iv[6];
            iv[20] = iv[3];
            struct tensor *ind = mk_vals(ONNX_DTYPE_INT64, 4, DIMS(2, 2, 2, 3), iv);
            struct tensor *in[3] = { T(F, -1, 1, 2, 2, 2, 3), ind, NULL };
            run("maxunpool", "", "MaxUnpool", 22, a, 2, 2, in, 1);
            in[2] = mk_vals(ONNX_DTYPE_INT64, 1, DIMS(4), (double[]){ 2, 2, 5, 7 });
            run("maxunpool output_shape", "", "MaxUnpool", 22, a, 2, 3, in, 1);
            struct tensor *g[2] = { T(F, -1, 1, 2, 2, 5, 7), ind };
            run("maxunpool grad", "dtrexec", "MaxUnpoolGrad", 1, a, 2, 2, g, 1);
            struct tensor *g2[2] = { T(F, -1, 1, 2, 2, 4, 6), ind };
            run("maxunpool grad inferred", "dtrexec", "MaxUnpoolGrad", 1, a, 2, 2, g2, 1);
            iv[9] = 96;
            struct tensor *badi = mk_vals(ONNX_DTYPE_INT64, 4, DIMS(2, 2, 2, 3), iv);
            struct tensor *bin[2] = { in[0], badi };
            refuse("maxunpool bad index", "MaxUnpool", a, 2, 2, bin, 96, "I[9] = 96");
        }
    }
    for (int t = 0; t < 2; t++) {
        const int F = fl[t];
        struct {
            const char *what;
            int64_t x[4];
            int rank, n, axis, inverse, onesided;
        } df[] = {
            { "dft real", { 2, 6, 1 }, 3, 0, 1, 0, 0 },
            { "dft complex axis 2", { 2, 3, 5, 2 }, 4, 0, 2, 0, 0 },
            { "dft onesided padded", { 3, 5, 1 }, 3, 8, 1, 0, 1 },
            { "dft inverse truncated", { 2, 7, 3, 2 }, 4, 5, 1, 1, 0 },
            { "dft irfft", { 1, 4, 3, 2 }, 4, 0, 1, 1, 1 },
            { "dft irfft odd", { 2, 4, 2 }, 3, 7, 1, 1, 1 },
        };
        for (int i = 0; i < (int)(sizeof df / sizeof df[0]); i++) {
            struct onnx_attr a[2] = { ai("inverse", df[i].inverse), ai("onesided", df[i].onesided) };
            struct tensor *in[3] = { mk(F, df[i].rank, df[i].x, -1, 1),
                                     df[i].n ? mk_vals(ONNX_DTYPE_INT64, 0, NULL, (double[]){ df[i].n }) : NULL,
                                     mk_vals(ONNX_DTYPE_INT64, 0, NULL, (double[]){ df[i].axis }) };
            run(df[i].what, "", "DFT", 20, a, 2, 3, in, 1);
            /* DFTGrad on dY of the forward's output shape */
            int64_t n = df[i].n ? df[i].n : df[i].inverse && df[i].onesided ? 2 * (df[i].x[df[i].axis] - 1)
                                                                         : df[i].x[df[i].axis];
            int64_t yd[4];
            memcpy(yd, df[i].x, sizeof yd);
            yd[df[i].axis] = df[i].onesided && !df[i].inverse ? n / 2 + 1 : n;
            yd[df[i].rank - 1] = df[i].inverse && df[i].onesided ? 1 : 2;
            struct onnx_attr ga[5] = { ai("inverse", df[i].inverse), ai("onesided", df[i].onesided),
                                       ai("axis", df[i].axis), ai("dft_length", n),
                                       aints("shape", df[i].rank, df[i].x) };
            struct tensor *gin[1] = { mk(F, df[i].rank, yd, -1, 1) };
            run(df[i].what, "dtrexec", "DFTGrad", 1, ga, 5, 1, gin, 1);
        }
        {
            /* STFT's gradients: signal [2, 20, 1], frame 6, step 3 -> [2, 5, 4, 2] */
            struct onnx_attr ga[6] = { ai("onesided", 1), ai("axis", 1), ai("dft_length", 6), ai("stft", 1),
                                       ai("frame_step", 3), aints("shape", 3, DIMS(2, 20, 1)) };
            struct tensor *gin[3] = { T(F, -1, 1, 2, 5, 4, 2), T(F, -1, 1, 2, 20, 1), T(F, 0, 1, 6) };
            run("stft grad with window", "dtrexec", "DFTGrad", 1, ga, 6, 3, gin, 2);
            struct onnx_attr gc[6] = { ai("onesided", 0), ai("axis", 1), ai("dft_length", 5), ai("stft", 1),
                                       ai("frame_step", 4), aints("shape", 3, DIMS(1, 12, 2)) };
            struct tensor *gcin[2] = { T(F, -1, 1, 1, 2, 5, 2), T(F, -1, 1, 1, 12, 2) };
            run("stft grad complex", "dtrexec", "DFTGrad", 1, gc, 6, 2, gcin, 1);
        }
        struct tensor *s1[3] = { T(F, -1, 1, 2, 20, 1), mk_vals(ONNX_DTYPE_INT64, 0, NULL, (double[]){ 3 }),
                                 T(F, 0, 1, 6) };
        run("stft window", "", "STFT", 17, NULL, 0, 3, s1, 1);
        struct onnx_attr two[1] = { ai("onesided", 0) };
        struct tensor *s2[4] = { T(F, -1, 1, 1, 12, 2), mk_vals(ONNX_DTYPE_INT64, 0, NULL, (double[]){ 4 }), NULL,
                                 mk_vals(ONNX_DTYPE_INT64, 0, NULL, (double[]){ 5 }) };
        run("stft complex", "", "STFT", 17, two, 1, 4, s2, 1);
    }
    {
        int64_t k[1] = { 2 };
        struct onnx_attr a[1] = { aints("kernel_shape", 1, k) };
        struct tensor *in[2] = { T(ONNX_DTYPE_INT32, -50, 50, 1, 2, 3),
                                 mk_vals(ONNX_DTYPE_INT64, 3, DIMS(1, 2, 3), (double[]){ 0, 2, 3, 4, 7, 7 }) };
        run("maxunpool int32", "", "MaxUnpool", 22, a, 1, 2, in, 1);
    }
    for (int i = 0; i < pool_n; i++)
        free(pool[i]);
    printf("%d of %d cases passed\n", cases - failures, cases);
    return failures ? 1 : 0;
}
