#!/usr/bin/env python3
"""bench/solvers/plan_moccasin.py — an optimal static checkpointing schedule from a
compact constraint-programming model after Moccasin (Bartan et al., ICML
2023, arXiv:2304.14463), solved by OR-Tools CP-SAT; a second solver next to
Checkmate's MILP (dtr/sim/milp.c), written from the paper's description.

The model, on a time line of T steps with at most one compute per step:
  - node v has up to C_v copies (retention intervals) [s, e]: computed at
    step s, resident from s through e (freed right after step e); copy 0 is
    present, copy c+1 only if copy c is, and starts after copy c ends (a
    node cannot run while its own output is resident);
  - every present copy of v needs, for each input u, one present copy of u
    with s_u < s_v <= e_u (one Boolean per edge and pair of copies);
  - the last present copy of a graph output (a sink) ends at T-1;
  - memory (a cumulative constraint, capacity = budget - parameter bytes):
    each retention interval takes the node's cost_ram, the compute step
    [s, s+1) its workspace_ram, and [s_first, T) its kept_ram — exactly the
    replayer's accounting (dtr/sim/schedule.c, schedule_simulate: run adds
    the output, kept bytes on the first run only, workspace while running;
    parameters resident throughout; views are ordinary zero-byte nodes);
  - objective: the cost_cpu of the present copies (scaled to integers).
Time horizon: T = n + R steps (R = --extra, default n/2, raised to fit the
hint); empty steps are allowed, so any schedule with at most T runs and at
most C_v runs of each node is in the model. The first-compute order is NOT
fixed (as in Moccasin; Checkmate's stages fix it) unless --fix-order.
Symmetry: copies of a node are ordered in time, absent copies pinned.
Redundant: s_first(u) < s_first(v) on every edge; start domains from the
ancestor and descendant counts. CP-SAT's bound is therefore a lower bound
for this C-copies, T-step model only, not for all schedules.

The schedule is written in the steps form (DESIGN.md "Schedule") with each
value freed right after its last reader, then replayed by `dtrexec sim
--plan --budget`; a JSON summary goes to stdout.

usage: plan_moccasin.py GRAPH --budget BYTES|RATIO -o S.json [--copies C]
       [--extra R] [--time-limit S] [--workers N] [--hint S.json]
       [--fix-order hint|topo|kept-last] [--dtrexec PATH] [--verbose]
exit: 0 a schedule written, 1 bad input, 2 no schedule found / infeasible,
3 internal error (the replayer rejected the schedule), 77 no ortools.
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time

EXIT_BAD, EXIT_NONE, EXIT_INTERNAL, EXIT_SKIP = 1, 2, 3, 77


def fail(code, msg):
    print(f"plan_moccasin.py: {msg}", file=sys.stderr)
    sys.exit(code)


class Graph:
    """The replayer's view of a node-link graph (dtr/sim/planners_graph.c)."""

    def __init__(self, path):
        try:
            with open(path, "rb") as f:
                raw = f.read()
            js = json.loads(raw)
        except (OSError, ValueError) as e:
            fail(EXIT_BAD, f"{path}: {e}")
        self.path = path
        self.file = os.path.basename(path)
        self.sha256 = hashlib.sha256(raw).hexdigest()
        nodes, links = js.get("nodes"), js.get("links")
        if not isinstance(nodes, list) or not nodes or not isinstance(links, list):
            fail(EXIT_BAD, f"{path}: not a node-link graph (\"nodes\" and \"links\" lists expected)")
        gmeta = js.get("graph") or {}
        checkmate = "id" in nodes[0]
        if checkmate:
            k_id, k_cost, k_bytes, k_param = "id", "cost_cpu", "cost_ram", "param_cost"
        else:
            k_id = "name"
            k_cost = gmeta.get("node_duration_tag", "duration")
            k_bytes = gmeta.get("node_output_cost_tag", "out_cost")
            k_param = gmeta.get("node_param_cost_tag", "param_cost")
        self.n = len(nodes)
        self.names, self.cost, self.bytes, self.ws, self.kept = [], [], [], [], []
        self.param_bytes = 0
        pos = {}
        for i, o in enumerate(nodes):
            try:
                nid = int(o[k_id])
                cost, b = float(o[k_cost]), float(o[k_bytes])
                p = float(o.get(k_param, 0) or 0)
                ws, kept = float(o.get("workspace_ram", 0)), float(o.get("kept_ram", 0))
            except (KeyError, TypeError, ValueError):
                fail(EXIT_BAD, f"{path}: node {i} needs an integer \"{k_id}\" and numbers \"{k_cost}\", \"{k_bytes}\"")
            if min(cost, b, p, ws, kept) < 0:
                fail(EXIT_BAD, f"{path}: node {nid} has a negative cost or size")
            if nid in pos:
                fail(EXIT_BAD, f"{path}: two nodes have the id {nid}")
            pos[nid] = i
            nm = o.get("name") if checkmate else None
            self.names.append(nm if isinstance(nm, str) and nm else str(nid))
            self.cost.append(cost)
            self.bytes.append(int(round(b)))
            self.ws.append(int(round(ws)))
            self.kept.append(int(round(kept)))
            self.param_bytes += int(round(p))
        if len(set(self.names)) != self.n:
            fail(EXIT_BAD, f"{path}: node names are not unique; a schedule could not name its nodes")
        self.index = {nm: i for i, nm in enumerate(self.names)}
        preds = [set() for _ in range(self.n)]
        for e, l in enumerate(links):
            a, b = (l.get("source"), l.get("target")) if "source" in l else (l.get("0"), l.get("1"))
            if a not in pos or b not in pos:
                fail(EXIT_BAD, f"{path}: link {e} does not join two known node ids")
            if a == b:
                fail(EXIT_BAD, f"{path}: link {e} is a self-loop on node {a}")
            preds[pos[b]].add(pos[a])
        self.preds = [sorted(p) for p in preds]
        self.succs = [[] for _ in range(self.n)]
        for v in range(self.n):
            for u in self.preds[v]:
                self.succs[u].append(v)
        self.sink = [not s for s in self.succs]
        # Kahn's order, file position breaking ties
        indeg = [len(p) for p in self.preds]
        ready = [v for v in range(self.n) if not indeg[v]]
        order = []
        import heapq
        heapq.heapify(ready)
        while ready:
            v = heapq.heappop(ready)
            order.append(v)
            for w in self.succs[v]:
                indeg[w] -= 1
                if not indeg[w]:
                    heapq.heappush(ready, w)
        if len(order) != self.n:
            fail(EXIT_BAD, f"{path}: the graph has a cycle")
        self.topo = order
        # ancestor / descendant sets as bit masks
        anc = [0] * self.n
        for v in order:
            m = 0
            for u in self.preds[v]:
                m |= anc[u] | (1 << u)
            anc[v] = m
        desc = [0] * self.n
        for v in reversed(order):
            m = 0
            for w in self.succs[v]:
                m |= desc[w] | (1 << w)
            desc[v] = m
        self.anc_mask = anc
        self.n_anc = [bin(m).count("1") for m in anc]
        self.n_desc = [bin(m).count("1") for m in desc]

    def floor_bytes(self):
        """A lower bound of any schedule's peak under the replayer's
        accounting: each node's run with its inputs, and the end."""
        best = 0
        for v in range(self.n):
            kept = self.kept[v] + sum(self.kept[u] for u in range(self.n) if self.anc_mask[v] >> u & 1)
            need = sum(self.bytes[u] for u in self.preds[v]) + self.bytes[v] + self.ws[v] + kept
            best = max(best, need)
        end = sum(self.kept) + sum(self.bytes[v] for v in range(self.n) if self.sink[v])
        return self.param_bytes + max(best, end)


