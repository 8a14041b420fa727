#!/usr/bin/env python3
"""STRING tensors beyond the ONNX node tests: models built with the onnx
helper and run by the dtrexec command.

- a text pipeline (StringNormalizer -> LabelEncoder -> float ops) whose
  strings feed numeric computation, against numpy;
- string initializers (StringConcat with a suffix, Equal against a table,
  LabelEncoder version 1 both ways) and string outputs written as .pb;
- StringSplit and RegexFullMatch against Python's str.split and re;
- TfIdfVectorizer over string tokens against the same over integer ids;
- budgeted runs with --verify-remat (string values evicted and recomputed
  must come back bit for bit) equal to the unbudgeted run;
- training and --save of a model that holds a string initializer: the
  strings survive the save, and gradients never flow through strings;
- bad input: an invalid or unsupported pattern, wrong types, a string input
  not given: exit 1 and a message naming the node or input;
- --device cuda (host kernels through the bridge) when a GPU is present.

Usage: strings_check.py DTREXEC"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

S = TensorProto.STRING
failed = 0


def check(name, ok, detail=""):
    global failed
    print(("PASS" if ok else "FAIL") + f" {name}" + (f": {detail}" if detail and not ok else ""))
    failed += not ok


def model(nodes, inputs, outputs, inits=(), opset=20, ml=None):
    g = helper.make_graph(nodes, "strings", inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset)]
    if ml:
        ops.append(helper.make_opsetid("ai.onnx.ml", ml))
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 10
    return m


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def strings(arr, name=""):
    return numpy_helper.from_array(np.array(arr, dtype=object), name)


class Runner:
    def __init__(self, dtrexec, tmp):
        self.dtrexec, self.tmp, self.n = dtrexec, tmp, 0

    def run(self, m, inputs, extra=()):
        """Runs m with the given {name: ndarray} inputs; returns (rc, stderr, [outputs])."""
        self.n += 1
        d = os.path.join(self.tmp, f"case{self.n}")
        os.makedirs(d)
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        args = [self.dtrexec, path, "--quiet", "--output-dir", os.path.join(d, "out")]
        for k, (name, value) in enumerate(inputs.items()):
            f = os.path.join(d, f"in{k}.pb")
            with open(f, "wb") as fh:
                fh.write(numpy_helper.from_array(np.asarray(value), name).SerializeToString())
            args += ["--input", f"{name}={f}"]
        r = subprocess.run(args + list(extra), capture_output=True, text=True, timeout=120)
        outs = []
        for i in range(len(m.graph.output)):
            f = os.path.join(d, "out", f"output_{i}.pb")
            if r.returncode == 0 and os.path.exists(f):
                t = TensorProto()
                with open(f, "rb") as fh:
                    t.ParseFromString(fh.read())
                outs.append(numpy_helper.to_array(t))
        return r.returncode, r.stderr, outs


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object:
        return [x.decode() if isinstance(x, bytes) else x for x in a.ravel()] == \
               [x.decode() if isinstance(x, bytes) else x for x in b.ravel()]
    return np.allclose(a, b, rtol=1e-6, atol=1e-6)


def pipeline(r):
    """Words -> lower case, stopwords dropped -> class ids -> embedding-like
    float arithmetic."""
    words = ["The", "Cat", "sat", "ON", "the", "Mat", "zebra"]
    vocab = ["cat", "sat", "on", "mat"]
    nodes = [
        helper.make_node("StringNormalizer", ["text"], ["norm"], case_change_action="LOWER",
                         stopwords=["the"]),
        helper.make_node("LabelEncoder", ["norm"], ["ids"], domain="ai.onnx.ml", keys_strings=vocab,
                         values_floats=[1.0, 2.0, 3.0, 4.0], default_float=-1.0),
        helper.make_node("Mul", ["ids", "scale"], ["scaled"]),
        helper.make_node("ReduceSum", ["scaled"], ["total"], keepdims=0),
    ]
    m = model(nodes, [vi("text", S, [1, len(words)])],
              [vi("norm", S, None), vi("scaled", TensorProto.FLOAT, None), vi("total", TensorProto.FLOAT, None)],
              [numpy_helper.from_array(np.array(0.5, np.float32), "scale")], ml=4)
    x = np.array([words], dtype=object)
    norm = [w.lower() for w in words if w.lower() != "the"]
    ids = np.array([[vocab.index(w) + 1.0 if w in vocab else -1.0 for w in norm]], np.float32)
    want = [np.array([norm], dtype=object), ids * 0.5, np.array((ids * 0.5).sum(), np.float32)]
    rc, err, outs = r.run(m, {"text": x})
    check("pipeline: StringNormalizer -> LabelEncoder -> Mul -> ReduceSum", rc == 0 and len(outs) == 3 and
          all(same(a, b) for a, b in zip(outs, want)), f"exit {rc} {err.strip()} {outs}")
    return m, x, outs


def initializers(r):
    table = ["apple", "banana", "cherry"]
    nodes = [
        helper.make_node("StringConcat", ["x", "suffix"], ["joined"]),
        helper.make_node("Equal", ["x", "table"], ["hit"]),
        helper.make_node("LabelEncoder", ["x"], ["idx"], domain="ai.onnx.ml", classes_strings=table),
        helper.make_node("LabelEncoder", ["k"], ["name"], domain="ai.onnx.ml", classes_strings=table,
                         default_string="none"),
        helper.make_node("Identity", ["joined"], ["copy"]),
        helper.make_node("Reshape", ["joined", "shape"], ["col"]),
    ]
    m = model(nodes, [vi("x", S, [3]), vi("k", TensorProto.INT64, [4])],
              [vi(n, t, None) for n, t in [("joined", S), ("hit", TensorProto.BOOL), ("idx", TensorProto.INT64),
                                            ("name", S), ("copy", S), ("col", S)]],
              [strings(["-s"], "suffix"), strings(table, "table"),
               numpy_helper.from_array(np.array([3, 1], np.int64), "shape")], ml=1)
    x = np.array(["banana", "apple", "cherry"], dtype=object)
    k = np.array([2, 0, 7, -1], np.int64)
    joined = np.array([s + "-s" for s in x], dtype=object)
    want = [joined, x == np.array(table, dtype=object), np.array([1, 0, 2], np.int64),
            np.array(["cherry", "apple", "none", "none"], dtype=object), joined, joined.reshape(3, 1)]
    rc, err, outs = r.run(m, {"x": x, "k": k})
    check("string initializers, LabelEncoder-1 both ways, Identity/Reshape of strings, .pb outputs",
          rc == 0 and len(outs) == len(want) and all(same(a, b) for a, b in zip(outs, want)),
          f"exit {rc} {err.strip()} {outs}")


def split_and_regex(r):
    texts = ["  a b\tc  ", "one,two,,three", "", "x", "d\u00e9j\u00e0 vu", "a  b  c d"]
    for delim, maxsplit in [(None, None), (",", None), (" ", None), (",", 1), (None, 1), (None, 2)]:
        attrs = {}
        if delim is not None:
            attrs["delimiter"] = delim
        if maxsplit is not None:
            attrs["maxsplit"] = maxsplit
        m = model([helper.make_node("StringSplit", ["x"], ["y", "z"], **attrs)], [vi("x", S, [len(texts)])],
                  [vi("y", S, None), vi("z", TensorProto.INT64, None)])
        parts = [t.split(delim, -1 if maxsplit is None else maxsplit) for t in texts]
        width = max(len(p) for p in parts)
        want_y = np.array([p + [""] * (width - len(p)) for p in parts], dtype=object)
        want_z = np.array([len(p) for p in parts], np.int64)
        rc, err, outs = r.run(m, {"x": np.array(texts, dtype=object)})
        check(f"StringSplit delimiter={delim!r} maxsplit={maxsplit} against str.split",
              rc == 0 and len(outs) == 2 and same(outs[0], want_y) and same(outs[1], want_z),
              f"exit {rc} {err.strip()} {outs}")
    words = ["abc123", "ABC", "a-b.c", "user@gmail.com", "x y", "", "tab\there", "[x]", "a^b", "q-z", "a\nb"]
    for pattern in [r"[a-z]+\d+", r"\w+", r"[\w.\-]+", r"(?:[a-z]+)@(gmail|yahoo)\.com", r"\S+\s\S+",
                    r"a*", r"\D+", r"[^a-z]*", r"[]x[]+", r"[a^]+\^?b?", r"[q\-z]+", r"tab\there", r".{3,5}",
                    r"a.b", r"a\sb"]:
        m = model([helper.make_node("RegexFullMatch", ["x"], ["y"], pattern=pattern)], [vi("x", S, [len(words)])],
                  [vi("y", TensorProto.BOOL, None)])
        want = np.array([re.fullmatch(pattern, w) is not None for w in words])
        rc, err, outs = r.run(m, {"x": np.array(words, dtype=object)})
        check(f"RegexFullMatch {pattern!r} against re.fullmatch", rc == 0 and outs and same(outs[0], want),
              f"exit {rc} {err.strip()} {outs} want {want}")
    m = model([helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER")], [vi("x", S, [4])],
              [vi("y", S, None)])
    x = ["stra\u00dfe", "\u00e9t\u00e9 \u00e0", "\u03b1\u03b2\u03b3 \u043f\u0440\u0438", "mixed Case 1"]
    want = ["STRAßE", "ÉTÉ À", "ΑΒΓ ПРИ", "MIXED CASE 1"]
    rc, err, outs = r.run(m, {"x": np.array(x, dtype=object)})
    check("StringNormalizer UPPER on UTF-8 (Latin-1, Greek, Cyrillic; ß kept)",
          rc == 0 and outs and same(outs[0], np.array(want, dtype=object)), f"exit {rc} {err.strip()} {outs}")


def tfidf(r):
    """TfIdfVectorizer over string tokens equals the same model over the
    tokens' integer ids (whose path the node tests check)."""
    vocab = ["the", "cat", "sat", "mat", "on"]
    ids = {w: i + 10 for i, w in enumerate(vocab)}
    rows = [["the", "cat", "sat", "on", "the", "mat"], ["a", "cat", "on", "mat", "the", "cat"]]
    pool = ["cat", "mat", "the", "the", "cat", "cat", "sat", "on", "the"]     # 3 1-grams, then 3 2-grams
    for mode in ["TF", "IDF", "TFIDF"]:
        attrs = dict(mode=mode, min_gram_length=1, max_gram_length=2, max_skip_count=1, ngram_counts=[0, 3],
                     ngram_indexes=[0, 1, 2, 3, 4, 5], weights=[1.0, 0.5, 2.0, 1.5, 0.25, 3.0])
        ms = model([helper.make_node("TfIdfVectorizer", ["x"], ["y"], pool_strings=pool, **attrs)],
                   [vi("x", S, [2, 6])], [vi("y", TensorProto.FLOAT, None)], opset=9)
        mi = model([helper.make_node("TfIdfVectorizer", ["x"], ["y"], pool_int64s=[ids[w] for w in pool], **attrs)],
                   [vi("x", TensorProto.INT64, [2, 6])], [vi("y", TensorProto.FLOAT, None)], opset=9)
        rc1, err1, a = r.run(ms, {"x": np.array(rows, dtype=object)})
        rc2, err2, b = r.run(mi, {"x": np.array([[ids.get(w, -5) for w in row] for row in rows], np.int64)})
        check(f"TfIdfVectorizer {mode} over strings equals it over their ids",
              rc1 == 0 and rc2 == 0 and a and b and same(a[0], b[0]) and np.asarray(a[0]).any(),
              f"exit {rc1}/{rc2} {err1.strip()} {err2.strip()} {a} {b}")


