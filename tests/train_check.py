#!/usr/bin/env python3
"""End-to-end training checks of `dtrexec --train` against independent numpy
references. Usage: train_check.py DTREXEC CASE   (CASE: see CASES below)

- sgd-mlp, adamw-mlp, sgd-cnn, adamw-cnn: one optimizer step of an MLP / a small
  CNN; the saved weights must match a numpy forward/backward/update to 1e-5
  relative (plus a tiny absolute floor for values near zero).
- converges: a small CNN on a synthetic separable task lowers its loss at least
  10x within a few hundred steps.
- deterministic: two runs with the same seed give bit-identical losses and weights.
- saved-model: the --save output loads and runs in onnxruntime and in dtrexec.
- errors: wrong label shape, nothing trainable, bad optimizer -> exit 1 with a message.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RTOL, ATOL = 1e-5, 1e-7


def make_model(nodes, inits, inputs, outputs, path):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def run(dtrexec, args, expect=0):
    res = subprocess.run([dtrexec] + args, capture_output=True, text=True, timeout=600)
    if res.returncode != expect:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {res.returncode} (expected {expect})\n{res.stdout}{res.stderr}")
    return res


def saved_weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


# ---- numpy reference -------------------------------------------------------------

def softmax_ce(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    n = logits.shape[0]
    loss = -np.log(p[np.arange(n), labels]).mean()
    d = p.copy()
    d[np.arange(n), labels] -= 1
    return loss, d / n


def conv2d(x, w, b, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    cols = np.zeros((n, c, kh, kw, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i:i + oh, j:j + ow]
    y = np.einsum("nckluv,ockl->nouv", cols, w) + b[None, :, None, None]
    return y, cols


def conv2d_backward(dy, cols, w, x_shape, pad):
    dw = np.einsum("nouv,nckluv->ockl", dy, cols)
    db = dy.sum(axis=(0, 2, 3))
    dcols = np.einsum("nouv,ockl->nckluv", dy, w)
    n, c, h, wd = x_shape
    _, _, kh, kw = w.shape
    dxp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
    oh, ow = dy.shape[2], dy.shape[3]
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + oh, j:j + ow] += dcols[:, :, i, j]
    return dw, db


def mlp_grads(p, x, labels):
    h = x @ p["W1"] + p["b1"]
    r = np.maximum(h, 0)
    logits = r @ p["W2"] + p["b2"]
    _, d = softmax_ce(logits, labels)
    g = {"W2": r.T @ d, "b2": d.sum(0)}
    dr = d @ p["W2"].T
    dh = dr * (h > 0)
    g["W1"] = x.T @ dh
    g["b1"] = dh.sum(0)
    return g


def cnn_grads(p, x, labels):
    y, cols = conv2d(x, p["W"], p["B"], 1)
    r = np.maximum(y, 0)
    pooled = r.mean(axis=(2, 3))
    logits = pooled @ p["Wfc"].T + p["bfc"]
    _, d = softmax_ce(logits, labels)
    g = {"Wfc": d.T @ pooled, "bfc": d.sum(0)}
    dpooled = d @ p["Wfc"]
    dr = np.broadcast_to(dpooled[:, :, None, None] / (r.shape[2] * r.shape[3]), r.shape)
    dy = dr * (y > 0)
    g["W"], g["B"] = conv2d_backward(dy, cols, p["W"], x.shape, 1)
    return g


def sgd(p, g, lr):
    return {k: p[k] - lr * g[k] for k in p}


def adamw(p, g, lr, wd, b1=0.9, b2=0.999, eps=1e-8, step=1):
    out = {}
    for k in p:
        w = p[k] * (1 - lr * wd)
        m = (1 - b1) * g[k]
        v = (1 - b2) * g[k] ** 2
        mhat, vhat = m / (1 - b1 ** step), v / (1 - b2 ** step)
        out[k] = w - lr * mhat / (np.sqrt(vhat) + eps)
    return out


def optimizer_steps(p, x, labels, grads, steps, opt):
    """`steps` updates of p with the optimizer described by opt (PyTorch's
    formulas; HuggingFace's AdamW when opt['hf'])."""
    lr, wd, mu = opt["lr"], opt.get("wd", 0.0), opt.get("momentum", 0.9)
    b1, b2, eps = 0.9, 0.999, 1e-8
    state = {k: [np.zeros_like(v), np.zeros_like(v)] for k, v in p.items()}
    for t in range(1, steps + 1):
        g = grads(p, x, labels)
        for k in p:
            w, m, v = p[k], state[k][0], state[k][1]
            if opt["name"] == "momentum":
                d = g[k] + wd * w
                m[...] = mu * m + d
                p[k] = w - lr * (d + mu * m if opt.get("nesterov") else m)
            elif opt["name"] == "adam":
                d = g[k] + wd * w
                m[...] = b1 * m + (1 - b1) * d
                v[...] = b2 * v + (1 - b2) * d * d
                p[k] = w - lr / (1 - b1 ** t) * m / (np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps)
            elif opt["name"] == "adamw-hf":
                m[...] = b1 * m + (1 - b1) * g[k]
                v[...] = b2 * v + (1 - b2) * g[k] * g[k]
                w = w - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
                p[k] = w - lr * wd * w
    return p


def multi_step(dtrexec, tmp, opt, args):
    """Three steps of the MLP with momentum / Adam / HuggingFace AdamW against
    the same updates in numpy (float64), the gradients recomputed at each
    step's weights."""
    rng = np.random.default_rng(3)
    path, p, x, labels, grads = mlp(tmp, rng)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "y.npy"), labels)
    out = os.path.join(tmp, "out.onnx")
    run(dtrexec, [path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--labels", os.path.join(tmp, "y.npy"),
                  "--train", "--steps", "3", "--lr", str(opt["lr"]), "--save", out, "--quiet"] + args)
    want = optimizer_steps({k: v.astype(np.float64) for k, v in p.items()}, x.astype(np.float64), labels, grads, 3, opt)
    got = saved_weights(out)
    for k in p:
        diff = np.abs(got[k].astype(np.float64) - want[k])
        tol = 1e-6 + 1e-5 * np.abs(want[k])
        if (diff > tol).any():
            i = np.unravel_index(np.argmax(diff - tol), diff.shape)
            raise SystemExit(f"FAIL: {opt['name']} {k}{list(i)}: dtrexec {got[k][i]!r}, numpy {want[k][i]!r}")
    print(f"PASS: three {opt['name']}{' (nesterov)' if opt.get('nesterov') else ''} steps match numpy")


