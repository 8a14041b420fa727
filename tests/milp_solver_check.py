#!/usr/bin/env python3
"""The MILP solver back ends of `dtrexec plan --solver checkmate`
(DTRX_MILP_SOLVER=scip|cpsat|cbc, bench/solvers/milp_ortools.py and
bench/solvers/milp_cbc.py) against HiGHS, the default: on a small residual
training graph at several budgets, each must prove an optimum equal to
HiGHS's, and its schedule must replay (`dtrexec sim --plan`: inputs
resident, peak within the budget) with that compute.

usage: milp_solver_check.py DTREXEC SOLVER        (exit 77: skipped, the solver is missing)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def graph(path, n=8):
    """n forward layers (a skip link over every second one), a loss, n
    backward nodes reading their layer's input and output; varied sizes."""
    nodes, links = [], []
    for i in range(n):
        nodes.append({"id": i, "name": f"f{i}", "backward": False, "cost_cpu": 1 + i % 3,
                      "cost_ram": 10 + 10 * (i % 4)})
        if i:
            links.append((i - 1, i))
        if i >= 2 and i % 2 == 0:
            links.append((i - 2, i))
    loss = n
    nodes.append({"id": loss, "name": "loss", "backward": False, "cost_cpu": 1, "cost_ram": 10})
    links.append((n - 1, loss))
    prev = loss
    for k, i in enumerate(reversed(range(n))):
        b = n + 1 + k
        nodes.append({"id": b, "name": f"b{i}", "backward": True, "cost_cpu": 2 + i % 2, "cost_ram": 10 + 10 * (i % 4)})
        links.append((prev, b))
        links.append((i, b))
        if i:
            links.append((i - 1, b))
        prev = b
    g = {"directed": True, "multigraph": True, "graph": {"name": "resnet-toy"}, "nodes": nodes,
         "links": [{"source": s, "target": t} for s, t in links]}
    with open(path, "w") as f:
        json.dump(g, f)


def have(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def plan(dtrexec, g, ratio, out, solver):
    env = dict(os.environ, DTRX_MILP_SOLVER=solver, DTRX_PYTHON=sys.executable)
    env.pop("DTRX_MILP_SCRIPT", None)
    res = subprocess.run([dtrexec, "plan", g, "--solver", "checkmate", "--budget", str(ratio), "-o", out,
                          "--time-limit", "120", "--threads", "1"], capture_output=True, text=True, env=env)
    if res.returncode:
        raise SystemExit(f"FAIL: {solver} at {ratio}: exit {res.returncode}: {res.stderr.strip()}")
    with open(out) as f:
        return json.load(f)["solver"]


def replay(dtrexec, g, sched):
    res = subprocess.run([dtrexec, "sim", g, "--plan", sched, "--json"], capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"FAIL: {sched} does not replay: {res.stderr.strip()}")
    return json.loads(res.stdout)


def main():
    dtrexec, solver = sys.argv[1], sys.argv[2]
    if not have("highspy"):
        print("skipped: highspy missing (pip install highspy)")
        return SKIP
    if solver in ("scip", "cpsat") and not have("ortools"):
        print("skipped: ortools missing (pip install ortools)")
        return SKIP
    if solver == "cbc" and not (os.environ.get("DTRX_CBC") or shutil.which("cbc")):
        print("skipped: no cbc program (apt-get install coinor-cbc)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="milp-solver-check-")
    try:
        g = os.path.join(tmp, "toy.json")
        graph(g)
        recomputed = 0
        for ratio in (0.65, 0.8):
            ref = plan(dtrexec, g, ratio, os.path.join(tmp, "highs.json"), "highs")
            sched = os.path.join(tmp, f"{solver}.json")
            got = plan(dtrexec, g, ratio, sched, solver)
            print(f"{ratio}: highs {ref['status']} {ref['objective']}, {solver} {got['status']} {got['objective']} "
                  f"({got['backend']})")
            if ref["status"] != "optimal" or got["status"] != "optimal":
                raise SystemExit(f"FAIL: at {ratio} not both optimal: highs {ref['status']}, {solver} {got['status']}")
            if not got["backend"].startswith(solver):
                raise SystemExit(f"FAIL: at {ratio} the schedule says backend {got['backend']!r}")
            if abs(got["objective"] - ref["objective"]) > 1e-6 * abs(ref["objective"]):
                raise SystemExit(f"FAIL: at {ratio} {solver}'s optimum {got['objective']} != HiGHS's {ref['objective']}")
            r = replay(dtrexec, g, sched)
            compute = r.get("total_compute")
            if compute is None or abs(compute - got["objective"]) > 1e-6 * abs(got["objective"]):
                raise SystemExit(f"FAIL: at {ratio} the replay's compute {compute} != the objective {got['objective']}")
            recomputed += r.get("remats", 0) > 0
        if not recomputed:
            raise SystemExit("FAIL: no budget needed a recomputation: the graph tests nothing")
        print("ok")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
