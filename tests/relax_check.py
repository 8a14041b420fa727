#!/usr/bin/env python3
"""bench/solvers/plan_relax.py's bounds are sound: on a small residual training
graph (milp_solver_check.py's) over a sweep of budgets, the relaxed MILP
(outputs below a size counted as 0 bytes) never bounds above the graph's
own MILP optimum, equals it when nothing is dropped, and says infeasible
only where the graph's own MILP is infeasible too (and does say so at a
budget below every schedule). Bad input (a missing graph, a bad budget,
an unknown node to --zero, --reserve alone) gets exit 1 and a message.

usage: relax_check.py DTREXEC        (exit 77: skipped, highspy missing)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from milp_solver_check import graph, have  # noqa: E402

SCRIPT = os.path.join(HERE, "..", "bench", "solvers", "plan_relax.py")


def relax(dtrexec, g, budget, below, extra=()):
    res = subprocess.run([sys.executable, SCRIPT, g, "--budget", str(budget), "--below", str(below),
                          "--dtrexec", dtrexec, "--time-limit", "120"] + list(extra), capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"FAIL: plan_relax.py at {budget}, below {below}: exit {res.returncode}: {res.stderr}")
    return json.loads(res.stdout)


def optimum(dtrexec, g, budget, tmp):
    """The graph's own MILP: its optimal overhead, or None when infeasible."""
    res = subprocess.run([dtrexec, "plan", g, "--solver", "checkmate", "--budget", str(budget), "-o",
                          os.path.join(tmp, "s.json"), "--json", "--time-limit", "120", "--threads", "1"],
                         capture_output=True, text=True)
    if res.returncode == 2 and ("infeasible" in res.stderr or "below what any" in res.stderr):
        return None
    if res.returncode:
        raise SystemExit(f"FAIL: dtrexec plan at {budget}: exit {res.returncode}: {res.stderr}")
    js = json.loads(res.stdout)
    if js["status"] not in ("optimal", "heuristic"):
        raise SystemExit(f"FAIL: the MILP at {budget} is {js['status']}, not optimal")
    return js["overhead"]


def main():
    dtrexec = sys.argv[1]
    if not have("highspy"):
        print("skipped: highspy missing (pip install highspy)")
        return 77
    tmp = tempfile.mkdtemp(prefix="relax-check-")
    try:
        g = os.path.join(tmp, "toy.json")
        graph(g)
        sizes = sorted({n["cost_ram"] for n in json.load(open(g))["nodes"]})
        below = sizes[1]                     # drops the smallest outputs
        infeasible_seen = bounded = 0
        opts = {}
        for budget in (110, 115, 118, 120, 150, 190, 250):
            opt = opts[budget] = optimum(dtrexec, g, budget, tmp)
            r = relax(dtrexec, g, budget, below)
            exact = relax(dtrexec, g, budget, 0)
            print(f"{budget} bytes: optimum {opt}, relaxed {r['status']} {r['bound_overhead']}, "
                  f"below 0: {exact['status']} {exact['bound_overhead']}")
            if r["status"] == "infeasible":
                if opt is not None:
                    raise SystemExit(f"FAIL: at {budget} the relaxation says infeasible, the graph has {opt}")
                infeasible_seen += 1
            elif opt is not None:
                if r["status"] not in ("optimal", "time_limit") or r["bound_overhead"] is None:
                    raise SystemExit(f"FAIL: at {budget}: relaxed status {r['status']}")
                if not 1.0 - 1e-9 <= r["bound_overhead"] <= opt + 1e-9:
                    raise SystemExit(f"FAIL: at {budget} the relaxed bound {r['bound_overhead']} is not in "
                                     f"[1, {opt}]")
                bounded += r["bound_overhead"] > 1.0 + 1e-9
            if (exact["status"] == "infeasible") != (opt is None):
                raise SystemExit(f"FAIL: at {budget} nothing dropped, yet {exact['status']} against {opt}")
            if opt is not None and abs(exact["bound_overhead"] - opt) > 1e-9:
                raise SystemExit(f"FAIL: at {budget} nothing dropped, bound {exact['bound_overhead']} != {opt}")
        # --zero alone (no --reserve) is a plain relaxation too
        z = relax(dtrexec, g, 150, 0, ["--zero", "f0,b0"])
        if z["bound_overhead"] is None or z["bound_overhead"] > opts[150] + 1e-9:
            raise SystemExit(f"FAIL: --zero f0,b0 at 150: {z} against the optimum {opts[150]}")
        if not infeasible_seen or not bounded:
            raise SystemExit(f"FAIL: the sweep proved {infeasible_seen} budgets infeasible and bounded {bounded} "
                             "above 1: it tests nothing")
        for args, what in (([os.path.join(tmp, "missing.json"), "--budget", "100", "--below", "10"], "missing"),
                           ([g, "--budget", "lots", "--below", "10"], "--budget lots"),
                           ([g, "--budget", "150", "--below", "0", "--zero", "nosuch", "--reserve", "10"],
                            "an unknown node"),
                           ([g, "--budget", "150", "--below", "0", "--reserve", "10"], "--reserve alone")):
            res = subprocess.run([sys.executable, SCRIPT] + args + ["--dtrexec", dtrexec], capture_output=True,
                                 text=True)
            if res.returncode != 1 or "plan_relax.py:" not in res.stderr:
                raise SystemExit(f"FAIL: {what}: exit {res.returncode}, {res.stderr!r}")
        print("ok")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
