#!/usr/bin/env python3
"""Writes one of the dynamic models (control flow, changing shapes) as ONNX.

    python3 bench/models/make_dynamic.py MODEL [--tiny] [--batch N] [--seed N]
        [--set KEY=VALUE ...] [--inputs DIR] [--dim NAME=N ...] -o OUT.onnx

Models whose computation changes from step to step, for DTR's claim that it
needs no ahead-of-time planning (issue 8). dtrexec's training run draws the
inputs nobody gave from its seed (floats uniform in [-1, 1), token ids below
the table they index), so each model takes its "dynamics" from its inputs:

lstm_var_len  input_ids int64 [batch, seq] with `seq` a symbolic dimension
              (`dtrexec --dim seq=8:24` draws a length per step). Gather
              embedding, LSTM layers (time-major), MatMul+Add to the
              vocabulary. Each layer is, by default, a Scan over time of an
              LSTM cell written in plain operators (the input projection of
              all steps in one MatMul outside the Scan; per step MatMul,
              Split, Sigmoid/Tanh, Mul/Add), so the trip count follows the
              drawn length and DTR sees every step's activations; cell=op
              uses the ONNX LSTM operator instead (its backward recomputes
              the gates in a kernel workspace about 20 times the size of its
              output, which no budget can evict: budgets much below the
              unbudgeted peak are infeasible with it). The model computes
              its own next-token loss: logits of positions 0..seq-2 against
              the ids of positions 1..seq-1, SoftmaxCrossEntropyLoss (mean).
              Outputs "loss" (a scalar, which dtrexec's --loss auto trains
              as it is) and "logits" [(seq-1)*batch, vocab], time-major
              rows. In-graph targets are used because dtrexec's drawn
              --train labels are drawn once, at the first step's shape, and
              a length that changes every step would not fit them.
treelstm      A binary TreeLSTM (Tai et al. 2015, N-ary with N = 2) over a
              random binary tree built by shift-reduce: tokens int64 [n] ->
              embedding -> leaf cells (h, c); a Loop of n-1 iterations
              carries the frontier (m = n..1 subtrees) and at iteration i
              merges the adjacent pair (k, k+1) with
              k = int(Sigmoid(3 * merge_noise[i]) * (m - 1)), merge_noise a
              float input [n] (the last entry unused): the tree changes with
              the input. frontier=sequence (default): the frontier is a pair
              of tensor sequences, one [1, H] state per subtree; the merge
              reads its children with SequenceAt and replaces them with
              SequenceErase/SequenceInsert, so the step's dataflow follows
              the tree (as a per-node framework would run it: a new tree is
              a new graph for a static planner). frontier=tensor: the
              frontier is one [m, H] tensor, rebuilt by Gather(Concat(H, h),
              idx) with idx = j for j < k, m (the new node) for j = k, j + 1
              beyond; there the tree is in the indices only and every tree
              of n leaves has the same dataflow graph. Scan output: the
              merge positions. Outputs "logits" [1, classes] of the root
              (trained with cross-entropy against dtrexec's drawn label) and
              "merge_order" int64 [n-1, 1].
early_exit    x [batch, in] -> h = Relu(Linear) -> early logits; If the
              batch's mean top-class softmax probability is above
              `threshold` the early logits are returned, else `late`
              further Linear+Relu layers and a late head run on h. Both
              branches read outer-scope values (the early logits; h and the
              late weights). The threshold defaults to the median confidence
              over 64 seeded batches drawn like dtrexec's inputs, so that
              about half of the steps exit early; threshold=0 always exits
              early, threshold=1 never does. Output "logits" [batch,
              classes].

--tiny starts from the small test configuration; --set KEY=VALUE overrides
one parameter (--list prints them). --inputs DIR writes seeded sample inputs
(drawn like dtrexec's: floats uniform in [-1, 1)) as DIR/<input>.npy, with
symbolic dimensions bound by --dim NAME=N.

Importable: make(name, tiny=False, seed=0, **overrides) returns the
ModelProto; sample_inputs(model, seed, dims) the feeds.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from _builder import META_INT_HIGH, Builder, parse_sets  # noqa: E402

INT64_MAX = np.iinfo(np.int64).max


class Body(Builder):
    """A subgraph (Loop/Scan body, If branch): nodes through Builder.node,
    typed formal inputs and outputs. Its weights live in the outer graph and
    are read as outer-scope values; every name carries the body's prefix so
    that nothing shadows an outer name."""

    def __init__(self, name):
        super().__init__(name)

    def typed_output(self, name, dtype, shape):
        self.outputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def graph(self):
        return helper.make_graph(self.nodes, self.name, self.inputs, self.outputs)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ---- lstm_var_len -------------------------------------------------------------

def _lstm_scan_layer(b, x, p, cin, hidden, batch):
    """One forward LSTM layer as a Scan over time: the input projection of
    every step in one MatMul outside, then per step z = xw_t + h R + b,
    gates i, f, g, o (PyTorch's order), c' = f c + i g, h' = o tanh(c').
    The initial states are parameters (zeros). x [L, N, cin] -> [L, N, H]."""
    H = hidden
    bound = 1.0 / np.sqrt(H)
    w = b.uniform(f"{p}.weight_ih", (cin, 4 * H), bound)
    r = b.uniform(f"{p}.weight_hh", (H, 4 * H), bound)
    bias = b.uniform(f"{p}.bias", (4 * H,), bound)
    h0 = b.const(f"{p}.h0", np.zeros((batch, H), np.float32))
    c0 = b.const(f"{p}.c0", np.zeros((batch, H), np.float32))
    xw = b.node("Add", [b.node("MatMul", [x, w], f"{p}.input_proj.matmul"), bias], f"{p}.input_proj")
    body = Body(f"{p}.cell")
    h = body.input(f"{p}/h", [batch, H])
    c = body.input(f"{p}/c", [batch, H])
    xt = body.input(f"{p}/xw_t", [batch, 4 * H])
    z = body.node("Add", [xt, body.node("MatMul", [h, r], f"{p}/hh")], f"{p}/gates_in")
    gi, gf, gg, go = _split(body, z, f"{p}/gates", ["i", "f", "g", "o"])
    c1 = body.node("Add", [body.node("Mul", [body.node("Sigmoid", [gf], f"{p}/f"), c], f"{p}/fc"),
                           body.node("Mul", [body.node("Sigmoid", [gi], f"{p}/i"),
                                             body.node("Tanh", [gg], f"{p}/g")], f"{p}/ig")], f"{p}/c_next")
    h1 = body.node("Mul", [body.node("Sigmoid", [go], f"{p}/o"), body.node("Tanh", [c1], f"{p}/tanh_c")],
                   f"{p}/h_next")
    y = body.node("Identity", [h1], f"{p}/y_t")
    for name in (h1, c1, y):
        body.typed_output(name, TensorProto.FLOAT, [batch, H])
    outs = b.node("Scan", [h0, c0, xw], p, outputs=["h", "c", "Y"], body=body.graph(), num_scan_inputs=1)
    return outs[2]


def build_lstm_var_len(batch=4, seed=0, layers=1, embed=16, hidden=32, vocab=50, cell="scan"):
    if cell not in ("scan", "op"):
        raise ValueError(f"lstm_var_len: cell must be 'scan' or 'op', not '{cell}'")
    b = Builder("lstm_var_len", seed)
    b.metadata[META_INT_HIGH] = f"input_ids={vocab}"
    ids = b.input("input_ids", [batch, "seq"], dtype=TensorProto.INT64)
    emb = b.uniform("embedding.weight", (vocab, embed), 0.1)
    x = b.node("Gather", [emb, ids], "embedding", axis=0)                      # [N, L, E]
    x = b.node("Transpose", [x], "embedding.to_time_major", perm=[1, 0, 2])    # [L, N, E]
    cin = embed
    if cell == "op":
        axes = b.ints("lstm.direction_axis", [1])
    for i in range(layers):
        p = f"lstm{i}"
        if cell == "scan":
            x = _lstm_scan_layer(b, x, p, cin, hidden, batch)
        else:
            bound = 1.0 / np.sqrt(hidden)
            w = b.uniform(f"{p}.W", (1, 4 * hidden, cin), bound)
            r = b.uniform(f"{p}.R", (1, 4 * hidden, hidden), bound)
            bias = b.uniform(f"{p}.B", (1, 8 * hidden), bound)
            y = b.node("LSTM", [x, w, r, bias], p, outputs=["Y"], hidden_size=hidden, direction="forward")[0]
            x = b.node("Squeeze", [y, axes], f"{p}.squeeze")                  # [L, N, H]
        cin = hidden
    time_axis = b.ints("shift.axis", [0])
    x = b.node("Slice", [x, b.ints("shift.zero", [0]), b.ints("shift.minus_one", [-1]), time_axis],
               "decoder.context")                                             # positions 0..L-2
    x = b.linear(x, "decoder", hidden, vocab)                                  # [L-1, N, V]
    logits = b.node("Reshape", [x, b.ints("decoder.flat_shape", [-1, vocab])], "decoder.flatten")
    ids_t = b.node("Transpose", [ids], "targets.to_time_major", perm=[1, 0])  # [L, N]
    tgt = b.node("Slice", [ids_t, b.ints("shift.one", [1]), b.ints("shift.end", [INT64_MAX]), time_axis],
                 "targets.next")                                              # positions 1..L-1
    tgt = b.node("Reshape", [tgt, b.ints("targets.flat_shape", [-1])], "targets.flatten")
    loss = b.node("SoftmaxCrossEntropyLoss", [logits, tgt], "loss.xent", reduction="mean")
    b.output(loss, rename="loss")
    b.output(logits, rename="logits")
    return b.build(f"lstm_var_len: {layers} LSTM layers ({'Scan over an LSTM cell' if cell == 'scan' else 'LSTM operator'}), "
                   f"embed {embed}, hidden {hidden}, vocab {vocab}, batch {batch}, symbolic sequence length "
                   f"'seq'; next-token loss in the graph")


# ---- treelstm -----------------------------------------------------------------

def _split(b, x, name, parts):
    return b.node("Split", [x], name, outputs=parts, axis=1)


def _treelstm_cell(body, hcat, cl, cr, wm, bm):
    """The binary TreeLSTM cell: hcat [1, 2H] = [h_l, h_r], children's c."""
    zz = body.node("Add", [body.node("MatMul", [hcat, wm], "merge/matmul"), bm], "merge/gates_in")
    i_, fl, fr, o_, u_ = _split(body, zz, "merge/gates", ["i", "fl", "fr", "o", "u"])
    sig = {g: body.node("Sigmoid", [v], f"merge/sig_{g}") for g, v in (("i", i_), ("fl", fl), ("fr", fr),
                                                                     ("o", o_))}
    c = body.node("Add", [body.node("Mul", [sig["i"], body.node("Tanh", [u_], "merge/tanh_u")], "merge/iu"),
                          body.node("Add", [body.node("Mul", [sig["fl"], cl], "merge/fl_cl"),
                                            body.node("Mul", [sig["fr"], cr], "merge/fr_cr")], "merge/forget")],
                  "merge/c")                                                   # [1, H]
    h = body.node("Mul", [sig["o"], body.node("Tanh", [c], "merge/tanh_c")], "merge/h")
    return h, c


