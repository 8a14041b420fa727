#!/usr/bin/env python3
"""Static planners against DTR on zoo models exported by dtrexec (issue 6).

Per model (bench/models/make.py, sizes that export in seconds):

1. `dtrexec export MODEL.onnx --train -o GRAPH.json`: the training step as a
   Checkmate-layout graph (measured costs, output sizes). The graph is copied
   into --out so that the simulated figures can be reproduced exactly (the
   measured costs differ from one export to the next).
2. Per budget ratio (of checkpoint-all's peak on the graph, in bytes):
   - every solver: `dtrexec plan GRAPH --solver S --budget R -o S.json`
     (status, MILP/LP solve time and gap from the schedule's "solver"
     object) and `dtrexec sim GRAPH --plan S.json --json` (overhead, peak);
   - dtr, dtr-eq, lru: `dtrexec sim GRAPH --budget R --heuristic H --json`.
   Overheads are also given as a ratio to the optimum: the MILP's schedule
   when HiGHS proved it optimal, else the best schedule known (and the
   ratio is then marked as a bound: the optimum may be lower).
3. Real runs at the same budget in bytes: `dtrexec MODEL --train --budget B
   --heuristic H` and `dtrexec MODEL --train --plan S.json` (the arena is
   the schedule's budget), --steps steps each, one thread, against two
   unbudgeted runs: fastest step over the unbudgeted fastest, cost-model
   slowdown ((compute + recomputed compute) / compute, FLOPs), peak,
   evictions and recomputations per step, and whether the losses equal the
   unbudgeted run's exactly. For schedules the recomputations the runtime
   made beyond the schedule's own are counted: the graph's accounting
   leaves out what the arena also needs (kernel workspaces, alignment,
   values a running kernel holds), so a tight schedule can make DTR evict
   and recompute more than planned.

Writes into --out (bench/results): zoo_plan.csv (one row per model, ratio
and method), zoo_plan.svg (per model: simulated overhead and real slowdown
against the budget, a line per method), zoo_plan.md (tables, the goal
check, configurations, commands, load average) and zoo-<model>.json (the
exported graphs).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python3 bench/experiments/plan_zoo.py --dtrexec build/dtrexec
            [--models resnet18,transformer] [--ratios 0.9,0.7,0.5,0.4]
            [--solvers checkmate,checkmate-lp,chen-sqrtn,chen-greedy,griewank,checkpoint-all]
            [--heuristics dtr,dtr-eq,lru] [--time-limit 120] [--steps 4] [--no-real]
            [--quick]     # tiny models, two budgets: a smoke test
"""
import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/
sys.path.insert(0, HERE)
from budget_sweep import esc, nice_step  # noqa: E402  (the SVG helpers)

MAKE = os.path.join(BENCH_DIR, "models", "make.py")
MODELS = {
    # ResNet-18 at 128x128, width 8, batch 16: 163 graph nodes, parameters
    # (and their gradients) a quarter of checkpoint-all's peak
    "resnet18": ["resnet18", "--batch", "16", "--size", "128", "--set", "width=8", "--classes", "10"],
    # the BERT-style encoder, one layer of hidden 128 at seq 128, batch 8:
    # 124 graph nodes (two layers, 234 nodes, leave HiGHS without a bound in
    # a minute on this machine)
    "transformer": ["transformer", "--batch", "8", "--seq", "128", "--layers", "1", "--set", "hidden=128",
                    "--set", "heads=4", "--set", "ffn=512", "--set", "vocab=1000"],
}
QUICK = {
    "resnet18": ["resnet18", "--tiny", "--batch", "4"],
    "transformer": ["transformer", "--tiny", "--batch", "2"],
}
SOLVERS = ["checkmate", "checkmate-lp", "chen-sqrtn", "chen-greedy", "griewank", "checkpoint-all"]
HEURISTICS = ["dtr", "dtr-eq", "lru"]
COLORS = {"dtr": "#1a9641", "dtr-eq": "#4169e1", "lru": "#ff8c00", "checkmate": "#000000",
          "checkmate-lp": "#888888", "chen-sqrtn": "#d7191c", "chen-greedy": "#b8860b", "griewank": "#8b008b",
          "checkpoint-all": "#00aaaa"}


