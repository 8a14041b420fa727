"""Gradient cases for SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss
(ops/loss.c): every reduction, class weights, ignore_index, [N, C] and
N-d inputs, the log_prob output of SCE, float32 and float64. Only the
scores / log-probability input is differentiable (labels are indices,
weights are constants: gradcheck skips them)."""
import numpy as np

from gradutil import rand, single_op

N, C = 3, 4


def labels(*shape, ignore=None):
    t = np.random.default_rng(sum(shape) * 31 + len(shape)).integers(0, C, size=shape).astype(np.int64)
    if ignore is not None:   # at least two ignored positions, not all
        t.flat[0] = ignore
        t.flat[t.size // 2] = ignore
    return t


def loss_case(name, op, reduction, extra=(), weight=False, ignore=None, log_prob_out=False,
              dtype=np.float32):
    x = rand(N, C, *extra, dtype=dtype)
    inputs = [("scores", x), ("target", labels(N, *extra, ignore=ignore))]
    if weight:
        inputs.append(("weight", rand(C, low=0.2, high=1.5, dtype=dtype)))
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    n_out = 2 if log_prob_out else 1
    # With two outputs the loss of gradcheck falls on the last: log_prob.
    model = single_op(op, inputs, n_outputs=n_out, attrs=attrs, opset=13,
                      output_index=None if log_prob_out else 0)
    return {"name": name, "model": model, "args": ["--max-elems", "256"]}


# Not differentiable (as in ONNX Runtime training and PyTorch).
NO_GRAD = ['weight']

CASES = []
for op, tag in (("SoftmaxCrossEntropyLoss", "sce"), ("NegativeLogLikelihoodLoss", "nll")):
    for red in ("none", "sum", "mean"):
        CASES += [
            loss_case(f"{tag}_{red}", op, red),
            loss_case(f"{tag}_{red}_weight", op, red, weight=True),
            loss_case(f"{tag}_{red}_ignore", op, red, ignore=1),
            loss_case(f"{tag}_{red}_weight_ignore_neg", op, red, weight=True, ignore=-1),
            loss_case(f"{tag}_{red}_nd", op, red, extra=(2,)),
            loss_case(f"{tag}_{red}_nd2_weight_ignore", op, red, extra=(2, 3), weight=True, ignore=2),
            loss_case(f"{tag}_{red}_f64", op, red, extra=(2,), weight=True, ignore=0, dtype=np.float64),
        ]
    CASES.append(loss_case(f"{tag}_mean_nd_f64", op, "mean", extra=(3,), dtype=np.float64))

# SCE's log_prob output, alone and next to a weighted, ignoring loss
CASES += [
    loss_case("sce_log_prob", "SoftmaxCrossEntropyLoss", "mean", log_prob_out=True),
    loss_case("sce_log_prob_nd_weight_ignore", "SoftmaxCrossEntropyLoss", "none", extra=(2,), weight=True,
              ignore=3, log_prob_out=True),
    loss_case("sce_log_prob_f64", "SoftmaxCrossEntropyLoss", "sum", extra=(2, 2), log_prob_out=True,
              dtype=np.float64),
]
