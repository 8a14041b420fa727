#!/usr/bin/env python3
"""float16 and bfloat16 models (onnx/half.c: computed in float32).

Usage: half_check.py DTREXEC CASE
- infer-fp16: a float16 CNN (Conv, BatchNormalization, Relu, MaxPool, Gemm,
  Softmax, a Cast to float16 in the middle) against onnxruntime in float16,
  within float16 tolerance; outputs are float16 files.
- infer-bf16: a bfloat16 MLP against numpy in float32 from the bfloat16
  weights, rounded to bfloat16 (onnxruntime has no bfloat16 Gemm on the CPU).
- train-fp16: --train on the float16 MLP trains its weights in float32 (one
  SGD step equals numpy's float32 step from the same float16 weights); --save
  writes float16 initializers and declared types, which load in onnxruntime.
- inputs: a float16 input file is accepted, and so is a float32 one.
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


def save(nodes, inits, inputs, outputs, path, elem):
    g = helper.make_graph(nodes, "half",
                          [helper.make_tensor_value_info(n, elem, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, elem, None) for n in outputs],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def fp16(rng, *shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def cnn_fp16(path):
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w", fp16(rng, 4, 3, 3, 3)), ("b", fp16(rng, 4)),
        ("scale", (1 + fp16(rng, 4, scale=0.1)).astype(np.float16)), ("bias", fp16(rng, 4)),
        ("mean", fp16(rng, 4, scale=0.1)), ("var", (1 + np.abs(fp16(rng, 4))).astype(np.float16)),
        ("fw", fp16(rng, 4 * 4 * 4, 5)), ("fb", fp16(rng, 5))]]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"]),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Cast", ["p"], ["pf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["pf"], ["ph"], to=TensorProto.FLOAT16),
        helper.make_node("Flatten", ["ph"], ["f"]),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["z"]),
        helper.make_node("Softmax", ["z"], ["y"], axis=1),
    ]
    save(nodes, inits, [("x", [2, 3, 8, 8])], ["y"], path, TensorProto.FLOAT16)


def mlp(path, elem, np_from):
    rng = np.random.default_rng(2)
    w1, b1 = rng.standard_normal((6, 8)) * 0.4, rng.standard_normal(8) * 0.1
    w2, b2 = rng.standard_normal((8, 3)) * 0.4, rng.standard_normal(3) * 0.1
    arrs = {k: np_from(v) for k, v in dict(w1=w1, b1=b1, w2=w2, b2=b2).items()}
    inits = [numpy_helper.from_array(v, k) if elem == TensorProto.FLOAT16 else
             helper.make_tensor(k, elem, v.shape, v.view(np.uint16).tobytes(), raw=True)
             for k, v in arrs.items()]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
             helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("Gemm", ["t", "w2", "b2"], ["y"])]
    save(nodes, inits, [("x", [4, 6])], ["y"], path, elem)
    return arrs


def bf16_round(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r


def bf16_to_f32(h):
    return (h.astype(np.uint32) << 16).view(np.float32)


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def case_infer_fp16(dtrexec, tmp):
    import onnxruntime as ort
    path = os.path.join(tmp, "cnn16.onnx")
    cnn_fp16(path)
    x = fp16(np.random.default_rng(3), 2, 3, 8, 8, scale=1.0)
    xin = os.path.join(tmp, "x.pb")
    with open(xin, "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    out = os.path.join(tmp, "out")
    run(dtrexec, [path, "--input", f"x={xin}", "--output-dir", out])
    t = read_pb(os.path.join(out, "output_0.pb"))
    assert t.data_type == TensorProto.FLOAT16, f"output is type {t.data_type}, not float16"
    got = numpy_helper.to_array(t).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert want.dtype == np.float16
    err = np.abs(got - want.astype(np.float32)).max()
    assert err <= 2e-3, f"float16 CNN differs from onnxruntime by {err}"
    assert np.abs(got.sum(axis=1) - 1).max() < 5e-3
    # A float32 file for the float16 input is accepted too.
    xin32 = os.path.join(tmp, "x32.pb")
    with open(xin32, "wb") as f:
        f.write(numpy_helper.from_array(x.astype(np.float32), "x").SerializeToString())
    out32 = os.path.join(tmp, "out32")
    run(dtrexec, [path, "--input", f"x={xin32}", "--output-dir", out32])
    got32 = numpy_helper.to_array(read_pb(os.path.join(out32, "output_0.pb"))).astype(np.float32)
    assert np.array_equal(got32, got), "float32 and float16 files of the same values differ"
    # An input of another type is refused with a message.
    xbad = os.path.join(tmp, "xbad.pb")
    with open(xbad, "wb") as f:
        f.write(numpy_helper.from_array(x.astype(np.float64), "x").SerializeToString())
    r = run(dtrexec, [path, "--input", f"x={xbad}"], expect=1)
    assert "float16" in r.stderr and "float64" in r.stderr, r.stderr
    print(f"float16 CNN: max |dtrexec - onnxruntime| = {err:.2e}")


def case_infer_bf16(dtrexec, tmp):
    path = os.path.join(tmp, "mlp_bf16.onnx")
    arrs = mlp(path, TensorProto.BFLOAT16, bf16_round)
    w = {k: bf16_to_f32(v) for k, v in arrs.items()}
    xh = bf16_round(np.random.default_rng(4).standard_normal((4, 6)))
    xin = os.path.join(tmp, "x.pb")
    t = helper.make_tensor("x", TensorProto.BFLOAT16, [4, 6], xh.tobytes(), raw=True)
    with open(xin, "wb") as f:
        f.write(t.SerializeToString())
    out = os.path.join(tmp, "out")
    run(dtrexec, [path, "--input", f"x={xin}", "--output-dir", out])
    t = read_pb(os.path.join(out, "output_0.pb"))
    assert t.data_type == TensorProto.BFLOAT16, f"output is type {t.data_type}, not bfloat16"
    got = bf16_to_f32(np.frombuffer(t.raw_data, np.uint16) if t.raw_data else
                      np.array(t.int32_data, np.uint16)).reshape(4, 3)
    x = bf16_to_f32(xh)
    want = np.tanh(x @ w["w1"] + w["b1"]) @ w["w2"] + w["b2"]
    want = bf16_to_f32(bf16_round(want))
    err = np.abs(got - want).max()
    assert err <= 1e-2 * max(1, np.abs(want).max()), f"bfloat16 MLP differs from numpy by {err}"
    print(f"bfloat16 MLP: max |dtrexec - numpy| = {err:.2e}")


def case_train_fp16(dtrexec, tmp):
    import onnxruntime as ort
    path = os.path.join(tmp, "mlp16.onnx")
    arrs = mlp(path, TensorProto.FLOAT16, lambda v: v.astype(np.float16))
    w = {k: v.astype(np.float32) for k, v in arrs.items()}
    x = np.random.default_rng(5).standard_normal((4, 6)).astype(np.float16)
    lab = np.random.default_rng(6).standard_normal((4, 3)).astype(np.float32)
    xin, lin = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xin, x)
    np.save(lin, lab)
    saved = os.path.join(tmp, "trained.onnx")
    lr = 0.05
    r = run(dtrexec, [path, "--train", "--steps", "1", "--lr", str(lr), "--optimizer", "sgd", "--loss", "mse",
                      "--input", f"x={xin}", "--labels", lin, "--save", saved])
    assert "nothing to train" not in r.stderr
    m = onnx.load(saved)
    for init in m.graph.initializer:
        assert init.data_type == TensorProto.FLOAT16, f"saved {init.name} is type {init.data_type}"
    assert m.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    assert m.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    got = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in m.graph.initializer}
    # numpy: the same step in float32 from the float16 weights (mse: mean of squares).
    xf = x.astype(np.float32)
    h = xf @ w["w1"] + w["b1"]
    t = np.tanh(h)
    y = t @ w["w2"] + w["b2"]
    dy = 2 * (y - lab) / y.size
    g = {"w2": t.T @ dy, "b2": dy.sum(0)}
    dh = (dy @ w["w2"].T) * (1 - t * t)
    g.update({"w1": xf.T @ dh, "b1": dh.sum(0)})
    for k in w:
        want = (w[k] - lr * g[k]).astype(np.float16).astype(np.float32)
        # The saved float16 is the float32 master weight rounded once: within one float16 ulp.
        ulp = np.abs(want) * 2.0 ** -10 + 2.0 ** -24
        bad = np.abs(got[k] - want) > ulp
        assert not bad.any(), f"{k}: {bad.sum()} of {bad.size} weights off by more than one float16 ulp"
        assert not np.array_equal(got[k], w[k].astype(np.float32)), f"{k} did not change"
    sess = ort.InferenceSession(saved, providers=["CPUExecutionProvider"])
    out = sess.run(None, {"x": x})[0]
    assert out.dtype == np.float16 and np.isfinite(out).all()
    print("float16 MLP: one SGD step matches numpy's float32 step within one float16 ulp; saved as float16")


CASES = {"infer-fp16": case_infer_fp16, "infer-bf16": case_infer_bf16, "train-fp16": case_train_fp16}


def main():
    dtrexec, case = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        CASES[case](dtrexec, tmp)
    print(f"PASS {case}")


if __name__ == "__main__":
    main()
