#!/usr/bin/env python3
"""Checks of the rarer operators beyond their ONNX node tests.

Scan-8 (batched, sequence_lens, reverse directions) against a numpy loop;
SequenceMap over sequences of different element shapes and its errors; the
ai.onnx.preview.training optimizers (float64, T > 0, several tensors,
norm_coefficient_post, nesterov) and TfIdfVectorizer (IDF, TFIDF, 3-grams,
permuted indexes, int64 tokens) against onnx.reference; Bernoulli and
RandomUniformLike, whose node tests expect numpy's generator, by their
statistics, ranges, types and determinism; ai.onnx.ml's Binarizer (every
type, NaN, thresholds) and ArrayFeatureExtractor (ranks 1..3, repeated and
2-D indices), TreeEnsemble (every node mode, NaN with and without
nodes_missing_value_tracks_true, set membership, a one-leaf tree, float
and double weights, every aggregate; the post transforms, which
onnx.reference leaves out, applied to its output with its own
_common_classifier functions) and LabelEncoder 2 and 4 (int/float keys and
values, tensors, defaults, repeated keys; NaN keys by the schema) against
onnx.reference; clear errors for bad attributes and
inputs. Each case is a model run with `dtrexec MODEL --output-dir`.

Usage: rare_ops_check.py DTREXEC"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

F, D, I64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64
PREVIEW = "ai.onnx.preview.training"
rng = np.random.default_rng(11)
failures = []
ROOT = tempfile.mkdtemp(prefix="rare-ops-")


def model(nodes, inputs, outputs, opset=18, inits=(), domains=()):
    """inputs: list of (name, array); outputs: names."""
    vi = lambda n, a: helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
    g = helper.make_graph(nodes, "g", [vi(n, a) for n, a in inputs],
                          [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8
    return m


def run(name, m, inputs, want_exit=0):
    """Runs the model; returns (outputs as arrays, stderr)."""
    d = os.path.join(ROOT, name)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    cmd = [sys.argv[1], path, "--output-dir", d, "--quiet"]
    for n, a in inputs:
        p = os.path.join(d, n + ".npy")
        np.save(p, a)
        cmd += ["--input", f"{n}={p}"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if res.returncode != want_exit:
        failures.append(f"{name}: exit {res.returncode}, expected {want_exit}: {res.stderr.strip()}")
        return None, res.stderr
    outs = []
    for k in range(len(m.graph.output)):
        p = os.path.join(d, f"output_{k}.pb")
        if os.path.exists(p):
            t = TensorProto()
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            outs.append(numpy_helper.to_array(t))
    return outs, res.stderr


def expect_close(name, got, want, rtol=1e-5, atol=1e-6):
    if got is None:
        return
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            failures.append(f"{name}: output {k} is {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
        elif not np.allclose(g, w, rtol=rtol, atol=atol):
            i = int(np.argmax(np.abs(g.astype(np.float64) - w.astype(np.float64)).ravel()))
            failures.append(f"{name}: output {k} differs, e.g. at flat index {i}: got {g.ravel()[i]}, "
                            f"expected {w.ravel()[i]}")


def expect_error(name, m, inputs, words):
    _, err = run(name, m, inputs, want_exit=1)
    for w in words:
        if w not in err:
            failures.append(f"{name}: message {err.strip()!r} does not mention {w!r}")


def check(name, cond, what):
    if not cond:
        failures.append(f"{name}: {what}")


# ---- Scan-8 ------------------------------------------------------------------------------------
def scan8_case():
    vi = lambda n: helper.make_tensor_value_info(n, F, [2])
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x1"], ["s_a"]),
                              helper.make_node("Mul", ["s_a", "x2"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["y1"]),
                              helper.make_node("Sub", ["x1", "x2"], ["y2"])],
                             "b", [vi("s_in"), vi("x1"), vi("x2")], [vi("s_out"), vi("y1"), vi("y2")])
    lens = np.array([4, 1, 0, 3], np.int64)
    s0 = rng.standard_normal((4, 2)).astype(np.float32)
    x1 = rng.standard_normal((4, 4, 2)).astype(np.float32)
    x2 = rng.standard_normal((4, 4, 2)).astype(np.float32)
    fs, y1, y2 = s0.copy(), np.zeros((4, 4, 2), np.float32), np.zeros((4, 4, 2), np.float32)
    for b in range(4):
        s = s0[b].copy()
        for t in range(lens[b]):
            a, r = x1[b, t], x2[b, lens[b] - 1 - t]   # the second scan input runs in reverse
            s = (s + a) * r
            y1[b, t], y2[b, t] = s, a - r
        fs[b] = s
    for with_lens in (True, False):
        ins = [("s0", s0), ("x1", x1), ("x2", x2)]
        if with_lens:
            ins = [("lens", lens)] + ins
        else:
            lens_full = np.full(4, 4, np.int64)
            fs2, y1f, y2f = s0.copy(), np.zeros_like(y1), np.zeros_like(y2)
            for b in range(4):
                s = s0[b].copy()
                for t in range(4):
                    a, r = x1[b, t], x2[b, 3 - t]
                    s = (s + a) * r
                    y1f[b, t], y2f[b, t] = s, a - r
                fs2[b] = s
        node = helper.make_node("Scan", ["lens" if with_lens else "", "s0", "x1", "x2"], ["s", "y1", "y2"],
                                body=body, num_scan_inputs=2, directions=[0, 1])
        m = model([node], ins, ["s", "y1", "y2"], opset=8)
        got, _ = run(f"scan8_{'lens' if with_lens else 'full'}", m, ins)
        expect_close(f"scan8_{'lens' if with_lens else 'full'}", got,
                     [fs, y1, y2] if with_lens else [fs2, y1f, y2f])
    bad = helper.make_node("Scan", ["lens", "s0", "x1", "x2"], ["s", "y1", "y2"], body=body, num_scan_inputs=2,
                           directions=[0, 1])
    ins = [("lens", np.array([4, 5, 0, 1], np.int64)), ("s0", s0), ("x1", x1), ("x2", x2)]
    expect_error("scan8_bad_lens", model([bad], ins, ["s", "y1", "y2"], opset=8), ins, ["sequence_lens[1] is 5"])
    bad = helper.make_node("Scan", ["", "s0", "x1", "x2"], ["s", "y1", "y2"], body=body, num_scan_inputs=2,
                           directions=[0, 1, 0])
    ins = [("s0", s0), ("x1", x1), ("x2", x2)]
    expect_error("scan8_bad_directions", model([bad], ins, ["s", "y1", "y2"], opset=8), ins,
                 ["Scan", "directions must list 2 ints"])


# ---- SequenceMap -----------------------------------------------------------------------------
def sequence_map_case():
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3), (4, 3), (1, 3)])
    w = rng.standard_normal((3,)).astype(np.float32)
    vi = lambda n, t=F: helper.make_tensor_value_info(n, t, None)
    body = helper.make_graph([helper.make_node("Mul", ["e", "w_in"], ["m"]),
                              helper.make_node("ReduceSum", ["m"], ["r"], keepdims=0),
                              helper.make_node("Shape", ["e"], ["sh"])],
                             "sm", [vi("e"), vi("w_in")], [vi("r"), vi("sh", I64)])
    nodes = [helper.make_node("SequenceConstruct", ["A", "B", "C"], ["xs"]),
             helper.make_node("SequenceMap", ["xs", "W"], ["rs", "shapes"], body=body),
             helper.make_node("ConcatFromSequence", ["rs"], ["r"], axis=0, new_axis=1),
             helper.make_node("ConcatFromSequence", ["shapes"], ["s"], axis=0, new_axis=1)]
    ins = [("A", a), ("B", b), ("C", c), ("W", w)]
    got, _ = run("sequence_map_shapes", model(nodes, ins, ["r", "s"]), ins)
    expect_close("sequence_map_shapes", got, [np.array([(x * w).sum() for x in (a, b, c)], np.float32),
                                              np.array([x.shape for x in (a, b, c)], np.int64)], rtol=1e-5)
    body2 = helper.make_graph([helper.make_node("Add", ["p", "q"], ["o"])], "sm2", [vi("p"), vi("q")], [vi("o")])
    nodes = [helper.make_node("SequenceConstruct", ["A", "A"], ["xs"]),
             helper.make_node("SequenceConstruct", ["A"], ["ys"]),
             helper.make_node("SequenceMap", ["xs", "ys"], ["zs"], body=body2),
             helper.make_node("SequenceLength", ["zs"], ["n"])]
    expect_error("sequence_map_lengths", model(nodes, [("A", a)], ["n"]), [("A", a)],
                 ["SequenceMap", "input 1 is a sequence of 1, input 0 one of 2"])
    nodes = [helper.make_node("SequenceMap", ["A"], ["zs"], body=body2)]
    expect_error("sequence_map_body_arity", model(nodes, [("A", a)], ["zs"]), [("A", a)],
                 ["SequenceMap", "body has 2 inputs"])


# ---- ai.onnx.preview.training ------------------------------------------------------------------
def optimizer_cases():
    for dt in (np.float32, np.float64):
        for t in (0, 3):
            n = 2
            xs = [rng.standard_normal((3, 2)).astype(dt), rng.standard_normal((4,)).astype(dt)]
            gs = [rng.standard_normal(x.shape).astype(dt) for x in xs]
            vs = [rng.standard_normal(x.shape).astype(dt) for x in xs]
            hs = [rng.uniform(0.1, 1.0, x.shape).astype(dt) for x in xs]
            r, tt = np.array(0.05, dt), np.array(t, np.int64)
            specs = [("Adam", xs + gs + vs + hs, 3, dict(alpha=0.8, beta=0.95, epsilon=1e-4, norm_coefficient=0.01,
                                                         norm_coefficient_post=0.02)),
                     ("Adagrad", xs + gs + hs, 2, dict(decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.02)),
                     ("Momentum", xs + gs + vs, 2, dict(alpha=0.7, beta=0.3, norm_coefficient=0.01, mode="standard")),
                     ("Momentum", xs + gs + vs, 2, dict(alpha=0.7, beta=0.3, norm_coefficient=0.01, mode="nesterov"))]
            for op, tensors, n_out, attrs in specs:
                names = [f"t{i}" for i in range(len(tensors))]
                outs = [f"o{i}" for i in range(n_out * n)]
                node = helper.make_node(op, ["R", "T"] + names, outs, domain=PREVIEW, **attrs)
                ins = [("R", r), ("T", tt)] + list(zip(names, tensors))
                m = model([node], ins, outs, domains=[PREVIEW])
                want = ReferenceEvaluator(m).run(None, dict(ins))
                want = [np.asarray(w).astype(dt) for w in want]
                label = f"{op.lower()}_{attrs.get('mode', '')}_{np.dtype(dt).name}_t{t}"
                got, _ = run(label, m, ins)
                expect_close(label, got, want, rtol=1e-5 if dt == np.float32 else 1e-12, atol=1e-6)
    x = np.ones((2,), np.float32)
    ins = [("R", np.array(0.1, np.float32)), ("T", np.array(0, np.int64)), ("X", x), ("G", x), ("V", x)]
    node = helper.make_node("Momentum", ["R", "T", "X", "G", "V"], ["Xn", "Vn"], domain=PREVIEW, alpha=0.9,
                            beta=0.1, norm_coefficient=0.0, mode="heavy")
    expect_error("momentum_bad_mode", model([node], ins, ["Xn", "Vn"], domains=[PREVIEW]), ins,
                 ["Momentum", "mode is \"heavy\""])
    node = helper.make_node("Momentum", ["R", "T", "X", "G", "V"], ["Xn", "Vn"], domain=PREVIEW, alpha=0.9,
                            mode="standard", norm_coefficient=0.0)
    expect_error("momentum_no_beta", model([node], ins, ["Xn", "Vn"], domains=[PREVIEW]), ins,
                 ["attribute beta is required"])
    ins2 = ins[:4] + [("V", np.ones((3,), np.float32))]
    node = helper.make_node("Momentum", ["R", "T", "X", "G", "V"], ["Xn", "Vn"], domain=PREVIEW, alpha=0.9,
                            beta=0.1, norm_coefficient=0.0, mode="standard")
    expect_error("momentum_bad_shape", model([node], ins2, ["Xn", "Vn"], domains=[PREVIEW]), ins2,
                 ["V_1 is float32[3]; expected float32[2] like X_1"])
    node = helper.make_node("Adam", ["R", "T", "X", "G", "V"], ["Xn", "Vn"], domain=PREVIEW)
    expect_error("adam_arity", model([node], ins, ["Xn", "Vn"], domains=[PREVIEW]), ins,
                 ["Adam", "5 inputs, expected at least 6"])


# ---- TfIdfVectorizer ---------------------------------------------------------------------------
def tfidf_cases():
    pool = [2, 3, 5, 4,  5, 6, 7, 8, 6, 7,  5, 6, 7, 2, 3, 5]
    x = np.array([[1, 1, 3, 3, 3, 7, 2, 3, 5, 6], [8, 8, 7, 6, 5, 6, 7, 2, 3, 5]], np.int64)
    perm = [3, 0, 8, 1, 6, 2, 7, 4, 5]
    weights = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 2.5, 1.25]
    for mode, lo, hi, skip, w, dtype in [("TF", 1, 3, 2, None, np.int64), ("IDF", 1, 3, 1, weights, np.int32),
                                         ("TFIDF", 2, 3, 3, weights, np.int64), ("TFIDF", 1, 1, 0, None, np.int32),
                                         ("IDF", 3, 3, 0, None, np.int64)]:
        attrs = dict(mode=mode, min_gram_length=lo, max_gram_length=hi, max_skip_count=skip,
                     ngram_counts=[0, 4, 10], ngram_indexes=perm, pool_int64s=pool)
        if w:
            attrs["weights"] = w
        for rows in (x, x[0]):
            ins = [("X", rows.astype(dtype))]
            m = model([helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **attrs)], ins, ["Y"], opset=9)
            # onnx.reference fails on IDF/TFIDF without weights: it gets the default, all ones.
            ref = m if w or mode == "TF" else model([helper.make_node(
                "TfIdfVectorizer", ["X"], ["Y"], weights=[1.0] * len(perm), **attrs)], ins, ["Y"], opset=9)
            want = ReferenceEvaluator(ref).run(None, dict(ins))
            label = f"tfidf_{mode.lower()}_{lo}{hi}_skip{skip}_rank{rows.ndim}_{np.dtype(dtype).name}"
            got, _ = run(label, m, ins)
            expect_close(label, got, want)
    ins = [("X", x)]
    bad = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0, ngram_counts=[0, 3],
               ngram_indexes=[0, 1, 2, 3], pool_int64s=[1, 2, 3, 4, 5, 6])
    expect_error("tfidf_bad_counts", model([helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **bad)], ins, ["Y"],
                                           opset=9), ins, ["TfIdfVectorizer", "not a multiple of 2"])
    bad = dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0, ngram_counts=[0],
               ngram_indexes=[0, 1], pool_strings=["a", "b"])
    expect_error("tfidf_strings", model([helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **bad)], ins, ["Y"],
                                        opset=9), ins, ["TfIdfVectorizer", "X must be a string tensor"])


# ---- ai.onnx.ml: Binarizer, ArrayFeatureExtractor ---------------------------------------------
ML = "ai.onnx.ml"


def ml_model(nodes, inputs, outputs, version=1):
    m = model(nodes, inputs, outputs, domains=(ML,))
    m.opset_import[1].version = version
    return m


def ml_cases():
    x = rng.standard_normal((3, 5)).astype(np.float32)
    x[0, 0] = np.nan
    for dtype, thr in ((np.float32, 0.25), (np.float64, -0.5), (np.int32, 2.0), (np.int64, -1.5)):
        xs = x if dtype in (np.float32, np.float64) else rng.integers(-5, 6, (4, 3))
        ins = [("X", xs.astype(dtype))]
        m = ml_model([helper.make_node("Binarizer", ["X"], ["Y"], domain=ML, threshold=thr)], ins, ["Y"])
        label = f"binarizer_{np.dtype(dtype).name}"
        got, _ = run(label, m, ins)
        expect_close(label, got, ReferenceEvaluator(m).run(None, dict(ins)), rtol=0, atol=0)
    data = rng.standard_normal((2, 3, 6)).astype(np.float32)
    for label, xs, idx in (("afe_rank3", data, np.array([5, 0, 0, 2], np.int64)),
                           ("afe_rank1", data[0, 0], np.array([1, 4], np.int64)),
                           ("afe_rank2_idx2d", data[0], np.array([[3, 1], [0, 5]], np.int64)),
                           ("afe_int64", rng.integers(-9, 9, (3, 4)).astype(np.int64), np.array([3], np.int64))):
        ins = [("X", xs), ("Y", idx)]
        m = ml_model([helper.make_node("ArrayFeatureExtractor", ["X", "Y"], ["Z"], domain=ML)], ins, ["Z"])
        got, _ = run(label, m, ins)
        expect_close(label, got, ReferenceEvaluator(m).run(None, dict(ins)), rtol=0, atol=0)
    ins = [("X", data), ("Y", np.array([6], np.int64))]
    expect_error("afe_out_of_range", ml_model([helper.make_node("ArrayFeatureExtractor", ["X", "Y"], ["Z"],
                                                                domain=ML)], ins, ["Z"]), ins,
                 ["ArrayFeatureExtractor", "outside [0, 6)"])


# ---- TreeEnsemble, LabelEncoder (ai.onnx.ml) ---------------------------------------------------
def te_node(modes=(0, 1, 2, 3), weights_dtype=np.float32, agg=1, post=0, missing=None, n_targets=3, **over):
    """Three trees over 3 features: 0 -> (1, 2) -> leaves 0..3; 3 -> (leaf 4, 4), 4 a MEMBER node on
    feature 0 -> leaves 5, 6; 5 a one-leaf tree (leaf 5)."""
    a = dict(nodes_featureids=[0, 1, 2, 2, 0, 1], nodes_truenodeids=[1, 0, 2, 4, 5, 5],
             nodes_falsenodeids=[2, 1, 3, 4, 6, 5], nodes_trueleafs=[0, 1, 1, 1, 1, 1],
             nodes_falseleafs=[0, 1, 1, 0, 1, 1], tree_roots=[0, 3, 5],
             leaf_targetids=[0, 1, 2, 0, 1, 2, 0], n_targets=n_targets, aggregate_function=agg,
             post_transform=post)
    a["nodes_modes"] = helper.make_tensor("nodes_modes", TensorProto.UINT8, [6],
                                          [modes[0], modes[1], modes[2], modes[3], 6, 0])
    a["nodes_splits"] = numpy_helper.from_array(np.array([0.1, 1.0, -0.5, 2.0, 0.0, 0.0], weights_dtype),
                                                "nodes_splits")
    w = rng.uniform(0.05, 0.3, 7) if post == 4 else rng.uniform(-3, 3, 7)
    a["leaf_weights"] = numpy_helper.from_array(w.astype(weights_dtype), "leaf_weights")
    a["membership_values"] = numpy_helper.from_array(np.array([1.0, 2.0, 3.5, np.nan], np.float32),
                                                     "membership_values")
    if missing is not None:
        a["nodes_missing_value_tracks_true"] = missing
    a.update(over)
    return helper.make_node("TreeEnsemble", ["X"], ["Y"], domain=ML, **a)


def te_x(dtype):
    x = rng.standard_normal((12, 3))
    x[:4] = [[1.0, 1.0, -0.5], [2.0, 1.0, 2.0], [3.5, 0.3, -0.5], [0.1, 2.0, 2.0]]
    x[4, 0] = x[5, 1] = x[6, 2] = x[7, 2] = np.nan
    return x.astype(dtype)


def tree_ensemble_cases():
    from onnx.reference.ops.aionnxml import _common_classifier as cc
    posts = {1: cc.softmax, 2: cc.logistic, 3: cc.softmax_zero, 4: cc.probit}
    cases = [("te_leq_lt_gte_gt", dict(modes=(0, 1, 2, 3))),
             ("te_eq_neq_lt_leq", dict(modes=(4, 5, 1, 0))),
             ("te_gt_gte_eq_neq_double", dict(modes=(3, 2, 4, 5), weights_dtype=np.float64, xdtype=np.float64)),
             ("te_missing_true", dict(modes=(0, 2, 4, 1), missing=[1, 0, 1, 1, 1, 0])),
             ("te_double_weights_float_x", dict(weights_dtype=np.float64)),
             ("te_average", dict(agg=0)), ("te_min", dict(agg=2, modes=(1, 3, 0, 5))),
             ("te_max", dict(agg=3, missing=[0, 1, 0, 1, 0, 0])),
             ("te_average_double", dict(agg=0, xdtype=np.float64, weights_dtype=np.float64)),
             ("te_softmax", dict(post=1)), ("te_logistic", dict(post=2)), ("te_softmax_zero", dict(post=3)),
             ("te_probit", dict(post=4, agg=0)), ("te_softmax_double", dict(post=1, xdtype=np.float64))]
    for label, kw in cases:
        xdtype = kw.pop("xdtype", np.float32)
        ins = [("X", te_x(xdtype))]
        node = te_node(**kw)
        m = ml_model([node], ins, ["Y"], version=5)
        got, _ = run(label, m, ins)
        post = kw.get("post", 0)
        plain = helper.make_node("TreeEnsemble", ["X"], ["Y"], domain=ML,
                                 **{a.name: helper.get_attribute_value(a) for a in node.attribute
                                    if a.name != "post_transform"})
        want = ReferenceEvaluator(ml_model([plain], ins, ["Y"], version=5)).run(None, dict(ins))[0]
        if post:
            want = posts[post](want.astype(np.float64)).astype(xdtype)
        expect_close(label, got, [want], rtol=1e-6 if xdtype == np.float64 else 1e-5, atol=1e-6)
    ins = [("X", te_x(np.float32))]
    bad = [("te_bad_mode", dict(modes=(0, 1, 7, 0)), ["TreeEnsemble", "nodes_modes[2] = 7"]),
           ("te_bad_aggregate", dict(agg=5), ["TreeEnsemble", "aggregate_function 5"]),
           ("te_bad_post", dict(post=9), ["TreeEnsemble", "post_transform 9"]),
           ("te_bad_target", dict(n_targets=2), ["TreeEnsemble", "leaf_targetids[2] = 2", "n_targets = 2"]),
           ("te_bad_membership", dict(membership_values=numpy_helper.from_array(
               np.array([1.0, np.nan, 2.0, np.nan], np.float32), "membership_values")),
            ["TreeEnsemble", "membership_values holds 2"]),
           ("te_bad_feature", dict(nodes_featureids=[0, 1, 3, 2, 0, 1]), ["TreeEnsemble", "outside X's 3 features"]),
           ("te_bad_branch", dict(nodes_truenodeids=[1, 0, 9, 4, 5, 5]), ["TreeEnsemble", "node 2's branches"]),
           ("te_bad_lengths", dict(nodes_falseleafs=[0, 1, 1]), ["TreeEnsemble", "nodes_falseleafs' has 3"]),
           ("te_cycle", dict(nodes_trueleafs=[0, 0, 1, 1, 1, 1]), ["TreeEnsemble", "tree 0 (root 0) has a cycle"])]
    for label, kw, words in bad:
        expect_error(label, ml_model([te_node(**kw)], ins, ["Y"], version=5), ins, words)


def label_encoder_cases():
    t = numpy_helper.from_array
    ints = rng.integers(-3, 8, (4, 5)).astype(np.int64)
    floats = rng.choice(np.array([0.5, -1.25, 2.0, 7.0, 3.0], np.float32), (3, 4))
    cases = [("le2_int_float", 2, ints, dict(keys_int64s=[1, 5, -2, 3, 5],
                                             values_floats=[0.5, 1.5, -2.0, 9.0, 7.0], default_float=4.25)),
             ("le2_float_int", 2, floats, dict(keys_floats=[0.5, 2.0, 7.0], values_int64s=[10, 20, 30])),
             ("le2_int_int", 2, ints, dict(keys_int64s=[0, 1, 2], values_int64s=[5, 6, 7], default_int64=-9)),
             ("le4_int32_double", 4, ints.astype(np.int32),
              dict(keys_tensor=t(np.array([1, 2, 3, 4], np.int32), "k"),
                   values_tensor=t(np.array([0.1, 0.2, 0.3, 0.4]), "v"), default_tensor=t(np.array([-1.5]), "d"))),
             ("le4_double_int16", 4, floats.astype(np.float64),
              dict(keys_tensor=t(np.array([0.5, -1.25, 3.0]), "k"),
                   values_tensor=t(np.array([1, 2, 3], np.int16), "v"),
                   default_tensor=t(np.array([7], np.int16), "d"))),
             ("le4_float_lists", 4, floats, dict(keys_floats=[2.0, 3.0], values_floats=[-2.0, -3.0]))]
    for label, ver, xs, attrs in cases:
        ins = [("X", xs)]
        m = ml_model([helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, **attrs)], ins, ["Y"], version=ver)
        got, _ = run(label, m, ins)
        expect_close(label, got, ReferenceEvaluator(m).run(None, dict(ins)), rtol=0, atol=0)
    # A NaN key matches any NaN (the schema; the reference's dict lookup misses it).
    xs = np.array([np.nan, 1.0, -np.nan, 5.0], np.float32)
    m = ml_model([helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, keys_floats=[1.0, float("nan")],
                                   values_int64s=[3, 4], default_int64=0)], [("X", xs)], ["Y"], version=2)
    got, _ = run("le_nan_key", m, [("X", xs)])
    expect_close("le_nan_key", got, [np.array([4, 3, 4, 0], np.int64)], rtol=0, atol=0)
    # Version 4 without default_tensor: -1 for integer values, -0.0 for float ones (the schema; the
    # reference needs default_tensor).
    xs = np.array([1, 2, 3], np.int64)
    for label, vals, want in (("le4_no_default_int", np.array([7, 8], np.int32), np.array([7, 8, -1], np.int32)),
                              ("le4_no_default_float", np.array([0.5, 1.5]), np.array([0.5, 1.5, -0.0]))):
        m = ml_model([helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, keys_int64s=[1, 2],
                                       values_tensor=t(vals, "v"))], [("X", xs)], ["Y"], version=4)
        got, _ = run(label, m, [("X", xs)])
        expect_close(label, got, [want], rtol=0, atol=0)
        check(label, got is None or np.signbit(got[0][2]) == np.signbit(want[2]), "default's sign")
    ins = [("X", ints)]
    # string keys and values: tests/strings_check.py
    bad = [("le_string_keys", 2, dict(keys_strings=["a"], values_int64s=[1]),
            ["LabelEncoder", "X is int64 but the keys are string"]),
           ("le_lengths", 2, dict(keys_int64s=[1, 2], values_int64s=[1]), ["LabelEncoder", "2 keys but 1 values"]),
           ("le_two_keys", 2, dict(keys_int64s=[1], keys_floats=[1.0], values_int64s=[1]),
            ["LabelEncoder", "more than one keys_*"]),
           ("le_key_type", 2, dict(keys_floats=[1.0], values_int64s=[1]),
            ["LabelEncoder", "X is int64 but the keys are float"]),
           ("le_default_type", 4, dict(keys_int64s=[1], values_tensor=t(np.array([1.0]), "v"),
                                       default_tensor=t(np.array([1], np.int64), "d")),
            ["LabelEncoder", "'default_tensor' must hold one float64"])]
    for label, ver, attrs, words in bad:
        node = helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, **attrs)
        expect_error(label, ml_model([node], ins, ["Y"], version=ver), ins, words)


# ---- Bernoulli, RandomUniformLike --------------------------------------------------------------
def random_cases():
    n = 40000
    p = np.full((200, 200), 0.3, np.float32)
    p[:5] = 0.0
    p[5:10] = 1.0
    nodes = [helper.make_node("Bernoulli", ["P"], ["y1"], seed=3.0),
             helper.make_node("Bernoulli", ["P"], ["y2"], seed=3.0),
             helper.make_node("Bernoulli", ["P"], ["y3"], seed=4.0),
             helper.make_node("Bernoulli", ["P"], ["y4"], dtype=TensorProto.INT64),
             helper.make_node("Bernoulli", ["P"], ["y5"], dtype=TensorProto.BOOL)]
    got, _ = run("bernoulli", model(nodes, [("P", p)], ["y1", "y2", "y3", "y4", "y5"], opset=22), [("P", p)])
    if got:
        y1, y2, y3, y4, y5 = got
        check("bernoulli", y1.dtype == np.float32 and y1.shape == p.shape, f"y1 is {y1.dtype}{y1.shape}")
        check("bernoulli", y4.dtype == np.int64 and y5.dtype == np.bool_, f"dtypes {y4.dtype}, {y5.dtype}")
        check("bernoulli", set(np.unique(y1)) <= {0.0, 1.0}, "values other than 0 and 1")
        check("bernoulli", np.array_equal(y1, y2), "the same seed gave different draws")
        check("bernoulli", not np.array_equal(y1, y3), "different seeds gave the same draws")
        check("bernoulli", (y1[:5] == 0).all() and (y1[5:10] == 1).all(), "p = 0 or p = 1 not respected")
        for y in (y1, y3, y4.astype(np.float32), y5.astype(np.float32)):
            mean, sd = float(y[10:].mean()), np.sqrt(0.3 * 0.7 / y[10:].size)
            check("bernoulli", abs(mean - 0.3) < 5 * sd, f"mean {mean:.4f}, expected 0.3 +- {5 * sd:.4f}")
    # A second run of the same seeded model gives the same draws.
    got2, _ = run("bernoulli_again", model(nodes, [("P", p)], ["y1", "y2", "y3", "y4", "y5"], opset=22), [("P", p)])
    if got and got2:
        check("bernoulli_again", np.array_equal(got[0], got2[0]), "a seeded draw changed between runs")
    expect_error("bernoulli_bad_p", model([helper.make_node("Bernoulli", ["P"], ["y"])], [("P", p + 1)], ["y"],
                                          opset=22), [("P", p + 1)], ["Bernoulli", "outside [0, 1]"])

    like = np.zeros((n,), np.int32)
    nodes = [helper.make_node("RandomUniformLike", ["L"], ["u1"], low=-2.0, high=5.0, seed=1.0,
                              dtype=TensorProto.FLOAT),
             helper.make_node("RandomUniformLike", ["L"], ["u2"], low=-2.0, high=5.0, seed=1.0,
                              dtype=TensorProto.FLOAT),
             helper.make_node("RandomUniformLike", ["L"], ["u3"], dtype=TensorProto.DOUBLE),
             helper.make_node("RandomUniformLike", ["L"], ["u4"], dtype=TensorProto.DOUBLE),
             helper.make_node("RandomUniformLike", ["L"], ["u5"], low=0.0, high=1.0, dtype=TensorProto.FLOAT16)]
    got, _ = run("uniform_like", model(nodes, [("L", like)], ["u1", "u2", "u3", "u4", "u5"], opset=22),
                 [("L", like)])
    if got:
        u1, u2, u3, u4, u5 = got
        check("uniform_like", u1.dtype == np.float32 and u1.shape == (n,), f"u1 is {u1.dtype}{u1.shape}")
        # dtype float16 is widened to float32 at load (onnx/half.c), as every half type is.
        check("uniform_like", u3.dtype == np.float64 and u5.dtype == np.float32, f"dtypes {u3.dtype}, {u5.dtype}")
        check("uniform_like", np.array_equal(u1, u2), "the same seed gave different values")
        check("uniform_like", not np.array_equal(u3, u4), "two unseeded nodes drew the same values")
        for u, lo, hi in ((u1, -2.0, 5.0), (u3, 0.0, 1.0), (u4, 0.0, 1.0), (u5, 0.0, 1.0)):
            u = u.astype(np.float64)
            check("uniform_like", u.min() >= lo and u.max() < hi, f"values {u.min()}..{u.max()} outside [{lo}, {hi})")
            mean_sd = (hi - lo) / np.sqrt(12 * n)
            check("uniform_like", abs(u.mean() - (lo + hi) / 2) < 5 * mean_sd + 1e-3 * (u is u5),
                  f"mean {u.mean():.4f}, expected {(lo + hi) / 2}")
            check("uniform_like", abs(u.var() / ((hi - lo) ** 2 / 12) - 1) < 0.05, f"variance {u.var():.4f}")
            hist = np.histogram(u, bins=10, range=(lo, hi))[0]
            check("uniform_like", hist.min() > n / 10 * 0.9, f"uneven histogram {hist.tolist()}")
    bad = helper.make_node("RandomUniformLike", ["L"], ["u"])
    expect_error("uniform_like_int_no_dtype", model([bad], [("L", like)], ["u"], opset=22), [("L", like)],
                 ["RandomUniformLike", "no dtype is given"])
    bad = helper.make_node("RandomUniformLike", ["L"], ["u"], low=3.0, high=1.0, dtype=TensorProto.FLOAT)
    expect_error("uniform_like_low_high", model([bad], [("L", like)], ["u"], opset=22), [("L", like)],
                 ["low 3 is above high 1"])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    scan8_case()
    sequence_map_case()
    optimizer_cases()
    tfidf_cases()
    random_cases()
    ml_cases()
    tree_ensemble_cases()
    label_encoder_cases()
    for f in failures:
        print("FAIL", f)
    print(f"rare ops: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
