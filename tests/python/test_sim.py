"""dtrexec.simulate, dtrexec.plan and Schedule (libdtrexec_sim.so) against
the command: the same numbers as `dtrexec sim --json` and `plan --json`, the
same schedules as `plan -o`; a planned Session trains with the losses of an
unplanned one; bad input raises the status's exception with the C message."""
import json
import os
import subprocess
import threading

import numpy as np
import pytest

import dtrexec
from dtrexec import _sim
from conftest import cli_losses

TIMING = ("wall_s", "dtr_overhead_seconds")


def cli_json(cli, args):
    """The object a --json subcommand prints (exit 0 or 2: an OOM is a result)."""
    res = subprocess.run([cli] + [str(a) for a in args], capture_output=True, text=True, timeout=600)
    assert res.returncode in (0, 2), f"dtrexec {' '.join(map(str, args))} exited {res.returncode}:\n{res.stderr}"
    return json.loads(res.stdout)


def untimed(d, *more):
    return {k: v for k, v in d.items() if k not in TIMING + more}


@pytest.fixture(scope="module")
def graph(mlp, tmp_path_factory):
    """One training step of the 13-layer MLP as a graph (Session.export_graph)."""
    d = tmp_path_factory.mktemp("graph")
    s = dtrexec.Session(mlp, threads=1, seed=3)
    s.train()
    s.export_graph(d / "mlp.json")
    return str(d / "mlp.json")


