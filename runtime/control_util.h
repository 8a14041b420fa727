/* runtime/control_util.h — what the executors of control flow
 * (control_loop.c), sequences and optionals (control_seq.c) and
 * FlexAttention (control_flex.c) share (control_util.c): values and calls
 * made on the fly, held once by the caller while needed (rt_value_hold /
 * rt_value_unhold), and subgraph instances — a subgraph's nodes as ordinary
 * calls in a scope whose parent is the enclosing graph's. control.c
 * dispatches to the families' tables. */
#ifndef DTRX_RUNTIME_CONTROL_UTIL_H
#define DTRX_RUNTIME_CONTROL_UTIL_H

#include <stdint.h>

#include "onnx/onnx.h"
#include "ops/ops.h"
#include "runtime/dtrexec.h"
#include "runtime/names.h"
#include "runtime/value.h"

struct dtrx_session;
struct rt_call;

static inline const char *rt_ctl_container_name(int kind)
{
    return kind == RT_SEQUENCE ? "sequence" : kind == RT_OPTIONAL ? "optional" : "tensor";
}

/* A held constant. */
int rt_ctl_constant_held(struct dtrx_session *s, const struct tensor *t, const char *tag);
/* Held INT64 (rank 0 or 1 of n) and BOOL scalar constants. */
int rt_ctl_const_i64(struct dtrx_session *s, int rank, int n, const int64_t *v, const char *tag);
int rt_ctl_const_bool(struct dtrx_session *s, int value, const char *tag);
/* Builds and runs a call of `op`. Inputs are held for the call; outputs
 * with out[i] == -1 are made new and returned held once (the caller lets go),
 * others are existing values it writes. */
enum dtrx_status rt_ctl_emit_run(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
                                 int n_attrs, int n_in, const int *in, int n_out, int *out, const char *tag);
/* dst becomes a sequence or optional holding `elems`. */
enum dtrx_status rt_ctl_container_set(struct dtrx_session *s, int dst, int kind, int n, const int *elems);
/* Makes value dst equal to value src: an Identity view for tensors, a copy
 * of the list for sequences and optionals. */
enum dtrx_status rt_ctl_assign(struct dtrx_session *s, const struct rt_call *c, int src, int dst);
/* Reads a one-element integer or bool tensor on the host. */
enum dtrx_status rt_ctl_read_scalar(struct dtrx_session *s, const struct rt_call *c, int id, const char *what,
                                    int want_bool, int64_t *value);
/* Stacks tensors along a new axis (Unsqueeze each, then Concat) or joins
 * them along an existing one, into dst. */
enum dtrx_status rt_ctl_join(struct dtrx_session *s, const struct rt_call *c, int dst, const int *vals, int count,
                             int64_t axis, int new_axis);

/* ---- subgraph instances ---- */

/* One instantiation of a subgraph. */
struct rt_ctl_instance {
    struct rt_scope scope;
    int n_calls;
    struct rt_call **calls;
    int n_out;
    int *out;                      /* the subgraph's outputs, each held once */
};

/* Fails unless value id is what subgraph input vi declares. */
enum dtrx_status rt_ctl_check_input_type(struct dtrx_session *s, const struct rt_call *c,
                                         const struct onnx_value_info *vi, int id);
void rt_ctl_instance_free(struct rt_ctl_instance *in);
/* Builds the calls of graph g for one execution of control call c; the
 * subgraph's inputs are the values `inputs`. Names its calls
 * "<label>/<node>". */
enum dtrx_status rt_ctl_instance_build(struct dtrx_session *s, const struct rt_call *c, const struct onnx_graph *g,
                                       const int *inputs, const char *label, struct rt_ctl_instance *in);
enum dtrx_status rt_ctl_instance_run(struct dtrx_session *s, struct rt_ctl_instance *in);
/* Builds and runs; on failure the instance is freed. */
enum dtrx_status rt_ctl_instance_exec(struct dtrx_session *s, const struct rt_call *c, const struct onnx_graph *g,
                                      const int *inputs, const char *label, struct rt_ctl_instance *in);
/* The GRAPH attribute `name` of c's node, NULL without one. */
const struct onnx_graph *rt_ctl_graph_attr(const struct rt_call *c, const char *name);

/* ---- the executors of each family, by op name ---- */

struct rt_ctl_op {
    const char *op;
    enum dtrx_status (*exec)(struct dtrx_session *s, struct rt_call *c);
};
extern const struct rt_ctl_op rt_ctl_loop_ops[];   /* control_loop.c: If, Loop, Scan */
extern const int rt_ctl_loop_n_ops;
extern const struct rt_ctl_op rt_ctl_seq_ops[];    /* control_seq.c: sequences, optionals */
extern const int rt_ctl_seq_n_ops;
extern const struct rt_ctl_op rt_ctl_flex_ops[];   /* control_flex.c: FlexAttention */
extern const int rt_ctl_flex_n_ops;

#endif
