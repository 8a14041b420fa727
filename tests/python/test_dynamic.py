"""Control-flow models (If, Loop, Scan; bench/models/make_dynamic.py) through
the package: training with new inputs every step equals the command's."""
import os
import subprocess
import sys

import pytest

import dtrexec
from conftest import ROOT, cli_losses

MAKE = os.path.join(ROOT, "bench", "models", "make_dynamic.py")
CASES = {"treelstm": ({}, True, ["--fresh-inputs"]), "early_exit": ({}, True, ["--fresh-inputs"]),
         "lstm_var_len": ({"seq": 12}, False, ["--dim", "seq=12"])}


@pytest.mark.parametrize("name", list(CASES))
def test_control_flow_training_equals_the_command(name, models, cli):
    dims, fresh, flags = CASES[name]
    path = str(models / f"{name}.onnx")
    if not os.path.exists(path):
        subprocess.run([sys.executable, MAKE, name, "--tiny", "-o", path], check=True, capture_output=True)
    want = cli_losses(cli, [path, "--train", "--steps", 3, "--threads", 1, "--seed", 5] + flags)
    s = dtrexec.Session(path, threads=1, seed=5, dims=dims)
    s.train(fresh_inputs=fresh)
    got = [s.step() for _ in range(3)]
    assert len(want) == 3 and [float(f"{x:.9g}") for x in got] == want, (got, want)
    if fresh:
        assert len(set(got)) == 3     # new inputs every step
