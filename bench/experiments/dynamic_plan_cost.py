#!/usr/bin/env python3
"""What a static planner pays on the dynamic models, against DTR's online
overhead (issue 8).

A static checkpointing planner (Checkmate's MILP, `dtrexec plan --solver
checkmate`) plans one fixed graph. When the computation changes from step to
step — a new sequence length, a new tree, the other branch — the step's
graph is new and must be traced and planned again before the step can run.
For each model this script draws N steps' inputs (seeded, distributed like
dtrexec's own per-step draws: lengths uniform in the --dim range, tree noise
and features uniform in [-1, 1)), and for each step:

  1. `dtrexec export MODEL --train --input ... -o GRAPH.json` (timed): the
     step's training graph;
  2. when that graph (nodes, costs, sizes, links) was not seen before,
     `dtrexec plan GRAPH --solver S --budget R --time-limit T --json`
     (timed, wall clock, model building included): a schedule at R times
     checkpoint-all's peak; its status (optimal, time_limit, infeasible...)
     and cost-model overhead are recorded. A graph seen before reuses its
     plan (a planner caching plans by graph pays nothing then).

Against that, one `dtrexec MODEL --train --steps N --budget R` run under DTR
(R of the unbudgeted peak over all steps, the same seed for both runs):
its dtr_overhead_seconds (heuristic search and metadata upkeep), step times
and cost-model slowdown, from --stats.

Writes dynamic_plan_cost.csv (one row per step and solver) and
dynamic_plan_cost.md into --out (bench/results).

    python3 bench/experiments/dynamic_plan_cost.py --dtrexec build/dtrexec [--steps 8]
        [--ratio 0.8] [--solvers checkmate] [--time-limit 60] [--models ...]
"""
import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(BENCH_DIR, "models"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

import make_dynamic  # noqa: E402
import runners  # noqa: E402

# (make_dynamic parameters, symbolic dimension ranges). Small: the MILP's
# size grows with the square of the graph's node count; activations above
# the weights, or no static schedule fits below the parameters' floor.
MODELS = {
    "lstm_var_len": (dict(batch=8, layers=1, embed=16, hidden=32, vocab=64), {"seq": (6, 16)}),
    "treelstm": (dict(leaves=12, embed=8, hidden=8, vocab=20, classes=5), {}),
    "early_exit": (dict(batch=256, inp=16, hidden=32, classes=10, late=4), {}),
}


class Runner:
    def __init__(self, dtrexec, tmp, timeout):
        self.dtrexec, self.tmp, self.timeout = dtrexec, tmp, timeout
        self.env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")

    def __call__(self, args, timeout=None):
        t0 = time.perf_counter()
        try:
            res = subprocess.run([self.dtrexec] + args, capture_output=True, text=True,
                                 timeout=timeout or self.timeout, env=self.env)
        except subprocess.TimeoutExpired:
            return None, time.perf_counter() - t0
        return res, time.perf_counter() - t0


def graph_key(path):
    """A digest of a step's graph: nodes (name, FLOPs, size, backward) and links.
    Measured times (cost_cpu) are left out: they differ from run to run."""
    with open(path) as f:
        g = json.load(f)
    nodes = sorted((n["id"], n["name"], n.get("cost_flops"), n.get("cost_ram"), n.get("backward"))
                   for n in g["nodes"])
    links = sorted((ln["source"], ln["target"]) for ln in g["links"])
    return hashlib.sha256(json.dumps([nodes, links]).encode()).hexdigest()[:16], len(nodes)


def draw_step(model, dims, rng, k, tmp):
    """Step k's inputs as .npy files; returns the --input arguments and a label."""
    bound = {d: int(rng.integers(lo, hi + 1)) for d, (lo, hi) in dims.items()}
    feeds = make_dynamic.sample_inputs(model, seed=int(rng.integers(1 << 31)), dims=bound)
    args = []
    for name, arr in feeds.items():
        p = os.path.join(tmp, f"step{k}-{name}.npy")
        np.save(p, arr)
        args += ["--input", f"{name}={p}"]
    label = ",".join(f"{d}={v}" for d, v in bound.items())
    if "merge_noise" in feeds:
        label = "tree " + "".join(map(str, make_dynamic.treelstm_merge_order(feeds["merge_noise"])))
    return args, label


def dtr_run(run, path, dims, steps, ratio, seed, tmp):
    """The DTR side: unbudgeted peak, then a budgeted run; stats of both."""
    dim_args = []
    for d, (lo, hi) in dims.items():
        dim_args += ["--dim", f"{d}={lo}:{hi}"]
    common = [path, "--train", "--steps", str(steps), "--optimizer", "sgd", "--seed", str(seed), "--threads", "1",
              "--fresh-inputs", "--quiet"] + dim_args
    out = {}
    for tag, extra in (("base", []), ("dtr", None)):
        stats = os.path.join(tmp, f"{tag}.json")
        if extra is None:
            extra = ["--budget", str(int(out["base"]["peak_bytes"] * ratio)), "--heuristic", "dtr"]
        res, _ = run(common + ["--stats", stats] + extra)
        if res is None or res.returncode:
            return out, (res.stderr.strip().splitlines()[-1] if res is not None and res.stderr.strip()
                         else "timeout")
        with open(stats) as f:
            out[tag] = json.load(f)
    return out, None


def model_rows(run, name, params, dims, args, tmp, log):
    model = make_dynamic.make(name, **params)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save_model(model, path)
    rng = np.random.default_rng(args.seed)
    rows, plans = [], {}
    for k in range(args.steps):
        inputs, label = draw_step(model, dims, rng, k, tmp)
        gpath = os.path.join(tmp, f"{name}-step{k}.json")
        # --fresh-inputs: targets drawn for this step's output shape (the
        # inputs themselves are the files given).
        res, export_s = run(["export", path, "--train", "--fresh-inputs", "--seed", str(args.seed)] + inputs
                            + ["-o", gpath])
        if res is None or res.returncode:
            why = (res.stderr.strip() or f"exit {res.returncode}") if res is not None else "timeout"
            log(f"  {name} step {k + 1}: export failed: {why}")
            rows += [{"model": name, "step": k + 1, "shape": label, "graph": "", "nodes": 0, "export_s": export_s,
                      "solver": solver, "ratio": args.ratio, "new_graph": False, "plan_s": 0.0,
                      "status": f"export failed ({why[:80]})", "overhead": None, "solve_s": None}
                     for solver in args.solvers]
            continue
        key, n_nodes = graph_key(gpath)
        for solver in args.solvers:
            row = {"model": name, "step": k + 1, "shape": label, "graph": key, "nodes": n_nodes,
                   "export_s": export_s, "solver": solver, "ratio": args.ratio}
            if (solver, key) in plans:
                row.update(new_graph=False, plan_s=0.0, **{f: plans[(solver, key)][f]
                                                         for f in ("status", "overhead", "solve_s")})
            else:
                spath = os.path.join(tmp, f"{name}-step{k}-{solver}.sched.json")
                res, plan_s = run(["plan", gpath, "--solver", solver, "--budget", f"{args.ratio}x", "-o", spath,
                                   "--time-limit", str(args.time_limit), "--json"],
                                  timeout=args.time_limit * 3 + 120)
                if res is None:
                    status, overhead, solve_s = "timeout", None, None
                elif res.returncode == 0:
                    rep = json.loads(res.stdout)
                    status, overhead, solve_s = rep["status"], rep["overhead"], rep.get("solve_seconds")
                else:
                    msg = res.stderr.strip()
                    status = ("infeasible" if res.returncode == 2 else f"error {res.returncode}")
                    if "time_limit" in msg:
                        status = "time_limit, no schedule"
                    overhead, solve_s = None, None
                plans[(solver, key)] = dict(status=status, overhead=overhead, solve_s=solve_s)
                row.update(new_graph=True, plan_s=plan_s, status=status, overhead=overhead, solve_s=solve_s)
            rows.append(row)
            log(f"  {name} step {k + 1} ({label}): {n_nodes} nodes, graph {key} "
                f"{'new' if row['new_graph'] else 'seen'}; export {export_s:.2f} s, {solver} "
                f"{row['plan_s']:.1f} s ({row['status']})")
    dtr, err = dtr_run(run, path, dims, args.steps, args.ratio, args.seed, tmp)
    if err:
        log(f"  {name}: DTR run failed: {err}")
    return rows, dtr, err


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})