def budgeted(r):
    """A chain of string ops over a long vector: under a tight budget DTR
    evicts string values and recomputes them (--verify-remat checks the
    handles bit for bit); the outputs equal the unbudgeted run's."""
    n = 2000
    nodes, prev = [], "x"
    for i in range(8):
        nodes.append(helper.make_node("StringConcat", [prev, f"s{i % 2}"], [f"c{i}"]))
        prev = f"c{i}"
    nodes.append(helper.make_node("Equal", ["c7", "c3"], ["eq"]))
    nodes.append(helper.make_node("RegexFullMatch", ["c7"], ["m"], pattern=r"w\d+(ab)+"))
    nodes.append(helper.make_node("StringConcat", ["c7", "c1"], ["out"]))
    m = model(nodes, [vi("x", S, [n])], [vi("out", S, None), vi("eq", TensorProto.BOOL, None),
                                           vi("m", TensorProto.BOOL, None)],
              [strings("a", "s0"), strings("b", "s1")])
    x = np.array([f"w{i}" for i in range(n)], dtype=object)
    rc0, err0, base = r.run(m, {"x": x})
    want = np.array([f"w{i}" + "ab" * 4 + f"w{i}ab" for i in range(n)], dtype=object)
    check("string chain unbudgeted", rc0 == 0 and base and same(base[0], want), f"exit {rc0} {err0.strip()}")
    stats = os.path.join(r.tmp, "stats.json")
    rc, err, outs = r.run(m, {"x": x}, ["--budget", str(5 * 16 * n), "--verify-remat", "--stats", stats])
    import json
    st = json.load(open(stats)) if rc == 0 else {}
    check("string chain at a budget of 5 string tensors: evicts, recomputes, same outputs",
          rc == 0 and len(outs) == 3 and all(same(a, b) for a, b in zip(outs, base)) and st.get("evictions", 0) > 0 and
          st.get("remats", 0) > 0,
          f"exit {rc} {err.strip()} stats {st}")


