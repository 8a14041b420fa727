#!/usr/bin/env python3
"""Forward checks of the index, selection and einsum operators against numpy
beyond what the ONNX node tests cover: Einsum on the transformer patterns,
ellipsis broadcasting, diagonals, three operands and implicit outputs;
TopK ties and smallest-k; GatherND with batch_dims; ScatterND and
ScatterElements with duplicate indices under every reduction; CumSum with
exclusive+reverse; Trilu with large offsets; the extra reductions over
several axis sets. Each case is written as a node-test folder (model.onnx,
test_data_set_0) and run with `dtrexec check`.

Usage: index_ops_check.py DTREXEC"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
CASES = []


def case(name, op, inputs, outputs, opset=18, **attrs):
    """inputs: list of (name, array); outputs: list of (name, expected array)."""
    CASES.append((name, op, inputs, outputs, opset, attrs))


def r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ---- Einsum ------------------------------------------------------------------
for eq, shapes in [
    ("bhid,bhjd->bhij", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("bhij,bhjd->bhid", [(2, 3, 5, 6), (2, 3, 6, 4)]),
    ("bij,bjk->bik", [(3, 2, 4), (3, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 2)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ii", [(4, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ijk->", [(2, 3, 4)]),
    ("ij,ij->i", [(3, 4), (1, 4)]),
    ("bid,d->bi", [(2, 3, 4), (4,)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
]:
    ins = [r(*s) for s in shapes]
    name = "einsum_" + "".join(ch if ch.isalnum() else "_" for ch in eq)
    case(name, "Einsum", [(f"x{i}", x) for i, x in enumerate(ins)],
         [("y", np.einsum(eq, *ins).astype(np.float32))], opset=12, equation=eq)
ins = [r(2, 3, 4, dtype=np.float64), r(2, 4, 5, dtype=np.float64)]
case("einsum_f64_bmm", "Einsum", [("a", ins[0]), ("b", ins[1])], [("y", np.einsum("bij,bjk->bik", *ins))],
     opset=12, equation="bij,bjk->bik")
ia, ib = rng.integers(-5, 5, (3, 4)).astype(np.int64), rng.integers(-5, 5, (4, 2)).astype(np.int64)
case("einsum_int64", "Einsum", [("a", ia), ("b", ib)], [("y", ia @ ib)], opset=12, equation="ij,jk->ik")

# ---- TopK --------------------------------------------------------------------
x = np.array([[3, 1, 3, 2, 3], [0, 0, 1, 1, 0]], dtype=np.float32)
case("topk_ties_largest", "TopK", [("x", x), ("k", np.array([3], np.int64))],
     [("v", np.array([[3, 3, 3], [1, 1, 0]], np.float32)), ("i", np.array([[0, 2, 4], [2, 3, 0]], np.int64))],
     opset=11)
case("topk_ties_smallest_axis0", "TopK", [("x", x), ("k", np.array([1], np.int64))],
     [("v", np.array([[0, 0, 1, 1, 0]], np.float32)), ("i", np.array([[1, 1, 1, 1, 1]], np.int64))],
     opset=11, axis=0, largest=0)
case("topk_v1_attr", "TopK", [("x", x)],
     [("v", np.array([[3, 3], [1, 1]], np.float32)), ("i", np.array([[0, 2], [2, 3]], np.int64))],
     opset=9, k=2)
x3 = r(3, 7, 2)
idx3 = np.argsort(-x3, axis=1, kind="stable")[:, :4, :]
case("topk_middle_axis", "TopK", [("x", x3), ("k", np.array([4], np.int64))],
     [("v", np.take_along_axis(x3, idx3, 1)), ("i", idx3.astype(np.int64))], opset=11, axis=1)

# ---- ArgMax / ArgMin ------------------------------------------------------------
xa = np.array([[1, 5, 5, 2], [7, 7, 0, 7]], dtype=np.int32)
case("argmax_last_ties", "ArgMax", [("x", xa)], [("y", np.array([[2], [3]], np.int64))],
     opset=13, axis=1, select_last_index=1)
case("argmin_first_axis0", "ArgMin", [("x", xa)], [("y", np.array([0, 0, 1, 0], np.int64))],
     opset=13, axis=0, keepdims=0)

# ---- GatherND / ScatterND / ScatterElements -------------------------------------------
d = r(2, 3, 4, 5)
gi = rng.integers(-3, 3, (2, 6, 2)).astype(np.int64)
gi[..., 1] = rng.integers(-4, 4, (2, 6))
exp = np.stack([d[b][tuple(np.moveaxis(gi[b], -1, 0))] for b in range(2)])
case("gathernd_batch1_tuple2", "GatherND", [("d", d), ("i", gi)], [("y", exp)], opset=13, batch_dims=1)
d2 = r(4, 3)
si = np.array([[1], [3], [1], [0]], np.int64)
up = r(4, 3)
for red in ["none", "add", "mul", "max", "min"]:
    out = d2.copy()
    for j in range(4):
        p = si[j, 0]
        out[p] = {"none": lambda a, b: b, "add": np.add, "mul": np.multiply,
                  "max": np.maximum, "min": np.minimum}[red](out[p], up[j])
    case(f"scatternd_dup_{red}", "ScatterND", [("d", d2), ("i", si), ("u", up)], [("y", out)],
         opset=18, reduction=red)
    ei = np.array([[0, 2, 2], [1, 1, 0]], np.int64)
    eu = r(2, 3)
    out = d2.copy()
    for a in range(2):
        for b in range(3):
            out[ei[a, b], b] = {"none": lambda p, q: q, "add": np.add, "mul": np.multiply,
                                "max": np.maximum, "min": np.minimum}[red](out[ei[a, b], b], eu[a, b])
    case(f"scatter_elements_dup_{red}", "ScatterElements", [("d", d2), ("i", ei), ("u", eu)], [("y", out)],
         opset=18, axis=0, reduction=red)

# ---- CumSum, Trilu -----------------------------------------------------------------------
xc = r(3, 4, 2)
rev = np.flip(np.cumsum(np.flip(xc, 1), 1), 1)
case("cumsum_exclusive_reverse", "CumSum", [("x", xc), ("a", np.array(1, np.int64))],
     [("y", (rev - xc).astype(np.float32))], opset=14, exclusive=1, reverse=1)
xi = rng.integers(-9, 9, (5, 3)).astype(np.int32)
case("cumsum_int32_axis_neg", "CumSum", [("x", xi), ("a", np.array(-2, np.int32))],
     [("y", np.cumsum(xi, 0).astype(np.int32))], opset=14)
xt = r(2, 4, 6)
for k in [-5, -1, 2, 9]:
    case(f"trilu_upper_k{k}".replace("-", "m"), "Trilu", [("x", xt), ("k", np.array(k, np.int64))],
         [("y", np.triu(xt, k))], opset=14)
    case(f"trilu_lower_k{k}".replace("-", "m"), "Trilu", [("x", xt), ("k", np.array(k, np.int64))],
         [("y", np.tril(xt, k))], opset=14, upper=0)

# ---- the extra reductions --------------------------------------------------------------------
xr = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
for name, fn in [("prod", np.prod), ("l1", lambda a, **k: np.sum(np.abs(a), **k)),
                 ("l2", lambda a, **k: np.sqrt(np.sum(a * a, **k))),
                 ("sum_square", lambda a, **k: np.sum(a * a, **k)),
                 ("log_sum", lambda a, **k: np.log(np.sum(a, **k))),
                 ("log_sum_exp", lambda a, **k: np.log(np.sum(np.exp(a), **k)))]:
    op = "Reduce" + "".join(p.capitalize() for p in name.split("_"))
    for axes in [(0, 2), (1,), (-1,)]:
        case(f"reduce_{name}_axes{''.join(str(a) for a in axes)}".replace("-", "m"), op,
             [("x", xr), ("a", np.array(axes, np.int64))],
             [("y", fn(xr, axis=axes, keepdims=True).astype(np.float32))], opset=18)
    case(f"reduce_{name}_v13_attr_nokeep", op, [("x", xr)],
         [("y", fn(xr, axis=(1,), keepdims=False).astype(np.float32))], opset=13, axes=[1], keepdims=0)
big = rng.uniform(80, 90, (2, 3)).astype(np.float32)
case("reduce_log_sum_exp_large", "ReduceLogSumExp", [("x", big), ("a", np.array([1], np.int64))],
     [("y", (np.log(np.sum(np.exp(big.astype(np.float64) - 90), 1, keepdims=True)) + 90).astype(np.float32))],
     opset=18)
xi = rng.integers(-4, 5, (3, 4)).astype(np.int64)
case("reduce_prod_int64", "ReduceProd", [("x", xi), ("a", np.array([1], np.int64))],
     [("y", np.prod(xi, 1, keepdims=True))], opset=18)

# ---- OneHot --------------------------------------------------------------------------------
oi = np.array([[0, -1, 7], [2, 3, -4]], np.int64)
ov = np.array([-2, 5], np.float32)
exp = np.full((2, 4, 3), -2, np.float32)
for a in range(2):
    for b in range(3):
        v = oi[a, b] + (4 if oi[a, b] < 0 else 0)
        if 0 <= v < 4:
            exp[a, v, b] = 5
case("onehot_axis1_negative_out_of_range", "OneHot", [("i", oi), ("d", np.array(4, np.int64)), ("v", ov)],
     [("y", exp)], opset=11, axis=1)


def write(root, name, op, inputs, outputs, opset, attrs):
    d = os.path.join(root, "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], **attrs)
    vi = lambda n, a: helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
    g = helper.make_graph([node], name, [vi(n, a) for n, a in inputs], [vi(n, a) for n, a in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for k, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())
    for k, (n, a) in enumerate(outputs):
        with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())
    return d


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = tempfile.mkdtemp(prefix="index-ops-")
    dirs = [write(root, *c) for c in CASES]
    res = subprocess.run([sys.argv[1], "check"] + dirs, capture_output=True, text=True, timeout=600)
    print(res.stdout + res.stderr)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
