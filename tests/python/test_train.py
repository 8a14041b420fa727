"""Training through dtrexec.Session against the command: the same seed gives
the same losses (all 9 digits the command prints) and bit-identical weights;
budgets below the peak recompute and still give bit-identical results."""
import numpy as np
import pytest

import dtrexec
from conftest import cli_losses, run_cli, weights

CASES = {
    "sgd": ({}, []),
    "momentum-wd": ({"optimizer": "momentum", "lr": 0.05, "momentum": 0.8, "weight_decay": 1e-3},
                    ["--optimizer", "momentum", "--lr", "0.05", "--momentum", "0.8", "--weight-decay", "1e-3"]),
    "adamw": ({"optimizer": "adamw", "lr": 1e-3, "weight_decay": 0.01},
              ["--optimizer", "adamw", "--lr", "1e-3", "--weight-decay", "0.01"]),
    "adam-freeze": ({"optimizer": "adam", "lr": 1e-3, "freeze": ["W0", "b*"]},
                    ["--optimizer", "adam", "--lr", "1e-3", "--freeze", "W0", "--freeze", "b*"]),
}


def py_train(path, steps, kwargs, **session):
    s = dtrexec.Session(path, threads=1, seed=session.pop("seed", 3), **session)
    s.train(**kwargs)
    return s, [s.step() for _ in range(steps)]


def same9(a, b):
    return [float(f"{x:.9g}") for x in a] == list(b)


@pytest.mark.parametrize("case", list(CASES))
def test_mlp_equals_the_command(case, mlp, cli, tmp_path):
    kwargs, flags = CASES[case]
    out = tmp_path / "cli.onnx"
    want = cli_losses(cli, [mlp, "--train", "--steps", 4, "--threads", 1, "--seed", 3, "--save", out] + flags)
    s, got = py_train(mlp, 4, kwargs)
    assert len(want) == 4 and same9(got, want), (got, want)
    s.save(tmp_path / "py.onnx")
    w_cli, w_py = weights(out), weights(tmp_path / "py.onnx")
    assert w_cli.keys() == w_py.keys()
    for k in w_cli:
        assert np.array_equal(w_cli[k], w_py[k]), k
    if "freeze" in kwargs:
        assert np.array_equal(s.tensor("W0"), weights(mlp)["W0"])
    else:
        assert not np.array_equal(s.tensor("W0"), weights(mlp)["W0"])


@pytest.mark.parametrize("model", ["smallcnn", "transformer"])
def test_zoo_models_equal_the_command(model, request, cli):
    path = request.getfixturevalue(model)
    want = cli_losses(cli, [path, "--train", "--steps", 3, "--threads", 1, "--seed", 3, "--optimizer", "adamw",
                            "--lr", "1e-3"])
    _, got = py_train(path, 3, {"optimizer": "adamw", "lr": 1e-3})
    assert len(want) == 3 and same9(got, want), (got, want)


def test_budget_recomputes_bit_identically(mlp):
    base, base_losses = py_train(mlp, 3, {})
    peak = base.stats()["peak_bytes"]
    for ratio in (0.8, 0.7):
        s, losses = py_train(mlp, 3, {}, budget=int(ratio * peak), verify_remat=True)
        st = s.stats()
        assert losses == base_losses, ratio          # bit for bit
        assert int(ratio * peak) - 4096 < st["budget_bytes"] <= int(ratio * peak)   # the arena aligns it
        assert st["peak_bytes"] <= st["budget_bytes"] < peak
        assert st["evictions"] > 0 and st["remats"] > 0 and st["remat_compute"] > 0
        assert st["heuristic"] == "dtr" and st["dealloc"] == "eager"
        for name in ("W0", "W11", "b3"):
            assert np.array_equal(s.tensor(name), base.tensor(name))


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_update_in_backward_equals_after(mlp, optimizer):
    """update="in-backward" (the default) frees each gradient as it is used;
    the losses and weights equal updating after the backward pass, with and
    without a budget, and the unbudgeted peak is no higher."""
    after, want = py_train(mlp, 3, {"optimizer": optimizer, "update": "after-backward"})
    inb, got = py_train(mlp, 3, {"optimizer": optimizer})
    assert got == want
    assert after.stats()["updates_in_backward"] == 0 and inb.stats()["updates_in_backward"] > 0
    assert inb.stats()["peak_bytes"] <= after.stats()["peak_bytes"]
    budget = int(0.7 * after.stats()["peak_bytes"])
    s, losses = py_train(mlp, 3, {"optimizer": optimizer}, budget=budget, verify_remat=True)
    assert losses == want and s.stats()["remats"] > 0
    for name in ("W0", "W11", "b3"):
        assert np.array_equal(s.tensor(name), after.tensor(name))
    with pytest.raises(dtrexec.InputError, match="unknown update"):
        dtrexec.Session(mlp).train(update="sometimes")


