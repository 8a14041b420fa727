"""MobileNetV2 in torchvision's layout.

Inverted residual blocks: 1x1 expansion Conv + BatchNorm + ReLU6, 3x3
depthwise Conv (group = channels) + BatchNorm + ReLU6, 1x1 linear projection
Conv + BatchNorm, and a residual Add when stride is 1 and widths match. ReLU6
is Clip(0, 6). Then a 1x1 Conv to last_channel (1280), GlobalAveragePool, Flatten,
Gemm.
"""

from _builder import Builder

# expansion t, output channels c, repeats n, first stride s
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
            (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))

FULL = dict(size=224, width_mult=1.0, max_repeats=0, last_channel=1280, classes=1000)
TINY = dict(size=32, width_mult=0.25, max_repeats=1, last_channel=64, classes=10)

RESIDUAL_GAMMA = 0.25


def _divisible(v, divisor=8):
    """torchvision's _make_divisible: round to a multiple of 8, never more than 10% down."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _conv_bn(b, x, p, cin, cout, k, stride=1, group=1, act=True, gamma=1.0):
    x = b.conv(x, f"{p}.conv", cin, cout, k, stride=stride, group=group)
    x = b.bn(x, f"{p}.bn", cout, gamma=gamma)
    return b.relu6(x, f"{p}.relu6") if act else x


def build(batch=1, seed=0, size=224, width_mult=1.0, max_repeats=0, last_channel=1280, classes=1000):
    b = Builder("mobilenetv2", seed)
    x = b.input("input", [batch, 3, size, size])
    cin = _divisible(32 * width_mult)
    last = _divisible(last_channel * max(1.0, width_mult))
    x = _conv_bn(b, x, "features.0", 3, cin, 3, stride=2)
    idx = 1
    for t, c, n, s in SETTINGS:
        cout = _divisible(c * width_mult)
        if max_repeats:
            n = min(n, max_repeats)
        for i in range(n):
            p = f"features.{idx}"
            stride = s if i == 0 else 1
            hidden = int(round(cin * t))
            y = x
            if t != 1:
                y = _conv_bn(b, y, f"{p}.expand", cin, hidden, 1)
            y = _conv_bn(b, y, f"{p}.dw", hidden, hidden, 3, stride=stride, group=hidden)
            residual = stride == 1 and cin == cout
            y = _conv_bn(b, y, f"{p}.project", hidden, cout, 1, act=False,
                         gamma=RESIDUAL_GAMMA if residual else 1.0)
            x = b.node("Add", [x, y], f"{p}.add") if residual else y
            cin = cout
            idx += 1
    x = _conv_bn(b, x, f"features.{idx}", cin, last, 1)
    x = b.gap(x, "avgpool")
    x = b.flatten(x, "flatten")
    x = b.gemm(x, "classifier", last, classes)
    b.output(x, rename="logits")
    return b.build(f"mobilenetv2: width x{width_mult}, {size}x{size} input, {classes} classes")
