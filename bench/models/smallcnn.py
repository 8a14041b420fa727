"""Small CNN classifier: the default model of the project's demo run.

input [N,3,S,S] -> (Conv3x3 + BatchNorm + Relu + MaxPool2) per stage ->
GlobalAveragePool -> Flatten -> Gemm to the classes ("logits").
"""

from _builder import Builder

FULL = dict(size=32, channels=(32, 64, 128), classes=10)
TINY = dict(size=16, channels=(8, 16, 16), classes=10)


def build(batch=1, seed=0, size=32, channels=(32, 64, 128), classes=10):
    b = Builder("smallcnn", seed)
    x = b.input("input", [batch, 3, size, size])
    cin = 3
    for i, cout in enumerate(channels, start=1):
        p = f"block{i}"
        x = b.conv(x, f"{p}.conv", cin, cout, 3)
        x = b.bn(x, f"{p}.bn", cout)
        x = b.relu(x, f"{p}.relu")
        x = b.maxpool(x, f"{p}.pool", 2, 2)
        cin = cout
    x = b.gap(x, "gap")
    x = b.flatten(x, "flatten")
    x = b.gemm(x, "fc", cin, classes)
    b.output(x, rename="logits")
    return b.build(f"smallcnn: {len(channels)} conv stages {list(channels)}, {size}x{size} input, {classes} classes")
