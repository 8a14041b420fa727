#!/usr/bin/env python3
"""Training under a memory budget with the real runtime (issue 5's benchmarks).

Drives the `dtrexec` command on models from bench/models/make.py:

1. Budget sweep: per model, an unbudgeted run, then for each heuristic
   budgets from 1.0x of the unbudgeted peak down (0.1 apart, then three finer
   steps below the lowest that trained; after two infeasible budgets in a row,
   or one run above --max-slowdown cost-model slowdown, no lower one). Per run: real slowdown (fastest step
   after the first, over the unbudgeted runs' fastest), cost-model
   slowdown ((model compute + recomputed compute + 32 x bytes moved by
   compactions) / model compute, from the stats), evictions, recomputations, DTR overhead share
   (dtr_overhead_seconds / summed step seconds), feasibility, and whether the
   losses equal the unbudgeted run's exactly (they must: any difference is
   printed as LOSS MISMATCH and marked in the CSV).
2. Bookkeeping overhead: the DTR overhead share unbudgeted (the runtime keeps
   no DTR state then), at 2.0x and 1.5x of the peak (nothing evicted) and at
   0.5x, for dtr-eq.
3. Real slowdown at 0.5x, paired: per heuristic that trains at 0.5x,
   --pairs rounds of an unbudgeted run then a budgeted one, back to back;
   the fastest budgeted step over the fastest unbudgeted step, and the
   spread of the per-round ratios; and dtr-eq at 2.0x (nothing evicted)
   as the control. On the shared machine the same run's
   step time moves by up to 40 % between processes (0.136 to 0.26 s for
   identical ResNet-50 steps) while the fastest step over several processes
   is steady, so the single-run ratios of the sweep are indicative only.
4. Largest batch within a fixed budget (the DTR paper's Table 1): the budget
   is the unbudgeted peak at a base batch; the largest batch whose
   unbudgeted peak fits it, against the largest that trains under it with
   dtr-eq; doubling, then bisection.

Writes budget_sweep.csv, budget_sweep.svg, budget_overhead.csv,
budget_paired.csv, budget_maxbatch.csv and budget_summary.md into --out (bench/results).

Run it with OpenBLAS's overrides unset in that one command:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python3 bench/experiments/budget_sweep.py --dtrexec build/dtrexec
The runs use one kernel thread and OMP_WAIT_POLICY=PASSIVE (set for the
child processes only) because on a loaded two-core machine that is what
gives steady step times; --threads changes the first.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/
MAKE = os.path.join(BENCH_DIR, "models", "make.py")
HEURISTICS = ["dtr", "dtr-eq", "dtr-local", "lru"]
COLORS = {"dtr": "#1a9641", "dtr-eq": "#4169e1", "dtr-local": "#663399", "lru": "#ff8c00"}  # as dtr/sim/plot.c
COARSE = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]

# Sizes where one unbudgeted step takes a fraction of a second on one core
# and activations dominate the weights (pinned bytes are under a tenth of
# the peak). The CNNs run at batch 32: a budget given as a ratio of the peak
# leaves (ratio x peak - pinned) for activations, so the pinned share sets
# how low a ratio can go, and at batch 8 DenseNet's and U-Net's weights,
# gradients and inputs took a fifth of a 0.5x budget (the DTR paper's
# models ran at batches where they are a small fraction). Batch is the
# first make.py argument after the model name.
MODELS = {
    "resnet50": ["resnet50", "--batch", "32", "--size", "128", "--set", "width=8", "--classes", "10"],
    "densenet121": ["densenet121", "--batch", "32", "--size", "64", "--set", "growth=8", "--set", "init=16",
                    "--classes", "10"],
    "unet": ["unet", "--batch", "32", "--size", "64", "--set", "base=8", "--set", "depth=4"],
    "transformer": ["transformer", "--batch", "8", "--seq", "128", "--layers", "4", "--set", "hidden=128",
                    "--set", "heads=4", "--set", "ffn=512", "--set", "vocab=1000"],
    "lstm_lm": ["lstm_lm", "--batch", "16", "--seq", "64", "--set", "hidden=128", "--set", "embed=64",
                "--set", "vocab=1000"],
}
QUICK_MODELS = {  # the tiny variants: a smoke test of the script in seconds
    "resnet50": ["resnet50", "--tiny", "--batch", "8"],
    "transformer": ["transformer", "--tiny", "--batch", "8"],
}
MOVE_COST_PER_BYTE = 32.0  # 2 x RT_COST_FLOPS_PER_BYTE (runtime/call.h)
MAXBATCH = {"resnet50": 8, "transformer": 4}  # base batch whose unbudgeted peak is the budget


class Runner:
    def __init__(self, args, tmp):
        self.dtrexec, self.tmp, self.args = args.dtrexec, tmp, args
        self.env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        self.n = 0

    def make(self, name, spec, batch=None):
        spec = list(spec)
        if batch is not None:
            spec[spec.index("--batch") + 1] = str(batch)
            name = f"{name}-b{batch}"
        path = os.path.join(self.tmp, name + ".onnx")
        if not os.path.exists(path):
            subprocess.run([sys.executable, MAKE] + spec + ["-o", path], check=True, capture_output=True)
        return path

    def train(self, model, steps, extra=()):
        """One dtrexec training run: (exit code, stats or None, stderr)."""
        self.n += 1
        stats = os.path.join(self.tmp, f"s{self.n}.json")
        cmd = [self.dtrexec, model, "--train", "--steps", str(steps), "--optimizer", "sgd", "--threads",
               str(self.args.threads), "--stats", stats, "--quiet"] + list(extra)
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=self.args.timeout, env=self.env)
        except subprocess.TimeoutExpired:
            return "timeout", None, f"over {self.args.timeout} s"
        if res.returncode:
            return res.returncode, None, res.stderr.strip()
        with open(stats) as f:
            return 0, json.load(f), res.stderr


def best_step(st):
    """The fastest step after the first (which warms caches and kernels):
    on a shared machine other work only ever adds time, so the minimum is
    the steadiest estimate of what a step costs."""
    s = st["step_seconds"]
    return min(s[1:] if len(s) > 1 else s)


def row_of(model, h, ratio, budget, base, rc, st, err):
    row = {"model": model, "heuristic": h, "ratio": ratio, "budget_bytes": budget, "feasible": rc == 0,
           "status": "ok" if rc == 0 else ("infeasible" if rc == 2 else f"error {rc}")}
    if rc != 0:
        row["note"] = err.splitlines()[-1][:300] if err else ""
        return row
    model_compute = st["total_compute"]  # the model's calls; recomputations are counted apart
    moved = st.get("compaction_bytes", 0.0)
    row.update({
        "peak_bytes": st["peak_bytes"],
        "step_s": best_step(st),
        "real_slowdown": best_step(st) / base["step_s"],
        # compactions are charged as the runtime weighs them: each byte moved
        # is read and written (2 x 16 cost units per byte, runtime/exec.c)
        "cost_slowdown": ((model_compute + st["remat_compute"] + MOVE_COST_PER_BYTE * moved) / model_compute
                          if model_compute else 1.0),
        "compaction_bytes": moved,
        "evictions": st["evictions"], "window_evictions": st["window_evictions"],
        "compactions": st["compactions"], "remats": st["remats"],
        "dtr_overhead_s": st["dtr_overhead_seconds"],
        "overhead_share": st["dtr_overhead_seconds"] / sum(st["step_seconds"]),
        "losses_equal": st["loss"] == base["loss"],
        "within_budget": st["peak_bytes"] <= budget,
    })
    if not row["losses_equal"]:
        print(f"!!!! LOSS MISMATCH {model} {h} {ratio}x: {st['loss']} != unbudgeted {base['loss']}", flush=True)
    if not row["within_budget"]:
        print(f"!!!! PEAK ABOVE BUDGET {model} {h} {ratio}x: {st['peak_bytes']} > {budget}", flush=True)
    return row


def baseline(run, name, path, steps):
    """Two unbudgeted runs: step times pooled (the first step of each left out)."""
    times, first = [], None
    for _ in range(2):
        rc, st, err = run.train(path, steps)
        if rc:
            raise SystemExit(f"unbudgeted training of {name} failed ({rc}): {err}")
        if first is None:
            first = st
        elif st["loss"] != first["loss"]:
            print(f"!!!! {name}: two unbudgeted runs gave different losses", flush=True)
        times += st["step_seconds"][1:]
    first["step_s"] = min(times)
    return first


def paired_half(run, name, path, base, rows, heuristics, pairs, steps, log):
    """Real slowdown at 0.5x from interleaved unbudgeted/budgeted runs, and
    the same for dtr-eq at 2.0x, where nothing is evicted: the arena and
    DTR's bookkeeping alone, without recomputation."""
    out = []
    runs = [(h, 0.5) for h in heuristics
            if any(r["model"] == name and r["heuristic"] == h and r["feasible"] and abs(r["ratio"] - 0.5) < 1e-9
                   for r in rows)]
    for h, ratio in runs + [("dtr-eq", 2.0)]:
        budget = int(base["peak_bytes"] * ratio)
        plain, dtr, ratios = [], [], []
        for _ in range(pairs):
            rc0, st0, err0 = run.train(path, steps)
            rc1, st1, err1 = run.train(path, steps, ["--budget", str(budget), "--heuristic", h])
            if rc0 or rc1:
                raise SystemExit(f"paired run of {name} {h} failed: {err0 or err1}")
            plain.append(best_step(st0))
            dtr.append(best_step(st1))
            ratios.append(dtr[-1] / plain[-1])
        row = {"model": name, "heuristic": h, "ratio": ratio, "pairs": pairs, "steps": steps,
               "plain_s": min(plain), "budgeted_s": min(dtr), "real_slowdown": min(dtr) / min(plain),
               "round_median": statistics.median(ratios), "round_min": min(ratios), "round_max": max(ratios)}
        log(f"  paired {name} {h} {ratio}x: {row['real_slowdown']:.2f} (rounds {row['round_min']:.2f}.."
            f"{row['round_max']:.2f}, median {row['round_median']:.2f})")
        out.append(row)
    return out


