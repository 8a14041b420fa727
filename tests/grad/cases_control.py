"""Gradient cases for control flow (runtime/control.c): If, Loop and Scan run
their subgraphs as ordinary operator calls on the tape, so the backward pass
follows the branch taken and the iterations done, and outer-scope values read
inside a body get the sum of the gradients of every read.

If: each branch with outer-scope weights, a condition computed from data,
two outputs, an outer value read both inside a branch and outside, nested
Ifs. Loop: a fixed trip count, a data-dependent condition (with and without
a trip count), two loop-carried states, a state carried unchanged, scan
outputs, the iteration number indexing an outer sequence, an If inside the
body. Scan: forward and reverse directions, several scan inputs and outputs,
a non-zero scan axis, no state at all; Scan-8's batched form with and
without sequence_lens. SequenceMap over two sequences and a tensor.

Sizes are a few elements; all float values are initializers, so gradcheck
checks every weight, state and sequence. Data-dependent conditions are built
with margins far above the finite-difference step, so a perturbation never
flips a branch or changes a trip count."""
import numpy as np
from onnx import TensorProto, helper

from gradutil import graph_model, rand

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, dtype=F, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs if isinstance(outs, list) else [outs], **attrs)


def graph(name, nodes, inputs, outputs):
    return helper.make_graph(nodes, name, inputs, outputs)


def case(name, nodes, inits, outputs, **extra):
    return dict(name=name, model=graph_model(nodes, inits, outputs), args=["--max-elems", "64"], **extra)


CASES = []

# ---- If -----------------------------------------------------------------------

# then: tanh(X W); else: sigmoid(X W) * V — W, X, V outer-scope values.
THEN_XW = graph("then_xw", [node("MatMul", ["X", "W"], "t_xw"), node("Tanh", ["t_xw"], "t_y")],
                [], [vi("t_y", F, [3, 5])])
ELSE_XWV = graph("else_xwv", [node("MatMul", ["X", "W"], "e_xw"), node("Sigmoid", ["e_xw"], "e_s"),
                              node("Mul", ["e_s", "V"], "e_y")], [], [vi("e_y", F, [3, 5])])
IF_INITS = dict(X=rand(3, 4), W=rand(4, 5), V=rand(3, 5))
for taken, flag in (("then", True), ("else", False)):
    CASES.append(case(f"if_{taken}_outer", [node("If", ["cond"], "y", then_branch=THEN_XW, else_branch=ELSE_XWV)],
                      dict(IF_INITS, cond=np.array(flag)), ["y"]))

# The condition from data: sum(A) > 0, A clearly positive or negative (A gets
# no gradient through Greater; finite differences agree: zero).
for taken, sign in (("then", 1.0), ("else", -1.0)):
    CASES.append(case(f"if_data_cond_{taken}",
                      [node("ReduceSum", ["A"], "sum_a", keepdims=0), node("Greater", ["sum_a", "zero"], "cond"),
                       node("If", ["cond"], "y", then_branch=THEN_XW, else_branch=ELSE_XWV)],
                      dict(IF_INITS, A=sign * rand(2, 3, low=0.5, high=1.0), zero=np.array(0.0, np.float32)),
                      ["y"]))

# Two outputs per branch, combined after the If with an outer value that the
# branches also read: X's gradient sums the branch's and the outer path's.
THEN_TWO = graph("then_two", [node("MatMul", ["X", "W"], "t2_a"), node("Tanh", ["t2_a"], "t2_y1"),
                              node("Mul", ["X", "X"], "t2_y2")],
                 [], [vi("t2_y1", F, [3, 5]), vi("t2_y2", F, [3, 4])])
ELSE_TWO = graph("else_two", [node("MatMul", ["X", "W"], "e2_a"), node("Mul", ["e2_a", "V"], "e2_y1"),
                              node("Sigmoid", ["X"], "e2_y2")],
                 [], [vi("e2_y1", F, [3, 5]), vi("e2_y2", F, [3, 4])])
