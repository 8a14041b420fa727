#!/usr/bin/env python3
"""Bad input to the operators of ops/signal.c, signal_window.c, lp_pool.c,
col2im.c and max_unpool.c: each model must be refused with exit 1 and a
message naming the node and the problem, never a crash.
Usage: signal_bad_input_check.py DTREXEC"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "grad"))
from gradutil import single_op  # noqa: E402

I64, F32 = np.int64, np.float32
z = np.zeros
CASES = [
    ("dft_axis", single_op("DFT", [("x", z((2, 8, 1), F32)), ("n", None), ("a", np.array(-1, I64))], opset=20),
     "axis -1 is out of range"),
    ("dft_17_axis_input", single_op("DFT", [("x", z((2, 8, 1), F32)), ("n", np.array(4, I64)),
                                            ("a", np.array(1, I64))], opset=17), "DFT-17 takes 2 inputs"),
    ("dft_length", single_op("DFT", [("x", z((2, 8, 1), F32)), ("n", np.array(0, I64))], opset=20),
     "dft_length 0 must be positive"),
    ("dft_last_axis", single_op("DFT", [("x", z((2, 8, 3), F32))], opset=20), "real or complex last axis"),
    ("dft_onesided_complex", single_op("DFT", [("x", z((2, 8, 2), F32))], opset=20, attrs={"onesided": 1}),
     "onesided needs a real input"),
    ("stft_frame", single_op("STFT", [("x", z((1, 8, 1), F32)), ("s", np.array(2, I64)), ("w", None),
                                      ("l", np.array(16, I64))], opset=17), "frame_length 16 must be in [1, 8]"),
    ("stft_window", single_op("STFT", [("x", z((1, 8, 1), F32)), ("s", np.array(2, I64)), ("w", z(3, F32)),
                                       ("l", np.array(4, I64))], opset=17), "does not have frame_length 4"),
    ("col2im_blocks", single_op("Col2Im", [("x", z((1, 4, 7), F32)), ("i", np.array([3, 3], I64)),
                                           ("b", np.array([2, 2], I64))], opset=18), "4 (blocks)"),
    ("col2im_block_too_big", single_op("Col2Im", [("x", z((1, 16, 1), F32)), ("i", np.array([3, 3], I64)),
                                                  ("b", np.array([4, 4], I64))], opset=18),
     "larger than the padded image"),
    ("unpool_index", single_op("MaxUnpool", [("x", z((1, 1, 2, 2), F32)),
                                             ("i", np.array([0, 1, 2, 99], I64).reshape(1, 1, 2, 2))],
                               opset=22, attrs={"kernel_shape": [2, 2], "strides": [2, 2]}),
     "I[3] = 99 is outside the unpooled tensor of 16 elements"),
    ("unpool_output_shape", single_op("MaxUnpool", [("x", z((1, 1, 2, 2), F32)), ("i", z((1, 1, 2, 2), I64)),
                                                    ("o", np.array([1, 1, 3, 3], I64))],
                                      opset=22, attrs={"kernel_shape": [2, 2], "strides": [2, 2]}),
     "output shape axis 2 is 3, below the unpooled 4"),
    ("unpool_no_kernel", single_op("MaxUnpool", [("x", z((1, 1, 2, 2), F32)), ("i", z((1, 1, 2, 2), I64))],
                                   opset=22), "kernel_shape is required"),
    ("lppool_p", single_op("LpPool", [("x", z((1, 1, 4, 4), F32))], opset=22, attrs={"kernel_shape": [2, 2], "p": 0}),
     "p = 0 must be a positive number"),
    ("lppool_kernel", single_op("LpPool", [("x", z((1, 1, 4, 4), F32))], opset=22, attrs={"p": 2}),
     "kernel_shape is required"),
    ("lppool_ceil_v11", single_op("LpPool", [("x", z((1, 1, 4, 4), F32))], opset=11,
                                  attrs={"kernel_shape": [2, 2], "ceil_mode": 1}), "exist from opset 18"),
    ("hann_size", single_op("HannWindow", [("s", np.array(-3, I64))], opset=17), "size -3 is negative"),
    ("hann_dtype", single_op("HannWindow", [("s", np.array(3, I64))], opset=17, attrs={"output_datatype": 8}),
     "output_datatype 8 is not supported"),
    ("mel_nyquist", single_op("MelWeightMatrix", [("a", np.array(8, I64)), ("b", np.array(16, I64)),
                                                  ("c", np.array(8192, I64)), ("d", np.array(0, F32)),
                                                  ("e", np.array(8000, F32))], opset=17),
     "above the Nyquist frequency"),
]


def main():
    dtrexec = sys.argv[1]
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name, model, want in CASES:
            path = os.path.join(d, name + ".onnx")
            onnx.save(model, path)
            r = subprocess.run([dtrexec, path], capture_output=True, text=True, timeout=60)
            node = model.graph.node[0].op_type + "_0"
            ok = r.returncode == 1 and want in r.stderr and f"'{node}'" in r.stderr
            print(("PASS" if ok else "FAIL") + f" {name}: exit {r.returncode}: {r.stderr.strip()}")
            failed += not ok
    print(f"{len(CASES) - failed} of {len(CASES)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
