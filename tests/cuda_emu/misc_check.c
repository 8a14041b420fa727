/* tests/cuda_emu/misc_check.c — the "misc" family's CUDA kernels
 * (ops/cuda/misc.c, misc_kernels.cu) run on the host (see run_family.sh misc)
 * against the CPU kernels of the same operators, on the same random inputs:
 * every operator and gradient kernel of the family, float and double and
 * the integer dtypes they take, odd shapes and attribute combinations,
 * optional inputs given and omitted (CausalConvWithState, LinearAttention). Each
 * emulated call runs twice and must give the same bits. The other families'
 * kernels that misc.c calls (Sum, ReduceMax, Gather, Resize, the strided
 * copy) are replaced here by their CPU kernels, so what this checks is the
 * family's own host code and device code. Exits 1 on the first mismatch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/layout-impl.h"
#include "ops/misc-params.h"
#include "ops/shape-impl.h"

extern const struct cuda_kernel_entry cuda_kernels_misc[];
extern const struct op_def op_sum;

/* freed with the pool: keep a copy of what Upsample's params_free would free */
#define EMU_KEEP_PARAMS(def, op, params)                                                    \
    do {                                                                                    \
        if ((params) && (def)->params_free && !strcmp((op), "Upsample"))                    \
            keep(((struct upsample_params *)(params))->resize);                             \
    } while (0)
#include "emu_check.h"

/* ---- the other families this one calls, on the host ---------------------------------- */

void *cuda_elem_scratch(struct op_call *c, size_t bytes) { return scratch(c, bytes); }
void cuda_elem_scratch_free(struct op_call *c, void *p) { (void)c; free(p); }
void *layout_upload(struct op_call *c, void *host, size_t bytes) { (void)c, (void)bytes; return host; }
void layout_scratch_free(struct op_call *c, void *p) { (void)c; free(p); }
int layout_copy_to_contiguous(struct op_call *c, void *dst, const void *src, size_t esize, int rank,
                              const int64_t *dims, const int64_t *st)
{
    (void)c;
    shape_copy_strided(dst, src, esize, rank, dims, st);
    return 0;
}
int cuda_elem_copy(struct op_call *c, void *dst, const void *src, size_t bytes)
{
    (void)c;
    memmove(dst, src, bytes);
    return 0;
}
int cuda_elem_sum(struct op_call *c) { return op_sum.kernel[BACKEND_CPU](c); }
int cuda_elem_reduce(struct op_call *c) { return c->def->kernel[BACKEND_CPU](c); }
int cuda_gather(struct op_call *c) { return c->def->kernel[BACKEND_CPU](c); }
int cuda_resize(struct op_call *c) { return c->def->kernel[BACKEND_CPU](c); }

/* Runs op on the CPU and (twice) through the misc family; compares. */
static void run(const char *what, const char *domain, const char *op, int opset, struct onnx_attr *attrs,
                int n_attrs, int n_in, struct tensor **in, int n_out)
{
    emu_run(cuda_kernels_misc, what, domain, op, opset, attrs, n_attrs, n_in, in, n_out);
}

#define DIMS(...) ((int64_t[]){ __VA_ARGS__ })
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define T(dtype, lo, hi, ...) mk(dtype, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__), lo, hi)
static struct onnx_attr ai(const char *n, int64_t v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_INT, .i = v }; }
static struct onnx_attr af(const char *n, float v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_FLOAT, .f = v }; }
static struct onnx_attr as(const char *n, const char *v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_STRING, .s = (char *)v, .s_len = strlen(v) }; }
static struct onnx_attr aints(const char *n, int k, int64_t *v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_INTS, .ints = v, .n = k }; }

