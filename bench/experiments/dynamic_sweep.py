#!/usr/bin/env python3
"""Budget sweeps of the dynamic models (issue 8): training under DTR when the
computation changes every step.

Models from bench/models/make_dynamic.py: lstm_var_len (a sequence length
drawn per step with --dim seq=LO:HI), treelstm (a random tree per step, a
Loop over its merges), early_exit (an If on a data-dependent confidence).
Per model an unbudgeted run (twice; its peak is the high-water mark over all
steps, so over every length or tree drawn), then for each heuristic budgets
from 1.0x of that peak down (0.1 apart, then three finer steps below the
lowest that trained; after two infeasible budgets in a row, or one run above
--max-slowdown cost-model slowdown, no lower one). Every run uses the same
seed, so it sees the same lengths, trees and branches as the unbudgeted one.

Per run: real slowdown (summed step time without the first step over the
unbudgeted run's: with changing shapes steps differ in length, so sums
rather than medians), cost-model slowdown ((model compute + recomputed
compute) / model compute), evictions, recomputations, DTR overhead share
(dtr_overhead_seconds / summed step seconds), and whether the losses equal
the unbudgeted run's bit for bit (any difference is printed and marked).

Writes dynamic_sweep.csv, dynamic_sweep.svg and dynamic_summary.md into --out
(bench/results). Run it like bench/experiments/budget_sweep.py:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python3 bench/experiments/dynamic_sweep.py --dtrexec build/dtrexec
--seq LO:HI replaces lstm_var_len's length range (Scan over more than 64
steps trains since Scan cuts its inputs with one Split).
--quick: the tiny configurations, a smoke test of the script in seconds.
"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(BENCH_DIR, "models"))

import onnx  # noqa: E402

import budget_sweep as bs  # noqa: E402  (the runner, CSV and SVG writers)
import make_dynamic  # noqa: E402
import runners  # noqa: E402

HEURISTICS = ["dtr", "dtr-eq", "lru"]

# (make_dynamic parameters, dtrexec arguments: a --dim range, or
# --fresh-inputs for a new tree / batch every step). Sizes where a step takes
# a fraction of a second on one core and activations dominate the weights.
MODELS = {
    "lstm_var_len": (dict(batch=32, layers=2, embed=32, hidden=64, vocab=256), ["--dim", "seq=16:48"]),
    "treelstm": (dict(leaves=64, embed=32, hidden=64, vocab=500, classes=5), ["--fresh-inputs"]),
    "early_exit": (dict(batch=1024, inp=64, hidden=128, classes=10, late=12), ["--fresh-inputs"]),
}
QUICK_MODELS = {  # tests/dynamic_check.py's sizes
    "lstm_var_len": (dict(batch=8, layers=2, embed=16, hidden=16, vocab=32), ["--dim", "seq=8:24"]),
    "treelstm": (dict(leaves=32, embed=16, hidden=16, vocab=50, classes=5), ["--fresh-inputs"]),
    "early_exit": (dict(batch=512, inp=16, hidden=32, classes=10, late=10), ["--fresh-inputs"]),
}


def make_model(tmp, name, params):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save_model(make_dynamic.make(name, **params), path)
    return path


def total_after_first(st):
    s = st["step_seconds"]
    return sum(s[1:]) if len(s) > 1 else sum(s)


def row_of(model, h, ratio, budget, base, rc, st, err):
    row = bs.row_of(model, h, ratio, budget, base, rc, st, err)
    if row["feasible"]:
        row["step_s"] = total_after_first(st) / max(1, len(st["step_seconds"]) - 1)
        row["real_slowdown"] = total_after_first(st) / base["total_s"]
    return row


def baseline(run, name, path, steps, dims):
    """Two unbudgeted runs; step times of the two pooled (first steps left out)."""
    firsts, first = [], None
    for _ in range(2):
        rc, st, err = run.train(path, steps, dims)
        if rc:
            raise SystemExit(f"unbudgeted training of {name} failed ({rc}): {err}")
        if first is None:
            first = st
        elif st["loss"] != first["loss"]:
            print(f"!!!! {name}: two unbudgeted runs gave different losses", flush=True)
        firsts.append(total_after_first(st))
    first["total_s"] = min(firsts)
    first["step_s"] = first["total_s"] / max(1, len(first["step_seconds"]) - 1)
    return first


def sweep_model(run, name, path, dims, heuristics, steps, max_slowdown, log):
    base = baseline(run, name, path, steps, dims)
    peak = base["peak_bytes"]
    log(f"{name}: unbudgeted peak {peak / 2**20:.2f} MiB, pinned {base['pinned_bytes'] / 2**20:.2f} MiB, "
        f"{steps} steps, mean step {base['step_s'] * 1e3:.0f} ms, losses {base['loss']}")
    rows = []

    def one(h, r):
        budget = int(peak * r)
        rc, st, err = run.train(path, steps, dims + ["--budget", str(budget), "--heuristic", h])
        return row_of(name, h, r, budget, base, rc, st, err)

    bs.descend(one, rows, heuristics, max_slowdown, log)
    return base, rows



def summary(rows, bases, heuristics, configs, meta):
    L = [f"# Budget sweep of the dynamic models ({meta['date']})", "",
         f"Command: `{meta['command']}` (source {meta['commit']})", "",
         f"Load average at start {meta['load0']}, at end {meta['load1']}; {meta['threads']} kernel thread(s), "
         f"OMP_WAIT_POLICY=PASSIVE, {meta['steps']} steps per run, seed fixed (every run sees the same lengths, "
         f"trees and branches); wall time {meta['wall']:.0f} s.", "", "## Models", "",
         "| model | make_dynamic parameters | dims | unbudgeted peak MiB | pinned MiB | mean step ms |",
         "|---|---|---|---|---|---|"]
    for m, b in bases.items():
        params, dims = configs[m]
        L.append(f"| {m} | `{params}` | `{' '.join(dims)}` | {b['peak_bytes'] / 2**20:.2f} | "
                 f"{b['pinned_bytes'] / 2**20:.2f} | {b['step_s'] * 1e3:.0f} |")
    L += ["", "## Lowest feasible budget and slowdowns", "",
          "Budget ratios are of the unbudgeted peak over all steps. Real = summed step time (first step left out) "
          "over the unbudgeted run's; cost = cost-model ratio. `*`: stopped by the slowdown cap "
          f"({meta['max_slowdown']:g}x), lower budgets may train.", "",
          "| model | heuristic | lowest | real @0.5x | cost @0.5x | real @lowest | cost @lowest | "
          "evictions @lowest | remats @lowest | overhead share @lowest | losses equal |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in bases:
        for h in heuristics:
            ok = [r for r in rows if r["model"] == m and r["heuristic"] == h and r["feasible"]]
            low = min(ok, key=lambda r: r["ratio"]) if ok else None
            half = next((r for r in ok if abs(r["ratio"] - 0.5) < 1e-9), None)
            eq = all(r["losses_equal"] for r in ok)
            star = "*" if low and low.get("note", "").startswith("lowest tried") else ""
            L.append(f"| {m} | {h} | {bs.fmt(low and low['ratio'], '.3f')}{star} | "
                     f"{bs.fmt(half and half['real_slowdown'])} | {bs.fmt(half and half['cost_slowdown'])} | "
                     f"{bs.fmt(low and low['real_slowdown'])} | {bs.fmt(low and low['cost_slowdown'])} | "
                     f"{bs.fmt(low and low['evictions'], 'd')} | {bs.fmt(low and low['remats'], 'd')} | "
                     f"{bs.fmt(low and 100 * low['overhead_share'], '.1f')}% | "
                     f"{'yes' if eq else '**NO**'} ({len(ok)} runs) |")
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtrexec", default=os.path.join(BENCH_DIR, "..", "build", "dtrexec"))
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "results"))
    ap.add_argument("--models", default=None, help="comma-separated subset")
    ap.add_argument("--heuristics", default=",".join(HEURISTICS))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=120, help="seconds per run (a run over it counts as failed)")
    ap.add_argument("--max-slowdown", type=float, default=4.0)
    ap.add_argument("--seq", metavar="LO:HI", help="lstm_var_len's length range (default that of MODELS)")
    ap.add_argument("--quick", action="store_true", help="tiny models (results go to a temporary folder "
                                                        "unless --out is given)")
    args = ap.parse_args()
    configs = QUICK_MODELS if args.quick else MODELS
    if args.models:
        configs = {k: configs[k] for k in args.models.split(",")}
    if args.seq and "lstm_var_len" in configs:
        configs = dict(configs, lstm_var_len=(configs["lstm_var_len"][0], ["--dim", "seq=" + args.seq]))
    heuristics = args.heuristics.split(",")
    if args.quick and "--out" not in sys.argv:
        args.out = tempfile.mkdtemp(prefix="dynamic_sweep_")
    os.makedirs(args.out, exist_ok=True)
    t0, load0 = time.time(), "%.2f %.2f %.2f" % os.getloadavg()

    def log(s):
        print(s, flush=True)

    log(f"load average {load0}")
    rows, bases = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        run = bs.Runner(args, tmp)
        for name, (params, dims) in configs.items():
            path = make_model(tmp, name, params)
            base, r = sweep_model(run, name, path, list(dims), heuristics, args.steps, args.max_slowdown, log)
            bases[name], rows = base, rows + r
    load1 = "%.2f %.2f %.2f" % os.getloadavg()
    fields = ["model", "heuristic", "ratio", "budget_bytes", "feasible", "status", "peak_bytes", "step_s",
              "real_slowdown", "cost_slowdown", "evictions", "window_evictions", "compactions", "compaction_bytes", "remats",
              "dtr_overhead_s", "overhead_share", "losses_equal", "within_budget", "note"]
    bs.write_csv(os.path.join(args.out, "dynamic_sweep.csv"), rows, fields)
    bs.write_svg(os.path.join(args.out, "dynamic_sweep.svg"), rows, heuristics,
                 "Dynamic models: slowdown of budgeted training against memory budget (dtrexec, CPU)")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "load0": load0, "load1": load1, "threads": args.threads,
            "steps": args.steps, "wall": time.time() - t0, "max_slowdown": args.max_slowdown,
            "commit": runners.source_commit(), "command": "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 bench/experiments/dynamic_sweep.py "
                       + " ".join(sys.argv[1:])}
    text = summary(rows, bases, heuristics, configs, meta)
    with open(os.path.join(args.out, "dynamic_summary.md"), "w") as f:
        f.write(text)
    print(text)
    bad = [r for r in rows if r["feasible"] and not (r["losses_equal"] and r["within_budget"])]
    if bad:
        print(f"!!!! {len(bad)} budgeted runs differ from the unbudgeted run or exceeded the budget", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
