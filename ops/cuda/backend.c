/* ops/cuda/backend.c — the CUDA backend: device 0, one stream, cuBLAS and
 * cuDNN handles bound to it, events for kernel timing, and the memory and
 * transfer primitives of struct backend.
 *
 * Everything is queued on the one stream, so kernels, copies and library
 * calls run in the order the runtime issues them; the host waits only where
 * it needs data (copy_to_host) or a time (timer_stop_seconds, synchronize).
 * The stream is a blocking one: work a kernel file queues by mistake on the
 * legacy default stream still runs in order with it. copy_to_device waits, so that the host buffer may be reused or freed
 * at once whatever kind of memory it is. copy() has memmove semantics, as
 * the host backend's: arena compaction slides blocks over themselves.
 *
 * One backend is shared by every session of the process (opening the
 * handles costs far more than a session's other setup); it is reference
 * counted and torn down when the last session closes it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda-impl.h"

/* cuBLAS gets a fixed workspace of its own so that its algorithm choice, and
 * so its results, do not depend on what it could allocate at the time. */
#define CUDA_BLAS_WORKSPACE_BYTES ((size_t)32 << 20)
/* Overlapping device copies shorter than this distance bounce through host
 * memory instead of moving in (size / distance) pieces. */
#define CUDA_MOVE_MAX_PIECES 64

struct cuda_backend {
    struct backend b;               /* first: the backend's ctx points back here */
    struct cuda_ctx ctx;
    void *blas_workspace;
    int refs;
    char error[512];                /* the last failure, for cuda_backend_last_error */
};

static struct cuda_backend *shared;

static struct cuda_backend *backend_of(void *ctx)
{
    return (struct cuda_backend *)((char *)ctx - offsetof(struct cuda_backend, ctx));
}

static int fail(struct cuda_backend *cb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct cuda_backend *cb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cb->error, sizeof cb->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int check(struct cuda_backend *cb, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    return fail(cb, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static void *cuda_alloc(void *ctx, size_t bytes)
{
    struct cuda_backend *cb = backend_of(ctx);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        check(cb, e, "cudaMalloc");
        cudaGetLastError();   /* an allocation failure is not sticky: clear it */
        return NULL;
    }
    return p;
}

static void cuda_free(void *ctx, void *ptr)
{
    if (ptr)
        cudaFree(ptr);
}

static int cuda_copy_to_device(void *ctx, void *dst, const void *host_src, size_t bytes)
{
    struct cuda_backend *cb = backend_of(ctx);
    if (!bytes)
        return 0;
    if (check(cb, cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, cb->ctx.stream),
              "copy to the device"))
        return -1;
    return check(cb, cudaStreamSynchronize(cb->ctx.stream), "copy to the device");
}

static int cuda_copy_to_host(void *ctx, void *host_dst, const void *src, size_t bytes)
{
    struct cuda_backend *cb = backend_of(ctx);
    if (!bytes)
        return 0;
    if (check(cb, cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, cb->ctx.stream),
              "copy to the host"))
        return -1;
    return check(cb, cudaStreamSynchronize(cb->ctx.stream), "copy to the host");
}

/* Overlapping ranges are copied in pieces no longer than the distance
 * between them, in the order that reads every byte before it is
 * overwritten (the stream runs the pieces in order); very close ranges
 * bounce through the host. */
static int cuda_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    struct cuda_backend *cb = backend_of(ctx);
    if (!bytes || dst == src)
        return 0;
    char *d = dst;
    const char *s = src;
    size_t dist = d > s ? (size_t)(d - s) : (size_t)(s - d);
    cudaStream_t stream = cb->ctx.stream;
    if (dist >= bytes)
        return check(cb, cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, stream), "device copy");
    if (bytes / dist < CUDA_MOVE_MAX_PIECES) {
        size_t pieces = (bytes + dist - 1) / dist;
        for (size_t k = 0; k < pieces; k++) {
            /* Moving down: front to back. Moving up: back to front. */
            size_t i = d < s ? k : pieces - 1 - k;
            size_t off = i * dist, n = bytes - off < dist ? bytes - off : dist;
            if (check(cb, cudaMemcpyAsync(d + off, s + off, n, cudaMemcpyDeviceToDevice, stream), "device move"))
                return -1;
        }
        return 0;
    }
    void *bounce = malloc(bytes);
    if (!bounce)
        return fail(cb, "device move: out of host memory for %zu bytes", bytes);
    int rc = cuda_copy_to_host(ctx, bounce, s, bytes) || cuda_copy_to_device(ctx, d, bounce, bytes) ? -1 : 0;
    free(bounce);
    return rc;
}

static int cuda_sync(void *ctx)
{
    struct cuda_backend *cb = backend_of(ctx);
    return check(cb, cudaStreamSynchronize(cb->ctx.stream), "synchronize");
}

static int cuda_timer_start(void *ctx)
{
    struct cuda_backend *cb = backend_of(ctx);
    return check(cb, cudaEventRecord(cb->ctx.start, cb->ctx.stream), "timer start");
}

