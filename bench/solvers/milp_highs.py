#!/usr/bin/env python3
"""bench/solvers/milp_highs.py — the solver front end of `dtrexec plan --solver
checkmate|checkmate-lp` (dtr/sim/milp.c): reads the model dtr/sim/milp.c wrote
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
import math
import os
import sys
import time

from milp_common import gap, parse_args, read_start, s_values, write_answer


def main():
    a = parse_args()
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
    # experiments (bench/experiments/milp_speed.py); values typed as HiGHS declares them
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
        for name, value in read_start(a.start).items():
            j = index.get(name)
            if j is not None:
                values[j] = value
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
                out["gap"] = gap(obj, bound)
        elif status == "optimal":
            # an LP's optimum bounds the MILP; a point it stopped at does not
            out["bound"] = obj
            out["gap"] = 0.0
        values = h.getSolution().col_value
        out["S"] = s_values(lp.col_names_, lambda j: values[j])
    write_answer(a.answer, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
