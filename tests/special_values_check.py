#!/usr/bin/env python3
"""Operators over windows and rows of -inf, +inf and NaN against the ONNX
reference implementation (onnx.reference): MaxPool through every CPU path
(oneDNN's and our own loops, with pads, dilations, ceil_mode and Indices),
ReduceMax/ReduceMin, Softmax and LogSoftmax. Each case is written as a
backend-test folder with the reference's outputs and run by `dtrexec check`,
which counts NaN equal to NaN and compares infinities exactly.

MaxPool's NaN rule is the reference's strided one (and the CUDA kernel's and
our loops'): the first tap of the window, then any strictly greater tap, so a
leading NaN stays and a later one is passed over. The reference's own
stride-1 path ignores NaN instead (as numpy's nanmax), so the stride-1 cases
here hold infinities but no NaN.

Usage: special_values_check.py DTREXEC
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def special(shape, seed, nan=True):
    """Values with whole windows of -inf, NaN placed first and last, +inf."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    pick = rng.random(flat.size)
    flat[pick < 0.15] = -np.inf
    flat[(pick >= 0.15) & (pick < 0.25)] = np.nan if nan else -np.inf
    flat[(pick >= 0.25) & (pick < 0.3)] = np.inf
    x[..., :2, :2] = -np.inf                   # an all -inf window
    if nan and x.shape[-1] >= 4 and x.shape[-2] >= 4:
        x[..., 2:4, 2:4] = np.nan              # an all-NaN window
    return x


def write_case(root, name, node, x, opset):
    outs = list(node.output)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    want = ReferenceEvaluator(m).run(None, {"x": x})
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    for i, (o, w) in enumerate(zip(outs, want)):
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(w), o).SerializeToString())
    return d


def cases():
    pool = lambda **a: helper.make_node("MaxPool", ["x"], ["y"], **a)
    yield "maxpool_2x2", pool(kernel_shape=[2, 2], strides=[2, 2]), special((2, 3, 8, 8), 1), 12
    yield "maxpool_3x3_pad", pool(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), special((1, 4, 9, 9), 2), 12
    yield "maxpool_dilated_ceil", pool(kernel_shape=[2, 2], dilations=[2, 2], ceil_mode=1),\
        special((1, 2, 7, 7), 3), 12
    yield "maxpool_1d", pool(kernel_shape=[3], strides=[2]), special((2, 3, 10), 4), 12
    yield "maxpool_stride1_inf", pool(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), special((1, 3, 6, 6), 8, nan=False), 12
    yield "maxpool_indices", helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2]),\
        special((1, 2, 6, 6), 5), 12
    yield "maxpool_all_neg_inf", pool(kernel_shape=[2, 2]), np.full((1, 1, 4, 4), -np.inf, np.float32), 12
    yield "maxpool_all_nan_strided", pool(kernel_shape=[2, 2], strides=[2, 2]),\
        np.full((1, 1, 4, 4), np.nan, np.float32), 12
    for op in ("ReduceMax", "ReduceMin"):
        yield f"{op.lower()}_axis1", helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=1), special((3, 5, 4), 6), 13
    for op in ("Softmax", "LogSoftmax"):
        x = special((4, 6), 7)
        x[0] = -np.inf                           # a row of -inf only
        x[1, 0] = np.inf
        yield f"{op.lower()}_rows", helper.make_node(op, ["x"], ["y"], axis=1), x, 13


def main():
    dtrexec = sys.argv[1]
    failed = passed = 0
    with tempfile.TemporaryDirectory() as root:
        for name, node, x, opset in cases():
            d = write_case(root, name, node, x, opset)
            r = subprocess.run([dtrexec, "check", d], capture_output=True, text=True, timeout=120)
            if r.returncode == 0:
                passed += 1
                print(f"PASS {name}")
            else:
                failed += 1
                print(f"FAIL {name} (exit {r.returncode}): {(r.stdout + r.stderr).strip()}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
