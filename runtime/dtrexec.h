/* dtrexec.h — the public embedding API of dtrexec.
 *
 * Load an ONNX model into a session, bind inputs, run inference, read outputs
 * and statistics. Everything an embedder needs is in this header; the structs
 * behind the handles are private. Every call that can fail returns an
 * enum dtrx_status and leaves a message for dtrx_last_error(): what failed,
 * on which node, tensor or file, and what was expected.
 *
 * Threading: a session is used by one thread at a time; kernels inside a run
 * use `threads` worker threads.
 */
#ifndef DTREXEC_H
#define DTREXEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Numerically the process exit codes of the dtrexec command. */
enum dtrx_status {
    DTRX_OK = 0,
    DTRX_ERR_INPUT = 1,     /* bad model, input, option or file */
    DTRX_ERR_BUDGET = 2,    /* budget infeasible / out of memory */
    DTRX_ERR_INTERNAL = 3,
    /* training diverged: a step's loss was NaN or infinite (the message
     * names the step and the first call whose output was not finite) */
    DTRX_ERR_NONFINITE = 4,
};

/* The message of the last failure on this thread ("" if none). */
const char *dtrx_last_error(void);

#define DTRX_MAX_RANK 8

/* Element types use the ONNX TensorProto.DataType numbers (1 = float32,
 * 7 = int64, 9 = bool, 11 = float64, ...). A string tensor (8) holds one
 * { const char *data; size_t len; } per element (UTF-8, not
 * NUL-terminated; struct onnx_string): binding an input copies the bytes
 * into the session, and the strings of outputs point into memory the
 * session owns until it is destroyed. String values are never trained. */
struct dtrx_tensor {
    int dtype;
    int rank;
    int64_t dims[DTRX_MAX_RANK];
    void *data;             /* host memory, dense row-major */
};

size_t dtrx_dtype_size(int dtype);
int64_t dtrx_tensor_numel(const struct dtrx_tensor *t);

/* Values that are not plain tensors: sequences (any number of values) and
 * optionals (none or one), as control-flow models and their tests use. */
enum dtrx_value_kind {
    DTRX_VALUE_TENSOR = 0,
    DTRX_VALUE_SEQUENCE = 1,
    DTRX_VALUE_OPTIONAL = 2,
};

struct dtrx_value {
    int kind;                      /* enum dtrx_value_kind */
    struct dtrx_tensor tensor;     /* DTRX_VALUE_TENSOR */
    int n_elems;                   /* sequence: its values; optional: 0 or 1 */
    struct dtrx_value *elems;
};

/* Frees what dtrx_session_get_output_value filled in. */
void dtrx_value_clear(struct dtrx_value *v);

/* Declared type of a graph input or output; dims[i] is -1 where the shape is
 * symbolic (dim_names[i] then names it, or is NULL). */
struct dtrx_value_desc {
    const char *name;
    int kind;               /* enum dtrx_value_kind; dtype, rank, dims then describe the elements */
    int dtype;
    int rank;               /* -1 when undeclared */
    int64_t dims[DTRX_MAX_RANK];
    const char *dim_names[DTRX_MAX_RANK];
};

struct dtrx_options {
    int threads;            /* 0: the machine's core count */
    uint64_t seed;          /* random inputs, Dropout masks */
    const char *device;     /* "cpu" (default) or "cuda" */
    /* Tensor-memory budget in bytes (0: unlimited). With a budget all tensor
     * memory comes from one arena of exactly this size and DTR evicts and
     * recomputes to stay inside it. */
    size_t budget_bytes;
    const char *heuristic;  /* dtr (default), dtr-eq, dtr-local, lru, size, msps, random */
    const char *dealloc;    /* eager (default), banish, ignore */
    const char *trace_path; /* write the op log here (JSON lines), or NULL */
    int verify_remat;       /* hash every output and check each recomputation bit for bit */
    /* DTR's compute costs: 0 the cost model (FLOPs; reproducible, the
     * default), 1 measured kernel times (noisy: rare failures at tight budgets). */
    int measured_costs;
    /* 1: before its second run, an unbudgeted inference session on the host
     * rewrites its calls once (runtime/fuse.c): each Conv with the
     * BatchNormalization, residual Add and activation after it becomes one
     * call, weights folded, and chains of convolutions keep oneDNN's blocked
     * layout. Results then differ from the unoptimized ones by rounding; the
     * weights are read as they are at that point; the session can no longer
     * train. 0 (the default here; `dtrexec` sets it for inference runs): the
     * calls are the model's nodes. */
    int optimize_inference;
};