def _treelstm_sequence_body(b, body, H, noise, three, one_i, wm, bm):
    """The frontier as sequences of [1, H] tensors, one per subtree: the
    merge reads its two children with SequenceAt and replaces them with
    SequenceErase/SequenceInsert, so each step's dataflow follows the tree."""
    it = body.input("merge/iter", [], TensorProto.INT64)
    cond = body.input("merge/cond", [], TensorProto.BOOL)
    body.inputs += [helper.make_tensor_sequence_value_info("merge/H", TensorProto.FLOAT, [1, H]),
                    helper.make_tensor_sequence_value_info("merge/C", TensorProto.FLOAT, [1, H])]
    Hs, Cs = "merge/H", "merge/C"
    m = body.node("SequenceLength", [Hs], "merge/m")                           # scalar int64
    mf1 = body.node("Sub", [body.node("Cast", [m], "merge/m_float", to=TensorProto.FLOAT), "merge.one_f0"],
                    "merge/m_minus_one")
    u = body.node("Gather", [noise, it], "merge/noise", axis=0)
    p = body.node("Sigmoid", [body.node("Mul", [u, three], "merge/scaled")], "merge/p")
    k = body.node("Cast", [body.node("Mul", [p, mf1], "merge/k_float")], "merge/k", to=TensorProto.INT64)
    k1 = body.node("Add", [k, one_i], "merge/k_plus_one")
    hl = body.node("SequenceAt", [Hs, k], "merge/h_left")
    hr = body.node("SequenceAt", [Hs, k1], "merge/h_right")
    cl = body.node("SequenceAt", [Cs, k], "merge/c_left")
    cr = body.node("SequenceAt", [Cs, k1], "merge/c_right")
    hcat = body.node("Concat", [hl, hr], "merge/children_h_row", axis=1)      # [1, 2H]
    h, c = _treelstm_cell(body, hcat, cl, cr, wm, bm)
    outs = []
    for seq, new, tag in ((Hs, h, "H"), (Cs, c, "C")):
        e1 = body.node("SequenceErase", [seq, k1], f"merge/{tag}_erase_right")
        e2 = body.node("SequenceErase", [e1, k], f"merge/{tag}_erase_left")
        outs.append(body.node("SequenceInsert", [e2, new, k], f"merge/{tag}_next"))
    c_out = body.node("Identity", [cond], "merge/cond_next")
    k_row = body.node("Unsqueeze", [k, "merge.axis0"], "merge/k_row")           # [1]
    body.typed_output(c_out, TensorProto.BOOL, [])
    for o in outs:
        body.outputs.append(helper.make_tensor_sequence_value_info(o, TensorProto.FLOAT, [1, H]))
    body.typed_output(k_row, TensorProto.INT64, [1])