def training(r, tmp):
    """A float model that also holds a string initializer: it trains (the
    strings are never parameters) and --save keeps the strings."""
    vocab = ["lo", "mid", "hi"]
    nodes = [
        helper.make_node("LabelEncoder", ["words"], ["ids"], domain="ai.onnx.ml", keys_tensor=strings(vocab),
                         values_tensor=numpy_helper.from_array(np.array([0.1, 0.5, 0.9], np.float32))),
        helper.make_node("Unsqueeze", ["ids", "axes"], ["col"]),
        helper.make_node("MatMul", ["col", "W"], ["y"]),
    ]
    m = model(nodes, [vi("x", TensorProto.FLOAT, [3, 1])], [vi("y", TensorProto.FLOAT, [3, 4])],
              [strings(["hi", "lo", "mid"], "words"), numpy_helper.from_array(np.array([1], np.int64), "axes"),
               numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4) * 0.25, "W")], ml=4)
    saved = os.path.join(tmp, "trained.onnx")
    rc, err, _ = r.run(m, {}, ["--train", "--steps", "2", "--save", saved])
    ok = rc == 0 and os.path.exists(saved)
    if ok:
        t = onnx.load(saved)
        inits = {i.name: numpy_helper.to_array(i) for i in t.graph.initializer}
        ok = "words" in inits and same(inits["words"], np.array(["hi", "lo", "mid"], dtype=object)) and \
            not np.allclose(inits["W"], np.arange(4).reshape(1, 4) * 0.25)
    check("training a model with a string initializer; --save keeps the strings and trains W", ok,
          f"exit {rc} {err.strip()}")
    path = os.path.join(tmp, "untrained.onnx")
    onnx.save(m, path)
    p = subprocess.run([r.dtrexec, "params", path, "--trainable", "*"], capture_output=True, text=True)
    row = [line.split() for line in p.stdout.splitlines() if line.startswith("words ")]
    check("a string initializer is never trained (dtrexec params, even with --trainable '*')",
          p.returncode == 0 and row and row[0][1:2] == ["string"] and "frozen" in row[0], p.stdout + p.stderr)