for taken, flag in (("then", True), ("else", False)):
    CASES.append(case(f"if_two_outputs_{taken}",
                      [node("If", ["cond"], ["y1", "y2"], then_branch=THEN_TWO, else_branch=ELSE_TWO),
                       node("Tanh", ["X"], "tx"), node("Add", ["y2", "tx"], "z2"),
                       node("ReduceSum", ["z2", "axis1"], "s2", keepdims=1),
                       node("Mul", ["y1", "s2"], "y")],
                      dict(IF_INITS, cond=np.array(flag), axis1=np.array([1], np.int64)), ["y"]))

# Nested: the then-branch holds another If on an outer-scope condition.
INNER = node("If", ["c2"], "n_in", then_branch=THEN_XW, else_branch=ELSE_XWV)
NESTED_THEN = graph("nested_then", [INNER, node("Mul", ["n_in", "V"], "n_y")], [], [vi("n_y", F, [3, 5])])
NESTED_ELSE = graph("nested_else", [node("Add", ["V", "V"], "n_e")], [], [vi("n_e", F, [3, 5])])
for c1, c2 in ((True, True), (True, False), (False, True)):
    CASES.append(case(f"if_nested_{int(c1)}{int(c2)}",
                      [node("If", ["c1"], "y", then_branch=NESTED_THEN, else_branch=NESTED_ELSE)],
                      dict(IF_INITS, c1=np.array(c1), c2=np.array(c2)), ["y"]))

# ---- Loop ---------------------------------------------------------------------

def loop_body(name, nodes, extra_in=(), extra_out=(), cond_from=None):
    """Body (iter, cond, s) -> (cond', s', scans...): s' is the output 'sn'."""
    ins = [vi(f"{name}_i", I64, []), vi(f"{name}_c", BOOL, []), vi(f"{name}_s", F, [2, 4])] + list(extra_in)
    nodes = list(nodes)
    if cond_from is None:
        nodes.append(node("Identity", [f"{name}_c"], f"{name}_co"))
    outs = [vi(f"{name}_co", BOOL, []), vi(f"{name}_sn", F, [2, 4])] + list(extra_out)
    return graph(name, nodes, ins, outs)


# s' = tanh(s W + B), W and B outer.
RNN_NODES = [node("MatMul", ["fx_s", "W"], "fx_m"), node("Add", ["fx_m", "B"], "fx_a"), node("Tanh", ["fx_a"], "fx_sn")]
FIXED = loop_body("fx", RNN_NODES)
FIXED_SCAN = loop_body("fx", RNN_NODES + [node("Identity", ["fx_sn"], "fx_y")], extra_out=[vi("fx_y", F, [2, 4])])
LOOP_INITS = dict(S0=rand(2, 4), W=rand(4, 4), B=rand(4), M=np.array(3, np.int64), go=np.array(True))
CASES += [
    case("loop_fixed_state", [node("Loop", ["M", "go", "S0"], "s", body=FIXED)], LOOP_INITS, ["s"]),
    case("loop_scan_output", [node("Loop", ["M", "go", "S0"], ["s", "ys"], body=FIXED_SCAN)], LOOP_INITS,
         ["s", "ys"]),
    # One iteration, and zero: the outputs are the initial state (and an empty scan output).
    case("loop_one_trip", [node("Loop", ["M", "go", "S0"], "s", body=FIXED)],
         dict(LOOP_INITS, M=np.array(1, np.int64)), ["s"]),
    case("loop_zero_trips", [node("Loop", ["M", "go", "S0"], "s", body=FIXED), node("Mul", ["s", "S0"], "y")],
         dict(LOOP_INITS, M=np.array(0, np.int64)), ["y"]),
]

