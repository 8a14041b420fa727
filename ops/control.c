/* ops/control.c — the operators the runtime executes itself: control flow
 * (If, Loop, Scan) whose subgraphs it instantiates as ordinary calls, and
 * the sequence and optional operators, which only rearrange lists of tensors,
 * and FlexAttention (ai.onnx.preview 1), whose score_mod and prob_mod
 * subgraphs run between the ordinary calls it is made of.
 * Here: their registry entries and the checks of their attributes; the
 * execution is runtime/control.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/attn-params.h"

static int need_graph(const struct onnx_node *node, const char *attr, char *err, size_t err_size)
{
    const struct onnx_attr *a = onnx_node_attr(node, attr);
    if (!a || a->type != ONNX_ATTR_GRAPH || !a->g) {
        snprintf(err, err_size, "attribute '%s' must be a graph", attr);
        return -1;
    }
    return 0;
}

static int if_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    if (need_graph(node, "then_branch", err, err_size) || need_graph(node, "else_branch", err, err_size))
        return -1;
    const struct onnx_graph *t = onnx_node_attr(node, "then_branch")->g;
    const struct onnx_graph *e = onnx_node_attr(node, "else_branch")->g;
    if (t->n_outputs != node->n_outputs || e->n_outputs != node->n_outputs) {
        snprintf(err, err_size, "%d outputs, but the branches produce %d and %d", node->n_outputs, t->n_outputs,
                 e->n_outputs);
        return -1;
    }
    if (t->n_inputs || e->n_inputs) {
        snprintf(err, err_size, "branches take no inputs");
        return -1;
    }
    return 0;
}

static int loop_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    if (need_graph(node, "body", err, err_size))
        return -1;
    const struct onnx_graph *b = onnx_node_attr(node, "body")->g;
    int carried = node->n_inputs - 2;
    if (carried < 0) {
        snprintf(err, err_size, "needs the inputs M and cond (either may be empty)");
        return -1;
    }
    if (b->n_inputs != carried + 2) {
        snprintf(err, err_size, "body takes %d inputs, expected 2 + %d loop-carried", b->n_inputs, carried);
        return -1;
    }
    if (b->n_outputs < carried + 1 || node->n_outputs != b->n_outputs - 1) {
        snprintf(err, err_size, "body has %d outputs and the node %d; expected cond + %d loop-carried + scan outputs",
                 b->n_outputs, node->n_outputs, carried);
        return -1;
    }
    return 0;
}

/* An ints attribute of Scan, when given, has one entry per scan input or
 * output, each in [lo, hi] (axes are checked against ranks at run time). */
static int scan_ints(const struct onnx_node *node, const char *attr, int want, int64_t lo, int64_t hi, char *err,
                     size_t err_size)
{
    const struct onnx_attr *a = onnx_node_attr(node, attr);
    if (!a)
        return 0;
    if (a->type != ONNX_ATTR_INTS || a->n != want) {
        snprintf(err, err_size, "attribute %s must list %d ints", attr, want);
        return -1;
    }
    for (int i = 0; i < a->n; i++)
        if (a->ints[i] < lo || a->ints[i] > hi) {
            snprintf(err, err_size, "%s[%d] is %lld; expected %lld..%lld", attr, i, (long long)a->ints[i],
                     (long long)lo, (long long)hi);
            return -1;
        }
    return 0;
}

/* Scan-8 takes (sequence_lens, states..., scan inputs...), its body the
 * states and scan inputs; from 9 there is no sequence_lens. */
static int scan_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    if (need_graph(node, "body", err, err_size))
        return -1;
    int lens = version < 9;
    int n_in = node->n_inputs - lens;
    const struct onnx_attr *a = onnx_node_attr(node, "num_scan_inputs");
    if (!a || a->type != ONNX_ATTR_INT || a->i < 1 || a->i > n_in) {
        snprintf(err, err_size, "attribute num_scan_inputs must be 1..%d", n_in);
        return -1;
    }
    int n_scan = (int)a->i, n_state = n_in - n_scan, n_scan_out = node->n_outputs - n_state;
    const struct onnx_graph *b = onnx_node_attr(node, "body")->g;
    if (b->n_inputs != n_in || b->n_outputs != node->n_outputs || n_scan_out < 0) {
        snprintf(err, err_size, "body has %d inputs and %d outputs, the node %d%s and %d",
                 b->n_inputs, b->n_outputs, n_in, lens ? " (after sequence_lens)" : "", node->n_outputs);
        return -1;
    }
    if (lens)
        return scan_ints(node, "directions", n_scan, 0, 1, err, err_size);
    if (scan_ints(node, "scan_input_directions", n_scan, 0, 1, err, err_size) ||
        scan_ints(node, "scan_output_directions", n_scan_out, 0, 1, err, err_size) ||
        scan_ints(node, "scan_input_axes", n_scan, INT64_MIN, INT64_MAX, err, err_size) ||
        scan_ints(node, "scan_output_axes", n_scan_out, INT64_MIN, INT64_MAX, err, err_size))
        return -1;
    return 0;
}

