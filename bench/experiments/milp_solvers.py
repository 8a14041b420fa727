#!/usr/bin/env python3
"""Checkmate's MILP (dtr/sim/milp.c's default form) solved by several MILP
solvers on the same model files: HiGHS (bench/solvers/milp_highs.py), SCIP and
CP-SAT through OR-Tools (bench/solvers/milp_ortools.py) and CBC
(bench/solvers/milp_cbc.py).

Step 1 (capture): per graph and budget, `dtrexec plan GRAPH --solver
checkmate --budget R` is run with this script as its solver
(DTRX_MILP_SCRIPT), which keeps the MILP's model file and its MIP start
and solves nothing; the LP relaxations (Checkmate's rounding) are left
unsolved too, so the start is the cheapest classic planner's schedule
(checkpoint-all, Chen, Griewank) that fits the model, or none.
Step 2 (solve): each solver's front end on the kept files, one process at
a time, with --verbose; per run: status, objective and bound as overheads
(over one plain pass of the graph), gap, wall and CPU seconds, the load
average before it, and from the solver's log the seconds to its first
incumbent (the start counts: with one, that is ~0), to its last
improvement and to its first dual bound.

    python3 bench/experiments/milp_solvers.py --dtrexec build/dtrexec --work /tmp/ms
        [--graphs vgg16-256-train.json:0.84,0.88 ...] [--solvers highs,scip,cpsat,cbc]
        [--time-limit 60] [--cpsat-workers 2] [--csv OUT.csv (appended)]
    python3 bench/experiments/milp_solvers.py --table OUT.csv      (the CSV as a markdown table)
    python3 bench/experiments/milp_solvers.py --retime OUT.csv WORK (the log times again, from WORK's kept logs)
"""
import argparse
import csv
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/
sys.path.insert(0, HERE)
from milp_speed import baseline_compute  # noqa: E402

FRONT = {"highs": ("milp_highs.py", []), "scip": ("milp_ortools.py", ["--backend", "scip"]),
         "cpsat": ("milp_ortools.py", ["--backend", "cpsat"]), "cbc": ("milp_cbc.py", [])}
FIELDS = ["graph", "ratio", "solver", "threads", "time_limit", "status", "overhead", "bound_overhead", "gap",
          "start_overhead", "wall_s", "cpu_s", "load", "first_inc_s", "last_inc_s", "first_bound_s"]


def capture_mode():
    """As dtrexec's solver script: keep the MILP and its start, solve nothing."""
    args = sys.argv[1:]
    model, answer = args[0], args[1]
    start = args[args.index("--start") + 1] if "--start" in args else None
    with open(model) as f:
        milp = "\nBinary" in f.read()
    if milp:
        tag = os.environ["DTRX_MILP_CAPTURE"]
        shutil.copy(model, tag + ".lp")
        if start:
            shutil.copy(start, tag + ".start")
    with open(answer, "w") as f:
        json.dump({"status": "time_limit", "has_solution": False}, f)
    return 0


def fnum(s):
    try:
        return float(s)
    except ValueError:
        return math.nan


def scip_events(text):
    incs, bounds = [], []
    for line in text.splitlines():
        m = re.search(r"feasible solution given by .*new primal bound (\S+)", line)
        if m:
            incs.append((0.0, fnum(m.group(1))))      # the MIP start, before presolving
        f = line.split("|")
        if len(f) < 15 or not re.match(r"^\D?\s*[\d.]+s$", f[0].strip()):
            continue
        t = float(re.sub(r"[^\d.]", "", f[0]))
        bounds.append((t, fnum(f[-4].strip())))
        incs.append((t, fnum(f[-3].strip())))
    return incs, bounds


def log_events(text, rules):
    """(incumbents, bounds) as (seconds, value) lists from a solver's log:
    each rule is a regex searched in every line and what a match gives,
    ("inc" or "bound", its time's group or None for 0 s, its value's group)."""
    found = {"inc": [], "bound": []}
    for line in text.splitlines():
        for pattern, gives in rules:
            m = re.search(pattern, line)
            if m:
                for kind, t, v in gives:
                    found[kind].append((float(m.group(t)) if t else 0.0, fnum(m.group(v))))
    return found["inc"], found["bound"]