def run_dtrexec(dtrexec, args):
    try:
        return subprocess.run([dtrexec] + args, capture_output=True, text=True)
    except OSError as e:
        fail(EXIT_BAD, f"cannot run {dtrexec}: {e}")


def parse_budget(text, g, dtrexec):
    """Bytes, or a ratio (0 < r < 16) of checkpoint-all's peak as dtrexec
    computes it (cli/cmd_plan.c: floor(peak x ratio))."""
    try:
        v = float(text)
    except ValueError:
        fail(EXIT_BAD, f"--budget '{text}' is neither a byte count nor a ratio")
    if 0 < v < 16:
        with tempfile.TemporaryDirectory() as tmp:
            r = run_dtrexec(dtrexec, ["plan", g.path, "--solver", "checkpoint-all", "-o",
                                      os.path.join(tmp, "ca.json"), "--json"])
            if r.returncode:
                fail(EXIT_BAD, f"dtrexec plan checkpoint-all failed: {r.stderr.strip()}")
            peak = json.loads(r.stdout)["baseline_peak_bytes"]
        return max(1, int(float(peak) * v)), v
    if v < 1 or v != int(v):
        fail(EXIT_BAD, f"--budget '{text}' is neither a byte count nor a ratio")
    return int(v), None


def read_hint(path, g):
    """Runs of a steps-form schedule as (node, time, copy) and each
    instance's last resident step (None: to the end)."""
    try:
        with open(path) as f:
            js = json.load(f)
    except (OSError, ValueError) as e:
        fail(EXIT_BAD, f"--hint {path}: {e}")
    if js.get("format") != "dtrexec-schedule" or not isinstance(js.get("steps"), list):
        fail(EXIT_BAD, f"--hint {path}: a steps-form dtrexec schedule expected")
    runs, live, inst = [], {}, []   # inst: [node, copy, start, end]
    count = [0] * g.n
    for k, st in enumerate(js["steps"]):
        if "run" in st:
            v = g.index.get(st["run"])
            if v is None:
                fail(EXIT_BAD, f"--hint {path}: step {k} runs '{st['run']}', which is no node of {g.file}")
            live[v] = len(inst)
            inst.append([v, count[v], len(runs), None])
            count[v] += 1
            runs.append(v)
        else:
            fr = st.get("free")
            for nm in [fr] if isinstance(fr, str) else fr or []:
                v = g.index.get(nm)
                if v is None or v not in live:
                    fail(EXIT_BAD, f"--hint {path}: step {k} frees '{nm}', which is not resident")
                inst[live.pop(v)][3] = len(runs) - 1
    return runs, inst, count


