#!/usr/bin/env python3
"""Keeps tests/node-known-failures.txt honest: every test it lists must exist
among the generated node tests and must still fail under `dtrexec check`
(exit 1 with a FAIL line, never a crash); each listed reason must be given.

Usage: node_known_check.py DTREXEC NODE_TEST_ROOT KNOWN_FILE"""
import os
import subprocess
import sys


def main():
    dtrexec, root, known_file = sys.argv[1:4]
    known = []
    for line in open(known_file):
        if line.startswith("test_"):
            name, _, reason = line.strip().partition(" ")
            known.append((name, reason.strip()))
    problems = []
    dirs = []
    for name, reason in known:
        if not reason:
            problems.append(f"{name}: no reason given")
        d = os.path.join(root, name)
        if not os.path.isdir(d):
            problems.append(f"{name}: no such node test in {root}")
        else:
            dirs.append(d)
    # All in one process first; one process per test only when that one did
    # not end as a plain failure (a crash must be seen as a crash).
    batch = subprocess.run([dtrexec, "check"] + dirs, capture_output=True, text=True, timeout=1800)
    if batch.returncode == 1:
        passed = {os.path.basename(l[5:].split(":")[0]) for l in batch.stdout.splitlines()
                  if l.startswith("PASS ")}
        failed = {os.path.basename(l[5:].split(":")[0]) for l in batch.stdout.splitlines()
                  if l.startswith("FAIL ")}
        for d in dirs:
            name = os.path.basename(d)
            if name in passed:
                problems.append(f"{name}: passes now; remove it from {os.path.basename(known_file)}")
            elif name not in failed:
                problems.append(f"{name}: neither PASS nor FAIL reported")
        dirs = []
    for d in dirs:
        r = subprocess.run([dtrexec, "check", "--quiet", d], capture_output=True, text=True, timeout=120)
        name = os.path.basename(d)
        if r.returncode == 0:
            problems.append(f"{name}: passes now; remove it from {os.path.basename(known_file)}")
        elif r.returncode != 1 or "FAIL" not in r.stdout + r.stderr:
            problems.append(f"{name}: exit {r.returncode} (expected 1 with a FAIL line): "
                            f"{(r.stderr or r.stdout).strip()[-300:]}")
    for p in problems:
        print(p)
    print(f"{len(known) - len(problems)} passed, {len(problems)} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
