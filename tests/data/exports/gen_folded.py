#!/usr/bin/env python3
"""Writes the eval-mode exports beside this file that tests/train_params_check.py
(case eval-export) reads: a small Conv-BatchNorm-ReLU network exported in eval
mode with the exporters' defaults, which fold BatchNormalization into the
convolutions (TorchScript by constant folding, the dynamo exporter by its
rewriter's FuseBatchNormIntoConv, recorded in the node metadata).
Development only (needs torch and onnxscript):
    python3 tests/data/exports/gen_folded.py
"""
import os
import warnings

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    with torch.no_grad():
        for mod in m:
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.normal_(0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.normal_(1, 0.1)
                mod.bias.normal_(0, 0.1)
    m.eval()
    x = torch.randn(2, 3, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), os.path.join(HERE, "ts17-eval-folded.onnx"), dynamo=False, opset_version=17,
                          input_names=["input"], output_names=["output"])
        torch.onnx.export(m, (x,), dynamo=True, opset_version=18, input_names=["input"],
                          output_names=["output"]).save(os.path.join(HERE, "dynamo18-eval-folded.onnx"))


if __name__ == "__main__":
    main()
