/* tests/cuda_emu/vision_check.c — the "vision" family's CUDA kernels
 * (ops/cuda/vision.c, vision_kernels.cu) run on the host (see
 * run_vision.sh) against the CPU kernels of the same operators, on the same
 * random inputs: CenterCropPad over element sizes, TensorScatter and its
 * gradient (linear, circular wrapping past the end),
 * RoiAlign (avg, max, both coordinate modes, fixed and adaptive sampling)
 * and its gradient, DeformConv and its gradient (mask, bias, groups,
 * offset groups, pads, strides, dilations), NonMaxSuppression and Unique (the host path). Each
 * emulated call runs twice and must give the same bits. Exits 1 on the
 * first mismatch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/layout-impl.h"
#include "ops/params.h"

extern const struct cuda_kernel_entry cuda_kernels_vision[];

/* ---- the CUDA runtime and the other families, on the host --------------------------- */

cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st)
{
    (void)k, (void)st;
    memmove(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { (void)st; memset(d, v, n); return cudaSuccess; }
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data) { (void)s; fn(data); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { (void)e; return "emulated error"; }

static void *scratch(void *ctx, size_t n) { (void)ctx; return calloc(1, n ? n : 1); }
static void scratch_free(void *ctx, void *p) { (void)ctx; free(p); }
void *layout_upload(struct op_call *c, void *host, size_t bytes) { (void)c, (void)bytes; return host; }
void layout_scratch_free(struct op_call *c, void *p) { (void)c; free(p); }

static struct cuda_ctx ctx;
static const struct backend emu = { .kind = BACKEND_CUDA, .name = "cuda-emu", .ctx = &ctx };

/* ---- cases ----------------------------------------------------------------------------- */

/* Every block a case allocates, freed at the end (the leak checker runs). */
static void *pool[8192];
static int pool_n;
static void *keep(void *p)
{
    if (pool_n < (int)(sizeof pool / sizeof pool[0]))
        pool[pool_n++] = p;
    return p;
}

static uint32_t rng = 12345u;
static double frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / 16777216.0;    /* [0, 1) */
}

static struct tensor *mk(int dtype, int rank, const int64_t *dims, double lo, double hi)
{
    struct tensor *t = keep(calloc(1, sizeof *t));
    t->dtype = dtype;
    t->rank = rank;
    if (rank)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    int64_t n = tensor_numel(t);
    t->data = keep(calloc((size_t)(n ? n : 1), onnx_dtype_size(dtype) ? onnx_dtype_size(dtype) : 1));
    for (int64_t i = 0; i < n; i++) {
        double v = lo + (hi - lo) * frand();
        switch (dtype) {
        case ONNX_DTYPE_FLOAT: ((float *)t->data)[i] = (float)v; break;
        case ONNX_DTYPE_DOUBLE: ((double *)t->data)[i] = v; break;
        case ONNX_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)floor(v); break;
        case ONNX_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)floor(v); break;
        case ONNX_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)floor(v); break;
        case ONNX_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)floor(v); break;
        case ONNX_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)floor(fabs(v)); break;
        case ONNX_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)floor(fabs(v)); break;
        case ONNX_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)floor(fabs(v)); break;
        case ONNX_DTYPE_UINT64: ((uint64_t *)t->data)[i] = (uint64_t)floor(fabs(v)); break;
        case ONNX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v > 0; break;
        default: break;
        }
    }
    return t;
}

static struct tensor *mk_vals(int dtype, int rank, const int64_t *dims, const double *v)
{
    struct tensor *t = mk(dtype, rank, dims, 0, 0);
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        if (dtype == ONNX_DTYPE_INT64)
            ((int64_t *)t->data)[i] = (int64_t)v[i];
        else if (dtype == ONNX_DTYPE_INT32)
            ((int32_t *)t->data)[i] = (int32_t)v[i];
        else if (dtype == ONNX_DTYPE_BOOL)
            ((uint8_t *)t->data)[i] = v[i] != 0;
        else if (dtype == ONNX_DTYPE_FLOAT)
            ((float *)t->data)[i] = (float)v[i];
        else
            ((double *)t->data)[i] = v[i];
    }
    return t;
}

static int failures, cases;

static double elem(const struct tensor *t, int64_t i) { return tensor_get_double(t, i); }

