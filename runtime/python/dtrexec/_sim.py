"""dtrexec.simulate and dtrexec.plan: the simulator and the static planners
(`dtrexec sim`, `dtrexec plan`) over their C API, dtr/sim/dtrx_sim_api.h, in
the package's libdtrexec_sim.so.

Results are the command's --json objects, parsed: simulate(LOG, budget="0.5x",
heuristic="dtr") has the numbers `dtrexec sim LOG --budget 0.5x --json` prints.
A plan is a Schedule, which Session.set_plan takes and which saves as the
schedule file `dtrexec plan -o` writes (and `dtrexec --plan` reads).
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
from ctypes import POINTER, Structure, c_char_p, c_double, c_int, c_uint64
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union, overload

from ._errors import InputError, error_for

PathLike = Union[str, "os.PathLike[str]"]
SimBudget = Union[None, int, float, str]
Budgets = Union[List[SimBudget], Tuple[SimBudget, ...]]   # a sweep (a str is one budget, not a sequence)

HEURISTICS = ("dtr", "dtr-eq", "dtr-local", "lru", "size", "msps", "random")
DEALLOCS = ("eager", "banish", "ignore")
SOLVERS = ("checkpoint-all", "chen-sqrtn", "chen-greedy", "griewank", "checkmate", "checkmate-lp")
_HERE = os.path.dirname(os.path.abspath(__file__))


class _SimOptions(Structure):
    _fields_ = [("heuristic", c_char_p), ("dealloc", c_char_p), ("remat_limit", c_double),
                ("min_evict_bytes", c_uint64), ("sample_sqrt", c_int), ("seed", c_uint64),
                ("planners_memory", c_int)]


class _PlanOptions(Structure):
    _fields_ = [("solver", c_char_p), ("budget", c_char_p), ("time_limit_s", c_double), ("threads", c_int),
                ("verbose", c_int), ("start", c_char_p), ("solvers_dir", c_char_p), ("python", c_char_p)]


def _library_path() -> str:
    """DTREXEC_SIM_LIBRARY, else libdtrexec_sim.so beside DTREXEC_LIBRARY (a
    build tree), else the one inside the package."""
    env = os.environ.get("DTREXEC_SIM_LIBRARY")
    if env:
        return env
    lib = os.environ.get("DTREXEC_LIBRARY")
    if lib:
        return os.path.join(os.path.dirname(os.path.abspath(lib)), "libdtrexec_sim.so")
    return os.path.join(_HERE, "libdtrexec_sim.so")


_lib: Optional[ctypes.CDLL] = None


def _sim() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        path = _library_path()
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            raise ImportError(f"dtrexec: cannot load the simulator library {path}: {e}") from e
        out = POINTER(ctypes.c_void_p)
        for name, res, args in (
                ("dtrx_sim_options_init", None, [POINTER(_SimOptions)]),
                ("dtrx_sim_plan_options_init", None, [POINTER(_PlanOptions)]),
                ("dtrx_sim_simulate", c_int, [c_char_p, POINTER(_SimOptions), POINTER(c_char_p), c_int, out]),
                ("dtrx_sim_plan", c_int, [c_char_p, POINTER(_PlanOptions), out]),
                ("dtrx_sim_schedule_check", c_int, [c_char_p, c_char_p, c_char_p, c_int, out]),
                ("dtrx_sim_json_free", None, [ctypes.c_void_p]),
                ("dtrx_sim_last_error", c_char_p, [])):
            fn = getattr(loaded, name)
            fn.restype, fn.argtypes = res, args
        _lib = loaded
    return _lib


def solvers_dir() -> Optional[str]:
    """The solver front ends inside the package (milp_highs.py, ...; an
    installed wheel has them), or None: the library's configured paths."""
    d = os.path.join(_HERE, "solvers")
    return d if os.path.isfile(os.path.join(d, "milp_highs.py")) else None


def _call(fn: Any, *args: Any) -> Any:
    """Calls fn(*args, &json) (ctypes releases the GIL); the parsed JSON, or
    the status's exception with the C message."""
    lib = _sim()
    out = ctypes.c_void_p()
    status = fn(*args, ctypes.byref(out))
    if status:
        msg = lib.dtrx_sim_last_error()
        raise error_for(status, msg.decode("utf-8", "replace") if msg else "")
    if not out.value:
        raise error_for(3, "the simulator library returned no result")
    try:
        text = ctypes.string_at(out.value).decode("utf-8")
    finally:
        lib.dtrx_sim_json_free(out)
    return json.loads(text)


