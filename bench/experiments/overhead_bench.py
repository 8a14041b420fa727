#!/usr/bin/env python3
"""Per-call overhead: microseconds per operator call on models of tiny
tensors, dtrexec against onnxruntime, in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE \\
        python3 bench/experiments/overhead_bench.py [--dtrexec build/dtrexec]
            [--calls 2000] [--repeat 50] [--rounds 3] [--threads 1]
            [--json OUT.json] [--markdown OUT.md]

Each model is a chain of --calls nodes on a [1, 16] float tensor, so that
the arithmetic is a few nanoseconds and what a run costs is the
interpreter's work per call:

  - unary: Relu, Neg, Abs, Sigmoid in turn (one input each);
  - binary: Add, Mul, Sub with a [16] constant (an initializer each);
  - mixed: Add with a constant, Relu, Reshape to [16, 1] and back, Transpose,
    Mul with a constant — views and shape ops among the arithmetic;
  - train: the unary chain after a MatMul with a [16, 16] weight, trained
    one step per run (dtrexec --train against onnxruntime's inference only
    as a scale; the column is dtrexec's forward + backward + update per
    forward call).

Both sides run the same seeded input. dtrexec: one process, --repeat
warmup+repeat, per-run times from --stats' step_seconds (model loading is
not timed); onnxruntime: one session, the same repeats, each sess.run
timed from Python (which adds Python's call overhead: measured here on a
one-node model and reported, not subtracted). onnxruntime runs with its
default graph optimizations ("all") and with none, since its optimizer may
fuse or drop some of the chain (it is told so by the node counts it would
report; here the per-call figure divides by the model's own node count
either way). The two sides alternate --rounds times; the figure is the
median over the pooled runs.

Outputs must agree within 1e-5 (inference). OpenBLAS's environment
overrides are the caller's business (unset them in the benchmark command
only, as above)."""

import argparse
import json
import os
import statistics
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import runners  # noqa: E402

W = 16


def chain_model(kind, calls, path):
    nodes, inits = [], []
    rng = np.random.default_rng(7)
    cur = "x"
    for i in range(calls):
        out = f"t{i}"
        if kind == "unary":
            op = ["Relu", "Neg", "Abs", "Sigmoid"][i % 4]
            nodes.append(helper.make_node(op, [cur], [out], name=f"n{i}"))
        elif kind == "binary":
            op = ["Add", "Mul", "Sub"][i % 3]
            c = f"c{i}"
            val = rng.uniform(0.9, 1.1, W).astype(np.float32) if op == "Mul" else \
                rng.uniform(-0.01, 0.01, W).astype(np.float32)
            inits.append(numpy_helper.from_array(val, c))
            nodes.append(helper.make_node(op, [cur, c], [out], name=f"n{i}"))
        elif kind == "mixed":
            step = i % 5
            if step == 0:
                c = f"c{i}"
                inits.append(numpy_helper.from_array(rng.uniform(-0.01, 0.01, (1, W)).astype(np.float32), c))
                nodes.append(helper.make_node("Add", [cur, c], [out], name=f"n{i}"))
            elif step == 1:
                nodes.append(helper.make_node("Relu", [cur], [out], name=f"n{i}"))
            elif step == 2:
                s = f"s{i}"
                inits.append(numpy_helper.from_array(np.array([W, 1], np.int64), s))
                nodes.append(helper.make_node("Reshape", [cur, s], [out], name=f"n{i}"))
            elif step == 3:
                nodes.append(helper.make_node("Transpose", [cur], [out], name=f"n{i}", perm=[1, 0]))
            else:
                c = f"c{i}"
                inits.append(numpy_helper.from_array(rng.uniform(0.9, 1.1, (1, W)).astype(np.float32), c))
                nodes.append(helper.make_node("Mul", [cur, c], [out], name=f"n{i}"))
        else:
            raise ValueError(kind)
        cur = out
    nodes.append(helper.make_node("Identity", [cur], ["y"], name="out"))
    shape = [1, W]
    g = helper.make_graph(nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return len(nodes)


def train_model(calls, path):
    """x[1,16] @ W[16,16], then the unary chain with its last link Tanh-free."""
    rng = np.random.default_rng(8)
    w = numpy_helper.from_array((rng.standard_normal((W, W)) * 0.1).astype(np.float32), "W")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm")]
    cur = "h"
    for i in range(calls - 1):
        op = ["Relu", "Neg", "Abs", "Sigmoid"][i % 4]
        nodes.append(helper.make_node(op, [cur], [f"t{i}"], name=f"n{i}"))
        cur = f"t{i}"
    nodes.append(helper.make_node("Identity", [cur], ["y"], name="out"))
    g = helper.make_graph(nodes, "train", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, W])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return len(nodes)


