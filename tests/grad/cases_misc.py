"""Gradient checks of the operators of issue 18's long tail: the one-input
math of ops/unary_trig.c (inputs inside each function's domain, away from
the thresholds of ThresholdedRelu and Shrink), in float and double, at the
opsets where each was (re)defined."""
import numpy as np

from gradutil import away_from, case_adder, rand, single_op

F64 = np.float64
I64 = np.int64

CASES = []


case = case_adder(CASES)


# ---- one-input math (ops/unary_trig.c) ----------------------------------------
# name, input range, opsets
UNARY = [
    ("Tan", (-1.2, 1.2), (7, 22)),
    ("Asin", (-0.9, 0.9), (7, 22)),
    ("Acos", (-0.9, 0.9), (7, 22)),
    ("Atan", (-3.0, 3.0), (7, 22)),
    ("Sinh", (-2.0, 2.0), (9, 22)),
    ("Cosh", (-2.0, 2.0), (9, 22)),
    ("Asinh", (-3.0, 3.0), (9, 22)),
    ("Acosh", (1.2, 4.0), (9, 22)),
    ("Atanh", (-0.9, 0.9), (9, 22)),
    ("Softsign", (-3.0, 3.0), (1, 22)),
]
for op, (lo, hi), opsets in UNARY:
    for v in opsets:
        case(f"{op.lower()}_v{v}", single_op(op, [("x", rand(3, 4, low=lo, high=hi))], opset=v))
    case(f"{op.lower()}_f64", single_op(op, [("x", rand(2, 3, 2, low=lo, high=hi, dtype=F64))], opset=22))

for alpha in (None, 0.3, -0.4):
    attrs = {} if alpha is None else {"alpha": alpha}
    at = 1.0 if alpha is None else alpha
    for v in (10, 22):
        case(f"thresholdedrelu_a{alpha}_v{v}",
             single_op("ThresholdedRelu", [("x", away_from(rand(4, 5, low=-2, high=2), [at]))],
                       opset=v, attrs=attrs))
case("thresholdedrelu_f64", single_op("ThresholdedRelu",
                                      [("x", away_from(rand(3, 4, low=-2, high=2, dtype=F64), [1.0]))],
                                      opset=22))

for lambd, bias in ((None, None), (1.0, 0.0), (0.3, 0.7), (0.0, -0.5)):
    attrs = {k: v for k, v in (("lambd", lambd), ("bias", bias)) if v is not None}
    l = 0.5 if lambd is None else lambd
    case(f"shrink_l{lambd}_b{bias}",
         single_op("Shrink", [("x", away_from(rand(4, 5, low=-2, high=2), [-l, l]))], opset=9, attrs=attrs))
case("shrink_f64", single_op("Shrink", [("x", away_from(rand(3, 4, low=-2, high=2, dtype=F64), [-0.5, 0.5]))],
                             opset=9))

# ---- Mean (ops/mean_max.c): 1..3 inputs, broadcasting both ways ----------------
case("mean_one", single_op("Mean", [("a", rand(2, 3))], opset=13))
case("mean_two_v6", single_op("Mean", [("a", rand(2, 3)), ("b", rand(2, 3))], opset=6))
case("mean_three_bcast", single_op("Mean", [("a", rand(2, 3, 4)), ("b", rand(3, 1)), ("c", rand(4))], opset=8))
case("mean_bcast_both", single_op("Mean", [("a", rand(2, 1, 4)), ("b", rand(3, 1))], opset=13))
case("mean_f64", single_op("Mean", [("a", rand(2, 3, dtype=F64)), ("b", rand(3, dtype=F64))], opset=13))


# ---- GlobalMaxPool: ties are unlikely with random inputs, and no element is
# within finite-difference reach of its window's maximum but the maximum
def distinct(*shape, dtype=np.float32):
    """A random permutation of well-separated values."""
    n = int(np.prod(shape))
    return (np.random.default_rng(n).permutation(n).reshape(shape) * 0.1 - 0.05 * n).astype(dtype)


for v in (1, 22):
    case(f"globalmaxpool_2d_v{v}", single_op("GlobalMaxPool", [("x", distinct(2, 3, 4, 5))], opset=v))
case("globalmaxpool_1d", single_op("GlobalMaxPool", [("x", distinct(2, 3, 6))], opset=22))
case("globalmaxpool_3d", single_op("GlobalMaxPool", [("x", distinct(1, 2, 3, 2, 4))], opset=22))
case("globalmaxpool_f64", single_op("GlobalMaxPool", [("x", distinct(2, 2, 3, 3, dtype=F64))], opset=22))