class Tool:
    def __init__(self, args, work):
        self.args, self.work, self.n = args, work, 0
        self.env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")

    def run(self, cmd, timeout=None):
        t0 = time.monotonic()
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", "", f"over {timeout} s", time.monotonic() - t0
        return res.returncode, res.stdout, res.stderr, time.monotonic() - t0

    def dtrexec(self, *argv, timeout=None):
        return self.run([self.args.dtrexec] + [str(a) for a in argv], timeout)

    def train(self, model, extra=()):
        self.n += 1
        stats = os.path.join(self.work, f"stats{self.n}.json")
        rc, _, err, _ = self.dtrexec(model, "--train", "--steps", self.args.steps, "--optimizer", "sgd",
                                     "--threads", 1, "--stats", stats, "--quiet", *extra,
                                     timeout=self.args.timeout)
        if rc:
            return rc, None, err.strip()
        with open(stats) as f:
            return 0, json.load(f), err


def best_step(st):
    """The fastest step after the first: on the shared machine other work
    only adds time, and identical runs' medians differ by up to 40 %."""
    s = st["step_seconds"]
    return min(s[1:] if len(s) > 1 else s)


def last_line(text):
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def sim_json(tool, graph, *extra):
    rc, out, err, _ = tool.dtrexec("sim", graph, "--json", *extra)
    if rc not in (0, 2):
        raise SystemExit(f"dtrexec sim {graph} {' '.join(map(str, extra))} failed ({rc}): {last_line(err)}")
    try:
        return json.loads(out)
    except ValueError:
        raise SystemExit(f"dtrexec sim {graph}: no JSON on stdout: {last_line(err)}")


def all_peak(tool, graph):
    """checkpoint-all's peak on the graph with its kernel workspaces
    (workspace_ram), which `dtrexec plan --budget R` takes ratios of; the
    DTR simulator's own baseline leaves workspaces out, so budgets are
    given to both in bytes."""
    path = graph + ".checkpoint-all.json"
    rc, _, err, _ = tool.dtrexec("plan", graph, "--solver", "checkpoint-all", "-o", path)
    if rc:
        raise SystemExit(f"dtrexec plan {graph} --solver checkpoint-all failed ({rc}): {last_line(err)}")
    return sim_json(tool, graph, "--plan", path)["peak_bytes"]


def schedule_recomputes(graph, sched):
    """What the runtime is to recompute for a schedule: its recomputations
    of views ("view": true; the runtime replays views at no cost, also
    where a schedule keeps a 0-byte view across its source's recomputation,
    so they are compared apart), of nodes whose outputs the runtime keeps
    anyway (no cost_ram, kept_ram: resident, so not recomputed), and the
    cost-model FLOPs of the rest."""
    with open(graph) as f:
        nodes = {n["name"]: n for n in json.load(f)["nodes"]}
    rec = [nodes[s["run"]] for s in sched.get("steps", []) if s.get("recompute")]
    kept = [n for n in rec if not n["cost_ram"] and n.get("kept_ram") and not n.get("view")]
    return {"sched_view_recomputes": sum(1 for n in rec if n.get("view")), "sched_kept_recomputes": len(kept),
            "sched_remat_flops": sum(n.get("cost_flops", 0) for n in rec if n not in kept)}


