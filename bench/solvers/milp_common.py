"""bench/solvers/milp_common.py — what the solver front ends of `dtrexec plan
--solver checkmate` (bench/solvers/milp_highs.py, milp_ortools.py, milp_cbc.py;
dtr/sim/milp.c runs them) share: their command line, the MIP start file,
reading milp.c's LP file with HiGHS, and the answer JSON:

  {"status": "optimal"|"time_limit"|"infeasible"|..., "has_solution": bool,
   "objective": x, "bound": y, "gap": g, "seconds": s,
   "S": [[t, i, value], ...]}          (only S's non-zero values)
"""
import argparse
import json
import math
import os
import re
import sys

S_NAME = re.compile(r"S(\d+)_(\d+)$")


def parse_args(backend_default=None):
    """MODEL.lp ANSWER.json [--backend B] [--time-limit S] [--threads N]
    [--start FILE] [--verbose|--quiet]; --backend only with a default."""
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("answer")
    if backend_default is not None:
        ap.add_argument("--backend", default=backend_default)
    ap.add_argument("--time-limit", type=float, default=0.0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--start")
    return ap.parse_args()


def read_start(path):
    """A MIP start file ("NAME VALUE" lines) as {name: value}."""
    values = {}
    with open(path) as f:
        for line in f:
            name, _, value = line.partition(" ")
            values[name] = float(value)
    return values


def read_lp(model):
    """milp.c's LP file read by a quiet HiGHS; None when HiGHS cannot."""
    import highspy
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if h.readModel(model) == highspy.HighsStatus.kError:
        return None
    return h


def has_integers(lp):
    return any(int(k) for k in lp.integrality_)


def exec_highs():
    """Hands this run (same arguments) to bench/solvers/milp_highs.py: the LP
    relaxations stay with HiGHS's simplex in every front end."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "milp_highs.py")
    os.execv(sys.executable, [sys.executable, script] + sys.argv[1:])


def s_values(names, value):
    """S's non-zero values, [[t, i, value], ...], from the variables' names;
    value(k) is the k-th one's value, asked for S's variables only."""
    S = []
    for k, name in enumerate(names):
        m = S_NAME.match(name)
        if m:
            x = float(value(k))
            if x > 1e-7:
                S.append([int(m.group(1)), int(m.group(2)), round(x, 7)])
    return S


def gap(obj, bound):
    return max(0.0, (obj - bound) / abs(obj)) if obj else 0.0


def write_answer(path, out):
    """Writes the answer; JSON has no infinities, so a missing objective,
    bound, gap or time is left out."""
    for key in ("objective", "bound", "gap", "seconds"):
        if key in out and not math.isfinite(out[key]):
            del out[key]
    with open(path, "w") as f:
        json.dump(out, f)