/* SequenceMap: the body takes and gives as many values as the node. */
static int sequence_map_parse(const struct onnx_node *node, int version, void **params, char *err,
                              size_t err_size)
{
    if (need_graph(node, "body", err, err_size))
        return -1;
    const struct onnx_graph *b = onnx_node_attr(node, "body")->g;
    if (b->n_inputs != node->n_inputs || b->n_outputs != node->n_outputs) {
        snprintf(err, err_size, "body has %d inputs and %d outputs, the node %d and %d",
                 b->n_inputs, b->n_outputs, node->n_inputs, node->n_outputs);
        return -1;
    }
    return 0;
}

/* A modifier subgraph takes one tensor and gives one back. */
static int mod_graph_ok(const struct onnx_node *node, const char *attr, char *err, size_t err_size)
{
    const struct onnx_attr *a = onnx_node_attr(node, attr);
    if (!a)
        return 0;
    if (need_graph(node, attr, err, err_size))
        return -1;
    if (a->g->n_inputs != 1 || a->g->n_outputs != 1) {
        snprintf(err, err_size, "subgraph '%s' has %d inputs and %d outputs; it must have one of each",
                 attr, a->g->n_inputs, a->g->n_outputs);
        return -1;
    }
    return 0;
}

static int flex_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    if (mod_graph_ok(node, "score_mod", err, err_size) || mod_graph_ok(node, "prob_mod", err, err_size))
        return -1;
    const struct onnx_attr *sc = onnx_node_attr(node, "scale");
    if (sc && (sc->type != ONNX_ATTR_FLOAT || !isfinite(sc->f))) {
        snprintf(err, err_size, "scale must be a finite float");
        return -1;
    }
    int64_t prec = onnx_node_attr_int(node, "softmax_precision", 0);
    if (prec != 0 && prec != ONNX_DTYPE_FLOAT && prec != ONNX_DTYPE_FLOAT16 && prec != ONNX_DTYPE_BFLOAT16
        && prec != ONNX_DTYPE_DOUBLE) {
        snprintf(err, err_size, "softmax_precision %lld is not float, float16, bfloat16 or double (1, 10, "
                 "16, 11)", (long long)prec);
        return -1;
    }
    struct flex_attention_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    p->has_scale = sc != NULL;
    p->scale = sc ? sc->f : 0.0f;
    p->softmax_precision = (int)prec;
    *params = p;
    return 0;
}

const struct op_def op_flex_attention = {
    .domain = "ai.onnx.preview", .name = "FlexAttention", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = flex_parse, .runtime = 1,
};

#define RUNTIME_OP(sym, op, min_i, max_i, min_o, max_o, parse_fn, ...) \
    const struct op_def sym = {                                        \
        .domain = "", .name = op, .since = { __VA_ARGS__ },            \
        .min_in = min_i, .max_in = max_i, .min_out = min_o, .max_out = max_o, \
        .parse = parse_fn, .runtime = 1,                               \
    }

RUNTIME_OP(op_if, "If", 1, 1, 1, OP_VARIADIC, if_parse, 1, 11, 13, 16, 19, 21, 23, 24, 25);
RUNTIME_OP(op_loop, "Loop", 2, OP_VARIADIC, 1, OP_VARIADIC, loop_parse, 1, 11, 13, 16, 19, 21, 23, 24, 25);
RUNTIME_OP(op_scan, "Scan", 1, OP_VARIADIC, 1, OP_VARIADIC, scan_parse, 8, 9, 11, 16, 19, 21, 23, 24, 25);
RUNTIME_OP(op_sequence_empty, "SequenceEmpty", 0, 0, 1, 1, NULL, 11);
RUNTIME_OP(op_sequence_construct, "SequenceConstruct", 1, OP_VARIADIC, 1, 1, NULL, 11);
RUNTIME_OP(op_sequence_insert, "SequenceInsert", 2, 3, 1, 1, NULL, 11);
RUNTIME_OP(op_sequence_at, "SequenceAt", 2, 2, 1, 1, NULL, 11);
RUNTIME_OP(op_sequence_erase, "SequenceErase", 1, 2, 1, 1, NULL, 11);
RUNTIME_OP(op_sequence_length, "SequenceLength", 1, 1, 1, 1, NULL, 11);
RUNTIME_OP(op_split_to_sequence, "SplitToSequence", 1, 2, 1, 1, NULL, 11, 24);
RUNTIME_OP(op_concat_from_sequence, "ConcatFromSequence", 1, 1, 1, 1, NULL, 11);
RUNTIME_OP(op_sequence_map, "SequenceMap", 1, OP_VARIADIC, 1, OP_VARIADIC, sequence_map_parse, 17);
RUNTIME_OP(op_optional, "Optional", 0, 1, 1, 1, NULL, 15, 28);
RUNTIME_OP(op_optional_has_element, "OptionalHasElement", 0, 1, 1, 1, NULL, 15, 18, 28);
RUNTIME_OP(op_optional_get_element, "OptionalGetElement", 1, 1, 1, 1, NULL, 15, 18, 28);