# ---- DepthToSpace, SpaceToDepth (ops/depth_space.c): both modes ----------------
for v, mode in ((1, None), (11, "DCR"), (13, "CRD"), (28, "DCR"), (28, "CRD")):
    attrs = {"blocksize": 2, **({"mode": mode} if mode else {})}
    case(f"depthtospace_v{v}_{mode}", single_op("DepthToSpace", [("x", rand(2, 8, 2, 3))], opset=v, attrs=attrs))
for v, mode in ((1, None), (13, None), (28, "DCR"), (28, "CRD")):
    attrs = {"blocksize": 2, **({"mode": mode} if mode else {})}
    case(f"spacetodepth_v{v}_{mode}", single_op("SpaceToDepth", [("x", rand(2, 3, 4, 6))], opset=v, attrs=attrs))
case("depthtospace_b3_f64", single_op("DepthToSpace", [("x", rand(1, 18, 2, 2, dtype=F64))], opset=13,
                                      attrs={"blocksize": 3, "mode": "CRD"}))

# ---- LpNormalization, CumProd (ops/along_axis.c) --------------------------------
for v in (1, 22):
    for pn in (1, 2):
        for axis in (-1, 0, 1):
            x = rand(3, 4, 2, low=0.2, high=1.5) * np.where(rand(3, 4, 2) > 0, 1, -1).astype(np.float32)
            case(f"lpnorm_v{v}_p{pn}_ax{axis}", single_op("LpNormalization", [("x", x)], opset=v,
                                                         attrs={"p": pn, "axis": axis}))
case("lpnorm_f64", single_op("LpNormalization", [("x", rand(2, 5, low=0.3, high=1.0, dtype=F64))], opset=22))


def with_zero(x):
    """x with one exact zero, whose gradient the division-free formula must get right."""
    x = x.copy()
    x.flat[1] = 0
    return x


for excl in (0, 1):
    for rev in (0, 1):
        for axis in (0, 1, -1):
            case(f"cumprod_e{excl}_r{rev}_ax{axis}",
                 single_op("CumProd", [("x", with_zero(rand(3, 4, low=0.5, high=1.5))),
                                       ("axis", np.array(axis, np.int64))],
                           opset=26, attrs={"exclusive": excl, "reverse": rev}))
case("cumprod_f64_i32axis", single_op("CumProd", [("x", rand(2, 3, 4, low=-1.5, high=1.5, dtype=F64)),
                                                  ("axis", np.array(2, np.int32))], opset=26))

# ---- Compress, ReverseSequence (ops/select_axis.c) -------------------------------
B = np.bool_
for v, axis in ((9, 0), (11, -1), (28, 1), (11, None)):
    cond = np.array([1, 0, 1], B) if axis is not None else np.array([0, 1, 1, 0, 1, 0, 0, 1], B)
    case(f"compress_v{v}_ax{axis}", single_op("Compress", [("x", rand(3, 4)), ("c", cond)], opset=v,
                                              attrs={} if axis is None else {"axis": axis}))
case("compress_short_cond", single_op("Compress", [("x", rand(2, 5, 2)), ("c", np.array([0, 1, 1], B))],
                                      opset=11, attrs={"axis": 1}))
case("compress_f64", single_op("Compress", [("x", rand(4, 2, dtype=F64)), ("c", np.array([1, 1, 0, 1], B))],
                               opset=11, attrs={"axis": 0}))
for v, (b, t, shape, lens) in ((10, (1, 0, (4, 3, 2), [4, 1, 2])), (28, (0, 1, (3, 4), [0, 3, 4]))):
    case(f"reversesequence_v{v}_b{b}", single_op("ReverseSequence",
                                                 [("x", rand(*shape)), ("lens", np.array(lens, I64))],
                                                 opset=v, attrs={"batch_axis": b, "time_axis": t}))

# ---- LRN, MeanVarianceNormalization (ops/local_norm.c) ----------------------------
for v in (1, 13):
    for size in (1, 2, 3, 5):
        case(f"lrn_v{v}_size{size}", single_op("LRN", [("x", rand(2, 6, 3, 2))], opset=v,
                                              attrs={"size": size, "alpha": 0.5, "beta": 0.75, "bias": 1.5}))
case("lrn_default_3d_f64", single_op("LRN", [("x", rand(2, 4, 5, dtype=F64))], opset=13, attrs={"size": 3}))
for v in (9, 13):
    case(f"mvn_default_v{v}", single_op("MeanVarianceNormalization", [("x", rand(3, 2, 3, 2))], opset=v))
