"""Every error type, with dtrexec's message."""
import numpy as np
import pytest

import dtrexec


def test_hierarchy():
    assert issubclass(dtrexec.InputError, dtrexec.Error) and issubclass(dtrexec.BudgetError, dtrexec.Error)
    assert issubclass(dtrexec.NonFiniteError, dtrexec.Error)
    assert (dtrexec.InputError.status, dtrexec.BudgetError.status, dtrexec.NonFiniteError.status) == (1, 2, 4)


def test_bad_path(tmp_path):
    with pytest.raises(dtrexec.InputError, match="cannot open") as e:
        dtrexec.Session(tmp_path / "missing.onnx")
    assert e.value.status == 1 and "missing.onnx" in str(e.value)


def test_not_a_model(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf model" * 3)
    with pytest.raises(dtrexec.InputError):
        dtrexec.Session(bad)


def test_budget_text():
    assert dtrexec.parse_budget("4GB") == (4_000_000_000, 0.0)
    assert dtrexec.parse_budget("512MiB") == (512 << 20, 0.0)
    assert dtrexec.parse_budget("0.5x") == (0, 0.5)
    assert dtrexec.parse_budget(12345) == (12345, 0.0)
    assert dtrexec.parse_budget(None) == (0, 0.0)
    for bad in ("lots", "-1GB", "0x", "5000x", "nan", "1e30GB"):
        with pytest.raises(dtrexec.InputError, match="budget"):
            dtrexec.parse_budget(bad)
    with pytest.raises(dtrexec.InputError):
        dtrexec.parse_budget(1.5)


def test_impossible_budget(mlp):
    with pytest.raises(dtrexec.BudgetError, match="cannot hold any model"):
        dtrexec.Session(mlp, budget=1000)
    with pytest.raises(dtrexec.BudgetError, match="never evicted"):
        dtrexec.Session(mlp, budget="40KB")      # below the weights
    probe = dtrexec.Session(mlp)
    probe.run()
    pinned = probe.stats()["pinned_bytes"]       # weights and the input
    s = dtrexec.Session(mlp, budget=pinned + 300_000)   # holds them, not a training step
    s.train()
    with pytest.raises(dtrexec.BudgetError, match="infeasible") as e:
        s.step()
    assert e.value.status == 2


def test_bad_options(mlp):
    with pytest.raises(dtrexec.InputError, match="unknown heuristic 'best'"):
        dtrexec.Session(mlp, budget="1MB", heuristic="best")
    with pytest.raises(dtrexec.InputError, match="unknown dealloc"):
        dtrexec.Session(mlp, dealloc="never")
    s = dtrexec.Session(mlp)
    with pytest.raises(dtrexec.InputError, match="unknown optimizer"):
        s.train(optimizer="lion")
    with pytest.raises(dtrexec.InputError, match="lr"):
        s.train(lr=float("nan"))
    with pytest.raises(dtrexec.InputError, match="train"):
        s.step()
    with pytest.raises(dtrexec.InputError):
        dtrexec.Session(mlp, device="tpu")


def test_bad_inputs(mlp):
    s = dtrexec.Session(mlp)
    with pytest.raises(dtrexec.InputError, match="no input named 'y'"):
        s.run({"y": np.zeros((512, 128), np.float32)})
    with pytest.raises(dtrexec.InputError, match="element type"):
        s.run({"x": np.zeros((512, 128), np.float64)})
    with pytest.raises(dtrexec.InputError, match="dimension 1"):
        s.run({"x": np.zeros((512, 127), np.float32)})
    with pytest.raises(dtrexec.InputError, match="no initializer or input named"):
        s.tensor("W99")
    with pytest.raises(dtrexec.InputError, match="float32"):
        s.set_tensor("W0", np.zeros((3, 3), np.float32))


def test_nonfinite_loss(mlp):
    s = dtrexec.Session(mlp, threads=1)
    s.train(loss="sum")
    with pytest.raises(dtrexec.NonFiniteError) as e:
        s.step({"x": np.full((512, 128), np.nan, np.float32)})
    assert e.value.status == 4 and "loss is nan" in str(e.value) and "'h0'" in str(e.value)
