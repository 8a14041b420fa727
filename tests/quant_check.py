#!/usr/bin/env python3
"""Quantized models (ops/quant_linear.c, ops/quant_matmul.c) against onnxruntime.

Usage: quant_check.py DTREXEC CASE
- infer-qdq: a QDQ model: x -> QuantizeLinear -> DequantizeLinear (uint8, per
  tensor) times an int8 weight dequantized per column (axis 1), plus a
  bias; and an int8 weight quantized blockwise from float. Outputs equal
  onnxruntime's within float rounding.
- infer-integer: MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv and
  DynamicQuantizeLinear on random data: the integer outputs equal the ONNX
  reference's (onnx.reference) exactly (QLinear*: within one unit where a
  fixed-point requantization rounds a tie the other way), and the float
  scale equals bit for bit. onnxruntime runs too; where it disagrees with
  the reference (1.32 does, on per-channel zero points) a note says so.
- train-qdq: --train on a QDQ model whose float weight feeds QuantizeLinear:
  no gradient flows through the quantization, so the weight is not a
  parameter (dtrexec params says why) and the bias trains; forcing the
  weight with --trainable runs with a warning that no gradient reaches it.
- cuda-refusal: --device cuda on QLinearMatMul fails with a message (no CUDA
  kernel, or no device), never a crash.
- errors: malformed nodes (zero point type, axis, blocked shape, float8
  output_dtype, per-axis at opset 10, MatMulInteger / ConvInteger /
  QLinearMatMul shapes) exit 1 naming the node and the problem.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def run(dtrexec, args, expect=0):
    r = subprocess.run([dtrexec] + args, capture_output=True, text=True, timeout=300)
    if r.returncode != expect:
        raise SystemExit(f"FAIL: dtrexec {' '.join(args)} exited {r.returncode} (expected {expect})\n"
                         f"{r.stdout}{r.stderr}")
    return r


def save(nodes, inits, inputs, outputs, path, opset=21):
    g = helper.make_graph(nodes, "quant",
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    onnx.save(m, path)


def infer(dtrexec, tmp, path, feeds):
    files = []
    for k, v in feeds.items():
        f = os.path.join(tmp, f"{k}.npy")
        np.save(f, v)
        files += ["--input", f"{k}={f}"]
    out = os.path.join(tmp, "out")
    run(dtrexec, [path, *files, "--output-dir", out])
    res, i = [], 0
    while os.path.exists(os.path.join(out, f"output_{i}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(out, f"output_{i}.pb"), "rb") as fh:
            t.ParseFromString(fh.read())
        res.append(numpy_helper.to_array(t))
        i += 1
    return res


def ort_run(path, feeds):
    import onnxruntime as ort
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


def qdq_model(path, rng):
    wq = rng.integers(-127, 128, (16, 8)).astype(np.int8)
    inits = [("xs", np.float32(0.05)), ("xz", np.uint8(128)),
             ("wq", wq), ("ws", (rng.random(8) * 0.02 + 0.005).astype(np.float32)),
             ("b", rng.standard_normal(8).astype(np.float32)),
             ("w2", rng.standard_normal((8, 6)).astype(np.float32)),
             ("w2s", (rng.random((2, 6)) * 0.02 + 0.01).astype(np.float32))]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"], axis=1),
        helper.make_node("MatMul", ["xd", "wd"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["y"]),
        # a float weight quantized blockwise along its rows (8 = 4 + 4), int8 from output_dtype
        helper.make_node("QuantizeLinear", ["w2", "w2s"], ["w2q"], axis=0, block_size=4,
                         output_dtype=TensorProto.INT8),
        helper.make_node("DequantizeLinear", ["w2q", "w2s"], ["w2d"], axis=0, block_size=4),
        helper.make_node("MatMul", ["y", "w2d"], ["z"]),
    ]
    save(nodes, inits, [("x", TensorProto.FLOAT, [5, 16])], [("y", TensorProto.FLOAT), ("z", TensorProto.FLOAT)],
         path)


def case_infer_qdq(dtrexec, tmp):
    rng = np.random.default_rng(11)
    path = os.path.join(tmp, "qdq.onnx")
    qdq_model(path, rng)
    x = (rng.standard_normal((5, 16)) * 3).astype(np.float32)
    x[0, :4] = [0.025, 0.075, -0.025, 100.0]      # ties and a saturating value
    got = infer(dtrexec, tmp, path, {"x": x})
    want = ort_run(path, {"x": x})
    for k, (g, w) in enumerate(zip(got, want)):
        err = np.abs(g - w).max()
        assert err <= 1e-5 * max(1.0, np.abs(w).max()), f"output {k} differs from onnxruntime by {err}"
    print(f"QDQ MatMul model: max |dtrexec - onnxruntime| = "
          f"{max(np.abs(g - w).max() for g, w in zip(got, want)):.2e}")


def case_infer_integer(dtrexec, tmp):
    rng = np.random.default_rng(12)
    path = os.path.join(tmp, "int.onnx")
    inits = [("az", np.uint8(120)), ("bz", np.array([3, -2, 0, 5, 1, -7], np.int8)),
             ("as", np.float32(0.02)), ("bs", np.float32(0.03)), ("ys", np.float32(0.3)), ("yz", np.uint8(100)),
             ("cw", rng.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8)),
             ("cwz", np.array([1, -1, 0, 2], np.int8)), ("cb", rng.integers(-500, 500, 4).astype(np.int32)),
             ("cxs", np.float32(0.05)), ("cws", np.array([0.01, 0.02, 0.015, 0.03], np.float32)),
             ("cys", np.float32(0.7)), ("cyz", np.uint8(90)), ("cxz", np.uint8(7))]
    nodes = [
        helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["mi"]),
        helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["qm"]),
        helper.make_node("ConvInteger", ["img", "cw", "cxz"], ["ci"], pads=[1, 1, 1, 1], strides=[2, 1]),
        helper.make_node("QLinearConv", ["img", "cxs", "cxz", "cw", "cws", "cwz", "cys", "cyz", "cb"], ["qc"],
                         pads=[1, 0, 1, 0], dilations=[1, 2]),
        helper.make_node("DynamicQuantizeLinear", ["f"], ["dq", "dqs", "dqz"]),
    ]
    outs = [("mi", TensorProto.INT32), ("qm", TensorProto.UINT8), ("ci", TensorProto.INT32),
            ("qc", TensorProto.UINT8), ("dq", TensorProto.UINT8), ("dqs", TensorProto.FLOAT), ("dqz", TensorProto.UINT8)]
    save(nodes, inits, [("a", TensorProto.UINT8, [2, 5, 7]), ("b", TensorProto.INT8, [7, 6]),
                        ("img", TensorProto.UINT8, [2, 3, 6, 7]), ("f", TensorProto.FLOAT, [3, 50])], outs, path)
    feeds = {"a": rng.integers(0, 256, (2, 5, 7)).astype(np.uint8),
             "b": rng.integers(-128, 128, (7, 6)).astype(np.int8),
             "img": rng.integers(0, 256, (2, 3, 6, 7)).astype(np.uint8),
             "f": (rng.standard_normal((3, 50)) * 2 + 0.5).astype(np.float32)}
    got = infer(dtrexec, tmp, path, feeds)
    want = ort_run(path, feeds)
    # The spec's reference is the judge: onnxruntime 1.32 (seen on an AVX2
    # machine) differs from it by thousands on MatMulInteger and by up to 31
    # on QLinearMatMul and QLinearConv with per-channel zero points, where
    # earlier releases agreed with it. Where the two disagree, it is said.
    from onnx.reference import ReferenceEvaluator
    spec = ReferenceEvaluator(path).run(None, feeds)
    for (name, _), w, r in zip(outs, want, spec):
        d = np.abs(w.astype(np.float64) - r.astype(np.float64)).max()
        if d:
            print(f"note: onnxruntime's {name} differs from the ONNX reference by {d}")
    want = spec
    for (name, _), g, w in zip(outs, got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{name}: {g.dtype}{g.shape} vs onnxruntime {w.dtype}{w.shape}"
        d = np.abs(g.astype(np.float64) - w.astype(np.float64))
        exact = name in ("mi", "ci", "dqs", "dqz")
        limit = 0 if exact else 1
        assert d.max() <= limit, f"{name}: differs from the ONNX reference by {d.max()} (allowed {limit})"
        if not exact:
            assert (d > 0).mean() < 0.02, f"{name}: {(d > 0).sum()} of {d.size} elements off by one"
    print("MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, DynamicQuantizeLinear match the ONNX reference")


def case_train_qdq(dtrexec, tmp):
    rng = np.random.default_rng(13)
    path = os.path.join(tmp, "qdq_train.onnx")
    inits = [("w", rng.standard_normal((6, 4)).astype(np.float32)), ("ws", np.float32(0.02)),
             ("wz", np.int8(0)), ("b", np.zeros(4, np.float32))]
    nodes = [helper.make_node("QuantizeLinear", ["w", "ws", "wz"], ["wq"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
             helper.make_node("MatMul", ["x", "wd"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["y"])]
    save(nodes, inits, [("x", TensorProto.FLOAT, [3, 6])], [("y", TensorProto.FLOAT)], path)
    r = run(dtrexec, ["params", path])
    wline = [l for l in r.stdout.splitlines() if l.split() and l.split()[0] == "w"]
    assert wline and "no gradient path" in wline[0], f"params should say w has no gradient path:\n{r.stdout}"
    x, lab = os.path.join(tmp, "x.npy"), os.path.join(tmp, "l.npy")
    np.save(x, rng.standard_normal((3, 6)).astype(np.float32))
    np.save(lab, rng.standard_normal((3, 4)).astype(np.float32))
    saved = os.path.join(tmp, "trained.onnx")
    run(dtrexec, [path, "--train", "--steps", "2", "--lr", "0.1", "--optimizer", "sgd", "--loss", "mse",
                  "--input", f"x={x}", "--labels", lab, "--save", saved])
    m = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    assert np.array_equal(m["w"], numpy_helper.to_array(inits_tensor(inits, "w"))), "w changed"
    assert np.abs(m["b"]).max() > 0, "the bias did not train"
    # forcing the quantized weight to train: it runs, warns that no gradient reaches w, and w keeps its value
    saved2 = os.path.join(tmp, "trained2.onnx")
    r = run(dtrexec, [path, "--train", "--steps", "1", "--loss", "mse", "--trainable", "w",
                      "--input", f"x={x}", "--labels", lab, "--save", saved2])
    warn = [l for l in r.stderr.splitlines() if "warning" in l and "'w'" in l]
    assert warn and "no gradient reaches it" in warn[0] and "QuantizeLinear" in warn[0], r.stderr
    m2 = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved2).graph.initializer}
    assert np.array_equal(m2["w"], numpy_helper.to_array(inits_tensor(inits, "w"))), "forced w changed"
    print(f"QDQ training: the quantized weight does not train, the bias does; --trainable w: {warn[0]}")


def inits_tensor(inits, name):
    return numpy_helper.from_array(dict(inits)[name], name)


def case_cuda_refusal(dtrexec, tmp):
    path = os.path.join(tmp, "qlmm.onnx")
    inits = [("as", np.float32(0.1)), ("az", np.uint8(3)), ("b", np.ones((4, 2), np.uint8)),
             ("bs", np.float32(0.1)), ("bz", np.uint8(0)), ("ys", np.float32(0.2)), ("yz", np.uint8(5))]
    nodes = [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])]
    save(nodes, inits, [("a", TensorProto.UINT8, [3, 4])], [("y", TensorProto.UINT8)], path)
    r = subprocess.run([dtrexec, path, "--device", "cuda"], capture_output=True, text=True, timeout=300)
    assert r.returncode in (1, 2), f"--device cuda exited {r.returncode}:\n{r.stdout}{r.stderr}"
    assert r.stderr.strip(), "no message"
    print(f"--device cuda: exit {r.returncode}: {r.stderr.strip().splitlines()[-1]}")


def case_errors(dtrexec, tmp):
    F, U8, I8 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8
    bad = [
        ("zero point type", [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])],
         [("s", np.float32(1)), ("z", np.int8(0))], [("x", U8, [3])], F, 21, "x_zero_point has type int8"),
        ("axis", [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=3)],
         [("s", np.ones(4, np.float32))], [("x", F, [2, 4])], U8, 21, "axis 3 is out of range"),
        ("blocked shape", [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)],
         [("s", np.ones((2, 3), np.float32))], [("x", F, [2, 4])], U8, 21, "ceil(4 / block_size 2) = 2"),
        ("float8 output", [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=17)],
         [("s", np.float32(1))], [("x", F, [2, 4])], U8, 21, "float8e4m3fn"),
        ("opset 10 per axis", [helper.make_node("QuantizeLinear", ["x", "s"], ["y"])],
         [("s", np.ones(4, np.float32))], [("x", F, [2, 4])], U8, 10, "must be a scalar at opset 10"),
        ("inner dims", [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
         [("b", np.ones((3, 2), np.int8))], [("a", U8, [2, 4])], TensorProto.INT32, 21, "inner dimensions differ"),
        ("groups", [helper.make_node("ConvInteger", ["x", "w"], ["y"], group=2)],
         [("w", np.ones((2, 3, 3, 3), np.int8))], [("x", U8, [1, 3, 5, 5])], TensorProto.INT32, 21,
         "channels do not match group 2"),
        ("per-tensor y_scale", [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
         [("as", np.float32(1)), ("az", np.uint8(0)), ("b", np.ones((4, 2), np.uint8)), ("bs", np.float32(1)),
          ("bz", np.uint8(0)), ("ys", np.ones(2, np.float32)), ("yz", np.uint8(0))], [("a", U8, [3, 4])], U8, 21,
         "y_scale float32[2] must be a scalar"),
    ]
    for what, nodes, inits, inputs, out_type, opset, msg in bad:
        path = os.path.join(tmp, "bad.onnx")
        save(nodes, inits, inputs, [("y", out_type)], path, opset)
        r = run(dtrexec, [path], expect=1)
        assert msg in r.stderr and f"({nodes[0].op_type})" in r.stderr, f"{what}: expected '{msg}' in:\n{r.stderr}"
    print(f"{len(bad)} malformed quantization nodes refused with their messages")


CASES = {"infer-qdq": case_infer_qdq, "infer-integer": case_infer_integer, "train-qdq": case_train_qdq,
         "cuda-refusal": case_cuda_refusal, "errors": case_errors}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        raise SystemExit(f"usage: {sys.argv[0]} DTREXEC {'|'.join(CASES)}")
    with tempfile.TemporaryDirectory() as tmp:
        CASES[sys.argv[2]](sys.argv[1], tmp)