def log_row(log, row):
    h, r = row["heuristic"], row["ratio"]
    if row["feasible"]:
        log(f"  {h:9s} {r:5.3f}x  real {row['real_slowdown']:5.2f}  cost {row['cost_slowdown']:5.2f}  "
            f"ev {row['evictions']:7d}  remat {row['remats']:7d}  ovh {100 * row['overhead_share']:4.1f}%"
            + ("" if row["losses_equal"] else "  LOSS MISMATCH"))
    else:
        log(f"  {h:9s} {r:5.3f}x  {row['status']}: {row.get('note', '')[:160]}")


def descend(one, rows, heuristics, max_slowdown, log):
    """Per heuristic, budgets from 1.0x down (COARSE, then three finer steps
    below the lowest that trained); after two infeasible budgets in a row, or
    one run above max_slowdown cost-model slowdown, no lower one. one(h, r)
    runs a budget and returns its row; rows collects them."""

    def run(h, r):
        row = one(h, r)
        rows.append(row)
        log_row(log, row)
        return row["feasible"]

    def too_slow():
        last = rows[-1]
        if last["feasible"] and last["cost_slowdown"] > max_slowdown:
            log(f"  {last['heuristic']:9s} cost-model slowdown above {max_slowdown:g}x: no lower budget tried")
            last["note"] = f"lowest tried: cost-model slowdown above {max_slowdown:g}x"
            return True
        return False

    for h in heuristics:
        lowest, fails, stopped = None, 0, False
        for r in COARSE:
            if run(h, r):
                lowest, fails = r, 0
                if too_slow():
                    stopped = True
                    break
            else:
                fails += 1
                if fails == 2:  # two infeasible in a row: lower budgets are not tried
                    break
        if lowest is not None and lowest > COARSE[-1] and not stopped:
            for k in (1, 2, 3):  # finer near the limit
                if not run(h, round(lowest - 0.025 * k, 3)) or too_slow():
                    break


