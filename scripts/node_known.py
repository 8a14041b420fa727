#!/usr/bin/env python3
"""Rewrites tests/node-known-failures.txt from a run of `dtrexec check` over
every generated ONNX node test (scripts/gen_node_tests.py; the build writes
them to <build>/onnx-node at configure time).

A test that fails keeps a hand-written reason already given for it; any
other failure gets a reason from its category (an operator not implemented, an element
type out of scope) or, failing that, dtrexec's own message. Tests that pass
drop out. Prints what changed.

    scripts/node_known.py build/dtrexec build/onnx-node
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KNOWN = os.path.join(HERE, "..", "tests", "node-known-failures.txt")
EXOTIC = re.compile(r"FLOAT8|FLOAT4|FLOAT6|INT4|INT2|UINT4|UINT2|E8M0|float8|float4|float6|int4|int2|uint4|uint2|e8m0")
HEADER = """# ONNX node tests (onnx's own generators, scripts/gen_node_tests.py) that
# dtrexec does not pass, one per line: NAME  REASON. tests/node-tests.cmake
# leaves them out of their operator's CTest case, and node/known-failures
# fails as soon as one of them passes. Rewrite with scripts/node_known.py;
# keep the reasons honest.
"""


def reason_for(name, msg):
    m = re.search(r"unsupported operator (\w+)", msg)
    if m:
        return f"operator {m.group(1)} not implemented"
    if EXOTIC.search(name) or EXOTIC.search(msg):
        return "exotic element type (FLOAT8/FLOAT6/FLOAT4/INT4/INT2/E8M0) out of scope"
    return msg.strip()[:200] or "fails"


def is_derived(reason):
    return bool(re.fullmatch(r"operator \w+ not implemented", reason)) or reason.startswith("exotic element type")


def main():
    dtrexec, root = sys.argv[1:3]
    old = {}
    if os.path.exists(KNOWN):
        for line in open(KNOWN):
            if line.startswith("test_"):
                name, _, reason = line.strip().partition(" ")
                old[name] = reason.strip()
    names = sorted(d for d in os.listdir(root) if d.startswith("test_"))
    res = subprocess.run([dtrexec, "check"] + [os.path.join(root, n) for n in names],
                         capture_output=True, text=True)
    failed = {}
    for line in res.stdout.splitlines():
        if line.startswith("FAIL "):
            path, _, msg = line[5:].partition(": ")
            failed[os.path.basename(path.rstrip(":"))] = msg
    seen = {os.path.basename(l[5:].split(":")[0]) for l in res.stdout.splitlines()
            if l.startswith(("PASS ", "FAIL "))}
    if seen != set(names):
        sys.exit(f"dtrexec check reported {len(seen)} of {len(names)} tests (exit {res.returncode})")
    # Reasons derived from a message are derived again (the failure may have
    # moved on); hand-written ones are kept.
    rows = {n: old[n] if n in old and not is_derived(old[n]) else reason_for(n, m) for n, m in failed.items()}
    with open(KNOWN, "w") as f:
        f.write(HEADER)
        for n in sorted(rows):
            f.write(f"{n}  {rows[n]}\n")
    gone = sorted(set(old) - set(rows))
    new = sorted(set(rows) - set(old))
    print(f"{len(names) - len(rows)} of {len(names)} pass; {len(rows)} listed "
          f"({len(gone)} removed, {len(new)} added)")
    for n in gone:
        print(f"  passes now: {n}")
    for n in new:
        print(f"  new failure: {n}  {rows[n]}")


if __name__ == "__main__":
    main()
