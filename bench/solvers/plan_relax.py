#!/usr/bin/env python3
"""Lower bounds and infeasibility proofs for Checkmate's MILP from a relaxed
graph: the same graph with every output smaller than --below counted as 0
bytes (workspaces, kept bytes and parameters unchanged).

Every schedule of the graph is a schedule of the relaxed graph, with the
same compute and no more memory at any step, so
  - the relaxed MILP's optimum (or its dual bound, when the time limit
    stops it) is a lower bound of the graph's optimum at that budget;
  - a relaxed MILP that is infeasible proves that no schedule (of
    Checkmate's frontier-advancing kind) of the graph fits the budget.
With the small outputs at 0 bytes the relaxed MILP is much smaller: bench/
milp.c fixes a value of no bytes as kept from its stage on (keeping it
costs nothing), so only the large values are left to decide. The
relaxation is weaker the more bytes it drops; try several --below.

A case split goes further (--zero NAMES --reserve BYTES): the named
outputs also count as 0 bytes and the budget shrinks by BYTES. That is a
relaxation only of the schedules in which the named outputs together
hold at least BYTES at every step; the caller proves that for the case at
hand (bench/results/plan_goal.md's notes do it for ResNet-18 at 0.7) and
bounds the other cases separately.

    python3 bench/solvers/plan_relax.py GRAPH --budget BYTES|RATIO --below BYTES
        [--zero NAME,NAME... --reserve BYTES]
        [--dtrexec build/dtrexec] [--time-limit 600] [--threads 1]
        [--collect MODEL RATIO [--results bench/results]]

RATIO: of the graph's own checkpoint-all peak (not the relaxed graph's).
Prints one JSON object: status (infeasible | optimal | time_limit |
no_bound), bound_overhead (a valid lower bound of the graph's optimum, as
an overhead over one plain pass), relaxed_best_overhead (the relaxed
MILP's incumbent: not a schedule of the graph), the relaxed MILP's
seconds and how many outputs kept their bytes. --collect appends the
result to plan_goal_milp.csv for bench/experiments/plan_goal.py. Exit status: 0
done, 1 bad input, 3 the planner failed otherwise.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/


def fail(msg, code=1):
    print(f"plan_relax.py: {msg}", file=sys.stderr)
    sys.exit(code)


def plan(dtrexec, graph, solver, budget, extra=()):
    """`dtrexec plan`: (exit code, JSON summary or None, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [dtrexec, "plan", graph, "--solver", solver, "-o", os.path.join(tmp, "s.json"), "--json"]
        if budget is not None:
            cmd += ["--budget", str(budget)]
        res = subprocess.run(cmd + list(extra), capture_output=True, text=True)
    try:
        js = json.loads(res.stdout) if res.returncode == 0 else None
    except ValueError:
        js = None
    return res.returncode, js, res.stderr.strip()


def budget_bytes(a):
    text = a.budget.rstrip("x")
    try:
        value = float(text)
    except ValueError:
        fail(f"--budget {a.budget}: bytes or a ratio of checkpoint-all's peak")
    if value <= 0:
        fail(f"--budget {a.budget}: must be positive")
    if value > 1.5:
        return int(value)
    rc, js, err = plan(a.dtrexec, a.graph, "checkpoint-all", None)
    if rc or not js:
        fail(f"{a.graph}: checkpoint-all failed: {err}", 1 if rc == 1 else 3)
    return int(value * js["baseline_peak_bytes"])


def relaxed_graph(path, below, zero, out):
    try:
        with open(path) as f:
            g = json.load(f)
        nodes = g["nodes"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{path}: not a Checkmate node-link graph ({e})")
    kept = 0
    missing = set(zero) - {n.get("name") for n in nodes}
    if missing:
        fail(f"{path}: no node named {', '.join(sorted(missing))}")
    for n in nodes:
        if n.get("cost_ram", 0) < below or n.get("name") in zero:
            n["cost_ram"] = 0
        else:
            kept += 1
    g.setdefault("graph", {})["relaxed"] = f"outputs below {below} bytes counted as 0 (bench/solvers/plan_relax.py)"
    with open(out, "w") as f:
        json.dump(g, f)
    return kept, len(nodes)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("--budget", required=True)
    ap.add_argument("--below", type=int, required=True)
    ap.add_argument("--dtrexec", default=os.path.join(BENCH_DIR, "..", "build", "dtrexec"))
    ap.add_argument("--zero", default="")
    ap.add_argument("--reserve", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=600)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--collect", nargs=2, metavar=("MODEL", "RATIO"))
    ap.add_argument("--results", default=os.path.join(BENCH_DIR, "results"))
    a = ap.parse_args()
    if a.below < 0:
        fail("--below must be >= 0")
    zero = [z for z in a.zero.split(",") if z]
    if a.reserve < 0 or (a.reserve and not zero):
        fail("--reserve: a number of bytes >= 0, and only with --zero")
    budget = budget_bytes(a)
    if a.reserve >= budget:
        fail(f"--reserve {a.reserve}: not below the budget of {budget} bytes")
    with tempfile.TemporaryDirectory() as tmp:
        relaxed = os.path.join(tmp, "relaxed.json")
        kept, n = relaxed_graph(a.graph, a.below, set(zero), relaxed)
        rc, js, err = plan(a.dtrexec, relaxed, "checkmate", budget - a.reserve,
                           ["--time-limit", f"{a.time_limit:g}", "--threads", str(a.threads)])
    out = {"graph": a.graph, "budget_bytes": budget, "below": a.below, "zero": zero, "reserve": a.reserve,
           "outputs_kept": kept, "nodes": n}
    if rc == 2 and any(w in err for w in ("infeasible", "below what any", "parameters alone")):
        out.update(status="infeasible", bound_overhead=None, relaxed_best_overhead=None,
                   proof=f"the relaxed MILP is infeasible: no schedule of the graph fits {budget} bytes", message=err)
    elif rc == 0 and js:
        gap = js.get("gap")
        if js["status"] == "optimal":
            bound = js["overhead"]
        elif gap is not None:
            bound = js["overhead"] * (1 - gap)
        else:
            bound = None
        out.update(status=js["status"] if bound is not None else "no_bound", bound_overhead=bound,
                   relaxed_best_overhead=js["overhead"], seconds=js.get("solve_seconds"))
    elif rc == 2:
        # the time limit stopped the MILP before any schedule: no bound here
        out.update(status="no_bound", bound_overhead=None, relaxed_best_overhead=None, message=err)
    else:
        fail(f"dtrexec plan on the relaxed graph failed (exit {rc}): {err}", 1 if rc == 1 else 3)
    print(json.dumps(out))
    if a.collect:
        path = os.path.join(a.results, "plan_goal_milp.csv")
        new = not os.path.exists(path)
        with open(path, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["model", "ratio", "status", "overhead", "bound_overhead", "solve_s",
                                              "note"])
            if new:
                w.writeheader()
            what = ("infeasible (proven)" if out["status"] == "infeasible" else
                    f"{out['status']}, relaxed optimum or bound {out['bound_overhead']:.4f}"
                    if out["bound_overhead"] is not None else out["status"])
            w.writerow({"model": a.collect[0], "ratio": a.collect[1],
                        "status": "infeasible" if out["status"] == "infeasible" else "relaxation",
                        "overhead": "", "bound_overhead": out["bound_overhead"] or "",
                        "solve_s": out.get("seconds") or "",
                        "note": f"relaxation: outputs below {a.below} bytes as 0"
                                + (f", {len(zero)} more as 0 and the budget {a.reserve} bytes less (a case)"
                                   if zero else "")
                                + f" ({kept} of {n} kept), "
                                f"HiGHS (limit {a.time_limit:g} s): {what} (bench/solvers/plan_relax.py)"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