@pytest.fixture(scope="module")
def graph_small(mlp_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("graph4")
    s = dtrexec.Session(mlp_small, threads=1, seed=3)
    s.train()
    s.export_graph(d / "mlp4.json")
    return str(d / "mlp4.json")


# ---- simulate ----

LOG_CASES = [("resnet32-56.log", "dtr", "0.5x"), ("lstm-128.log", "dtr-eq", "0.3"),
             ("transformer-10.log", "lru", "0.6x"), ("densenet121-84.log", "msps", "2GB")]


@pytest.mark.parametrize("log,heuristic,budget", LOG_CASES)
def test_simulate_log_equals_the_command(log, heuristic, budget, data_dir, cli):
    path = os.path.join(data_dir, "dtr-logs", log)
    got = dtrexec.simulate(path, budget=budget, heuristic=heuristic)
    want = cli_json(cli, ["sim", path, "--budget", budget, "--heuristic", heuristic, "--json"])
    assert untimed(got) == untimed(want)
    assert got["model"] == log and got["heuristic"] == heuristic and got["outcome"] in ("pass", "OOM", "remat_exceeded")
    assert got["budget_bytes"] > 0 and got["baseline_compute"] > 0


def test_budget_forms_and_sweep(data_dir, cli):
    """0.5 (float), "0.5x", "0.5" are one ratio; an int is bytes; a list is a
    sweep over one load, equal to one call per budget and to the command."""
    path = os.path.join(data_dir, "dtr-logs", "resnet32-56.log")
    one = untimed(dtrexec.simulate(path, 0.5))
    assert untimed(dtrexec.simulate(path, "0.5x")) == one == untimed(dtrexec.simulate(path, "0.5"))
    peak = one["baseline_peak_bytes"]
    assert one["budget_bytes"] == peak // 2
    assert untimed(dtrexec.simulate(path, peak // 2)) == one
    budgets = [None, 1.0, 0.7, 0.4, 0.1, "64MiB"]
    rows = dtrexec.simulate(path, budgets, heuristic="dtr-eq", dealloc="banish")
    assert isinstance(rows, list) and len(rows) == len(budgets)
    for b, row in zip(budgets, rows):
        assert untimed(row) == untimed(dtrexec.simulate(path, b, heuristic="dtr-eq", dealloc="banish"))
    want = cli_json(cli, ["sim", path, "--budget", "0.4", "--heuristic", "dtr-eq", "--dealloc", "banish", "--json"])
    assert untimed(rows[3]) == untimed(want)
    assert rows[0]["budget_bytes"] == 0 and rows[0]["overhead"] == 1 and rows[0]["evictions"] == 0
    # a budget too small is an outcome (as the command's JSON reports it), not an exception
    assert rows[4]["outcome"] in ("OOM", "remat_exceeded") and rows[4]["message"]


def test_simulate_options_equal_the_command(data_dir, cli):
    path = os.path.join(data_dir, "dtr-logs", "transformer-10.log")
    got = dtrexec.simulate(path, "0.35x", heuristic="random", remat_limit=None, min_evict_bytes=4096,
                           sample_sqrt=True, seed=7)
    want = cli_json(cli, ["sim", path, "--budget", "0.35x", "--heuristic", "random", "--remat-limit", "none",
                          "--min-evict", "4096", "--sample-sqrt", "--seed", "7", "--json"])
    assert untimed(got) == untimed(want)


def test_simulate_session_trace_and_graph(mlp, graph, cli, tmp_path):
    """The op log a Session writes (trace=) and the graph it exports replay
    in the simulator as in the command, with the planners' accounting too."""
    trace = tmp_path / "mlp.log"
    s = dtrexec.Session(mlp, threads=1, seed=3, budget="0.8x", trace=trace)
    s.train()
    s.step()
    s.close()   # the log is complete once the session is closed
    assert trace.stat().st_size > 0
    for path in (trace, graph):
        got = dtrexec.simulate(path, [1.0, 0.6], heuristic="dtr")
        for b, row in zip(("1.0", "0.6"), got):
            assert untimed(row) == untimed(cli_json(cli, ["sim", path, "--budget", b, "--json"]))
        assert got[0]["outcome"] == "pass" and got[1]["evictions"] > 0 and got[1]["budget_bytes"] > 0
    pm = dtrexec.simulate(graph, 0.8, planners_memory=True, remat_limit=None)
    assert untimed(pm) == untimed(cli_json(cli, ["sim", graph, "--budget", "0.8", "--planners-memory",
                                                 "--remat-limit", "none", "--json"]))


def test_simulate_threads(data_dir):
    """Calls in parallel threads (the GIL is released) give the same results."""
    path = os.path.join(data_dir, "dtr-logs", "lstm-128.log")
    want = untimed(dtrexec.simulate(path, 0.4))
    got = [None] * 4

    def work(i):
        got[i] = untimed(dtrexec.simulate(path, 0.4))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [want] * 4


# ---- plan ----

@pytest.mark.parametrize("solver,budget", [("checkpoint-all", "1.0x"), ("chen-sqrtn", "0.7x"),
                                           ("chen-greedy", "0.7"), ("griewank", 0.7)])
def test_plan_equals_the_command(solver, budget, graph, cli, tmp_path):
    sched = dtrexec.plan(graph, solver, budget=budget)
    text = budget if isinstance(budget, str) else f"{budget}x"
    out = tmp_path / "cli.json"
    want = cli_json(cli, ["plan", graph, "--solver", solver, "--budget", text, "-o", out, "--json"])
    assert untimed(sched.info, "seconds", "graph") == untimed(want, "seconds", "output")
    assert sched.solver == solver and sched.budget_bytes == want["budget_bytes"] > 0
    assert sched["peak_bytes"] <= sched.budget_bytes and sched["overhead"] >= 1
    cli_sched = json.load(open(out))
    for d in (cli_sched, sched.data):
        d["solver"].pop("seconds")
    assert sched.data == cli_sched
    # saved and loaded back: the same steps, checked as `sim --plan` checks them
    sched.save(tmp_path / "py.json")
    back = dtrexec.Schedule.load(tmp_path / "py.json", graph)
    assert back.steps == sched.steps and back["peak_bytes"] == sched["peak_bytes"]
    check = cli_json(cli, ["sim", graph, "--plan", tmp_path / "py.json", "--json"])
    assert untimed(back.info, "schedule_file", "graph") == untimed(check, "schedule")


def test_planned_session_trains_like_dtr(mlp, graph, cli, tmp_path):
    """A schedule's session (budget: the schedule's) recomputes exactly the
    schedule's recomputations and gives the unbudgeted run's losses; the
    saved file trains the command the same way."""
    ref = dtrexec.Session(mlp, threads=1, seed=3)
    ref_w0 = ref.tensor("W0")
    ref.train()
    want = [ref.step() for _ in range(3)]
    for solver in ("chen-sqrtn", "griewank"):
        sched = dtrexec.plan(graph, solver, "0.7x")
        s = dtrexec.Session(mlp, threads=1, seed=3)
        s.set_plan(sched)
        s.train()
        assert [s.step() for _ in range(3)] == want
        st = s.stats()
        assert 0 < st["budget_bytes"] <= sched.budget_bytes and st["peak_bytes"] <= st["budget_bytes"]
        assert sched["recomputes"] > 0 and st["remats"] == 3 * sched["recomputes"], (st["remats"], sched.info)
    # weights written before set_plan made the session again (with the
    # schedule's budget) are still there
    w = dtrexec.Session(mlp, threads=1, seed=3)
    w.set_tensor("W0", w.tensor("W0") * 0.5)
    w.set_plan(sched)
    assert w.budget_bytes > 0 and np.array_equal(w.tensor("W0"), ref_w0 * 0.5)
    sched.save(tmp_path / "s.json")
    os.link(graph, tmp_path / os.path.basename(graph))   # the graph beside the schedule, as it names it
    loaded = dtrexec.Schedule.load(tmp_path / "s.json")
    s = dtrexec.Session(mlp, threads=1, seed=3, budget=loaded.budget_bytes)
    s.set_plan(loaded)
    s.train()
    assert [s.step() for _ in range(3)] == want
    got = cli_losses(cli, [mlp, "--train", "--steps", 3, "--threads", 1, "--seed", 3, "--plan", tmp_path / "s.json"])
    assert got == [float(f"{x:.9g}") for x in want]


def test_checkmate(mlp_small, graph_small, cli, tmp_path):
    """Checkmate's MILP through the package (its solver front end found as an
    installed wheel finds it): optimal, no costlier than the classic
    planners' schedules at the same budget, the command's schedule, and it
    trains with the unbudgeted losses."""
    pytest.importorskip("highspy")
    sched = dtrexec.plan(graph_small, "checkmate", "0.8x", time_limit=120)
    assert sched.info["status"] == "optimal" and sched.info["backend"].startswith("highs"), sched.info
    assert sched["peak_bytes"] <= sched.budget_bytes
    for solver in ("chen-sqrtn", "chen-greedy", "griewank"):
        try:
            other = dtrexec.plan(graph_small, solver, "0.8x")
        except dtrexec.BudgetError:
            continue
        assert sched["total_compute"] <= other["total_compute"] * (1 + 1e-9), (solver, other.info, sched.info)
    want = cli_json(cli, ["plan", graph_small, "--solver", "checkmate", "--budget", "0.8x", "--time-limit", "120",
                          "-o", tmp_path / "c.json", "--json"])
    assert want["total_compute"] == sched["total_compute"] and want["peak_bytes"] == sched["peak_bytes"]
    ref = dtrexec.Session(mlp_small, threads=1, seed=3)
    ref.train()
    losses = [ref.step() for _ in range(2)]
    s = dtrexec.Session(mlp_small, threads=1, seed=3)
    s.set_plan(sched)
    s.train()
    assert [s.step() for _ in range(2)] == losses
    # the MIP start: the checkmate schedule itself, as a Schedule
    again = dtrexec.plan(graph_small, "checkmate", "0.8x", start=sched, time_limit=120)
    assert again["total_compute"] == sched["total_compute"]


def test_solver_front_end_paths(graph_small, tmp_path, monkeypatch):
    """The package passes its solvers/ folder and interpreter to the library
    (an installed wheel has no share/dtrexec/solvers); DTRX_MILP_SCRIPT still
    overrides it. A front end that fails is an Error naming it."""
    if os.environ.get("DTREXEC_LIBRARY") is None:   # installed: the scripts are inside the package
        assert _sim.solvers_dir() is not None and os.path.isfile(os.path.join(_sim.solvers_dir(), "milp_common.py"))
    fake = tmp_path / "solvers"
    fake.mkdir()
    (fake / "milp_highs.py").write_text("import sys\nsys.exit(5)\n")
    monkeypatch.delenv("DTRX_MILP_SCRIPT", raising=False)
    monkeypatch.delenv("DTRX_MILP_SOLVER", raising=False)
    monkeypatch.setattr(_sim, "solvers_dir", lambda: str(fake))
    with pytest.raises(dtrexec.Error, match="milp_highs.py") as e:
        dtrexec.plan(graph_small, "checkmate", "0.8x")
    assert str(fake) in str(e.value) and "exit 5" in str(e.value) and e.value.status == 3
    assert "DTRX_MILP_SCRIPT" not in os.environ   # set for the call only
    other = tmp_path / "other.py"
    other.write_text("import sys\nsys.exit(6)\n")
    monkeypatch.setenv("DTRX_MILP_SCRIPT", str(other))
    with pytest.raises(dtrexec.Error, match="exit 6"):
        dtrexec.plan(graph_small, "checkmate-lp", "0.8x")


# ---- errors ----

def test_errors(graph, mlp, data_dir, tmp_path):
    log = os.path.join(data_dir, "dtr-logs", "resnet32-56.log")
    with pytest.raises(dtrexec.InputError, match="No such file") as e:
        dtrexec.simulate(tmp_path / "missing.log")
    assert "missing.log" in str(e.value) and e.value.status == 1
    with pytest.raises(dtrexec.InputError, match="budget 'lots' is not a size"):
        dtrexec.simulate(log, "lots")
    with pytest.raises(dtrexec.InputError, match="budget '0x'"):
        dtrexec.simulate(log, [0.5, "0x"])
    with pytest.raises(dtrexec.InputError, match="budget must be"):
        dtrexec.simulate(log, True)
    with pytest.raises(dtrexec.InputError, match="unknown heuristic 'best' \\(dtr, dtr-eq"):
        dtrexec.simulate(log, 0.5, heuristic="best")
    with pytest.raises(dtrexec.InputError, match="unknown dealloc policy 'never'"):
        dtrexec.simulate(log, 0.5, dealloc="never")
    with pytest.raises(dtrexec.InputError, match="remat_limit"):
        dtrexec.simulate(log, 0.5, remat_limit=-2)
    garbage = tmp_path / "garbage.log"
    garbage.write_text("this is not a trace\n")
    with pytest.raises(dtrexec.InputError, match="garbage.log"):
        dtrexec.simulate(garbage)
    with pytest.raises(dtrexec.InputError, match="unknown solver 'magic' \\(checkpoint-all, chen-sqrtn"):
        dtrexec.plan(graph, "magic", "0.5x")
    with pytest.raises(dtrexec.InputError, match="graph file .*missing.json: No such file"):
        dtrexec.plan(tmp_path / "missing.json", "chen-sqrtn")
    with pytest.raises(dtrexec.InputError):
        dtrexec.plan(log, "chen-sqrtn", "0.5x")   # an op log is not a graph
    with pytest.raises(dtrexec.BudgetError, match="chen-sqrtn at [0-9]+ bytes: .*above the budget") as e:
        dtrexec.plan(graph, "chen-sqrtn", "0.5x")
    assert e.value.status == 2
    with pytest.raises(dtrexec.BudgetError, match="below what any schedule"):
        dtrexec.plan(graph, "checkmate", "0.05x")
    with pytest.raises(dtrexec.InputError, match="MIP start"):
        dtrexec.plan(graph, "chen-sqrtn", "0.7x", start=tmp_path / "s.json")
    # a schedule checked at a budget below its peak, naming the step
    sched = dtrexec.plan(graph, "chen-sqrtn", "0.7x")
    with pytest.raises(dtrexec.InputError, match="step [0-9]+"):
        dtrexec.check_schedule(sched, budget=sched["peak_bytes"] - 1)
    assert dtrexec.check_schedule(sched)["peak_bytes"] == sched["peak_bytes"]
    # a session without a budget that has run cannot take a schedule's
    s = dtrexec.Session(mlp, threads=1, seed=3)
    s.train()
    s.step()
    with pytest.raises(dtrexec.InputError, match="budget="):
        s.set_plan(sched)
