#!/usr/bin/env python3
"""Dynamic models (issue 8) end to end: control flow and changing shapes in
inference, training and budgeted training. Usage: dynamic_check.py DTREXEC CASE

The models come from bench/models/make_dynamic.py (small configurations):
lstm_var_len (Scan over an LSTM cell, symbolic sequence length `seq`),
treelstm (Loop over the merges of a random binary tree), early_exit (If on
a data-dependent confidence). Cases:

  infer-MODEL   dtrexec's outputs equal onnxruntime's (rtol 1e-3, atol 1e-4)
                on seeded inputs: lstm_var_len at several lengths, with the
                Scan cell and with the LSTM operator; treelstm on several
                trees (the merge order exactly) and with a symbolic leaf
                count, with both frontier forms (sequence, tensor); early_exit on inputs that take each branch (both
                must occur) and with the thresholds that force one.
  train-MODEL   `dtrexec MODEL --train --steps N` trains (treelstm and
                early_exit with --fresh-inputs: a new tree, a new batch
                every step): one finite loss per step, of a plausible size.
                early_exit also: over its steps both branches ran (the
                steps' operator counts in the --trace differ).
  budget-MODEL  training under --budget (0.6 and 0.5 or 0.3 of the unbudgeted
                peak, heuristics dtr and dtr-eq) with --verify-remat: losses
                and saved weights bit-identical to the unbudgeted run, peak
                within the budget, and at least one run recomputes.
                lstm_var_len trains with --dim seq=8:24 here, the others
                with --fresh-inputs, so the budget holds across changing
                shapes, trees and branches.
  dims-lstm_var_len  --dim seq=8:24 draws a length per step from the seed:
                the lengths seen in the --trace (embedding output bytes) lie
                in [8, 24], are not all equal, and repeat with the same
                seed; another seed draws other lengths.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench", "experiments"))
sys.path.insert(0, os.path.join(HERE, "..", "bench", "models"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import make_dynamic  # noqa: E402
import runners  # noqa: E402

# Configurations for training: small, with activations well above the
# weights so that budgets below the peak leave something to evict.
TRAIN_CONFIGS = {
    "lstm_var_len": dict(batch=8, layers=2, embed=16, hidden=16, vocab=32),
    "treelstm": dict(leaves=32, embed=16, hidden=16, vocab=50, classes=5),
    "early_exit": dict(batch=512, inp=16, hidden=32, classes=10, late=10),
}
# Training arguments: --fresh-inputs draws new inputs (a new tree, a new
# batch) and targets every step; a --dim range implies it.
TRAIN_ARGS = {"lstm_var_len": ["--dim", "seq=12"], "treelstm": ["--fresh-inputs"], "early_exit": ["--fresh-inputs"]}
DYNAMIC_ARGS = {"lstm_var_len": ["--dim", "seq=8:24"], "treelstm": ["--fresh-inputs"],
                "early_exit": ["--fresh-inputs"]}
STEPS = 3
# Two budgets where each model recomputes (the sequence-frontier TreeLSTM
# keeps little beyond its per-subtree states; the LSTM's Scan cuts its input
# with one Split, whose gradient Concat needs every step's gradient at once,
# so its peak is low and its budgets close to it). Since the backward pass
# releases consumed partial gradient sums at once (train.c), the LSTM's and
# the TreeLSTM's unbudgeted peaks are 305 KB and 103 KB, down from 419 KB
# and 391 KB: the ratios moved up, the budgets in bytes went down. The
# TreeLSTM's merge scales by a 0-d noise_scale, which no longer trains
# (runtime/params.c), so its Mul no longer holds the product it scales for
# the backward pass: the peak is 97.5 KB, and 0.93x (90.7 KB, below the 93 KB
# of 0.9x before) is the lower budget.
# Since taped loss calls hold only what their gradients read and graph
# outputs are not held past them (budgeted steps copy them to the host), the
# LSTM trains at 0.98x and 0.97x without recomputing: 0.95x and 0.9x do.
BUDGET_RATIOS = {"lstm_var_len": (0.95, 0.9), "treelstm": (0.95, 0.93), "early_exit": (0.6, 0.5)}


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def run(cmd, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def save(model, tmp, name):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save_model(model, path)
    onnx.checker.check_model(path, full_check=True)
    return path


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


# ---- inference against onnxruntime ----------------------------------------------

def compare_one(dtrexec, path, feeds, tmp, tag):
    want, _ = runners.run_onnxruntime(path, feeds)
    try:
        got, _, _ = runners.run_dtrexec(dtrexec, path, feeds, work_dir=os.path.join(tmp, tag), timeout=120)
    except runners.DtrexecError as e:
        fail(f"{tag}: {e}\n{e.stderr}")
    ok, max_abs, _, why = runners.compare(want, got)
    for w, g in zip(want, got):   # integer outputs (merge order) exactly
        if np.issubdtype(np.asarray(w).dtype, np.integer) and not np.array_equal(w, g):
            ok, why = False, f"integer output differs: {np.ravel(g).tolist()} != {np.ravel(w).tolist()}"
    if not ok:
        fail(f"{tag}: dtrexec differs from onnxruntime: {why}")
    print(f"ok   {tag}: max abs diff {max_abs:.3g}")
    return want


def infer_lstm(dtrexec, tmp):
    for cell in ("scan", "op"):
        for layers in (1, 2):
            model = make_dynamic.make("lstm_var_len", tiny=True, cell=cell, layers=layers)
            path = save(model, tmp, f"lstm-{cell}-{layers}")
            for seq in (2, 9, 17):
                feeds = make_dynamic.sample_inputs(model, seed=seq, dims={"seq": seq})
                loss, logits = compare_one(dtrexec, path, feeds, tmp, f"lstm_var_len cell={cell} layers={layers} "
                                                                     f"seq={seq}")
                if logits.shape[0] != (seq - 1) * feeds["input_ids"].shape[0]:
                    fail(f"logits {logits.shape} for seq {seq}")


def infer_treelstm(dtrexec, tmp):
    for frontier in ("sequence", "tensor"):
        model = make_dynamic.make("treelstm", tiny=True, frontier=frontier)
        path = save(model, tmp, f"treelstm-{frontier}")
        orders = set()
        for seed in range(4):
            feeds = make_dynamic.sample_inputs(model, seed=seed)
            _, order = compare_one(dtrexec, path, feeds, tmp, f"treelstm frontier={frontier} seed={seed}")
            if order.ravel().tolist() != make_dynamic.treelstm_merge_order(feeds["merge_noise"]):
                fail(f"treelstm seed={seed}: merge order {order.ravel().tolist()} is not the one the noise gives")
            orders.add(tuple(order.ravel().tolist()))
        if len(orders) < 2:
            fail("treelstm: four seeds gave the same tree; the inputs do not drive the tree")
        model = make_dynamic.make("treelstm", tiny=True, dynamic_leaves=True, frontier=frontier)
        path = save(model, tmp, f"treelstm-{frontier}-dyn")
        for n in (2, 5, 13):
            feeds = make_dynamic.sample_inputs(model, seed=n, dims={"leaves": n})
            compare_one(dtrexec, path, feeds, tmp, f"treelstm frontier={frontier} leaves={n}")


def early_branch(model, feeds):
    """True when the model's early head would answer (numpy, its weights)."""
    w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    h = np.maximum(feeds["x"] @ w["stem.weight"] + w["stem.bias"], 0)
    e = h @ w["early_head.weight"] + w["early_head.bias"]
    p = np.exp(e - e.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return p.max(1).mean() > w["exit.threshold"]


def infer_early_exit(dtrexec, tmp):
    model = make_dynamic.make("early_exit", tiny=True)
    path = save(model, tmp, "early_exit")
    taken = set()
    for seed in range(8):
        feeds = make_dynamic.sample_inputs(model, seed=seed)
        branch = "early" if early_branch(model, feeds) else "late"
        compare_one(dtrexec, path, feeds, tmp, f"early_exit seed={seed} ({branch} exit)")
        taken.add(branch)
    if taken != {"early", "late"}:
        fail(f"early_exit: eight seeds took only the {taken} branch")
    for thr in (0.0, 1.0):
        model = make_dynamic.make("early_exit", tiny=True, threshold=thr)
        path = save(model, tmp, f"early_exit-{thr}")
        compare_one(dtrexec, path, make_dynamic.sample_inputs(model, seed=1), tmp, f"early_exit threshold={thr}")


# ---- training -------------------------------------------------------------------

def train(dtrexec, path, tmp, tag, extra, steps=STEPS, seed=3):
    out, stats = os.path.join(tmp, tag + ".onnx"), os.path.join(tmp, tag + ".json")
    cmd = [dtrexec, path, "--train", "--steps", str(steps), "--optimizer", "momentum", "--lr", "0.05",
           "--seed", str(seed), "--threads", "1", "--save", out, "--stats", stats, "--quiet"] + list(extra)
    res = run(cmd)
    if res.returncode:
        return res, None, None
    with open(stats) as f:
        return res, json.load(f), weights(out)


def train_model(name, tmp):
    return save(make_dynamic.make(name, **TRAIN_CONFIGS[name]), tmp, name)


def steps_of_trace(path):
    """Per forward run (ANNOTATE START): the CALL records up to BACKWARD, as
    (op name, [result bytes]) pairs."""
    steps, cur, pending, in_fwd = [], None, None, False
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            kind = r.get("INSTRUCTION")
            if kind == "ANNOTATE":
                if r.get("ANNOTATION") == "START":
                    cur, in_fwd = [], True
                    steps.append(cur)
                elif r.get("ANNOTATION") == "BACKWARD":
                    in_fwd = False
            elif kind == "CALL" and in_fwd:
                pending = [r["NAME"], list(r.get("RESULT", [])), []]
                cur.append(pending)
            elif kind == "MEMORY" and pending is not None and r["NAME"] in pending[1]:
                pending[2].append(int(r["MEMORY"]))
    return [[(op, mem) for op, _, mem in st] for st in steps]


def check_train(dtrexec, name, tmp):
    path = train_model(name, tmp)
    trace = os.path.join(tmp, "train.jsonl")
    steps = 10 if name == "early_exit" else STEPS
    res, st, _ = train(dtrexec, path, tmp, "train", TRAIN_ARGS[name] + ["--trace", trace], steps=steps)
    if res.returncode:
        fail(f"{name}: training exited {res.returncode}: {res.stderr.strip()}")
    loss = st.get("loss") or []
    if len(loss) != steps or not all(math.isfinite(v) for v in loss):
        fail(f"{name}: losses {loss} for {steps} steps")
    classes = {"lstm_var_len": TRAIN_CONFIGS["lstm_var_len"]["vocab"]}.get(name) or TRAIN_CONFIGS[name]["classes"]
    # Cross-entropy of near-uniform predictions is about log(classes).
    if not all(0 < v < 3 * math.log(classes) for v in loss):
        fail(f"{name}: losses {loss} are not of the size of a cross-entropy over {classes} classes")
    per_step = steps_of_trace(trace)
    if len(per_step) != steps:
        fail(f"{name}: the trace holds {len(per_step)} forward runs for {steps} steps")
    counts = [len(s) for s in per_step]
    print(f"ok   {name}: losses {loss}; forward calls per step {counts}")
    if name == "early_exit":
        if len(set(counts)) < 2:
            fail(f"early_exit: every step ran the same {counts[0]} calls: one branch only over {steps} steps "
                 "(are the random inputs drawn anew each step?)")
        print(f"ok   early_exit: both branches ran ({sorted(set(counts))} calls per forward run)")


# ---- budgeted training ----------------------------------------------------------

def check_budget(dtrexec, name, tmp):
    path = train_model(name, tmp)
    dims = DYNAMIC_ARGS[name]
    res, base, base_w = train(dtrexec, path, tmp, "base", dims)
    if res.returncode:
        fail(f"{name}: unbudgeted training exited {res.returncode}: {res.stderr.strip()}")
    peak = base["peak_bytes"]
    print(f"{name}: unbudgeted peak {peak} bytes (pinned {base['pinned_bytes']}), losses {base['loss']}")
    remats = 0
    for h in ("dtr", "dtr-eq"):
        for r in BUDGET_RATIOS[name]:
            budget = int(peak * r)
            res, st, w = train(dtrexec, path, tmp, f"{h}-{r}",
                               dims + ["--budget", str(budget), "--heuristic", h, "--verify-remat"])
            if res.returncode:
                fail(f"{name} {h} at {r}x ({budget} bytes) exited {res.returncode}: {res.stderr.strip()}")
            if st["peak_bytes"] > budget:
                fail(f"{name} {h} {r}x: peak {st['peak_bytes']} above the budget {budget}")
            if st["loss"] != base["loss"]:
                fail(f"{name} {h} {r}x: losses {st['loss']} differ from the unbudgeted {base['loss']}")
            # Pinned = weights, inputs and optimizer state: the same with or
            # without a budget, whatever else the arena held when inputs changed.
            if st["pinned_bytes"] != base["pinned_bytes"]:
                fail(f"{name} {h} {r}x: {st['pinned_bytes']} bytes pinned, the unbudgeted run "
                     f"{base['pinned_bytes']}")
            for k in base_w:
                if base_w[k].tobytes() != w[k].tobytes():
                    fail(f"{name} {h} {r}x: weight {k} differs from the unbudgeted run's")
            remats = max(remats, st["remats"])
            print(f"ok   {name} {h} {r}x: bit-identical, peak {st['peak_bytes']} <= {budget}, "
                  f"{st['evictions']} evictions, {st['remats']} recomputations")
    if not remats:
        fail(f"{name}: no budgeted run recomputed anything: the check is vacuous")


def check_long_scan(dtrexec, tmp):
    """A Scan over more than 64 steps: one Split of that many outputs, whose
    gradient is one Concat of as many inputs, under a budget."""
    path = train_model("lstm_var_len", tmp)
    dims = ["--dim", "seq=66:80"]
    res, base, base_w = train(dtrexec, path, tmp, "long-base", dims)
    if res.returncode:
        fail(f"long scan: unbudgeted training exited {res.returncode}: {res.stderr.strip()}")
    budget = int(base["peak_bytes"] * 0.95)
    res, st, w = train(dtrexec, path, tmp, "long-dtr", dims + ["--budget", str(budget), "--verify-remat"])
    if res.returncode:
        fail(f"long scan at 0.95x exited {res.returncode}: {res.stderr.strip()}")
    if st["loss"] != base["loss"] or any(base_w[k].tobytes() != w[k].tobytes() for k in base_w):
        fail(f"long scan: losses {st['loss']} or weights differ from the unbudgeted {base['loss']}")
    if st["peak_bytes"] > budget or not st["remats"]:
        fail(f"long scan: peak {st['peak_bytes']} (budget {budget}), {st['remats']} recomputations")
    print(f"ok   lstm_var_len over {[d['seq'] for d in st['step_dims']]} steps at 0.95x: bit-identical, "
          f"{st['remats']} recomputations")


# ---- per-step dimensions --------------------------------------------------------

def drawn_lengths(dtrexec, path, tmp, seed, steps, cfg):
    trace = os.path.join(tmp, f"dims-{seed}.jsonl")
    res, st, _ = train(dtrexec, path, tmp, f"dims-{seed}", DYNAMIC_ARGS["lstm_var_len"] + ["--trace", trace],
                       steps=steps, seed=seed)
    if res.returncode:
        fail(f"--dim seq=8:24 training exited {res.returncode}: {res.stderr.strip()}")
    row = cfg["batch"] * cfg["embed"] * 4   # bytes of one time step of the embedding output
    lengths = []
    for k, calls in enumerate(steps_of_trace(trace)):
        gathers = [mem for op, mem in calls if op == "Gather"]
        if not gathers or not gathers[0]:
            fail(f"step {k + 1}: no embedding Gather in the trace")
        # Arena sizes are rounded up: the length is the largest that fits.
        lengths.append(gathers[0][0] // row)
    if len(lengths) != steps:
        fail(f"{len(lengths)} forward runs in the trace for {steps} steps")
    return lengths, st["loss"]


def check_dims(dtrexec, tmp):
    cfg = TRAIN_CONFIGS["lstm_var_len"]
    path = train_model("lstm_var_len", tmp)
    steps = 6
    a, loss_a = drawn_lengths(dtrexec, path, tmp, 3, steps, cfg)
    if not all(8 <= n <= 24 for n in a):
        fail(f"lengths {a} outside 8..24")
    if len(set(a)) < 2:
        fail(f"every step had the same length {a[0]}: no length drawn per step")
    b, loss_b = drawn_lengths(dtrexec, path, tmp, 3, steps, cfg)
    if a != b or loss_a != loss_b:
        fail(f"the same seed drew lengths {a} then {b} (losses {loss_a} / {loss_b})")
    c, _ = drawn_lengths(dtrexec, path, tmp, 4, steps, cfg)
    if c == a:
        fail(f"seeds 3 and 4 drew the same lengths {a}")
    print(f"ok   lengths per step: seed 3 {a} (twice), seed 4 {c}")


CASES = {
    "infer-lstm_var_len": lambda d, t: infer_lstm(d, t),
    "infer-treelstm": lambda d, t: infer_treelstm(d, t),
    "infer-early_exit": lambda d, t: infer_early_exit(d, t),
    "dims-lstm_var_len": lambda d, t: check_dims(d, t),
    "budget-long-scan": lambda d, t: check_long_scan(d, t),
}
for _m in TRAIN_CONFIGS:
    CASES[f"train-{_m}"] = (lambda m: lambda d, t: check_train(d, m, t))(_m)
    CASES[f"budget-{_m}"] = (lambda m: lambda d, t: check_budget(d, m, t))(_m)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__)
        print("cases:", " ".join(CASES))
        return 2
    dtrexec, name = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="dtrx-dynamic-") as tmp:
        CASES[name](dtrexec, tmp)
    print(f"PASS {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