def _path(value: PathLike, what: str) -> bytes:
    if not isinstance(value, (str, os.PathLike)):
        raise InputError(f"{what} must be a path (str or os.PathLike), got {type(value).__name__}")
    return os.fsencode(value)


def _budget_text(budget: SimBudget) -> Optional[bytes]:
    """A budget as the command's text: an int is bytes, a float a ratio of
    the unbudgeted peak (0.5 -> "0.5x"), a str as --budget takes it ("512MiB",
    "0.5x", "0.5"); None or 0 unlimited."""
    if budget is None:
        return None
    if isinstance(budget, bool):
        raise InputError(f"budget must be bytes (int), a ratio (float) or a text like '512MiB' or '0.5x', "
                         f"got {budget!r}")
    if isinstance(budget, int):
        if budget < 0:
            raise InputError(f"budget {budget} bytes is negative")
        return None if budget == 0 else f"{budget}B".encode()
    if isinstance(budget, float):
        return f"{budget!r}x".encode()
    if isinstance(budget, str):
        return budget.strip().encode()
    raise InputError(f"budget must be bytes (int), a ratio (float) or a text like '512MiB' or '0.5x', got {budget!r}")


@overload
def simulate(trace_or_graph: PathLike, budget: Union[None, int, float, str] = ..., *, heuristic: str = ...,
             dealloc: str = ..., remat_limit: Optional[float] = ..., min_evict_bytes: int = ...,
             sample_sqrt: bool = ..., seed: int = ..., planners_memory: bool = ...) -> Dict[str, Any]: ...


@overload
def simulate(trace_or_graph: PathLike, budget: Budgets, *, heuristic: str = ...,
             dealloc: str = ..., remat_limit: Optional[float] = ..., min_evict_bytes: int = ...,
             sample_sqrt: bool = ..., seed: int = ..., planners_memory: bool = ...) -> List[Dict[str, Any]]: ...


def simulate(trace_or_graph: PathLike, budget: Union[SimBudget, Budgets] = None, *,
             heuristic: str = "dtr", dealloc: str = "eager", remat_limit: Optional[float] = 1.0,
             min_evict_bytes: int = 0, sample_sqrt: bool = False, seed: int = 1,
             planners_memory: bool = False) -> Union[Dict[str, Any], List[Dict[str, Any]]]:
    """Replays a DTR op log (JSON lines: the DTR authors' logs, or what
    Session(trace=...) wrote, complete once the session is closed) or a graph JSON (Session.export_graph, `dtrexec export`) under DTR with a
    simulated clock and memory counter, as `dtrexec sim PATH --json` does.

    budget: bytes (int), a ratio of the unbudgeted peak (float, or "0.5x"),
    a text as --budget takes it ("512MiB", "0.5"), None for unlimited; or a
    list of them, a sweep: the file is read and its baseline run once, and a
    list of results comes back in the same order.

    Returns the `sim --json` object: outcome ("pass", "OOM",
    "remat_exceeded": a budget too small is an outcome, not an exception),
    budget_bytes, budget_ratio, baseline_peak_bytes, peak_bytes,
    pinned_bytes, baseline_compute, total_compute, remat_compute, overhead,
    evictions, dealloc_evictions, remats, banishes, executions,
    heuristic_evaluations, metadata_accesses, wall_s, message.

    heuristic: dtr, dtr-eq, dtr-local, lru, size, msps, random; dealloc:
    eager, banish, ignore; remat_limit: fail once recomputation exceeds this
    many times the baseline compute (None: never); min_evict_bytes,
    sample_sqrt, seed as the command's options; planners_memory (a graph):
    count workspaces and kept bytes as the planners do.

    Raises InputError for a missing or malformed file, a bad budget, heuristic
    or option, with dtrexec's message."""
    path = _path(trace_or_graph, "trace_or_graph")
    sweep = isinstance(budget, (list, tuple))
    items: List[SimBudget] = list(budget) if isinstance(budget, (list, tuple)) else [budget]
    texts = [_budget_text(b) for b in items]
    if sweep and not texts:
        raise InputError("an empty list of budgets")
    for name, v, ok in (("heuristic", heuristic, HEURISTICS), ("dealloc", dealloc, DEALLOCS)):
        if not isinstance(v, str):
            raise InputError(f"{name} must be one of {', '.join(ok)}, got {v!r}")
    if remat_limit is not None and not (isinstance(remat_limit, (int, float)) and remat_limit >= 0):
        raise InputError(f"remat_limit must be a number >= 0 or None, got {remat_limit!r}")
    for name, n in (("min_evict_bytes", min_evict_bytes), ("seed", seed)):
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < 2 ** 64:
            raise InputError(f"{name} must be an int from 0 to 2^64-1, got {n!r}")
    lib = _sim()
    o = _SimOptions()
    lib.dtrx_sim_options_init(ctypes.byref(o))
    o.heuristic, o.dealloc = heuristic.encode(), dealloc.encode()
    o.remat_limit = -1.0 if remat_limit is None else float(remat_limit)
    o.min_evict_bytes, o.sample_sqrt, o.seed = min_evict_bytes, int(bool(sample_sqrt)), seed
    o.planners_memory = int(bool(planners_memory))
    arr = (c_char_p * len(texts))(*texts)
    rows: List[Dict[str, Any]] = _call(lib.dtrx_sim_simulate, path, ctypes.byref(o), arr, len(texts))
    return rows if sweep else rows[0]