def plan_rows(tool, name, graph, ratios, log):
    """Simulated rows: every solver and heuristic at every ratio."""
    rows, schedules = [], {}
    peak = all_peak(tool, graph)
    for ratio in ratios:
        budget = str(int(float(ratio) * peak))
        for h in tool.args.heuristics:
            js = sim_json(tool, graph, "--budget", budget, "--heuristic", h, "--remat-limit", "none")
            ok = js.get("outcome") == "pass"
            rows.append({"model": name, "method": h, "kind": "dtr", "ratio": ratio,
                         "budget_bytes": js.get("budget_bytes"), "status": js.get("outcome"),
                         "overhead": js["overhead"] if ok else None, "peak_bytes": js.get("peak_bytes") if ok else None,
                         "recomputes": js.get("remats") if ok else None})
            log(f"  {name} {ratio:<5} {h:<15} {rows[-1]['status']:<12} "
                f"{fmt(rows[-1]['overhead'], '.4f')}")
        for s in tool.args.solvers:
            path = os.path.join(tool.work, f"{name}-{s}-{ratio}.json")
            rc, out, err, wall = tool.dtrexec("plan", graph, "--solver", s, "--budget", budget, "-o", path,
                                              "--time-limit", tool.args.time_limit, "--threads", 1)
            row = {"model": name, "method": s, "kind": "solver", "ratio": ratio, "plan_wall_s": wall}
            if rc == 0:
                with open(path) as f:
                    sched = json.load(f)
                sv = sched.get("solver", {})
                js = sim_json(tool, graph, "--plan", path)
                row.update(schedule_recomputes(graph, sched))
                row.update({"budget_bytes": sched.get("budget_bytes"), "status": sv.get("status"),
                            "solve_s": sv.get("solve_seconds"), "gap": sv.get("gap"),
                            "objective": sv.get("objective"), "bound": sv.get("bound"),
                            "backend": sv.get("backend"), "overhead": js.get("overhead"),
                            "peak_bytes": js.get("peak_bytes"), "recomputes": js.get("remats"),
                            "remat_compute": js.get("remat_compute"), "baseline_compute": js.get("baseline_compute")})
                schedules[(s, ratio)] = path
            else:
                row.update({"status": "infeasible" if rc == 2 or "infeasible" in err else f"error {rc}",
                            "note": last_line(err)})
            rows.append(row)
            log(f"  {name} {ratio:<5} {s:<15} {row['status']:<12} {fmt(row.get('overhead'), '.4f')} "
                f"solve {fmt(row.get('solve_s'), '.1f')} s gap {fmt(row.get('gap'), '.4f')}")
    return rows, schedules


def add_optimum_ratios(rows):
    """overhead / optimum per (model, ratio): the MILP's proven optimum, else
    the best overhead known (then opt_proven is False)."""
    keys = {(r["model"], r["ratio"]) for r in rows}
    for key in keys:
        mine = [r for r in rows if (r["model"], r["ratio"]) == key]
        milp = [r for r in mine if r["method"] == "checkmate" and r.get("overhead") is not None]
        proven = bool(milp) and milp[0]["status"] == "optimal"
        known = [r["overhead"] for r in mine if r.get("overhead") is not None and r["kind"] == "solver"]
        opt = milp[0]["overhead"] if proven else (min(known) if known else None)
        for r in mine:
            r["opt_overhead"], r["opt_proven"] = opt, proven
            r["vs_opt"] = r["overhead"] / opt if opt and r.get("overhead") is not None else None


def baseline(tool, name, model, log):
    """Two unbudgeted runs: step times pooled (the first step of each left out)."""
    times, base = [], None
    for _ in range(2):
        rc, st, err = tool.train(model)
        if rc:
            raise SystemExit(f"unbudgeted training of {name} failed ({rc}): {err}")
        if base is None:
            base = st
        elif st["loss"] != base["loss"]:
            log(f"!!!! {name}: two unbudgeted runs gave different losses")
        times += st["step_seconds"][1:]
    base["step_s"] = min(times)
    log(f"  {name} unbudgeted: step {base['step_s'] * 1e3:.1f} ms, peak {base['peak_bytes']} bytes, "
        f"losses {base['loss']}")
    return base


