"""Gradient checks of the vision operators: CenterCropPad (ops/center_crop_pad.c),
TensorScatter (ops/tensor_scatter.c), RoiAlign avg (ops/roi_align.c, X only) and
DeformConv (ops/deform_conv.c: X, W, offset, mask, B). Sample positions of
RoiAlign and DeformConv are kept off the integer grid, where bilinear weights
have kinks, so that finite differences stay on one piece."""
import numpy as np

from gradutil import away_from, case_adder, rand, single_op

F64 = np.float64
I64 = np.int64

CASES = []
# RoiAlign's boxes move the sample grid in steps: not differentiated
NO_GRAD = ["rois"]


case = case_adder(CASES)


# ---- CenterCropPad: crop and pad on different axes, odd differences -------------
for dtype, tag in ((np.float32, "f32"), (F64, "f64")):
    case(f"centercroppad_all_{tag}", single_op("CenterCropPad", [("x", rand(3, 6, 4, dtype=dtype)),
                                                                ("shape", np.array([4, 3, 7], I64))],
                                              opset=18))
case("centercroppad_axes", single_op("CenterCropPad", [("x", rand(2, 5, 4, 3)), ("shape", np.array([2, 6], I64))],
                                     opset=18, attrs={"axes": [-1, 1]}))

# ---- TensorScatter: linear with write indices, circular wrapping ----------------
case("tensorscatter_linear", single_op("TensorScatter", [("past", rand(2, 3, 5, 4)), ("update", rand(2, 3, 2, 4)),
                                                         ("wi", np.array([1, 3], I64))], opset=24))
case("tensorscatter_default", single_op("TensorScatter", [("past", rand(2, 6, 3, dtype=F64)),
                                                          ("update", rand(2, 2, 3, dtype=F64))],
                                        opset=24, attrs={"axis": 1}))
case("tensorscatter_circular", single_op("TensorScatter", [("past", rand(2, 4, 3)), ("update", rand(2, 3, 3)),
                                                           ("wi", np.array([2, 5], I64))],
                                         opset=24, attrs={"mode": "circular", "axis": 1}))

# ---- RoiAlign avg: dX ----------------------------------------------------------------
ROIS = np.array([[0.3, 0.45, 4.35, 3.2], [1.15, 0.7, 3.55, 4.6], [0.1, 0.2, 2.3, 1.4]], np.float32)
BI = np.array([0, 1, 1], I64)
for v, attrs in ((10, {"sampling_ratio": 2}), (16, {"sampling_ratio": 2}),
                 (16, {"coordinate_transformation_mode": "output_half_pixel", "spatial_scale": 0.9}),
                 (22, {"sampling_ratio": 0, "output_height": 3, "output_width": 2})):
    tag = "_".join(f"{k[:4]}{w}" for k, w in attrs.items())
    case(f"roialign_v{v}_{tag}", single_op("RoiAlign", [("x", rand(2, 2, 5, 6)), ("rois", ROIS), ("bi", BI)],
                                           opset=v, attrs=dict({"output_height": 2, "output_width": 2}, **attrs)))
case("roialign_f64", single_op("RoiAlign", [("x", rand(2, 3, 4, 5, dtype=F64)), ("rois", ROIS.astype(F64)),
                                            ("bi", BI)], opset=22, attrs={"output_height": 2, "output_width": 3}))


# ---- DeformConv: every input ---------------------------------------------------------
def offsets(*shape, dtype=np.float32):
    return away_from(rand(*shape, low=-1.6, high=1.6, dtype=dtype), [-2, -1, 0, 1, 2], gap=0.12)


case("deformconv_basic", single_op("DeformConv", [("x", rand(1, 2, 4, 4)), ("w", rand(3, 2, 2, 2)),
                                                  ("offset", offsets(1, 8, 3, 3))],
                                   opset=19, attrs={"kernel_shape": [2, 2]}), args=["--eps", "1e-3"])
case("deformconv_mask_bias_pads", single_op("DeformConv", [("x", rand(2, 2, 4, 5)), ("w", rand(2, 2, 3, 2)),
                                                           ("offset", offsets(2, 12, 4, 2)), ("b", rand(2)),
                                                           ("mask", rand(2, 6, 4, 2, low=0.2, high=1.0))],
                                            opset=22, attrs={"pads": [1, 0, 1, 0], "strides": [1, 2]}),
     args=["--eps", "1e-3"])
case("deformconv_groups_f64", single_op("DeformConv", [("x", rand(1, 4, 5, 5, dtype=F64)),
                                                       ("w", rand(4, 2, 2, 2, dtype=F64)),
                                                       ("offset", offsets(1, 16, 2, 2, dtype=F64)),
                                                       ("b", rand(4, dtype=F64)),
                                                       ("mask", rand(1, 8, 2, 2, low=0.2, high=1.0, dtype=F64))],
                                        opset=22, attrs={"group": 2, "offset_group": 2, "dilations": [2, 2],
                                                         "pads": [1, 1, 0, 0], "strides": [2, 2]}))