def build_treelstm(batch=1, seed=0, leaves=8, embed=16, hidden=32, vocab=100, classes=5, dynamic_leaves=False,
                   frontier="sequence"):
    if frontier not in ("tensor", "sequence"):
        raise ValueError(f"treelstm: frontier must be 'tensor' or 'sequence', not '{frontier}'")
    if batch != 1:
        raise ValueError("treelstm: one tree per step (batch must be 1)")
    if leaves < 2 and not dynamic_leaves:
        raise ValueError("treelstm: a tree needs at least 2 leaves")
    H = hidden
    b = Builder("treelstm", seed)
    b.metadata[META_INT_HIGH] = f"tokens={vocab}"
    n = "leaves" if dynamic_leaves else leaves
    tokens = b.input("tokens", [n], dtype=TensorProto.INT64)
    noise = b.input("merge_noise", [n])
    emb = b.uniform("embedding.weight", (vocab, embed), 0.5)
    x = b.node("Gather", [emb, tokens], "embedding", axis=0)                   # [n, E]
    # Leaves: i, o, u from the input (no children, no forget gates).
    z = b.linear(x, "leaf", embed, 3 * H)
    gi, go, gu = _split(b, z, "leaf.gates", ["i", "o", "u"])
    c0 = b.node("Mul", [b.node("Sigmoid", [gi], "leaf.i"), b.node("Tanh", [gu], "leaf.u")], "leaf.c")
    h0 = b.node("Mul", [b.node("Sigmoid", [go], "leaf.o"), b.node("Tanh", [c0], "leaf.tanh_c")], "leaf.h")
    # Trip count n - 1 from the input's length, as a scalar.
    nshape = b.node("Shape", [tokens], "tree.n")
    one_i = b.ints("tree.one", 1)
    trips = b.node("Sub", [b.node("Squeeze", [nshape], "tree.n_scalar"), one_i], "tree.merges")
    go_on = b.const("tree.true", np.array(True))
    # Weights the body reads from the outer scope.
    wm = b.he_normal("merge.weight", (2 * H, 5 * H), fan_in=2 * H, gain=1.0)
    bm = b.small("merge.bias", (5 * H,))
    three = b.floats("merge.noise_scale", 3.0)

    body = Body("treelstm.merge")
    if frontier == "sequence":
        b.floats("merge.one_f0", 1.0)
        b.ints("merge.axis0", [0])
        _treelstm_sequence_body(b, body, H, noise, three, one_i, wm, bm)
        h_seq = b.node("SplitToSequence", [h0], "leaf.h_list", axis=0, keepdims=1)
        c_seq = b.node("SplitToSequence", [c0], "leaf.c_list", axis=0, keepdims=1)
        root_seq, _, order = b.node("Loop", [trips, go_on, h_seq, c_seq], "tree", outputs=["h", "c", "order"],
                                    body=body.graph())
        root = b.node("SequenceAt", [root_seq, b.ints("root.index", 0)], "root")
        logits = b.linear(root, "classifier", H, classes)
        b.output(logits, rename="logits")
        b.output(order, dtype=TensorProto.INT64, rename="merge_order")
        return b.build(f"treelstm: binary TreeLSTM over a random shift-reduce tree of {n} leaves, embed {embed}, "
                       f"hidden {H}, vocab {vocab}, {classes} classes; Loop over the merges, the frontier a "
                       "sequence of per-subtree states")
    b.floats("merge.one_f", [1.0])
    b.ints("merge.zero_i", 0)
    b.ints("merge.row_shape", [1, 2 * H])
    it = body.input("merge/iter", [], TensorProto.INT64)
    cond = body.input("merge/cond", [], TensorProto.BOOL)
    Hs = body.input("merge/H", [None, H])
    Cs = body.input("merge/C", [None, H])
    m = body.node("Shape", [Hs], "merge/m", end=1)                             # [1] int64
    mf = body.node("Cast", [m], "merge/m_float", to=TensorProto.FLOAT)
    mf1 = body.node("Sub", [mf, "merge.one_f"], "merge/m_minus_one")
    u = body.node("Gather", [noise, it], "merge/noise", axis=0)               # scalar
    p = body.node("Sigmoid", [body.node("Mul", [u, three], "merge/scaled")], "merge/p")
    kf = body.node("Mul", [p, mf1], "merge/k_float")                           # [1], in [0, m-1)
    k = body.node("Cast", [kf], "merge/k", to=TensorProto.INT64)               # [1], in [0, m-2]
    k1 = body.node("Add", [k, one_i], "merge/k_plus_one")
    pair = body.node("Concat", [k, k1], "merge/pair", axis=0)                  # [2]
    hp = body.node("Gather", [Hs, pair], "merge/children_h", axis=0)           # [2, H]
    cp = body.node("Gather", [Cs, pair], "merge/children_c", axis=0)
    hcat = body.node("Reshape", [hp, "merge.row_shape"], "merge/children_h_row")  # [1, 2H]
    cl, cr = body.node("Split", [cp], "merge/children_c_split", outputs=["l", "r"], axis=0)
    h, c = _treelstm_cell(body, hcat, cl, cr, wm, bm)                         # [1, H] each
    # The new frontier, m-1 rows: j < k keep row j, j = k the new node (row m
    # of the extended table), j > k row j + 1.
    ext_h = body.node("Concat", [Hs, h], "merge/ext_h", axis=0)                # [m+1, H]
    ext_c = body.node("Concat", [Cs, c], "merge/ext_c", axis=0)
    ms = body.node("Squeeze", [m], "merge/m_scalar")
    ks = body.node("Squeeze", [k], "merge/k_scalar")
    j = body.node("Range", ["merge.zero_i", body.node("Sub", [ms, one_i], "merge/m_minus_one_i"), one_i],
                  "merge/j")                                                   # [m-1]
    j1 = body.node("Add", [j, one_i], "merge/j_plus_one")
    idx = body.node("Where", [body.node("Less", [j, ks], "merge/before"), j,
                              body.node("Where", [body.node("Equal", [j, ks], "merge/at"), ms, j1],
                                        "merge/after_or_new")], "merge/index")
    h_new = body.node("Gather", [ext_h, idx], "merge/H_next", axis=0)
    c_new = body.node("Gather", [ext_c, idx], "merge/C_next", axis=0)
    c_out = body.node("Identity", [cond], "merge/cond_next")
    body.typed_output(c_out, TensorProto.BOOL, [])
    body.typed_output(h_new, TensorProto.FLOAT, [None, H])
    body.typed_output(c_new, TensorProto.FLOAT, [None, H])
    body.typed_output(k, TensorProto.INT64, [1])
    root_h, _, order = b.node("Loop", [trips, go_on, h0, c0], "tree", outputs=["h", "c", "order"],
                              body=body.graph())
    # The frontier's shape changes every iteration, so shape inference knows
    # no shape for the Loop's outputs: the root is one row, say so.
    root = b.node("Reshape", [root_h, b.ints("root.shape", [1, H])], "root")
    logits = b.linear(root, "classifier", H, classes)                          # [1, classes]
    b.output(logits, rename="logits")
    b.output(order, dtype=TensorProto.INT64, rename="merge_order")
    return b.build(f"treelstm: binary TreeLSTM over a random shift-reduce tree of {n} leaves, embed {embed}, "
                   f"hidden {H}, vocab {vocab}, {classes} classes; Loop over the merges")