void dtrx_options_init(struct dtrx_options *o);

/* Parses a budget as `dtrexec --budget` takes it: "4GB", "512MiB", "1000"
 * (bytes; KB/MB/GB decimal, K/M/G and KiB/MiB/GiB binary) into *bytes, or
 * "0.5x" (a fraction of the unbudgeted peak, which the caller measures: one
 * unbudgeted run or training step) into *ratio; the other is set to 0.
 * DTRX_ERR_INPUT, with a message, for text that is not a size or lies
 * outside 1 byte to 2^62 bytes or 1e-06x to 1000x. */
enum dtrx_status dtrx_parse_budget(const char *text, double *bytes, double *ratio);

/* DTRX_OK when sessions can run on `device` ("cpu", "cuda"); otherwise
 * DTRX_ERR_INPUT with the reason for dtrx_last_error() ("device 'cuda' is
 * not available: no CUDA device found"). */
enum dtrx_status dtrx_device_check(const char *device);

struct dtrx_session;

enum dtrx_status dtrx_session_create(const char *model_path, const struct dtrx_options *opts,
                                     struct dtrx_session **out);
void dtrx_session_destroy(struct dtrx_session *s);

int dtrx_session_input_count(const struct dtrx_session *s);
int dtrx_session_output_count(const struct dtrx_session *s);
const struct dtrx_value_desc *dtrx_session_input(const struct dtrx_session *s, int i);
const struct dtrx_value_desc *dtrx_session_output(const struct dtrx_session *s, int i);
/* Index of the graph input called `name`, or -1. */
int dtrx_session_input_index(const struct dtrx_session *s, const char *name);

/* Binds a symbolic dimension for inputs that are not given explicitly. */
enum dtrx_status dtrx_session_bind_dim(struct dtrx_session *s, const char *name, int64_t value);

/* Copies `t` in as graph input `index`; its dtype and the declared fixed
 * dimensions are checked. */
enum dtrx_status dtrx_session_set_input(struct dtrx_session *s, int index, const struct dtrx_tensor *t);
/* Copies a value of any kind in as graph input `index`. */
enum dtrx_status dtrx_session_set_input_value(struct dtrx_session *s, int index, const struct dtrx_value *v);
/* Draws new random data, for round `round`, into every input that was not
 * set (0 is what dtrx_session_fill_inputs draws): a new batch per step, of
 * the shapes the current dimension bindings give. */
enum dtrx_status dtrx_session_redraw_inputs(struct dtrx_session *s, uint64_t round);
/* Fills every input that was not set with seeded random data of its declared
 * shape (symbolic dimensions must have been bound). */
enum dtrx_status dtrx_session_fill_inputs(struct dtrx_session *s);

/* The live tensor of the named initializer or input: reading it gives the
 * current (trained) weights, writing it changes them. */
enum dtrx_status dtrx_session_tensor(struct dtrx_session *s, const char *name, struct dtrx_tensor *out);

/* Runs the graph once. */
enum dtrx_status dtrx_session_run(struct dtrx_session *s);

/* Output `index` of the last run; the data stays valid until the next run or
 * the session's end. */
enum dtrx_status dtrx_session_get_output(const struct dtrx_session *s, int index,
                                         struct dtrx_tensor *out);
