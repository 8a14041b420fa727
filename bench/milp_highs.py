#!/usr/bin/env python3
"""bench/milp_highs.py — the solver front end of `dtrexec plan --solver
checkmate|checkmate-lp` (bench/milp.c): reads the model bench/milp.c wrote
(CPLEX LP format), solves it with HiGHS (pip highspy) and writes the answer
as JSON for the C side, which owns the model, the lowering and the
validation:

  {"status": "optimal"|"time_limit"|"infeasible"|..., "has_solution": bool,
   "objective": x, "bound": y, "gap": g, "seconds": s,
   "S": [[t, i, value], ...]}          (only S's non-zero values)

With --start FILE ("NAME VALUE" lines, from a rounded LP schedule) the
values are given to HiGHS as a MIP start (it checks them and ignores an
infeasible start).

usage: milp_highs.py MODEL.lp ANSWER.json [--time-limit S] [--threads N] [--start FILE] [--verbose|--quiet]
"""
import argparse
import json
import math
import os
import re
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("answer")
    ap.add_argument("--time-limit", type=float, default=0.0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--start")
    a = ap.parse_args()
    try:
        import highspy
    except ImportError:
        print("milp_highs.py: the highspy package is missing (pip install highspy)", file=sys.stderr)
        return 2

    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(a.verbose))
    if a.time_limit > 0:
        h.setOptionValue("time_limit", float(a.time_limit))
    if a.threads > 0:
        h.setOptionValue("threads", int(a.threads))
    # the solver's own tolerance: optimal means within 1e-4 of the bound
    h.setOptionValue("mip_rel_gap", 1e-4)
    # DTRX_HIGHS_OPTIONS="name=value,name=value": HiGHS options for
    # experiments (bench/milp_speed.py); values typed as HiGHS declares them
    for item in filter(None, os.environ.get("DTRX_HIGHS_OPTIONS", "").split(",")):
        name, _, value = item.partition("=")
        got = h.getOptionValue(name.strip())
        kind = type(got[1] if isinstance(got, tuple) else got)
        value = value.strip()
        typed = (value.lower() in ("1", "true", "on")) if kind is bool else kind(value)
        if h.setOptionValue(name.strip(), typed) == highspy.HighsStatus.kError:
            print(f"milp_highs.py: bad HiGHS option {item!r}", file=sys.stderr)
            return 2
    t0 = time.monotonic()
    st = h.readModel(a.model)
    if st == highspy.HighsStatus.kError:
        print(f"milp_highs.py: HiGHS cannot read {a.model}", file=sys.stderr)
        return 3
    if a.start:
        lp = h.getLp()
        index = {name: j for j, name in enumerate(lp.col_names_)}
        values = [0.0] * lp.num_col_
        with open(a.start) as f:
            for line in f:
                name, _, value = line.partition(" ")
                j = index.get(name)
                if j is not None:
                    values[j] = float(value)
        sol = highspy.HighsSolution()
        sol.col_value = values
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    seconds = time.monotonic() - t0

    ms = h.getModelStatus()
    M = highspy.HighsModelStatus
    names = {
        M.kOptimal: "optimal",
        M.kInfeasible: "infeasible",
        M.kTimeLimit: "time_limit",
        M.kIterationLimit: "iteration_limit",
        M.kUnboundedOrInfeasible: "infeasible",
        M.kSolutionLimit: "solution_limit",
        M.kInterrupt: "interrupted",
    }
    status = names.get(ms, h.modelStatusToString(ms).lower().replace(" ", "_"))
    info = h.getInfo()
    has = info.primal_solution_status == 2  # kSolutionStatusFeasible
    out = {"status": status, "has_solution": bool(has), "seconds": seconds}
    if has:
        obj = info.objective_function_value
        out["objective"] = obj
        lp = h.getLp()
        is_mip = len(lp.integrality_) > 0
        if is_mip:
            bound = info.mip_dual_bound
            out["bound"] = bound
            if math.isfinite(bound):
                out["gap"] = max(0.0, (obj - bound) / abs(obj)) if obj else 0.0
        elif status == "optimal":
            # an LP's optimum bounds the MILP; a point it stopped at does not
            out["bound"] = obj
            out["gap"] = 0.0
        values = h.getSolution().col_value
        pat = re.compile(r"S(\d+)_(\d+)$")
        S = []
        for j, name in enumerate(lp.col_names_):
            m = pat.match(name)
            if m and values[j] > 1e-7:
                S.append([int(m.group(1)), int(m.group(2)), round(float(values[j]), 7)])
        out["S"] = S
    # JSON has no infinities: a missing bound is left out
    for key in ("objective", "bound", "gap", "seconds"):
        if key in out and not math.isfinite(out[key]):
            del out[key]
    with open(a.answer, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
