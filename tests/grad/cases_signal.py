"""Gradient checks of the signal and window-inverse operators: LpPool
(ops/lp_pool.c: p 1..4, pads, strides, dilations, ceil_mode, auto_pad, 1-3
spatial axes, at each opset), MaxUnpool (ops/max_unpool.c: indices of a
real max pooling, repeated indices where the last writer wins, output_shape)
and Col2Im (ops/col2im.c: strides, pads, dilations, 1-3 spatial axes), in
float and double."""
import numpy as np

from gradutil import away_from, case_adder, rand, single_op

F64 = np.float64
I64 = np.int64

CASES = []


case = case_adder(CASES)


# ---- LpPool: inputs kept off 0, where |x|^p has its kink (p = 1) -------------
def lp_x(*shape, dtype=np.float32):
    return away_from(rand(*shape, dtype=dtype), [0.0], gap=0.1)


for v in (1, 2, 11, 18, 22):
    case(f"lppool_2d_p2_v{v}", single_op("LpPool", [("x", lp_x(2, 2, 4, 5))], opset=v,
                                         attrs={"kernel_shape": [2, 2], "p": 2.0 if v == 1 else 2}))
for p in (1, 3, 4):
    case(f"lppool_2d_p{p}_pads_strides",
         single_op("LpPool", [("x", lp_x(1, 2, 5, 6))], opset=22,
                   attrs={"kernel_shape": [3, 2], "p": p, "pads": [1, 0, 1, 1], "strides": [2, 1]}))
case("lppool_1d_dil_ceil", single_op("LpPool", [("x", lp_x(2, 3, 9))], opset=18,
                                     attrs={"kernel_shape": [2], "p": 2, "dilations": [2], "strides": [2],
                                            "ceil_mode": 1}))
case("lppool_2d_same_lower", single_op("LpPool", [("x", lp_x(1, 1, 5, 5))], opset=11,
                                       attrs={"kernel_shape": [2, 3], "p": 3, "auto_pad": "SAME_LOWER"}))
case("lppool_3d_f64", single_op("LpPool", [("x", lp_x(1, 2, 3, 4, 3, dtype=F64))], opset=22,
                                attrs={"kernel_shape": [2, 2, 2], "p": 3}))


# ---- MaxUnpool: indices from a 2x2 / stride 2 max pooling, or chosen to repeat -
def pool_indices(n, c, h, w, k=2, s=2, seed=0):
    """Flat indices of one tap per k x k window of an [n, c, H, W] tensor."""
    rng = np.random.default_rng(seed)
    H, W = (h - 1) * s + k, (w - 1) * s + k
    ind = np.zeros((n, c, h, w), dtype=I64)
    for a in range(n):
        for b in range(c):
            for i in range(h):
                for j in range(w):
                    y, x = i * s + rng.integers(k), j * s + rng.integers(k)
                    ind[a, b, i, j] = ((a * c + b) * H + y) * W + x
    return ind


for v in (9, 11, 22):
    case(f"maxunpool_2d_v{v}", single_op("MaxUnpool", [("x", rand(2, 2, 2, 3)), ("i", pool_indices(2, 2, 2, 3))],
                                         opset=v, attrs={"kernel_shape": [2, 2], "strides": [2, 2]}))
case("maxunpool_output_shape_f64",
     single_op("MaxUnpool", [("x", rand(1, 2, 2, 2, dtype=F64)), ("i", pool_indices(1, 2, 2, 2, seed=3)),
                             ("shape", np.array([1, 2, 5, 6], dtype=I64))],
               opset=22, attrs={"kernel_shape": [2, 2], "strides": [2, 2]}))
# overlapping windows (kernel 3, stride 1) can pick the same place twice
case("maxunpool_repeated", single_op("MaxUnpool", [("x", rand(1, 1, 1, 4)),
                                                   ("i", np.array([[[[1, 1, 2, 1]]]], dtype=I64))],
                                     opset=22, attrs={"kernel_shape": [1, 3], "strides": [1, 1]}))
case("maxunpool_1d_pads", single_op("MaxUnpool", [("x", rand(2, 1, 3)),
                                                  ("i", np.array([[[0, 2, 4]], [[5, 7, 9]]], dtype=I64))],
                                    opset=22, attrs={"kernel_shape": [2], "strides": [2], "pads": [0, 1]}))

# ---- Col2Im -----------------------------------------------------------------------
case("col2im_2d", single_op("Col2Im", [("x", rand(1, 6, 8)), ("img", np.array([4, 5], dtype=I64)),
                                       ("blk", np.array([3, 2], dtype=I64))], opset=18))
case("col2im_2d_strides_pads_dil",
     single_op("Col2Im", [("x", rand(2, 8, 6)), ("img", np.array([5, 4], dtype=I64)),
                          ("blk", np.array([2, 2], dtype=I64))], opset=18,
               attrs={"strides": [2, 1], "pads": [1, 0, 0, 1], "dilations": [2, 2]}))
case("col2im_1d_f64", single_op("Col2Im", [("x", rand(1, 3, 4, dtype=F64)), ("img", np.array([6], dtype=I64)),
                                           ("blk", np.array([3], dtype=I64))], opset=18,
                                attrs={"strides": [1]}))
case("col2im_3d", single_op("Col2Im", [("x", rand(1, 8, 12)), ("img", np.array([3, 3, 4], dtype=I64)),
                                       ("blk", np.array([2, 2, 2], dtype=I64))], opset=18))

# ---- DFT and STFT (ops/signal.c): linear in the signal, STFT bilinear with the window
def dft(name, x, opset=20, n=None, axis=None, **attrs):
    ins = [("x", x), ("n", None if n is None else np.array(n, dtype=I64))]
    if axis is not None:
        ins.append(("axis", np.array(axis, dtype=I64)))
    if opset < 20 and axis is not None:
        ins.pop()
        attrs["axis"] = axis
    case(name, single_op("DFT", ins, opset=opset, attrs=attrs))


dft("dft_real_v17", rand(2, 6, 1), opset=17, axis=1)
dft("dft_complex_v20", rand(2, 5, 3, 2), axis=1)
dft("dft_onesided_pad", rand(3, 5, 1), n=8, axis=-2, onesided=1)
dft("dft_truncate_inverse", rand(2, 7, 2, dtype=F64), n=5, inverse=1)
dft("dft_irfft", rand(1, 4, 3, 2), axis=1, inverse=1, onesided=1)
dft("dft_irfft_odd_f64", rand(2, 4, 2, dtype=F64), n=7, inverse=1, onesided=1)
case("stft_window", single_op("STFT", [("x", rand(2, 20, 1)), ("step", np.array(3, dtype=I64)),
                                        ("w", rand(6))], opset=17))
case("stft_complex_no_window", single_op("STFT", [("x", rand(1, 12, 2, dtype=F64)), ("step", np.array(4, dtype=I64)),
                                                  ("w", None), ("len", np.array(5, dtype=I64))],
                                         opset=17, attrs={"onesided": 0}))
