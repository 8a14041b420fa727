#!/usr/bin/env python3
"""bench/solvers/milp_ortools.py — a second solver front end of `dtrexec plan
--solver checkmate` (dtr/sim/milp.c; selected with DTRX_MILP_SOLVER=scip or
DTRX_MILP_SOLVER=cpsat, or DTRX_MILP_SCRIPT pointing here): solves the MILP
dtr/sim/milp.c wrote with OR-Tools (pip ortools) — SCIP or CP-SAT — and
writes the same answer JSON as bench/solvers/milp_highs.py:

  {"status": "optimal"|"time_limit"|"infeasible"|..., "has_solution": bool,
   "objective": x, "bound": y, "gap": g, "seconds": s,
   "S": [[t, i, value], ...]}          (only S's non-zero values)

The model is read with HiGHS (highspy: OR-Tools' own LP-format reader
rejects milp.c's files) and handed over as MPS. A model without integer
variables (the LP relaxations of Checkmate's rounding) goes to
bench/solvers/milp_highs.py unchanged, so only the MILP itself changes solver.

CP-SAT solves integer programs only: every variable is made integer. That
is exact for milp.c's default form: memory is in integer units (sizes
rounded up, the budget down), so the memory variables U, sums of integer
sizes times 0/1 variables, are integers at every integer point. Its
objective (float costs) is scaled to integers by CP-SAT itself.

usage: milp_ortools.py MODEL.lp ANSWER.json [--backend scip|cpsat] [--time-limit S]
       [--threads N] [--start FILE] [--verbose|--quiet]
(--backend defaults to $DTRX_MILP_SOLVER, then scip; --threads: CP-SAT's
workers, SCIP runs one thread in OR-Tools)
"""
import math
import os
import sys
import tempfile
import time

from milp_common import exec_highs, gap, has_integers, parse_args, read_lp, read_start, s_values, write_answer

BACKENDS = {"scip": "scip", "cpsat": "sat"}


def num(x):
    """A float, NaN for what OR-Tools returns when it has none (pandas NA)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def read_mps(model, integral, tmp):
    """The LP file as an OR-Tools model (through HiGHS and MPS); None when
    it has no integer variable (an LP)."""
    import highspy
    h = read_lp(model)
    if h is None:
        raise RuntimeError(f"HiGHS cannot read {model}")
    lp = h.getLp()
    if not has_integers(lp):
        return None
    if integral:
        n = lp.num_col_
        h.changeColsIntegrality(n, list(range(n)), [highspy.HighsVarType.kInteger] * n)
    path = os.path.join(tmp, "model.mps")
    h.writeModel(path)
    from ortools.linear_solver.python import model_builder as mb
    m = mb.Model()
    if not m.import_from_mps_file(path):
        raise RuntimeError(f"OR-Tools cannot read the MPS of {model}")
    return m


def main():
    a = parse_args(backend_default=os.environ.get("DTRX_MILP_SOLVER") or "scip")
    if a.backend not in BACKENDS:
        print(f"milp_ortools.py: unknown backend {a.backend!r} (scip, cpsat)", file=sys.stderr)
        return 2
    try:
        from ortools.linear_solver.python import model_builder as mb
        import highspy  # noqa: F401  (the LP reader)
    except ImportError as e:
        print(f"milp_ortools.py: {e.name} is missing (pip install ortools highspy)", file=sys.stderr)
        return 2

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dtrx-ortools-") as tmp:
        m = read_mps(a.model, a.backend == "cpsat", tmp)
    if m is None:
        # an LP: HiGHS's simplex, as without this front end
        exec_highs()
    variables = list(m.get_variables())
    if a.start:
        values = read_start(a.start)
        # every variable hinted (0 where the start does not say), as
        # milp_highs.py's setSolution
        for v in variables:
            m.add_hint(v, values.get(v.name, 0.0))
    s = mb.Solver(BACKENDS[a.backend])
    if not s.solver_is_supported():
        print(f"milp_ortools.py: this OR-Tools has no {a.backend}", file=sys.stderr)
        return 2
    s.enable_output(bool(a.verbose))
    if a.time_limit > 0:
        # the reading above counts against the limit, as in HiGHS
        s.set_time_limit_in_seconds(max(1.0, a.time_limit - (time.monotonic() - t0)))
    # optimal means within 1e-4 of the bound, as milp_highs.py's mip_rel_gap
    if a.backend == "cpsat":
        params = ["relative_gap_limit:1e-4", f"num_workers:{a.threads if a.threads > 0 else 2}"]
        if a.verbose:
            params.append("log_search_progress:true")
        s.set_solver_specific_parameters(" ".join(params))
    else:
        s.set_solver_specific_parameters("limits/gap = 1e-4\n")
    st = s.solve(m)
    seconds = time.monotonic() - t0

    S_ = mb.SolveStatus
    has = st in (S_.OPTIMAL, S_.FEASIBLE)
    names = {S_.OPTIMAL: "optimal", S_.FEASIBLE: "time_limit", S_.INFEASIBLE: "infeasible",
             S_.NOT_SOLVED: "time_limit", S_.UNBOUNDED: "unbounded"}
    status = names.get(st, str(st).split(".")[-1].lower())
    out = {"status": status, "has_solution": bool(has), "seconds": seconds}
    if has:
        obj = num(s.objective_value)
        bound = num(s.best_objective_bound)
        out["objective"] = obj
        if math.isfinite(bound):
            out["bound"] = bound
            out["gap"] = gap(obj, bound)
        out["S"] = s_values([v.name for v in variables], lambda k: s.value(variables[k]))
    elif st == S_.NOT_SOLVED:
        bound = num(s.best_objective_bound)
        if math.isfinite(bound):
            out["bound"] = bound
    write_answer(a.answer, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