def real_rows(tool, name, model, rows, schedules, base, prefix, extra_bytes, log):
    """Real runs at each simulated row's budget in bytes plus extra_bytes
    (keys prefix + ...): `--budget B --heuristic H` or `--plan S.json`."""
    steps = tool.args.steps
    for r in rows:
        if r["model"] != name or not r.get("budget_bytes"):
            continue
        budget = r["budget_bytes"] + extra_bytes
        if r["kind"] == "dtr":
            rc, st, err = tool.train(model, ["--budget", budget, "--heuristic", r["method"]])
        else:
            path = schedules.get((r["method"], r["ratio"]))
            if not path:
                continue
            rc, st, err = tool.train(model, ["--plan", path] + (["--budget", budget] if extra_bytes else []))
        k = prefix
        r[k + "budget_bytes"] = budget
        if rc:
            r[k + "status"] = "infeasible" if rc == 2 else f"error {rc}"
            r[k + "note"] = last_line(err)
        else:
            compute = st["total_compute"]
            r.update({
                k + "status": "ok", k + "peak_bytes": st["peak_bytes"],
                k + "slowdown": best_step(st) / base["step_s"],
                k + "cost_slowdown": (compute + st["remat_compute"]) / compute if compute else 1.0,
                k + "evictions_per_step": st["evictions"] / steps, k + "remats_per_step": st["remats"] / steps,
                k + "view_remats_per_step": st.get("view_remats", 0) / steps,
                k + "remat_flops_per_step": st["remat_compute"] / steps,
                k + "losses_equal": st["loss"] == base["loss"], k + "within_budget": st["peak_bytes"] <= budget,
            })
            if r["kind"] == "solver" and r.get("recomputes") is not None:
                # besides views, against the schedule's own besides views and kept values
                planned = r["recomputes"] - r["sched_view_recomputes"] - r["sched_kept_recomputes"]
                r[k + "extra_remats_per_step"] = (r[k + "remats_per_step"] - r[k + "view_remats_per_step"]) - planned
            if not r[k + "losses_equal"]:
                log(f"!!!! LOSS MISMATCH {name} {r['method']} {r['ratio']} ({k}): {st['loss']} != {base['loss']}")
            if not r[k + "within_budget"]:
                log(f"!!!! PEAK ABOVE BUDGET {name} {r['method']} {r['ratio']} ({k})")
        sched = f" (schedule {r['recomputes']})" if r["kind"] == "solver" else ""
        log(f"  {name} {r['ratio']:<5} {r['method']:<15} {k:<5} {r[k + 'status']:<10} "
            f"slowdown {fmt(r.get(k + 'slowdown'))} cost {fmt(r.get(k + 'cost_slowdown'), '.3f')} "
            f"remats/step {fmt(r.get(k + 'remats_per_step'), '.1f')}{sched} {r.get(k + 'note', '')[:100]}")


def fmt(v, spec=".2f"):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


PANEL_W, PANEL_H, ML, MR, MT, MB = 400, 300, 58, 16, 34, 46