int main(void)
{
    const int F = ONNX_DTYPE_FLOAT, D = ONNX_DTYPE_DOUBLE;
    const int fl[2] = { F, D };
    static const char *const um[] = { "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
                                      "Atanh", "Softsign", "ThresholdedRelu", "Shrink" };
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 12; k++) {
            double lo = k == 7 ? 1.1 : -0.95, hi = k == 7 ? 3 : 0.95;
            struct onnx_attr a[3] = { af("alpha", 0.2f), af("lambd", 0.3f), af("bias", 0.1f) };
            struct tensor *x = T(fl[t], lo, hi, 3, 5, 7);
            run(um[k], "", um[k], 22, a, 3, 1, &x, 1);
            struct tensor *g[2] = { T(fl[t], -1, 1, 3, 5, 7), x };
            struct onnx_attr ga[3] = { as("op", um[k]), af("alpha", 0.2f), af("lambd", 0.3f) };
            run("UnaryMathGrad", "dtrexec", "UnaryMathGrad", 1, ga, 3, 2, g, 1);
        }
    {
        struct onnx_attr a[2] = { af("lambd", 1.5f), af("bias", 2.0f) };
        struct tensor *x = T(ONNX_DTYPE_INT16, -9, 9, 4, 6);
        run("Shrink int16", "", "Shrink", 9, a, 2, 1, &x, 1);
    }
    /* bitwise, broadcasting, every integer type */
    static const int ints[8] = { ONNX_DTYPE_INT8, ONNX_DTYPE_INT16, ONNX_DTYPE_INT32, ONNX_DTYPE_INT64,
                                 ONNX_DTYPE_UINT8, ONNX_DTYPE_UINT16, ONNX_DTYPE_UINT32, ONNX_DTYPE_UINT64 };
    static const char *const bw[] = { "BitwiseAnd", "BitwiseOr", "BitwiseXor" };
    for (int t = 0; t < 8; t++) {
        for (int k = 0; k < 3; k++) {
            struct tensor *p[2] = { T(ints[t], -100, 100, 2, 3, 4), T(ints[t], -100, 100, 3, 1) };
            run(bw[k], "", bw[k], 18, NULL, 0, 2, p, 1);
        }
        struct tensor *x = T(ints[t], -100, 100, 5, 3);
        run("BitwiseNot", "", "BitwiseNot", 18, NULL, 0, 1, &x, 1);
        for (int dir = 0; dir < 2; dir++) {
            struct onnx_attr a = as("direction", dir ? "RIGHT" : "LEFT");
            struct tensor *p[2] = { T(ints[t], -100, 100, 4, 1, 6), T(ints[t], -3, 70, 6) };
            run("BitShift", "", "BitShift", 28, &a, 1, 2, p, 1);
        }
    }
    {
        struct onnx_attr a = ai("to", ONNX_DTYPE_INT32);
        struct tensor *x = T(F, -1, 1, 3, 4);
        run("BitCast", "", "BitCast", 26, &a, 1, 1, &x, 1);
    }
    for (int t = 0; t < 2; t++) {
        struct tensor *p[3] = { T(fl[t], -1, 1, 2, 3, 4), T(fl[t], -1, 1, 3, 1), T(fl[t], -1, 1, 4) };
        run("Mean", "", "Mean", 13, NULL, 0, 3, p, 1);
        struct tensor *x = T(fl[t], -1, 1, 2, 3, 4, 5);
        run("GlobalMaxPool", "", "GlobalMaxPool", 22, NULL, 0, 1, &x, 1);
        for (int crd = 0; crd < 2; crd++) {
            struct onnx_attr a[2] = { ai("blocksize", 2), as("mode", crd ? "CRD" : "DCR") };
            struct tensor *d2s = T(fl[t], -1, 1, 2, 8, 3, 5), *s2d = T(fl[t], -1, 1, 2, 3, 4, 6);
            run("DepthToSpace", "", "DepthToSpace", 13, a, 2, 1, &d2s, 1);
            run("SpaceToDepth", "", "SpaceToDepth", 28, a, 2, 1, &s2d, 1);
        }
        for (int64_t k = -3; k <= 4; k += 7) {
            struct onnx_attr a[2] = { ai("k", k), ai("dtype", ints[t * 3]) };
            struct tensor *x = T(fl[t], 0, 1, 4, 6);
            run("EyeLike", "", "EyeLike", 22, a, 2, 1, &x, 1);
        }
        struct tensor *nz = T(fl[t], -1, 1, 3, 4, 5);
        for (int i = 0; i < 60; i += 3)
            ((t ? (void)(((double *)nz->data)[i] = 0) : (void)(((float *)nz->data)[i] = 0)));
        run("NonZero", "", "NonZero", 13, NULL, 0, 1, &nz, 1);
        for (int v = 0; v < 2; v++) {
            struct onnx_attr a = ai("axis", 1);
            struct tensor *x = T(fl[t], -1, 1, 3, 4, 5);
            run("Hardmax", "", "Hardmax", v ? 13 : 11, &a, 1, 1, &x, 1);
        }
        for (int pn = 1; pn <= 2; pn++) {
            struct onnx_attr a[2] = { ai("p", pn), ai("axis", 1) };
            struct tensor *x = T(fl[t], -1, 1, 3, 4, 5);
            run("LpNormalization", "", "LpNormalization", 22, a, 2, 1, &x, 1);
            struct tensor *g[2] = { T(fl[t], -1, 1, 3, 4, 5), x };
            run("LpNormalizationGrad", "dtrexec", "LpNormalizationGrad", 1, a, 2, 2, g, 1);
        }
        for (int e = 0; e < 2; e++)
            for (int r = 0; r < 2; r++) {
                struct onnx_attr a[2] = { ai("exclusive", e), ai("reverse", r) };
                struct tensor *x = T(fl[t], 0.5, 1.5, 3, 4, 2), *ax = mk_vals(ONNX_DTYPE_INT64, 0, NULL, (double[]){ 1 });
                struct tensor *p[2] = { x, ax };
                run("CumProd", "", "CumProd", 26, a, 2, 2, p, 1);
                struct tensor *g[3] = { T(fl[t], -1, 1, 3, 4, 2), x, ax };
                run("CumProdGrad", "dtrexec", "CumProdGrad", 1, a, 2, 3, g, 1);
                struct tensor *xi = T(ONNX_DTYPE_INT32, -3, 4, 3, 4, 2);
                struct tensor *pi[2] = { xi, ax };
                run("CumProd int32", "", "CumProd", 26, a, 2, 2, pi, 1);
            }
        {
            struct onnx_attr a = ai("axis", -1);
            struct tensor *p[2] = { T(fl[t], -1, 1, 3, 5), mk_vals(ONNX_DTYPE_BOOL, 1, DIMS(4), (double[]){ 1, 0, 1, 1 }) };
            run("Compress", "", "Compress", 11, &a, 1, 2, p, 1);
            struct tensor *q[2] = { T(fl[t], -1, 1, 3, 5), mk_vals(ONNX_DTYPE_BOOL, 1, DIMS(5), (double[]){ 0, 1, 0, 1, 1 }) };
            run("Compress flat", "", "Compress", 11, NULL, 0, 2, q, 1);
        }
        for (int b = 0; b < 2; b++) {
            struct onnx_attr a[2] = { ai("batch_axis", b), ai("time_axis", 1 - b) };
            struct tensor *p[2] = { T(fl[t], -1, 1, 4, 4, 3), mk_vals(ONNX_DTYPE_INT64, 1, DIMS(4), (double[]){ 4, 0, 2, 3 }) };
            run("ReverseSequence", "", "ReverseSequence", 10, a, 2, 2, p, 1);
        }
        for (int size = 1; size <= 4; size++) {
            struct onnx_attr a[4] = { ai("size", size), af("alpha", 0.3f), af("beta", 0.75f), af("bias", 1.2f) };
            struct tensor *x = T(fl[t], -1, 1, 2, 6, 3, 2);
            run("LRN", "", "LRN", 13, a, 4, 1, &x, 1);
            struct tensor *g[2] = { T(fl[t], -1, 1, 2, 6, 3, 2), x };
            run("LRNGrad", "dtrexec", "LRNGrad", 1, a, 4, 2, g, 1);
        }
        {
            int64_t axes[2] = { 0, 2 };
            struct onnx_attr a = aints("axes", 2, axes);
            struct tensor *x = T(fl[t], -1, 1, 3, 4, 5);
            run("MeanVarianceNormalization", "", "MeanVarianceNormalization", 13, &a, 1, 1, &x, 1);
            struct tensor *g[2] = { T(fl[t], -1, 1, 3, 4, 5), x };
            run("MeanVarianceNormalizationGrad", "dtrexec", "MeanVarianceNormalizationGrad", 1, &a, 1, 2, g, 1);
        }
        {
            struct tensor *x = T(fl[t], -1, 1, 2, 3, 4, 4);
            run("Det", "", "Det", 22, NULL, 0, 1, &x, 1);
            struct tensor *g[2] = { T(fl[t], -1, 1, 2, 3), x };
            run("DetGrad", "dtrexec", "DetGrad", 1, NULL, 0, 2, g, 1);
            struct tensor *s = mk_vals(fl[t], 3, DIMS(1, 3, 3), (double[]){ 1, 2, 3, 2, 4, 6, 0.5, -1, 2 });
            struct tensor *gs[2] = { T(fl[t], -1, 1, 1), s };
            run("DetGrad singular", "dtrexec", "DetGrad", 1, NULL, 0, 2, gs, 1);
        }
        {
            struct onnx_attr a = as("mode", "linear");
            struct tensor *p[2] = { T(fl[t], -1, 1, 1, 2, 3, 4), mk_vals(F, 1, DIMS(4), (double[]){ 1, 1, 2, 1.5 }) };
            run("Upsample", "", "Upsample", 9, &a, 1, 2, p, 1);
        }
        for (int ac = 0; ac < 2; ac++) {
            struct onnx_attr a = ai("align_corners", ac);
            struct tensor *sz = mk_vals(ONNX_DTYPE_INT64, 1, DIMS(5), (double[]){ 2, 1, 3, 4, 5 });
            struct tensor *p[2] = { T(fl[t], -1, 1, 2, 3, 4), sz };
            run("AffineGrid", "", "AffineGrid", 20, &a, 1, 2, p, 1);
            struct tensor *g[2] = { T(fl[t], -1, 1, 2, 3, 4, 5, 3), sz };
            run("AffineGridGrad", "dtrexec", "AffineGridGrad", 1, &a, 1, 2, g, 1);
        }
        static const char *const modes[] = { "linear", "nearest", "cubic" };
        static const char *const pads[] = { "zeros", "border", "reflection" };
        for (int m = 0; m < 3; m++)
            for (int pd = 0; pd < 3; pd++)
                for (int ac = 0; ac < 2; ac++) {
                    struct onnx_attr a[3] = { as("mode", modes[m]), as("padding_mode", pads[pd]), ai("align_corners", ac) };
                    struct tensor *x = T(fl[t], -1, 1, 2, 3, 4, 5), *grid = T(fl[t], -1.3, 1.3, 2, 3, 2, 2);
                    struct tensor *p[2] = { x, grid };
                    run("GridSample", "", "GridSample", 20, a, 3, 2, p, 1);
                    struct tensor *g[3] = { T(fl[t], -1, 1, 2, 3, 3, 2), x, grid };
                    run("GridSampleGrad", "dtrexec", "GridSampleGrad", 1, a, 3, 3, g, 2);
                    struct tensor *x3 = T(fl[t], -1, 1, 1, 2, 3, 3, 4), *g3 = T(fl[t], -1.3, 1.3, 1, 2, 2, 3, 3);
                    struct tensor *p3[2] = { x3, g3 };
                    run("GridSample 3d", "", "GridSample", 20, a, 3, 2, p3, 1);
                }
    }
    /* CausalConvWithState and its gradient: with and without bias and
     * past_state, SiLU, a kernel longer than the input, K = 1 */
    static const int64_t ccs[][4] = { { 2, 3, 7, 4 }, { 1, 2, 2, 4 }, { 3, 2, 5, 1 } };
    for (int g = 0; g < 3; g++)
        for (int opt = 0; opt < 4; opt++)
            for (int silu = 0; silu < 2; silu++) {
                const int64_t b = ccs[g][0], ch = ccs[g][1], len = ccs[g][2], k = ccs[g][3];
                struct onnx_attr a = as("activation", silu ? "silu" : "none");
                struct tensor *x = T(F, -1, 1, b, ch, len), *w = T(F, -1, 1, ch, 1, k);
                struct tensor *bias = opt & 1 ? T(F, -1, 1, ch) : NULL;
                struct tensor *past = opt & 2 ? T(F, -1, 1, b, ch, k - 1) : NULL;
                struct tensor *p[4] = { x, w, bias, past };
                char what[96];
                snprintf(what, sizeof what, "CausalConvWithState #%d opt=%d silu=%d", g, opt, silu);
                run(what, "", "CausalConvWithState", 27, &a, 1, 4, p, 2);
                for (int dys = 1; dys < 4; dys++) {
                    struct tensor *gin[6] = { dys & 1 ? T(F, -1, 1, b, ch, len) : NULL,
                                              dys & 2 ? T(F, -1, 1, b, ch, k - 1) : NULL, x, w, bias, past };
                    snprintf(what, sizeof what, "CausalConvWithStateGrad #%d opt=%d silu=%d dys=%d", g, opt,
                             silu, dys);
                    run(what, "dtrexec", "CausalConvWithStateGrad", 1, &a, 1, 6, gin, 4);
                }
            }
    /* LinearAttention and its gradient: the four rules, GQA, per-key and
     * per-head decay, shared beta, with and without past_state */
    static const char *const rules[] = { "linear", "gated", "delta", "gated_delta" };
    static const int64_t las[][6] = { { 2, 3, 2, 2, 3, 2 }, { 1, 4, 4, 2, 2, 3 }, { 2, 1, 2, 1, 3, 3 } };
    for (int g = 0; g < 3; g++)
        for (int r = 0; r < 4; r++)
            for (int var = 0; var < 2; var++) {
                const int64_t b = las[g][0], t = las[g][1], hq = las[g][2], hkv = las[g][3], dk = las[g][4],
                              dv = las[g][5];
                struct onnx_attr a[4] = { ai("q_num_heads", hq), ai("kv_num_heads", hkv), as("update_rule", rules[r]),
                                          af("scale", var ? 0.7f : 0.0f) };
                struct tensor *q = T(F, -1, 1, b, t, hq * dk), *k = T(F, -0.5, 0.5, b, t, hkv * dk);
                struct tensor *v = T(F, -1, 1, b, t, hkv * dv);
                struct tensor *past = var ? T(F, -1, 1, b, hkv, dk, dv) : NULL;
                struct tensor *decay = r & 1 ? (var ? T(F, -1, -0.05, b, t, hkv) : T(F, -1, -0.05, b, t, hkv * dk))
                                             : NULL;
                struct tensor *beta = r & 2 ? T(F, 0.2, 0.9, b, t, var ? 1 : hkv) : NULL;
                struct tensor *p[6] = { q, k, v, past, decay, beta };
                char what[96];
                snprintf(what, sizeof what, "LinearAttention #%d %s var=%d", g, rules[r], var);
                run(what, "", "LinearAttention", 27, a, 4, 6, p, 2);
                for (int dys = 1; dys < 4; dys++) {
                    struct tensor *gin[8] = { dys & 1 ? T(F, -1, 1, b, t, hq * dv) : NULL,
                                              dys & 2 ? T(F, -1, 1, b, hkv, dk, dv) : NULL,
                                              q, k, v, past, decay, beta };
                    snprintf(what, sizeof what, "LinearAttentionGrad #%d %s var=%d dys=%d", g, rules[r], var, dys);
                    run(what, "dtrexec", "LinearAttentionGrad", 1, a, 4, 8, gin, 6);
                }
            }
    printf("%d of %d emulated misc-family cases match the CPU\n", cases - failures, cases);
    for (int i = 0; i < pool_n; i++)
        free(pool[i]);
    return failures ? 1 : 0;
}