def first_order(g, how, hint_runs):
    """The first-compute order --fix-order imposes."""
    if how == "hint":
        if not hint_runs:
            fail(EXIT_BAD, "--fix-order hint needs a --hint that replays within the budget")
        seen, order = set(), []
        for v in hint_runs:
            if v not in seen:
                seen.add(v)
                order.append(v)
        return order
    if how == "topo":
        return list(g.topo)
    import heapq
    indeg = [len(p) for p in g.preds]
    ready = [((g.kept[v] > 0), v) for v in range(g.n) if not indeg[v]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for w in g.succs[v]:
            indeg[w] -= 1
            if not indeg[w]:
                heapq.heappush(ready, ((g.kept[w] > 0), w))
    return order


def cost_scale(costs):
    """Integer objective coefficients: the smallest 10^d (d <= 6) that makes
    every cost integral, else 10^6 with rounding (then reported)."""
    for d in range(7):
        k = 10 ** d
        if all(abs(c * k - round(c * k)) < 1e-6 * max(1.0, c * k) for c in costs):
            return k, True
    return 10 ** 6, False


def build_and_solve(g, a, budget, hint):
    from ortools.sat.python import cp_model

    n = g.n
    hint_runs, hint_inst, hint_count = hint if hint else ([], [], [0] * n)
    copies = [max(1, a.copies, hint_count[v]) for v in range(n)]
    extra = a.extra if a.extra is not None else n // 2
    T = min(max(n + extra, len(hint_runs)), sum(copies))
    K, exact = cost_scale(g.cost)
    coef = [int(round(c * K)) for c in g.cost]
    cap = budget - g.param_bytes

    m = cp_model.CpModel()
    S, E, P, LO, unit, ret = {}, {}, {}, {}, {}, {}
    for v in range(n):
        lo0, hi0 = g.n_anc[v], T - 1 - g.n_desc[v]
        if hi0 < lo0:
            fail(EXIT_NONE, f"horizon {T} too short for node '{g.names[v]}'")
        for c in range(copies[v]):
            lo = lo0 + c
            hi = hi0 if c == 0 else T - 1
            if lo > hi:
                copies[v] = c
                break
            s = m.NewIntVar(lo, hi, f"s{v}_{c}")
            e = m.NewIntVar(lo, T - 1, f"e{v}_{c}")
            ln = m.NewIntVar(1, T - lo, f"l{v}_{c}")
            if c == 0:
                p = m.NewBoolVar(f"p{v}_{c}")
                m.Add(p == 1)
                unit[v, c] = m.NewFixedSizeIntervalVar(s, 1, f"u{v}_{c}")
                ret[v, c] = m.NewIntervalVar(s, ln, e + 1, f"r{v}_{c}")
            else:
                p = m.NewBoolVar(f"p{v}_{c}")
                unit[v, c] = m.NewOptionalFixedSizeIntervalVar(s, 1, p, f"u{v}_{c}")
                ret[v, c] = m.NewOptionalIntervalVar(s, ln, e + 1, p, f"r{v}_{c}")
                m.AddImplication(p, P[v, c - 1])
                m.Add(s >= E[v, c - 1] + 1).OnlyEnforceIf(p)
                # an absent copy is pinned (symmetry)
                m.Add(s == lo).OnlyEnforceIf(p.Not())
                m.Add(e == lo).OnlyEnforceIf(p.Not())
            m.Add(e >= s)
            m.Add(ln == e - s + 1)
            S[v, c], E[v, c], P[v, c], LO[v, c] = s, e, p, lo
        # a sink's last present copy stays to the end
        if g.sink[v]:
            for c in range(copies[v]):
                if c + 1 < copies[v]:
                    m.Add(E[v, c] == T - 1).OnlyEnforceIf([P[v, c], P[v, c + 1].Not()])
                else:
                    m.Add(E[v, c] == T - 1).OnlyEnforceIf(P[v, c])
    m.AddNoOverlap(list(unit.values()))
    # inputs retained at every compute
    X, nx = {}, 0
    for v in range(n):
        for u in g.preds[v]:
            m.Add(S[u, 0] < S[v, 0])
            for cv in range(copies[v]):
                lits = []
                for cu in range(copies[u]):
                    if copies[u] == 1:
                        x = P[v, cv]
                    else:
                        x = m.NewBoolVar(f"x{u}_{cu}_{v}_{cv}")
                        nx += 1
                        m.AddImplication(x, P[u, cu])
                        m.AddImplication(x, P[v, cv])
                        lits.append(x)
                    m.Add(S[u, cu] < S[v, cv]).OnlyEnforceIf(x)
                    m.Add(E[u, cu] >= S[v, cv]).OnlyEnforceIf(x)
                    X[u, cu, v, cv] = x
                if lits:
                    m.AddBoolOr(lits).OnlyEnforceIf(P[v, cv])
    # memory
    ivs, dem = [], []
    for (v, c), r in ret.items():
        if g.bytes[v]:
            ivs.append(r)
            dem.append(g.bytes[v])
        if g.ws[v]:
            ivs.append(unit[v, c])
            dem.append(g.ws[v])
    for v in range(n):
        if g.kept[v]:
            ivs.append(m.NewIntervalVar(S[v, 0], T - S[v, 0], T, f"k{v}"))
            dem.append(g.kept[v])
    if a.min_peak:
        # feasibility first: the least peak, cost ignored
        top = sum(g.bytes) + max(g.ws) + sum(g.kept)
        capv = m.NewIntVar(max(0, g.floor_bytes() - g.param_bytes), max(top, 1), "cap")
        if ivs:
            m.AddCumulative(ivs, dem, capv)
        m.Minimize(capv)
        K = 1
    else:
        if ivs:
            m.AddCumulative(ivs, dem, cap)
        m.Minimize(sum(coef[v] * P[v, c] for (v, c) in P))

    if a.fix_order:
        first = first_order(g, a.fix_order, hint_runs)
        for a_, b_ in zip(first, first[1:]):
            m.Add(S[a_, 0] < S[b_, 0])

    if hint:
        hv = {}
        for v, c, t, end in hint_inst:
            hv[v, c] = (t, T - 1 if end is None else end)
        for (v, c), s in S.items():
            t, end = hv.get((v, c), (None, None))
            if t is None:
                lo = LO[v, c]
                m.AddHint(s, lo)
                m.AddHint(E[v, c], lo)
                if c:
                    m.AddHint(P[v, c], 0)
            else:
                m.AddHint(s, t)
                m.AddHint(E[v, c], end)
                if c:
                    m.AddHint(P[v, c], 1)
        for (u, cu, v, cv), x in X.items():
            if copies[u] == 1:
                continue
            ok = (v, cv) in hv and (u, cu) in hv and hv[u, cu][0] < hv[v, cv][0] <= hv[u, cu][1]
            m.AddHint(x, 1 if ok else 0)

    class Log(cp_model.CpSolverSolutionCallback):
        def __init__(self, t0):
            super().__init__()
            self.t0, self.last, self.first = t0, None, None

        def on_solution_callback(self):
            t = time.monotonic() - self.t0
            self.last = (t, self.ObjectiveValue())
            if self.first is None:
                self.first = self.last
            if a.verbose:
                print(f"  {t:7.1f} s  objective {self.ObjectiveValue() / K:.6g}  bound {self.BestObjectiveBound() / K:.6g}",
                      file=sys.stderr)

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(a.time_limit)
    solver.parameters.num_workers = int(a.workers)
    solver.parameters.log_search_progress = bool(a.verbose > 1)
    if a.seed is not None:
        solver.parameters.random_seed = a.seed
    t0 = time.monotonic()
    cb = Log(t0)
    st = solver.Solve(m, cb)
    secs = time.monotonic() - t0
    info = {"status": solver.StatusName(st).lower(), "seconds": secs, "horizon": T, "copies_default": a.copies,
            "copies_max": max(copies), "copy_slots": sum(copies), "cost_scale": K, "cost_scale_exact": exact,
            "n_bool": nx,
            "first_solution_s": cb.first[0] if cb.first else None, "time_to_best_s": cb.last[0] if cb.last else None}
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, info
    info["objective"] = solver.ObjectiveValue() / K
    info["bound"] = solver.BestObjectiveBound() / K
    sol = []
    for (v, c), s in S.items():
        if solver.Value(P[v, c]):
            sol.append((solver.Value(s), solver.Value(E[v, c]), v, c))
    return sol, info


def lower(g, sol):
    """Steps form from the present copies: runs by start, each instance
    freed right after its last reader (or kept to the end: outputs)."""
    sol.sort()
    runs = [(s, v, c) for s, e, v, c in sol]
    end_of = {(v, c): e for s, e, v, c in sol}
    last_copy = {}
    for s, v, c in runs:
        last_copy[v] = c
    live, free_after = {}, {}
    for k, (s, v, c) in enumerate(runs):
        for u in g.preds[v]:
            cu = live[u]
            free_after[u, cu] = k
        live[v] = c
        free_after[v, c] = k
    steps, frees = [], {}
    for (u, cu), k in free_after.items():
        if g.sink[u] and cu == last_copy[u]:
            continue
        frees.setdefault(k, []).append(g.names[u])
    for k, (s, v, c) in enumerate(runs):
        st = {"run": g.names[v]}
        if c:
            st["recompute"] = True
        steps.append(st)
        if k in frees:
            steps.append({"free": frees[k]})
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph")
    ap.add_argument("--budget", required=True, help="bytes, or a ratio (< 16) of checkpoint-all's peak")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--copies", type=int, default=2, help="copies (retention intervals) per node, default 2")
    ap.add_argument("--extra", type=int, default=None, help="horizon T = n + EXTRA steps (default n/2)")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--hint", help="a steps-form schedule as CP-SAT's solution hint (with --min-peak it need "
                    "not fit the budget)")
    ap.add_argument("--fix-order", choices=("hint", "topo", "kept-last"),
                    help="fix the first-compute order: the hint's, the graph's topological one, or a topological "
                    "one that runs nodes with kept_ram only when nothing else is ready")
    ap.add_argument("--min-peak", action="store_true",
                    help="minimise the peak instead of the compute (a feasibility phase: its schedule can be a --hint)")
    ap.add_argument("--dtrexec", default=os.environ.get("DTREXEC"))
    ap.add_argument("--verbose", "-v", action="count", default=0)
    a = ap.parse_args()
    if a.copies < 1 or a.workers < 1 or a.time_limit <= 0 or (a.extra is not None and a.extra < 0):
        fail(EXIT_BAD, "--copies and --workers must be >= 1, --time-limit > 0, --extra >= 0")
    if not a.dtrexec:
        here = os.path.dirname(os.path.abspath(__file__))
        for cand in (os.path.join(here, "..", "..", "build", "dtrexec"), "dtrexec"):
            if os.path.exists(cand):
                a.dtrexec = cand
                break
        else:
            fail(EXIT_BAD, "no dtrexec binary: give --dtrexec PATH or set DTREXEC")
    try:
        import ortools  # noqa: F401
        from ortools.sat.python import cp_model  # noqa: F401
    except ImportError:
        fail(EXIT_SKIP, "the ortools package is missing (pip install ortools)")
    t0 = time.monotonic()
    g = Graph(a.graph)
    budget, ratio = parse_budget(a.budget, g, a.dtrexec)
    floor = g.floor_bytes()
    if budget < floor:
        fail(EXIT_NONE, f"budget {budget} bytes is below what any schedule of {g.file} needs: {floor} bytes "
             f"(parameters {g.param_bytes} + the largest node with its inputs and kept bytes, or the outputs)")
    hint, hint_desc = None, None
    if a.hint:
        hint = read_hint(a.hint, g)
        r = run_dtrexec(a.dtrexec, ["sim", g.path, "--plan", a.hint, "--json"] +
                        ["--budget", str(2 ** 62 if a.min_peak else budget)])
        if r.returncode:
            print(f"plan_moccasin.py: the hint does not replay within {budget} bytes, not used: {r.stderr.strip()}",
                  file=sys.stderr)
            hint_desc = {"file": a.hint, "used": False}
            hint = None
        else:
            hr = json.loads(r.stdout)
            hint_desc = {"file": a.hint, "used": True, "overhead": hr["overhead"], "peak_bytes": hr["peak_bytes"]}
    sol, info = build_and_solve(g, a, budget, hint)
    base = sum(g.cost)
    summary = {"graph": g.file, "budget_bytes": budget, "ratio": ratio, "status": info["status"],
               "hint": hint_desc, "fix_order": a.fix_order, "workers": a.workers, "time_limit": a.time_limit}
    summary.update({k: info[k] for k in ("horizon", "copies_default", "copies_max", "copy_slots", "n_bool",
                                         "cost_scale", "cost_scale_exact", "first_solution_s", "time_to_best_s")})
    summary["solve_seconds"] = info["seconds"]
    if sol is None:
        summary["seconds"] = time.monotonic() - t0
        print(json.dumps(summary))
        what = "infeasible for this model" if info["status"] == "infeasible" else "no schedule found in the time limit"
        fail(EXIT_NONE, f"{g.file} at {budget} bytes: {what} ({a.copies} copies per node, horizon {info['horizon']} "
             "steps)")
    steps = lower(g, sol)
    gapv = (info["objective"] - info["bound"]) / info["objective"] if info["objective"] else 0.0
    out = {"format": "dtrexec-schedule", "version": 1, "graph": {"file": g.file, "sha256": g.sha256},
           "budget_bytes": budget,
           "solver": {"name": "moccasin-cpsat", "status": "optimal" if info["status"] == "optimal" else "time_limit",
                      "backend": "ortools-cpsat", "seconds": time.monotonic() - t0, "solve_seconds": info["seconds"],
                      "objective": info["objective"], "bound": info["bound"], "gap": gapv,
                      "time_limit": a.time_limit},
           "steps": steps}
    with open(a.output, "w") as f:
        json.dump(out, f, indent=0)
        f.write("\n")
    r = run_dtrexec(a.dtrexec, ["sim", g.path, "--plan", a.output, "--json"] +
                    ["--budget", str(2 ** 62 if a.min_peak else budget)])
    summary["seconds"] = time.monotonic() - t0
    if r.returncode:
        print(json.dumps(summary))
        fail(EXIT_INTERNAL, f"the replayer rejected the schedule {a.output}: {r.stderr.strip()}")
    rr = json.loads(r.stdout)
    if a.min_peak:
        base = 1.0
        summary.update({"output": a.output, "overhead": rr["overhead"], "peak_bytes": rr["peak_bytes"],
                        "fits_budget": rr["peak_bytes"] <= budget, "runs": rr["runs"], "recomputes": rr["remats"],
                        "cp_peak": info["objective"] + g.param_bytes, "cp_peak_bound": info["bound"] + g.param_bytes})
        print(json.dumps(summary))
        return 0
    summary.update({"output": a.output, "overhead": rr["overhead"], "peak_bytes": rr["peak_bytes"],
                    "runs": rr["runs"], "recomputes": rr["remats"],
                    "cp_objective": info["objective"] / base, "cp_bound": info["bound"] / base,
                    "cp_bound_valid_for": f"this model only: at most {a.copies} copies per node "
                    f"(more where the hint had more), horizon {info['horizon']} steps"
                    + ("" if info["cost_scale_exact"] else ", costs rounded"),
                    "gap": gapv})
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