# A data-dependent condition: s' = s + 1 + 0.05 tanh(s W); go on while
# sum(s') < 14 (8 elements, s0 near 0): the sums after 1, 2 run near 8, 16,
# so the loop stops after 2 iterations with margins of 2 either side.
COND_NODES = [node("MatMul", ["dc_s", "W"], "dc_m"), node("Tanh", ["dc_m"], "dc_t"),
              node("Mul", ["dc_t", "small"], "dc_ts"), node("Add", ["dc_s", "one"], "dc_a"),
              node("Add", ["dc_a", "dc_ts"], "dc_sn"), node("ReduceSum", ["dc_sn"], "dc_sum", keepdims=0),
              node("Less", ["dc_sum", "limit"], "dc_co"), node("Mul", ["dc_sn", "dc_sn"], "dc_y")]
DATA_COND = loop_body("dc", COND_NODES, extra_out=[vi("dc_y", F, [2, 4])], cond_from="dc_co")
COND_INITS = dict(S0=rand(2, 4) * 0.05, W=rand(4, 4), small=np.array(0.05, np.float32),
                  one=np.array(1.0, np.float32), limit=np.array(14.0, np.float32), go=np.array(True),
                  M=np.array(10, np.int64))
CASES += [
    case("loop_data_cond", [node("Loop", ["M", "go", "S0"], ["s", "ys"], body=DATA_COND)], COND_INITS, ["s", "ys"],
         no_grad=["small", "one", "limit"]),
    # A while loop: no trip count at all.
    case("loop_while", [node("Loop", ["", "go", "S0"], ["s", "ys"], body=DATA_COND),
                        node("Mul", ["s", "S0"], "y")], COND_INITS, ["ys", "y"], no_grad=["small", "one", "limit"]),
    # The trip count bounds a loop whose condition stays true.
    case("loop_trip_count_first", [node("Loop", ["M", "go", "S0"], ["s", "ys"], body=DATA_COND)],
         dict(COND_INITS, M=np.array(1, np.int64)), ["s", "ys"], no_grad=["small", "one", "limit"]),
]

# Two carried states (h, c), the iteration number indexing an outer
# sequence X [T, 2, 3], a carried value passed through unchanged (P), and a
# scan output: h' = tanh(x_t U + h W), c' = c * sigmoid(h') + P.
RNN2 = graph("r2", [
    node("Gather", ["X", "r2_i"], "r2_x", axis=0),
    node("MatMul", ["r2_x", "U"], "r2_xu"), node("MatMul", ["r2_h", "W"], "r2_hw"),
    node("Add", ["r2_xu", "r2_hw"], "r2_z"), node("Tanh", ["r2_z"], "r2_hn"),
    node("Sigmoid", ["r2_hn"], "r2_g"), node("Mul", ["r2_c", "r2_g"], "r2_cg"), node("Add", ["r2_cg", "r2_p"], "r2_cn"),
    node("Identity", ["r2_p"], "r2_pn"), node("Identity", ["r2_cond"], "r2_co"), node("Mul", ["r2_hn", "r2_cn"], "r2_y"),
], [vi("r2_i", I64, []), vi("r2_cond", BOOL, []), vi("r2_h", F, [2, 4]), vi("r2_c", F, [2, 4]), vi("r2_p", F, [2, 4])],
   [vi("r2_co", BOOL, []), vi("r2_hn", F, [2, 4]), vi("r2_cn", F, [2, 4]), vi("r2_pn", F, [2, 4]),
    vi("r2_y", F, [2, 4])])
RNN2_INITS = dict(X=rand(4, 2, 3), U=rand(3, 4), W=rand(4, 4), H0=rand(2, 4), C0=rand(2, 4), P=rand(2, 4) * 0.5,
                  M=np.array(4, np.int64), go=np.array(True))