# ---- models ----------------------------------------------------------------------

def mlp(tmp, rng):
    p = {"W1": rng.normal(0, 0.5, (5, 7)), "b1": rng.normal(0, 0.1, 7),
         "W2": rng.normal(0, 0.5, (7, 3)), "b2": rng.normal(0, 0.1, 3)}
    p = {k: v.astype(np.float32) for k, v in p.items()}
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["logits"])]
    path = os.path.join(tmp, "mlp.onnx")
    make_model(nodes, p, [("x", [8, 5])], ["logits"], path)
    x = rng.normal(0, 1, (8, 5)).astype(np.float32)
    labels = rng.integers(0, 3, 8).astype(np.int64)
    return path, p, x, labels, mlp_grads


def cnn(tmp, rng):
    p = {"W": rng.normal(0, 0.3, (4, 3, 3, 3)), "B": rng.normal(0, 0.1, 4),
         "Wfc": rng.normal(0, 0.5, (5, 4)), "bfc": rng.normal(0, 0.1, 5)}
    p = {k: v.astype(np.float32) for k, v in p.items()}
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["y"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["gp"]),
             helper.make_node("Flatten", ["gp"], ["f"]),
             helper.make_node("Gemm", ["f", "Wfc", "bfc"], ["logits"], transB=1)]
    path = os.path.join(tmp, "cnn.onnx")
    make_model(nodes, p, [("x", [4, 3, 6, 6])], ["logits"], path)
    x = rng.normal(0, 1, (4, 3, 6, 6)).astype(np.float32)
    labels = rng.integers(0, 5, 4).astype(np.int64)
    return path, p, x, labels, cnn_grads


