#!/usr/bin/env python3
"""A signal that ends `dtrexec plan` while its MILP solver runs ends the
solver too (kill, timeout(1) and batch systems signal dtrexec alone): a
stand-in solver script (DTRX_MILP_SCRIPT) writes its pid and sleeps; dtrexec
gets SIGTERM; it must die by SIGTERM, leave no solver running and remove
its model folder.

usage: plan_signal_check.py DTREXEC
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from milp_solver_check import graph  # noqa: E402

SOLVER = """import os, sys, time
open(os.environ["PID_FILE"], "w").write(str(os.getpid()))
time.sleep(120)
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main():
    dtrexec = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="plan-signal-check-")
    try:
        g, script, pid_file = (os.path.join(tmp, n) for n in ("toy.json", "solver.py", "pid"))
        graph(g)
        with open(script, "w") as f:
            f.write(SOLVER)
        env = dict(os.environ, DTRX_MILP_SCRIPT=script, PID_FILE=pid_file, DTRX_PYTHON=sys.executable, TMPDIR=tmp)
        p = subprocess.Popen([dtrexec, "plan", g, "--solver", "checkmate", "--budget", "0.8", "-o",
                              os.path.join(tmp, "s.json")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while not os.path.exists(pid_file) or not open(pid_file).read():
            if time.time() > deadline or p.poll() is not None:
                p.kill()
                raise SystemExit(f"FAIL: the stand-in solver never started (dtrexec: {p.poll()})")
            time.sleep(0.1)
        solver = int(open(pid_file).read())
        folders = glob.glob(os.path.join(tmp, "dtrexec-milp-*"))
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            raise SystemExit("FAIL: dtrexec did not end within 30 s of SIGTERM")
        if p.returncode != -signal.SIGTERM:
            raise SystemExit(f"FAIL: dtrexec ended with {p.returncode}, not by SIGTERM")
        if alive(solver):
            os.kill(solver, signal.SIGKILL)
            raise SystemExit(f"FAIL: the solver (pid {solver}) outlived dtrexec")
        left = [d for d in folders if os.path.exists(d)]
        if not folders or left:
            raise SystemExit(f"FAIL: model folders {folders}, left behind {left}")
        print(f"ok: dtrexec ended by SIGTERM, solver {solver} stopped, {folders[0]} removed")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