CPSAT_RULES = [
    (r"^#(?:\d+|Bound)\s+([\d.]+)s\s+best:\S+\s+next:\[(\S+?),", [("bound", 1, 2)]),
    (r"^#\d+\s+([\d.]+)s\s+best:(\S+)\s+next:\[\S+?,", [("inc", 1, 2)]),
]
CBC_RULES = [
    (r"Continuous objective value is (\S+) - ([\d.]+) seconds", [("bound", 2, 1)]),
    (r"Cbc0012I Integer solution of (\S+) found .*\(([\d.]+) seconds\)", [("inc", 2, 1)]),
    (r"best possible (\S+) \(([\d.]+) seconds\)", [("bound", 2, 1)]),
]
HIGHS_RULES = [
    (r"MIP start solution is feasible: objective value is (\S+)", [("inc", None, 1)]),
    (r"^\s*[A-Za-z]?\s+\d+\s+\d+\s+\d+\s+[\d.]+%\s+(\S+)\s+(\S+)\s+\S+\s.*?([\d.]+)s\s*$",
     [("bound", 3, 1), ("inc", 3, 2)]),
]


def cpsat_events(text):
    return log_events(text, CPSAT_RULES)


def cbc_events(text):
    return log_events(text, CBC_RULES)


def highs_events(text):
    return log_events(text, HIGHS_RULES)


def times(solver, text, trivial):
    """Seconds (the solver's clock) to its first incumbent (a MIP start it
    accepted: 0), to its last improvement of it, and to its first bound
    above the trivial one (every node once): None when its log has none."""
    incs, bounds = EVENTS[solver](text)
    incs = [(t, v) for t, v in incs if math.isfinite(v)]
    first_inc = incs[0][0] if incs else None
    last_inc = None
    for (t0, v0), (t1, v1) in zip(incs, incs[1:]):
        if v1 < v0 - 1e-9 * abs(v0):
            last_inc = t1
    first_bound = next((t for t, v in bounds if math.isfinite(v) and v > trivial * (1 + 1e-9)), None)
    return first_inc, last_inc, first_bound


EVENTS = {"highs": highs_events, "scip": scip_events, "cpsat": cpsat_events, "cbc": cbc_events}


def start_cost(path, lp):
    """The start's objective, from its R values and the model's objective row."""
    if not os.path.exists(path):
        return None
    vals = {}
    with open(path) as f:
        for line in f:
            n, _, v = line.partition(" ")
            vals[n] = float(v)
    with open(lp) as f:
        text = f.read()
    obj = text[text.index("obj:") + 4:text.index("Subject To")]
    return sum(float(c) * vals.get(n, 0.0) for c, n in re.findall(r"\+ (\S+) (R\d+_\d+)", obj))


