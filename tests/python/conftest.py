"""Fixtures of the Python package's tests: the `dtrexec` command to compare
against, and small models written once per run.

Runs against a built tree (tests/CMakeLists.txt sets DTREXEC_LIBRARY,
DTREXEC_CLI and PYTHONPATH) or an installed package (the command from PATH).
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MAKE = os.path.join(ROOT, "bench", "models", "make.py")


@pytest.fixture(scope="session")
def cli():
    """The `dtrexec` command: DTREXEC_CLI, else the one on PATH (pip installs it beside python)."""
    path = os.environ.get("DTREXEC_CLI") or shutil.which("dtrexec", path=os.path.dirname(sys.executable)) \
        or shutil.which("dtrexec")
    if not path:
        pytest.fail("no dtrexec command: set DTREXEC_CLI")
    return path


def run_cli(cli, args, cwd=None):
    res = subprocess.run([cli] + [str(a) for a in args], capture_output=True, text=True, timeout=600, cwd=cwd)
    assert res.returncode == 0, f"dtrexec {' '.join(map(str, args))} exited {res.returncode}:\n{res.stderr}"
    return res


def cli_losses(cli, args):
    """The per-step losses `dtrexec --train` prints ("step K loss %.9g")."""
    out = run_cli(cli, args).stdout
    return [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def save(model, path, check=True):
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    return d


@pytest.fixture(scope="session")
def smallcnn(models):
    """The zoo's small CNN (Conv, BatchNormalization, pooling), batch 4, 16x16."""
    path = models / "smallcnn.onnx"
    subprocess.run([sys.executable, MAKE, "smallcnn", "--tiny", "--batch", "4", "--size", "16", "-o", str(path)],
                   check=True, capture_output=True)
    return str(path)


@pytest.fixture(scope="session")
def transformer(models):
    """The zoo's tiny Transformer (embedding, attention, LayerNormalization)."""
    path = models / "transformer.onnx"
    subprocess.run([sys.executable, MAKE, "transformer", "--tiny", "--batch", "2", "--layers", "2", "-o", str(path)],
                   check=True, capture_output=True)
    return str(path)


def _mlp(path, batch, symbolic=False, layers=13):
    rng = np.random.default_rng(1)
    dims = [128] * layers + [10]
    nodes, inits, x = [], [], "x"
    for i in range(len(dims) - 1):
        inits += [numpy_helper.from_array(rng.normal(0, 0.2, (dims[i], dims[i + 1])).astype(np.float32), f"W{i}"),
                  numpy_helper.from_array(np.zeros(dims[i + 1], np.float32), f"b{i}")]
        nodes.append(helper.make_node("Gemm", [x, f"W{i}", f"b{i}"], [f"h{i}"]))
        x = f"h{i}"
        if i < len(dims) - 2:
            nodes.append(helper.make_node("Tanh", [x], [f"t{i}"]))
            x = f"t{i}"
    shape = ["batch", 128] if symbolic else [batch, 128]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch" if symbolic else batch, 10])],
                              initializer=inits)
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.fixture(scope="session")
def mlp(models):
    """A deep MLP (13 Gemm + Tanh layers of 128, batch 512; tests/budget_check.py's):
    activations dominate, so budgets well below the peak train with recomputation."""
    return _mlp(models / "mlp.onnx", 512)


@pytest.fixture(scope="session")
def mlp_small(models):
    """The MLP with 4 layers: a graph small enough for Checkmate's MILP to
    solve to optimality in seconds."""
    return _mlp(models / "mlp4.onnx", 512, layers=4)


@pytest.fixture(scope="session")
def data_dir():
    """The shared test data (DTRX_DATA_DIR, which CTest sets; else ../shared/data
    beside the source tree)."""
    d = os.environ.get("DTRX_DATA_DIR") or os.path.join(ROOT, "..", "shared", "data")
    if not os.path.isdir(os.path.join(d, "dtr-logs")):
        pytest.skip(f"no shared test data at {d} (set DTRX_DATA_DIR)")
    return d


@pytest.fixture(scope="session")
def mlp_symbolic(models):
    """The MLP with a symbolic batch dimension named 'batch'."""
    return _mlp(models / "mlp_sym.onnx", 0, symbolic=True)


@pytest.fixture(scope="session")
def seq_model(models):
    """Sequences and optionals: x -> SequenceConstruct(x, 2x) -> SequenceAt(1),
    SequenceLength, and an Optional of x with OptionalHasElement."""
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    seq_t = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, [2, 3])
    opt_t = helper.make_value_info("opt", helper.make_optional_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])))
    nodes = [
        helper.make_node("Add", ["x", "x"], ["x2"]),
        helper.make_node("SequenceConstruct", ["x", "x2"], ["seq"]),
        helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.int64))),
        helper.make_node("SequenceAt", ["seq", "one"], ["second"]),
        helper.make_node("SequenceLength", ["seq"], ["n"]),
        helper.make_node("Optional", ["x2"], ["opt"]),
        helper.make_node("OptionalHasElement", ["opt"], ["has"]),
    ]
    outs = [seq_t, helper.make_tensor_value_info("second", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("n", TensorProto.INT64, []), opt_t,
            helper.make_tensor_value_info("has", TensorProto.BOOL, [])]
    graph = helper.make_graph(nodes, "seq", [X], outs)
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), models / "seq.onnx", False)


@pytest.fixture(scope="session")
def seq_input_model(models):
    """A sequence input: ConcatFromSequence over axis 0."""
    seq_t = helper.make_tensor_sequence_value_info("xs", TensorProto.FLOAT, None)
    nodes = [helper.make_node("ConcatFromSequence", ["xs"], ["y"], axis=0)]
    graph = helper.make_graph(nodes, "seqin", [seq_t], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), models / "seqin.onnx", False)
