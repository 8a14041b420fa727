#!/usr/bin/env python3
"""What `dtrexec --train` trains and on which loss, and what stops it
(issue 18), on models built here with onnx.helper; numbers against numpy.
Usage: train_params_check.py DTREXEC CASE   (CASE: see CASES below)

- rule: a GPT-like block as torch.onnx's dynamo exporter writes it (GELU-tanh
  and RMSNorm with Pow exponents, attention scale, a -3.4e38 causal mask,
  sqrt(2/pi) as a 1-element tensor, an int64 shape, a float tensor read only
  by Shape, a rotary inv_freq buffer) and a CNN with BatchNormalization: `dtrexec params` gives each
  initializer its decision and reason; training leaves the frozen ones
  bit-identical, changes the others, and the loss stays finite.
- overrides: --freeze / --trainable patterns, repeatable and comma-separated.
- shared: one initializer as two LayerNorm scales is warned about (params and
  --train), and so is a cls token expanded to the batch; a tied embedding
  (Gather + Transpose for the head) is not.
- lm-loss: cross-entropy over the last axis of [N, T, V] logits with [N, T]
  labels holding -100 (ignored), and over axis 1 of [N, C, T]: loss and one
  SGD step against numpy.
- graph-loss: a graph ending in a scalar loss trains on it (auto and --loss
  graph): one SGD step against numpy; --loss graph without one is refused.
- shapes: gradients never flow through Shape, ConstantOfShape, comparisons,
  casts to int64: one SGD step against numpy; an LSTM whose h0/c0 come from
  ConstantOfShape(Shape(x)) trains with --dim ranges.
- nonfinite: a loss that turns NaN at step 2 exits 4 naming the step and the
  first non-finite call; --stats stays valid JSON (null for NaN); a NaN weight
  is named as such.
- fp16: a float16 model's parameters are seen and train (float32 master weights, saved as float16).
- eval-export: eval-mode exports by both PyTorch exporters whose
  BatchNormalization was folded into the convolutions
  (tests/data/exports/gen_folded.py) are warned about, by `params` and by
  --train, naming the first folded weight and counting the rest; the
  corpus's train-mode exports (unfolded) and a hand-built Conv network
  with a bias are not.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

H = helper.make_node


def save(nodes, inits, inputs, outputs, path, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def run(dtrexec, args, expect=0):
    res = subprocess.run([dtrexec] + args, capture_output=True, text=True, timeout=600)
    if res.returncode != expect:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {res.returncode} (expected {expect})\n{res.stdout}{res.stderr}")
    return res


def params(dtrexec, path, extra=()):
    res = run(dtrexec, ["params", path] + list(extra))
    rows = {}
    for line in res.stdout.splitlines()[1:-1]:
        name, dtype, shape, decision, reason = line.split(None, 4)
        rows[name] = (dtype, shape, decision, reason)
    return rows, res


def expect_decisions(rows, want):
    for name, (decision, reason) in want.items():
        got = rows.get(name)
        if not got or got[2] != decision or not got[3].startswith(reason):
            raise SystemExit(f"FAIL: '{name}': expected {decision} ({reason}), got {got}")


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def f32(a):
    return np.asarray(a, dtype=np.float32)


# ---- rule ------------------------------------------------------------------------

def gpt_block(path, rng, shared=False):
    """Tokens -> embedding + positions -> LayerNorm -> MLP with GELU-tanh ->
    masked attention with a scale -> RMSNorm -> logits [2, 4, 11]."""
    T, D, V = 4, 8, 11
    mask = np.zeros((1, T, T), np.float32)
    mask[0][np.triu_indices(T, 1)] = -3.4028234663852886e38
    inits = {
        "wte": f32(rng.normal(0, 0.3, (V, D))), "wpe": f32(rng.normal(0, 0.1, (1, T, D))),
        "ln_w": f32(np.ones(D)), "ln_b": f32(np.zeros(D)),
        "W1": f32(rng.normal(0, 0.3, (D, 16))), "b1": f32(rng.normal(0, 0.1, 16)),
        "three": f32(3.0), "c044": f32(0.044715), "sqrt2pi": f32([0.7978845608]), "one_c": f32(1.0),
        "half_c": f32(0.5), "W2": f32(rng.normal(0, 0.3, (16, D))), "scale": f32(1 / np.sqrt(D)),
        "mask": mask, "like": f32(np.ones(T)), "two": f32(2.0), "eps": f32(1e-6),
        "rms_w": f32(np.ones(D)), "shape_i64": np.array([2, T, D], np.int64), "zero_c": f32(0.0),
        "W_out": f32(rng.normal(0, 0.3, (D, V))), "rotary.inv_freq": f32(1.0 / 10000 ** (np.arange(D) / D)),
    }
    ln2 = ["ln_w", "ln_b"] if shared else ["ln2_w", "ln2_b"]
    if not shared:
        inits["ln2_w"], inits["ln2_b"] = f32(np.ones(D)), f32(np.zeros(D))
    nodes = [
        H("Gather", ["wte", "ids"], ["e"], name="embed"), H("Add", ["e", "wpe"], ["h"], name="pos"),
        H("LayerNormalization", ["h", "ln_w", "ln_b"], ["hn"], axis=-1, name="ln1"),
        H("Mul", ["hn", "rotary.inv_freq"], ["hf"]), H("Tanh", ["hf"], ["hc"]), H("Add", ["hn", "hc"], ["hr"]),
        H("MatMul", ["hr", "W1"], ["u0"], name="fc1"), H("Add", ["u0", "b1"], ["u"], name="fc1_bias"),
        H("Pow", ["u", "three"], ["u3"], name="gelu_pow"), H("Mul", ["u3", "c044"], ["t"], name="gelu_mul"),
        H("Add", ["u", "t"], ["s"]), H("Mul", ["s", "sqrt2pi"], ["s2"]), H("Tanh", ["s2"], ["th"]),
        H("Add", ["th", "one_c"], ["th1"]), H("Mul", ["u", "half_c"], ["uh"]), H("Mul", ["uh", "th1"], ["g"]),
        H("Greater", ["g", "zero_c"], ["pos_mask"], name="gt"),
        H("Where", ["pos_mask", "g", "g"], ["gw"]),
        H("MatMul", ["gw", "W2"], ["o"], name="fc2"),
        H("LayerNormalization", ["o", ln2[0], ln2[1]], ["on"], axis=-1, name="ln2"),
        H("Transpose", ["on"], ["ot"], perm=[0, 2, 1]), H("MatMul", ["on", "ot"], ["sc0"]),
        H("Mul", ["sc0", "scale"], ["sc1"], name="attn_scale"), H("Add", ["sc1", "mask"], ["sc2"], name="attn_mask"),
        H("Shape", ["like"], ["like_shape"]), H("ConstantOfShape", ["like_shape"], ["zeros_t"],
                                                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
        H("Add", ["sc2", "zeros_t"], ["sc3"]),
        H("Softmax", ["sc3"], ["p"], axis=-1), H("MatMul", ["p", "on"], ["a"]),
        H("Pow", ["a", "two"], ["a2"], name="rms_pow"),
        H("ReduceMean", ["a2"], ["ms"], axes=[-1], keepdims=1), H("Add", ["ms", "eps"], ["mse"]),
        H("Sqrt", ["mse"], ["rms"]), H("Div", ["a", "rms"], ["an"]), H("Mul", ["an", "rms_w"], ["ar"], name="rms_scale"),
        H("Reshape", ["ar", "shape_i64"], ["ar2"]),
        H("MatMul", ["ar2", "W_out"], ["logits"], name="lm_head"),
    ]
    save(nodes, inits, [vi("ids", TensorProto.INT64, [2, T])], [vi("logits", TensorProto.FLOAT, [2, T, V])], path)
    return inits


RULE_WANT = {
    "wte": ("train", "embedding"), "wpe": ("train", "added tensor"),
    "ln_w": ("train", "LayerNormalization scale"), "ln_b": ("train", "LayerNormalization bias"),
    "W1": ("train", "MatMul weight"), "b1": ("train", "bias"), "W2": ("train", "MatMul weight"),
    "rms_w": ("train", "scale"), "W_out": ("train", "MatMul weight"),
    "ln2_w": ("train", "LayerNormalization scale"), "ln2_b": ("train", "LayerNormalization bias"),
    "three": ("frozen", "Pow exponent"), "two": ("frozen", "Pow exponent"),
    "c044": ("frozen", "0-d scalar"), "one_c": ("frozen", "0-d scalar"), "half_c": ("frozen", "0-d scalar"),
    "scale": ("frozen", "0-d scalar"), "eps": ("frozen", "0-d scalar"),
    "sqrt2pi": ("frozen", "1-element constant"), "mask": ("frozen", "mask"),
    "like": ("frozen", "no gradient path"), "zero_c": ("frozen", "no gradient path"),
    "shape_i64": ("frozen", "int64"), "rotary.inv_freq": ("frozen", "buffer"),
}


def cnn_bn(path, rng):
    inits = {"W": f32(rng.normal(0, 0.3, (4, 3, 3, 3))), "B": f32(np.zeros(4)), "bn_s": f32(np.ones(4)),
             "bn_b": f32(np.zeros(4)), "bn_m": f32(rng.normal(0, 0.1, 4)), "bn_v": f32(rng.uniform(0.5, 1.5, 4)),
             "lo": f32(0.0), "hi": f32(6.0), "Wfc": f32(rng.normal(0, 0.3, (5, 4))), "bfc": f32(np.zeros(5)),
             "unused_w": f32(np.ones((3, 3)))}
    nodes = [H("Conv", ["x", "W", "B"], ["y"], pads=[1, 1, 1, 1]),
             H("BatchNormalization", ["y", "bn_s", "bn_b", "bn_m", "bn_v"], ["yn"]),
             H("Clip", ["yn", "lo", "hi"], ["r"]), H("GlobalAveragePool", ["r"], ["gp"]),
             H("Flatten", ["gp"], ["f"]), H("Gemm", ["f", "Wfc", "bfc"], ["out"], transB=1)]
    save(nodes, inits, [vi("x", TensorProto.FLOAT, [2, 3, 6, 6])], [vi("out", TensorProto.FLOAT, [2, 5])], path)


def rule(dtrexec, tmp):
    path = os.path.join(tmp, "gpt.onnx")
    inits = gpt_block(path, np.random.default_rng(1))
    rows, res = params(dtrexec, path)
    expect_decisions(rows, RULE_WANT)
    if set(rows) != set(inits):
        raise SystemExit(f"FAIL: params lists {sorted(rows)}, the model has {sorted(inits)}")
    if "warning" in res.stderr:
        raise SystemExit(f"FAIL: unexpected warning: {res.stderr}")
    out, stats = os.path.join(tmp, "out.onnx"), os.path.join(tmp, "s.json")
    res = run(dtrexec, [path, "--train", "--steps", "5", "--lr", "0.1", "--optimizer", "adam", "--save", out,
                        "--stats", stats])
    n_train = sum(1 for d, _ in RULE_WANT.values() if d == "train")
    if f"training {n_train} tensors" not in res.stderr or "frozen by rule" not in res.stderr:
        raise SystemExit(f"FAIL: no training summary on stderr: {res.stderr}")
    if "cross-entropy over the last axis of 'logits'" not in res.stderr:
        raise SystemExit(f"FAIL: the loss chosen is not reported as LM cross-entropy: {res.stderr}")
    loss = json.load(open(stats))["loss"]
    if len(loss) != 5 or not all(np.isfinite(loss)):
        raise SystemExit(f"FAIL: losses {loss}")
    got = weights(out)
    for name, (decision, _) in RULE_WANT.items():
        same = got[name].tobytes() == np.asarray(inits[name]).tobytes()
        if same != (decision == "frozen"):
            raise SystemExit(f"FAIL: '{name}' ({decision}) {'did not change' if same else 'changed'} in training")

    path = os.path.join(tmp, "cnn.onnx")
    cnn_bn(path, np.random.default_rng(2))
    rows, _ = params(dtrexec, path)
    expect_decisions(rows, {
        "W": ("train", "Conv weight"), "B": ("train", "Conv bias"), "bn_s": ("train", "BatchNormalization scale"),
        "bn_b": ("train", "BatchNormalization bias"), "bn_m": ("frozen", "BatchNormalization running mean"),
        "bn_v": ("frozen", "BatchNormalization running variance"), "lo": ("frozen", "Clip bound"),
        "hi": ("frozen", "Clip bound"), "Wfc": ("train", "Gemm weight"), "bfc": ("train", "Gemm bias"),
        "unused_w": ("frozen", "unused")})
    run(dtrexec, [path, "--train", "--steps", "2", "--quiet"])
    print(f"PASS: {len(RULE_WANT)} + 11 initializers decided as a PyTorch user means them; frozen ones kept, "
          f"losses {loss[0]:.4g} -> {loss[-1]:.4g}")


def overrides(dtrexec, tmp):
    path = os.path.join(tmp, "gpt.onnx")
    inits = gpt_block(path, np.random.default_rng(1))
    rows, _ = params(dtrexec, path, ["--freeze", "W*", "--trainable", "three", "--trainable", "eps,shape_i64",
                                     "--freeze", "ln2_*"])
    expect_decisions(rows, {
        "W1": ("frozen", "--freeze"), "W2": ("frozen", "--freeze"), "W_out": ("frozen", "--freeze"),
        "ln2_w": ("frozen", "--freeze"), "three": ("train", "--trainable"), "eps": ("train", "--trainable"),
        "shape_i64": ("frozen", "int64 (--trainable needs a float type)"), "wte": ("train", "embedding")})
    _, res = params(dtrexec, path, ["--freeze", "nope*", "--trainable", "W1"])
    if "--freeze 'nope*' matches no initializer" not in res.stderr or "'W1' matches" in res.stderr:
        raise SystemExit(f"FAIL: a pattern that matches nothing is not warned about: {res.stderr}")
    out = os.path.join(tmp, "out.onnx")
    run(dtrexec, [path, "--train", "--steps", "2", "--lr", "0.01", "--freeze", "W*", "--trainable", "eps",
                  "--save", out, "--quiet"])
    got = weights(out)
    if got["eps"].tobytes() == inits["eps"].tobytes() or got["W1"].tobytes() != inits["W1"].tobytes():
        raise SystemExit(f"FAIL: --trainable eps / --freeze W* not applied: eps {got['eps']}")
    # Issue 18's failure, on purpose: GELU's exponent trained gets d/dp u^p =
    # u^p ln(u), NaN where u < 0; the next step stops, naming the Pow.
    res = run(dtrexec, [path, "--train", "--steps", "3", "--trainable", "three"], expect=4)
    for word in ("step 2: the loss is nan", "node 'gelu_pow' (Pow)", "input 'three'", "already holds nan"):
        if word not in res.stderr:
            raise SystemExit(f"FAIL: --trainable three: the message lacks '{word}': {res.stderr}")
    print("PASS: --freeze and --trainable patterns (repeated, comma-separated) override the rule; a trained "
          "Pow exponent stops the run at step 2 naming the Pow")


def shared(dtrexec, tmp):
    path = os.path.join(tmp, "gpt.onnx")
    gpt_block(path, np.random.default_rng(1), shared=True)
    rows, res = params(dtrexec, path)
    if "'ln_w' fills 2 parameter roles" not in res.stderr or "all 1" not in res.stderr:
        raise SystemExit(f"FAIL: no warning for the merged LayerNorm scale: {res.stderr}")
    if "'ln_b' fills 2" not in res.stderr or "'wte'" in res.stderr:
        raise SystemExit(f"FAIL: warnings: {res.stderr}")
    res = run(dtrexec, [path, "--train", "--steps", "1"])
    if "warning: 'ln_w' fills 2 parameter roles" not in res.stderr:
        raise SystemExit(f"FAIL: --train does not warn: {res.stderr}")
    # A tied embedding: Gather's table, transposed for the head.
    inits = {"wte": f32(np.random.default_rng(3).normal(0, 0.3, (11, 8)))}
    nodes = [H("Gather", ["wte", "ids"], ["e"]), H("Transpose", ["wte"], ["wt"], perm=[1, 0]),
             H("MatMul", ["e", "wt"], ["logits"])]
    tied = os.path.join(tmp, "tied.onnx")
    save(nodes, inits, [vi("ids", TensorProto.INT64, [2, 4])], [vi("logits", TensorProto.FLOAT, [2, 4, 11])], tied)
    rows, res = params(dtrexec, tied)
    if "warning" in res.stderr or rows["wte"][2] != "train":
        raise SystemExit(f"FAIL: tied embedding: {rows} {res.stderr}")
    # A cls token expanded to the batch before export: one slice, 2 copies.
    cls = f32(np.random.default_rng(4).normal(0, 0.02, (1, 1, 8)))
    nodes = [H("Concat", ["cls_tokens", "x"], ["y"], axis=1)]
    path = os.path.join(tmp, "cls.onnx")
    save(nodes, {"cls_tokens": np.concatenate([cls, cls])}, [vi("x", TensorProto.FLOAT, [2, 3, 8])],
         [vi("y", TensorProto.FLOAT, [2, 4, 8])], path)
    rows, res = params(dtrexec, path)
    if "'cls_tokens' repeats one slice 2 times along axis 0" not in res.stderr or rows["cls_tokens"][2] != "train":
        raise SystemExit(f"FAIL: expanded cls token: {rows} {res.stderr}")
    print("PASS: merged norm scales and biases and an expanded cls token are warned about, a tied embedding is not")


# ---- losses ----------------------------------------------------------------------

def ce_last_axis(logits, labels):
    """Mean cross-entropy over the last axis, labels -100 ignored; and d/dlogits."""
    z = logits - logits.max(-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    keep = labels != -100
    safe = np.where(keep, labels, 0)
    picked = np.take_along_axis(p, safe[..., None], -1)[..., 0]
    loss = -(np.log(picked) * keep).sum() / keep.sum()
    d = p.copy()
    np.put_along_axis(d, safe[..., None], np.take_along_axis(d, safe[..., None], -1) - 1, -1)
    d *= keep[..., None] / keep.sum()
    return loss, d


def lm_loss(dtrexec, tmp):
    rng = np.random.default_rng(7)
    N, T, D, V = 2, 3, 4, 5
    W, b = f32(rng.normal(0, 0.5, (D, V))), f32(rng.normal(0, 0.1, V))
    x = f32(rng.normal(0, 1, (N, T, D)))
    labels = np.array([[1, -100, 4], [0, 2, -100]], np.int64)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "y.npy"), labels)
    x64, W64, b64 = x.astype(np.float64), W.astype(np.float64), b.astype(np.float64)
    loss, d = ce_last_axis(x64 @ W64 + b64, labels)
    dW, db = np.einsum("ntd,ntv->dv", x64, d), d.sum((0, 1))
    lr = 0.5
    for name, transpose in (("logits", False), ("scores", True)):
        nodes = [H("MatMul", ["x", "W"], ["xw"]), H("Add", ["xw", "b"], ["z" if transpose else name])]
        shape = [N, T, V]
        if transpose:   # [N, C, T]: classes on axis 1, as nn.CrossEntropyLoss takes them
            nodes.append(H("Transpose", ["z"], [name], perm=[0, 2, 1]))
            shape = [N, V, T]
        path = os.path.join(tmp, name + ".onnx")
        save(nodes, {"W": W, "b": b}, [vi("x", TensorProto.FLOAT, [N, T, D])], [vi(name, TensorProto.FLOAT, shape)],
             path)
        out, stats = os.path.join(tmp, "out.onnx"), os.path.join(tmp, "s.json")
        res = run(dtrexec, [path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--labels",
                            os.path.join(tmp, "y.npy"), "--train", "--lr", str(lr), "--save", out, "--stats", stats])
        axis = "axis 1" if transpose else "the last axis"
        if f"cross-entropy over {axis}" not in res.stderr or "ignore_index -100" not in res.stderr:
            raise SystemExit(f"FAIL: {name}: loss description: {res.stderr}")
        got_loss = json.load(open(stats))["loss"][0]
        if abs(got_loss - loss) > 1e-5 * abs(loss):
            raise SystemExit(f"FAIL: {name}: loss {got_loss!r}, numpy {loss!r}")
        got = weights(out)
        for k, want in (("W", W64 - lr * dW), ("b", b64 - lr * db)):
            err = np.abs(got[k] - want).max()
            if err > 1e-6 + 1e-5 * np.abs(want).max():
                raise SystemExit(f"FAIL: {name}: {k} after one step differs from numpy by {err:.3g}")
    print(f"PASS: LM cross-entropy (last axis, [N, T] labels, -100 ignored) and axis-1 cross-entropy: loss "
          f"{loss:.6f} and one SGD step match numpy")


def graph_loss(dtrexec, tmp):
    rng = np.random.default_rng(8)
    W = f32(rng.normal(0, 0.5, (3, 2)))
    x, t = f32(rng.normal(0, 1, (4, 3))), f32(rng.normal(0, 1, (4, 2)))
    nodes = [H("MatMul", ["x", "W"], ["y"]), H("Sub", ["y", "t"], ["d"]), H("Mul", ["d", "d"], ["d2"]),
             H("ReduceMean", ["d2"], ["loss"], keepdims=0)]
    path = os.path.join(tmp, "lossy.onnx")
    save(nodes, {"W": W}, [vi("x", TensorProto.FLOAT, [4, 3]), vi("t", TensorProto.FLOAT, [4, 2])],
         [vi("y", TensorProto.FLOAT, [4, 2]), vi("loss", TensorProto.FLOAT, [])], path)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "t.npy"), t)
    x64, W64, t64 = x.astype(np.float64), W.astype(np.float64), t.astype(np.float64)
    d = x64 @ W64 - t64
    loss, dW = (d * d).mean(), x64.T @ (2 * d / d.size)
    lr = 0.1
    for extra, word in (([], "auto: a float output with one element"), (["--loss", "graph"], "--loss graph")):
        out, stats = os.path.join(tmp, "out.onnx"), os.path.join(tmp, "s.json")
        res = run(dtrexec, [path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--input",
                            "t=" + os.path.join(tmp, "t.npy"), "--train", "--lr", str(lr), "--save", out,
                            "--stats", stats] + extra)
        if "the graph's own loss: output 'loss'" not in res.stderr or word not in res.stderr:
            raise SystemExit(f"FAIL: {extra}: loss description: {res.stderr}")
        got_loss = json.load(open(stats))["loss"][0]
        err = np.abs(weights(out)["W"] - (W64 - lr * dW)).max()
        if abs(got_loss - loss) > 1e-5 * loss or err > 1e-6:
            raise SystemExit(f"FAIL: {extra}: loss {got_loss} (numpy {loss}), W off by {err:.3g}")
    nodes = [H("MatMul", ["x", "W"], ["y"])]
    plain = os.path.join(tmp, "plain.onnx")
    save(nodes, {"W": W}, [vi("x", TensorProto.FLOAT, [4, 3])], [vi("y", TensorProto.FLOAT, [4, 2])], plain)
    res = run(dtrexec, [plain, "--train", "--loss", "graph"], expect=1)
    if "needs a graph output that is a float scalar" not in res.stderr:
        raise SystemExit(f"FAIL: --loss graph without a scalar output: {res.stderr}")
    print(f"PASS: a graph's own scalar loss trains (auto and --loss graph): loss {loss:.6f} and one step match numpy")


# ---- shapes ----------------------------------------------------------------------

def shapes(dtrexec, tmp):
    rng = np.random.default_rng(9)
    W = f32(rng.normal(0, 0.5, (3, 2)))
    cast_back = helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])
    nodes = [H("MatMul", ["x", "W"], ["h"]), H("Shape", ["h"], ["hs"]),
             H("ConstantOfShape", ["hs"], ["z"], value=cast_back), H("Greater", ["h", "z"], ["m"]),
             H("Where", ["m", "h", "z"], ["r"]), H("Cast", ["h"], ["hi"], to=TensorProto.INT64),
             H("Cast", ["hi"], ["hf"], to=TensorProto.FLOAT), H("Add", ["r", "hf"], ["y"])]
    path = os.path.join(tmp, "shapes.onnx")
    save(nodes, {"W": W}, [vi("x", TensorProto.FLOAT, ["N", 3])], [vi("y", TensorProto.FLOAT, ["N", 2])], path)
    x, t = f32(rng.normal(0, 2, (5, 3))), f32(rng.normal(0, 1, (5, 2)))
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "t.npy"), t)
    out = os.path.join(tmp, "out.onnx")
    lr = 0.1
    run(dtrexec, [path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--labels", os.path.join(tmp, "t.npy"),
                  "--train", "--lr", str(lr), "--save", out, "--quiet"])
    x64, W64 = x.astype(np.float64), W.astype(np.float64)
    h = x64 @ W64
    y = np.maximum(h, 0) + np.trunc(h.astype(np.float32)).astype(np.float64)
    dh = 2 * (y - t) / y.size * (h > 0)
    want = W64 - lr * x64.T @ dh
    err = np.abs(weights(out)["W"] - want).max()
    if err > 1e-5:
        raise SystemExit(f"FAIL: one step through Shape/ConstantOfShape/Greater/Cast differs from numpy by {err:.3g}")
    run(dtrexec, [path, "--train", "--steps", "3", "--dim", "N=2:6", "--quiet"])

    # An LSTM whose initial states are zeros of a shape read from its input.
    I, Hd = 3, 4
    lstm = {"Wl": f32(rng.normal(0, 0.3, (1, 4 * Hd, I))), "Rl": f32(rng.normal(0, 0.3, (1, 4 * Hd, Hd))),
            "Bl": f32(np.zeros((1, 8 * Hd))), "one_i": np.array([1], np.int64), "hid": np.array([Hd], np.int64),
            "idx1": np.array(1, np.int64)}
    nodes = [H("Shape", ["x"], ["xs"]), H("Gather", ["xs", "idx1"], ["b0"]),
             H("Unsqueeze", ["b0", "ax0"], ["b1"]), H("Concat", ["one_i", "b1", "hid"], ["hshape"], axis=0),
             H("ConstantOfShape", ["hshape"], ["h0"], value=cast_back),
             H("LSTM", ["x", "Wl", "Rl", "Bl", "", "h0", "h0"], ["Y", "Y_h"], hidden_size=Hd)]
    lstm["ax0"] = np.array([0], np.int64)
    path = os.path.join(tmp, "lstm.onnx")
    save(nodes, lstm, [vi("x", TensorProto.FLOAT, ["seq", "batch", I])],
         [vi("Y_h", TensorProto.FLOAT, [1, "batch", Hd])], path)
    out, stats = os.path.join(tmp, "lstm_out.onnx"), os.path.join(tmp, "s.json")
    run(dtrexec, [path, "--train", "--steps", "4", "--dim", "seq=2:5", "--dim", "batch=3", "--save", out,
                  "--stats", stats, "--quiet"])
    loss = json.load(open(stats))["loss"]
    if not all(np.isfinite(loss)) or weights(out)["Wl"].tobytes() == lstm["Wl"].tobytes():
        raise SystemExit(f"FAIL: the LSTM did not train: losses {loss}")
    print("PASS: no gradient through Shape, ConstantOfShape, Greater, Cast to int64 (one step matches numpy); "
          "an LSTM with ConstantOfShape(Shape(x)) states trains with --dim")


# ---- non-finite losses -----------------------------------------------------------

def nonfinite(dtrexec, tmp):
    nodes = [H("Sqrt", ["W"], ["y"], name="root")]
    path = os.path.join(tmp, "sqrt.onnx")
    save(nodes, {"W": f32([0.01, 0.02, 0.03, 0.04])}, [], [vi("y", TensorProto.FLOAT, [4])], path)
    np.save(os.path.join(tmp, "t.npy"), f32(np.zeros(4)))
    out, stats = os.path.join(tmp, "out.onnx"), os.path.join(tmp, "s.json")
    # d/dW mean(sqrt(W)^2) = 1/4: lr 1 takes every W below 0, and step 2's Sqrt to NaN.
    res = run(dtrexec, [path, "--train", "--steps", "5", "--lr", "1", "--loss", "mse", "--labels",
                        os.path.join(tmp, "t.npy"), "--save", out, "--stats", stats], expect=4)
    for word in ("step 2: the loss is nan", "node 'root' (Sqrt)", "forward pass", "from finite inputs"):
        if word not in res.stderr:
            raise SystemExit(f"FAIL: the message lacks '{word}': {res.stderr}")
    if os.path.exists(out):
        raise SystemExit("FAIL: a diverged run saved its model")
    s = json.load(open(stats))   # valid JSON, NaN as null
    if s["nonfinite_step"] != 2 or len(s["loss"]) != 2 or s["loss"][1] is not None or not np.isfinite(s["loss"][0]):
        raise SystemExit(f"FAIL: stats: loss {s['loss']}, nonfinite_step {s['nonfinite_step']}")

    # The same under a memory budget: the check reads values through DTR.
    res = run(dtrexec, [path, "--train", "--steps", "5", "--lr", "1", "--loss", "mse", "--labels",
                        os.path.join(tmp, "t.npy"), "--budget", "8192"], expect=4)
    if "step 2: the loss is nan" not in res.stderr or "node 'root' (Sqrt)" not in res.stderr:
        raise SystemExit(f"FAIL: under a budget: {res.stderr}")

    # A weight that holds NaN from the start is named as such.
    nodes = [H("MatMul", ["x", "Wn"], ["p"], name="mm"), H("Add", ["p", "b"], ["y"])]
    path = os.path.join(tmp, "nanw.onnx")
    save(nodes, {"Wn": f32([[1.0, np.nan], [0.5, 0.25]]), "b": f32([0.0, 0.0])}, [vi("x", TensorProto.FLOAT, [3, 2])],
         [vi("y", TensorProto.FLOAT, [3, 2])], path)
    res = run(dtrexec, [path, "--train", "--steps", "2", "--loss", "mse"], expect=4)
    for word in ("step 1:", "node 'mm' (MatMul)", "input 'Wn'", "already holds nan"):
        if word not in res.stderr:
            raise SystemExit(f"FAIL: the message lacks '{word}': {res.stderr}")
    print("PASS: a NaN loss stops training with exit 4, the step and the first non-finite call; --stats stays JSON")


def fp16(dtrexec, tmp):
    nodes = [H("MatMul", ["x", "W"], ["y"])]
    path = os.path.join(tmp, "half.onnx")
    save(nodes, {"W": np.ones((3, 2), np.float16)}, [vi("x", TensorProto.FLOAT16, [4, 3])],
         [vi("y", TensorProto.FLOAT16, [4, 2])], path)
    rows, _ = params(dtrexec, path)
    expect_decisions(rows, {"W": ("train", "MatMul weight")})
    out = os.path.join(tmp, "half_trained.onnx")
    res = run(dtrexec, [path, "--train", "--steps", "2", "--save", out])
    if "nothing to train" in res.stderr or "training 1 tensors" not in res.stderr:
        raise SystemExit(f"FAIL: fp16 --train: {res.stderr}")
    w = {t.name: t for t in onnx.load(out).graph.initializer}["W"]
    if w.data_type != TensorProto.FLOAT16 or np.array_equal(numpy_helper.to_array(w), np.ones((3, 2), np.float16)):
        raise SystemExit("FAIL: the float16 parameter was not trained or not saved as float16")
    print("PASS: float16 parameters are found, trained (float32 master weights) and saved as float16")


EXPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "exports")
REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "real")


def eval_export(dtrexec, tmp):
    folded = {"ts17-eval-folded.onnx": "'onnx::Conv_", "dynamo18-eval-folded.onnx": "'0.weight'"}
    for f, first in folded.items():
        path = os.path.join(EXPORTS, f)
        for args in (["params", path], [path, "--train", "--steps", "1", "--quiet"]):
            err = run(dtrexec, args).stderr
            lines = [l for l in err.splitlines() if "BatchNormalization folded" in l]
            if len(lines) != 1 or first not in lines[0] or "and 1 other convolution weight look" not in lines[0]:
                raise SystemExit(f"FAIL: {' '.join(args)}: expected one folded-BatchNormalization warning naming "
                                 f"{first}... and 1 other weight, got:\n{err}")
    for arch in ("tv_resnet", "tv_mobilenet_v2"):
        for f in ("ts17-train.onnx", "dynamo18-train.onnx", "ts17-eval.onnx"):
            path = os.path.join(REAL, arch, f)
            if os.path.exists(path) and "folded" in run(dtrexec, ["params", path]).stderr:
                raise SystemExit(f"FAIL: {arch}/{f} keeps its BatchNormalization, yet is reported as folded")
    rng = np.random.default_rng(0)
    path = os.path.join(tmp, "conv.onnx")
    save([H("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]), H("ReduceMean", ["y"], ["out"], keepdims=0)],
         {"w": f32(rng.standard_normal((4, 3, 3, 3))), "b": f32(rng.standard_normal(4))},
         [vi("x", TensorProto.FLOAT, [2, 3, 5, 5])], [vi("out", TensorProto.FLOAT, [])], path)
    if "folded" in run(dtrexec, ["params", path]).stderr:
        raise SystemExit("FAIL: a Conv with a bias of its own is reported as folded")
    print("PASS: folded eval-mode exports are warned about (both exporters), unfolded ones are not")


CASES = {"eval-export": eval_export, "rule": rule, "overrides": overrides, "shared": shared, "lm-loss": lm_loss, "graph-loss": graph_loss,
         "shapes": shapes, "nonfinite": nonfinite, "fp16": fp16}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as tmp:
        CASES[sys.argv[2]](sys.argv[1], tmp)