def ort_nodes_after_optimization(path, level):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                                   "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}[level]
    out = path + f".ort-{level}.onnx"
    so.optimized_model_filepath = out
    ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    n = len(onnx.load(out).graph.node)
    os.remove(out)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtrexec", default=os.path.join(HERE, "..", "..", "build", "dtrexec"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if os.environ.get(var):
            print(f"warning: {var} is set; unset it in the benchmark command", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="dtrx-overhead-")
    x = np.random.default_rng(1).uniform(-1, 1, (1, W)).astype(np.float32)
    rows, ok = [], True

    # Python's own cost of one sess.run on a one-node model, for scale.
    one = os.path.join(tmp, "one.onnx")
    chain_model("unary", 1, one)
    _, py_times = runners.run_onnxruntime(one, {"x": x}, threads=args.threads, repeat=200, warmup=20)
    py_call_us = 1e6 * statistics.median(py_times)

    for kind in ["unary", "binary", "mixed", "train"]:
        path = os.path.join(tmp, f"{kind}.onnx")
        n = train_model(args.calls, path) if kind == "train" else chain_model(kind, args.calls, path)
        times = {"dtrexec": [], "ort-all": [], "ort-none": []}
        d_out = o_out = None
        for _ in range(args.rounds):
            if kind == "train":
                stats = runners.run_dtrexec_train(args.dtrexec, path, {"x": x}, args.warmup + args.repeat,
                                                  threads=args.threads, work_dir=os.path.join(tmp, "w"),
                                                  extra_args=["--optimizer", "sgd", "--lr", "0.001"])
                times["dtrexec"] += stats["step_seconds"][args.warmup:]
            else:
                d_out, t, _ = runners.run_dtrexec(args.dtrexec, path, {"x": x}, threads=args.threads,
                                                  repeat=args.repeat, warmup=args.warmup,
                                                  work_dir=os.path.join(tmp, "w"))
                times["dtrexec"] += t
            for level in ["all", "none"]:
                o_out, t = runners.run_onnxruntime(path, {"x": x}, threads=args.threads, repeat=args.repeat,
                                                   warmup=args.warmup, opt_level=level)
                times[f"ort-{level}"] += t
        agree = None
        if kind != "train":
            agree = bool(np.allclose(d_out[0], o_out[0], rtol=1e-5, atol=1e-5))
            ok = ok and agree
        row = {"model": kind, "nodes": n, "ort_nodes_optimized": ort_nodes_after_optimization(path, "all")}
        for side, t in times.items():
            row[f"{side}_us_per_call"] = 1e6 * statistics.median(t) / n
        row["ratio_vs_ort_all"] = row["dtrexec_us_per_call"] / row["ort-all_us_per_call"]
        row["ratio_vs_ort_none"] = row["dtrexec_us_per_call"] / row["ort-none_us_per_call"]
        row["outputs_agree"] = agree
        rows.append(row)
        print(f"{kind:7s} {n:5d} nodes (ort-all keeps {row['ort_nodes_optimized']}): dtrexec "
              f"{row['dtrexec_us_per_call']:.3f} us/call, onnxruntime all {row['ort-all_us_per_call']:.3f}, "
              f"none {row['ort-none_us_per_call']:.3f}; ratio {row['ratio_vs_ort_all']:.2f} / "
              f"{row['ratio_vs_ort_none']:.2f}" + ("" if agree is None else f"; outputs agree: {agree}"),
              flush=True)
    print(f"onnxruntime's Python sess.run of a one-node model: {py_call_us:.1f} us (included in its figures)")
    result = {"threads": args.threads, "calls": args.calls, "repeat": args.repeat, "rounds": args.rounds,
              "python_sess_run_us": py_call_us, "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"# Per-call overhead, {args.threads} thread(s), chains of {args.calls} calls on [1,{W}]\n\n")
            f.write("| model | nodes | onnxruntime keeps | dtrexec µs/call | onnxruntime (all) | onnxruntime (none) "
                    "| ratio (all) | ratio (none) |\n|---|---|---|---|---|---|---|---|\n")
            for r in rows:
                f.write(f"| {r['model']} | {r['nodes']} | {r['ort_nodes_optimized']} | {r['dtrexec_us_per_call']:.3f} "
                        f"| {r['ort-all_us_per_call']:.3f} | {r['ort-none_us_per_call']:.3f} "
                        f"| {r['ratio_vs_ort_all']:.2f} | {r['ratio_vs_ort_none']:.2f} |\n")
            f.write(f"\nonnxruntime's figures include Python's sess.run ({py_call_us:.1f} µs a run on a one-node "
                    f"model). train: dtrexec's whole step (forward, backward, SGD update) per forward call, "
                    f"against onnxruntime's inference.\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