/* Seconds between the start and stop events; -1 on failure. */
static double cuda_timer_stop_seconds(void *ctx)
{
    struct cuda_backend *cb = backend_of(ctx);
    float ms = 0;
    if (check(cb, cudaEventRecord(cb->ctx.stop, cb->ctx.stream), "timer stop") ||
        check(cb, cudaEventSynchronize(cb->ctx.stop), "timer stop") ||
        check(cb, cudaEventElapsedTime(&ms, cb->ctx.start, cb->ctx.stop), "timer"))
        return -1;
    return 1e-3 * (double)ms;
}

static void destroy(struct cuda_backend *cb)
{
    struct cuda_ctx *c = &cb->ctx;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    if (c->dnn)
        cudnnDestroy(c->dnn);
    if (c->blas)
        cublasDestroy(c->blas);
    if (cb->blas_workspace)
        cudaFree(cb->blas_workspace);
    if (c->start)
        cudaEventDestroy(c->start);
    if (c->stop)
        cudaEventDestroy(c->stop);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(cb);
}

static int why_fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int why_fail(char *why, size_t size, const char *fmt, ...)
{
    if (why && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int create(struct cuda_backend *cb, char *why, size_t why_size)
{
    struct cuda_ctx *c = &cb->ctx;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return why_fail(why, why_size, "%s", cudaGetErrorString(e));
    if (count < 1)
        return why_fail(why, why_size, "no CUDA device found");
    c->device = 0;
    struct cudaDeviceProp prop;
    if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess)
        return why_fail(why, why_size, "device 0: %s", cudaGetErrorString(e));
    if ((e = cudaStreamCreate(&c->stream)) != cudaSuccess ||
        (e = cudaEventCreate(&c->start)) != cudaSuccess || (e = cudaEventCreate(&c->stop)) != cudaSuccess ||
        (e = cudaMalloc(&cb->blas_workspace, CUDA_BLAS_WORKSPACE_BYTES)) != cudaSuccess)
        return why_fail(why, why_size, "%s: %s", prop.name, cudaGetErrorString(e));
    cublasStatus_t bs;
    if ((bs = cublasCreate(&c->blas)) != CUBLAS_STATUS_SUCCESS ||
        (bs = cublasSetStream(c->blas, c->stream)) != CUBLAS_STATUS_SUCCESS ||
        (bs = cublasSetWorkspace(c->blas, cb->blas_workspace, CUDA_BLAS_WORKSPACE_BYTES)) != CUBLAS_STATUS_SUCCESS ||
        /* IEEE single precision (no TF32), no atomics: results match the
         * CPU's closely and repeat bit for bit, as recomputation needs. */
        (bs = cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH)) != CUBLAS_STATUS_SUCCESS ||
        (bs = cublasSetAtomicsMode(c->blas, CUBLAS_ATOMICS_NOT_ALLOWED)) != CUBLAS_STATUS_SUCCESS ||
        (bs = cublasSetPointerMode(c->blas, CUBLAS_POINTER_MODE_HOST)) != CUBLAS_STATUS_SUCCESS)
        return why_fail(why, why_size, "cuBLAS: %s", cublasGetStatusString(bs));
    cudnnStatus_t ds;
    if ((ds = cudnnCreate(&c->dnn)) != CUDNN_STATUS_SUCCESS || (ds = cudnnSetStream(c->dnn, c->stream)) != CUDNN_STATUS_SUCCESS)
        return why_fail(why, why_size, "cuDNN: %s", cudnnGetErrorString(ds));
    cb->b = (struct backend){
        .kind = BACKEND_CUDA, .name = "cuda", .ctx = &cb->ctx,
        .alloc = cuda_alloc, .free = cuda_free,
        .copy_to_device = cuda_copy_to_device, .copy_to_host = cuda_copy_to_host, .copy = cuda_copy,
        .synchronize = cuda_sync, .timer_start = cuda_timer_start, .timer_stop_seconds = cuda_timer_stop_seconds,
        .kernel = cuda_kernel_of, .last_error = cuda_backend_last_error, .close = cuda_backend_close,
    };
    return 0;
}

const struct backend *cuda_backend_open(char *why, size_t why_size)
{
    if (shared) {
        shared->refs++;
        return &shared->b;
    }
    struct cuda_backend *cb = calloc(1, sizeof *cb);
    if (!cb) {
        why_fail(why, why_size, "out of host memory");
        return NULL;
    }
    if (create(cb, why, why_size)) {
        destroy(cb);
        cudaGetLastError();
        return NULL;
    }
    cb->refs = 1;
    shared = cb;
    return &cb->b;
}

void cuda_backend_close(const struct backend *b)
{
    if (!b || !shared || b != &shared->b || --shared->refs > 0)
        return;
    destroy(shared);
    shared = NULL;
}

const char *cuda_backend_last_error(const struct backend *b)
{
    return b && b->kind == BACKEND_CUDA ? backend_of(b->ctx)->error : "";
}