def summary(rows, dtrs, args, meta):
    L = [f"# Static planning per new graph against DTR's online overhead ({meta['date']})", "",
         f"Command: `{meta['command']}` (source {meta['commit']})", "",
         f"Load average at start {meta['load0']}, at end {meta['load1']}; wall time {meta['wall']:.0f} s. "
         f"{args.steps} steps per model; static budget {args.ratio} of checkpoint-all's peak of each step's graph, "
         f"DTR budget {args.ratio} of the unbudgeted peak over all steps (heuristic dtr). The static side plans "
         f"the steps of seeded draws of its own (same distributions as dtrexec's per-step draws), the DTR side "
         f"trains {args.steps} steps with dtrexec's draws.", "",
         "| model | solver | steps | distinct graphs | nodes (min–max) | export s (sum) | planning s (sum) | "
         "planning s per new graph | statuses | plan overhead (cost model, mean) | DTR overhead s (sum) | "
         "DTR overhead s per step | DTR step s (mean) | DTR cost slowdown |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["model"] for r in rows):
        for solver in args.solvers:
            mine = [r for r in rows if r["model"] == name and r["solver"] == solver and r["graph"]]
            if not mine:
                L.append(f"| {name} | {solver} | 0 | — | — | — | — | — | export failed | — | — | — | — | — |")
                continue
            new = [r for r in mine if r["new_graph"]]
            statuses = {}
            for r in new:
                statuses[r["status"]] = statuses.get(r["status"], 0) + 1
            ovh = [r["overhead"] for r in new if r["overhead"] is not None]
            d = dtrs.get(name, {}).get("dtr")
            if d:
                n = len(d["step_seconds"])
                mc = d["total_compute"]
                dtr_cols = (f"{d['dtr_overhead_seconds']:.4f} | {d['dtr_overhead_seconds'] / n:.5f} | "
                            f"{sum(d['step_seconds']) / n:.3f} | "
                            f"{(mc + d['remat_compute']) / mc if mc else 1.0:.3f}")
            else:
                dtr_cols = "— | — | — | —"
            L.append(f"| {name} | {solver} | {len(mine)} | {len(new)} | "
                     f"{min(r['nodes'] for r in mine)}–{max(r['nodes'] for r in mine)} | "
                     f"{sum(r['export_s'] for r in mine):.2f} | {sum(r['plan_s'] for r in mine):.1f} | "
                     f"{sum(r['plan_s'] for r in new) / max(1, len(new)):.1f} | "
                     f"{', '.join(f'{k} ×{v}' for k, v in statuses.items())} | "
                     f"{f'{sum(ovh) / len(ovh):.3f}' if ovh else '—'} | {dtr_cols} |")
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtrexec", default=os.path.join(BENCH_DIR, "..", "build", "dtrexec"))
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "results"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--ratio", type=float, default=0.8)
    ap.add_argument("--solvers", default="checkmate", help="comma-separated `dtrexec plan` solvers")
    ap.add_argument("--time-limit", type=int, default=60, help="MILP time limit per graph (s)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per export or training run")
    args = ap.parse_args()
    args.solvers = args.solvers.split(",")
    os.makedirs(args.out, exist_ok=True)
    t0, load0 = time.time(), "%.2f %.2f %.2f" % os.getloadavg()

    def log(s):
        print(s, flush=True)

    rows, dtrs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        run = Runner(args.dtrexec, tmp, args.timeout)
        for name in args.models.split(","):
            params, dims = MODELS[name]
            r, dtr, _ = model_rows(run, name, params, dims, args, tmp, log)
            rows += r
            dtrs[name] = dtr
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "load0": load0, "load1": "%.2f %.2f %.2f" % os.getloadavg(),
            "wall": time.time() - t0,
            "commit": runners.source_commit(), "command": "python3 bench/experiments/dynamic_plan_cost.py " + " ".join(sys.argv[1:])}
    write_csv(os.path.join(args.out, "dynamic_plan_cost.csv"), rows,
              ["model", "step", "shape", "graph", "nodes", "new_graph", "export_s", "solver", "ratio", "plan_s",
               "solve_s", "status", "overhead"])
    text = summary(rows, dtrs, args, meta)
    with open(os.path.join(args.out, "dynamic_plan_cost.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
