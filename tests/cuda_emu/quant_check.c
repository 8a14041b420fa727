/* tests/cuda_emu/quant_check.c — the "quant" family's CUDA kernels
 * (ops/cuda/quant.c, quant_kernels.cu) run on the host (see run_family.sh quant)
 * against the CPU kernels of the same operators on the same inputs:
 * QuantizeLinear and DequantizeLinear per tensor, per axis and blocked
 * (with a remainder block), every output type, int32 inputs, `precision`,
 * float16/bfloat16 scales and outputs, and DynamicQuantizeLinear on
 * all-positive, all-negative, mixed and constant inputs and more elements
 * than a block has threads. Each emulated call runs twice and must give
 * the same bits; outputs must equal the CPU's bit for bit. Exits 1 on the
 * first mismatch of a case (and goes on to the next case). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda-impl.h"
#include "ops/elementwise-impl.h"

extern const struct cuda_kernel_entry cuda_kernels_quant[];

cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { (void)e; return "emulated error"; }

static struct cuda_ctx ctx;
static const struct backend emu = { .kind = BACKEND_CUDA, .name = "cuda-emu", .ctx = &ctx };

static void *pool[4096];
static int pool_n;
static void *keep(void *p)
{
    if (pool_n < (int)(sizeof pool / sizeof pool[0]))
        pool[pool_n++] = p;
    return p;
}

static uint32_t rng = 777u;
static double frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / 16777216.0;
}

/* Values in [lo, hi); integers floored; float16/bfloat16 rounded. Every
 * eighth float is an exact half-integer multiple of 0.5 to hit ties. */
static struct tensor *mk(int dtype, int rank, const int64_t *dims, double lo, double hi)
{
    struct tensor *t = keep(calloc(1, sizeof *t));
    t->dtype = dtype;
    t->rank = rank;
    if (rank)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    int64_t n = tensor_numel(t);
    t->data = keep(calloc((size_t)(n ? n : 1), onnx_dtype_size(dtype)));
    for (int64_t i = 0; i < n; i++) {
        double v = lo + (hi - lo) * frand();
        if (i % 8 == 3)
            v = floor(v) + 0.5;
        switch (dtype) {
        case ONNX_DTYPE_FLOAT: ((float *)t->data)[i] = (float)v; break;
        case ONNX_DTYPE_FLOAT16: ((uint16_t *)t->data)[i] = ew_f32_to_f16((float)v); break;
        case ONNX_DTYPE_BFLOAT16: ((uint16_t *)t->data)[i] = ew_f32_to_bf16((float)v); break;
        case ONNX_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)floor(v); break;
        case ONNX_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)floor(v); break;
        case ONNX_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)floor(v); break;
        case ONNX_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)floor(fabs(v)); break;
        case ONNX_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)floor(fabs(v)); break;
        default: break;
        }
    }
    return t;
}

static void *scratch(void *c, size_t n) { (void)c; return calloc(1, n ? n : 1); }
static void scratch_free(void *c, void *p) { (void)c; free(p); }

static int failures, cases;