/* Output `index` of the last run as a value of any kind: a deep host copy,
 * freed with dtrx_value_clear. */
enum dtrx_status dtrx_session_get_output_value(struct dtrx_session *s, int index, struct dtrx_value *out);

/* ---- training ---------------------------------------------------------- */

enum dtrx_optimizer {
    DTRX_OPTIMIZER_SGD = 0,
    DTRX_OPTIMIZER_MOMENTUM,
    DTRX_OPTIMIZER_ADAM,
    DTRX_OPTIMIZER_ADAMW,
};

enum dtrx_loss {
    DTRX_LOSS_AUTO = 0,       /* the graph's scalar output, else cross-entropy, else MSE (see train.c) */
    DTRX_LOSS_MSE,
    DTRX_LOSS_CROSS_ENTROPY,  /* ignore_index -100; classes on axis 1, or on the last axis of [N, T, V] */
    DTRX_LOSS_SUM,
    DTRX_LOSS_GRAPH,          /* the graph's own scalar float output, as it is */
    DTRX_LOSS_WEIGHTED_SUM,   /* sum(output * labels): labels act as weights (gradient checks) */
};

struct dtrx_train_options {
    int optimizer;            /* enum dtrx_optimizer */
    int loss;                 /* enum dtrx_loss */
    float lr;
    float momentum;           /* momentum optimizer */
    int nesterov;
    float beta1, beta2, eps;  /* Adam, AdamW */
    float weight_decay;       /* L2 for SGD/momentum/Adam, decoupled for AdamW */
    int hf_bias_correction;   /* 1: HuggingFace's convention (step size scaled), 0: PyTorch's */
    /* Comma-separated fnmatch patterns over initializer names: `freeze`
     * never trains, `trainable` trains a float initializer whatever the
     * rule of dtrx_session_params says ("*": every used float initializer);
     * freeze wins. */
    const char *freeze;
    const char *trainable;
    int grad_inputs;          /* 1: float graph inputs also get gradients (gradient checks) */
    /* 1: seeded random targets are drawn anew every step, shaped like that
     * step's output (models whose shapes change from step to step). */
    int fresh_targets;
    /* 0 (default): each parameter is updated as soon as its gradient is
     * final, inside the backward pass, and the gradient freed; 1: every
     * update after the whole backward pass, the gradients held until then
     * (PyTorch's optimizer.step()). The results are the same bit for bit. */
    int update_after_backward;
};

void dtrx_train_options_init(struct dtrx_train_options *o);

/* What training does with one initializer of the main graph. */
struct dtrx_param_info {
    const char *name;
    int dtype;
    int rank;
    int64_t dims[DTRX_MAX_RANK];
    int64_t numel;
    int trainable;            /* 1: dtrx_session_train_begin with these options trains it */
    const char *reason;       /* its role ("Conv weight", "LayerNormalization scale") or why it is
                               * frozen ("Pow exponent", "0-d scalar", "int64", "no gradient path",
                               * "--freeze") */
    const char *warning;      /* NULL, or what may be wrong: one tensor filling several bias or
                               * norm roles (merged by the exporter), one slice repeated along
                               * axis 0 (a parameter expanded to the batch and lifted) */
};

/* Decides, from the graph alone, which initializers are parameters (the
 * rule is in runtime/params.c): float tensors in weight, bias, norm and
 * embedding roles, or of >= 2 elements in other differentiable inputs, that
 * a gradient can reach; not Pow exponents, scalars, masks, running
 * statistics, integers. `o` (NULL: defaults) gives freeze/trainable
 * patterns. *out (n entries, the graph's order) belongs to the session and
 * stays valid until the next call or its end. */
enum dtrx_status dtrx_session_params(struct dtrx_session *s, const struct dtrx_train_options *o,
                                     const struct dtrx_param_info **out, int *n);

