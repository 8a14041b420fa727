"""README.md's Python examples, run as written on the test MLP (13 layers of
128, batch 512) in place of "model.onnx": the training example at its
budget="0.5x", and the simulate/plan example, whose saved schedule also
trains the command."""
import os
import re

import numpy as np

from conftest import ROOT, cli_losses, weights


def readme_python_blocks():
    text = open(os.path.join(ROOT, "README.md")).read()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2, f"README's Python section has {len(blocks)} python blocks, expected 2"
    return blocks


def run_block(code, model):
    assert '"model.onnx"' in code
    ns = {}
    exec(compile(code.replace('"model.onnx"', repr(model)), "README.md", "exec"), ns)
    return ns


def test_readme_training_example(mlp, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = readme_python_blocks()[0]
    assert 'budget="0.5x"' in code
    ns = run_block(code, mlp)
    s, losses, st = ns["s"], ns["losses"], ns["st"]
    assert len(losses) == 100 and losses[-1] < losses[0]
    assert 0 < st["budget_bytes"] and st["peak_bytes"] <= st["budget_bytes"]
    assert st["remats"] > 0 and st["remat_compute"] > 0
    assert len(st["step_seconds"]) == len(st["loss"]) == 100
    # 0.5x of the unbudgeted step's peak, as the command measures it
    import dtrexec
    u = dtrexec.Session(mlp, seed=1)
    u.train(optimizer="sgd", lr=1e-2)
    u.step()
    assert st["budget_bytes"] == u.stats()["peak_bytes"] // 2
    assert np.array_equal(weights("trained.onnx")["W0"], s.tensor("W0"))
    try:
        import matplotlib  # noqa: F401
        assert os.path.getsize("training.png") > 0
    except ImportError:
        pass


def test_readme_simulate_plan_example(mlp, cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns = run_block(readme_python_blocks()[1], mlp)
    import dtrexec
    ref = dtrexec.Session(mlp, seed=1)
    ref.train(optimizer="sgd", lr=1e-2)
    want = [ref.step() for _ in range(3)]
    assert ns["losses"] == want
    p, s = ns["p"], ns["s"]
    assert s.stats()["remats"] == 3 * p["recomputes"] > 0
    assert 0 < s.stats()["budget_bytes"] <= p.budget_bytes
    # the saved schedule trains the command, as the README's comment says
    got = cli_losses(cli, [mlp, "--train", "--steps", 3, "--seed", 1, "--optimizer", "sgd", "--lr", "1e-2",
                           "--plan", "schedule.json"])
    assert got == [float(f"{x:.9g}") for x in want]