def sweep_model(run, name, spec, heuristics, steps, max_slowdown, log):
    path = run.make(name, spec)
    base = baseline(run, name, path, steps)
    peak = base["peak_bytes"]
    log(f"{name}: unbudgeted peak {peak / 2**20:.1f} MiB, pinned {base['pinned_bytes'] / 2**20:.1f} MiB, "
        f"step {base['step_s'] * 1e3:.0f} ms, DTR overhead {base['dtr_overhead_seconds']} s, "
        f"evictions {base['evictions']}")
    rows = []

    def one(h, r):
        budget = int(peak * r)
        rc, st, err = run.train(path, steps, ["--budget", str(budget), "--heuristic", h])
        return row_of(name, h, r, budget, base, rc, st, err)

    descend(one, rows, heuristics, max_slowdown, log)
    return base, rows


def overhead_rows(run, name, spec, base, steps, log):
    path = run.make(name, spec)
    peak = base["peak_bytes"]
    out = [{"model": name, "setting": "unbudgeted", "ratio": "", "step_s": base["step_s"],
            "dtr_overhead_s": base["dtr_overhead_seconds"],
            "overhead_share": base["dtr_overhead_seconds"] / sum(base["step_seconds"]),
            "evictions": base["evictions"], "remats": base["remats"], "step_vs_unbudgeted": 1.0}]
    for r in (2.0, 1.5, 0.5):
        rc, st, err = run.train(path, steps, ["--budget", str(int(peak * r)), "--heuristic", "dtr-eq"])
        if rc:
            out.append({"model": name, "setting": "dtr-eq", "ratio": r, "note": f"exit {rc}: {err[:200]}"})
            continue
        out.append({"model": name, "setting": "dtr-eq", "ratio": r, "step_s": best_step(st),
                    "dtr_overhead_s": st["dtr_overhead_seconds"],
                    "overhead_share": st["dtr_overhead_seconds"] / sum(st["step_seconds"]),
                    "compaction_share": st.get("compaction_seconds", 0.0) / sum(st["step_seconds"]),
                    "evictions": st["evictions"], "remats": st["remats"],
                    "step_vs_unbudgeted": best_step(st) / base["step_s"]})
    for o in out:
        if "overhead_share" in o:
            log(f"  overhead {name} {o['setting']} {o['ratio']}: {100 * o['overhead_share']:.2f}% of step time, "
                f"{o['evictions']} evictions, step x{o['step_vs_unbudgeted']:.2f}")
    return out


