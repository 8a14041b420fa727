"""Run one ONNX model with onnxruntime or with the dtrexec command, the same
way for both, and compare their outputs.

Shared by bench/experiments/infer_bench.py (timing) and tests/models_check.py (checks);
source_commit() stamps the benchmarks' result pages.
dtrexec is driven only through its command line (DESIGN.md's contract):

    dtrexec MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR
            --threads N --repeat R --stats stats.json --quiet

reading outputs back from DIR/output_<i>.pb (TensorProto, graph output
order) and per-run times from the stats JSON's `step_seconds`.
"""

import json
import os
import subprocess
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-4


class DtrexecError(RuntimeError):
    """dtrexec exited non-zero; carries its exit code and stderr."""

    def __init__(self, cmd, returncode, stderr):
        self.cmd, self.returncode, self.stderr = cmd, returncode, stderr
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "(no message)"
        super().__init__(f"dtrexec exited {returncode}: {last}")


def output_names(model_path):
    m = onnx.load(model_path, load_external_data=False)
    return [o.name for o in m.graph.output]


def run_onnxruntime(model_path, feeds, threads=1, repeat=1, warmup=0, opt_level="all"):
    """Runs the model `warmup + repeat` times on one session with
    intra_op_num_threads=threads, inter_op 1, sequential execution.
    Returns (outputs list in graph order, list of per-run seconds after
    the warm-up)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt_level]
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    outs, times = None, []
    for i in range(warmup + repeat):
        t0 = time.perf_counter()
        outs = sess.run(None, feeds)
        dt = time.perf_counter() - t0
        if i >= warmup:
            times.append(dt)
    return outs, times


def run_dtrexec(dtrexec, model_path, feeds, threads=1, repeat=1, warmup=0, work_dir=None,
                extra_args=(), timeout=None, env=None):
    """Runs dtrexec once with --repeat warmup+repeat. Feeds are written as
    .npy files. Returns (outputs list in graph order, per-run seconds after
    the warm-up, the stats dict). Raises DtrexecError on a non-zero exit."""
    own_dir = work_dir is None
    tmp = tempfile.TemporaryDirectory(prefix="dtrx-run-") if own_dir else None
    wd = tmp.name if own_dir else work_dir
    try:
        os.makedirs(wd, exist_ok=True)
        out_dir = os.path.join(wd, "out")
        os.makedirs(out_dir, exist_ok=True)
        for f in os.listdir(out_dir):
            os.remove(os.path.join(out_dir, f))
        stats_path = os.path.join(wd, "stats.json")
        cmd = [dtrexec, model_path]
        for name, arr in feeds.items():
            path = os.path.join(wd, f"in_{len(cmd)}.npy")
            np.save(path, arr)
            cmd += ["--input", f"{name}={path}"]
        cmd += ["--output-dir", out_dir, "--threads", str(threads),
                "--repeat", str(warmup + repeat), "--stats", stats_path, "--quiet"]
        cmd += list(extra_args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if p.returncode != 0:
            raise DtrexecError(cmd, p.returncode, p.stderr)
        n_out = len(output_names(model_path))
        outs = []
        for i in range(n_out):
            path = os.path.join(out_dir, f"output_{i}.pb")
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            outs.append(numpy_helper.to_array(t))
        with open(stats_path) as f:
            stats = json.load(f)
        steps = list(stats.get("step_seconds", []))
        return outs, steps[warmup:] if len(steps) > warmup else steps, stats
    finally:
        if tmp is not None:
            tmp.cleanup()


def run_dtrexec_train(dtrexec, model_path, feeds, steps, labels=None, threads=1, work_dir=None,
                      extra_args=(), timeout=None, env=None):
    """Runs `dtrexec MODEL --train --steps N` with the feeds (and labels as
    --labels FILE.npy when given). Returns the stats dict (its `loss` list
    holds one value per step). Raises DtrexecError on a non-zero exit."""
    own_dir = work_dir is None
    tmp = tempfile.TemporaryDirectory(prefix="dtrx-train-") if own_dir else None
    wd = tmp.name if own_dir else work_dir
    try:
        os.makedirs(wd, exist_ok=True)
        stats_path = os.path.join(wd, "train-stats.json")
        cmd = [dtrexec, model_path]
        for name, arr in feeds.items():
            path = os.path.join(wd, f"in_{len(cmd)}.npy")
            np.save(path, arr)
            cmd += ["--input", f"{name}={path}"]
        if labels is not None:
            path = os.path.join(wd, "labels.npy")
            np.save(path, labels)
            cmd += ["--labels", path]
        cmd += ["--train", "--steps", str(steps), "--threads", str(threads), "--stats", stats_path, "--quiet"]
        cmd += list(extra_args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if p.returncode != 0:
            raise DtrexecError(cmd, p.returncode, p.stderr)
        with open(stats_path) as f:
            return json.load(f)
    finally:
        if tmp is not None:
            tmp.cleanup()


def compare(expected, actual, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL):
    """numpy.allclose semantics (|a-e| <= atol + rtol*|e|) over every output.
    Returns (ok, max_abs_diff, max_rel_diff, message); the relative
    difference is taken against max(|e|, atol) so that values near zero do
    not dominate it."""
    if len(expected) != len(actual):
        return False, float("inf"), float("inf"), f"{len(actual)} outputs, expected {len(expected)}"
    ok, max_abs, max_rel, msgs = True, 0.0, 0.0, []
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape:
            ok = False
            msgs.append(f"output {i}: shape {list(a.shape)}, expected {list(e.shape)}")
            continue
        if e.dtype != a.dtype:
            ok = False
            msgs.append(f"output {i}: dtype {a.dtype}, expected {e.dtype}")
            continue
        e64, a64 = e.astype(np.float64), a.astype(np.float64)
        if not np.all(np.isfinite(a64)) and not np.array_equal(np.isnan(a64), np.isnan(e64)):
            ok = False
            msgs.append(f"output {i}: non-finite values")
        diff = np.abs(a64 - e64)
        if diff.size:
            max_abs = max(max_abs, float(np.nanmax(diff)))
            max_rel = max(max_rel, float(np.nanmax(diff / np.maximum(np.abs(e64), atol))))
            bad = diff > atol + rtol * np.abs(e64)
            if bad.any():
                ok = False
                k = int(np.argmax(bad.ravel()))
                msgs.append(f"output {i}: {int(bad.sum())} of {diff.size} values differ, first at flat index {k}: "
                            f"got {a64.ravel()[k]:.7g}, expected {e64.ravel()[k]:.7g}")
    return ok, max_abs, max_rel, "; ".join(msgs)


def source_commit():
    """The repository's HEAD (and whether the tree has changes), for the record."""
    try:
        git = ["git", "-C", os.path.dirname(os.path.abspath(__file__))]
        head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"