case("mvn_axis1", single_op("MeanVarianceNormalization", [("x", rand(3, 4, 2))], opset=13, attrs={"axes": [1]}))
case("mvn_all_neg", single_op("MeanVarianceNormalization", [("x", rand(2, 3, 4))], opset=13,
                              attrs={"axes": [0, -2, -1]}))
case("mvn_f64", single_op("MeanVarianceNormalization", [("x", rand(2, 3, 2, 2, dtype=F64))], opset=13,
                          attrs={"axes": [2, 3]}))

# ---- Det (ops/det.c): invertible and singular matrices, batches ------------------
for v in (11, 22):
    case(f"det_3x3_v{v}", single_op("Det", [("x", rand(3, 3))], opset=v))
case("det_batch", single_op("Det", [("x", rand(2, 3, 4, 4))], opset=22))
case("det_1x1", single_op("Det", [("x", rand(5, 1, 1))], opset=22))
case("det_singular_f64", single_op("Det", [("x", np.array([[[1, 2, 3], [2, 4, 6], [0.5, -1, 2]]], F64))],
                                   opset=22))
case("det_f64", single_op("Det", [("x", rand(2, 5, 5, dtype=F64))], opset=22))

# ---- Upsample (ops/upsample.c): Resize-10's gradient ------------------------------
for v, mode in ((7, "nearest"), (7, "linear"), (9, "linear"), (10, "nearest")):
    x = rand(1, 2, 3, 2)
    sc = [1.0, 1.0, 2.0, 1.5]
    if v == 7:
        model = single_op("Upsample", [("x", x)], opset=v, attrs={"mode": mode, "scales": sc})
    else:
        model = single_op("Upsample", [("x", x), ("scales", np.array(sc, np.float32))], opset=v,
                          attrs={"mode": mode})
    CASES.append({"name": f"upsample_v{v}_{mode}", "model": model, "no_grad": ["scales"]})

# ---- AffineGrid (ops/affine_grid.c): 2-D and 3-D, both corner modes -------------
for ac in (0, 1):
    case(f"affinegrid_2d_ac{ac}", single_op("AffineGrid", [("theta", rand(2, 2, 3)),
                                                            ("size", np.array([2, 3, 4, 5], I64))],
                                            opset=20, attrs={"align_corners": ac}))
    case(f"affinegrid_3d_ac{ac}", single_op("AffineGrid", [("theta", rand(1, 3, 4, dtype=F64)),
                                                            ("size", np.array([1, 2, 3, 2, 4], I64))],
                                            opset=20, attrs={"align_corners": ac}))

# ---- GridSample (ops/grid_sample.c): dX and dgrid. Grid points are kept off the
# integer sample positions (where linear weights have kinks) and inside or
# well outside the input so that finite differences stay on one piece.
def grid_points(*shape, dtype=np.float32):
    g = rand(*shape, low=-1.1, high=1.1, dtype=dtype)
    return g


for v, mode in ((16, "bilinear"), (20, "linear"), (22, "cubic"), (16, "bicubic")):
    for pad in ("zeros", "border", "reflection"):
        for ac in (0, 1):
            case(f"gridsample_v{v}_{mode}_{pad}_ac{ac}",
                 single_op("GridSample", [("x", rand(1, 2, 4, 5)), ("grid", grid_points(1, 3, 2, 2))], opset=v,
                           attrs={"mode": mode, "padding_mode": pad, "align_corners": ac}),
                 args=["--eps", "1e-3"])
CASES.append({"name": "gridsample_nearest_dx", "no_grad": ["grid"],
              "model": single_op("GridSample", [("x", rand(2, 1, 3, 4)), ("grid", grid_points(2, 2, 3, 2))],
                                 opset=20, attrs={"mode": "nearest"})})
case("gridsample_3d_linear_f64", single_op("GridSample", [("x", rand(1, 2, 3, 3, 4, dtype=F64)),
                                                         ("grid", grid_points(1, 2, 2, 2, 3, dtype=F64))],
                                           opset=20, attrs={"mode": "linear", "padding_mode": "border"}))
case("gridsample_1d_cubic_f64", single_op("GridSample", [("x", rand(2, 2, 6, dtype=F64)),
                                                        ("grid", grid_points(2, 4, 1, dtype=F64))],
                                          opset=20, attrs={"mode": "cubic", "padding_mode": "reflection"}))