def max_batch(run, name, spec, base_batch, steps, log):
    """Largest batch without DTR (unbudgeted peak <= budget) and with dtr-eq."""
    path = run.make(name, spec, base_batch)
    rc, st, err = run.train(path, 2)
    if rc:
        raise SystemExit(f"{name} at batch {base_batch}: {err}")
    budget = st["peak_bytes"]
    cache = {}

    def fits(batch, dtr):
        if (batch, dtr) not in cache:
            p = run.make(name, spec, batch)
            if dtr:
                rc, st, err = run.train(p, steps, ["--budget", str(budget), "--heuristic", "dtr-eq"])
                ok = rc == 0
            else:
                rc, st, err = run.train(p, steps)
                ok = rc == 0 and st["peak_bytes"] <= budget
            cache[(batch, dtr)] = (ok, st)
            log(f"  maxbatch {name} {'dtr-eq' if dtr else 'no DTR'} batch {batch}: "
                f"{'fits' if ok else 'does not fit'}" + (f" (peak {st['peak_bytes']})" if st else f" ({rc})"))
        return cache[(batch, dtr)][0]

    result = []
    for dtr in (False, True):
        lo, hi = base_batch, None  # lo fits (the budget is its own peak), hi does not
        while hi is None:
            b = lo * 2
            if fits(b, dtr):
                lo = b
            else:
                hi = b
            if lo >= 64 * base_batch:
                break
        while hi is not None and hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid, dtr):
                lo = mid
            else:
                hi = mid
        if not fits(lo, dtr):  # only the base batch can be untried here; it fits by construction
            raise SystemExit(f"{name}: batch {lo} does not fit its own unbudgeted peak "
                             f"({'dtr-eq' if dtr else 'no DTR'}): a runtime bug")
        st = cache[(lo, dtr)][1]
        result.append({"model": name, "mode": "dtr-eq" if dtr else "no DTR", "budget_bytes": budget,
                       "base_batch": base_batch, "max_batch": lo, "step_s": best_step(st),
                       "samples_per_s": lo / best_step(st), "peak_bytes": st["peak_bytes"],
                       "remats": st["remats"], "evictions": st["evictions"]})
    return result


