"""U-Net for segmentation (Ronneberger et al. 2015, with padded convs).

Encoder: at each level a double (3x3 Conv + BatchNorm + Relu), then a 2x2
MaxPool; decoder: upsample (2x2 stride-2 ConvTranspose, or Resize nearest /
linear followed by a 1x1 Conv, as `upsample` says) halving the channels,
Concat with the encoder's skip tensor, double conv; a 1x1 Conv head gives
per-pixel class scores [N, classes, S, S].
"""

import numpy as np

from _builder import Builder

FULL = dict(size=256, base=64, depth=4, in_channels=3, classes=2, upsample="convtranspose")
TINY = dict(size=32, base=4, depth=2, in_channels=3, classes=2, upsample="convtranspose")

UPSAMPLE_MODES = ("convtranspose", "nearest", "linear")


def _double_conv(b, x, p, cin, cout):
    for i in (1, 2):
        x = b.conv(x, f"{p}.conv{i}", cin if i == 1 else cout, cout, 3)
        x = b.bn(x, f"{p}.bn{i}", cout)
        x = b.relu(x, f"{p}.relu{i}")
    return x


def build(batch=1, seed=0, size=256, base=64, depth=4, in_channels=3, classes=2, upsample="convtranspose"):
    if upsample not in UPSAMPLE_MODES:
        raise ValueError(f"unet: upsample must be one of {UPSAMPLE_MODES}, got '{upsample}'")
    if size % (2 ** depth):
        raise ValueError(f"unet: size {size} must be divisible by 2^depth = {2 ** depth}")
    b = Builder("unet", seed)
    x = b.input("input", [batch, in_channels, size, size])
    x = _double_conv(b, x, "inc", in_channels, base)
    skips, c = [x], base
    for lvl in range(1, depth + 1):
        x = b.maxpool(x, f"down{lvl}.pool", 2, 2)
        x = _double_conv(b, x, f"down{lvl}", c, 2 * c)
        c *= 2
        skips.append(x)
    skips.pop()
    for lvl in range(1, depth + 1):
        p = f"up{lvl}"
        if upsample == "convtranspose":
            x = b.conv_transpose(x, f"{p}.upconv", c, c // 2, 2, 2)
        else:
            if "up.scales" not in b._tensor_names:
                b.floats("up.scales", [1.0, 1.0, 2.0, 2.0])
            attrs = dict(mode=upsample)
            if upsample == "nearest":
                attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
            else:
                attrs.update(coordinate_transformation_mode="half_pixel")
            x = b.node("Resize", [x, "", "up.scales"], f"{p}.resize", **attrs)
            x = b.conv(x, f"{p}.upconv", c, c // 2, 1, bias=True)
        x = b.node("Concat", [skips.pop(), x], f"{p}.concat", axis=1)
        x = _double_conv(b, x, p, c, c // 2)
        c //= 2
    x = b.conv(x, "outc", c, classes, 1, bias=True)
    b.output(x, rename="logits")
    return b.build(f"unet: base {base}, depth {depth}, {upsample} upsampling, {size}x{size} input, {classes} classes")
