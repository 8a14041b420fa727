#!/usr/bin/env python3
"""Bad input at the command line: every case must exit with the code of
DESIGN.md (1 bad input, 2 budget) and a message naming the problem — never
a crash, a hang or a silent wrong answer. Usage: cli_check.py DTREXEC"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("DTRX_DATA_DIR", os.path.join(HERE, "..", "..", "shared", "data"))


def small_model(path, op="Relu"):
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "W")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node(op, ["h"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def control_models(tmp):
    """Models with bad subgraphs: each must be refused with the problem named."""
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    vi = helper.make_tensor_value_info
    out = {}

    def save(name, nodes, inputs, outputs, inits=()):
        g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(m, path)
        out[name] = path

    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t", f, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", f, [2])])
    # The condition is a float tensor.
    save("if_float_cond", [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
         [vi("c", f, []), vi("x", f, [2])], [vi("y", f, [2])])
    # A branch reads a value no enclosing graph defines.
    lost = helper.make_graph([helper.make_node("Relu", ["nope"], ["t"])], "lost", [], [vi("t", f, [2])])
    save("if_missing_outer", [helper.make_node("If", ["c"], ["y"], then_branch=lost, else_branch=else_g)],
         [vi("c", b, []), vi("x", f, [2])], [vi("y", f, [2])])
    # The body declares its loop-carried value int64, the loop passes float.
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Identity", ["v_in"], ["v_out"])], "body",
                             [vi("iter", i64, []), vi("cond_in", b, []), vi("v_in", i64, [2])],
                             [vi("cond_out", b, []), vi("v_out", i64, [2])])
    m = numpy_helper.from_array(np.array(3, np.int64), "M")
    save("loop_carried_type", [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)],
         [vi("x", f, [2])], [vi("y", f, [2])], [m])
    # The body's condition output is not a bool.
    body_f = helper.make_graph([helper.make_node("ReduceSum", ["v_in"], ["cond_out"], keepdims=0),
                                helper.make_node("Identity", ["v_in"], ["v_out"])], "body_f",
                               [vi("iter", i64, []), vi("cond_in", b, []), vi("v_in", f, [2])],
                               [vi("cond_out", f, []), vi("v_out", f, [2])])
    save("loop_float_cond", [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body_f)],
         [vi("x", f, [2])], [vi("y", f, [2])], [m])
    return out


def main():
    dtrexec = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.onnx")
        small_model(good)
        blob = open(good, "rb").read()
        trunc = os.path.join(tmp, "trunc.onnx")
        open(trunc, "wb").write(blob[: len(blob) // 2])
        garbage = os.path.join(tmp, "garbage.onnx")
        open(garbage, "wb").write(b"\x08\x96\x01 this is not a model" * 10)
        unsupported = os.path.join(tmp, "unsupported.onnx")
        small_model(unsupported, op="TfIdfVectorizer")
        np.save(os.path.join(tmp, "x_bad.npy"), np.zeros((3, 4), np.float32))
        np.save(os.path.join(tmp, "x_int.npy"), np.zeros((2, 4), np.int64))
        np.save(os.path.join(tmp, "x.npy"), np.ones((2, 4), np.float32))
        bad_sched = os.path.join(tmp, "bad_schedule.json")
        open(bad_sched, "w").write('{"format": "dtrexec-schedule", "version": 1, "steps": [{"run": ')
        graph = os.path.join(DATA, "checkmate-graphs", "vgg16-256-train.json")
        cases = [
            ([trunc], 1, ["trunc.onnx"]),
            ([garbage], 1, ["garbage.onnx"]),
            ([os.path.join(tmp, "missing.onnx")], 1, ["missing.onnx"]),
            ([unsupported], 1, ["TfIdfVectorizer"]),
            ([good, "--input", "x=" + os.path.join(tmp, "x_bad.npy")], 1, ["dimension 0", "x"]),
            ([good, "--input", "x=" + os.path.join(tmp, "x_int.npy")], 1, ["int64", "float"]),
            ([good, "--input", "nope=" + os.path.join(tmp, "x.npy")], 1, ["nope"]),
            ([good, "--input", "x=" + os.path.join(tmp, "missing.npy")], 1, ["missing.npy"]),
            ([good, "--threads", "zero"], 1, ["--threads"]),
            ([good, "--frobnicate"], 1, ["--frobnicate"]),
            ([good, "--train", "--budget", "lots"], 1, ["--budget"]),
            ([good, "--train", "--budget", "1000"], 2, ["budget"]),
            ([good, "--train", "--budget", "0.5x", "--heuristic", "magic"], 1, ["magic"]),
            ([good, "--device", "tpu"], 1, ["tpu"]),
            (["sim", garbage], 1, []),
            (["check", os.path.join(tmp, "nowhere")], 1, []),
        ]
        ctl = control_models(tmp)
        cases += [
            ([ctl["if_float_cond"]], 1, ["If", "condition", "bool"]),
            ([ctl["if_missing_outer"]], 1, ["nope"]),
            ([ctl["loop_carried_type"]], 1, ["v_in", "int64"]),
            ([ctl["loop_float_cond"]], 1, ["condition", "bool"]),
        ]
        if os.path.exists(graph):
            cases.append((["sim", graph, "--plan", bad_sched], 1, ["bad_schedule.json"]))
        for args, code, words in cases:
            try:
                res = subprocess.run([dtrexec] + args, capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                print(f"FAIL {' '.join(args)}: hung")
                failures += 1
                continue
            out = res.stdout + res.stderr
            missing = [w for w in words if w not in out]
            if res.returncode != code or missing or res.returncode < 0:
                print(f"FAIL {' '.join(args)}: exit {res.returncode} (want {code}), missing {missing}: {out.strip()[:300]}")
                failures += 1
            else:
                print(f"PASS exit {code}: {' '.join(os.path.basename(a) for a in args)}: {out.strip().splitlines()[-1][:140] if out.strip() else ''}")
    print(f"{len(cases) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
