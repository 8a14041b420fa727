/* runtime-impl.h — the runtime's private structures: the arena, values,
 * operator closures and the session. Only the runtime's own sources include this. */
#ifndef DTRX_RUNTIME_IMPL_H
#define DTRX_RUNTIME_IMPL_H

#include <stdio.h>

#include "onnx/onnx.h"
#include "ops/ops.h"
#include "dtr/dtr.h"
#include "runtime/arena.h"
#include "runtime/names.h"
#include "runtime/dtrexec.h"

/* Records the message for dtrx_last_error() and returns `status`. */
enum dtrx_status rt_fail(enum dtrx_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Copies src into dst (size bytes, NUL-terminated) with control bytes and
 * invalid UTF-8 written as \xNN: rt_fail passes every message through it. */
void rt_escape_text(char *dst, size_t size, const char *src);



/* Memory shared by a value and its aliases; `refs` counts the values that
 * point into it. */
struct rt_storage {
    void *data;
    size_t size_bytes;
    int refs;
};

enum rt_value_kind {
    RT_VALUE_INTERMEDIATE = 0,
    RT_VALUE_INITIALIZER,
    RT_VALUE_INPUT,
};

/* A value is a tensor, or a list of other values the runtime keeps for the
 * sequence and optional operators (control.c). */
enum rt_container {
    RT_TENSOR = 0,
    RT_SEQUENCE,
    RT_OPTIONAL,
};

struct rt_value {
    const char *name;
    int kind;                      /* enum rt_value_kind */
    struct tensor t;               /* shape, dtype and data (NULL when not resident) */
    struct rt_storage *storage;
    int consumers;                 /* call inputs reading this value in the plan */
    int remaining;                 /* consumers still to run in the current pass */
    int is_output;                 /* a graph output: kept to the end of the run */
    int requires_grad;             /* a parameter, or computed from one (training) */
    int grad;                      /* handle of this value's gradient, -1 none */
    int grad_refs;                 /* gradient slots holding this value */
    char *owned_name;              /* set for values the runtime named itself */
    dtr_tensor dt;                 /* under a budget: the value in the current DTR instance */
    int dtr_held;                  /* 1 while the program holds its DTR reference */
    uint64_t trace_id;             /* its name in the op log, 0 when not logged */
    int plan_freed;                /* --plan: the schedule freed it this step (planned.c) */
    int made_in_step;              /* persistent, made while a step ran (drawn targets): moves up after it */
    int container;                 /* enum rt_container */
    int n_elems;                   /* sequence/optional: the values it holds (each held once) */
    int *elems;
};

/* One operator call, as a closure over value indices: what the interpreter,
 * tracing and (later) DTR replay. */
struct rt_call {
    const struct op_def *def;
    int version;
    void *params;
    const char *name;
    int n_in;
    int *in;                       /* value index, -1 for an omitted input */
    int n_out;
    int *out;                      /* value index, -1 for an omitted output */
    double cost_flops;             /* of its last execution */
    uint64_t seed;                 /* random ops' seed for this execution; replayed on recomputation */
    double measured_seconds;       /* kernel time of its last first execution (--cost measured) */
    const char *origin;            /* emitted calls: what they were emitted for ("loss", a forward node) */
    const struct onnx_node *node;  /* the model node, NULL for emitted calls */
    struct onnx_node *emitted;     /* the synthetic node of an emitted call (owned) */
    char *owned_name;              /* calls instantiated from a subgraph: "<control node>/<iteration>/<node>" */
    const struct rt_scope *scope;  /* control calls: where their subgraphs' outer names resolve (NULL: main graph) */
    uint32_t held_in, held_out;    /* training: the saved inputs/outputs this step's forward pass held (interp.c) */
};

/* Names visible while a graph is instantiated: its own, then its parents'. */
struct rt_scope {
    const struct rt_scope *parent;
    struct rt_names names;
};

int rt_scope_lookup(const struct rt_scope *scope, const char *name);

struct rt_sub_init {
    const struct onnx_tensor *init;
    int id;
};
/* The value of a subgraph's initializer, -1 if unknown. */
int rt_subgraph_initializer(const struct dtrx_session *s, const struct onnx_tensor *init);

/* Which initializers train (params.c; the rule is in its header comment). */
int rt_dtype_is_float(int dtype);
/* 0 when no gradient flows into input i of (domain, op): Where's condition,
 * Shape's input, Floor's, ... */
int rt_input_differentiable(const char *domain, const char *op, int i);
/* 1 when `name` matches one of the comma-separated fnmatch patterns. */
int rt_patterns_match(const char *patterns, const char *name);
struct rt_param_decision {
    int value;                     /* its value id, -1 if none */
    int uses;                      /* node inputs (and subgraph references) reading it */
    int train;
    char reason[160];
    char *warning;                 /* heap, or NULL */
};
/* One decision per main-graph initializer, in the graph's order; *out is
 * freed with rt_params_free. */
enum dtrx_status rt_params_decide(const struct dtrx_session *s, const struct dtrx_train_options *o,
                                  struct rt_param_decision **out);
void rt_params_free(struct rt_param_decision *d, int n);

/* Training state: the parameters, their optimizer state, and the calls and
 * values emitted during the current step (freed when the step ends). */
struct rt_train {
    int active;
    struct dtrx_train_options opts;
    int n_params;
    int *params;                   /* value ids of trainable initializers */
    int *state;                    /* 2 optimizer-state value ids per parameter, -1 unused */
    int *first_use;                /* per value id present at train_begin: first tape entry reading it, -1 */
    int n_first_use;
    size_t grad_bytes;             /* all parameters' gradients */
    int64_t step;
    int labels;                    /* value id of the targets, -1 until set or drawn */
    char loss_note[512];           /* the loss chosen and why (dtrx_session_loss_description) */
    int loss;                      /* value id of the last loss */
    int base_values;               /* values at or above this id belong to the step */
    int n_emitted, emitted_capacity;
    struct rt_call **emitted;
};

/* Execution under a budget (budget.c): a DTR instance per run or step, and
 * the arena block behind each of its storages. */
struct rt_budget {
    struct dtr_config config;
    struct dtr *dtr;
    uint32_t capacity;
    void **ptr;                    /* per storage: its buffer */
    void **scratch;                /* per storage: a recomputation's scratch output */
    uint8_t *owned;                /* 1 when the bridge allocated ptr (0: adopted) */
    uint64_t *hash;                /* per storage: hash of its first computation (verify) */
    int verify;                    /* check recomputations bit for bit */
    int measured_costs;            /* DTR costs from measured kernel times instead of FLOPs */
    long long verify_failures;
    void *adopt;                   /* the block the next constant adopts */
    int constant_pending;          /* the next allocation is a step constant: place it high */
    void **window;                 /* owners of an eviction window */
    const struct rt_call *pending_call; /* the call dtr_call is running for the first time */
    const struct rt_call *busy_call;    /* the call whose kernel is running: its buffers stay put */
    const dtr_tensor *pending_outs;     /* and the tensors the core gave its outputs */
    double kernel_seconds, remat_seconds;
    size_t scratch_failed_bytes;   /* workspace a kernel could not get */
    size_t scratch_requested;      /* workspace the running kernel asked for so far */
    void *reserve;                 /* workspace reserved before a kernel's retry */
    size_t reserve_bytes, reserve_used;
    enum dtrx_status failure;      /* a failure compute_call already described */
    long long window_evictions;
    long long compactions;         /* arena compactions, and the bytes they moved */
    double compaction_bytes;
    double compaction_seconds;     /* the time those moves took, finding them included */
};

/* Exported names of the step's calls, in execution order (export.c). */
struct rt_step_names {
    int n, cap;
    char **call_names;
    char **names;
    const struct rt_call **calls;
};

struct rt_dim_binding {
    char *name;
    int64_t value;
};

struct dtrx_session {
    struct onnx_model *model;
    /* float16/bfloat16 models run in float32 (onnx/half.c): what was
     * widened, and per top-level input and output its type in the file
     * (FLOAT16 or BFLOAT16; 0 where it was not half). Inputs are accepted in
     * that type (or float) and outputs handed out in it, from output_narrow. */
    struct onnx_widening *widening;
    int *input_half;
    int *output_half;
    void **output_narrow;
    struct dtrx_options opts;

    int n_values;
    int values_capacity;
    struct rt_value **values;      /* each value stays at one address for its life */
    int n_calls;
    struct rt_call *calls;

    int n_inputs;
    int *input_values;
    struct dtrx_value_desc *input_desc;
    int *input_set;                /* 1 once bound by set_input */
    int n_outputs;
    int *output_values;
    struct dtrx_value_desc *output_desc;

    int n_dims;
    struct rt_dim_binding *dims;
    uint64_t input_round;          /* which draw of random inputs (dtrx_session_redraw_inputs) */

    struct arena arena;
    struct op_env env;
    char op_err[1024];
    struct rt_string_heap *strings; /* bytes of the STRING elements made or bound (strings.c) */

    struct rt_train train;
    struct rt_budget budget;
    struct rt_recorder *recorder;
    struct rt_step_names step_names;
    struct rt_scope main_scope;    /* the main graph's names, kept for subgraphs' outer references */
    int n_sub_inits;               /* subgraph initializers: persistent values made at load */
    struct rt_sub_init *sub_inits;
    /* Training: every call of the step's forward pass and loss in the order
     * it ran, including the calls of subgraph iterations: what the backward
     * pass walks. */
    int taping;
    int n_tape, tape_capacity;
    struct rt_call **tape;
    struct rt_plan *plan;          /* a static schedule to follow (planned.c) */
    FILE *trace;
    uint64_t trace_next_id;
    int trace_started;             /* a run has begun: new constants are logged at once */
    void **output_host;            /* budgeted runs: host copies of the outputs */
    void *grad_host;               /* budgeted runs: host copy of the last gradient read */

    struct dtrx_stats stats;
    int step_capacity;
    /* After a non-finite loss: every call's float outputs are checked and
     * the first that is not finite is described here (train.c). */
    int check_finite;
    char nonfinite[768];
    int n_param_decisions;         /* what dtrx_session_params last handed out */
    struct rt_param_decision *param_decisions;
    struct dtrx_param_info *param_info;
    struct rt_device *device;      /* NULL on the host (device.c) */
};

/* The session's device (device.c): the backend, host<->tensor copies
 * (memcpy on the host), host copies of an op's host_inputs around infer()
 * and the kernel, the kernel of an op on the backend, kernel timing, and
 * host mirrors of tensors handed out by dtrx_session_tensor (a write to one
 * reaches the device before the next run). */
struct rt_device;
enum dtrx_status rt_device_open(struct dtrx_session *s);
void rt_device_close(struct dtrx_session *s);
const struct backend *rt_backend(const struct dtrx_session *s);
int rt_device_on_host(const struct dtrx_session *s);
enum dtrx_status rt_to_device(struct dtrx_session *s, void *dst, const void *src, size_t bytes);
enum dtrx_status rt_to_host(const struct dtrx_session *s, void *dst, const void *src, size_t bytes);
/* `data` itself on the host, else a host copy valid until the next call; NULL on failure. */
const void *rt_host_view(struct dtrx_session *s, const void *data, size_t bytes);
int (*rt_kernel_of(struct dtrx_session *s, const struct op_def *def))(struct op_call *);
int rt_call_infer(struct dtrx_session *s, struct op_call *call);
int rt_kernel_run(struct dtrx_session *s, int (*kernel)(struct op_call *), struct op_call *call);
double rt_kernel_timer_begin(struct dtrx_session *s);
double rt_kernel_timer_end(struct dtrx_session *s, double t0);
/* The time once the device has finished the work queued so far. */
double rt_now_synced(struct dtrx_session *s);
void *rt_host_mirror(struct dtrx_session *s, struct rt_value *v);
int rt_device_before_run(struct dtrx_session *s);

/* The inference graph optimization (fuse.c): applies it before a run when
 * the session's options ask for it and it has not been applied yet; whether
 * it was (a fused session must not train). */
enum dtrx_status rt_fuse_inference(struct dtrx_session *s);
int rt_fuse_applied(const struct dtrx_session *s);

/* Builds values and calls from the model's graph (session.c). */
enum dtrx_status rt_plan_build(struct dtrx_session *s);
/* Builds the call of node `n` in `scope`: inputs resolved there (control
 * nodes also read their subgraphs' outer names), outputs made new values
 * named in scope. `dynamic` calls (subgraph instances) hold each input once
 * (remaining++) where plan calls count consumers. */
enum dtrx_status rt_call_build(struct dtrx_session *s, struct rt_scope *scope, const struct onnx_node *n,
                               struct rt_call *c, int dynamic);

/* Runs one call of a forward pass: executes it (or, for runtime ops, the
 * control flow in control.c), records it on the tape and holds what its
 * gradient reads when training, and releases inputs no longer needed. */
enum dtrx_status rt_run_call(struct dtrx_session *s, struct rt_call *c);
/* Control flow, sequences and optionals (control.c). */
enum dtrx_status rt_control_exec(struct dtrx_session *s, struct rt_call *c);
/* One more / one fewer pending read of a value; at none it is released
 * (unless it is a graph output or persistent). */
void rt_value_hold(struct dtrx_session *s, int id);
void rt_value_unhold(struct dtrx_session *s, int id);
/* Appends a call to the step's tape (training). */
enum dtrx_status rt_tape_push(struct dtrx_session *s, struct rt_call *c);
/* Tracks a call made during a step or run: freed with rt_emitted_free. */
int rt_track_call(struct dtrx_session *s, struct rt_call *c);
void rt_emitted_free(struct dtrx_session *s);
/* Builds a call of `op` like rt_emit without running it; out[i] >= 0 names
 * an existing value to write, -1 asks for a new one (written back). */
enum dtrx_status rt_emit_build(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs, int n_attrs,
                               int n_in, const int *in, int n_out, int *out, const char *tag,
                               struct rt_call **call);

/* A byte read or written costs as much as this many FLOPs in the cost
 * model. Without bytes, every memory-bound call looked free to DTR: a
 * Transpose or Concat cost 0 and a Relu one unit per element, against a
 * convolution's thousands, so their outputs were evicted first and their
 * recomputations cost far more time than the model said. Measured on the
 * budget sweep's ResNet-50 and Transformer (one thread, every call of a
 * training step): a least-squares fit of kernel time gives 0.007 ns per
 * FLOP and 0.058 ns per byte (8 FLOPs a byte); normalizations, activations
 * and softmax run slower per byte than that average, and sweeps at 0.45x-0.6x
 * of the peak recompute the least kernel time at 16 (of 0, 8, 16): at 0.5x,
 * ResNet-50's recomputations add 16% (dtr) / 11% (dtr-eq) to the kernel
 * time at 16, 44% / 122% with FLOPs alone; the Transformer's 25% / 23%
 * against 33% / 46%. */
#define RT_COST_FLOPS_PER_BYTE 16

/* The one interposition point: every operator call of the runtime — forward,
 * backward, optimizer — runs through here (exec.c). */
enum dtrx_status rt_call_exec(struct dtrx_session *s, struct rt_call *c);
/* Runs the kernel of a call whose inputs and outputs are in place: the
 * closure execution itself, also what DTR replays to recompute. */
enum dtrx_status rt_call_kernel(struct dtrx_session *s, struct rt_call *c);
/* The cost model's cost of a call on its shapes (FLOPs plus bytes moved,
 * in FLOP-equivalents): what DTR and the statistics count (exec.c). */
double rt_call_cost(const struct rt_call *c, const struct op_call *call);

/* Budgeted execution (budget.c). */
int rt_budget_active(const struct dtrx_session *s);
enum dtrx_status rt_budget_begin(struct dtrx_session *s);
void rt_budget_end(struct dtrx_session *s);
void rt_budget_free(struct dtrx_session *s);
enum dtrx_status rt_budget_exec(struct dtrx_session *s, struct rt_call *c, struct op_call *call);
enum dtrx_status rt_budget_register(struct dtrx_session *s, struct rt_value *v);
enum dtrx_status rt_budget_constant(struct dtrx_session *s, struct rt_value *v, const void *data);
/* Copies a value to host memory (acquiring it, recomputing if evicted). */
enum dtrx_status rt_budget_read(struct dtrx_session *s, struct rt_value *v, void *dst);
void rt_budget_release(struct dtrx_session *s, struct rt_value *v);
enum dtrx_status rt_budget_pin(struct dtrx_session *s, struct rt_value *v);
void *rt_budget_scratch_alloc(struct dtrx_session *s, size_t bytes);
void rt_budget_scratch_free(struct dtrx_session *s, void *ptr);
/* 1 when the value holds data now or can be recomputed. */
int rt_value_live(const struct dtrx_session *s, const struct rt_value *v);

/* Step recording for `dtrexec export` (export.c): called for every
 * executed call while s->recorder is set. */
struct rt_recorder;
/* Export (runtime/export.c): rt_record_begin before a call runs, so that
 * rt_record_call can tell the kernel workspace it took from the arena. */
void rt_record_begin(struct dtrx_session *s);
void rt_record_call(struct dtrx_session *s, const struct rt_call *c, const char *name, double seconds);
const char *rt_step_name(struct dtrx_session *s, const struct rt_call *c);
void rt_step_names_reset(struct dtrx_session *s);
void rt_step_names_free(struct dtrx_session *s);

/* Following a static schedule (planned.c). */
struct rt_plan;
enum dtrx_status rt_plan_before_call(struct dtrx_session *s, const struct rt_call *c);
enum dtrx_status rt_plan_step_end(struct dtrx_session *s);
void rt_plan_step_begin(struct dtrx_session *s);
void rt_plan_free(struct dtrx_session *s);

/* The op log (trace.c). */
enum dtrx_status rt_trace_open(struct dtrx_session *s, const char *path);
void rt_trace_close(struct dtrx_session *s);
void rt_trace_annotate(struct dtrx_session *s, const char *what);
void rt_trace_constant(struct dtrx_session *s, struct rt_value *v);
void rt_trace_call(struct dtrx_session *s, const struct rt_call *c);
void rt_trace_release(struct dtrx_session *s, struct rt_value *v);

/* A new value (name borrowed: it must outlive the value); -1 on failure. */
int rt_value_new(struct dtrx_session *s, const char *name, int kind);

/* Runs the model's calls once; with `training`, values the backward pass
 * reads stay alive (interp.c). */
enum dtrx_status rt_forward(struct dtrx_session *s, int training);
enum dtrx_status rt_record_step(struct dtrx_session *s, double seconds, double loss);

/* Builds a call of `op` (default domain at the newest opset, else the
 * "dtrexec" domain) from attributes, allocates its outputs as new values and
 * executes it (train.c). */
enum dtrx_status rt_emit(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
                         int n_attrs, int n_in, const int *in, int n_out, int *out, const char *tag);
int rt_constant(struct dtrx_session *s, const struct tensor *t, const char *tag);
void rt_train_free(struct dtrx_session *s);
/* With check_finite set: describes the call's first non-finite output in
 * s->nonfinite, once per run (finite.c). */
void rt_check_finite(struct dtrx_session *s, const struct rt_call *c);
/* NaN without the sign bit, so that messages never say "-nan" (finite.c). */
double rt_unsigned_nan(double v);

double rt_now_seconds(void);
/* The seed of call `index` in the current step: a different stream per call
 * and per step, the same on recomputation. */
uint64_t rt_call_seed(const struct dtrx_session *s, uint64_t index);

/* Frees a call's parameters, index arrays and synthetic node (emit.c). */
void rt_call_clear(struct rt_call *c);

/* Value memory (interp.c). */
enum dtrx_status rt_value_alloc(struct dtrx_session *s, struct rt_value *v);
/* A persistent tensor (weights, optimizer state, targets): its own arena
 * block, never evicted, registered with every DTR instance. -1 on failure. */
int rt_persistent_new(struct dtrx_session *s, const struct tensor *t, const char *name);
void rt_value_release(struct dtrx_session *s, struct rt_value *v);
/* Arena bytes a resident value holds (a sequence's or optional's: its
 * elements'); what setting an input adds to or takes from the pinned bytes. */
size_t rt_value_bytes(const struct dtrx_session *s, const struct rt_value *v);
/* Releases a value and frees the value itself. */
void rt_value_destroy(struct dtrx_session *s, struct rt_value *v);

/* ---- strings.c: the session's string heap -------------------------------- */
struct rt_string_heap;
/* Sets env.string_intern. */
void rt_strings_init(struct dtrx_session *s);
/* For a STRING tensor of n elements: *copy = its handles re-pointed at
 * interned, session-owned bytes (free() it after copying it in); for other
 * types *copy = NULL. */
enum dtrx_status rt_strings_stable(struct dtrx_session *s, int dtype, const void *data, int64_t n, void **copy);
void rt_strings_free(struct dtrx_session *s);

#endif
