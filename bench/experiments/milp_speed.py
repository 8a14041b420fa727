#!/usr/bin/env python3
"""Checkmate's MILP on Checkmate's graphs: solve times, bounds and gaps, next
to the solve times Checkmate's paper published.

Runs `dtrexec plan GRAPH --solver checkmate --budget R --time-limit L
--threads 1` per graph, budget and variant, variants interleaved per budget
so that both see the same machine load:

  paper    DTRX_MILP_FORM=paper: Checkmate's rows as published (two hazard
           rows per free variable), the rounded LP as the only MIP start:
           the formulation before this change
  default  one hazard row per free variable, outputs never recomputed, and
           the cheapest of the rounded LP and the classic planners
           (checkpoint-all, Chen, Griewank) as the MIP start
  cpsat-start  a portfolio: first bench/solvers/plan_moccasin.py (Moccasin's CP
           model on CP-SAT, first computes in node order so that its
           schedule maps onto Checkmate's stages, hinted with chen-greedy,
           or with DTR's staged run where no Chen segmentation fits)
           for --cpsat-time seconds, then the default MILP with that
           schedule as its MIP start (`dtrexec plan --start`) for what is
           left of --time-limit; CP-SAT finds near-optimal schedules fast
           but proves no useful bound, HiGHS proves bounds but finds few
           schedules, so each does what it is good at

Per run: status, overhead of the schedule returned (its compute over one
plain pass), the MILP's bound as an overhead, the gap, the solver's
seconds (LP rounding included), the wall time, the CPU seconds of dtrexec
and its solver process (the machine is shared: wall seconds depend on the
load, CPU seconds much less), the load average before the run, and from
HiGHS's log the seconds to its first dual bound (the root LP: before it
HiGHS has no bound at all) and to the last improvement of its incumbent.
Writes milp_speed.csv and milp_speed.md into --out.

    python3 bench/experiments/milp_speed.py --dtrexec build/dtrexec
        [--graphs vgg16-256-train.json:0.84,0.88 mobilenet-512-train.json:0.5 ...]
        [--variants default,paper,cpsat-start] [--time-limit 600] [--cpsat-time 240]
        [--data ../shared/data/checkmate-graphs]
"""
import argparse
import csv
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/
VARIANTS = {"paper": {"DTRX_MILP_FORM": "paper"}, "default": {}, "cpsat-start": {}}
# the budgets `dtrexec bench` used for bench/results/{vgg16,mobilenet,resnet50}.csv
# (1.0 is left out: checkpoint-all fits, no model is solved)
GRAPHS = ["vgg16-256-train.json:0.84,0.88,0.92,0.96", "mobilenet-512-train.json:0.25,0.35,0.5,0.7,0.85",
          "resnet50-256-train.json:0.3,0.5"]
# one row of HiGHS's branch-and-bound log: ... BestBound BestSol Gap | ... Time
LOG_ROW = re.compile(r"^\s*(?P<src>[A-Za-z]?)\s+\d+\s+\d+\s+\d+\s+[\d.]+%\s+(?P<bound>\S+)\s+(?P<sol>\S+)\s+"
                     r"\S+\s.*?(?P<time>[\d.]+)s\s*$")


def log_times(text):
    """Seconds (HiGHS's clock) to the first finite dual bound and to the last
    new incumbent, from a --verbose log; None when absent."""
    first_bound = last_sol = None
    prev_sol = None
    for line in text.splitlines():
        m = LOG_ROW.match(line)
        if not m:
            continue
        t = float(m.group("time"))
        try:
            b = float(m.group("bound"))
        except ValueError:
            b = -math.inf
        if first_bound is None and math.isfinite(b):
            first_bound = t
        if m.group("sol") != prev_sol:
            if prev_sol is not None:
                last_sol = t
            prev_sol = m.group("sol")
    return first_bound, last_sol


def baseline_compute(path):
    with open(path) as f:
        g = json.load(f)
    tag = g.get("graph", {}).get("cost_tag") if isinstance(g.get("graph"), dict) else None
    return sum(n.get("cost_cpu", n.get(tag or "duration", 0)) for n in g["nodes"])


