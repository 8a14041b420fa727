#!/usr/bin/env python3
"""Training under a memory budget (DTR in the runtime), checked end to end.
Usage: budget_check.py DTREXEC CASE

- MODEL (smallcnn, resnet18, transformer, lstm_lm, mlp): for each heuristic,
  budgets from 0.9x of the unbudgeted peak down to the lowest that trains:
  every budgeted run must give losses and final weights bit-identical to the
  unbudgeted run, keep peak_bytes <= budget_bytes, and (with --verify-remat)
  recompute every evicted value bit for bit. At least one budget must force
  evictions and recomputations, so that the check is not vacuous.
- trace-replay: a trace recorded from a budgeted run replays in `dtrexec sim`
  with the same evictions and recomputations.
- infeasible: budgets below the pinned floor or below any call's needs exit 2
  with a message naming the operator, the bytes needed and the bytes pinned.
- conv-workspace: a budget below what a first convolution's unchunked
  oneDNN reorder buffers needed trains bit-identically (dtr, dtr-eq).
- plan-exact: Checkmate's and Chen's schedules of a small Transformer run
  with exactly their recomputations (besides zero-cost view replays).
- update: optimizer updates inside the backward pass against after it:
  bit-identical for SGD, momentum, Adam and AdamW, unbudgeted and under
  budgets with --verify-remat, with a lower peak and a floor no higher.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE = os.path.join(HERE, "..", "bench", "models", "make.py")
HEURISTICS = ["dtr", "dtr-eq", "dtr-local", "lru"]
RATIOS = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.25, 0.2]
if os.environ.get("BUDGET_CHECK_QUICK"):
    # Sanitizer builds run ten times slower: one heuristic, coarse budgets.
    HEURISTICS, RATIOS = ["dtr-eq"], [0.9, 0.7, 0.5]

# Small configurations whose activations dominate weights and workspaces.
MODELS = {
    "smallcnn": ["smallcnn", "--tiny", "--batch", "16", "--size", "32"],
    "resnet18": ["resnet18", "--tiny", "--batch", "16", "--size", "32"],
    "densenet121": ["densenet121", "--tiny", "--batch", "16"],
    "transformer": ["transformer", "--tiny", "--batch", "8", "--layers", "4"],
}


def run(dtrexec, args, expect=None):
    res = subprocess.run([dtrexec] + args, capture_output=True, text=True, timeout=900)
    if expect is not None and res.returncode != expect:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {res.returncode}, expected {expect}\n{res.stdout}{res.stderr}")
    return res


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def mlp(path):
    rng = np.random.default_rng(1)
    dims = [128] * 13 + [10]
    nodes, inits, x = [], {}, "x"
    for i in range(len(dims) - 1):
        inits[f"W{i}"] = rng.normal(0, 0.15, (dims[i], dims[i + 1])).astype(np.float32)
        inits[f"b{i}"] = np.zeros(dims[i + 1], np.float32)
        nodes.append(helper.make_node("Gemm", [x, f"W{i}", f"b{i}"], [f"h{i}"]))
        x = f"h{i}"
        if i < len(dims) - 2:
            nodes.append(helper.make_node("Tanh", [x], [f"t{i}"]))
            x = f"t{i}"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512, 128])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def make_model(name, tmp):
    path = os.path.join(tmp, name + ".onnx")
    if name == "mlp":
        mlp(path)
    else:
        subprocess.run([sys.executable, MAKE] + MODELS[name] + ["-o", path], check=True, capture_output=True)
    return path


def train(dtrexec, path, tmp, tag, extra):
    out, stats = os.path.join(tmp, tag + ".onnx"), os.path.join(tmp, tag + ".json")
    res = run(dtrexec, [path, "--train", "--steps", "2", "--optimizer", "momentum", "--seed", "3", "--threads", "2",
                        "--save", out, "--stats", stats, "--quiet"] + extra)
    if res.returncode:
        return res, None, None
    return res, json.load(open(stats)), weights(out)


def model_case(dtrexec, name, tmp):
    path = make_model(name, tmp)
    res, base, base_w = train(dtrexec, path, tmp, "base", [])
    if res.returncode:
        raise SystemExit(f"FAIL: unbudgeted training of {name}: {res.stderr}")
    peak = base["peak_bytes"]
    print(f"{name}: unbudgeted peak {peak} bytes, losses {base['loss']}")
    for h in HEURISTICS:
        lowest, remats, feasible = None, 0, []
        for r in RATIOS:
            budget = int(peak * r)
            res, st, w = train(dtrexec, path, tmp, f"{h}-{r}",
                               ["--budget", str(budget), "--heuristic", h, "--verify-remat"])
            if res.returncode == 2:
                if "infeasible" not in res.stderr:
                    raise SystemExit(f"FAIL: {name} {h} {r}x: exit 2 without the budget message: {res.stderr}")
                continue  # feasibility need not be monotonic in the budget
            if res.returncode:
                raise SystemExit(f"FAIL: {name} {h} at {r}x exited {res.returncode}: {res.stderr}")
            if st["peak_bytes"] > st["budget_bytes"] or st["budget_bytes"] > budget:
                raise SystemExit(f"FAIL: {name} {h} {r}x: peak {st['peak_bytes']} above budget {st['budget_bytes']}")
            if st["loss"] != base["loss"]:
                raise SystemExit(f"FAIL: {name} {h} {r}x: losses {st['loss']} differ from {base['loss']}")
            for k in base_w:
                if base_w[k].tobytes() != w[k].tobytes():
                    raise SystemExit(f"FAIL: {name} {h} {r}x: weight {k} differs from the unbudgeted run")
            lowest, remats = r, max(remats, st["remats"])
            feasible.append(r)
        if (lowest is None or remats == 0) and h in ("dtr", "dtr-eq"):
            raise SystemExit(f"FAIL: {name} {h}: no budget at or below 0.9x trained with recomputations")
        if lowest is None:
            print(f"NOTE {name} {h}: no budget tried at or below 0.9x was feasible for this heuristic")
            continue
        print(f"PASS {name} {h}: bit-identical at {feasible} x the peak, lowest {lowest}x "
              f"({remats} recomputations at most)")


def trace_replay(dtrexec, tmp):
    path = make_model("mlp", tmp)
    res, base, _ = train(dtrexec, path, tmp, "base", [])
    trace = os.path.join(tmp, "run.jsonl")
    checked = 0
    # Budgets where the arena's placement never needed a window eviction or a
    # compaction (the simulator counts bytes, not addresses).
    for r in [0.95, 0.9, 0.85, 0.8, 0.75, 0.7]:
        budget = int(base["peak_bytes"] * r)
        res, st, _ = train(dtrexec, path, tmp, "traced", ["--budget", str(budget), "--heuristic", "dtr-eq",
                                                          "--trace", trace, "--steps", "1"])
        if res.returncode or st["remats"] == 0 or st["window_evictions"] or st["compactions"]:
            continue
        sim = run(dtrexec, ["sim", trace, "--budget", str(budget), "--heuristic", "dtr-eq", "--remat-limit", "1000",
                            "--json"], 0)
        rep = json.loads(sim.stdout)
        if (rep["evictions"], rep["remats"]) != (st["evictions"], st["remats"]):
            raise SystemExit(f"FAIL: at {r}x the replay made {rep['evictions']} evictions / {rep['remats']} "
                             f"recomputations, the real run {st['evictions']} / {st['remats']}")
        print(f"PASS {r}x: the trace replays with the same {st['evictions']} evictions and {st['remats']} recomputations")
        checked += 1
    if not checked:
        raise SystemExit("FAIL: no budget gave a run with recomputations and without fragmentation to compare")


def planned(dtrexec, tmp):
    """A real run under static schedules: bit-identical to the unbudgeted run,
    memory within the schedule's budget; a schedule for another model fails
    naming the schedule step."""
    path = make_model("mlp", tmp)
    res, base, base_w = train(dtrexec, path, tmp, "base", [])
    graph = os.path.join(tmp, "graph.json")
    # the same optimizer as train() uses: its state is part of what the graph must account for
    run(dtrexec, ["export", path, "--train", "--optimizer", "momentum", "-o", graph], 0)
    checked = 0
    for solver, budget in [("checkpoint-all", "1.0x"), ("chen-sqrtn", "0.9x"), ("chen-sqrtn", "0.8x"),
                           ("griewank", "0.9x")]:
        sched = os.path.join(tmp, solver + ("" if solver == "checkpoint-all" else budget) + ".json")
        res = run(dtrexec, ["plan", graph, "--solver", solver, "--budget", budget, "-o", sched])
        if res.returncode:
            print(f"NOTE {solver} at {budget}: no schedule ({res.stderr.strip()[:120]})")
            continue
        res, st, w = train(dtrexec, path, tmp, "planned-" + solver, ["--plan", sched])
        if res.returncode == 2 and solver != "checkpoint-all":
            # The graph's accounting leaves out what the arena also holds
            # (kernel workspace, alignment, values a running call locks).
            print(f"NOTE {solver} at {budget}: the real arena cannot hold the schedule: {res.stderr.strip()[:160]}")
            continue
        if res.returncode:
            raise SystemExit(f"FAIL: training under the {solver} schedule: {res.stderr}")
        if st["loss"] != base["loss"] or any(base_w[k].tobytes() != w[k].tobytes() for k in base_w):
            raise SystemExit(f"FAIL: the {solver} schedule changed the losses or weights")
        if st["peak_bytes"] > st["budget_bytes"] or st["budget_bytes"] > json.load(open(sched))["budget_bytes"]:
            raise SystemExit(f"FAIL: {solver}: peak {st['peak_bytes']} vs budget {st['budget_bytes']}")
        print(f"PASS {solver} at {budget}: bit-identical, peak {st['peak_bytes']} <= {st['budget_bytes']}, "
              f"{st['remats']} recomputations")
        checked += 1
    if not checked:
        raise SystemExit("FAIL: no planner made a schedule to run")
    other = os.path.join(tmp, "other.onnx")
    subprocess.run([sys.executable, MAKE, "smallcnn", "--tiny", "-o", other], check=True, capture_output=True)
    res = run(dtrexec, [other, "--train", "--plan", os.path.join(tmp, "checkpoint-all.json"), "--quiet"], 1)
    if "schedule step" not in res.stderr:
        raise SystemExit(f"FAIL: a schedule of another model: {res.stderr}")
    print("PASS: a schedule made for another model fails naming the schedule step")


def plan_exact(dtrexec, tmp):
    """A schedule runs as planned: on a small Transformer (views, attention,
    a drawn target), Checkmate's and Chen's schedules of the exported graph
    train bit-identically to the unbudgeted run within the schedule's
    budget, recomputing exactly what the schedule recomputes: per step, the
    recomputations other than view replays equal the schedule's, and the
    recomputed cost-model FLOPs equal the sum of its recomputed nodes'
    cost_flops. A view (Reshape, marked "view" in the graph) read after its
    source was recomputed is replayed at no cost; a schedule that keeps the
    0-byte view does not count that (--stats view_remats does)."""
    path = os.path.join(tmp, "transformer.onnx")
    subprocess.run([sys.executable, MAKE, "transformer", "--batch", "4", "--seq", "64", "--layers", "1",
                    "--set", "hidden=64", "--set", "heads=2", "--set", "ffn=256", "--set", "vocab=200", "-o", path],
                   check=True, capture_output=True)
    res, base, base_w = train(dtrexec, path, tmp, "base", [])
    if res.returncode:
        raise SystemExit(f"FAIL: unbudgeted training: {res.stderr}")
    graph = os.path.join(tmp, "graph.json")
    run(dtrexec, ["export", path, "--train", "--optimizer", "momentum", "--seed", "3", "-o", graph], 0)
    # The planners weigh measured kernel times (cost_cpu), which differ from
    # run to run (and ten times under sanitizers): plan with the cost
    # model's FLOPs instead, so that the schedules are the same every time.
    g = json.load(open(graph))
    for n in g["nodes"]:
        n["cost_cpu"] = n["cost_flops"]
    with open(graph, "w") as f:
        json.dump(g, f)
    nodes = {n["name"]: n for n in g["nodes"]}
    steps, checked, ran, checkmate = 2, 0, 0, 0
    for solver, budget in [("checkmate-lp", "0.9x"), ("checkmate-lp", "0.7x"), ("checkmate", "0.7x"),
                           ("chen-sqrtn", "0.9x"), ("chen-greedy", "0.9x"), ("griewank", "0.9x")]:
        sched = os.path.join(tmp, f"{solver}-{budget}.json")
        res = run(dtrexec, ["plan", graph, "--solver", solver, "--budget", budget, "-o", sched,
                            "--time-limit", "30", "--threads", "1"])
        if res.returncode:
            print(f"NOTE {solver} at {budget}: no schedule ({res.stderr.strip()[-160:]})")
            continue
        plan = json.load(open(sched))
        recomputed = [s["run"] for s in plan["steps"] if s.get("recompute")]
        # a node whose outputs the runtime keeps anyway (kept_ram, no
        # cost_ram: a graph output) is resident when a schedule recomputes it
        kept = [r for r in recomputed if not nodes[r]["cost_ram"] and nodes[r].get("kept_ram")]
        want = [r for r in recomputed if not nodes[r].get("view") and r not in kept]
        res, st, w = train(dtrexec, path, tmp, f"planned-{solver}-{budget}", ["--plan", sched])
        if res.returncode:
            raise SystemExit(f"FAIL: training under the {solver} schedule at {budget}: {res.stderr}")
        ran += 1
        if st["loss"] != base["loss"] or any(base_w[k].tobytes() != w[k].tobytes() for k in base_w):
            raise SystemExit(f"FAIL: the {solver} schedule at {budget} changed the losses or weights")
        if st["peak_bytes"] > st["budget_bytes"] or st["budget_bytes"] > plan["budget_bytes"]:
            raise SystemExit(f"FAIL: {solver} at {budget}: peak {st['peak_bytes']}, budget {st['budget_bytes']}, "
                             f"schedule's budget {plan['budget_bytes']}")
        real = (st["remats"] - st["view_remats"]) / steps
        flops = sum(nodes[r]["cost_flops"] for r in want)
        if real != len(want) or abs(st["remat_compute"] / steps - flops) > 1e-9 * max(flops, 1):
            raise SystemExit(f"FAIL: {solver} at {budget}: {real} recomputations per step besides "
                             f"{st['view_remats'] / steps} view replays, {st['remat_compute'] / steps} FLOPs; the "
                             f"schedule recomputes {len(want)} nodes ({len(recomputed)} with views and kept values), "
                             f"{flops} FLOPs")
        print(f"PASS {solver} at {budget}: bit-identical, peak {st['peak_bytes']} <= {st['budget_bytes']}, "
              f"{real:.0f} recomputations per step as planned ({flops:.0f} FLOPs), "
              f"{st['view_remats'] / steps:.0f} views replayed ({len(recomputed) - len(want) - len(kept)} in the "
              f"schedule)")
        checked += len(want) > 0
        checkmate += solver.startswith("checkmate") and len(want) > 0
    if not checked or not checkmate or ran < 4:
        raise SystemExit(f"FAIL: {ran} schedules ran, {checked} of them with recomputations, {checkmate} Checkmate's")


def check_account(budget, msg):
    """The arena's parts in an infeasible-budget message add up to the arena,
    and a call's least budget to its own parts: one set of numbers."""
    import re
    m = re.search(r"the arena of (\d+) bytes held (.*?) \(the largest hole (\d+)\)", msg)
    if not m:
        raise SystemExit(f"FAIL: budget {budget}: no account of the arena in: {msg}")
    arena, parts, hole = int(m.group(1)), re.sub(r"\([^()]*\)", "", m.group(2)), int(m.group(3))
    if arena > int(budget) or int(budget) - arena >= 64:
        raise SystemExit(f"FAIL: budget {budget}: the arena is {arena} bytes")
    nums = [int(x) for x in re.findall(r"(?:^|, )(\d+) ", parts)]
    if sum(nums) != arena:
        raise SystemExit(f"FAIL: budget {budget}: the parts {nums} add up to {sum(nums)}, not {arena}: {msg}")
    free = int(re.search(r"(\d+) free", parts).group(1))
    if hole > free:
        raise SystemExit(f"FAIL: budget {budget}: a hole of {hole} bytes with {free} free")
    inner = re.search(r"never evicted \(([^()]*)\)", m.group(2))
    kept = int(re.match(r"(\d+)", parts).group(1))
    if inner and sum(int(x) for x in re.findall(r"(\d+)", inner.group(1))) != kept:
        raise SystemExit(f"FAIL: budget {budget}: the persistent parts do not add up to {kept}: {msg}")
    m = re.search(r"at least (\d+) bytes \(the (\d+) that no eviction frees, its inputs (\d+) and its outputs (\d+)\)",
                  msg)
    if m and int(m.group(1)) != sum(int(m.group(k)) for k in (2, 3, 4)):
        raise SystemExit(f"FAIL: budget {budget}: the call's least budget is not the sum of its parts: {msg}")
    return bool(m)


