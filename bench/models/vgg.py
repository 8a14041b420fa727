"""VGG-16 (configuration D, no batch norm) in torchvision's layout.

Thirteen 3x3 Conv + Relu layers in five stages each closed by a 2x2 MaxPool,
then Flatten and three Gemm layers (Relu between; optional Dropout nodes,
identity at inference). The classifier's input width follows the resolution
(512 * (size/32)^2), standing in for torchvision's adaptive pooling to 7x7.
"""

import numpy as np

from _builder import Builder

CFG_D = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")

FULL = dict(size=224, width=64, fc=4096, classes=1000, dropout=0.0)
TINY = dict(size=32, width=4, fc=32, classes=10, dropout=0.0)


def build(batch=1, seed=0, size=224, width=64, fc=4096, classes=1000, dropout=0.0):
    if size % 32:
        raise ValueError(f"vgg16: size must be a multiple of 32, got {size}")
    b = Builder("vgg16", seed)
    x = b.input("input", [batch, 3, size, size])
    cin, stage, idx = 3, 1, 1
    for v in CFG_D:
        if v == "M":
            x = b.maxpool(x, f"pool{stage}", 2, 2)
            stage, idx = stage + 1, 1
            continue
        cout = v * width // 64
        x = b.conv(x, f"conv{stage}_{idx}", cin, cout, 3, bias=True)
        x = b.relu(x, f"relu{stage}_{idx}")
        cin, idx = cout, idx + 1
    x = b.flatten(x, "flatten")
    feat = cin * (size // 32) ** 2
    for i, (n_in, n_out) in enumerate([(feat, fc), (fc, fc)], start=6):
        x = b.gemm(x, f"fc{i}", n_in, n_out, gain=2.0)
        x = b.relu(x, f"relu{i}")
        if dropout > 0:
            ratio = f"drop{i}.ratio"
            b.floats(ratio, np.float32(dropout))
            x = b.node("Dropout", [x, ratio], f"drop{i}", outputs=["output"])[0]
    x = b.gemm(x, "fc8", fc, classes)
    b.output(x, rename="logits")
    return b.build(f"vgg16: width {width}, {size}x{size} input, fc {fc}, {classes} classes")
