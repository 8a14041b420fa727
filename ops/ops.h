/* ops — everything that computes.
 *
 * The tensor struct, the backend interface, the operator registry and one
 * file per operator (or family) holding, side by side: attribute parsing from
 * the onnx/ IR, shape inference, a cost estimate, the kernels per backend and
 * the gradient emitter.
 *
 * ops/ knows nothing of the arena, the interpreter or DTR. A kernel receives
 * its inputs and its already-allocated outputs in a `struct op_call`; whatever
 * it needs from above (scratch memory that counts against the budget, thread
 * count, the call's random seed, an error buffer) it asks of the `struct
 * op_env` interface passed in with the call.
 *
 * Conventions: functions returning int give 0 on success and -1 on failure,
 * after writing a message with op_error(). Omitted optional inputs and outputs
 * are NULL pointers in the call's arrays.
 */
#ifndef DTRX_OPS_H
#define DTRX_OPS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx/onnx.h"

#define TENSOR_MAX_RANK ONNX_MAX_RANK

/* A dense row-major tensor. Element types are enum onnx_dtype values. The
 * data pointer belongs to whoever allocated it (the runtime), never to ops/.
 * A STRING tensor's elements are struct onnx_string handles; the bytes they
 * point to live outside tensor memory (see op_env.string_intern and
 * ops/string-impl.h). */
struct tensor {
    int dtype;
    int rank;
    int64_t dims[TENSOR_MAX_RANK];
    void *data;
};

/* Element and byte counts; they saturate (INT64_MAX, SIZE_MAX) instead of
 * overflowing. */
int64_t tensor_numel(const struct tensor *t);
size_t tensor_size_bytes(const struct tensor *t);
/* The largest tensor, in elements and in bytes: 2^62. */
#define TENSOR_MAX_BYTES ((int64_t)1 << 62)
/* 0 when every dimension is >= 0 and the element and byte counts are at most
 * TENSOR_MAX_BYTES; otherwise -1 and a message naming the shape and the limit. */
int tensor_check_size(const struct tensor *t, char *msg, size_t size);
/* Same rank and dims. */
int tensor_same_shape(const struct tensor *a, const struct tensor *b);
/* "float32[2,3,4]" into buf; returns buf. */
const char *tensor_describe(const struct tensor *t, char *buf, size_t size);

enum backend_kind {
    BACKEND_CPU = 0,
    BACKEND_CUDA = 1,
    BACKEND_COUNT
};

struct op_call;
struct op_def;
typedef int (*op_kernel_fn)(struct op_call *c);

/* A device's memory and transfer primitives, and the kernels it has. Tensor
 * memory is not allocated through this directly: the runtime's arena takes
 * one block from `alloc` and sub-allocates it, so that the budget is a real
 * bound. */
struct backend {
    enum backend_kind kind;
    const char *name;
    void *ctx;
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *ptr);
    int (*copy_to_device)(void *ctx, void *dst, const void *host_src, size_t bytes);
    int (*copy_to_host)(void *ctx, void *host_dst, const void *src, size_t bytes);
    int (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*synchronize)(void *ctx);
    /* Optional device timing of the work queued between start and stop
     * (measured costs); NULL where wall-clock time is exact (the host). */
    int (*timer_start)(void *ctx);
    double (*timer_stop_seconds)(void *ctx);
    /* The kernel of operator `def` on this backend, NULL when it has none:
     * the one way the runtime finds kernels, on the host and on a device
     * alike (the host's answers def->kernel[BACKEND_CPU]). */
    op_kernel_fn (*kernel)(const struct op_def *def);
    /* What the last failed primitive (an allocation, a copy) reported. */
    const char *(*last_error)(const struct backend *b);
    /* Releases a backend a module opened; NULL for the host's. */
    void (*close)(const struct backend *b);
};

extern const struct backend backend_cpu;

/* ---- backend modules ------------------------------------------------------
 * A device backend is a shared module, libdtrexec_<name>.so, that neither
 * libdtrexec nor the dtrexec binary links: it is opened (dlopen) the first
 * time a session asks for its device, so that host-only runs never load the
 * device's libraries. It exports one symbol, BACKEND_MODULE_SYMBOL, of type
 * struct backend_module. Search order (ops/backend_module.c): the file named
 * by the environment variable DTRX_<NAME>_MODULE (only that one when set),
 * then the folder of the library or executable holding libdtrexec (the
 * build tree), then the install libdir fixed at build time. */
#define BACKEND_MODULE_ABI 1
#define BACKEND_MODULE_SYMBOL "dtrx_backend_module"

struct backend_module {
    int abi;                       /* BACKEND_MODULE_ABI of the module's build */
    const char *name;              /* "cuda" */
    /* Opens the device (shared by the process, reference counted; release
     * with backend->close). NULL, with the reason in `why`, when none is
     * usable. */
    const struct backend *(*open)(char *why, size_t why_size);
    /* The backend's kernel lookup, callable without a device open. */
    op_kernel_fn (*kernel)(const struct op_def *def);
    /* The (domain, name) of the index-th kernel of the module's own tables
     * (for listings and tests); NULL past the end. */
    const char *(*kernel_name_at)(int index, const char **domain);
};