def no_gradient_through_strings(r):
    """W -> Mul -> LabelEncoder (float to string) -> LabelEncoder (string to
    float): no gradient crosses the strings, and training says so."""
    nodes = [
        helper.make_node("Mul", ["x", "W"], ["xw"]),
        helper.make_node("LabelEncoder", ["xw"], ["s"], domain="ai.onnx.ml", keys_floats=[0.0, 1.0],
                         values_strings=["zero", "one"]),
        helper.make_node("LabelEncoder", ["s"], ["y"], domain="ai.onnx.ml", keys_strings=["zero", "one"],
                         values_floats=[0.0, 1.0]),
    ]
    m = model(nodes, [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])],
              [numpy_helper.from_array(np.ones(4, np.float32), "W")], ml=4)
    x = np.array([0, 1, 1, 0], np.float32)
    rc, err, _ = r.run(m, {"x": x}, ["--train", "--steps", "1"])
    check("training through strings: refused, no gradient path", rc == 1 and "no gradient path" in err,
          f"exit {rc} {err.strip()}")
    rc, err, _ = r.run(m, {"x": x}, ["--train", "--steps", "1", "--trainable", "W"])
    check("--trainable through strings: a warning that no gradient reaches it",
          rc == 0 and "no gradient reaches it" in err, f"exit {rc} {err.strip()}")


