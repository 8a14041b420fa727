#!/usr/bin/env python3
"""Writes one model of the zoo as an ONNX file.

    python3 bench/models/make.py MODEL [--batch N] [--size S] [--seq L]
        [--layers K] [--classes C] [--set KEY=VALUE ...] [--tiny] [--seed N]
        [--inputs DIR] [--external-data] -o OUT.onnx

MODEL is one of: smallcnn resnet18 resnet50 vgg16 mobilenetv2 densenet121
unet transformer lstm_lm. --tiny starts from the small test configuration
instead of the full one; explicit options override either. --inputs DIR also
writes seeded sample inputs as DIR/<input name>.npy. --list prints every
model's parameters.

Importable: make(name, batch=1, tiny=False, seed=0, **overrides) returns the
ModelProto.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

import densenet  # noqa: E402
import lstm_lm  # noqa: E402
import mobilenetv2  # noqa: E402
import resnet  # noqa: E402
import smallcnn  # noqa: E402
import transformer  # noqa: E402
import unet  # noqa: E402
import vgg  # noqa: E402
from _builder import parse_sets, parse_value, sample_inputs  # noqa: E402,F401  (the last two re-exported for scripts)

# name -> (build function, full configuration, tiny configuration)
MODELS = {
    "smallcnn": (smallcnn.build, smallcnn.FULL, smallcnn.TINY),
    "resnet18": (resnet.build18, resnet.FULL18, resnet.TINY),
    "resnet50": (resnet.build50, resnet.FULL50, resnet.TINY),
    "vgg16": (vgg.build, vgg.FULL, vgg.TINY),
    "mobilenetv2": (mobilenetv2.build, mobilenetv2.FULL, mobilenetv2.TINY),
    "densenet121": (densenet.build, densenet.FULL, densenet.TINY),
    "unet": (unet.build, unet.FULL, unet.TINY),
    "transformer": (transformer.build, transformer.FULL, transformer.TINY),
    "lstm_lm": (lstm_lm.build, lstm_lm.FULL, lstm_lm.TINY),
}


def config(name, tiny=False, **overrides):
    """The model's configuration: full or tiny defaults, then overrides
    (None values ignored). Unknown keys are an error naming the model."""
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}'; models: {' '.join(MODELS)}")
    _, full, small = MODELS[name]
    cfg = dict(small if tiny else full)
    for k, v in overrides.items():
        if v is None:
            continue
        if k not in cfg:
            raise ValueError(f"{name} has no parameter '{k}'; it has: {', '.join(cfg)}")
        cfg[k] = v
    return cfg


def make(name, batch=1, tiny=False, seed=0, **overrides):
    build = MODELS[name][0] if name in MODELS else None
    cfg = config(name, tiny, **overrides)
    return build(batch=batch, seed=seed, **cfg)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", choices=list(MODELS))
    ap.add_argument("-o", "--output", help="output .onnx file")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, help="input resolution (image models)")
    ap.add_argument("--seq", type=int, help="sequence length (transformer, lstm_lm)")
    ap.add_argument("--layers", type=int, help="layer count (transformer, lstm_lm)")
    ap.add_argument("--classes", type=int, help="output classes (image models)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="any other parameter, e.g. --set upsample=nearest --set 'blocks=(2,2)'")
    ap.add_argument("--tiny", action="store_true", help="the small test configuration")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    ap.add_argument("--inputs", metavar="DIR", help="also write seeded sample inputs DIR/<name>.npy")
    ap.add_argument("--input-seed", type=int, default=1)
    ap.add_argument("--external-data", action="store_true",
                    help="store weights in OUT.onnx.data beside the model")
    ap.add_argument("--list", action="store_true", help="print each model's parameters and exit")
    args = ap.parse_args(argv)

    if args.list:
        for name, (_, full, small) in MODELS.items():
            print(f"{name}\n  full: {full}\n  tiny: {small}")
        return 0
    if not args.model or not args.output:
        ap.error("MODEL and -o OUT.onnx are required")
    overrides = dict(size=args.size, seq=args.seq, layers=args.layers, classes=args.classes)
    parse_sets(ap, args.set, overrides)
    try:
        model = make(args.model, batch=args.batch, tiny=args.tiny, seed=args.seed, **overrides)
    except ValueError as e:
        print(f"make.py: {e}", file=sys.stderr)
        return 1
    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    if args.external_data:
        onnx.save_model(model, args.output, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(args.output) + ".data", size_threshold=1024)
    else:
        onnx.save_model(model, args.output)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"{args.output}: {model.graph.name}, {len(model.graph.node)} nodes, "
          f"{params / 1e6:.2f}M parameters, opset {model.opset_import[0].version}")
    if args.inputs:
        os.makedirs(args.inputs, exist_ok=True)
        for name, arr in sample_inputs(model, args.input_seed).items():
            path = os.path.join(args.inputs, f"{name}.npy")
            np.save(path, arr)
            print(f"{path}: {arr.dtype}{list(arr.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