/* The module of backend `name`, loaded once per process; NULL with the
 * reason (what is missing: the module, the libraries it needs as the
 * dynamic loader reports them, or its entry symbol) in `why`. */
const struct backend_module *backend_module_load(const char *name, char *why, size_t why_size);
/* The file backend_module_load would open first, without opening it: 0 and
 * the path in `path` when one exists, else -1. */
int backend_module_find(const char *name, char *path, size_t size);

/* What a kernel may ask of whoever runs it. */
struct op_env {
    void *ctx;
    /* Scratch memory that counts against the budget; NULL if it cannot be had. */
    void *(*scratch_alloc)(void *ctx, size_t bytes);
    void (*scratch_free)(void *ctx, void *ptr);
    const struct backend *backend;
    int threads;
    uint64_t seed;                 /* this call's seed; replayed on recomputation */
    int training;                  /* 1 when running a training step */
    /* 1 while DTR replays a call to rematerialize an evicted output: side
     * effects of the first execution (BatchNormalization's running
     * statistics) must not happen twice. */
    int recomputing;
    /* Set when scratch_alloc returned NULL during this call. Kernels with a
     * fallback path must then fail instead of falling back: which path ran
     * may depend only on the call's shapes, or a recomputation could take
     * the other path and differ in the last bits. */
    int scratch_failed;
    /* Storage for the bytes of the STRING elements a kernel writes: a
     * pointer to a copy of (bytes, len) that stays valid for the session's
     * life, the same pointer for the same contents (so a recomputation
     * writes the same handles); NULL when out of memory. NULL where the
     * caller holds no string heap. */
    const char *(*string_intern)(void *ctx, const char *bytes, size_t len);
    char *err;                     /* where op_error() writes */
    size_t err_size;
};

struct grad_ctx;

struct op_call {
    const struct op_def *def;
    int version;                   /* the since-version the registry resolved */
    const void *params;            /* what def->parse produced (may be NULL) */
    const char *node_name;
    int n_in;
    const struct tensor *const *in;
    int n_out;
    struct tensor *const *out;
    struct op_env *env;
};