class Schedule:
    """A static checkpointing schedule of a graph (DESIGN.md "Schedule"), as
    plan() makes it or load() reads it: Session.set_plan(schedule) trains by
    it, save(path) writes the schedule file `dtrexec plan -o` writes.

    data: the schedule file's object (steps form); info: the summary
    (`plan --json`'s fields for a plan, `sim --plan --json`'s for a loaded
    one: overhead, peak_bytes, budget_bytes, runs, ...); graph: the graph
    file it was made or checked on."""

    def __init__(self, data: Dict[str, Any], info: Dict[str, Any], graph: Optional[str]) -> None:
        self.data = data
        self.info = info
        self.graph = graph

    @classmethod
    def _from_result(cls, result: Dict[str, Any]) -> "Schedule":
        data = result.pop("schedule")
        graph = result.get("graph")
        return cls(data, result, graph)

    @classmethod
    def load(cls, path: PathLike, graph: Optional[PathLike] = None, *, budget: SimBudget = None,
             staged: bool = False) -> "Schedule":
        """Reads a schedule file (steps or stages form) and checks it on its
        graph, as `dtrexec sim GRAPH --plan PATH` does: graph None is the file
        the schedule names, beside it; budget None its own budget_bytes;
        staged: mapped to Checkmate's stages first. An invalid schedule (an
        input not resident, a peak over the budget, a name not in the graph)
        raises InputError naming the step."""
        return cls._from_result(check_schedule(path, graph, budget=budget, staged=staged))

    def save(self, path: PathLike) -> None:
        """Writes the schedule file (steps form), readable by `dtrexec --plan`,
        `dtrexec sim --plan` and Schedule.load; the graph file it names
        ("graph": {"file"}) is looked for beside it."""
        steps = self.data.get("steps", [])
        head = {k: v for k, v in self.data.items() if k != "steps"}
        body = json.dumps(head)[:-1]
        lines = ",\n  ".join(json.dumps(s) for s in steps)
        with open(path, "w") as f:
            f.write(f"{body},\n \"steps\": [\n  {lines}\n ]}}\n")

    @property
    def budget_bytes(self) -> int:
        """The budget the schedule was made for (0: none)."""
        return int(self.data.get("budget_bytes", 0))

    @property
    def solver(self) -> str:
        return str(self.data.get("solver", {}).get("name", ""))

    @property
    def steps(self) -> List[Tuple[str, str]]:
        """("run" | "recompute" | "free", node name) in order: the steps
        Session.set_plan takes (a free of k names is k steps)."""
        out: List[Tuple[str, str]] = []
        for s in self.data.get("steps", []):
            if "run" in s:
                out.append(("recompute" if s.get("recompute") else "run", str(s["run"])))
            else:
                out.extend(("free", str(n)) for n in s["free"])
        return out

    def __iter__(self) -> Iterator[Tuple[str, str]]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, key: str) -> Any:
        """info's fields: schedule["overhead"], schedule["peak_bytes"], ..."""
        return self.info[key]

    def __repr__(self) -> str:
        return (f"Schedule(solver={self.solver!r}, budget_bytes={self.budget_bytes}, steps={len(self)}, "
                f"overhead={self.info.get('overhead')!r}, peak_bytes={self.info.get('peak_bytes')!r})")


