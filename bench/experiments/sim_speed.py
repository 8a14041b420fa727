#!/usr/bin/env python3
"""One `dtrexec sim` process per run of simrd's reference file
(../shared/data/dtr-logs/simrd-reference.json: the DTR authors' simulator,
one run per log, heuristic and budget ratio), timed from the outside (the
process's wall time, start-up and log reading included) and from the
inside (the replay's own wall_s from --json), against simrd's wall_s for
the same run. Prints per log the median and worst ratio simrd / dtrexec,
and checks that each run's outcome matches simrd's.

usage: sim_speed.py [--dtrexec build/dtrexec] [--data DIR] [--repeat N]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/


def run_once(dtrexec, log, heuristic, ratio):
    cmd = [dtrexec, "sim", log, "--heuristic", heuristic, "--budget", repr(ratio), "--json"]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return wall, cpu, json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtrexec", default=os.path.join(BENCH_DIR, "..", "build", "dtrexec"))
    ap.add_argument("--data", default=os.path.join(BENCH_DIR, "..", "..", "shared", "data", "dtr-logs"))
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; the fastest counts")
    a = ap.parse_args()
    ref = json.load(open(os.path.join(a.data, "simrd-reference.json")))
    def fastest(cmd, n=20):
        best = None
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run(cmd, capture_output=True)
            best = min(best or 1e9, time.perf_counter() - t)
        return best
    empty = fastest(["true"])
    print(f"dtrexec --version: {1e3 * fastest([a.dtrexec, '--version']):.2f} ms; an empty process (true): "
          f"{1e3 * empty:.2f} ms (fastest of 20); load average {os.getloadavg()[0]:.1f}")
    print("| log | runs | simrd per run (median / mean) | dtrexec process wall (median / mean) | its CPU time (median) "
          "| replay only (median) | simrd / process wall: median, worst | simrd mean / process mean "
          "| simrd / process CPU: median, worst | simrd / replay: median, worst | outcomes as simrd |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for m in ref["models"]:
        log = os.path.join(a.data, m["log"])
        rows = []
        for r in m["runs"]:
            best = None
            for _ in range(a.repeat):
                wall, cpu, out = run_once(a.dtrexec, log, r["heuristic"], r["ratio"])
                if best is None or wall < best[0]:
                    best = (wall, cpu, out)
            wall, cpu, out = best
            rows.append((r["wall_s"], wall, out["wall_s"], out["outcome"] == r["result"], cpu))
        ratios = [x[0] / x[1] for x in rows]
        cpu_ratios = [x[0] / max(x[4], 1e-4) for x in rows]
        replay_ratios = [x[0] / max(x[2], 1e-6) for x in rows]
        same = sum(x[3] for x in rows)
        bad += len(rows) - same
        med = statistics.median
        mean = statistics.mean
        print(f"| {m['log']} | {len(rows)} | {med(x[0] for x in rows):.3f} / {mean(x[0] for x in rows):.3f} s "
              f"| {1e3 * med(x[1] for x in rows):.1f} / {1e3 * mean(x[1] for x in rows):.1f} ms "
              f"| {1e3 * med(x[4] for x in rows):.1f} ms "
              f"| {1e3 * med(x[2] for x in rows):.2f} ms "
              f"| {med(ratios):.0f}x, {min(ratios):.1f}x | {mean(x[0] for x in rows) / mean(x[1] for x in rows):.0f}x "
              f"| {med(cpu_ratios):.0f}x, {min(cpu_ratios):.1f}x "
              f"| {med(replay_ratios):.0f}x, {min(replay_ratios):.1f}x | {same}/{len(rows)} |")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