/* Writes "<node> (<op>): <message>" into the call's error buffer; returns -1. */
int op_error(const struct op_call *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Items per chunk when n items of per_item bytes each are worked on in
 * chunks (a batch's images, a sequence's steps): each chunk at most
 * max(all / parts, min_bytes) bytes but at least one item, the chunks as
 * equal as they can be; 0 when n is. The same n and sizes always give the
 * same chunks. */
int64_t op_chunk_items(int64_t n, int64_t per_item, int64_t parts, int64_t min_bytes);

/* Cost estimate of one call, used by DTR as c(s) in the cost model. */
struct op_cost {
    double flops;
    double bytes;                  /* bytes read plus bytes written */
};

#define OP_MAX_VERSIONS 12
#define OP_VARIADIC (-1)

struct op_def {
    const char *domain;            /* "" for ai.onnx */
    const char *name;
    /* since-versions this implementation covers, ascending, 0-terminated;
     * the registry resolves a model's opset to the highest one not above it. */
    int since[OP_MAX_VERSIONS];
    int min_in, max_in;            /* max OP_VARIADIC for variadic */
    int min_out, max_out;
    /* Parses attributes (and checks them) into *params (heap, freed with
     * params_free or free()). NULL when the op has no attributes. */
    int (*parse)(const struct onnx_node *node, int version, void **params,
                 char *err, size_t err_size);
    void (*params_free)(void *params);
    /* Sets dtype, rank and dims of every non-NULL output from the inputs.
     * Inputs flagged in host_inputs have their values readable on the host. */
    int (*infer)(struct op_call *c);
    struct op_cost (*cost)(const struct op_call *c);
    /* kernel[BACKEND_CPU]: the host kernel. kernel[BACKEND_CUDA]: set only to
     * op_host_bridge, for ops that run on host copies on a device; a device's
     * own kernels live in its module and are found through backend.kernel. */
    int (*kernel[BACKEND_COUNT])(struct op_call *c);
    uint32_t host_inputs;          /* bit i: infer reads the values of input i */
    /* Output 0 is input 0's bytes under a new shape (Reshape, Squeeze, ...):
     * the runtime shares the memory and no kernel runs. */
    int alias;
    /* Inputs (bit i) the kernel updates in place (optimizer steps); such ops
     * have no outputs and run only after the backward pass. */
    uint32_t mutates;
    /* 1: the kernel may write output 0 over input 0 when they have the same
     * shape and dtype (element by element): the runtime then gives them one
     * buffer when input 0 is a gradient nothing reads afterwards
     * (grad_ctx.emit_last) or a model value whose only reader is this call
     * (runtime/run.c, forward_in_place). */
    int in_place;
    /* Emits the backward calls of one forward call (see struct grad_ctx);
     * NULL when the op is not differentiable. */
    int (*grad)(struct grad_ctx *g);
    /* Forward inputs (bit i) and outputs (bit j) whose VALUES the gradient
     * emitter reads: the runtime keeps exactly these alive for the backward
     * pass (shapes are always available). */
    uint32_t grad_saves_in;
    uint32_t grad_saves_out;
    /* Executed by the runtime itself, not by a kernel: the op holds subgraphs
     * (If, Loop, Scan) or works on sequence and optional values, which are
     * lists of tensors the runtime keeps (see runtime/control.c). */
    int runtime;
};

/* ---- gradients ------------------------------------------------------------
 * When the runtime walks its tape backwards it hands each forward call's
 * emitter a grad_ctx. The emitter issues ordinary operator calls through
 * emit(), so backward work runs through the same single execution function
 * as everything else and stays recomputable. Values are runtime handles
 * (ints, -1 = none); shapes of any handle can be read with shape(). Emitted
 * ops are looked up in the default domain at the newest opset, then in the
 * "dtrexec" domain where gradient kernels (ConvGradData, ReluGrad, ...) live.
 * Attributes of emitted calls are given as onnx_attr arrays and parsed by the
 * op's own parse(), so every closure is built the same way. */
struct grad_ctx {
    void *ctx;
    const struct op_call *fwd;     /* forward call: params, version, shapes */
    const struct onnx_node *node;  /* forward node: its attributes can be reused */
    const int *in;                 /* handles of the forward inputs (-1 omitted) */
    const int *out;                /* handles of the forward outputs */
    const int *dy;                 /* gradient handle per forward output, -1 none */
    const uint8_t *need_dx;        /* 1 where forward input i wants a gradient */
    int (*emit)(struct grad_ctx *g, const char *op, const struct onnx_attr *attrs, int n_attrs,
                int n_in, const int *in, int n_out, int *out);
    /* emit, with the emitter's promise that it reads in[0] (one of dy) no
     * more after this call: an op with in_place may then write its output
     * over it, when nothing else holds it. */
    int (*emit_last)(struct grad_ctx *g, const char *op, const struct onnx_attr *attrs, int n_attrs,
                     int n_in, const int *in, int n_out, int *out);
    /* Adds handle h to the gradient of forward input i (fan-out accumulates). */
    int (*add_dx)(struct grad_ctx *g, int i, int h);
    /* A constant tensor (copied) as a new handle. */
    int (*constant)(struct grad_ctx *g, const struct tensor *t);
    const struct tensor *(*shape)(struct grad_ctx *g, int h);
    char *err;
    size_t err_size;
};

/* Sums h over the axes along which `target` was broadcast to h's shape and
 * reshapes to `target`: the one broadcasting reduction of every gradient. */
int grad_reduce_to(struct grad_ctx *g, int h, const struct tensor *target, int *out);
/* add_dx(i, reduce_to(h, shape of input i)) when input i wants a gradient. */
int grad_add_dx_broadcast(struct grad_ctx *g, int i, int h);
/* A 1-D int64 constant handle. */
int grad_const_i64(struct grad_ctx *g, int n, const int64_t *values);
/* Writes a message into g->err; returns -1. */
int grad_error(struct grad_ctx *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The highest-version implementation of (domain, name) not above `opset`, or
 * NULL; *version receives the resolved since-version. */
const struct op_def *op_registry_find(const char *domain, const char *name,
                                      int64_t opset, int *version);
/* Iterates over the registry: returns NULL past the end. */
const struct op_def *op_registry_at(int index);

/* A device kernel that runs def->kernel[BACKEND_CPU] on host copies of the
 * inputs and copies the outputs back through env->backend (host_bridge.c),
 * for rare operators without a kernel of their own on the device. */
int op_host_bridge(struct op_call *c);

/* Bytes of the weight cache (input 8) a dtrexec:FusedConv call over weights
 * of shape `w` with `group` groups can fill (fused_conv.c); 0 if none fits. */
size_t op_fused_conv_cache_bytes(const struct tensor *w, int64_t group);

/* ---- helpers shared by operator files --------------------------------- */

/* Numpy-style broadcasting of n shapes into out; -1 (message in err) if they
 * do not broadcast. */
int broadcast_shape(const struct tensor *const *ts, int n, struct tensor *out,
                    char *err, size_t err_size);
/* Element strides of `t` seen through the broadcast shape `out` (0 on
 * broadcast axes), right-aligned, out->rank entries. */
void broadcast_strides(const struct tensor *t, const struct tensor *out, int64_t *strides);

/* Cost helpers for the common shapes of work. */
struct op_cost cost_elementwise(const struct op_call *c);  /* 1 flop per output element */
struct op_cost cost_memory(const struct op_call *c);       /* 0 flops, bytes moved */

/* Normalises a possibly negative axis against rank; -1 if out of range. */
int op_axis(int64_t axis, int rank);

/* Reads element i of an integer or bool tensor as int64 (host data). */
int64_t tensor_get_int(const struct tensor *t, int64_t i);
/* Reads element i of a numeric tensor as double (host data). */
double tensor_get_double(const struct tensor *t, int64_t i);

#endif
