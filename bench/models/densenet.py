"""DenseNet-121 in torchvision's layout.

Stem 7x7/2 Conv + BatchNorm + Relu + 3x3/2 MaxPool; dense blocks whose
layers each take the Concat of every earlier feature map of the block
(BatchNorm + Relu + 1x1 Conv to bn_size*growth, BatchNorm + Relu + 3x3 Conv
to growth) — the quadratic concatenation that makes DenseNet a classic
memory-planning case; transitions (BatchNorm + Relu + 1x1 Conv halving the
channels + 2x2 AveragePool); final BatchNorm + Relu, GlobalAveragePool,
Flatten, Gemm.
"""

from _builder import Builder

FULL = dict(size=224, growth=32, blocks=(6, 12, 24, 16), init=64, bn_size=4, classes=1000)
TINY = dict(size=32, growth=4, blocks=(2, 2), init=8, bn_size=2, classes=10)


def _bn_relu_conv(b, x, p, suffix, cin, cout, k):
    x = b.bn(x, f"{p}.norm{suffix}", cin)
    x = b.relu(x, f"{p}.relu{suffix}")
    return b.conv(x, f"{p}.conv{suffix}", cin, cout, k)


def build(batch=1, seed=0, size=224, growth=32, blocks=(6, 12, 24, 16), init=64, bn_size=4, classes=1000):
    b = Builder("densenet121", seed)
    x = b.input("input", [batch, 3, size, size])
    x = b.conv(x, "features.conv0", 3, init, 7, stride=2, pad=3)
    x = b.bn(x, "features.norm0", init)
    x = b.relu(x, "features.relu0")
    x = b.maxpool(x, "features.pool0", 3, 2, pad=1)
    c = init
    for bi, n in enumerate(blocks, start=1):
        feats = [x]
        for li in range(1, n + 1):
            p = f"features.denseblock{bi}.denselayer{li}"
            inp = feats[0] if len(feats) == 1 else b.node("Concat", feats, f"{p}.concat", axis=1)
            y = _bn_relu_conv(b, inp, p, "1", c + (li - 1) * growth, bn_size * growth, 1)
            y = _bn_relu_conv(b, y, p, "2", bn_size * growth, growth, 3)
            feats.append(y)
        x = b.node("Concat", feats, f"features.denseblock{bi}.concat", axis=1)
        c += n * growth
        if bi != len(blocks):
            p = f"features.transition{bi}"
            x = b.bn(x, f"{p}.norm", c)
            x = b.relu(x, f"{p}.relu")
            x = b.conv(x, f"{p}.conv", c, c // 2, 1)
            x = b.avgpool(x, f"{p}.pool", 2, 2)
            c //= 2
    x = b.bn(x, "features.norm5", c)
    x = b.relu(x, "features.relu5")
    x = b.gap(x, "avgpool")
    x = b.flatten(x, "flatten")
    x = b.gemm(x, "classifier", c, classes)
    b.output(x, rename="logits")
    return b.build(f"densenet121: growth {growth}, blocks {list(blocks)}, {size}x{size} input, {classes} classes")
