#!/usr/bin/env python3
"""Model calls that write their output over a dying input (runtime/run.c,
forward_in_place).

Usage: in_place_check.py DTREXEC CASE
- rule: a graph built to hit each side of the rule: a value that is also a
  graph output, a value read twice by one call, a value with two readers, a
  broadcast Add whose input 0 is the smaller operand, a graph input, and
  single-reader values that must go in place. Outputs equal onnxruntime's,
  and --stats' in_place_calls is exactly the calls the rule allows (4).
- budget: zoo models (ResNet-18, Transformer, tiny) trained unbudgeted and
  under budgets with --verify-remat: their inference runs write in place,
  every budgeted run's losses and weights equal the unbudgeted run's bit for
  bit with the peak inside the budget, and at least one run recomputed
  values while calls ran in place (so a recomputed input was written over
  again and checked).
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def run(dtrexec, args):
    res = subprocess.run([dtrexec] + args, capture_output=True, text=True, timeout=900)
    return res


def rule(dtrexec, tmp):
    F = TensorProto.FLOAT
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "c"),
             numpy_helper.from_array(rng.uniform(-1, 1, 8).astype(np.float32), "cv")]
    n = helper.make_node
    nodes = [
        n("Relu", ["x"], ["r"], name="relu_x"),        # x is a graph input: not in place
        n("Neg", ["r"], ["ng"], name="neg_r"),         # r is a graph output: not in place
        n("Sigmoid", ["ng"], ["s"], name="sig"),       # ng dies here: in place (1)
        n("Add", ["s", "s"], ["t"], name="add_ss"),    # s read twice by one call: not in place
        n("Mul", ["t", "c"], ["u"], name="mul_tc"),    # t dies, c broadcast: in place (2)
        n("Tanh", ["cv"], ["w"], name="tanh_cv"),      # cv is an initializer: not in place
        n("Add", ["w", "u"], ["v"], name="add_wu"),    # input 0 [8] is smaller than the output: not in place
        n("Exp", ["v"], ["e"], name="exp_v"),          # v dies: in place (3)
        n("Relu", ["e"], ["p"], name="relu_e"),        # e has two readers: not in place
        n("Neg", ["e"], ["q"], name="neg_e"),          # nor here
        n("Sub", ["p", "q"], ["y"], name="sub_pq"),    # p dies: in place (4)
    ]
    g = helper.make_graph(nodes, "rule", [helper.make_tensor_value_info("x", F, [4, 8])],
                          [helper.make_tensor_value_info("y", F, [4, 8]), helper.make_tensor_value_info("r", F, [4, 8])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(tmp, "rule.onnx")
    onnx.save(m, path)
    x = rng.uniform(-2, 2, (4, 8)).astype(np.float32)
    xp, out, stats = os.path.join(tmp, "x.npy"), os.path.join(tmp, "out"), os.path.join(tmp, "rule.json")
    np.save(xp, x)
    res = run(dtrexec, [path, "--input", f"x={xp}", "--output-dir", out, "--stats", stats, "--quiet"])
    if res.returncode:
        raise SystemExit(f"FAIL: rule model exited {res.returncode}: {res.stderr}")
    import onnxruntime as ort
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for i, w in enumerate(want):
        t = onnx.TensorProto()
        with open(os.path.join(out, f"output_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        got = numpy_helper.to_array(t)
        if not np.allclose(got, w, rtol=1e-6, atol=1e-6):
            raise SystemExit(f"FAIL: output {i} differs from onnxruntime by {np.abs(got - w).max()}")
    st = json.load(open(stats))
    if st["in_place_calls"] != 4:
        raise SystemExit(f"FAIL: {st['in_place_calls']} calls ran in place, the rule allows exactly 4 "
                         "(Sigmoid, Mul, Exp, Sub)")
    print("PASS rule: outputs equal onnxruntime's, exactly the 4 allowed calls ran in place")


def budget(dtrexec, tmp):
    from budget_check import lowest_ratio, make_model, train
    checked = 0
    for name in ["resnet18", "transformer"]:
        path = make_model(name, tmp)
        stats = os.path.join(tmp, name + "-infer.json")
        res = run(dtrexec, [path, "--stats", stats, "--quiet"])
        if res.returncode or not json.load(open(stats))["in_place_calls"]:
            raise SystemExit(f"FAIL: {name}: inference ran no call in place ({res.returncode}: {res.stderr})")
        res, base, base_w = train(dtrexec, path, tmp, name + "-base", [])
        if res.returncode:
            raise SystemExit(f"FAIL: {name} unbudgeted: {res.stderr}")
        peak = base["peak_bytes"]
        # every feasible ratio checked bit for bit, with the peak inside the budget
        lowest, remats = lowest_ratio(dtrexec, path, tmp, peak, [], base, base_w, name)
        if lowest is None:
            raise SystemExit(f"FAIL: {name}: no budget trained")
        _, st, _ = train(dtrexec, path, tmp, name + "-lowest", ["--budget", str(int(lowest * peak))])
        checked += remats > 0 and st["in_place_calls"] > 0
        print(f"PASS {name}: bit-identical down to {lowest}x, {st['remats']} recomputations and "
              f"{st['in_place_calls']} calls in place there")
    if not checked:
        raise SystemExit("FAIL: no budgeted run recomputed values with calls in place")


if __name__ == "__main__":
    cases = {"rule": rule, "budget": budget}
    if len(sys.argv) != 3 or sys.argv[2] not in cases:
        print(__doc__)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as tmp:
        cases[sys.argv[2]](sys.argv[1], tmp)