def write_svg(path, rows, methods, title):
    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    keys = [k for k in ("overhead", "real_slowdown", "adj_slowdown") if any(r.get(k) for r in rows)]
    panels = [(m, key) for m in models for key in keys]
    cols, legend_h = len(keys), 70
    grid = (len(panels) + cols - 1) // cols
    width, height = cols * PANEL_W, grid * PANEL_H + legend_h + 30
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
         '<rect width="100%" height="100%" fill="white"/>',
         f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="14">{esc(title)}</text>']
    for p, (model, key) in enumerate(panels):
        ox, oy = (p % cols) * PANEL_W, 26 + (p // cols) * PANEL_H
        pw, ph = PANEL_W - ML - MR, PANEL_H - MT - MB
        mine = [r for r in rows if r["model"] == model and r.get(key) is not None]
        ys = [r[key] for r in mine]
        ymax = min(max(ys + [1.05]), 4.0)
        ybot = min([1.0] + ys)
        step = nice_step(max(ymax - ybot, 0.05) * 1.1)
        ybot = math.floor(ybot / step + 1e-9) * step
        ytop = ybot + math.ceil((ymax - ybot) * 1.05 / step + 1e-9) * step
        ratios = [r["ratio"] for r in rows if r["model"] == model]
        xmin, xmax = min(ratios + [1.0]) - 0.05, max(ratios + [1.0]) + 0.05

        def px(x):
            return ox + ML + (x - xmin) / (xmax - xmin) * pw

        def py(y):
            return oy + MT + ph - (min(y, ytop) - ybot) / (ytop - ybot) * ph

        what = {"overhead": "simulated overhead", "real_slowdown": "real slowdown, same bytes",
                "adj_slowdown": "real slowdown, + unmodelled bytes"}[key]
        o.append(f'<g><text x="{ox + ML + pw / 2:.1f}" y="{oy + MT - 14}" text-anchor="middle" font-size="13">'
                 f'{esc(model)}: {what}</text>')
        o.append(f'<rect x="{ox + ML}" y="{oy + MT}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
        y = ybot
        while y <= ytop + 1e-9:
            o.append(f'<line x1="{ox + ML}" x2="{ox + ML + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>'
                     f'<text x="{ox + ML - 4}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
            y += step
        for x in sorted(set(ratios)):
            o.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{oy + MT}" y2="{oy + MT + ph}" stroke="#eee"/>'
                     f'<text x="{px(x):.1f}" y="{oy + MT + ph + 14}" text-anchor="middle">{x:g}</text>')
        o.append(f'<text x="{ox + ML + pw / 2:.1f}" y="{oy + MT + ph + 32}" text-anchor="middle">'
                 f'budget / checkpoint-all peak</text>')
        for m in methods:
            c = COLORS.get(m, "#000")
            pts = sorted((r for r in mine if r["method"] == m), key=lambda r: r["ratio"])
            dash = ' stroke-dasharray="4 3"' if m in HEURISTICS else ""
            line = " ".join(f"{px(r['ratio']):.1f},{py(r[key]):.1f}" for r in pts)
            o.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5"{dash} points="{line}">'
                     f'<title>{esc(m)}</title></polyline>')
            for r in pts:
                tip = f"{m} {r['ratio']}: {r[key]:.4f}"
                o.append(f'<circle cx="{px(r["ratio"]):.1f}" cy="{py(r[key]):.1f}" r="2.5" fill="{c}">'
                         f'<title>{esc(tip)}</title></circle>')
        o.append("</g>")
    lx, ly = 20, height - legend_h + 6
    for i, m in enumerate(methods):
        if i and i % 5 == 0:
            lx, ly = 20, ly + 18
        dash = ' stroke-dasharray="4 3"' if m in HEURISTICS else ""
        o.append(f'<line x1="{lx}" x2="{lx + 22}" y1="{ly}" y2="{ly}" stroke="{COLORS.get(m, "#000")}" '
                 f'stroke-width="2"{dash}/><text x="{lx + 26}" y="{ly + 4}">{esc(m)}</text>')
        lx += 150
    o.append(f'<text x="20" y="{ly + 24}" fill="#444">Dashed: DTR heuristics (simulated / run with --budget); '
             f'solid: static schedules (dtrexec plan; run with --plan). Missing points: infeasible.</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


REAL = ["status", "budget_bytes", "slowdown", "cost_slowdown", "peak_bytes", "evictions_per_step",
        "remats_per_step", "view_remats_per_step", "extra_remats_per_step", "remat_flops_per_step",
        "losses_equal", "within_budget", "note"]
FIELDS = (["model", "method", "kind", "ratio", "budget_bytes", "status", "overhead", "opt_overhead", "opt_proven",
           "vs_opt", "peak_bytes", "recomputes", "sched_view_recomputes", "sched_kept_recomputes",
           "sched_remat_flops", "solve_s", "plan_wall_s", "gap", "backend", "note"]
          + ["real_" + k for k in REAL] + ["adj_" + k for k in REAL])


def goal_lines(rows, models):
    """dtr-eq within 1.1x of the optimum wherever the optimum is below 1.5x.
    Without a proven optimum the optimum lies between the MILP's bound and
    the best schedule known: dtr-eq / bound is then an upper bound of the
    ratio (met when it is <= 1.1), dtr-eq / best known a lower one."""
    out = []
    for m in models:
        for r in sorted((r for r in rows if r["model"] == m and r["method"] == "dtr-eq"), key=lambda r: -r["ratio"]):
            opt = r.get("opt_overhead")
            milp = next((x for x in rows if x["model"] == m and x["ratio"] == r["ratio"] and
                         x["method"] == "checkmate" and x.get("overhead") is not None), None)
            bound = opt if r.get("opt_proven") else None
            if bound is None and milp and milp.get("gap") is not None:
                bound = milp["overhead"] * (1 - float(milp["gap"]))
            if opt is None or (bound if bound is not None else opt) >= 1.5:
                continue
            d = r.get("overhead")
            hi = d / bound if d is not None and bound else None
            lo = d / opt if d is not None else None
            verdict = ("infeasible" if d is None else "met" if hi is not None and hi <= 1.1 else
                       "NOT met" if lo > 1.1 else "undecided")
            what = f"{opt:.4f} (proven)" if r.get("opt_proven") else \
                f"{fmt(bound, '.4f')} .. {opt:.4f} (MILP bound .. best known)"
            out.append(f"| {m} | {r['ratio']:g} | {what} | {fmt(d, '.4f')} | "
                       f"{fmt(lo, '.3f')} .. {fmt(hi, '.3f')} | {verdict} |")
    return out


def real_cells(r, k):
    """status, slowdown, cost, remats/step (schedule's own) of one real mode."""
    if k + "status" not in r:
        return ["-"] * 4
    rem = fmt(r.get(k + "remats_per_step"), ".1f")
    if r["kind"] == "solver" and r.get("recomputes") is not None and r.get(k + "remats_per_step") is not None:
        rem += f" ({r['recomputes']})"
    if r.get(k + "view_remats_per_step"):
        rem += f" [{r[k + 'view_remats_per_step']:g} v]"
    st = r[k + "status"]
    if r.get(k + "losses_equal") is False:
        st += " LOSS MISMATCH"
    if r.get(k + "within_budget") is False:
        st += " ABOVE BUDGET"
    return [st, fmt(r.get(k + "slowdown")), fmt(r.get(k + "cost_slowdown"), ".3f"), rem]


def flops_differ(r, k):
    real, sched = r.get(k + "remat_flops_per_step"), r.get("sched_remat_flops")
    return real is not None and sched is not None and abs(real - sched) > 1e-9 * max(abs(sched), 1.0)


def beyond_lines(rows, k, what):
    """Schedules whose real run recomputed other than planned: view replays
    and recomputations of kept values aside (see schedule_recomputes), the
    count per step and the recomputed FLOPs per step against the
    schedule's."""
    ran = [r for r in rows if r["kind"] == "solver" and r.get(k + "status") == "ok"]
    extra = [r for r in ran if r.get(k + "extra_remats_per_step") or flops_differ(r, k)]
    failed = [r for r in rows if r["kind"] == "solver" and r.get(k + "status") not in (None, "ok")]
    views = sum(1 for r in ran if r.get(k + "view_remats_per_step"))
    L = [f"{what}: {len(ran)} schedules ran, {len(failed)} did not fit the arena; {len(ran) - len(extra)} of those "
         f"that ran recomputed exactly the schedule's nodes and FLOPs besides view replays ({views} of them replayed views), "
         f"{len(extra)} other than planned:", ""]
    for r in extra:
        planned = r["recomputes"] - r["sched_view_recomputes"] - r["sched_kept_recomputes"]
        real = r[k + "remats_per_step"] - r[k + "view_remats_per_step"]
        L.append(f"- {r['model']} {r['method']} at {r['ratio']:g}: {real:.1f} recomputations per step besides "
                 f"{r[k + 'view_remats_per_step']:g} of views, against the schedule's {planned} "
                 f"({r['sched_view_recomputes']} views and {r['sched_kept_recomputes']} kept values aside); "
                 f"recomputed FLOPs {fmt(r.get(k + 'remat_flops_per_step'), '.4g')} against "
                 f"{fmt(r.get('sched_remat_flops'), '.4g')} (cost {fmt(r.get(k + 'cost_slowdown'), '.3f')}, "
                 f"real slowdown {fmt(r.get(k + 'slowdown'))})")
    for r in failed:
        L.append(f"- {r['model']} {r['method']} at {r['ratio']:g}: {r[k + 'status']}: {r.get(k + 'note', '')}")
    return L + [""]


def summary(path, rows, bases, models, configs, meta):
    L = ["# Static planners against DTR on exported zoo models", "",
         f"Made by `{meta['command']}` on {meta['date']}, load average {meta['load0']:.1f} at the start and "
         f"{meta['load1']:.1f} at the end ({meta['seconds']:.0f} s). HiGHS {meta['highs']}, MILP time limit "
         f"{meta['time_limit']:g} s per budget, one solver thread; real runs: {meta['steps']} SGD steps, one "
         f"kernel thread, OMP_WAIT_POLICY=PASSIVE.", "",
         "Ratios are of checkpoint-all's peak on the exported graph (bytes), kernel workspaces "
         "(`workspace_ram`) included; the DTR simulator, which does not model workspaces, gets the same "
         "bytes. `vs opt`: the simulated "
         "overhead over the optimum, which is the MILP's schedule when HiGHS proved it optimal (`*`), else the "
         "best schedule any solver found (then the optimum may be lower). Real runs, two budgets: "
         "**same bytes** (`--budget B` for DTR, the schedule's own `budget_bytes` for `--plan`) and "
         "**+unmodelled** (B plus the runtime's unbudgeted arena peak over the graph's checkpoint-all peak: "
         "memory the graph does not model, such as alignment, fragmentation and values the runtime "
         "creates outside calls). Per mode: status, real slowdown (fastest step, first step left out, over the "
         "unbudgeted runs' fastest), cost ((compute + recomputed compute) / compute, the runtime's FLOP costs) and "
         "recomputations per step (for schedules the schedule's own in parentheses; `[n v]`: n of them replays of "
         "views, Reshape outputs that share their source's memory: the runtime replays a view read after its "
         "source was recomputed, at no cost, where a schedule may keep the 0-byte view). Every run that trained "
         "gave exactly the unbudgeted losses unless marked LOSS MISMATCH.", ""]
    for m in models:
        b = bases.get(m)
        L += [f"## {m}", "", f"`make.py {' '.join(configs[m])}`" + (
            f"; unbudgeted: step {b['step_s'] * 1e3:.1f} ms, arena peak {b['peak_bytes']} bytes, graph "
            f"checkpoint-all peak {b['graph_peak_bytes']} bytes (+unmodelled = {b['extra_bytes']} bytes)"
            if b else ""), "",
              "| ratio | method | status | sim overhead | vs opt | sim peak MiB | solve s | gap | "
              "same bytes | slowdown | cost | remats/step | +unmodelled | slowdown | cost | remats/step |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted((r for r in rows if r["model"] == m), key=lambda r: (-r["ratio"], r["kind"] != "dtr")):
            star = "*" if r.get("opt_proven") and r.get("vs_opt") is not None else ""
            cells = [f"{r['ratio']:g}", r["method"], str(r.get("status")), fmt(r.get("overhead"), ".4f"),
                     fmt(r.get("vs_opt"), ".3f") + star,
                     fmt(r["peak_bytes"] / 2**20 if r.get("peak_bytes") else None, ".2f"),
                     fmt(r.get("solve_s"), ".1f"), fmt(r.get("gap"), ".4f")]
            cells += real_cells(r, "real_") + real_cells(r, "adj_")
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
    L += ["## Goal: dtr-eq within 1.1x of the optimal overhead where the optimum is below 1.5x", "",
          "Without a proven optimum it lies between the MILP's bound and the best schedule known, so dtr-eq / "
          "optimum lies between dtr-eq / best known and dtr-eq / bound (given as lo .. hi; met when hi <= 1.1).", "",
          "| model | ratio | optimal overhead | dtr-eq | dtr-eq / opt | goal |", "|---|---|---|---|---|---|"]
    L += goal_lines(rows, models) + [""]
    L += ["## Real runs of schedules: recomputations beyond the schedule", "",
          "A schedule's recomputations of nodes whose outputs the runtime keeps anyway (a graph output: no "
          "`cost_ram`, only `kept_ram`) find them resident and recompute nothing; they and views are left "
          "aside in the counts below.", ""]
    L += beyond_lines(rows, "real_", "Same bytes") + beyond_lines(rows, "adj_", "+unmodelled")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def highs_version():
    try:
        import highspy
        h = highspy.Highs()
        return f"{h.version()}" if hasattr(h, "version") else "?"
    except Exception:  # noqa: BLE001 - only a label
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtrexec", required=True)
    ap.add_argument("--models", default="resnet18,transformer")
    ap.add_argument("--ratios", default="0.9,0.7,0.5,0.4")
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--heuristics", default=",".join(HEURISTICS))
    ap.add_argument("--time-limit", type=float, default=120)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=300, help="per real run, seconds")
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "results"))
    ap.add_argument("--work-dir")
    a = ap.parse_args()
    a.dtrexec = os.path.abspath(a.dtrexec)
    a.solvers = [s for s in a.solvers.split(",") if s]
    a.heuristics = [h for h in a.heuristics.split(",") if h]
    ratios = [float(x) for x in a.ratios.split(",")]
    configs = QUICK if a.quick else MODELS
    if a.quick:
        ratios, a.time_limit, a.steps = [1.0, 0.95], min(a.time_limit, 20), min(a.steps, 2)
        a.out = tempfile.mkdtemp(prefix="plan-zoo-quick-")
    models = [m for m in a.models.split(",") if m]
    work = a.work_dir or tempfile.mkdtemp(prefix="plan-zoo-")
    os.makedirs(work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    tool = Tool(a, work)
    t0 = time.monotonic()
    meta = {"command": "python3 bench/experiments/plan_zoo.py " + " ".join(sys.argv[1:]), "load0": os.getloadavg()[0],
            "date": time.strftime("%Y-%m-%d %H:%M"), "highs": highs_version(), "time_limit": a.time_limit,
            "steps": a.steps}

    def log(msg):
        print(msg, flush=True)

    rows, bases = [], {}
    for m in models:
        spec = configs[m]
        onnx_path = os.path.join(work, m + ".onnx")
        if not os.path.exists(onnx_path):
            subprocess.run([sys.executable, MAKE] + spec + ["-o", onnx_path], check=True, capture_output=True)
        # beside the schedules, which name it by its base name
        graph = os.path.join(work, f"zoo-{m}.json")
        rc, _, err, wall = tool.dtrexec("export", onnx_path, "--train", "--optimizer", "sgd", "--threads", 1,
                                        "-o", graph)
        if rc:
            raise SystemExit(f"dtrexec export {m} failed ({rc}): {last_line(err)}")
        shutil.copy(graph, os.path.join(a.out, f"zoo-{m}.json"))
        with open(graph) as f:
            nodes = len(json.load(f)["nodes"])
        log(f"{m}: exported {nodes} nodes in {wall:.1f} s -> {graph}")
        mine, schedules = plan_rows(tool, m, graph, ratios, log)
        add_optimum_ratios(mine)
        if not a.no_real:
            base = bases[m] = baseline(tool, m, onnx_path, log)
            # at the same bytes, then with the memory the graph does not
            # model added (the runtime's unbudgeted peak over the graph's)
            graph_peak = all_peak(tool, graph)
            base["graph_peak_bytes"] = graph_peak
            base["extra_bytes"] = max(0, base["peak_bytes"] - graph_peak)
            real_rows(tool, m, onnx_path, mine, schedules, base, "real_", 0, log)
            if base["extra_bytes"]:
                real_rows(tool, m, onnx_path, mine, schedules, base, "adj_", base["extra_bytes"], log)
        rows += mine
    meta["load1"], meta["seconds"] = os.getloadavg()[0], time.monotonic() - t0
    with open(os.path.join(a.out, "zoo_plan.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in FIELDS})
    write_svg(os.path.join(a.out, "zoo_plan.svg"), rows, a.heuristics + a.solvers,
              "Static schedules against DTR on exported zoo models")
    summary(os.path.join(a.out, "zoo_plan.md"), rows, bases, models, configs, meta)
    bad = [r for r in rows if r.get("losses_equal") is False or r.get("within_budget") is False]
    log(f"results in {a.out} ({time.monotonic() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
