/* runtime/session.h — the session's structure: everything a
 * loaded model carries between calls of the API. Each part's own state is
 * its own struct (budget.h, train.h, stepnames.h); the parts are in the
 * headers named after their files. Only the runtime's sources include it.
 *
 * The runtime's layers (a file calls only files on its line or below, and
 * no two files call each other even through others; checked by
 * scripts/runtime_deps.py, CTest runtime/deps):
 *   session.c, inputs.c, values_io.c    the API: load, bind, read
 *   export.c -> train.c                 the recorder; training (finite.c,
 *                                       planned.c -> stepnames.c)
 *   interp.c, control.c, fuse.c         the interpreter, control flow, fusion
 *   control_{loop,seq,flex}.c           If/Loop/Scan, sequences, FlexAttention
 *   control_util.c                      their calls and subgraph instances
 *   emit.c, plan.c                      calls the runtime builds; the model's
 *   run.c                               one forward-pass call, the tape
 *   exec.c                              the call executor: hooks (hooks.h)
 *                                       around the memory's exec
 *   verify.c                            the --verify-remat hook
 *   budget.c (DTR), memory_plain.c      value memory behind memory.h
 *   values.c, trace.c, call.c           value lifetime, op log, the closure
 *   device.c, arena*.c, params.c, clock.c, status.c, names.c   leaves */
#ifndef DTRX_RUNTIME_SESSION_H
#define DTRX_RUNTIME_SESSION_H

#include <stdio.h>
#include "onnx/onnx.h"
#include "ops/ops.h"
#include "runtime/arena.h"
#include "runtime/budget.h"
#include "runtime/dtrexec.h"
#include "runtime/hooks.h"
#include "runtime/stepnames.h"
#include "runtime/train.h"
#include "runtime/value.h"
#include "runtime/verify.h"

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
    struct rt_verify verify;       /* --verify-remat (verify.c) */
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
     * the first that is not finite is described here (finite.c). */
    char nonfinite[768];
    int n_param_decisions;         /* what dtrx_session_params last handed out */
    struct rt_param_decision *param_decisions;
    struct dtrx_param_info *param_info;
    struct rt_device *device;      /* NULL on the host (device.c) */
    /* What rt_call_exec runs around every call, in slot order (exec.c). */
    const struct rt_call_hook *hooks[RT_HOOK_SLOTS];
    /* Runs a control-flow or list call (control.c's rt_control_exec, set
     * at creation): run.c reaches control flow through it. */
    enum dtrx_status (*run_runtime_op)(struct dtrx_session *s, struct rt_call *c);
    /* Value memory: plain, or DTR while a budgeted run has its instance (memory.h). */
    const struct rt_memory *memory;
};

#endif
