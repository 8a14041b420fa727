/* tests/cuda_emu/vision_check.c — the "vision" family's CUDA kernels
 * (ops/cuda/vision.c, vision_kernels.cu) run on the host (see
 * run_family.sh vision) against the CPU kernels of the same operators, on the same
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

extern const struct cuda_kernel_entry cuda_kernels_vision[];

#include "emu_check.h"

/* ---- the other families this one calls, on the host ---------------------------------- */

void *layout_upload(struct op_call *c, void *host, size_t bytes) { (void)c, (void)bytes; return host; }
void layout_scratch_free(struct op_call *c, void *p) { (void)c; free(p); }

/* Runs op on the CPU and (twice) through the vision family; compares. */
static void run(const char *what, const char *domain, const char *op, int opset, struct onnx_attr *attrs,
                int n_attrs, int n_in, struct tensor **in, int n_out)
{
    emu_run(cuda_kernels_vision, what, domain, op, opset, attrs, n_attrs, n_in, in, n_out);
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
