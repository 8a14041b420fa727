"""Inference through dtrexec.Session against onnxruntime and the command."""
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import dtrexec
from conftest import ROOT, run_cli


def ort_run(path, feeds):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def random_feeds(session, seed=0, dims=None):
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in session.inputs:
        shape = [d if isinstance(d, int) else dims[d] for d in info.shape]
        if info.dtype.startswith("int"):
            feeds[info.name] = rng.integers(0, 10, shape).astype(info.dtype)
        else:
            feeds[info.name] = rng.uniform(-1, 1, shape).astype(info.dtype)
    return feeds


@pytest.mark.parametrize("name", ["smallcnn", "mlp", "transformer", "folded"])
def test_against_onnxruntime(name, request):
    path = (os.path.join(ROOT, "tests", "data", "exports", "ts17-eval-folded.onnx") if name == "folded"
            else request.getfixturevalue(name))
    s = dtrexec.Session(path, threads=1)
    feeds = random_feeds(s)
    got = s.run(feeds)
    want = ort_run(path, feeds)
    assert len(got) == len(want) == len(s.outputs)
    for g, w, info in zip(got, want, s.outputs):
        assert g.dtype == w.dtype and g.shape == w.shape, info.name
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5, err_msg=info.name)


def test_random_inputs_equal_the_command(smallcnn, cli, tmp_path):
    """run() without feeds draws the command's seeded inputs: outputs bit for bit."""
    for seed in (0, 7):
        run_cli(cli, [smallcnn, "--threads", "1", "--seed", seed, "--output-dir", tmp_path / f"out{seed}", "--quiet"])
        want = numpy_helper.to_array(onnx.load_tensor(str(tmp_path / f"out{seed}" / "output_0.pb")))
        (got,) = dtrexec.Session(smallcnn, threads=1, seed=seed).run()
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert not np.array_equal(dtrexec.Session(smallcnn, threads=1, seed=0).run()[0],
                              dtrexec.Session(smallcnn, threads=1, seed=7).run()[0])


def test_descriptions_name_symbolic_dims(mlp_symbolic, smallcnn):
    s = dtrexec.Session(mlp_symbolic)
    (x,) = s.inputs
    assert (x.name, x.kind, x.dtype, x.shape) == ("x", "tensor", "float32", ("batch", 128))
    assert s.outputs[0].shape == ("batch", 10)
    with pytest.raises(dtrexec.InputError, match="batch"):
        s.run()   # a random input needs the dimension bound
    s.bind_dim("batch", 5)
    (y,) = s.run()
    assert y.shape == (5, 10)
    (y3,) = dtrexec.Session(mlp_symbolic, dims={"batch": 3}).run()
    assert y3.shape == (3, 10)
    assert dtrexec.Session(smallcnn).inputs[0].shape == (4, 3, 16, 16)


def test_feeds_persist_and_are_not_needlessly_copied(mlp):
    s = dtrexec.Session(mlp, threads=1)
    x = np.random.default_rng(3).uniform(-1, 1, (512, 128)).astype(np.float32)
    (a,) = s.run({"x": x})
    (b,) = s.run()                      # the input keeps its last value
    assert np.array_equal(a, b)
    (c,) = s.run({"x": np.asfortranarray(x)})   # any layout: made contiguous
    assert np.array_equal(a, c)
    a[:] = 0                             # outputs are the caller's own arrays
    assert not np.array_equal(a, s.run()[0])


def test_sequences_and_optionals(seq_model, seq_input_model):
    s = dtrexec.Session(seq_model, threads=1)
    assert [o.kind for o in s.outputs] == ["sequence", "tensor", "tensor", "optional", "tensor"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    seq, second, n, opt, has = s.run({"x": x})
    want = ort_run(seq_model, {"x": x})
    assert isinstance(seq, list) and len(seq) == 2
    assert np.array_equal(seq[0], x) and np.array_equal(seq[1], 2 * x)
    for g, w in zip(seq, want[0]):
        assert np.array_equal(g, w)
    assert np.array_equal(second, want[1]) and int(n) == int(want[2]) == 2
    assert np.array_equal(opt, 2 * x) and bool(has) and bool(want[4])
    t = dtrexec.Session(seq_input_model, threads=1)
    assert t.inputs[0].kind == "sequence"
    parts = [np.full((1, 3), k, np.float32) for k in range(4)]
    (y,) = t.run({"xs": parts})
    assert np.array_equal(y, np.concatenate(parts))
    assert np.array_equal(y, ort_run(seq_input_model, {"xs": parts})[0])