for out in ("h", "c", "p", "ys"):
    outs = {"h": ["h"], "c": ["c"], "p": ["p"], "ys": ["h", "c", "ys"]}[out]
    nodes = [node("Loop", ["M", "go", "H0", "C0", "P"], ["h", "c", "p", "ys"], body=RNN2)]
    if out == "p":   # the pass-through state's gradient comes through the carried copies only
        nodes.append(node("Mul", ["p", "h"], "ph"))
        outs = ["ph"]
    CASES.append(case(f"loop_two_states_{out}", nodes, RNN2_INITS, outs))

# An If inside the body: odd/even steps from a flag sequence read by the
# iteration number (flags are +-1, far from the threshold 0).
BODY_IF = graph("bi", [
    node("Gather", ["flags", "bi_i"], "bi_f", axis=0), node("Greater", ["bi_f", "zero"], "bi_flag"),
    node("If", ["bi_flag"], "bi_sn",
         then_branch=graph("bi_then", [node("MatMul", ["bi_s", "W"], "bt_m"), node("Tanh", ["bt_m"], "bt_y")], [],
                           [vi("bt_y", F, [2, 4])]),
         else_branch=graph("bi_else", [node("Mul", ["bi_s", "B"], "be_m"), node("Sigmoid", ["be_m"], "be_y")], [],
                           [vi("be_y", F, [2, 4])])),
    node("Identity", ["bi_c"], "bi_co"),
], [vi("bi_i", I64, []), vi("bi_c", BOOL, []), vi("bi_s", F, [2, 4])],
   [vi("bi_co", BOOL, []), vi("bi_sn", F, [2, 4])])
CASES.append(case("loop_if_in_body", [node("Loop", ["M", "go", "S0"], "s", body=BODY_IF)],
                  dict(LOOP_INITS, M=np.array(4, np.int64), flags=np.array([1, -1, -1, 1], np.float32),
                       zero=np.array(0.0, np.float32)), ["s"], no_grad=["flags", "zero"]))

# ---- Scan ---------------------------------------------------------------------

# State s [2, 3]; scan inputs x1, x2 slices [2, 3]; s' = tanh(s W + x1) * x2;
# scan outputs y1 = s', y2 = s' * x1.
SCAN_BODY = graph("sc", [
    node("MatMul", ["sc_s", "W"], "sc_m"), node("Add", ["sc_m", "sc_x1"], "sc_a"), node("Tanh", ["sc_a"], "sc_t"),
    node("Mul", ["sc_t", "sc_x2"], "sc_sn"), node("Identity", ["sc_sn"], "sc_y1"), node("Mul", ["sc_sn", "sc_x1"], "sc_y2"),
], [vi("sc_s", F, [2, 3]), vi("sc_x1", F, [2, 3]), vi("sc_x2", F, [2, 3])],
   [vi("sc_sn", F, [2, 3]), vi("sc_y1", F, [2, 3]), vi("sc_y2", F, [2, 3])])
SCAN_INITS = dict(S0=rand(2, 3), W=rand(3, 3), X1=rand(4, 2, 3), X2=rand(4, 2, 3, low=0.5, high=1.5))
for label, attrs in (("forward", {}),
                     ("reverse", dict(scan_input_directions=[1, 1], scan_output_directions=[1, 1])),
                     ("mixed", dict(scan_input_directions=[1, 0], scan_output_directions=[0, 1]))):
    for out in ("state", "y1", "y2"):
        outs = {"state": ["s"], "y1": ["s", "y1"], "y2": ["y1", "y2"]}[out]
        CASES.append(case(f"scan_{label}_{out}",
                          [node("Scan", ["S0", "X1", "X2"], ["s", "y1", "y2"], body=SCAN_BODY, num_scan_inputs=2,
                                **attrs)], SCAN_INITS, outs))