def treelstm_merge_order(noise):
    """The merge positions the model computes from merge_noise (numpy, float32)."""
    noise = np.asarray(noise, np.float32)
    order, m = [], len(noise)
    for i in range(len(noise) - 1):
        p = _sigmoid(noise[i] * np.float32(3.0)).astype(np.float32)
        order.append(int(np.float32(p) * np.float32(m - 1)))
        m -= 1
    return order


# ---- early_exit ---------------------------------------------------------------

def _early_confidence(rng, w1, b1, we, be, batch, inp, draws=64):
    confs = []
    for _ in range(draws):
        x = rng.uniform(-1, 1, (batch, inp)).astype(np.float32)
        h = np.maximum(x @ w1 + b1, 0)
        e = h @ we + be
        p = np.exp(e - e.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        confs.append(p.max(axis=1).mean())
    return np.array(confs)


def build_early_exit(batch=8, seed=0, inp=32, hidden=64, classes=10, late=2, threshold=None):
    b = Builder("early_exit", seed)
    x = b.input("x", [batch, inp])
    h = b.relu(b.linear(x, "stem", inp, hidden), "stem.relu")                  # [N, hidden]
    e = b.linear(h, "early_head", hidden, classes)                            # [N, classes]
    sm = b.node("Softmax", [e], "confidence.softmax", axis=1)
    top = b.node("ReduceMax", [sm], "confidence.top", axes=[1], keepdims=0)
    conf = b.node("ReduceMean", [top], "confidence", axes=[0], keepdims=0)    # scalar
    if threshold is None:
        w = {t.name: onnx.numpy_helper.to_array(t) for t in b.initializers}
        confs = _early_confidence(np.random.default_rng(seed + 1), w["stem.weight"], w["stem.bias"],
                                  w["early_head.weight"], w["early_head.bias"], batch, inp)
        threshold = float(np.median(confs))
    thr = b.floats("exit.threshold", float(threshold))
    cond = b.node("Greater", [conf, thr], "exit.confident")

    then = Body("early_exit.early")
    out_e = then.node("Identity", [e], "early/logits")
    then.typed_output(out_e, TensorProto.FLOAT, [batch, classes])

    els = Body("early_exit.late")
    # The late layers' weights: initializers of the outer graph, drawn here.
    y = h
    for i in range(late):
        w_ = b.he_normal(f"late{i}.weight", (hidden, hidden), fan_in=hidden)
        b_ = b.small(f"late{i}.bias", (hidden,))
        y = els.node("Relu", [els.node("Add", [els.node("MatMul", [y, w_], f"late/{i}.matmul"), b_],
                                       f"late/{i}.add")], f"late/{i}.relu")
    wl = b.he_normal("late_head.weight", (hidden, classes), fan_in=hidden, gain=1.0)
    bl = b.small("late_head.bias", (classes,))
    out_l = els.node("Add", [els.node("MatMul", [y, wl], "late/head.matmul"), bl], "late/logits")
    els.typed_output(out_l, TensorProto.FLOAT, [batch, classes])

    logits = b.node("If", [cond], "exit", then_branch=then.graph(), else_branch=els.graph())
    b.output(logits, rename="logits")
    return b.build(f"early_exit: batch {batch}, in {inp}, hidden {hidden}, {classes} classes, {late} late "
                   f"layers; exits early when the mean top-class probability is above {threshold:.6g}")


# ---- registry and command line ------------------------------------------------

MODELS = {
    "lstm_var_len": (build_lstm_var_len, dict(batch=16, layers=2, embed=128, hidden=256, vocab=2000),
                     dict(batch=4, layers=1, embed=16, hidden=32, vocab=50)),
    "treelstm": (build_treelstm, dict(leaves=64, embed=128, hidden=256, vocab=5000, classes=5),
                 dict(leaves=8, embed=16, hidden=32, vocab=100, classes=5)),
    "early_exit": (build_early_exit, dict(batch=64, inp=256, hidden=1024, classes=10, late=4),
                   dict(batch=8, inp=32, hidden=64, classes=10, late=2)),
}

# Symbolic dimensions of each model and a value for quick checks.
DEFAULT_DIMS = {"lstm_var_len": {"seq": 12}, "treelstm": {"leaves": 8}, "early_exit": {}}


def config(name, tiny=False, **overrides):
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}'; models: {' '.join(MODELS)}")
    _, full, small = MODELS[name]
    cfg = dict(small if tiny else full)
    extra = {"lstm_var_len": ("cell",), "treelstm": ("dynamic_leaves", "frontier"),
             "early_exit": ("threshold",)}.get(name, ())
    for k, v in overrides.items():
        if v is None:
            continue
        if k not in cfg and k not in extra:
            raise ValueError(f"{name} has no parameter '{k}'; it has: {', '.join(list(cfg) + list(extra))}")
        cfg[k] = v
    return cfg


