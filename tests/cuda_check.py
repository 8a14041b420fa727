#!/usr/bin/env python3
"""The CUDA backend against the CPU, end to end through the dtrexec command.
Usage: cuda_check.py DTREXEC CASE [--device DEV] [--jobs N] [-k SUBSTRING] [--quick]

Cases:
- node: every ONNX node-test folder that passes on the CPU passes on the
  device (`dtrexec check --device cuda`, rtol 1e-3, atol 1e-5).
- grad-FAMILY (one per tests/grad/cases_FAMILY.py): every operator and
  gradient of the family's models. Per model, one SGD step (lr 1, MSE against
  seeded targets) on the CPU and on the device: the updated weights (weights
  minus gradients) must agree, and so must the outputs of inference; and `dtrexec
  gradcheck --device cuda` must pass (the device's gradients against finite
  differences of the device's forward pass; not with --quick, which
  bench/gpu-check.sh uses to fit its time limit).
- budget-MODEL (mlp, smallcnn, resnet18, transformer): DTR training on the
  device under budgets from 0.9x of the unbudgeted peak down: peak_bytes
  within the budget, every recomputation bit-equal to the first execution
  (--verify-remat), losses and weights bit-identical to the unbudgeted device
  run, and recomputations at some budget; the unbudgeted losses close to the
  CPU's.
- losses: several models trained three steps with Adam on both: losses agree.

Every case prints "SKIPPED: no CUDA device (<reason>)" and passes when the
binary was built without CUDA or the device cannot be opened. `--device cpu`
runs the same comparisons CPU against CPU, which tests this script itself on
machines without a GPU; `--device cpu-staged` also takes the runtime's device
path (copies through the backend, host mirrors) with the CPU's kernels."""
import concurrent.futures
import glob
import importlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("DTRX_DATA_DIR", os.path.join(HERE, "..", "..", "shared", "data"))
MAKE = os.path.join(HERE, "..", "bench", "models", "make.py")
sys.path.insert(0, os.path.join(HERE, "grad"))

NODE_RTOL, NODE_ATOL = "1e-3", "1e-5"
OUT_RTOL, OUT_ATOL = 1e-3, 1e-4       # forward outputs, device against CPU
GRAD_RTOL, GRAD_ATOL = 2e-3, 2e-4     # gradients (weights after one step at lr 1)
LOSS_RTOL = 2e-3


def run(cmd, timeout=900):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"timed out after {timeout} s")


def device_ready(dtrexec, device):
    """None when the device runs, else the reason it cannot."""
    if device in ("cpu", "cpu-staged"):
        return None
    version = run([dtrexec, "--version"]).stdout
    if device not in version.split("backends:")[-1]:
        return f"dtrexec was built without the {device} backend ({version.strip().splitlines()[-1]})"
    res = run([dtrexec, "check", "--device", device, "--quiet", "/nonexistent-folder"])
    marker = f"device '{device}' is not available: "
    if marker in res.stderr:
        return res.stderr.split(marker, 1)[1].strip()
    return None


def parallel(jobs, fn, items):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(fn, items))


# ---- node tests ------------------------------------------------------------------------

def check_dirs(dtrexec, device, dirs):
    """{dir: None (pass) or message}, one process per chunk; a chunk whose
    process dies is rerun folder by folder so that one crash names itself."""
    res = run([dtrexec, "check", "--device", device, "--rtol", NODE_RTOL, "--atol", NODE_ATOL] + dirs, 1800)
    out = {}
    for line in res.stdout.splitlines():
        if line.startswith("PASS "):
            out[line[5:].strip()] = None
        elif line.startswith("FAIL ") and ": " in line:
            d, msg = line[5:].split(": ", 1)
            out[d.strip()] = msg
    if res.returncode not in (0, 1) or len(out) < len(dirs):
        if len(dirs) == 1:
            return {dirs[0]: f"exit {res.returncode}: {res.stderr.strip()[-300:]}"}
        for d in dirs:
            if d not in out:
                out.update(check_dirs(dtrexec, device, [d]))
    return out


