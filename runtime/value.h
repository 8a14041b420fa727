/* runtime/value.h — the runtime's data model: values (tensors, or
 * lists of values for sequences and optionals), the storage they share with
 * their views, operator calls as closures over value indices, and the name
 * scopes calls are built in. Types only. */
#ifndef DTRX_RUNTIME_VALUE_H
#define DTRX_RUNTIME_VALUE_H

#include <stdint.h>
#include "dtr/dtr.h"
#include "onnx/onnx.h"
#include "ops/ops.h"
#include "runtime/names.h"

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

/* A value, by concern: what it is, its memory, its readers in the current
 * pass, its training state, its elements when it is a list, and what the
 * parts watching calls mark on it. */
struct rt_value {
    const char *name;
    char *owned_name;              /* set for values the runtime named itself */
    int kind;                      /* enum rt_value_kind */
    struct tensor t;               /* shape, dtype and data (NULL when not resident) */
    /* Memory (memory.h): plain storage, or its tensor in the DTR instance. */
    struct rt_value_mem {
        struct rt_storage *storage;
        dtr_tensor dt;             /* under a budget: the value in the current DTR instance */
        int dtr_held;              /* 1 while the program holds its DTR reference */
        int made_in_step;          /* persistent, made while a step ran (drawn targets): moves up after it */
    } mem;
    /* Readers (run.c, values.c): when the value can be released. */
    struct rt_value_use {
        int consumers;             /* call inputs reading this value in the plan */
        int remaining;             /* consumers still to run in the current pass */
        int is_output;             /* a graph output: kept to the end of the run */
        int kept;                  /* is_output in this run, until copied to the host (interp.c) */
    } use;
    /* Training (train.c). */
    struct rt_value_train {
        int requires_grad;         /* a parameter, or computed from one */
        int grad;                  /* handle of this value's gradient, -1 none */
        int grad_refs;             /* gradient slots holding this value */
    } train;
    /* Sequences and optionals (control.c). */
    struct rt_value_list {
        int container;             /* enum rt_container */
        int n_elems;               /* the values it holds (each held once) */
        int *elems;
    } list;
    /* Marks of the call hooks' parts. */
    struct rt_value_marks {
        uint64_t trace_id;         /* its name in the op log, 0 when not logged (trace.c) */
        int plan_freed;            /* --plan: the schedule freed it this step (planned.c) */
        int in_place;              /* its next update is logged as IN_PLACE (trace.c) */
    } marks;
};

/* One operator call, as a closure over value indices: what the interpreter,
 * tracing and DTR replay. */
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
    uint32_t held_in, held_out;    /* training: the saved inputs/outputs this step's forward pass held (run.c) */
    uint8_t in_place;              /* output 0 is written over input 0's buffer (emitted gradients, train.c) */
    const struct op_def *nondiff_def; /* the def nondiff_in was filled for (rt_call_input_differentiable) */
    uint32_t nondiff_in;           /* bit i: no gradient flows into input i (params.c's table, once a call) */
};

/* Names visible while a graph is instantiated: its own, then its parents'. */
struct rt_scope {
    const struct rt_scope *parent;
    struct rt_names names;
};


struct rt_sub_init {
    const struct onnx_tensor *init;
    int id;
};

#endif