def make(name, tiny=False, seed=0, **overrides):
    cfg = config(name, tiny, **overrides)
    return MODELS[name][0](seed=seed, **cfg)


def sample_inputs(model, seed=0, dims=None):
    """Seeded inputs drawn like dtrexec's (runtime/inputs.c): floats uniform
    in [-1, 1), integer ids uniform below the bound in the model's metadata
    (default 2), booleans fair coins. Symbolic dimensions come from `dims`."""
    dims = dims or {}
    rng = np.random.default_rng(seed)
    highs = {}
    for p in model.metadata_props:
        if p.key == META_INT_HIGH:
            for item in filter(None, p.value.split(";")):
                k, v = item.split("=")
                highs[k] = int(v)
    init_names = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in init_names:
            continue
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(int(dims[d.dim_param]))
            else:
                raise ValueError(f"input '{vi.name}': symbolic dimension '{d.dim_param}' is not bound")
        np_dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np_dtype == np.bool_:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(np.bool_)
        elif np.issubdtype(np_dtype, np.integer):
            feeds[vi.name] = rng.integers(0, highs.get(vi.name, 2), shape).astype(np_dtype)
        else:
            feeds[vi.name] = rng.uniform(-1, 1, shape).astype(np_dtype)
    return feeds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", choices=list(MODELS))
    ap.add_argument("-o", "--out", "--output", dest="output", help="output .onnx file")
    ap.add_argument("--batch", type=int, help="batch (lstm_var_len, early_exit)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="any parameter, e.g. --set hidden=64 --set threshold=0 --set dynamic_leaves=True")
    ap.add_argument("--tiny", action="store_true", help="the small test configuration")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    ap.add_argument("--inputs", metavar="DIR", help="also write seeded sample inputs DIR/<name>.npy")
    ap.add_argument("--input-seed", type=int, default=1)
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=N",
                    help="bind a symbolic dimension for --inputs")
    ap.add_argument("--list", action="store_true", help="print each model's parameters and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name, (_, full, small) in MODELS.items():
            print(f"{name}\n  full: {full}\n  tiny: {small}")
        return 0
    if not args.model or not args.output:
        ap.error("MODEL and -o OUT.onnx are required")
    overrides = {"batch": args.batch}
    parse_sets(ap, args.set, overrides)
    try:
        model = make(args.model, tiny=args.tiny, seed=args.seed, **overrides)
    except ValueError as e:
        print(f"make_dynamic.py: {e}", file=sys.stderr)
        return 1
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    onnx.save_model(model, args.output)
    onnx.checker.check_model(args.output, full_check=True)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"{args.output}: {model.graph.name}, {len(model.graph.node)} nodes, "
          f"{params / 1e6:.3f}M parameters, opset {model.opset_import[0].version}")
    if args.inputs:
        dims = dict(DEFAULT_DIMS[args.model])
        for item in args.dim:
            k, v = item.split("=", 1)
            dims[k] = int(v)
        os.makedirs(args.inputs, exist_ok=True)
        for name, arr in sample_inputs(model, args.input_seed, dims).items():
            path = os.path.join(args.inputs, f"{name}.npy")
            np.save(path, arr)
            print(f"{path}: {arr.dtype}{list(arr.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