static void run(const char *what, const char *op, int opset, struct onnx_attr *attrs, int n_attrs, int n_in,
                struct tensor **in, int n_out)
{
    int version;
    const struct op_def *def = op_registry_find("", op, opset, &version);
    cases++;
    char err[512] = "";
    void *params = NULL;
    struct onnx_node node = { .name = (char *)what, .op_type = (char *)op, .domain = "", .n_attrs = n_attrs,
                              .attrs = attrs };
    if (!def || (def->parse && def->parse(&node, version, &params, err, sizeof err))) {
        printf("FAIL %s: %s\n", what, def ? err : "not registered");
        failures++;
        return;
    }
    keep(params);
    struct tensor ref[3], dev[2][3];
    struct tensor *outs[3] = { &ref[0], &ref[1], &ref[2] };
    struct op_env env = { .scratch_alloc = scratch, .scratch_free = scratch_free, .backend = &backend_cpu,
                          .threads = 1, .err = err, .err_size = sizeof err };
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = what, .n_in = n_in,
                         .in = (const struct tensor *const *)in, .n_out = n_out, .out = outs, .env = &env };
    memset(ref, 0, sizeof ref);
    if (def->infer(&c)) {
        printf("FAIL %s: infer: %s\n", what, err);
        failures++;
        return;
    }
    for (int k = 0; k < n_out; k++)
        ref[k].data = keep(calloc(1, tensor_size_bytes(&ref[k]) + 8));
    if (def->kernel[BACKEND_CPU](&c)) {
        printf("FAIL %s: cpu: %s\n", what, err);
        failures++;
        return;
    }
    cuda_kernel_fn fn = NULL;
    for (const struct cuda_kernel_entry *e = cuda_kernels_quant; e->name; e++)
        if (!strcmp(e->name, op))
            fn = e->kernel;
    if (!fn) {
        printf("FAIL %s: no CUDA kernel\n", what);
        failures++;
        return;
    }
    for (int r = 0; r < 2; r++) {
        struct tensor *douts[3] = { &dev[r][0], &dev[r][1], &dev[r][2] };
        for (int k = 0; k < n_out; k++) {
            dev[r][k] = ref[k];
            dev[r][k].data = keep(malloc(tensor_size_bytes(&ref[k]) + 8));
            memset(dev[r][k].data, 0x5a, tensor_size_bytes(&ref[k]) + 8);
        }
        env.backend = &emu;
        c.out = douts;
        if (fn(&c)) {
            printf("FAIL %s: cuda: %s\n", what, err);
            failures++;
            return;
        }
    }
    for (int k = 0; k < n_out; k++) {
        size_t bytes = tensor_size_bytes(&ref[k]), es = onnx_dtype_size(ref[k].dtype);
        if (memcmp(dev[0][k].data, dev[1][k].data, bytes)) {
            printf("FAIL %s: output %d differs between two CUDA runs\n", what, k);
            failures++;
            return;
        }
        for (int64_t i = 0; i < tensor_numel(&ref[k]); i++)
            if (memcmp((char *)ref[k].data + i * es, (char *)dev[0][k].data + i * es, es)) {
                printf("FAIL %s: output %d index %lld: cpu %.9g, cuda %.9g\n", what, k, (long long)i,
                       tensor_get_double(&ref[k], i), tensor_get_double(&dev[0][k], i));
                failures++;
                return;
            }
    }
}

#define DIMS(...) ((int64_t[]){ __VA_ARGS__ })
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define T(dtype, lo, hi, ...) mk(dtype, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__), lo, hi)
static struct onnx_attr ai(const char *n, int64_t v) { return (struct onnx_attr){ .name = (char *)n, .type = ONNX_ATTR_INT, .i = v }; }