def cpsat_start(a, graph, ratio, tmp):
    """Phase one of cpsat-start: CP-SAT's schedule (a file in tmp) and its
    overhead, or (None, None) when it found none."""
    hint, sched = os.path.join(tmp, "hint.json"), os.path.join(tmp, "cpsat.json")
    for p in (hint, sched):
        if os.path.exists(p):
            os.unlink(p)
    cmd = [sys.executable, os.path.join(BENCH_DIR, "solvers", "plan_moccasin.py"), graph, "--budget", str(ratio), "-o", sched,
           "--dtrexec", a.dtrexec, "--time-limit", str(a.cpsat_time), "--workers", str(a.cpsat_workers),
           "--fix-order", "topo"]
    # the hint: chen-greedy's schedule, or where no Chen segmentation fits,
    # DTR's (dtr-eq) run mapped onto Checkmate's stages; without a hint
    # CP-SAT found nothing in 240 s at MobileNet 0.25
    if subprocess.run([a.dtrexec, "plan", graph, "--solver", "chen-greedy", "--budget", str(ratio), "-o", hint],
                      capture_output=True).returncode == 0 or \
            subprocess.run([a.dtrexec, "sim", graph, "--heuristic", "dtr-eq", "--budget", str(ratio),
                            "--schedule-out", hint, "--staged"], capture_output=True).returncode == 0:
        cmd += ["--hint", hint]
    if subprocess.run(cmd, capture_output=True, text=True).returncode or not os.path.exists(sched):
        return None, None
    with open(sched) as f:
        obj = json.load(f)["solver"].get("objective")
    return sched, (obj / baseline_compute(graph) if obj is not None else None)