def node_case(dtrexec, device, jobs, only):
    root = os.path.join(DATA, "onnx-node")
    dirs = sorted(d for d in glob.glob(os.path.join(root, "test_*")) if os.path.isdir(d))
    if only:
        dirs = [d for d in dirs if only in os.path.basename(d)]
    if not dirs:
        raise SystemExit(f"FAIL: no node tests under {root}")
    chunks = [dirs[i:i + 40] for i in range(0, len(dirs), 40)]
    cpu, dev = {}, {}
    for r in parallel(jobs, lambda c: check_dirs(dtrexec, "cpu", c), chunks):
        cpu.update(r)
    for r in parallel(jobs, lambda c: check_dirs(dtrexec, device, c), chunks):
        dev.update(r)
    on_cpu = [d for d in dirs if d in cpu and cpu[d] is None]
    bad = [(d, dev.get(d, "no result")) for d in on_cpu if dev.get(d, "no result") is not None]
    missing = [m for _, m in bad if "kernel" in m and "has no" in m]
    for d, msg in bad:
        print(f"FAIL {os.path.basename(d)}: {msg}")
    print(f"node tests: {len(on_cpu)} pass on the CPU; on {device}: {len(on_cpu) - len(bad)} pass, {len(bad)} fail "
          f"({len(missing)} for want of a kernel)")
    if bad:
        raise SystemExit(1)


# ---- gradients -------------------------------------------------------------------------

def load_outputs(folder):
    import onnx
    from onnx import numpy_helper
    outs = []
    for i in range(1000):
        p = os.path.join(folder, f"output_{i}.pb")
        if not os.path.exists(p):
            break
        t = onnx.TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        outs.append(numpy_helper.to_array(t))
    return outs


def weights(path):
    import onnx
    from onnx import numpy_helper
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def close(a, b, rtol, atol):
    """'' when a and b agree, else what differs."""
    import numpy as np
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"shape/type {b.shape} {b.dtype}, expected {a.shape} {a.dtype}"
    if a.dtype.kind not in "fc":
        return "" if np.array_equal(a, b) else f"{int((a != b).sum())} elements differ"
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(a64) & np.isnan(b64)
    diff = np.where(both_nan, 0.0, np.abs(a64 - b64))
    tol = atol + rtol * np.abs(a64)
    bad = ~(diff <= tol)
    if not bad.any():
        return ""
    i = int(np.argmax(np.where(bad, diff, -1)))
    return (f"{int(bad.sum())} of {a.size} elements differ; worst at {i}: expected {a64.flat[i]:.8g}, "
            f"got {b64.flat[i]:.8g}")


def train_once(dtrexec, device, path, work, tag, freeze):
    out_dir, saved = os.path.join(work, tag + "-out"), os.path.join(work, tag + ".onnx")
    cmd = [dtrexec, path, "--device", device, "--train", "--steps", "1", "--optimizer", "sgd", "--lr", "1",
           "--loss", "mse", "--seed", "5", "--threads", "1", "--save", saved, "--output-dir", out_dir, "--quiet"]
    if freeze:
        cmd += ["--freeze", ",".join(freeze)]
    return run(cmd), out_dir, saved


def infer_once(dtrexec, device, path, work, tag):
    out_dir = os.path.join(work, tag + "-out")
    return run([dtrexec, path, "--device", device, "--seed", "5", "--threads", "1", "--output-dir", out_dir,
                "--quiet"]), out_dir


