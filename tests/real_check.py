#!/usr/bin/env python3
"""The real-model corpus (tests/data/real, made by bench/models/real/gen.py)
against PyTorch's numbers. Needs numpy and onnx, no torch.

    real_check.py DTREXEC ARCH/MODEL [--results DIR]   one case, e.g. tv_resnet/ts17-train
    real_check.py DTREXEC --all [--results DIR]        every case, one line each
    real_check.py DTREXEC --known                      the known-failures list names corpus cases only

Four stages per case, each compared with the references the model's entry in
meta.json names ("ref" for inference: ref-eval where the graph's BatchNorm
uses running statistics; "ref_train", ref-train, for training):
  inference  the forward's output within TOL of PyTorch's, relative to its largest value
  gradients  --train --steps 1: the loss within TOL (relative), and each PyTorch
             parameter's gradient (through the initializer map of meta.json) within
             TOL relative to the largest value of that gradient -- floored at 1e-3 of
             the model's largest gradient, for gradients that are zero in exact
             arithmetic (a key bias under softmax) and only rounding in float32;
             where PyTorch's own float32 gradient is further than TOL from the
             float64 reference (meta.json's torch_f32_grad_err), 10 times that
  steps3     --train --steps 3 (plain SGD, fixed lr, the same inputs): the three
             losses and each parameter after them within TOL (or 10 times PyTorch
             float32's own distance, torch_f32_weights3_err, where that is larger:
             a model whose BatchNorm sees few values amplifies rounding)
  budgeted   the same three steps under --budget 0.5x: losses and every saved
             initializer bit-identical to the unbudgeted run; exit 2 (the budget is
             infeasible) is recorded as "infeasible", not as a failure

tests/real-known-failures.txt lists CASE STAGE REASON for what fails today
(STAGE * for all four). A listed stage that fails passes the check; one that
passes fails it, so the list stays honest; anything else that fails fails.
With --results DIR each case writes DIR/<arch>-<model>.json for
bench/experiments/real_table.py.

REAL_CHECK_QUICK=1 (the sanitizer tree) runs inference and gradients only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

TOL = 1e-4
F32_SLACK = 10
HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "data", "real")
KNOWN = os.path.join(HERE, "real-known-failures.txt")
STAGES = ("inference", "gradients", "steps3", "budgeted")


class StageFail(Exception):
    pass


def load_known():
    known = {}
    with open(KNOWN) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                raise SystemExit(f"{KNOWN}: a line needs CASE STAGE REASON: {line!r}")
            case, stage, reason = parts
            for s in (STAGES if stage == "*" else [stage]):
                if s not in STAGES:
                    raise SystemExit(f"{KNOWN}: unknown stage '{s}' in {line!r}")
                known[(case, s)] = reason
    return known


def run(dtrexec, args, timeout=600):
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    r = subprocess.run([dtrexec] + args, capture_output=True, text=True, timeout=timeout, env=env)
    return r.returncode, r.stderr.strip()


def first_error(stderr):
    for line in stderr.splitlines():
        if line.startswith("dtrexec:"):
            return line[len("dtrexec:"):].strip()[:300]
    return stderr.splitlines()[-1][:300] if stderr else "no message"


def rel_err(got, ref, floor=0.0):
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    if got.shape != ref.shape:
        return float("inf")
    if not ref.size:
        return 0.0
    scale = max(float(np.abs(ref).max()), floor, 1e-30)
    return float(np.abs(got - ref).max()) / scale


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def saved_weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


class Case:
    def __init__(self, dtrexec, case, tmp):
        self.dtrexec, self.case, self.tmp = dtrexec, case, tmp
        arch, model = case.split("/")
        self.dir = os.path.join(CORPUS, arch)
        with open(os.path.join(self.dir, "meta.json")) as f:
            self.meta = json.load(f)
        self.entry = next(e for e in self.meta["models"] if e["file"] == model + ".onnx")
        self.model = os.path.join(self.dir, self.entry["file"])
        # Inference against the mode the graph computes (a graph with
        # inference-mode BatchNormalization: PyTorch's eval); training
        # against PyTorch's train mode, as dtrexec trains such a node like
        # torch's train() (ops/batch_norm.c).
        self.ref_infer = os.path.join(self.dir, self.entry["ref"])
        ref_train = self.entry.get("ref_train", "ref-train")
        self.ref = os.path.join(self.dir, ref_train)
        self.refmeta = self.meta["refs"][ref_train.split("-")[1]]
        self.params = self.entry["params"]   # ONNX initializer -> PyTorch parameter
        ins = []
        for i, name in enumerate(self.entry["inputs"]):
            ins += ["--input", f"{name}={os.path.join(self.ref, 'inputs', f'input_{i}.npy')}"]
        self.inputs = ins
        self.train_args = ["--train", "--optimizer", "sgd", "--lr", repr(self.meta["lr"]), "--loss",
                           self.meta["loss"], "--labels", os.path.join(self.ref, "labels.npy"), "--quiet",
                           "--seed", "1"]
        self.unbudgeted = None

    def dt(self, args):
        rc, err = run(self.dtrexec, [self.model] + self.inputs + args)
        if rc:
            raise StageFail(f"exit {rc}: {first_error(err)}")

    def inference(self):
        out = os.path.join(self.tmp, "out")
        self.dt(["--output-dir", out, "--quiet"])
        got = read_pb(os.path.join(out, "output_0.pb"))
        e = rel_err(got, np.load(os.path.join(self.ref_infer, "output.npy")))
        if e > TOL:
            raise StageFail(f"output off by {e:.3g} of its largest value")
        return f"max rel err {e:.2g}"

    def losses(self, stats):
        with open(stats) as f:
            return json.load(f)["loss"]

    def check_losses(self, got, n):
        want = self.refmeta["losses"][:n]
        for k, (g, w) in enumerate(zip(got, want)):
            e = abs(g - w) / max(abs(w), 1e-30)
            if not e <= TOL:
                raise StageFail(f"loss of step {k + 1} is {g:.7g}, PyTorch's {w:.7g} (rel err {e:.3g})")

    def gradients(self):
        gd, st = os.path.join(self.tmp, "grads"), os.path.join(self.tmp, "g.json")
        self.dt(self.train_args + ["--steps", "1", "--grad-dir", gd, "--stats", st])
        self.check_losses(self.losses(st), 1)
        with open(os.path.join(gd, "index.json")) as f:
            files = {e["name"]: e["file"] for e in json.load(f)["gradients"]}
        refs = {p: np.load(os.path.join(self.ref, "grads", p + ".npy")) for p in self.params.values()}
        gmax = max((float(np.abs(r).max()) for r in refs.values() if r.size), default=0.0)
        f32 = self.refmeta.get("torch_f32_grad_err", {})
        worst, bad = (0.0, None), []
        for init, p in sorted(self.params.items()):
            ref = refs[p]
            if init not in files:
                if np.any(ref):
                    bad.append(f"no gradient for '{init}'")
                continue
            e = rel_err(read_pb(os.path.join(gd, files[init])), ref, 1e-3 * gmax)
            if e > worst[0]:
                worst = (e, init)
            # Where PyTorch's own float32 gradient is further than TOL from
            # the float64 reference (a gradient zero in exact arithmetic),
            # float32 can be held to no more than F32_SLACK times that.
            tol = max(TOL, F32_SLACK * f32.get(p, 0.0))
            if e > tol:
                bad.append(f"'{init}' off by {e:.3g}" + (f" (PyTorch float32: {f32[p]:.3g})" if p in f32 else ""))
        if bad:
            raise StageFail(f"{len(bad)} of {len(self.params)} gradients: " + "; ".join(bad[:3]))
        return f"{len(self.params)} gradients, worst {worst[0]:.2g}"

    def steps3(self):
        sv, st = os.path.join(self.tmp, "w3.onnx"), os.path.join(self.tmp, "s3.json")
        self.dt(self.train_args + ["--steps", "3", "--save", sv, "--stats", st])
        self.unbudgeted = (sv, st)
        self.check_losses(self.losses(st), 3)
        w = saved_weights(sv)
        f32 = self.refmeta.get("torch_f32_weights3_err", {})
        bad, worst = [], 0.0
        for init, p in sorted(self.params.items()):
            e = rel_err(w[init], np.load(os.path.join(self.ref, "weights3", p + ".npy")))
            worst = max(worst, e)
            if e > max(TOL, F32_SLACK * f32.get(p, 0.0)):
                bad.append(f"'{init}' off by {e:.3g}" + (f" (PyTorch float32: {f32[p]:.3g})" if p in f32 else ""))
        if bad:
            raise StageFail(f"{len(bad)} of {len(self.params)} weights after 3 steps: " + "; ".join(bad[:3]))
        return f"losses and {len(self.params)} weights, worst {worst:.2g}"

    def budgeted(self):
        if not self.unbudgeted:
            sv, st = os.path.join(self.tmp, "w3.onnx"), os.path.join(self.tmp, "s3.json")
            self.dt(self.train_args + ["--steps", "3", "--save", sv, "--stats", st])
            self.unbudgeted = (sv, st)
        sv, st = os.path.join(self.tmp, "wb.onnx"), os.path.join(self.tmp, "sb.json")
        rc, err = run(self.dtrexec, [self.model] + self.inputs + self.train_args +
                      ["--steps", "3", "--save", sv, "--stats", st, "--budget", "0.5x"])
        if rc == 2:
            return "infeasible: " + first_error(err)
        if rc:
            raise StageFail(f"exit {rc}: {first_error(err)}")
        la, lb = self.losses(self.unbudgeted[1]), self.losses(st)
        if la != lb:
            raise StageFail(f"losses {lb} under 0.5x, {la} unbudgeted")
        wa, wb = saved_weights(self.unbudgeted[0]), saved_weights(sv)
        diff = [k for k in wa if k not in wb or wa[k].tobytes() != wb[k].tobytes()]
        if diff:
            raise StageFail(f"{len(diff)} initializers differ from the unbudgeted run, e.g. '{diff[0]}'")
        with open(st) as f:
            s = json.load(f)
        return f"bit-identical, {s['evictions']} evictions, {s['remats']} remats"


def check_case(dtrexec, case, known, results_dir=None, quick=False):
    res = dict(case=case, stages={})
    with tempfile.TemporaryDirectory(prefix="real-") as tmp:
        c = Case(dtrexec, case, tmp)
        failed_before = None
        for stage in STAGES:
            if quick and stage in ("steps3", "budgeted"):
                res["stages"][stage] = dict(status="skipped", detail="REAL_CHECK_QUICK")
                continue
            try:
                if failed_before and failed_before.startswith("exit 1:"):
                    raise StageFail(failed_before)   # the model does not load: no other stage can run
                detail = getattr(c, stage)()
                status = "infeasible" if detail.startswith("infeasible") else "pass"
            except StageFail as e:
                status, detail = "fail", str(e)
                failed_before = failed_before or detail
            except subprocess.TimeoutExpired:
                status, detail = "fail", "timed out"
            res["stages"][stage] = dict(status=status, detail=detail)
    verdicts = []
    for stage, r in res["stages"].items():
        k = known.get((case, stage))
        if r["status"] == "fail" and not k:
            verdicts.append(f"{stage}: FAIL (not in {os.path.basename(KNOWN)}): {r['detail']}")
        elif r["status"] in ("pass", "infeasible") and k:
            verdicts.append(f"{stage}: passes now ({r['detail']}) but {os.path.basename(KNOWN)} lists it "
                            f"({k}): remove the line")
        if k:
            r["known"] = k
    res["ok"] = not verdicts
    if results_dir:
        os.makedirs(results_dir, exist_ok=True)
        with open(os.path.join(results_dir, case.replace("/", "-") + ".json"), "w") as f:
            json.dump(res, f, indent=1)
    return res, verdicts


def all_cases():
    out = []
    for arch in sorted(os.listdir(CORPUS)):
        meta = os.path.join(CORPUS, arch, "meta.json")
        if os.path.exists(meta):
            with open(meta) as f:
                out += [f"{arch}/{e['file'][:-5]}" for e in json.load(f)["models"] if "export_error" not in e]
    return out


def main():
    args = sys.argv[1:]
    results = None
    if "--results" in args:
        i = args.index("--results")
        results = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        raise SystemExit(__doc__)
    dtrexec, case = args
    known = load_known()
    quick = os.environ.get("REAL_CHECK_QUICK") == "1"
    cases = all_cases() if case == "--all" else [case]
    stale = sorted({c for c, _ in known} - set(all_cases()))
    if stale and case in ("--all", "--known"):
        print(f"FAIL: {os.path.basename(KNOWN)} names cases that are not in the corpus: {stale}")
        return 1
    if case == "--known":
        print(f"ok: {len(known)} known-failing stages, all of corpus cases")
        return 0
    rc = 0
    for c in cases:
        res, verdicts = check_case(dtrexec, c, known, results, quick)
        line = "  ".join(f"{s}={r['status']}{'(known)' if r.get('known') else ''}" for s, r in res["stages"].items())
        print(f"{'ok  ' if res['ok'] else 'FAIL'} {c}: {line}", flush=True)
        for s, r in res["stages"].items():
            print(f"       {s}: {r['detail']}")
        for v in verdicts:
            print("   ", v)
        rc |= not res["ok"]
    return rc


if __name__ == "__main__":
    sys.exit(main())
