#!/usr/bin/env python3
"""Checkmate's MILP on the big graphs: before/after solve times and gaps.

Runs `dtrexec plan GRAPH --solver checkmate --budget R --time-limit L
--threads 1` per graph, budget and variant, variants interleaved per budget
so that both see the same machine load:

  paper    DTRX_MILP_FORM=paper: Checkmate's rows as published (two hazard
           rows per free variable), the rounded LP as the only MIP start:
           the formulation before this change
  default  one hazard row per free variable, outputs never recomputed, and
           the cheapest of the rounded LP and the classic planners
           (checkpoint-all, Chen, Griewank) as the MIP start

Per run: status, overhead of the schedule returned (its compute over one
plain pass), the MILP's bound as an overhead, the gap, the solver's
seconds (LP rounding included), the wall time, and the CPU seconds of
dtrexec and its solver process (the machine is shared: wall seconds depend
on the load, CPU seconds much less). Writes milp_speed.csv and
milp_speed.md into --out.

    python3 bench/milp_speed.py --dtrexec build/dtrexec
        [--graphs mobilenet-512-train.json:0.5,0.7 resnet50-256-train.json:0.5]
        [--variants paper,default] [--time-limit 120] [--data ../shared/data/checkmate-graphs]
"""
import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = {"paper": {"DTRX_MILP_FORM": "paper"}, "default": {}}


def baseline_compute(path):
    with open(path) as f:
        g = json.load(f)
    tag = g.get("graph", {}).get("cost_tag") if isinstance(g.get("graph"), dict) else None
    return sum(n.get("cost_cpu", n.get(tag or "duration", 0)) for n in g["nodes"])


def run_one(a, graph, ratio, variant, tmp):
    out = os.path.join(tmp, "s.json")
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ, **VARIANTS[variant])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    res = subprocess.run([a.dtrexec, "plan", graph, "--solver", "checkmate", "--budget", str(ratio), "-o", out,
                          "--time-limit", str(a.time_limit), "--threads", "1"], capture_output=True, text=True,
                         env=env)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row = {"graph": os.path.basename(graph), "ratio": ratio, "variant": variant, "wall_s": wall,
           "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}
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
    return row


def fmt(v, spec=".4f"):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtrexec", required=True)
    ap.add_argument("--graphs", nargs="+",
                    default=["mobilenet-512-train.json:0.5,0.7", "resnet50-256-train.json:0.5"])
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "shared", "data", "checkmate-graphs"))
    ap.add_argument("--variants", default="paper,default")
    ap.add_argument("--time-limit", type=float, default=120)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    a.dtrexec = os.path.abspath(a.dtrexec)
    variants = a.variants.split(",")
    load0, t0 = os.getloadavg()[0], time.monotonic()
    rows = []
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
                          f"({r.get('backend', r.get('note', ''))})", flush=True)
    os.makedirs(a.out, exist_ok=True)
    fields = ["graph", "ratio", "variant", "status", "overhead", "bound_overhead", "gap", "solve_s", "wall_s",
              "cpu_s", "backend", "note"]
    with open(os.path.join(a.out, "milp_speed.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if r.get(k) is None else r[k] for k in fields})
    L = ["# Checkmate's MILP: formulation and start, before and after", "",
         f"`python3 bench/milp_speed.py {' '.join(sys.argv[1:])}`, {time.strftime('%Y-%m-%d %H:%M')}, "
         f"load average {load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end "
         f"({time.monotonic() - t0:.0f} s); HiGHS, one thread, {a.time_limit:g} s per budget "
         "(LP rounding included). Overheads are the schedule's compute over one plain pass; `bound`: the "
         "MILP's lower bound as an overhead; gap = (objective - bound) / objective. cpu s: dtrexec and its "
         "solver process together.", "",
         "| graph | ratio | variant | status | overhead | bound | gap | solve s | wall s | cpu s | start |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        L.append(f"| {r['graph']} | {r['ratio']:g} | {r['variant']} | {r['status']} | {fmt(r.get('overhead'))} | "
                 f"{fmt(r.get('bound_overhead'))} | {fmt(r.get('gap'))} | {fmt(r.get('solve_s'), '.1f')} | "
                 f"{r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r.get('backend', r.get('note', ''))} |")
    with open(os.path.join(a.out, "milp_speed.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