def grad_one(dtrexec, device, case, no_grad, work, quick=False):
    """'' when the case agrees, else why not."""
    name = case["name"]
    path = os.path.join(work, name + ".onnx")
    with open(path, "wb") as f:
        f.write(case["model"].SerializeToString())
    # Outputs from inference: after a training step a view of a weight
    # (Identity, Reshape of an initializer) would show the updated weight on
    # the CPU, whose outputs alias tensor memory, but not on a device, whose
    # outputs are copied at the end of the forward pass.
    cpu, cpu_out = infer_once(dtrexec, "cpu", path, work, name + "-cpu")
    if cpu.returncode:
        return ""   # the CPU cannot run it either: nothing to compare
    dev, dev_out = infer_once(dtrexec, device, path, work, name + "-dev")
    if dev.returncode:
        return f"inference on {device} failed (exit {dev.returncode}): {dev.stderr.strip()[-400:]}"
    want, got = load_outputs(cpu_out), load_outputs(dev_out)
    if len(want) != len(got):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (a, b) in enumerate(zip(want, got)):
        why = close(a, b, OUT_RTOL, OUT_ATOL)
        if why:
            return f"output {i}: {why}"
    cpu, _, cpu_w = train_once(dtrexec, "cpu", path, work, name + "-cpu-train", no_grad)
    trained = cpu.returncode == 0   # not when the model has no float output to take a loss of, say
    if trained:
        dev, _, dev_w = train_once(dtrexec, device, path, work, name + "-dev-train", no_grad)
        if dev.returncode:
            return f"training on {device} failed (exit {dev.returncode}): {dev.stderr.strip()[-400:]}"
    if trained:
        wc, wd = weights(cpu_w), weights(dev_w)
        for k in wc:
            why = close(wc[k], wd[k], GRAD_RTOL, GRAD_ATOL)
            if why:
                return f"gradient of '{k}' (weights after one step at lr 1): {why}"
    if quick:
        return ""
    cmd = [dtrexec, "gradcheck", path, "--device", device] + case.get("args", [])
    if no_grad:
        cmd += ["--no-grad", ",".join(no_grad)]
    gc = run(cmd)
    if gc.returncode:
        return f"gradcheck on {device} (exit {gc.returncode}):\n{gc.stdout.strip()[-600:]}{gc.stderr.strip()[-300:]}"
    return ""


def grad_case(dtrexec, device, family, jobs, only, quick):
    module = importlib.import_module("cases_" + family)
    table_no_grad = getattr(module, "NO_GRAD", [])
    cases = [c for c in module.CASES if not only or only in c["name"]]
    with tempfile.TemporaryDirectory(prefix="cuda-grad-") as work:
        results = parallel(jobs, lambda c: grad_one(dtrexec, device, c,
                                                    list(table_no_grad) + list(c.get("no_grad", [])), work, quick), cases)
    failed = 0
    for c, why in zip(cases, results):
        if why:
            failed += 1
            print(f"FAIL {c['name']}: {why}")
    print(f"grad-{family} on {device}: {len(cases) - failed} of {len(cases)} cases agree with the CPU")
    if failed or not cases:
        raise SystemExit(1)


# ---- budgets and losses -------------------------------------------------------------

MODELS = {
    "smallcnn": ["smallcnn", "--tiny", "--batch", "16", "--size", "32"],
    "resnet18": ["resnet18", "--tiny", "--batch", "16", "--size", "32"],
    "transformer": ["transformer", "--tiny", "--batch", "8", "--layers", "4"],
    "lstm_lm": ["lstm_lm", "--tiny"],
    "densenet121": ["densenet121", "--tiny", "--batch", "8"],
}


def make_model(name, work):
    path = os.path.join(work, name + ".onnx")
    if name == "mlp":
        import budget_check   # the same MLP as the CPU's budget tests
        budget_check.mlp(path)
    else:
        res = run([sys.executable, MAKE] + MODELS[name] + ["-o", path])
        if res.returncode:
            raise SystemExit(f"FAIL: making {name}: {res.stderr}")
    return path


def train(dtrexec, device, path, work, tag, extra, steps=2, optimizer="momentum"):
    saved, stats = os.path.join(work, tag + ".onnx"), os.path.join(work, tag + ".json")
    res = run([dtrexec, path, "--device", device, "--train", "--steps", str(steps), "--optimizer", optimizer,
               "--seed", "3", "--threads", "2", "--save", saved, "--stats", stats, "--quiet"] + extra)
    if res.returncode:
        return res, None, None
    return res, json.load(open(stats)), weights(saved)


def losses_close(want, got):
    return len(want) == len(got) and all(abs(a - b) <= LOSS_RTOL * max(abs(a), 1e-3) for a, b in zip(want, got))