/* Runs op on the CPU and (twice) through the vision family; compares. */
static void run(const char *what, const char *domain, const char *op, int opset, struct onnx_attr *attrs,
                int n_attrs, int n_in, struct tensor **in, int n_out)
{
    int version;
    const struct op_def *def = op_registry_find(domain, op, opset, &version);
    cases++;
    if (!def) {
        printf("FAIL %s: %s not registered\n", what, op);
        failures++;
        return;
    }
    char err[512] = "";
    void *params = NULL;
    struct onnx_node node = { .name = (char *)what, .op_type = (char *)op, .domain = (char *)domain,
                              .n_attrs = n_attrs, .attrs = attrs };
    if (def->parse && def->parse(&node, version, &params, err, sizeof err)) {
        printf("FAIL %s: parse: %s\n", what, err);
        failures++;
        return;
    }
    keep(params);
    struct tensor ref[5], dev[2][5];
    struct tensor *outs[5] = { &ref[0], &ref[1], &ref[2], &ref[3], &ref[4] };
    struct op_env env = { .scratch_alloc = scratch, .scratch_free = scratch_free, .backend = &backend_cpu,
                          .threads = 1, .err = err, .err_size = sizeof err };
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = what,
                         .n_in = n_in, .in = (const struct tensor *const *)in, .n_out = n_out,
                         .out = outs, .env = &env };
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
    for (const struct cuda_kernel_entry *e = cuda_kernels_vision; e->name; e++)
        if (!strcmp(e->name, op) && !strcmp(e->domain, domain))
            fn = e->kernel;
    if (!fn) {
        printf("FAIL %s: no CUDA kernel for %s\n", what, op);
        failures++;
        return;
    }
    for (int run = 0; run < 2; run++) {
        struct tensor *douts[5] = { &dev[run][0], &dev[run][1], &dev[run][2], &dev[run][3], &dev[run][4] };
        for (int k = 0; k < n_out; k++) {
            dev[run][k] = ref[k];
            dev[run][k].data = keep(malloc(tensor_size_bytes(&ref[k]) + 8));
            memset(dev[run][k].data, 0x5a, tensor_size_bytes(&ref[k]) + 8);
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
        size_t bytes = tensor_size_bytes(&ref[k]);
        if (memcmp(dev[0][k].data, dev[1][k].data, bytes)) {
            printf("FAIL %s: output %d differs between two CUDA runs\n", what, k);
            failures++;
            return;
        }
        int fl = ref[k].dtype == ONNX_DTYPE_FLOAT || ref[k].dtype == ONNX_DTYPE_DOUBLE;
        for (int64_t i = 0; i < tensor_numel(&ref[k]); i++) {
            double a = elem(&ref[k], i), b = elem(&dev[0][k], i);
            int same = fl ? (a == b || (a != a && b != b) || fabs(a - b) <= 1e-5 * (1 + fabs(a)))
                          : memcmp((char *)ref[k].data + i * onnx_dtype_size(ref[k].dtype),
                                   (char *)dev[0][k].data + i * onnx_dtype_size(ref[k].dtype),
                                   onnx_dtype_size(ref[k].dtype)) == 0;
            if (!same) {
                printf("FAIL %s: output %d index %lld: cpu %.9g, cuda %.9g\n", what, k, (long long)i, a, b);
                failures++;
                return;
            }
        }
    }
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
    const int F = ONNX_DTYPE_FLOAT, D = ONNX_DTYPE_DOUBLE, I64 = ONNX_DTYPE_INT64;
    const int fl[2] = { F, D };
    /* CenterCropPad over element sizes 1, 2, 4, 8 */
    static const int ccp_types[5] = { ONNX_DTYPE_BOOL, ONNX_DTYPE_INT16, ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE,
                                      ONNX_DTYPE_INT64 };
    for (int t = 0; t < 5; t++) {
        struct tensor *p[2] = { T(ccp_types[t], -50, 50, 3, 6, 5), mk_vals(I64, 1, DIMS(3), (double[]){ 4, 3, 8 }) };
        run("CenterCropPad", "", "CenterCropPad", 18, NULL, 0, 2, p, 1);
        int64_t axes[2] = { -1, 0 };
        struct onnx_attr a = aints("axes", 2, axes);
        struct tensor *q[2] = { T(ccp_types[t], -50, 50, 5, 4, 3), mk_vals(I64, 1, DIMS(2), (double[]){ 2, 8 }) };
        run("CenterCropPad axes", "", "CenterCropPad", 18, &a, 1, 2, q, 1);
    }
    for (int t = 0; t < 2; t++) {
        /* TensorScatter and its gradient */
        for (int circ = 0; circ < 2; circ++) {
            struct onnx_attr a[2] = { as("mode", circ ? "circular" : "linear"), ai("axis", 2) };
            struct tensor *wi = mk_vals(I64, 1, DIMS(2), circ ? (double[]){ 3, 9 } : (double[]){ 1, 2 });
            struct tensor *p[3] = { T(fl[t], -1, 1, 2, 3, 5, 4), T(fl[t], -1, 1, 2, 3, circ ? 4 : 3, 4), wi };
            run("TensorScatter", "", "TensorScatter", 24, a, 2, 3, p, 1);
            struct onnx_attr ga[3] = { a[0], a[1], aints("shape", 4, (int64_t[]){ 2, 3, circ ? 4 : 3, 4 }) };
            struct tensor *g[2] = { T(fl[t], -1, 1, 2, 3, 5, 4), wi };
            run("TensorScatterGrad", "dtrexec", "TensorScatterGrad", 1, ga, 3, 2, g, 2);
        }
        {
            struct tensor *p[2] = { T(fl[t], -1, 1, 3, 6, 2), T(fl[t], -1, 1, 3, 2, 2) };
            run("TensorScatter no indices", "", "TensorScatter", 24, NULL, 0, 2, p, 1);
        }
        /* RoiAlign and its gradient */
        struct tensor *rois = mk_vals(fl[t], 2, DIMS(4, 4), (double[]){ 0.5, 0.3, 5.2, 4.1, 1.1, 2.2, 3.3, 6.9,
                                                                       -1.2, 0.4, 2.5, 2.2, 3.0, 3.0, 3.4, 3.1 });
        struct tensor *bi = mk_vals(I64, 1, DIMS(4), (double[]){ 1, 0, 1, 1 });
        for (int v = 0; v < 2; v++)
            for (int m = 0; m < 2; m++)
                for (int s = 0; s < 2; s++) {
                    struct onnx_attr a[6] = { as("mode", m ? "max" : "avg"), ai("output_height", 3),
                                              ai("output_width", 2), ai("sampling_ratio", s ? 2 : 0),
                                              af("spatial_scale", 0.8f),
                                              as("coordinate_transformation_mode", "half_pixel") };
                    struct tensor *x = T(fl[t], -1, 1, 2, 3, 6, 7);
                    struct tensor *p[3] = { x, rois, bi };
                    run("RoiAlign", "", "RoiAlign", v ? 16 : 10, a, v ? 6 : 5, 3, p, 1);
                    if (m)
                        continue;
                    struct onnx_attr ga[7] = { a[0], a[1], a[2], a[3], a[4],
                                               as("coordinate_transformation_mode",
                                                  v ? "half_pixel" : "output_half_pixel"),
                                               aints("shape", 4, (int64_t[]){ 2, 3, 6, 7 }) };
                    struct tensor *g[3] = { T(fl[t], -1, 1, 4, 3, 3, 2), rois, bi };
                    run("RoiAlignGrad", "dtrexec", "RoiAlignGrad", 1, ga, 7, 3, g, 1);
                }
        /* DeformConv */
        {
            struct onnx_attr a[1] = { aints("kernel_shape", 2, (int64_t[]){ 2, 2 }) };
            struct tensor *p[3] = { T(fl[t], -1, 1, 2, 2, 4, 5), T(fl[t], -1, 1, 3, 2, 2, 2),
                                    T(fl[t], -1.7, 1.7, 2, 8, 3, 4) };
            run("DeformConv", "", "DeformConv", 19, a, 1, 3, p, 1);
            struct onnx_attr b[5] = { ai("group", 2), ai("offset_group", 2), aints("pads", 4, (int64_t[]){ 1, 0, 1, 2 }),
                                      aints("strides", 2, (int64_t[]){ 2, 1 }), aints("dilations", 2, (int64_t[]){ 1, 2 }) };
            struct tensor *q[5] = { T(fl[t], -1, 1, 1, 4, 5, 6), T(fl[t], -1, 1, 4, 2, 3, 2),
                                    T(fl[t], -2.5, 2.5, 1, 24, 3, 6), T(fl[t], -1, 1, 4),
                                    T(fl[t], 0, 1, 1, 12, 3, 6) };
            run("DeformConv groups mask bias", "", "DeformConv", 22, b, 5, 5, q, 1);
            struct tensor *gq[5] = { T(fl[t], -1, 1, 1, 4, 3, 6), q[0], q[1], q[2], q[4] };
            run("DeformConvGrad groups mask", "dtrexec", "DeformConvGrad", 1, b, 5, 5, gq, 5);
            struct tensor *gp[4] = { T(fl[t], -1, 1, 2, 3, 3, 4), p[0], p[1], p[2] };
            run("DeformConvGrad", "dtrexec", "DeformConvGrad", 1, a, 1, 4, gp, 5);
        }
    }
    /* NonMaxSuppression, Unique: the host path */
    for (int cpb = 0; cpb < 2; cpb++) {
        struct onnx_attr a = ai("center_point_box", cpb);
        struct tensor *p[5] = { T(F, 0, 4, 2, 12, 4), T(F, 0, 1, 2, 3, 12), mk_vals(I64, 1, DIMS(1), (double[]){ 4 }),
                                mk_vals(F, 1, DIMS(1), (double[]){ 0.3 }), mk_vals(F, 1, DIMS(1), (double[]){ 0.2 }) };
        run("NonMaxSuppression", "", "NonMaxSuppression", 11, &a, 1, 5, p, 1);
    }
    for (int s = 0; s < 2; s++) {
        struct onnx_attr a[2] = { ai("sorted", s), ai("axis", 1) };
        struct tensor *x = T(ONNX_DTYPE_INT32, 0, 4, 5, 7);
        run("Unique flat", "", "Unique", 11, a, 1, 1, &x, 4);
        struct tensor *y = T(ONNX_DTYPE_INT64, 0, 2, 2, 9, 2);
        run("Unique axis", "", "Unique", 28, a, 2, 1, &y, 4);
    }
    printf("%d of %d emulated vision-family cases match the CPU\n", cases - failures, cases);
    for (int i = 0; i < pool_n; i++)
        free(pool[i]);
    return failures ? 1 : 0;
}