def one_step(dtrexec, tmp, build, optimizer):
    rng = np.random.default_rng(3)
    path, p, x, labels, grads = build(tmp, rng)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "y.npy"), labels)
    out = os.path.join(tmp, "out.onnx")
    lr, wd = 0.1, 0.01
    args = [path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--labels", os.path.join(tmp, "y.npy"),
            "--train", "--steps", "1", "--lr", str(lr), "--optimizer", optimizer, "--save", out, "--quiet"]
    if optimizer == "adamw":
        args += ["--weight-decay", str(wd)]
    run(dtrexec, args)
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    g = grads(p64, x.astype(np.float64), labels)
    want = sgd(p64, g, lr) if optimizer == "sgd" else adamw(p64, g, lr, wd)
    got = saved_weights(out)
    for k in p:
        ref = want[k]
        diff = np.abs(got[k].astype(np.float64) - ref)
        tol = ATOL + RTOL * np.abs(ref)
        if optimizer == "adamw":
            # Adam's first step is lr * g / |g|: where g itself is at the level
            # of float32 rounding its sign, and so the step, is ill-defined.
            tol = np.where(np.abs(g[k]) < 1e-5, np.inf, tol)
        bad = diff > tol
        if bad.any():
            i = np.unravel_index(np.argmax(diff - tol), diff.shape)
            raise SystemExit(f"FAIL: {k}{list(i)}: dtrexec {got[k][i]!r}, numpy {ref[i]!r} ({bad.sum()} of {diff.size} differ)")
    print(f"PASS: one {optimizer} step of {os.path.basename(path)} matches numpy for {sorted(p)}")


def converges(dtrexec, tmp):
    rng = np.random.default_rng(5)
    n = 16
    labels = np.arange(n) % 2
    x = rng.normal(0, 1, (n, 3, 8, 8)).astype(np.float32)
    x[labels == 1, 0] += 1.5                      # class 1: a brighter first channel
    p = {"W": rng.normal(0, 0.3, (8, 3, 3, 3)), "B": np.zeros(8), "Wfc": rng.normal(0, 0.3, (2, 8)), "bfc": np.zeros(2)}
    p = {k: v.astype(np.float32) for k, v in p.items()}
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["y"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["gp"]),
             helper.make_node("Flatten", ["gp"], ["f"]), helper.make_node("Gemm", ["f", "Wfc", "bfc"], ["logits"], transB=1)]
    path = os.path.join(tmp, "sep.onnx")
    make_model(nodes, p, [("x", [n, 3, 8, 8])], ["logits"], path)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "y.npy"), labels.astype(np.int64))
    stats = os.path.join(tmp, "stats.json")
    run(dtrexec, [path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--labels", os.path.join(tmp, "y.npy"),
                  "--train", "--steps", "300", "--lr", "0.05", "--optimizer", "adam", "--stats", stats, "--quiet"])
    loss = json.load(open(stats))["loss"]
    ratio = loss[0] / max(loss[-1], 1e-30)
    if len(loss) != 300 or ratio < 10:
        raise SystemExit(f"FAIL: loss {loss[0]:.4g} -> {loss[-1]:.4g} (x{ratio:.1f}) in {len(loss)} steps")
    print(f"PASS: loss {loss[0]:.4g} -> {loss[-1]:.4g} (x{ratio:.0f} lower) in 300 steps")