def solve(a, solver, graph, ratio, lp, start, tmp):
    script, extra = FRONT[solver]
    answer = os.path.join(tmp, "answer.json")
    if os.path.exists(answer):
        os.unlink(answer)
    threads = a.cpsat_workers if solver == "cpsat" else 1
    cmd = [sys.executable, os.path.join(BENCH_DIR, "solvers", script), lp, answer, "--time-limit", str(a.time_limit),
           "--threads", str(threads), "--verbose"] + extra + (["--start", start] if os.path.exists(start) else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(tmp, f"{os.path.basename(lp)[:-3]}-{solver}.log"), "w") as f:
        f.write(res.stdout + res.stderr)
    base = baseline_compute(graph)
    row = {"graph": os.path.basename(graph), "ratio": ratio, "solver": solver, "threads": threads,
           "time_limit": a.time_limit, "wall_s": wall, "load": load,
           "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}
    sc = start_cost(start, lp)
    row["start_overhead"] = sc / base if sc is not None else None
    row["first_inc_s"], row["last_inc_s"], row["first_bound_s"] = times(solver, res.stdout + res.stderr, base)
    if res.returncode or not os.path.exists(answer):
        row["status"] = f"error {res.returncode}"
        return row
    with open(answer) as f:
        ans = json.load(f)
    row["status"] = ans.get("status")
    row["overhead"] = ans["objective"] / base if "objective" in ans else None
    row["bound_overhead"] = ans["bound"] / base if "bound" in ans else None
    row["gap"] = ans.get("gap")
    return row


def retime(path, work, data=os.path.join(BENCH_DIR, "..", "..", "shared", "data", "checkmate-graphs")):
    rows = list(csv.DictReader(open(path)))
    for r in rows:
        log = os.path.join(work, f"{r['graph'][:-5]}-{float(r['ratio']):g}-{r['solver']}.log")
        if os.path.exists(log):
            with open(log) as f:
                graph = os.path.join(data, r["graph"])
                trivial = baseline_compute(graph if os.path.exists(graph) else os.path.join(BENCH_DIR, "results", r["graph"]))
                r["first_inc_s"], r["last_inc_s"], r["first_bound_s"] = times(r["solver"], f.read(), trivial)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    return 0


def table(path):
    def f(v, spec):
        try:
            return format(float(v), spec)
        except ValueError:
            return "-"
    print("| graph | ratio | solver | thr | limit s | status | overhead | bound | gap | start | wall s | cpu s | "
          "load | 1st inc. s | last inc. s | 1st bound s |")
    print("|" + "---|" * 16)
    for r in csv.DictReader(open(path)):
        print("| " + " | ".join([r["graph"].split("-")[0], r["ratio"], r["solver"], r["threads"],
                                 f(r["time_limit"], ".0f"), r["status"], f(r["overhead"], ".4f"),
                                 f(r["bound_overhead"], ".4f"), f(r["gap"], ".4f"), f(r["start_overhead"], ".4f"),
                                 f(r["wall_s"], ".1f"), f(r["cpu_s"], ".1f"), f(r["load"], ".1f"),
                                 f(r["first_inc_s"], ".1f"), f(r["last_inc_s"], ".1f"),
                                 f(r["first_bound_s"], ".1f")]) + " |")
    return 0


def main():
    if os.environ.get("DTRX_MILP_CAPTURE"):
        return capture_mode()
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        return table(sys.argv[2])
    if len(sys.argv) == 4 and sys.argv[1] == "--retime":
        return retime(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtrexec", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--graphs", nargs="+", required=True)
    ap.add_argument("--solvers", default="highs,scip,cpsat,cbc")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--cpsat-workers", type=int, default=2)
    ap.add_argument("--data", default=os.path.join(BENCH_DIR, "..", "..", "shared", "data", "checkmate-graphs"))
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    new = not os.path.exists(a.csv)
    with open(a.csv, "a", newline="") as out:
        w = csv.DictWriter(out, fieldnames=FIELDS)
        if new:
            w.writeheader()
        for spec in a.graphs:
            name, _, ratios = spec.partition(":")
            graph = name if os.path.exists(name) else os.path.join(a.data, name)
            for ratio in ratios.split(","):
                tag = os.path.join(a.work, f"{os.path.basename(graph)[:-5]}-{ratio}")
                lp, start = tag + ".lp", tag + ".start"
                if not os.path.exists(lp):
                    env = dict(os.environ, DTRX_MILP_SCRIPT=os.path.abspath(__file__), DTRX_MILP_CAPTURE=tag)
                    subprocess.run([a.dtrexec, "plan", graph, "--solver", "checkmate", "--budget", ratio,
                                    "-o", tag + ".capture.json", "--time-limit", "10"], env=env,
                                   capture_output=True)
                if not os.path.exists(lp):
                    print(f"{graph} {ratio}: no MILP (checkpoint-all fits or no model)", file=sys.stderr)
                    continue
                for solver in a.solvers.split(","):
                    row = solve(a, solver, graph, float(ratio), lp, start, a.work)
                    w.writerow({k: row.get(k) for k in FIELDS})
                    out.flush()
                    print(" ".join(f"{k}={row.get(k)}" for k in FIELDS if k != "graph"), row["graph"], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