# ---- SVG ---------------------------------------------------------------------

PANEL_W, PANEL_H, ML, MR, MT, MB = 380, 290, 58, 16, 34, 46


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_step(rng):
    import math
    raw = rng / 5
    mag = 10 ** math.floor(math.log10(raw))
    r = raw / mag
    return (1 if r < 1.5 else 2 if r < 3.5 else 5 if r < 7.5 else 10) * mag


def write_svg(path, rows, heuristics, title, ycap=6.0):
    import math
    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    cols = 1 if len(models) < 2 else 2
    grid = (len(models) + cols - 1) // cols
    legend_h = 54
    width, height = cols * PANEL_W, grid * PANEL_H + legend_h + 30
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
         '<rect width="100%" height="100%" fill="white"/>',
         f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="14">{esc(title)}</text>']
    for m, model in enumerate(models):
        ox, oy = (m % cols) * PANEL_W, 26 + (m // cols) * PANEL_H
        pw, ph = PANEL_W - ML - MR, PANEL_H - MT - MB
        mine = [r for r in rows if r["model"] == model]
        ys = [v for r in mine if r["feasible"] for v in (r["real_slowdown"], r["cost_slowdown"])]
        ymax = min(max(ys + [1.0]), ycap)
        step = nice_step(max(ymax - 1.0, 0.05) * 1.1)
        ytop = 1.0 + math.ceil((ymax - 1.0) * 1.1 / step + 1e-9) * step
        ybot = min([1.0] + [v for v in ys if v < 1.0])  # real slowdowns under 1 are timing noise
        ybot = 1.0 - math.ceil((1.0 - ybot) / step - 1e-9) * step if ybot < 1.0 else 1.0
        xmin, xmax = 0.0, 1.0

        def px(x):
            return ox + ML + (x - xmin) / (xmax - xmin) * pw

        def py(y):
            return oy + MT + ph - (min(y, ytop) - ybot) / (ytop - ybot) * ph

        o.append(f'<g>\n<text x="{ox + ML + pw / 2:.1f}" y="{oy + MT - 14}" text-anchor="middle" '
                 f'font-size="13">{esc(model)}</text>')
        o.append(f'<rect x="{ox + ML}" y="{oy + MT}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
        y = ybot
        while y <= ytop + 1e-9:
            o.append(f'<line x1="{ox + ML}" x2="{ox + ML + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>'
                     f'<text x="{ox + ML - 4}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
            y += step
        for t in range(0, 11, 2):
            x = xmin + (xmax - xmin) * t / 10
            o.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{oy + MT}" y2="{oy + MT + ph}" stroke="#ddd"/>'
                     f'<text x="{px(x):.1f}" y="{oy + MT + ph + 14}" text-anchor="middle">{x:.1f}</text>')
        o.append(f'<text x="{ox + ML + pw / 2:.1f}" y="{oy + MT + ph + 32}" text-anchor="middle">'
                 f'budget / unbudgeted peak</text>')
        o.append(f'<text transform="translate({ox + 14},{oy + MT + ph / 2:.1f}) rotate(-90)" '
                 f'text-anchor="middle">slowdown (x)</text>')
        for hi, h in enumerate(heuristics):
            c = COLORS.get(h, "#000")
            ok = sorted((r for r in mine if r["heuristic"] == h and r["feasible"]), key=lambda r: r["ratio"])
            for key, dash, wid in (("cost_slowdown", ' stroke-dasharray="4 3"', 1.0),
                                   ("real_slowdown", "", 1.6)):
                pts = " ".join(f"{px(r['ratio']):.1f},{py(r[key]):.1f}" for r in ok)
                o.append(f'<polyline fill="none" stroke="{c}" stroke-width="{wid}"{dash} points="{pts}">'
                         f'<title>{esc(h)} {key.replace("_", " ")}</title></polyline>')
            for r in ok:
                v = r["real_slowdown"]
                tip = (f"{h} {r['ratio']:.3f}x: real {v:.2f}, cost model {r['cost_slowdown']:.2f}, "
                       f"{r['evictions']} evictions, {r['remats']} remats")
                if v > ytop:  # off the scale: a triangle on the top edge
                    o.append(f'<path d="M{px(r["ratio"]):.1f} {oy + MT + 1:.1f} l3 6 l-6 0 z" fill="{c}">'
                             f'<title>{esc(tip)}</title></path>')
                else:
                    o.append(f'<circle cx="{px(r["ratio"]):.1f}" cy="{py(v):.1f}" r="2.6" fill="{c}">'
                             f'<title>{esc(tip)}</title></circle>')
            for r in mine:
                if r["heuristic"] == h and not r["feasible"]:
                    x, y = px(r["ratio"]), oy + MT + ph - 6 - 4 * hi
                    o.append(f'<path d="M{x - 3:.1f} {y - 3:.1f} l6 6 m0 -6 l-6 6" stroke="{c}" stroke-width="1.4">'
                             f'<title>{esc(h)} {r["ratio"]:.3f}x: {esc(r["status"])}</title></path>')
        o.append("</g>")
    lx, ly = 20, height - legend_h + 6
    for h in heuristics:
        o.append(f'<line x1="{lx}" x2="{lx + 22}" y1="{ly}" y2="{ly}" stroke="{COLORS.get(h, "#000")}" '
                 f'stroke-width="2"/><text x="{lx + 26}" y="{ly + 4}">{esc(h)}</text>')
        lx += 100
    o.append(f'<text x="20" y="{ly + 22}" fill="#444">Solid: measured slowdown (fastest step over the '
             f'unbudgeted one); dashed: cost-model slowdown.</text>')
    o.append(f'<text x="20" y="{ly + 38}" fill="#444">x along the bottom edge: infeasible (exit 2); '
             f'triangle on the top edge: slowdown above {ytop_note(ycap)}.</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def ytop_note(ycap):
    return f"the scale (capped near {ycap:g}x)"


# ---- tables ------------------------------------------------------------------

def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def fmt(v, spec=".2f"):
    return "—" if v is None else format(v, spec)


def summary(rows, bases, over, maxb, paired, heuristics, configs, meta):
    L = [f"# Budgeted training sweep ({meta['date']})", "",
         f"Command: `{meta['command']}`", "",
         f"Load average at start {meta['load0']}, at end {meta['load1']}; {meta['threads']} kernel thread(s), "
         f"OMP_WAIT_POLICY=PASSIVE, {meta['steps']} steps per run (step time: the fastest after the first); "
         f"wall time {meta['wall']:.0f} s.", "", "## Models", "",
         "| model | make.py arguments | unbudgeted peak MiB | pinned MiB | step ms |", "|---|---|---|---|---|"]
    for m, b in bases.items():
        L.append(f"| {m} | `{' '.join(configs[m])}` | {b['peak_bytes'] / 2**20:.1f} | "
                 f"{b['pinned_bytes'] / 2**20:.1f} | {b['step_s'] * 1e3:.0f} |")
    L += ["", "## Lowest feasible budget and slowdowns", "",
          "Real = measured step-time ratio (at 0.5x the paired measurement below; elsewhere one run against the "
          "unbudgeted runs, indicative only); cost = cost-model ratio (recomputations, and compactions at 32 units per "
          "byte moved, as the runtime weighs them). `lowest` is the lowest ratio that trained "
          f"(after two infeasible ratios in a row, or one run above {meta['max_slowdown']:g}x cost-model slowdown, "
          "no lower one is tried; `*`: stopped by that slowdown cap, lower budgets may train).", "",
          "| model | heuristic | lowest | real @0.5x | cost @0.5x | real @lowest | cost @lowest | "
          "evictions @lowest | remats @lowest | overhead share @lowest | losses equal |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in bases:
        for h in heuristics:
            mine = [r for r in rows if r["model"] == m and r["heuristic"] == h]
            ok = [r for r in mine if r["feasible"]]
            low = min(ok, key=lambda r: r["ratio"]) if ok else None
            half = next((r for r in ok if abs(r["ratio"] - 0.5) < 1e-9), None)
            pair = next((p for p in paired if p["model"] == m and p["heuristic"] == h and p["ratio"] == 0.5), None)
            if half and pair:
                half = dict(half, real_slowdown=pair["real_slowdown"])
            eq = all(r["losses_equal"] for r in ok)
            star = "*" if low and low.get("note", "").startswith("lowest tried") else ""
            L.append(f"| {m} | {h} | {fmt(low and low['ratio'], '.3f')}{star} | {fmt(half and half['real_slowdown'])} | "
                     f"{fmt(half and half['cost_slowdown'])} | {fmt(low and low['real_slowdown'])} | "
                     f"{fmt(low and low['cost_slowdown'])} | {fmt(low and low['evictions'], 'd')} | "
                     f"{fmt(low and low['remats'], 'd')} | "
                     f"{fmt(low and 100 * low['overhead_share'], '.1f')}% | "
                     f"{'yes' if eq else '**NO**'} ({len(ok)} runs) |")
    if paired:
        L += ["", "## Real slowdown at 0.5x, paired", "",
              f"Per heuristic, {paired[0]['pairs']} rounds of an unbudgeted run and a 0.5x run back to back, "
              f"{paired[0]['steps']} steps each; slowdown = fastest budgeted step / fastest unbudgeted step over "
              "all rounds; the rounds' own ratios show the machine's noise. The dtr-eq 2.0x row is the control: "
              "nothing is evicted there, so it is what the arena and DTR's bookkeeping alone do to a step (the "
              "unbudgeted run allocates tensor by tensor and builds no DTR state).", "",
              "| model | heuristic | budget | unbudgeted ms | budgeted ms | real slowdown | rounds: min | median | max |",
              "|---|---|---|---|---|---|---|---|---|"]
        for p in paired:
            L.append(f"| {p['model']} | {p['heuristic']} | {p['ratio']}x | {p['plain_s'] * 1e3:.0f} | {p['budgeted_s'] * 1e3:.0f} | "
                     f"{p['real_slowdown']:.2f} | {p['round_min']:.2f} | {p['round_median']:.2f} | "
                     f"{p['round_max']:.2f} |")
    L += ["", "## DTR bookkeeping overhead (dtr-eq)", "",
          "Share = dtr_overhead_seconds / summed step seconds, of which moving = compaction_seconds (blocks moved "
          "to make holes, the moves' search included) and bookkeeping = the rest (metadata upkeep, eviction "
          "search); step x = fastest step over the unbudgeted fastest (one run: indicative only).",
          "", "| model | setting | share | of which moving | of which bookkeeping | evictions | remats | step x |",
          "|---|---|---|---|---|---|---|---|"]
    for o in over:
        if "overhead_share" not in o:
            L.append(f"| {o['model']} | {o['setting']} {o['ratio']}x | {o.get('note', '')} | | | | | |")
            continue
        s = o["setting"] + (f" {o['ratio']}x" if o["ratio"] != "" else "")
        moving = o.get("compaction_share", 0.0)
        L.append(f"| {o['model']} | {s} | {100 * o['overhead_share']:.2f}% | {100 * moving:.2f}% | "
                 f"{100 * (o['overhead_share'] - moving):.2f}% | {o['evictions']} | {o['remats']} | "
                 f"{o['step_vs_unbudgeted']:.2f} |")
    if maxb:
        L += ["", "## Largest batch within a fixed budget", "",
              "Budget = unbudgeted peak at the base batch. Without DTR a batch fits when its unbudgeted peak is "
              "within the budget; with DTR when `--budget` training succeeds (dtr-eq).", "",
              "| model | budget MiB | base batch | mode | max batch | step ms | samples/s | remats |",
              "|---|---|---|---|---|---|---|---|"]
        for r in maxb:
            L.append(f"| {r['model']} | {r['budget_bytes'] / 2**20:.1f} | {r['base_batch']} | {r['mode']} | "
                     f"{r['max_batch']} | {r['step_s'] * 1e3:.0f} | {r['samples_per_s']:.1f} | {r['remats']} |")
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtrexec", default=os.path.join(BENCH_DIR, "..", "build", "dtrexec"))
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "results"))
    ap.add_argument("--models", default=None, help="comma-separated subset")
    ap.add_argument("--heuristics", default=",".join(HEURISTICS))
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=60, help="seconds per run (a run over it counts as failed)")
    ap.add_argument("--max-slowdown", type=float, default=4.0,
                    help="after a run whose cost-model slowdown is above this, try no lower budget")
    ap.add_argument("--no-maxbatch", action="store_true")
    ap.add_argument("--pairs", type=int, default=5, help="rounds of the paired 0.5x measurement (0: none)")
    ap.add_argument("--pair-steps", type=int, default=6, help="steps per run of the paired measurement")
    ap.add_argument("--quick", action="store_true", help="tiny models, a smoke test (results not written to --out "
                                                        "unless it is given)")
    args = ap.parse_args()
    configs = QUICK_MODELS if args.quick else MODELS
    if args.models:
        configs = {k: configs[k] for k in args.models.split(",")}
    heuristics = args.heuristics.split(",")
    if args.quick and "--out" not in sys.argv:
        args.out = tempfile.mkdtemp(prefix="budget_sweep_")
    os.makedirs(args.out, exist_ok=True)
    t0, load0 = time.time(), "%.2f %.2f %.2f" % os.getloadavg()

    def log(s):
        print(s, flush=True)

    log(f"load average {load0}")
    with tempfile.TemporaryDirectory() as tmp:
        run = Runner(args, tmp)
        rows, bases, over, maxb, paired = [], {}, [], [], []
        for name, spec in configs.items():
            base, r = sweep_model(run, name, spec, heuristics, args.steps, args.max_slowdown, log)
            bases[name], rows = base, rows + r
            over += overhead_rows(run, name, spec, base, args.steps, log)
            if args.pairs:
                paired += paired_half(run, name, run.make(name, spec), base, r, heuristics, args.pairs,
                                      args.pair_steps, log)
        if not args.no_maxbatch:
            for name, b0 in MAXBATCH.items():
                if name in configs:
                    maxb += max_batch(run, name, configs[name], b0, args.steps, log)
                    for r in maxb[-2:]:
                        log(f"  {name} {r['mode']}: max batch {r['max_batch']}, step {r['step_s'] * 1e3:.0f} ms")
    load1 = "%.2f %.2f %.2f" % os.getloadavg()
    fields = ["model", "heuristic", "ratio", "budget_bytes", "feasible", "status", "peak_bytes", "step_s",
              "real_slowdown", "cost_slowdown", "evictions", "window_evictions", "compactions", "compaction_bytes", "remats",
              "dtr_overhead_s", "overhead_share", "losses_equal", "within_budget", "note"]
    write_csv(os.path.join(args.out, "budget_sweep.csv"), rows, fields)
    write_csv(os.path.join(args.out, "budget_overhead.csv"), over,
              ["model", "setting", "ratio", "step_s", "dtr_overhead_s", "overhead_share", "compaction_share",
               "evictions", "remats",
               "step_vs_unbudgeted", "note"])
    if paired:
        write_csv(os.path.join(args.out, "budget_paired.csv"), paired,
                  ["model", "heuristic", "ratio", "pairs", "steps", "plain_s", "budgeted_s", "real_slowdown",
                   "round_min", "round_median", "round_max"])
    if maxb:
        write_csv(os.path.join(args.out, "budget_maxbatch.csv"), maxb,
                  ["model", "mode", "budget_bytes", "base_batch", "max_batch", "step_s", "samples_per_s",
                   "peak_bytes", "evictions", "remats"])
    write_svg(os.path.join(args.out, "budget_sweep.svg"), rows, heuristics,
              "Measured slowdown of budgeted training against memory budget (dtrexec, CPU)")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "load0": load0, "load1": load1, "threads": args.threads,
            "steps": args.steps, "wall": time.time() - t0, "max_slowdown": args.max_slowdown,
            "command": "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 bench/experiments/budget_sweep.py "
                       + " ".join(sys.argv[1:])}
    text = summary(rows, bases, over, maxb, paired, heuristics, configs, meta)
    with open(os.path.join(args.out, "budget_summary.md"), "w") as f:
        f.write(text)
    print(text)
    bad = [r for r in rows if r["feasible"] and not (r["losses_equal"] and r["within_budget"])]
    if bad:
        print(f"!!!! {len(bad)} budgeted runs differ from the unbudgeted run or exceeded the budget", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