def run_one(a, graph, ratio, variant, tmp):
    out = os.path.join(tmp, "s.json")
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ, **VARIANTS[variant])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    start, start_overhead, limit = None, None, a.time_limit
    if variant == "cpsat-start":
        start, start_overhead = cpsat_start(a, graph, ratio, tmp)
        limit = max(1.0, a.time_limit - (time.monotonic() - t0)) if a.time_limit > 0 else 0
    cpsat_s = time.monotonic() - t0
    res = subprocess.run([a.dtrexec, "plan", graph, "--solver", "checkmate", "--budget", str(ratio), "-o", out,
                          "--time-limit", f"{limit:.1f}", "--threads", "1", "--verbose"] +
                         (["--start", start] if start else []), capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    first_bound, last_sol = log_times(res.stdout)
    row = {"graph": os.path.basename(graph), "ratio": ratio, "variant": variant, "wall_s": wall,
           "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), "load": load,
           "first_bound_s": first_bound, "last_incumbent_s": last_sol}
    if variant == "cpsat-start":
        row.update({"cpsat_s": cpsat_s, "cpsat_overhead": start_overhead})
    if res.returncode:
        row["status"] = "infeasible" if res.returncode == 2 else f"error {res.returncode}"
        row["note"] = res.stderr.strip().splitlines()[-1][:200] if res.stderr.strip() else ""
        return row
    with open(out) as f:
        sv = json.load(f)["solver"]
    base = baseline_compute(graph)
    row.update({"status": sv.get("status"), "backend": sv.get("backend"), "solve_s": sv.get("solve_seconds"),
                "overhead": sv["objective"] / base if sv.get("objective") is not None else None,
                "bound_overhead": sv["bound"] / base if sv.get("bound") is not None else None,
                "gap": sv.get("gap")})
    # solve_s: the whole solve, CP-SAT's phase included
    if variant == "cpsat-start" and row["solve_s"] is not None:
        row["solve_s"] += cpsat_s
    return row


def fmt(v, spec=".4f"):
    return "-" if v is None else format(v, spec)


# What Checkmate published about its solve times, as found (see milp_speed.md)
PUBLISHED = [
    "Checkmate (Jain et al., MLSys 2020, arXiv:1910.02653), abstract: Checkmate \"solves for optimal "
    "rematerialization schedules in reasonable times (under an hour) using off-the-shelf MILP solvers\" "
    "(Gurobi); the stored copies of the paper reachable from here (arXiv abstract page, the MLSys PDF's "
    "first pages) give no per-model, per-budget table, so the comparison is against that hour per solve.",
    "Checkmate's artifact notes (github.com/parasj/checkmate, mlsys20_artifact.md): the VGG19 maximum-batch-size "
    "MILP, a harder variant with the batch size as a variable, takes \"up to 10 minutes on 12 cores\".",
    "Checkmate's budget-sweep script, which makes the paper's budget sweeps (github.com/parasj/checkmate, "
    "experiments/experiment_budget_sweep.py): every MILP solve gets Gurobi's TimeLimit from --ilp-time-limit, "
    "3600 s by default, and 12 threads (4 on a machine of 12 cores or fewer), seeded with the cheapest baseline "
    "schedule within the budget (checkmate/core/solvers/gurobi_solver.py: with a seed, Gurobi first runs 300 s "
    "with the seed's zeros of S imposed, then the full model up to the limit; model construction is not timed); "
    "a solve that reaches the limit keeps its incumbent, which is plotted "
    "like a proven one, and no gap is reported. Unless --exact-ilp-solve is given, the costs carry 1 % Gaussian "
    "noise (eps_noise=0.01). So the published minutes per budget are at most 65 (5 seeded, then 60), on 4-12 "
    "cores, and not every published point need be proven optimal.",
]

# Checkmate's solver time per budget (experiment_budget_sweep.py's defaults,
# gurobi_solver.py's solve()): given a seed schedule, Gurobi first runs 300 s
# with the seed's zeros of S imposed, then up to --ilp-time-limit = 3600 s
# more; model construction is not timed. Here a run counts when all of it,
# CP-SAT, model writing and solving, ended within that wall time.
HOUR = 300.0 + 3600.0


def run_rank(r):
    """Sort key of runs of one budget: proven first, then the smallest gap,
    then the cheapest schedule."""
    return (r.get("status") != "optimal", r["gap"] if r.get("gap") is not None else math.inf, r["overhead"])


def hour_summary(rows, cap=HOUR):
    """Per (graph, ratio): the best run that ended within `cap` seconds of wall
    time (Checkmate's protocol: a time limit per budget, the incumbent kept),
    and the first proof of optimality within it. Best = proven first, then the
    smallest gap, then the cheapest schedule. Budgets with no run within the
    cap get run None."""
    out = {}
    for r in rows:
        key = (r["graph"], r["ratio"])
        entry = out.setdefault(key, {"graph": r["graph"], "ratio": r["ratio"], "run": None, "proof_s": None})
        if r.get("wall_s") is None or r["wall_s"] > cap or r.get("overhead") is None:
            continue
        if r.get("status") == "optimal" and (entry["proof_s"] is None or r["wall_s"] < entry["proof_s"]):
            entry["proof_s"] = r["wall_s"]
        if entry["run"] is None or run_rank(r) < run_rank(entry["run"]):
            entry["run"] = r
    return [out[k] for k in sorted(out, key=lambda k: (k[0], -k[1]))]


def hour_lines(rows):
    """The markdown section of hour_summary."""
    summary = hour_summary(rows)
    L = ["## Within Checkmate's hour per budget", "",
         f"Per budget, the best run above that ended within {HOUR:.0f} s of wall time, everything included, as "
         "Checkmate's budget sweep limits each solve (Gurobi: 300 s with the seed schedule's zeros imposed, then "
         "an hour; model construction untimed): `proven`: optimal within it, with the wall seconds of the first "
         "proof; otherwise the schedule and the certified gap it ended with.", "",
         "| graph | ratio | within the hour | overhead | bound | gap | wall s | variant |",
         "|---|---|---|---|---|---|---|---|"]
    for e in summary:
        r = e["run"]
        if r is None:
            L.append(f"| {e['graph']} | {e['ratio']:g} | no run within the hour | - | - | - | - | - |")
            continue
        verdict = f"proven ({e['proof_s']:.0f} s)" if e["proof_s"] is not None else "schedule, gap certified"
        L.append(f"| {e['graph']} | {e['ratio']:g} | {verdict} | {fmt(r.get('overhead'))} | "
                 f"{fmt(r.get('bound_overhead'))} | {fmt(r.get('gap'))} | {r['wall_s']:.1f} | {r['variant']} |")
    proven = sum(e["proof_s"] is not None for e in summary)
    ran = sum(e["run"] is not None for e in summary)
    gaps = [e["run"]["gap"] for e in summary if e["run"] is not None and e["proof_s"] is None
            and e["run"].get("gap") is not None]
    L += ["", f"Budgets: {len(summary)}; a schedule within the hour: {ran}; proven optimal within it: {proven}"
          + (f"; the others' gaps: {min(gaps) * 100:.2f}-{max(gaps) * 100:.2f} %." if gaps else ".")]
    return L


def write_outputs(a, rows, load0, t0):
    os.makedirs(a.out, exist_ok=True)
    fields = ["graph", "ratio", "variant", "status", "overhead", "bound_overhead", "gap", "solve_s", "wall_s",
              "cpu_s", "load", "first_bound_s", "last_incumbent_s", "cpsat_s", "cpsat_overhead", "backend", "note"]
    with open(os.path.join(a.out, "milp_speed.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if r.get(k) is None else r[k] for k in fields})
    argv = sys.argv[1:]
    if "--note" in argv:  # the note is printed as a sentence below
        k = argv.index("--note")
        del argv[k:k + 2]
    L = ["# Checkmate's MILP solve times (HiGHS, one thread) next to Checkmate's published ones", "",
         f"`python3 bench/experiments/milp_speed.py {' '.join(argv)}`, {time.strftime('%Y-%m-%d %H:%M')}, "
         f"load average {load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end "
         f"({time.monotonic() - t0:.0f} s); HiGHS {a.highs}, one thread, "
         + ("each run's time limit as given below" if a.from_csv else f"{a.time_limit:g} s per budget")
         + " (LP rounding and classic starts included) on the shared 2-core machine. Overheads are the schedule's "
         "compute over one plain pass; `bound`: the MILP's lower bound as an overhead (- : HiGHS had not "
         "finished its root LP); gap = (objective - bound) / objective. cpu s: dtrexec and its solver process "
         "together; load: the 1-minute load average before the run (2 cores: above 2 the solver waits); "
         "1st bound s / last inc. s: HiGHS's clock at its first dual bound and at its last new incumbent "
         "(- : none in the log; the start given is not counted). cpsat-start: CP-SAT's phase (cp s, the "
         "overhead of its schedule: cp) is included in solve s, wall s and cpu s; HiGHS's clock starts after it."
         + (f" {a.note}" if a.note else ""), "",
         "## Published", ""] + [f"- {p}" for p in PUBLISHED] + ["",
         "## Measured", "",
         "| graph | ratio | variant | status | overhead | bound | gap | solve s | wall s | cpu s | load | "
         "1st bound s | last inc. s | cp s | cp | start |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        L.append(f"| {r['graph']} | {r['ratio']:g} | {r['variant']} | {r['status']} | {fmt(r.get('overhead'))} | "
                 f"{fmt(r.get('bound_overhead'))} | {fmt(r.get('gap'))} | {fmt(r.get('solve_s'), '.1f')} | "
                 f"{r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['load']:.1f} | {fmt(r.get('first_bound_s'), '.1f')} | "
                 f"{fmt(r.get('last_incumbent_s'), '.1f')} | {fmt(r.get('cpsat_s'), '.1f')} | "
                 f"{fmt(r.get('cpsat_overhead'))} | {r.get('backend', r.get('note', ''))} |")
    L += [""] + hour_lines(rows)
    with open(os.path.join(a.out, "milp_speed.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtrexec", required=True)
    ap.add_argument("--graphs", nargs="+", default=GRAPHS)
    ap.add_argument("--data", default=os.path.join(BENCH_DIR, "..", "..", "shared", "data", "checkmate-graphs"))
    ap.add_argument("--variants", default="default")
    ap.add_argument("--time-limit", type=float, default=600, help="per solve, cpsat-start's CP-SAT phase included")
    ap.add_argument("--cpsat-time", type=float, default=240, help="cpsat-start: CP-SAT's seconds")
    ap.add_argument("--cpsat-workers", type=int, default=2, help="cpsat-start: CP-SAT's workers")
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "results"))
    ap.add_argument("--note", default="", help="a sentence added to the report's header")
    ap.add_argument("--from-csv", nargs="+", metavar="CSV",
                    help="no runs: the rows of earlier runs' milp_speed.csv (runs made in parallel), one report")
    a = ap.parse_args()
    a.dtrexec = os.path.abspath(a.dtrexec)
    try:
        import highspy
        a.highs = highspy.Highs().version()
    except Exception:  # the version is only reported
        a.highs = "?"
    variants = a.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"--variants: unknown variant {v!r} (known: {', '.join(VARIANTS)})")
    load0, t0 = os.getloadavg()[0], time.monotonic()
    rows = []
    if a.from_csv:
        for path in a.from_csv:
            for r in csv.DictReader(open(path)):
                for k, v in list(r.items()):
                    if k in ("graph", "variant", "status", "backend", "note"):
                        r[k] = v
                    else:
                        r[k] = float(v) if v not in ("", None) else None
                rows.append(r)
        rows.sort(key=lambda r: (r["graph"], -r["ratio"]))
        write_outputs(a, rows, load0, t0)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.graphs:
            name, _, ratios = spec.partition(":")
            graph = name if os.path.exists(name) else os.path.join(a.data, name)
            for ratio in [float(r) for r in ratios.split(",")]:
                for v in variants:
                    r = run_one(a, graph, ratio, v, tmp)
                    rows.append(r)
                    print(f"{r['graph']} {ratio} {v:<8} {r['status']:<11} overhead {fmt(r.get('overhead'))} "
                          f"bound {fmt(r.get('bound_overhead'))} gap {fmt(r.get('gap'))} solve "
                          f"{fmt(r.get('solve_s'), '.1f')} s wall {r['wall_s']:.1f} s cpu {r['cpu_s']:.1f} s "
                          f"load {r['load']:.1f} 1st bound {fmt(r.get('first_bound_s'), '.1f')} s "
                          f"({r.get('backend', r.get('note', ''))})", flush=True)
                    write_outputs(a, rows, load0, t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
