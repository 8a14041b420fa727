"""dtrexec: ONNX inference and training under a hard memory budget (DTR).

    import dtrexec
    s = dtrexec.Session("model.onnx", budget="0.5x")   # or 4_000_000_000, "4GB", "512MiB"
    s.train(optimizer="adamw", lr=1e-3)
    for _ in range(100):
        loss = s.step()                                 # seeded random inputs and targets
    print(s.stats()["peak_bytes"], s.stats()["remats"])

    s.export_graph("graph.json")                        # one step as a static graph
    dtrexec.simulate("graph.json", budget=[0.7, 0.5])   # the DTR simulator (`dtrexec sim`)
    sched = dtrexec.plan("graph.json", "chen-sqrtn", budget="0.5x")   # `dtrexec plan`
    planned = dtrexec.Session("model.onnx"); planned.set_plan(sched)

A binding (ctypes) over the C library's public API, runtime/dtrexec.h; the
library is inside the package (or DTREXEC_LIBRARY names one); the simulator
and planners are in libdtrexec_sim.so beside it (dtr/sim/dtrx_sim_api.h). Results equal
the `dtrexec` command's for the same options and seed.
"""
from ._errors import BudgetError, Error, InputError, NonFiniteError
from ._sim import DEALLOCS, HEURISTICS, SOLVERS, Schedule, check_schedule, plan, simulate
from ._session import LOSSES, OPTIMIZERS, Session, ValueInfo, parse_budget

__version__ = "0.1.0"

__all__ = ["Session", "ValueInfo", "Error", "InputError", "BudgetError", "NonFiniteError", "parse_budget",
           "OPTIMIZERS", "LOSSES", "simulate", "plan", "check_schedule", "Schedule", "HEURISTICS", "DEALLOCS", "SOLVERS",
           "__version__"]