def infeasible(dtrexec, tmp):
    path = make_model("mlp", tmp)
    res, base, _ = train(dtrexec, path, tmp, "base", [])
    floor = base["pinned_bytes"]
    state = run(dtrexec, [path, "--train", "--optimizer", "adam", "--budget", str(floor + 8192), "--quiet"], 2)
    for w in ["infeasible", "Adam's optimizer state (2 x", "never evicted"]:
        if w not in state.stderr:
            raise SystemExit(f"FAIL: weights plus Adam's state above the budget: message lacks '{w}': {state.stderr}")
    calls = 0
    for budget, words in [("20000", ["infeasible", "never evicted", "weights"]),
                          (str(floor // 2), ["infeasible", "never evicted", "weights"]),
                          (str(floor + 100000), ["infeasible", "node", "needs", "never evicted", "this call alone"])]:
        stale = os.path.join(tmp, "stale.json")   # as if an earlier run had written it
        with open(stale, "w") as f:
            json.dump(base, f)
        res = run(dtrexec, [path, "--train", "--optimizer", "momentum", "--budget", budget, "--quiet",
                            "--stats", stale], 2)
        if os.path.exists(stale):
            raise SystemExit(f"FAIL: budget {budget}: the failed run left a statistics file behind")
        for w in words:
            if w not in res.stderr:
                raise SystemExit(f"FAIL: budget {budget}: message lacks '{w}': {res.stderr}")
        calls += check_account(budget, res.stderr)
    if not calls:
        raise SystemExit("FAIL: no message gave a call's least budget")
    res = run(dtrexec, [path, "--train", "--budget", "lots"], 1)
    print("PASS: impossible budgets exit 2 naming the operator, the bytes and what holds the arena, "
          "their numbers adding up")


def lowest_ratio(dtrexec, path, tmp, peak, extra, base, base_w, tag):
    """The lowest of RATIOS (of `peak`) that trains, every run checked
    against the unbudgeted `base`; with the most recomputations seen."""
    lowest, remats = None, 0
    for r in RATIOS:
        budget = int(peak * r)
        res, st, w = train(dtrexec, path, tmp, f"{tag}-{r}", ["--budget", str(budget), "--verify-remat"] + extra)
        if res.returncode == 2:
            continue
        if res.returncode:
            raise SystemExit(f"FAIL: {tag} at {r}x exited {res.returncode}: {res.stderr}")
        if st["peak_bytes"] > budget:
            raise SystemExit(f"FAIL: {tag} at {r}x: peak {st['peak_bytes']} above the budget {budget}")
        if st["loss"] != base["loss"] or any(base_w[k].tobytes() != w[k].tobytes() for k in base_w):
            raise SystemExit(f"FAIL: {tag} at {r}x: losses or weights differ from the unbudgeted run")
        lowest, remats = r, max(remats, st["remats"])
    return lowest, remats


def update_case(dtrexec, tmp):
    """Updates inside the backward pass (--update in-backward, the default)
    against updates after it: the same losses and weights bit for bit for
    every optimizer, a lower unbudgeted peak (the gradients are freed as they
    are used), and under budgets with recomputation (--verify-remat: a value
    recomputed from an updated weight would differ from its first
    computation) still bit-identical, at a floor no higher."""
    checked_remat = 0
    for name in ["mlp", "transformer"]:
        path = make_model(name, tmp)
        for opt in ["sgd", "momentum", "adam", "adamw"]:
            o = ["--optimizer", opt]
            res, after, after_w = train(dtrexec, path, tmp, f"after-{opt}", o + ["--update", "after-backward"])
            res2, inb, inb_w = train(dtrexec, path, tmp, f"inb-{opt}", o)
            if res.returncode or res2.returncode:
                raise SystemExit(f"FAIL: {name} {opt}: {res.stderr}{res2.stderr}")
            if inb["loss"] != after["loss"] or any(after_w[k].tobytes() != inb_w[k].tobytes() for k in after_w):
                raise SystemExit(f"FAIL: {name} {opt}: updating inside the backward pass changed the results "
                                 f"({inb['loss']} vs {after['loss']})")
            if after["updates_in_backward"] or not inb["updates_in_backward"]:
                raise SystemExit(f"FAIL: {name} {opt}: updates_in_backward {inb['updates_in_backward']} "
                                 f"(after-backward: {after['updates_in_backward']})")
            if inb["peak_bytes"] >= after["peak_bytes"]:
                raise SystemExit(f"FAIL: {name} {opt}: peak {inb['peak_bytes']} not below {after['peak_bytes']}")
            print(f"PASS {name} {opt}: bit-identical, peak {after['peak_bytes']} -> {inb['peak_bytes']} bytes")
        o = ["--optimizer", "adam"]
        res, base, base_w = train(dtrexec, path, tmp, "base-adam", o + ["--update", "after-backward"])
        peak = base["peak_bytes"]
        for h in ["dtr", "dtr-eq"]:
            lo_after, _ = lowest_ratio(dtrexec, path, tmp, peak, o + ["--heuristic", h, "--update", "after-backward"],
                                       base, base_w, f"{name}-{h}-after")
            lo_inb, remats = lowest_ratio(dtrexec, path, tmp, peak, o + ["--heuristic", h], base, base_w,
                                          f"{name}-{h}-inb")
            _, st, _ = train(dtrexec, path, tmp, "inplace", o + ["--heuristic", h, "--budget", str(int(lo_inb * peak))])
            if not st["in_place_calls"]:
                raise SystemExit(f"FAIL: {name} {h}: no gradient call ran in place under a budget")
            if lo_inb is None or (lo_after is not None and lo_inb > lo_after):
                raise SystemExit(f"FAIL: {name} {h}: lowest budget in the backward pass {lo_inb}x, after {lo_after}x")
            checked_remat += remats > 0
            print(f"PASS {name} {h}: bit-identical under budgets, lowest {lo_inb}x of the after-backward peak "
                  f"(after-backward: {lo_after}x), {remats} recomputations")
    if not checked_remat:
        raise SystemExit("FAIL: no budgeted run updated inside the backward pass with recomputations")
    path = make_model("mlp", tmp)
    for extra, want in [(["--update", "sometimes"], "unknown value 'sometimes'"),
                        (["--update", "in-backward", "--plan", "x.json"], "cannot be combined with --plan")]:
        res = run(dtrexec, [path, "--train", "--quiet"] + extra, 1)
        if want not in res.stderr:
            raise SystemExit(f"FAIL: {extra}: {res.stderr}")
    res = run(dtrexec, [path, "--update", "after-backward"], 1)
    if "needs --train" not in res.stderr:
        raise SystemExit(f"FAIL: --update without --train: {res.stderr}")
    print("PASS: bad --update requests are refused")


def stem(path):
    """A 7x7 stride-2 convolution of 3 channels (ResNet's first layer, narrow)
    on a batch of 16 96x96 images, then two 3x3 layers."""
    rng = np.random.default_rng(1)
    inits = {"W1": rng.normal(0, 0.1, (4, 3, 7, 7)), "Wf": rng.normal(0, 0.1, (4, 10))}
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c0"], kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3]),
             helper.make_node("Relu", ["c0"], ["r0"])]
    for i in (1, 2):
        inits[f"W{i + 1}"] = rng.normal(0, 0.3, (4, 4, 3, 3))
        nodes += [helper.make_node("Conv", [f"r{i - 1}", f"W{i + 1}"], [f"c{i}"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
    nodes += [helper.make_node("GlobalAveragePool", ["r2"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
              helper.make_node("MatMul", ["f", "Wf"], ["y"])]
    graph = helper.make_graph(nodes, "stem", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 3, 96, 96])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 10])],
                              [numpy_helper.from_array(a.astype(np.float32), k) for k, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def conv_workspace(dtrexec, tmp):
    """A budget the first convolution could not run in while its oneDNN
    reorder buffers held its whole source and destination (ops/conv.c now
    runs the batch in chunks): below pinned + its output + those buffers."""
    path = os.path.join(tmp, "stem.onnx")
    stem(path)
    res, base, base_w = train(dtrexec, path, tmp, "base", [])
    if res.returncode:
        raise SystemExit(f"FAIL: unbudgeted training of the stem: {res.stderr}")
    src, dst = 16 * 3 * 96 * 96 * 4, 16 * 4 * 48 * 48 * 4
    budget = base["pinned_bytes"] + dst + int(0.9 * (src + dst))
    for h in ("dtr", "dtr-eq"):
        res, st, w = train(dtrexec, path, tmp, h, ["--budget", str(budget), "--heuristic", h, "--verify-remat"])
        if res.returncode:
            raise SystemExit(f"FAIL: stem {h} at {budget} bytes exited {res.returncode}: {res.stderr}")
        # (Since ReluGrad writes over its upstream gradient, this budget no
        # longer needs recomputation: what it tests is the convolution's.)
        if st["peak_bytes"] > budget:
            raise SystemExit(f"FAIL: stem {h}: peak {st['peak_bytes']} (budget {budget}), {st['remats']} recomputations")
        if st["loss"] != base["loss"] or any(base_w[k].tobytes() != w[k].tobytes() for k in base_w):
            raise SystemExit(f"FAIL: stem {h}: losses {st['loss']} or weights differ from {base['loss']}")
        print(f"PASS stem {h}: bit-identical at {budget} bytes, below the {base['pinned_bytes'] + dst + src + dst} "
              f"the unchunked first layer needed ({st['remats']} recomputations)")


if __name__ == "__main__":
    cases = list(MODELS) + ["mlp", "trace-replay", "infeasible", "plan", "conv-workspace", "plan-exact", "update"]
    if len(sys.argv) != 3 or sys.argv[2] not in cases:
        print(__doc__)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[2] == "trace-replay":
            trace_replay(sys.argv[1], tmp)
        elif sys.argv[2] == "infeasible":
            infeasible(sys.argv[1], tmp)
        elif sys.argv[2] == "plan":
            planned(sys.argv[1], tmp)
        elif sys.argv[2] == "plan-exact":
            plan_exact(sys.argv[1], tmp)
        elif sys.argv[2] == "conv-workspace":
            conv_workspace(sys.argv[1], tmp)
        elif sys.argv[2] == "update":
            update_case(sys.argv[1], tmp)
        else:
            model_case(sys.argv[1], sys.argv[2], tmp)
