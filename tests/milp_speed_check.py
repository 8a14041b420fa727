#!/usr/bin/env python3
"""bench/experiments/milp_speed.py's per-budget summary against Checkmate's hour: the
best run that ended within Checkmate's 3900 s (300 s seeded, then an hour)
is picked per budget (a proof first, then
the smallest gap, then the cheapest schedule), runs over the hour never
count, the first proof's wall time is the smallest among proving runs, and
a budget with no run within the hour says so. Then a report made with
--from-csv carries the section with these verdicts.

usage: milp_speed_check.py
"""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "bench", "experiments")
sys.path.insert(0, BENCH)
from milp_speed import hour_summary  # noqa: E402


def row(graph, ratio, variant, status, overhead, bound, wall):
    gap = 0.0 if status == "optimal" else (overhead - bound) / overhead
    return {"graph": graph, "ratio": ratio, "variant": variant, "status": status, "overhead": overhead,
            "bound_overhead": bound, "gap": gap, "solve_s": wall - 1, "wall_s": wall, "cpu_s": wall, "load": 1.0}


ROWS = [
    # a: proven twice within the hour (the faster proof counts), a cheaper-looking run past it
    row("a.json", 0.5, "default", "optimal", 1.02, 1.02, 900.0),
    row("a.json", 0.5, "cpsat-start", "optimal", 1.02, 1.02, 300.0),
    row("a.json", 0.5, "long", "time_limit", 1.01, 1.0, 5000.0),
    # a at 0.3: no proof; the smaller gap wins over the cheaper schedule with the larger gap
    row("a.json", 0.3, "default", "time_limit", 1.10, 1.00, 600.0),
    row("a.json", 0.3, "cpsat-start", "time_limit", 1.11, 1.10, 3890.0),
    row("a.json", 0.3, "long", "optimal", 1.105, 1.105, 7200.0),
    # b: only a run past the hour
    row("b.json", 0.9, "long", "time_limit", 1.05, 1.0, 3910.0),
]


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")


def main():
    s = {(e["graph"], e["ratio"]): e for e in hour_summary(ROWS)}
    check(list(s) == [("a.json", 0.5), ("a.json", 0.3), ("b.json", 0.9)], f"budgets and their order: {list(s)}")
    a5, a3, b9 = s[("a.json", 0.5)], s[("a.json", 0.3)], s[("b.json", 0.9)]
    check(a5["proof_s"] == 300.0, f"first proof within the hour: {a5['proof_s']}")
    check(a5["run"]["status"] == "optimal" and a5["run"]["wall_s"] <= 3600, "a 0.5: a proving run within the hour")
    check(a3["proof_s"] is None, "a 0.3: the proof after two hours does not count")
    check(a3["run"]["variant"] == "cpsat-start", f"a 0.3: smallest gap within the hour: {a3['run']['variant']}")
    check(b9["run"] is None and b9["proof_s"] is None, "b 0.9: no run within the hour")
    check(hour_summary(ROWS, cap=600.0)[1]["run"]["variant"] == "default", "a shorter cap drops the 3890 s run")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rows.csv")
        fields = list(ROWS[0])
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(ROWS)
        res = subprocess.run([sys.executable, os.path.join(BENCH, "milp_speed.py"), "--dtrexec", "unused",
                              "--from-csv", path, "--out", tmp], capture_output=True, text=True)
        check(res.returncode == 0, f"--from-csv: exit {res.returncode}: {res.stderr}")
        md = open(os.path.join(tmp, "milp_speed.md")).read()
        check("## Within Checkmate's hour per budget" in md, "the report has the hour section")
        check("| a.json | 0.5 | proven (300 s) |" in md, "a 0.5 proven in 300 s in the report")
        check("| b.json | 0.9 | no run within the hour |" in md, "b 0.9 without a run in the report")
        check("a schedule within the hour: 2; proven optimal within it: 1; the others' gaps: 0.90-0.90 %" in md,
              "the report's count line")
    print("milp_speed_check: 11 checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