def plan(graph: PathLike, solver: str = "checkpoint-all", budget: SimBudget = None, *, time_limit: float = 600,
         threads: int = 0, start: Union[None, PathLike, Schedule] = None, verbose: bool = False) -> Schedule:
    """A static checkpointing schedule of a graph JSON (Session.export_graph,
    `dtrexec export --train`), as `dtrexec plan GRAPH --solver S --budget B`.

    solver: checkpoint-all, chen-sqrtn, chen-greedy, griewank, checkmate (the
    exact MILP, solved by HiGHS: needs highspy), checkmate-lp (its LP
    relaxation with rounding); budget: bytes (int), a ratio of
    checkpoint-all's peak (float or "0.5x"), a text ("512MiB"), None for
    none; time_limit (seconds, 0 none) and threads for the MILP/LP; start: a
    schedule (or its file) offered to checkmate as the MIP start; verbose:
    the solver's log on stdout.

    The solver front ends (milp_highs.py, ...) run under this interpreter
    (sys.executable) from the package's solvers/ folder, unless
    DTRX_MILP_SCRIPT / DTRX_PYTHON say otherwise.

    Raises BudgetError when no schedule of that kind fits the budget,
    InputError for a bad graph, budget or solver name, Error when the solver
    fails (the message says why, e.g. highspy missing)."""
    path = _path(graph, "graph")
    if not isinstance(solver, str):
        raise InputError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise InputError(f"threads must be a non-negative int, got {threads!r}")
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)):
        raise InputError(f"time_limit must be a number of seconds, got {time_limit!r}")
    lib = _sim()
    o = _PlanOptions()
    lib.dtrx_sim_plan_options_init(ctypes.byref(o))
    keep: List[Optional[bytes]] = [solver.encode(), _budget_text(budget)]
    o.solver, o.budget = keep[0], keep[1]
    o.time_limit_s, o.threads, o.verbose = float(time_limit), threads, int(bool(verbose))
    tmp: Optional[str] = None
    try:
        if isinstance(start, Schedule):
            import tempfile
            fd, tmp = tempfile.mkstemp(prefix="dtrexec-start-", suffix=".json")
            os.close(fd)
            start.save(tmp)
            keep.append(os.fsencode(tmp))
        elif start is not None:
            keep.append(_path(start, "start"))
        else:
            keep.append(None)
        o.start = keep[-1]
        sd = solvers_dir()
        keep += [None if sd is None else os.fsencode(sd), os.fsencode(sys.executable) if sys.executable else None]
        o.solvers_dir, o.python = keep[-2], keep[-1]
        return Schedule._from_result(_call(lib.dtrx_sim_plan, path, ctypes.byref(o)))
    finally:
        if tmp is not None:
            os.unlink(tmp)


def check_schedule(schedule: Union[PathLike, Schedule], graph: Optional[PathLike] = None, *, budget: SimBudget = None,
                   staged: bool = False) -> Dict[str, Any]:
    """Replays a schedule on its graph and checks it (`dtrexec sim GRAPH --plan
    SCHEDULE --json`): compute, peak and overhead against checkpoint-all.
    schedule: a Schedule or a schedule file; graph None: the schedule's own
    (a Schedule's graph, or the file a schedule file names, beside it);
    budget None: the schedule's budget_bytes. The result also holds
    "schedule" (the steps form) and "graph". Raises InputError for an invalid
    schedule, naming the step."""
    tmp: Optional[str] = None
    try:
        if isinstance(schedule, Schedule):
            import tempfile
            fd, tmp = tempfile.mkstemp(prefix="dtrexec-schedule-", suffix=".json")
            os.close(fd)
            schedule.save(tmp)
            if graph is None:
                graph = schedule.graph
            if graph is None:
                raise InputError("the schedule has no graph file: pass graph=")
            spath = os.fsencode(tmp)
        else:
            spath = _path(schedule, "schedule")
        gpath = None if graph is None else _path(graph, "graph")
        result: Dict[str, Any] = _call(_sim().dtrx_sim_schedule_check, spath, gpath, _budget_text(budget),
                                       int(bool(staged)))
        return result
    finally:
        if tmp is not None:
            os.unlink(tmp)
