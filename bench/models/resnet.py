"""ResNet-18 and ResNet-50 in torchvision's layout (v1.5: the stride of a
bottleneck sits on its 3x3 conv).

7x7/2 stem Conv + BatchNorm + Relu, 3x3/2 MaxPool, four stages of basic
(ResNet-18) or bottleneck (ResNet-50) blocks with 1x1 projection shortcuts
("downsample"), GlobalAveragePool, Flatten, Gemm. BatchNormalization nodes
are kept in inference form, not folded into the convolutions. The last BN of
each residual branch starts with a small scale (torchvision's
zero_init_residual idea, but non-zero) so that activations stay of order one
through the residual sums.
"""

from _builder import Builder

FULL18 = dict(size=224, layers=(2, 2, 2, 2), width=64, classes=1000)
FULL50 = dict(size=224, layers=(3, 4, 6, 3), width=64, classes=1000)
TINY = dict(size=32, layers=(1, 1, 1, 1), width=8, classes=10)

RESIDUAL_GAMMA = 0.25


def _basic(b, x, p, cin, planes, stride):
    y = b.conv(x, f"{p}.conv1", cin, planes, 3, stride=stride)
    y = b.bn(y, f"{p}.bn1", planes)
    y = b.relu(y, f"{p}.relu1")
    y = b.conv(y, f"{p}.conv2", planes, planes, 3)
    y = b.bn(y, f"{p}.bn2", planes, gamma=RESIDUAL_GAMMA)
    if stride != 1 or cin != planes:
        x = b.conv(x, f"{p}.downsample.0", cin, planes, 1, stride=stride)
        x = b.bn(x, f"{p}.downsample.1", planes)
    y = b.node("Add", [y, x], f"{p}.add")
    return b.relu(y, f"{p}.relu2"), planes


def _bottleneck(b, x, p, cin, planes, stride):
    cout = planes * 4
    y = b.conv(x, f"{p}.conv1", cin, planes, 1)
    y = b.bn(y, f"{p}.bn1", planes)
    y = b.relu(y, f"{p}.relu1")
    y = b.conv(y, f"{p}.conv2", planes, planes, 3, stride=stride)
    y = b.bn(y, f"{p}.bn2", planes)
    y = b.relu(y, f"{p}.relu2")
    y = b.conv(y, f"{p}.conv3", planes, cout, 1)
    y = b.bn(y, f"{p}.bn3", cout, gamma=RESIDUAL_GAMMA)
    if stride != 1 or cin != cout:
        x = b.conv(x, f"{p}.downsample.0", cin, cout, 1, stride=stride)
        x = b.bn(x, f"{p}.downsample.1", cout)
    y = b.node("Add", [y, x], f"{p}.add")
    return b.relu(y, f"{p}.relu3"), cout


def build(name, batch=1, seed=0, size=224, layers=(3, 4, 6, 3), width=64, classes=1000, bottleneck=True):
    b = Builder(name, seed)
    x = b.input("input", [batch, 3, size, size])
    x = b.conv(x, "conv1", 3, width, 7, stride=2, pad=3)
    x = b.bn(x, "bn1", width)
    x = b.relu(x, "relu")
    x = b.maxpool(x, "maxpool", 3, 2, pad=1)
    block = _bottleneck if bottleneck else _basic
    cin = width
    for stage, n in enumerate(layers):
        planes = width * 2 ** stage
        for i in range(n):
            stride = 2 if (i == 0 and stage > 0) else 1
            x, cin = block(b, x, f"layer{stage + 1}.{i}", cin, planes, stride)
    x = b.gap(x, "avgpool")
    x = b.flatten(x, "flatten")
    x = b.gemm(x, "fc", cin, classes)
    b.output(x, rename="logits")
    kind = "bottleneck" if bottleneck else "basic"
    return b.build(f"{name}: {kind} blocks {list(layers)}, width {width}, {size}x{size} input, {classes} classes")


def build18(batch=1, seed=0, **cfg):
    return build("resnet18", batch, seed, bottleneck=False, **cfg)


def build50(batch=1, seed=0, **cfg):
    return build("resnet50", batch, seed, bottleneck=True, **cfg)