BAD = [
    ("invalid pattern", [helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="(ab")], "RegexFullMatch_0",
     "invalid pattern '(ab'"),
    ("lazy quantifier", [helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="a+?")], "RegexFullMatch_0",
     "lazy quantifiers"),
    ("flag group", [helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="(?i)abc")], "RegexFullMatch_0",
     "not supported"),
    ("case action", [helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="TITLE")],
     "StringNormalizer_0", "case_change_action 'TITLE'"),
    ("split maxsplit", [helper.make_node("StringSplit", ["x"], ["y", "z"], maxsplit=-2)], "StringSplit_0",
     "maxsplit is -2"),
]


def bad_inputs(r):
    x = np.array(["a", "b"], dtype=object)
    for name, nodes, node, want in BAD:
        outs = [vi(o, TensorProto.UNDEFINED, None) for o in nodes[0].output]
        rc, err, _ = r.run(model(nodes, [vi("x", S, [2])], outs), {"x": x})
        check(f"bad input: {name}", rc == 1 and f"'{node}'" in err and want in err, f"exit {rc} {err.strip()}")
    f = np.zeros(2, np.float32)
    for op in ["StringConcat", "StringSplit", "RegexFullMatch", "StringNormalizer"]:
        n_in = 2 if op == "StringConcat" else 1
        attrs = {"pattern": "a"} if op == "RegexFullMatch" else {}
        nodes = [helper.make_node(op, ["x", "x"][:n_in], ["y"], **attrs)]
        rc, err, _ = r.run(model(nodes, [vi("x", TensorProto.FLOAT, [2])], [vi("y", TensorProto.UNDEFINED, None)]),
                           {"x": f})
        check(f"bad input: {op} on float32", rc == 1 and f"'{op}_0'" in err and "string tensor" in err,
              f"exit {rc} {err.strip()}")
    nodes = [helper.make_node("Equal", ["x", "f"], ["y"])]
    rc, err, _ = r.run(model(nodes, [vi("x", S, [2]), vi("f", TensorProto.FLOAT, [2])],
                             [vi("y", TensorProto.BOOL, None)]), {"x": x, "f": f})
    check("bad input: Equal string vs float", rc == 1 and "'Equal_0'" in err and "must match" in err,
          f"exit {rc} {err.strip()}")
    nodes = [helper.make_node("StringConcat", ["x", "x"], ["y"])]
    rc, err, _ = r.run(model(nodes, [vi("x", S, [2])], [vi("y", S, None)]), {})
    check("a string input not given: refused, naming it", rc == 1 and "'x'" in err and "string" in err,
          f"exit {rc} {err.strip()}")


def cuda(r, base_model, x, base):
    probe = subprocess.run([r.dtrexec, "check", "--device", "cuda", "--quiet"], capture_output=True, text=True)
    if probe.returncode != 0 and "not available" in probe.stderr + probe.stdout:
        print("SKIP --device cuda: no CUDA device")
        return
    rc, err, outs = r.run(base_model, {"text": x}, ["--device", "cuda"])
    check("--device cuda: the pipeline through the host bridge gives the CPU's outputs",
          rc == 0 and len(outs) == len(base) and all(same(a, b) for a, b in zip(outs, base)),
          f"exit {rc} {err.strip()}")


def main():
    dtrexec = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        r = Runner(dtrexec, tmp)
        m, x, base = pipeline(r)
        initializers(r)
        split_and_regex(r)
        tfidf(r)
        budgeted(r)
        training(r, tmp)
        no_gradient_through_strings(r)
        bad_inputs(r)
        cuda(r, m, x, base)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