def budget_case(dtrexec, device, name):
    sys.path.insert(0, HERE)
    with tempfile.TemporaryDirectory(prefix="cuda-budget-") as work:
        path = make_model(name, work)
        res, base, base_w = train(dtrexec, device, path, work, "base", [])
        if res.returncode:
            raise SystemExit(f"FAIL: unbudgeted training of {name} on {device}: {res.stderr}")
        res, cpu, _ = train(dtrexec, "cpu", path, work, "cpu", [])
        if res.returncode:
            raise SystemExit(f"FAIL: unbudgeted training of {name} on the CPU: {res.stderr}")
        if not losses_close(cpu["loss"], base["loss"]):
            raise SystemExit(f"FAIL: {name}: losses on {device} {base['loss']}, on the CPU {cpu['loss']}")
        peak = base["peak_bytes"]
        print(f"{name} on {device}: unbudgeted peak {peak} bytes, losses {base['loss']} (CPU {cpu['loss']})")
        remats, feasible = 0, []
        for h in ("dtr-eq", "dtr"):
            for r in (0.9, 0.75, 0.6, 0.45, 0.35):
                budget = int(peak * r)
                res, st, w = train(dtrexec, device, path, work, f"{h}-{r}",
                                   ["--budget", str(budget), "--heuristic", h, "--verify-remat"])
                if res.returncode == 2 and "infeasible" in res.stderr:
                    print(f"NOTE {h} {r}x: infeasible")
                    continue
                if res.returncode:
                    raise SystemExit(f"FAIL: {name} {h} at {r}x exited {res.returncode}: {res.stderr}")
                if st["peak_bytes"] > st["budget_bytes"] or st["budget_bytes"] > budget:
                    raise SystemExit(f"FAIL: {name} {h} {r}x: peak {st['peak_bytes']} above budget {st['budget_bytes']}")
                if st["loss"] != base["loss"]:
                    raise SystemExit(f"FAIL: {name} {h} {r}x: losses {st['loss']} differ from unbudgeted {base['loss']}")
                for k in base_w:
                    if base_w[k].tobytes() != w[k].tobytes():
                        raise SystemExit(f"FAIL: {name} {h} {r}x: weight {k} differs from the unbudgeted run")
                remats = max(remats, st["remats"])
                feasible.append(f"{h}@{r}")
                print(f"PASS {h} {r}x: peak {st['peak_bytes']} <= {st['budget_bytes']}, {st['evictions']} evictions, "
                      f"{st['remats']} recomputations, bit-identical")
        if not feasible or remats == 0:
            raise SystemExit(f"FAIL: {name}: no budget trained with recomputations ({feasible})")


def losses_case(dtrexec, device):
    sys.path.insert(0, HERE)
    with tempfile.TemporaryDirectory(prefix="cuda-loss-") as work:
        bad = 0
        for name in ("mlp", "smallcnn", "resnet18", "transformer", "lstm_lm", "densenet121"):
            path = make_model(name, work)
            got = []
            for dev in ("cpu", device):
                res, st, _ = train(dtrexec, dev, path, work, f"{name}-{dev}", [], steps=3, optimizer="adam")
                if res.returncode:
                    raise SystemExit(f"FAIL: {name} on {dev}: {res.stderr}")
                got.append(st["loss"])
            ok = losses_close(got[0], got[1])
            bad += not ok
            print(f"{'PASS' if ok else 'FAIL'} {name}: losses CPU {got[0]}, {device} {got[1]}")
        if bad:
            raise SystemExit(1)


def main():
    opts, pos, args = {}, [], sys.argv[1:]
    while args:
        a = args.pop(0)
        if a in ("--device", "--jobs", "-k") and args:
            opts[a] = args.pop(0)
        elif a == "--quick":
            opts[a] = True
        else:
            pos.append(a)
    if len(pos) != 2:
        print(__doc__)
        return 2
    dtrexec, case = pos
    device = opts.get("--device", "cuda")
    jobs = int(opts.get("--jobs", os.environ.get("CUDA_CHECK_JOBS", max(1, min(8, (os.cpu_count() or 2) // 2)))))
    only = opts.get("-k")
    why = device_ready(dtrexec, device)
    if why:
        print(f"SKIPPED: no CUDA device ({why})")
        return 0
    try:
        import numpy  # noqa: F401
        import onnx   # noqa: F401
    except ImportError as e:
        if case != "node":
            print(f"SKIPPED: python {e.name} is missing (needed to build and compare models)")
            return 0
    if case == "node":
        node_case(dtrexec, device, jobs, only)
    elif case.startswith("grad-"):
        grad_case(dtrexec, device, case[5:], jobs, only, "--quick" in opts)
    elif case.startswith("budget-"):
        budget_case(dtrexec, device, case[7:])
    elif case == "losses":
        losses_case(dtrexec, device)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