def test_ratio_budget_equals_the_command(mlp, cli, tmp_path):
    stats = tmp_path / "s.json"
    want = cli_losses(cli, [mlp, "--train", "--steps", 3, "--threads", 1, "--seed", 3, "--budget", "0.6x",
                            "--heuristic", "lru", "--stats", stats])
    s, got = py_train(mlp, 3, {}, budget="0.6x", heuristic="lru")
    import json
    cli_stats = json.load(open(stats))
    st = s.stats()
    assert same9(got, want)
    for k in ("budget_bytes", "peak_bytes", "evictions", "remats", "op_calls", "heuristic"):
        assert st[k] == cli_stats[k], k
    assert st["remats"] > 0


def test_backward_and_grad(mlp, cli, tmp_path):
    """backward() + grad() equal the command's --grad-dir, and leave the weights alone."""
    run_cli(cli, [mlp, "--train", "--steps", 1, "--threads", 1, "--seed", 3, "--grad-dir", tmp_path, "--quiet"])
    import onnx
    from onnx import numpy_helper
    s = dtrexec.Session(mlp, threads=1, seed=3)
    s.train()
    w0 = s.tensor("W0")
    s.backward()
    assert np.array_equal(s.tensor("W0"), w0)
    for name in ("W0", "W5", "b11"):
        want = numpy_helper.to_array(onnx.load_tensor(str(tmp_path / f"{name}.pb")))
        assert np.array_equal(s.grad(name), want), name
    # an optimizer of one's own: plain SGD by hand equals train(lr=...)'s first step
    s.set_tensor("W0", w0 - 0.01 * s.grad("W0"))
    t = dtrexec.Session(mlp, threads=1, seed=3)
    t.train(lr=0.01)
    t.step()
    np.testing.assert_allclose(s.tensor("W0"), t.tensor("W0"), rtol=0, atol=1e-7)


def test_labels_and_set_tensor(mlp):
    s = dtrexec.Session(mlp, threads=1)
    s.train(loss="cross-entropy")
    labels = np.arange(512, dtype=np.int64) % 10
    x = np.random.default_rng(0).uniform(-1, 1, (512, 128)).astype(np.float32)
    first = s.step({"x": x}, labels)
    for _ in range(20):
        last = s.step()        # inputs and labels stay
    assert last < first
    assert "cross-entropy" in s.loss_description
    w = s.tensor("W3")
    s.set_tensor("W3", np.zeros_like(w))
    assert not np.any(s.tensor("W3"))
    assert len(s.stats()["loss"]) == 21


def test_params(mlp):
    p = {d["name"]: d for d in dtrexec.Session(mlp).params(freeze="b*")}
    assert p["W0"]["trainable"] and p["W0"]["shape"] == (128, 128) and p["W0"]["dtype"] == "float32"
    assert not p["b0"]["trainable"] and p["b0"]["reason"] == "--freeze"


def test_export_graph_and_plan(mlp, tmp_path):
    """export_graph writes the step's nodes; a schedule running them in order
    (set_plan) trains like DTR, and one in another order fails naming the step."""
    import json
    s = dtrexec.Session(mlp, threads=1, seed=3)
    s.train()
    s.export_graph(tmp_path / "g.json")
    g = json.load(open(tmp_path / "g.json"))
    names = [n["name"] if "name" in n else n["id"] for n in g["nodes"]]
    assert len(names) > 20
    _, want = py_train(mlp, 2, {})
    planned = dtrexec.Session(mlp, threads=1, seed=3, budget="64MB")
    planned.set_plan([("run", n) for n in names])
    planned.train()
    assert [planned.step() for _ in range(2)] == want
    wrong = dtrexec.Session(mlp, threads=1, seed=3, budget="64MB")
    wrong.set_plan([("run", n) for n in reversed(names)])
    wrong.train()
    with pytest.raises(dtrexec.Error, match="schedule"):
        wrong.step()
    with pytest.raises(dtrexec.InputError, match="kind"):
        wrong.set_plan([("keep", names[0])])
