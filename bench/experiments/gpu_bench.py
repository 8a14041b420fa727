#!/usr/bin/env python3
"""A short training benchmark on the GPU (issue 7), for bench/gpu-check.sh.

Usage: gpu_bench.py --dtrexec BIN [--device cuda] [--seconds S] [--md OUT.md] [--work DIR] [--quick]

Per model (ResNet-50 at batch 64, 224x224; the 12-layer BERT-base
Transformer at batch 32, sequence 128; both from bench/models/make.py):
  - training steps unbudgeted, at 2.0x of the unbudgeted peak (DTR keeps its
    bookkeeping but evicts nothing), at 0.5x and at 0.3x (dtr-eq): median step
    time (first step excluded), peak_bytes, evictions, recomputations, and
    the DTR overhead share dtr_overhead_seconds / step seconds;
  - the largest batch that trains within a fixed budget (the unbudgeted peak
    at a base batch: 16 for ResNet-50, 8 for the Transformer) without DTR
    (unbudgeted peak within the budget) and with dtr-eq; doubling, then
    bisection, as bench/experiments/budget_sweep.py does on the CPU.
Models are made once with a symbolic batch dimension, so every batch size
runs the same file (--dim batch=N). Everything stops at the time limit
(--seconds) and says what it left out. Writes a markdown report to --md (and
stdout). Needs numpy and onnx for the models; the runs need only dtrexec.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/
MAKE = os.path.join(BENCH_DIR, "models", "make.py")

MODELS = {
    "resnet50": {"spec": ["resnet50", "--size", "224"], "batch": 64, "base": 16},
    "transformer": {"spec": ["transformer", "--seq", "128", "--layers", "12"], "batch": 32, "base": 8},
}
QUICK = {
    "resnet50": {"spec": ["resnet50", "--tiny"], "batch": 16, "base": 4},
    "transformer": {"spec": ["transformer", "--tiny"], "batch": 8, "base": 2},
}


class Bench:
    def __init__(self, args):
        self.a = args
        self.deadline = time.time() + args.seconds
        self.notes = []

    def left(self):
        return self.deadline - time.time()

    def dtrexec(self, model, batch, steps, extra=(), timeout=240):
        """(exit code, stats or None, stderr tail)"""
        left = self.left()
        if left < 5:
            return None, None, "out of time"
        stats = os.path.join(self.a.work, f"stats-{time.time_ns()}.json")
        cmd = [self.a.dtrexec, model, "--device", self.a.device, "--dim", f"batch={batch}", "--train", "--steps",
               str(steps), "--optimizer", "sgd", "--lr", "0.01", "--seed", "1", "--stats", stats, "--quiet"] + list(extra)
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=min(timeout, left))
        except subprocess.TimeoutExpired:
            return None, None, f"timed out ({' '.join(cmd[3:])})"
        st = json.load(open(stats)) if res.returncode == 0 and os.path.exists(stats) else None
        return res.returncode, st, res.stderr.strip()[-300:]


def make_model(name, spec, batch, work):
    """The model with its batch dimension made symbolic ('batch')."""
    import onnx
    fixed, path = os.path.join(work, name + "-fixed.onnx"), os.path.join(work, name + ".onnx")
    subprocess.run([sys.executable, MAKE] + spec + ["--batch", str(batch), "-o", fixed], check=True,
                   capture_output=True)
    m = onnx.load(fixed)
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.type.tensor_type.shape.dim:
            vi.type.tensor_type.shape.dim[0].dim_param = "batch"
    del m.graph.value_info[:]
    onnx.save(m, path)
    os.remove(fixed)
    return path


def median_step(st):
    s = st["step_seconds"][1:] or st["step_seconds"]
    return statistics.median(s)


def overhead_share(st):
    return st.get("dtr_overhead_seconds", 0.0) / max(sum(st["step_seconds"]), 1e-12)


def mib(b):
    return b / 2**20


def steps_rows(bench, name, path, batch, steps):
    rows = []
    rc, base, err = bench.dtrexec(path, batch, steps)
    if rc != 0:
        bench.notes.append(f"{name} batch {batch}: unbudgeted training failed ({rc}): {err}")
        return rows, None
    peak = base["peak_bytes"]
    rows.append(("unbudgeted", None, rc, base))
    for label, ratio in (("2.0x (no eviction)", 2.0), ("0.5x", 0.5), ("0.3x", 0.3)):
        budget = int(peak * ratio)
        rc, st, err = bench.dtrexec(path, batch, steps, ["--budget", str(budget), "--heuristic", "dtr-eq"])
        if rc != 0:
            bench.notes.append(f"{name} batch {batch} at {label}: exit {rc}: {err}")
        rows.append((label, budget, rc, st))
    return rows, base


def max_batch(bench, name, path, base_batch, steps):
    rc, st, err = bench.dtrexec(path, base_batch, 2)
    if rc != 0:
        bench.notes.append(f"{name} max batch: base batch {base_batch} failed ({rc}): {err}")
        return []
    budget = st["peak_bytes"]
    cache = {(base_batch, False): (True, st)}

    def fits(batch, dtr):
        if (batch, dtr) not in cache:
            if dtr:
                rc, st, err = bench.dtrexec(path, batch, steps, ["--budget", str(budget), "--heuristic", "dtr-eq"])
                ok = rc == 0
            else:
                rc, st, err = bench.dtrexec(path, batch, steps)
                ok = rc == 0 and st["peak_bytes"] <= budget
            if rc is None:
                raise TimeoutError(err)
            cache[(batch, dtr)] = (ok, st)
        return cache[(batch, dtr)][0]

    out = []
    for dtr in (False, True):
        lo, hi = base_batch, None
        try:
            while hi is None and lo < 64 * base_batch:
                if fits(lo * 2, dtr):
                    lo *= 2
                else:
                    hi = lo * 2
            while hi is not None and hi - lo > 1:
                mid = (lo + hi) // 2
                if fits(mid, dtr):
                    lo = mid
                else:
                    hi = mid
            complete = True
        except TimeoutError:
            complete = False
            bench.notes.append(f"{name} max batch ({'dtr-eq' if dtr else 'no DTR'}): stopped at the time limit")
        st = cache.get((lo, dtr), (None, None))[1]
        out.append({"mode": "dtr-eq" if dtr else "no DTR", "budget": budget, "max_batch": lo,
                    "complete": complete, "step": median_step(st) if st else None})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtrexec", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seconds", type=float, default=240)
    ap.add_argument("--md")
    ap.add_argument("--work")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--models", default="resnet50,transformer")
    ap.add_argument("--quick", action="store_true", help="tiny models: a smoke test of this script")
    args = ap.parse_args()
    tmp = None
    if not args.work:
        tmp = tempfile.TemporaryDirectory(prefix="gpu-bench-")
        args.work = tmp.name
    os.makedirs(args.work, exist_ok=True)
    bench = Bench(args)
    table = MODELS if not args.quick else QUICK
    lines = ["### Training steps (dtr-eq under budgets)", "",
             "| model | batch | budget | step ms (median) | peak MiB | budget MiB | evictions | remats | DTR overhead |",
             "|---|---|---|---|---|---|---|---|---|"]
    mb_lines = ["### Largest batch within a fixed budget", "",
                "| model | budget MiB (peak at base batch) | base batch | mode | max batch | step ms |",
                "|---|---|---|---|---|---|"]
    for name in args.models.split(","):
        cfg = table[name]
        if bench.left() < 20:
            bench.notes.append(f"{name}: skipped, out of time")
            continue
        t0 = time.time()
        try:
            path = make_model(name, cfg["spec"], cfg["batch"], args.work)
        except (subprocess.CalledProcessError, ImportError) as e:
            bench.notes.append(f"{name}: cannot make the model: {e}")
            continue
        bench.notes.append(f"{name}: model made in {time.time() - t0:.1f} s")
        rows, base = steps_rows(bench, name, path, cfg["batch"], args.steps)
        for label, budget, rc, st in rows:
            cap = "-" if budget is None else "%.0f" % mib(budget)
            if st:
                lines.append(f"| {name} | {cfg['batch']} | {label} | {1e3 * median_step(st):.1f} | "
                             f"{mib(st['peak_bytes']):.0f} | {cap} | {st['evictions']} | {st['remats']} | "
                             f"{100 * overhead_share(st):.2f} % |")
            else:
                what = "infeasible" if rc == 2 else "failed (%s)" % rc
                lines.append(f"| {name} | {cfg['batch']} | {label} | {what} | | {cap} | | | |")
        for r in max_batch(bench, name, path, cfg["base"], 2):
            step = "-" if r["step"] is None else "%.1f" % (1e3 * r["step"])
            more = "" if r["complete"] else " (at least)"
            mb_lines.append(f"| {name} | {mib(r['budget']):.0f} | {cfg['base']} | {r['mode']} | "
                            f"{r['max_batch']}{more} | {step} |")
    report = "\n".join(lines + [""] + mb_lines + ["", "Notes:"] + [f"- {n}" for n in bench.notes]) + "\n"
    print(report)
    if args.md:
        with open(args.md, "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
