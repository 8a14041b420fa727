#!/usr/bin/env python3
"""Runs MODEL in onnxruntime with TensorProto inputs and compares the outputs
with expected TensorProto files (rtol 1e-4, atol 1e-6).

Usage: ort_check.py MODEL --in IN.pb... --out EXPECTED.pb...
Exit: 0 match, 1 mismatch or load failure, 77 onnxruntime not installed."""
import sys

try:
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, numpy_helper
except ImportError:
    sys.exit(77)


def read(p):
    t = TensorProto()
    with open(p, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


args = sys.argv[1:]
model = args[0]
ins = args[args.index("--in") + 1:args.index("--out")]
outs = args[args.index("--out") + 1:]
sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
feeds = {i.name: read(p) for i, p in zip(sess.get_inputs(), ins)}
got = sess.run(None, feeds)
for k, (g, p) in enumerate(zip(got, outs)):
    e = read(p)
    if g.shape != e.shape or not np.allclose(g, e, rtol=1e-4, atol=1e-6):
        print(f"output {k}: expected {e.ravel()[:8]} shape {e.shape}, got {g.ravel()[:8]} shape {g.shape}")
        sys.exit(1)
print(f"onnxruntime: {len(got)} outputs match")
