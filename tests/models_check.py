#!/usr/bin/env python3
"""Checks the model zoo end to end: each model of bench/models/ is generated
(tiny configuration by default) into a temporary folder, validated with
onnx.checker (full check with strict shape inference), run in onnxruntime
(outputs must be finite, of the inferred shape, and not all zero), and —
when --dtrexec is given — run through the dtrexec command with the same
inputs and compared to onnxruntime's outputs (rtol 1e-3, atol 1e-4).

    python3 tests/models_check.py [--dtrexec build/dtrexec] [--models a,b]
                                  [--batch N] [--full] [--threads N]

With --train (and --dtrexec) each model is also trained by dtrexec for
--steps steps of Adam on its one fixed batch (class labels for classifiers,
dtrexec's seeded MSE target otherwise): every step's loss must be finite and
the last below the first.

A model entry may carry parameter overrides, MODEL:KEY=VALUE[:KEY=VALUE],
e.g. unet:upsample=nearest or transformer:gelu=op; the default list covers
every model plus those variants.

Exit status 0 when every model passes, 1 otherwise; one line per model.
Needs only numpy, onnx and onnxruntime; no pytest.
"""

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench", "experiments"))
sys.path.insert(0, os.path.join(HERE, "..", "bench", "models"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

import make  # noqa: E402
import runners  # noqa: E402


VARIANTS = ("unet:upsample=nearest", "unet:upsample=linear", "transformer:gelu=op", "vgg16:dropout=0.5")


def parse_entry(entry):
    """'unet:upsample=nearest' -> ('unet', {'upsample': 'nearest'})."""
    name, *items = entry.split(":")
    overrides = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep:
            raise ValueError(f"bad override '{item}' in '{entry}' (want KEY=VALUE)")
        overrides[k] = make.parse_value(v)
    return name, overrides


def check_one(entry, args, tmp):
    t0 = time.perf_counter()
    name, overrides = parse_entry(entry)
    model = make.make(name, batch=args.batch, tiny=not args.full, seed=0, **overrides)
    name = entry.replace(":", "_").replace("=", "-")
    path = os.path.join(tmp, f"{name}.onnx")
    onnx.save_model(model, path)
    onnx.checker.check_model(path, full_check=True)
    gen_s = time.perf_counter() - t0

    names = set()
    for n in model.graph.node:
        if not n.name or n.name in names:
            return False, f"node name '{n.name}' empty or repeated"
        names.add(n.name)

    feeds = make.sample_inputs(model, seed=1)
    ort_out, ort_t = runners.run_onnxruntime(path, feeds, threads=args.threads)
    for vi, arr in zip(model.graph.output, ort_out):
        want = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if list(arr.shape) != want:
            return False, f"onnxruntime output '{vi.name}' has shape {list(arr.shape)}, declared {want}"
        if not np.all(np.isfinite(arr)):
            return False, f"onnxruntime output '{vi.name}' has non-finite values"
        if not np.any(arr):
            return False, f"onnxruntime output '{vi.name}' is all zero"
    o = ort_out[0]
    msg = (f"{len(model.graph.node)} nodes, output {list(o.shape)} std {float(o.std()):.3g}, "
           f"gen {gen_s:.2f}s, onnxruntime {ort_t[0] * 1e3:.1f} ms")
    if args.dtrexec:
        try:
            # Two runs: the outputs are the second's, after the inference
            # optimization (runtime/fuse.c) has rewritten the graph.
            d_out, d_t, _ = runners.run_dtrexec(args.dtrexec, path, feeds, threads=args.threads, repeat=2,
                                                work_dir=os.path.join(tmp, name + ".run"),
                                                timeout=args.timeout)
        except runners.DtrexecError as e:
            return False, msg + f"; {e}"
        except Exception as e:  # missing output file, bad stats JSON, timeout
            return False, msg + f"; dtrexec run failed: {type(e).__name__}: {e}"
        ok, max_abs, max_rel, why = runners.compare(ort_out, d_out, args.rtol, args.atol)
        d_ms = f"{d_t[0] * 1e3:.1f} ms" if d_t else "no step_seconds"
        msg += f", dtrexec {d_ms}, max abs diff {max_abs:.3g}, max rel diff {max_rel:.3g}"
        if not ok:
            return False, msg + f"; MISMATCH: {why}"
    if args.dtrexec and args.train:
        ok, tmsg = check_train(args, path, feeds, ort_out[0], os.path.join(tmp, name + ".train"))
        msg += "; " + tmsg
        if not ok:
            return False, msg
    return True, msg


def check_train(args, path, feeds, logits, work_dir):
    """Trains on one fixed batch; the loss must be finite and fall."""
    labels = None
    if logits.ndim == 2:  # classifier: cross-entropy against fixed labels
        labels = np.random.default_rng(2).integers(0, logits.shape[1], logits.shape[0]).astype(np.int64)
    try:
        stats = runners.run_dtrexec_train(args.dtrexec, path, feeds, args.steps, labels=labels,
                                          threads=args.threads, work_dir=work_dir, timeout=args.timeout,
                                          extra_args=["--optimizer", "adam", "--lr", str(args.lr)])
    except runners.DtrexecError as e:
        return False, f"train: {e}"
    except Exception as e:
        return False, f"train run failed: {type(e).__name__}: {e}"
    loss = stats.get("loss") or []
    if len(loss) != args.steps:
        return False, f"train: stats hold {len(loss)} losses for {args.steps} steps"
    if not all(np.isfinite(loss)):
        return False, f"train: non-finite loss {loss}"
    desc = f"train loss {loss[0]:.4g} -> {loss[-1]:.4g} in {args.steps} steps"
    if not loss[-1] < loss[0]:
        return False, f"{desc}: did not decrease"
    return True, desc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtrexec", help="path of the dtrexec executable; without it only onnxruntime runs")
    ap.add_argument("--models", default=",".join(list(make.MODELS) + list(VARIANTS)),
                    help="comma-separated MODEL[:KEY=VALUE...] list (default: all models and variants)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="full-size configurations (slow, large files)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rtol", type=float, default=runners.DEFAULT_RTOL)
    ap.add_argument("--atol", type=float, default=runners.DEFAULT_ATOL)
    ap.add_argument("--train", action="store_true", help="also train each model with dtrexec (needs --dtrexec)")
    ap.add_argument("--steps", type=int, default=10, help="training steps with --train")
    ap.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate with --train")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per dtrexec run")
    args = ap.parse_args()
    if args.dtrexec and not os.access(args.dtrexec, os.X_OK):
        print(f"models_check: dtrexec '{args.dtrexec}' is not an executable file", file=sys.stderr)
        return 1

    failed = []
    with tempfile.TemporaryDirectory(prefix="dtrx-models-") as tmp:
        for name in args.models.split(","):
            try:
                ok, msg = check_one(name, args, tmp)
            except Exception as e:
                ok, msg = False, f"{type(e).__name__}: {e}"
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {msg}", flush=True)
            if not ok:
                failed.append(name)
    if failed:
        print(f"models_check: {len(failed)} failed: {' '.join(failed)}")
        return 1
    print("models_check: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