int main(void)
{
    const int F = ONNX_DTYPE_FLOAT, H = ONNX_DTYPE_FLOAT16, BF = ONNX_DTYPE_BFLOAT16, I32 = ONNX_DTYPE_INT32;
    static const int qt[4] = { ONNX_DTYPE_INT8, ONNX_DTYPE_UINT8, ONNX_DTYPE_INT16, ONNX_DTYPE_UINT16 };
    static const double qlo[4] = { -128, 0, -32768, 0 }, qhi[4] = { 127, 255, 32767, 65535 };
    for (int q = 0; q < 4; q++) {
        double span = qhi[q] - qlo[q];
        /* per tensor, opset 10 */
        struct tensor *x = T(F, -span, span, 3, 5, 7), *s = T(F, 0.5, 2, 1), *z = T(qt[q], qlo[q], qhi[q], 1);
        struct tensor *in[3] = { x, s, z };
        run("QuantizeLinear per tensor", "QuantizeLinear", 10, NULL, 0, 3, in, 1);
        struct tensor *xq = T(qt[q], qlo[q], qhi[q], 3, 5, 7);
        struct tensor *din[3] = { xq, s, z };
        run("DequantizeLinear per tensor", "DequantizeLinear", 10, NULL, 0, 3, din, 1);
        /* per axis 0, 1, 2 */
        for (int a = 0; a < 3; a++) {
            int64_t d = a == 0 ? 3 : a == 1 ? 5 : 7;
            struct onnx_attr at = ai("axis", a - (a == 2 ? 3 : 0));
            struct tensor *sa = mk(F, 1, &d, 0.1, 3), *za = mk(qt[q], 1, &d, qlo[q], qhi[q]);
            struct tensor *qin[3] = { x, sa, za }, *dqin[3] = { xq, sa, za };
            run("QuantizeLinear per axis", "QuantizeLinear", 13, &at, 1, 3, qin, 1);
            run("DequantizeLinear per axis", "DequantizeLinear", 19, &at, 1, 3, dqin, 1);
        }
        /* blocked along axis 2 (7 = 3 + 3 + 1) and axis 0 */
        struct onnx_attr bat[2] = { ai("axis", 2), ai("block_size", 3) };
        struct tensor *sb = T(F, 0.1, 3, 3, 5, 3), *zb = T(qt[q], qlo[q], qhi[q], 3, 5, 3);
        struct tensor *bin[3] = { x, sb, zb }, *dbin[3] = { xq, sb, zb };
        run("QuantizeLinear blocked", "QuantizeLinear", 21, bat, 2, 3, bin, 1);
        run("DequantizeLinear blocked", "DequantizeLinear", 21, bat, 2, 3, dbin, 1);
        struct onnx_attr bat0[2] = { ai("axis", 0), ai("block_size", 2) };
        struct tensor *sb0 = T(F, 0.1, 3, 2, 5, 7);
        struct tensor *bin0[2] = { x, sb0 };
        struct onnx_attr odt[3] = { ai("axis", 0), ai("block_size", 2), ai("output_dtype", qt[q]) };
        run("QuantizeLinear blocked output_dtype", "QuantizeLinear", 25, odt, 3, 2, bin0, 1);
        struct tensor *dbin0[2] = { xq, sb0 };
        run("DequantizeLinear blocked no zero point", "DequantizeLinear", 25, bat0, 2, 2, dbin0, 1);
    }
    /* int32 and 16-bit float inputs, precision, 16-bit outputs */
    {
        struct tensor *xi = T(I32, -100000, 100000, 4, 6), *s = T(F, 3, 300, 6), *z = T(ONNX_DTYPE_INT16, -100, 100, 6);
        struct onnx_attr at = ai("axis", 1);
        struct tensor *in[3] = { xi, s, z };
        run("QuantizeLinear int32", "QuantizeLinear", 28, &at, 1, 3, in, 1);
        struct tensor *zi = T(I32, -1000, 1000, 6), *sd = T(F, 0.001, 0.1, 6);
        struct tensor *din[3] = { xi, sd, zi };
        run("DequantizeLinear int32 zero point", "DequantizeLinear", 28, &at, 1, 3, din, 1);
        for (int pr = 0; pr < 3; pr++) {
            int prec = pr == 0 ? F : pr == 1 ? H : BF;
            struct onnx_attr pa[2] = { ai("axis", 1), ai("precision", prec) };
            struct tensor *xh = T(pr ? prec : F, -300, 300, 4, 6), *sh = T(pr ? prec : F, 0.3, 3, 6);
            struct tensor *pin[2] = { xh, sh };
            run("QuantizeLinear precision", "QuantizeLinear", 23, pa, 2, 2, pin, 1);
        }
        for (int o = 0; o < 3; o++) {
            int od = o == 0 ? F : o == 1 ? H : BF;
            struct onnx_attr oa[2] = { ai("axis", 1), ai("output_dtype", od) };
            struct tensor *xq = T(ONNX_DTYPE_UINT8, 0, 255, 4, 6), *sh = T(o == 2 ? BF : H, 0.01, 3, 6);
            struct tensor *oin[2] = { xq, sh };
            run("DequantizeLinear output_dtype", "DequantizeLinear", 23, oa, 2, 2, oin, 1);
        }
    }
    /* DynamicQuantizeLinear */
    {
        static const double lo[5] = { -3, 0.5, -7, -2, 2 }, hi[5] = { 5, 9, -0.25, 2, 2 };
        for (int k = 0; k < 5; k++) {
            struct tensor *x = T(F, lo[k], hi[k], k == 3 ? 1000 : 37, 3);
            run("DynamicQuantizeLinear", "DynamicQuantizeLinear", 11, NULL, 0, 1, &x, 3);
        }
    }
    printf("%d of %d emulated quant-family cases match the CPU\n", cases - failures, cases);
    for (int i = 0; i < pool_n; i++)
        free(pool[i]);
    return failures ? 1 : 0;
}