def deterministic(dtrexec, tmp):
    path, _, _, _, _ = cnn(tmp, np.random.default_rng(9))
    outs = []
    for k in range(2):
        out, stats = os.path.join(tmp, f"d{k}.onnx"), os.path.join(tmp, f"d{k}.json")
        run(dtrexec, [path, "--train", "--steps", "5", "--optimizer", "adam", "--seed", "11",
                      "--save", out, "--stats", stats, "--quiet"])
        outs.append((saved_weights(out), json.load(open(stats))["loss"]))
    (w0, l0), (w1, l1) = outs
    if l0 != l1 or any(w0[k].tobytes() != w1[k].tobytes() for k in w0):
        raise SystemExit(f"FAIL: repeated runs differ: losses {l0} vs {l1}")
    print(f"PASS: two seeded runs are bit-identical (losses {l0})")


def saved_model(dtrexec, tmp):
    import onnxruntime as ort
    path, _, x, _, _ = mlp(tmp, np.random.default_rng(4))
    out = os.path.join(tmp, "trained.onnx")
    run(dtrexec, [path, "--train", "--steps", "3", "--save", out, "--quiet"])
    np.save(os.path.join(tmp, "x.npy"), x)
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    run(dtrexec, [out, "--input", "x=" + os.path.join(tmp, "x.npy"), "--output-dir", tmp, "--quiet"])
    got = numpy_helper.to_array(onnx.load_tensor(os.path.join(tmp, "output_0.pb")))
    if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
        raise SystemExit(f"FAIL: trained model: dtrexec {got.ravel()[:4]} vs onnxruntime {want.ravel()[:4]}")
    print("PASS: the saved model runs in onnxruntime and dtrexec with the same outputs")


def errors(dtrexec, tmp):
    path, _, _, _, _ = mlp(tmp, np.random.default_rng(4))
    np.save(os.path.join(tmp, "bad.npy"), np.zeros((3, 2), dtype=np.int64))
    cases = [
        ([path, "--train", "--labels", os.path.join(tmp, "bad.npy")], "labels"),
        ([path, "--train", "--freeze", "*"], "nothing to train"),
        ([path, "--train", "--optimizer", "lion"], "unknown value"),
        ([path, "--train", "--steps", "0"], "--steps"),
    ]
    for args, word in cases:
        res = run(dtrexec, args, expect=1)
        if word not in res.stderr:
            raise SystemExit(f"FAIL: {args}: message lacks '{word}': {res.stderr}")
    print(f"PASS: {len(cases)} bad training requests exit 1 with a clear message")


CASES = {
    "sgd-mlp": lambda d, t: one_step(d, t, mlp, "sgd"),
    "adamw-mlp": lambda d, t: one_step(d, t, mlp, "adamw"),
    "sgd-cnn": lambda d, t: one_step(d, t, cnn, "sgd"),
    "adamw-cnn": lambda d, t: one_step(d, t, cnn, "adamw"),
    "momentum-nesterov": lambda d, t: multi_step(d, t, {"name": "momentum", "lr": 0.05, "nesterov": 1, "wd": 0.01},
                                                 ["--optimizer", "momentum", "--nesterov", "--momentum", "0.9",
                                                  "--weight-decay", "0.01"]),
    "adam-l2": lambda d, t: multi_step(d, t, {"name": "adam", "lr": 0.01, "wd": 0.01},
                                       ["--optimizer", "adam", "--weight-decay", "0.01"]),
    "adamw-hf": lambda d, t: multi_step(d, t, {"name": "adamw-hf", "lr": 0.01, "wd": 0.05},
                                        ["--optimizer", "adamw", "--weight-decay", "0.05",
                                         "--adam-bias-correction", "hf"]),
    "converges": converges,
    "deterministic": deterministic,
    "saved-model": saved_model,
    "errors": errors,
}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as tmp:
        CASES[sys.argv[2]](sys.argv[1], tmp)
