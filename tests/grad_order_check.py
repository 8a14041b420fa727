#!/usr/bin/env python3
"""The order of a convolution's gradient calls, checked on the op log.
Usage: grad_order_check.py DTREXEC

A Conv's backward emits two calls: ConvGradWeight (reads X and dY) and
ConvGradData (reads dY and W). The weight gradient must come first. In the
other order the fresh dX exists while X, often evicted under a budget, is
recomputed for the weight gradient: dX is then a cheap eviction candidate,
and once dY dies right after, recomputing dX replays the backward chain back
to the loss (U-Net at 0.5x: 1.9x the step's compute instead of 1.3x). Read
from the trace (--trace) of a small U-Net's training step: for every
ConvGradData, the ConvGradWeight reading the same dY ran before it.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE = os.path.join(HERE, "..", "bench", "models", "make.py")


def calls(trace):
    with open(trace) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("INSTRUCTION") == "CALL":
                yield rec["NAME"], rec["ARGS"]


def main():
    dtrexec = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "unet.onnx")
        trace = os.path.join(tmp, "trace.jsonl")
        subprocess.run([sys.executable, MAKE, "unet", "--tiny", "--batch", "2", "-o", model], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([dtrexec, model, "--train", "--steps", "1", "--optimizer", "sgd", "--quiet",
                        "--trace", trace], check=True)
        weight_dy = set()   # the dY argument of every ConvGradWeight so far
        n_data = 0
        for name, args in calls(trace):
            if name == "ConvGradWeight":
                weight_dy.add(args[1])
            elif name == "ConvGradData":
                n_data += 1
                if args[0] not in weight_dy:
                    sys.exit(f"FAIL: ConvGradData reading dY {args[0]} ran before the ConvGradWeight "
                             f"reading it (call {n_data} of its kind)")
        if n_data == 0:
            sys.exit("FAIL: the U-Net's training step made no ConvGradData call: the check saw nothing")
        print(f"ok: {n_data} ConvGradData calls, each after its ConvGradWeight")


if __name__ == "__main__":
    main()
