/* tests/cuda_emu/emu_check.h — what the host-emulator checks of the CUDA
 * families share (misc_check.c, vision_check.c, window_check.c): the CUDA
 * runtime calls their kernels make, run on the host; a pool that frees
 * every block a case allocates; seeded random tensors; and emu_run, which
 * runs one operator on the CPU and twice through a family's kernel table
 * and compares (twice-run bits identical; values equal, floats to 1e-5
 * relative). Each check is one translation unit that includes this once;
 * it may define EMU_KEEP_PARAMS(def, op, params) to keep what an op's
 * params_free would free. */
#ifndef DTRX_EMU_CHECK_H
#define DTRX_EMU_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda-impl.h"

/* ---- the CUDA runtime, on the host ------------------------------------------------------ */

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

#define MAX_OUT 6

/* Runs op on the CPU and (twice) through the kernels of `family`;
 * compares. NULL entries of `in` are omitted optional inputs. */
static void emu_run(const struct cuda_kernel_entry *family, const char *what, const char *domain, const char *op, int opset, struct onnx_attr *attrs,
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
#ifdef EMU_KEEP_PARAMS
    EMU_KEEP_PARAMS(def, op, params);
#endif
    keep(params);
    struct tensor ref[MAX_OUT], dev[2][MAX_OUT];
    struct tensor *outs[MAX_OUT];
    for (int k = 0; k < MAX_OUT; k++)
        outs[k] = &ref[k];
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
    for (const struct cuda_kernel_entry *e = family; e->name; e++)
        if (!strcmp(e->name, op) && !strcmp(e->domain, domain))
            fn = e->kernel;
    if (!fn) {
        printf("FAIL %s: no CUDA kernel for %s\n", what, op);
        failures++;
        return;
    }
    for (int run = 0; run < 2; run++) {
        struct tensor *douts[MAX_OUT];
        for (int k = 0; k < MAX_OUT; k++)
            douts[k] = &dev[run][k];
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

#endif
