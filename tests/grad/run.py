#!/usr/bin/env python3
"""Finite-difference gradient checks: builds single-operator ONNX models from
the case tables in tests/grad/cases_*.py and runs `dtrexec gradcheck` on
each. Usage: run.py DTREXEC FAMILY [--keep DIR] [-k SUBSTRING]

A case module defines CASES, a list of dicts:
  name     unique case name
  model    an onnx.ModelProto (make it with tests/grad/gradutil.py)
  args     optional extra gradcheck arguments, e.g. ["--eps", "1e-2"]
  no_grad  optional names of float inputs that are not differentiable
A module may also define NO_GRAD, names not differentiable in any of its cases
(class weights, Resize scales, Dropout ratio...). Every other float input must
get a gradient that matches finite differences: a missing one counts as zero.
Inputs and initializers that are float get checked; the loss is the weighted
sum of the model's last float output."""
import importlib
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    dtrexec, family = args[0], args[1]
    keep = args[args.index("--keep") + 1] if "--keep" in args else None
    only = args[args.index("-k") + 1] if "-k" in args else None
    module = importlib.import_module("cases_" + family)
    cases = module.CASES
    table_no_grad = getattr(module, "NO_GRAD", [])
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    out_dir = keep or tempfile.mkdtemp(prefix="gradcheck-")
    os.makedirs(out_dir, exist_ok=True)
    passed = failed = 0
    for case in cases:
        if only and only not in case["name"]:
            continue
        path = os.path.join(out_dir, case["name"] + ".onnx")
        with open(path, "wb") as f:
            f.write(case["model"].SerializeToString())
        cmd = [dtrexec, "gradcheck", path] + case.get("args", [])
        no_grad = list(table_no_grad) + list(case.get("no_grad", []))
        if no_grad:
            cmd += ["--no-grad", ",".join(no_grad)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if res.returncode == 0:
            passed += 1
            print(f"PASS {case['name']}")
        else:
            failed += 1
            print(f"FAIL {case['name']} (exit {res.returncode})\n{res.stdout}{res.stderr}")
    print(f"{family}: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