/* Switches the session to training: the initializers dtrx_session_params
 * marks trainable become parameters; optimizer state is allocated as tensor
 * memory. float16/bfloat16 parameters train as float32 master weights (the
 * model was widened at load, onnx/half.c); dtrx_session_save rounds them back. */
enum dtrx_status dtrx_session_train_begin(struct dtrx_session *s, const struct dtrx_train_options *o);
/* Targets for the loss (class indices for cross-entropy, a tensor of the
 * output's shape for MSE); seeded random targets are used when none is set. */
enum dtrx_status dtrx_session_set_labels(struct dtrx_session *s, const struct dtrx_tensor *t);
/* Forward, loss and backward, without updating anything. */
enum dtrx_status dtrx_session_backward(struct dtrx_session *s, double *loss);
/* One training step: forward, loss, backward, optimizer update. A loss that
 * is not finite fails the step with DTRX_ERR_NONFINITE before any weight
 * changes; the forward and backward pass are then run once more, checking
 * every call's outputs, so that the message names the first call whose
 * output was not finite. */
enum dtrx_status dtrx_session_train_step(struct dtrx_session *s, double *loss);
/* Which loss the last step took and why ("cross-entropy over the last
 * axis of 'logits' float32[2,5,11], ... (auto: ...)"); "" before any. */
const char *dtrx_session_loss_description(const struct dtrx_session *s);
/* The gradient of the named initializer or input after the last backward
 * pass (host memory valid until the next step). */
enum dtrx_status dtrx_session_get_grad(const struct dtrx_session *s, const char *name, struct dtrx_tensor *out);
/* Records one training step (forward, loss, backward; no update) and writes
 * it as a static graph: node-link JSON in Checkmate's layout, one node per
 * operator call with its measured and modelled cost and output bytes. */
enum dtrx_status dtrx_session_export_graph(struct dtrx_session *s, const char *path);
/* Training by a static schedule instead of DTR's heuristic: steps over the
 * node names `dtrexec export` writes (run, recompute, free). The session
 * needs a budget; each training step must then call exactly the schedule's
 * runs, in order, or fail naming the schedule step. */
enum dtrx_plan_kind { DTRX_PLAN_RUN = 0, DTRX_PLAN_RECOMPUTE = 1, DTRX_PLAN_FREE = 2 };
struct dtrx_plan_step {
    int kind;
    const char *node;
};
enum dtrx_status dtrx_session_set_plan(struct dtrx_session *s, const struct dtrx_plan_step *steps, int n);
/* Writes the model with the current (trained) weights. */
enum dtrx_status dtrx_session_save(struct dtrx_session *s, const char *path);

struct dtrx_stats {
    size_t peak_bytes;      /* tensor-memory high-water mark */
    size_t budget_bytes;    /* 0: unlimited */
    size_t pinned_bytes;    /* constants: weights and inputs */
    double baseline_compute; /* cost-model units (FLOPs) of one run */
    double total_compute;
    double remat_compute;
    double dtr_overhead_seconds;
    long long evictions;
    long long window_evictions; /* evictions of contiguous windows against fragmentation */
    long long compactions;      /* arena compactions (movable blocks slid together) */
    double compaction_bytes;    /* bytes those compactions copied */
    double compaction_seconds;  /* part of dtr_overhead_seconds: those compactions, finding them included */
    long long remats;
    long long view_remats;      /* of remats: views (alias outputs, e.g. Reshape's) replayed from a recomputed source, at no cost */
    long long op_calls;
    int runs;
    double *step_seconds;   /* `runs` entries, owned by the session */
    double *losses;         /* `runs` entries when training, else NULL */
    long long updates_in_backward; /* parameter updates run inside the backward pass (all steps) */
    long long in_place_calls;      /* calls that wrote their output over a dying input 0 (all steps): gradients, and model calls over their input's only reader (run.c) */
};

void dtrx_session_stats(const struct dtrx_session *s, struct dtrx_stats *out);

#ifdef __cplusplus
}
#endif

#endif
