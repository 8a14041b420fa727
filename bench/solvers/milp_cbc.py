#!/usr/bin/env python3
"""bench/solvers/milp_cbc.py — a solver front end of `dtrexec plan --solver
checkmate` (dtr/sim/milp.c; selected with DTRX_MILP_SOLVER=cbc) that solves
the MILP with COIN-OR CBC's command line program (Debian: apt-get install
coinor-cbc; $DTRX_CBC names another binary) and writes the same answer JSON
as bench/solvers/milp_highs.py. The model is read with HiGHS (highspy) and given
to CBC as MPS; a model without integer variables (the LP relaxations of
Checkmate's rounding) goes to bench/solvers/milp_highs.py unchanged.

usage: milp_cbc.py MODEL.lp ANSWER.json [--time-limit S] [--threads N] [--start FILE] [--verbose|--quiet]
"""
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from milp_common import exec_highs, gap, has_integers, parse_args, read_lp, read_start, s_values, write_answer


def main():
    a = parse_args()
    cbc = os.environ.get("DTRX_CBC") or shutil.which("cbc")
    try:
        import highspy
    except ImportError:
        print("milp_cbc.py: the highspy package is missing (pip install highspy)", file=sys.stderr)
        return 2
    if not cbc:
        print("milp_cbc.py: no cbc program (apt-get install coinor-cbc, or set DTRX_CBC)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    h = read_lp(a.model)
    if h is None:
        print(f"milp_cbc.py: HiGHS cannot read {a.model}", file=sys.stderr)
        return 3
    lp = h.getLp()
    if not has_integers(lp):
        exec_highs()
    names = list(lp.col_names_)
    with tempfile.TemporaryDirectory(prefix="dtrx-cbc-") as tmp:
        mps, sol, start = (os.path.join(tmp, f) for f in ("model.mps", "solution.txt", "start.txt"))
        h.writeModel(mps)
        cmd = [cbc, mps]
        if a.time_limit > 0:
            cmd += ["sec", "%g" % max(1.0, a.time_limit - (time.monotonic() - t0))]
        if a.threads > 0:
            cmd += ["threads", str(a.threads)]
        # optimal means within 1e-4 of the bound, as milp_highs.py's mip_rel_gap
        cmd += ["ratio", "1e-4"]
        if a.start:
            # CBC's MIP start file: a header line, then "index name value"
            values = read_start(a.start)
            with open(start, "w") as f:
                f.write("Stopped on iterations - objective value 0\n")
                for j, name in enumerate(names):
                    f.write(f"{j} {name} {values.get(name, 0.0):.17g}\n")
            cmd += ["mips", start]
        cmd += ["solve", "solu", sol]
        try:
            # CBC checks its limit only between nodes: its root (LP, MIP
            # start, cuts) can run far past it, so it is stopped here
            res = subprocess.run(cmd, capture_output=True, text=True,
                                 timeout=a.time_limit * 1.1 + 10 if a.time_limit > 0 else None)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            if a.verbose:
                sys.stdout.write(out + "\nmilp_cbc.py: cbc stopped past its time limit\n")
            write_answer(a.answer, {"status": "time_limit", "has_solution": False, "seconds": time.monotonic() - t0})
            return 0
        if a.verbose:
            sys.stdout.write(res.stdout)
            sys.stdout.flush()
        if res.returncode and not os.path.exists(sol):
            print(f"milp_cbc.py: cbc failed (exit {res.returncode}): {res.stderr.strip()[-300:]}", file=sys.stderr)
            return 3
        seconds = time.monotonic() - t0
        head, rows = "", []
        if os.path.exists(sol):
            with open(sol) as f:
                head = f.readline()
                rows = f.readlines()
    # "Optimal - objective value 15805", "Stopped on time - objective value ...",
    # "Infeasible - objective value ...", "Stopped on time (no integer solution - continuous used) - ..."
    log = res.stdout
    if head.startswith("Optimal"):
        status = "optimal"
    elif head.startswith("Infeasible") or "Problem is infeasible" in log:
        status = "infeasible"
    elif head.startswith("Stopped on time") or "Stopped on time" in head:
        status = "time_limit"
    else:
        status = head.split(" - ")[0].strip().lower().replace(" ", "_") or "unknown"
    has = status in ("optimal", "time_limit") and "no integer solution" not in head and bool(rows)
    out = {"status": status, "has_solution": has, "seconds": seconds}
    m = re.search(r"Lower bound:\s+(\S+)", log)
    bound = float(m.group(1)) if m else math.nan
    if status == "optimal" and not math.isfinite(bound):
        bound = None
    if has:
        m = re.search(r"objective value\s+(\S+)", head)
        obj = float(m.group(1)) if m else math.nan
        out["objective"] = obj
        if status == "optimal" and bound is None:
            bound = obj
        # solution rows: "index name value reduced-cost", "**" before an infeasible one
        fields = [f for f in (line.replace("**", " ").split() for line in rows) if len(f) >= 3]
        out["S"] = s_values([f[1] for f in fields], lambda k: fields[k][2])
    if bound is not None and math.isfinite(bound):
        out["bound"] = bound
        if has and math.isfinite(out["objective"]):
            obj = out["objective"]
            out["gap"] = gap(obj, bound)
    write_answer(a.answer, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