# Scan axes other than 0: X1 [2, 4, 3] scanned along axis 1; y2 stacked along axis 1.
CASES.append(case("scan_axes",
                  [node("Scan", ["S0", "X1t", "X2"], ["s", "y1", "y2"], body=SCAN_BODY, num_scan_inputs=2,
                        scan_input_axes=[1, 0], scan_output_axes=[0, 1])],
                  dict(S0=SCAN_INITS["S0"], W=SCAN_INITS["W"], X2=SCAN_INITS["X2"], X1t=rand(2, 4, 3)),
                  ["y1", "y2"]))

# No state: a map over the slices, y_t = sigmoid(x_t W) * x_t.
MAP_BODY = graph("mp", [node("MatMul", ["mp_x", "W"], "mp_m"), node("Sigmoid", ["mp_m"], "mp_s"),
                        node("Mul", ["mp_s", "mp_x"], "mp_y")],
                 [vi("mp_x", F, [2, 3])], [vi("mp_y", F, [2, 3])])
CASES.append(case("scan_no_state", [node("Scan", ["X1"], "y", body=MAP_BODY, num_scan_inputs=1)],
                  dict(X1=SCAN_INITS["X1"], W=SCAN_INITS["W"]), ["y"]))

# Scan-8, the batched form: states and scan inputs carry the batch on axis 0,
# scan inputs their steps on axis 1; sequence_lens [4, 2] leaves the second
# entry's last two steps unread (their gradient is zero) and pads its scan
# outputs with zeros; the second scan input runs in reverse.
SCAN8_BODY = graph("s8", [
    node("MatMul", ["s8_s", "W"], "s8_m"), node("Add", ["s8_m", "s8_x1"], "s8_a"), node("Tanh", ["s8_a"], "s8_t"),
    node("Mul", ["s8_t", "s8_x2"], "s8_sn"), node("Mul", ["s8_sn", "s8_x1"], "s8_y"),
], [vi("s8_s", F, [3]), vi("s8_x1", F, [3]), vi("s8_x2", F, [3])], [vi("s8_sn", F, [3]), vi("s8_y", F, [3])])
SCAN8_INITS = dict(S0=rand(2, 3), W=rand(3, 3), X1=rand(2, 4, 3), X2=rand(2, 4, 3, low=0.5, high=1.5))
for label, lens in (("full", ""), ("lens", "lens")):
    for out in ("state", "y"):
        inits = dict(SCAN8_INITS, lens=np.array([4, 2], np.int64)) if lens else SCAN8_INITS
        CASES.append(dict(name=f"scan8_{label}_{out}",
                          model=graph_model([node("Scan", [lens, "S0", "X1", "X2"], ["s", "y"], body=SCAN8_BODY,
                                                  num_scan_inputs=2, directions=[0, 1])],
                                            inits, ["y", "s"] if out == "state" else ["s", "y"], opset=8),
                          args=["--max-elems", "64"]))

# SequenceMap: the body runs once per element on the tape, so gradients reach
# the elements of the mapped sequences and the tensor read by every element.
SEQMAP_BODY = graph("sm", [node("MatMul", ["sm_x", "sm_w"], "sm_m"), node("Tanh", ["sm_m"], "sm_t"),
                           node("Mul", ["sm_t", "sm_v"], "sm_y")],
                    [vi("sm_x", F, [2, 3]), vi("sm_w", F, [3, 3]), vi("sm_v", F, [2, 3])], [vi("sm_y", F, [2, 3])])
CASES.append(case("sequence_map_seq_tensor_seq",
                  [node("SequenceConstruct", ["A", "B", "C"], "xs"), node("SequenceConstruct", ["VA", "VB", "VC"], "vs"),
                   node("SequenceMap", ["xs", "W", "vs"], "ys", body=SEQMAP_BODY),
                   node("ConcatFromSequence", ["ys"], "y", axis=0)],
                  dict(A=rand(2, 3), B=rand(2, 3), C=rand(2, 3), W=rand(3, 3), VA=rand(2, 3), VB=rand(2, 3),
                       VC=rand(2, 3)), ["y"]))
