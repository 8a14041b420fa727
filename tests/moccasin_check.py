#!/usr/bin/env python3
"""bench/solvers/plan_moccasin.py (Moccasin's CP model on CP-SAT) against the
replayer and Chen's greedy planner:

  - VGG16 (Checkmate's graph) at 0.88 of checkpoint-all's peak, where
    recomputation is needed: the schedule written replays with `dtrexec sim
    --plan --budget` within the budget, with the overhead the script
    reports, at most chen-greedy's, at least the CP bound;
  - a toy graph with workspace_ram, kept_ram and parameters at a budget
    where they decide what fits: the same replay checks (the model's memory
    accounting is the replayer's);
    (and, where highspy is installed, at most Checkmate's MILP optimum);
  - an impossible budget: a message naming the floor, non-zero exit.

usage: moccasin_check.py DTREXEC        (exit 77: skipped, ortools missing)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "bench", "solvers", "plan_moccasin.py")
DATA = os.environ.get("DTRX_DATA_DIR", os.path.join(HERE, "..", "..", "shared", "data"))


def check(cond, msg):
    if not cond:
        raise SystemExit(f"FAIL: {msg}")


def toy(path):
    """A chain of 6 forward layers (parameters, a workspace on two), a
    loss and 6 backward nodes reading their layer's input; the backward
    nodes keep a gradient (kept_ram) from their first run on."""
    n, nodes, links = 6, [], []
    for i in range(n):
        nodes.append({"id": i, "name": f"f{i}", "cost_cpu": 2 + i % 3, "cost_ram": 100 + 50 * (i % 2),
                      "param_cost": 10, **({"workspace_ram": 60} if i in (2, 4) else {})})
        if i:
            links.append((i - 1, i))
    nodes.append({"id": n, "name": "loss", "cost_cpu": 1, "cost_ram": 20})
    links.append((n - 1, n))
    prev = n
    for k, i in enumerate(reversed(range(n))):
        b = n + 1 + k
        nodes.append({"id": b, "name": f"b{i}", "cost_cpu": 3, "cost_ram": 100, "kept_ram": 15})
        links += [(prev, b), (i, b)]
        if i:
            links.append((i - 1, b))
        prev = b
    with open(path, "w") as f:
        json.dump({"directed": True, "multigraph": True, "graph": {"name": "toy"}, "nodes": nodes,
                   "links": [{"source": s, "target": t} for s, t in links]}, f)


def replay(dtrexec, graph, plan, budget):
    r = subprocess.run([dtrexec, "sim", graph, "--plan", plan, "--budget", str(budget), "--json"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"{plan} does not replay within {budget} bytes: {r.stderr.strip()}")
    return json.loads(r.stdout)


def moccasin(dtrexec, graph, budget, out, *extra):
    r = subprocess.run([sys.executable, SCRIPT, graph, "--budget", str(budget), "-o", out, "--dtrexec", dtrexec,
                        "--time-limit", "20", "--workers", "1", "--seed", "1", *extra],
                       capture_output=True, text=True)
    return r


def solved(dtrexec, graph, budget, out, *extra, r=None):
    r = r or moccasin(dtrexec, graph, budget, out, *extra)
    check(r.returncode == 0, f"plan_moccasin.py {os.path.basename(graph)} at {budget}: exit {r.returncode}: "
          f"{r.stderr.strip()}")
    s = json.loads(r.stdout)
    rr = replay(dtrexec, graph, out, s["budget_bytes"])
    check(rr["peak_bytes"] <= s["budget_bytes"], "peak above the budget")
    check(abs(rr["overhead"] - s["overhead"]) < 1e-9, f"overhead {s['overhead']} reported, {rr['overhead']} replayed")
    check(s["overhead"] >= s["cp_bound"] - 1e-9, f"overhead {s['overhead']} below the CP bound {s['cp_bound']}")
    check(abs(s["overhead"] - s["cp_objective"]) < 1e-6,
          f"replayed overhead {s['overhead']} differs from the CP objective {s['cp_objective']}")
    return s


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    dtrexec = os.path.abspath(sys.argv[1])
    if subprocess.run([sys.executable, "-c", "import ortools.sat.python.cp_model"], capture_output=True).returncode:
        print("SKIP: the ortools package is missing (pip install ortools)")
        return SKIP
    vgg = os.path.join(DATA, "checkmate-graphs", "vgg16-256-train.json")
    check(os.path.exists(vgg), f"{vgg} missing")
    tmp = tempfile.mkdtemp(prefix="moccasin_check")
    try:
        # VGG16 at 0.88: chen-greedy's schedule as the hint, then compared
        cg = os.path.join(tmp, "cg.json")
        r = subprocess.run([dtrexec, "plan", vgg, "--solver", "chen-greedy", "--budget", "0.88", "-o", cg, "--json"],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"dtrexec plan chen-greedy: {r.stderr.strip()}")
        chen = json.loads(r.stdout)
        s = solved(dtrexec, vgg, 0.88, os.path.join(tmp, "m.json"), "--hint", cg)
        check(s["budget_bytes"] == chen["budget_bytes"], "a ratio budget differs from dtrexec plan's")
        check(s["hint"] and s["hint"]["used"], "the chen-greedy hint was not used")
        check(s["overhead"] <= chen["overhead"] + 1e-12,
              f"overhead {s['overhead']:.4f} above chen-greedy's {chen['overhead']:.4f}")
        check(s["recomputes"] > 0, "no recomputation at 0.88: the budget does not test anything")
        print(f"vgg16 at 0.88: overhead {s['overhead']:.4f} (chen-greedy {chen['overhead']:.4f}, CP bound "
              f"{s['cp_bound']:.4f}, {s['status']}), peak {s['peak_bytes']} <= {s['budget_bytes']}")

        # the toy graph: workspace, kept bytes and parameters decide the fit
        g = os.path.join(tmp, "toy.json")
        toy(g)
        ca = os.path.join(tmp, "ca.json")
        r = subprocess.run([dtrexec, "plan", g, "--solver", "checkpoint-all", "-o", ca, "--json"],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"dtrexec plan checkpoint-all on the toy graph: {r.stderr.strip()}")
        base = json.loads(r.stdout)["peak_bytes"]
        tight = None
        for budget in range(base, 0, -max(10, base // 30)):
            r = moccasin(dtrexec, g, budget, os.path.join(tmp, "t.json"), "--copies", "3")
            if r.returncode:
                check(r.returncode == 2, f"toy at {budget}: exit {r.returncode}: {r.stderr.strip()}")
                break
            tight = budget
            s = solved(dtrexec, g, budget, os.path.join(tmp, "t.json"), r=r)
            check(s["status"] == "optimal", f"toy at {budget}: {s['status']}, not optimal in 20 s")
            last = s
        check(tight is not None and tight < base and last["recomputes"] > 0,
              "the toy graph never needed a recomputation")
        print(f"toy: {base} bytes plain, down to {tight} bytes at overhead {last['overhead']:.4f} "
              f"(peak {last['peak_bytes']})")
        # Checkmate's MILP (HiGHS) holds the same schedules in its fixed
        # order: the CP optimum is at most its optimum
        if subprocess.run([sys.executable, "-c", "import highspy"], capture_output=True).returncode == 0:
            r = subprocess.run([dtrexec, "plan", g, "--solver", "checkmate", "--budget", str(tight), "-o",
                                os.path.join(tmp, "cm.json"), "--json", "--threads", "1"],
                               capture_output=True, text=True, env=dict(os.environ, DTRX_PYTHON=sys.executable))
            check(r.returncode == 0, f"dtrexec plan checkmate on the toy graph: {r.stderr.strip()}")
            cm = json.loads(r.stdout)
            check(last["overhead"] <= cm["overhead"] + 1e-9,
                  f"toy at {tight}: CP optimum {last['overhead']} above the MILP's {cm['overhead']}")
            print(f"toy at {tight}: Checkmate MILP {cm['overhead']:.4f} ({cm['status']}), CP {last['overhead']:.4f}")

        # an impossible budget
        r = moccasin(dtrexec, vgg, 0.5, os.path.join(tmp, "bad.json"))
        check(r.returncode == 2 and "below what any schedule" in r.stderr,
              f"an impossible budget: exit {r.returncode}, {r.stderr.strip()!r}")
        check(not os.path.exists(os.path.join(tmp, "bad.json")), "a schedule written for an impossible budget")
        r = moccasin(dtrexec, os.path.join(tmp, "missing.json"), 0.5, os.path.join(tmp, "bad.json"))
        check(r.returncode == 1 and "missing.json" in r.stderr, f"a missing graph: exit {r.returncode}")
        print("bad input: clear messages, exits 2 and 1")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
