#!/usr/bin/env python3
"""`dtrexec MODEL --train --grad-dir DIR` against a numpy reference.

Usage: grad_dir_check.py DTREXEC

A two-layer MLP (Gemm, Relu, MatMul + Add) trained with plain SGD and MSE
for two steps: DIR/index.json must list exactly the trained initializers,
each file must be a TensorProto named after its initializer, and each
gradient must be the numpy gradient of the LAST step (at the weights after
one update). One initializer has a name that is no safe file name ("w/2:x")
and one starts with a dot, to check the sanitized names stay apart. The
frozen one (--freeze) and the int64 one must not appear. Without --train the
option is refused.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    dtrexec = sys.argv[1]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    t = rng.standard_normal((4, 3)).astype(np.float32)
    w = {"w1": rng.standard_normal((5, 6)).astype(np.float32) * 0.5,
         ".b1": rng.standard_normal(6).astype(np.float32) * 0.1,
         "w/2:x": rng.standard_normal((6, 3)).astype(np.float32) * 0.5,
         "w/2;x": rng.standard_normal(3).astype(np.float32) * 0.1,   # sanitizes like "w/2:x"
         "frozen": rng.standard_normal(3).astype(np.float32)}
    shape = np.array([4, 3], np.int64)
    nodes = [helper.make_node("Gemm", ["x", "w1", ".b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w/2:x"], ["m"]),
             helper.make_node("Add", ["m", "w/2;x"], ["a"]),
             helper.make_node("Add", ["a", "frozen"], ["a2"]),
             helper.make_node("Reshape", ["a2", "shape"], ["y"])]
    inits = [numpy_helper.from_array(v, k) for k, v in w.items()] + [numpy_helper.from_array(shape, "shape")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    lr = 0.1

    def grads(p):
        h = x @ p["w1"] + p[".b1"]
        r = np.maximum(h, 0)
        y = r @ p["w/2:x"] + p["w/2;x"] + p["frozen"]
        dy = 2 * (y - t) / y.size
        dr = dy @ p["w/2:x"].T
        dh = dr * (h > 0)
        return {"w1": x.T @ dh, ".b1": dh.sum(0), "w/2:x": r.T @ dy, "w/2;x": dy.sum(0)}

    g0 = grads(w)
    w1 = dict(w)
    for k, v in g0.items():
        w1[k] = w[k] - lr * v
    want = grads(w1)

    failures = []
    with tempfile.TemporaryDirectory() as d:
        mp, xp, tp, gd = (os.path.join(d, n) for n in ("m.onnx", "x.npy", "t.npy", "grads"))
        onnx.save(m, mp)
        np.save(xp, x)
        np.save(tp, t)
        r = subprocess.run([dtrexec, mp, "--input", f"x={xp}", "--labels", tp, "--train", "--steps", "2",
                            "--loss", "mse", "--lr", str(lr), "--freeze", "frozen", "--grad-dir", gd, "--quiet"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode:
            raise SystemExit(f"FAIL: dtrexec exited {r.returncode}\n{r.stderr}")
        with open(os.path.join(gd, "index.json")) as f:
            index = json.load(f)
        if index.get("step") != 2:
            failures.append(f"index.json step {index.get('step')}, expected 2")
        files = {e["name"]: e["file"] for e in index["gradients"]}
        if set(files) != set(want):
            failures.append(f"index lists {sorted(files)}, expected {sorted(want)}")
        if len(set(files.values())) != len(files):
            failures.append(f"two gradients share a file: {files}")
        for name, file in files.items():
            if "/" in file or file.startswith(".") or not file.endswith(".pb"):
                failures.append(f"'{name}': unsafe file name '{file}'")
                continue
            tp_ = onnx.TensorProto()
            with open(os.path.join(gd, file), "rb") as f:
                tp_.ParseFromString(f.read())
            got = numpy_helper.to_array(tp_)
            if tp_.name != name:
                failures.append(f"'{file}' holds tensor '{tp_.name}', expected '{name}'")
            if name in want:
                ref = want[name]
                if got.shape != ref.shape:
                    failures.append(f"'{name}': shape {got.shape}, expected {ref.shape}")
                elif not np.allclose(got, ref, rtol=1e-5, atol=1e-6):
                    i = np.unravel_index(np.abs(got - ref).argmax(), ref.shape)
                    failures.append(f"'{name}': expected {ref[i]:.7g}, got {got[i]:.7g} at index {i}")
                elif np.allclose(got, g0[name], rtol=1e-5, atol=1e-6):
                    failures.append(f"'{name}': the gradient of the first step, not the last")
        r = subprocess.run([dtrexec, mp, "--grad-dir", gd], capture_output=True, text=True, timeout=60)
        if r.returncode != 1 or "--grad-dir is an option of training runs and needs --train" not in r.stderr:
            failures.append(f"--grad-dir without --train: exit {r.returncode}, stderr {r.stderr.strip()!r}")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print(f"ok: {len(files)} gradients of step 2 written and listed; names sanitized apart: "
          f"{sorted(files.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
