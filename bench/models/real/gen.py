#!/usr/bin/env python3
"""The real-model corpus: architectures from torchvision, timm, transformers
and torch.nn in small configurations of their own classes, random seeded
weights, exported with both PyTorch exporters, and PyTorch's reference
numbers for inference and training beside each (tests/real_check.py reads
them; README.md beside this file says what is where).

Development only: needs torch, torchvision, timm, transformers, onnx,
onnxscript and numpy (pip); CI never runs this, it only reads its output.

    python3 bench/models/real/gen.py [-o tests/data/real] [--only NAME,...] [--list]

For each architecture, in OUT/<arch>/:
  <exporter><opset>-<mode>.onnx    e.g. ts17-train.onnx (TorchScript exporter,
                                   opset 17, TrainingMode.TRAINING), dynamo18-train.onnx
  ref-<mode>/inputs/input_<i>.npy  the forward's inputs, in graph-input order
  ref-<mode>/labels.npy            the loss's targets
  ref-<mode>/output.npy            the forward's output (before any update)
  ref-<mode>/grads/<param>.npy     each parameter's gradient at the initial weights
  ref-<mode>/weights3/<param>.npy  each parameter after three plain SGD steps
                                   (fixed lr, the same inputs each step)
  meta.json                        loss, lr, losses per step, and per model the
                                   map ONNX initializer -> PyTorch parameter, the
                                   reference of its inference ("ref") and of its
                                   training ("ref_train")

The references are computed in float64 (a float64 copy of the model and
inputs) so that they carry no float32 rounding of their own; meta.json also
records how far PyTorch's own float32 run is from them (torch_f32_err).
"""

import argparse
import copy
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

LR = 0.05
STEPS = 3
BATCH = 4
IMG = 64        # convolutional nets: BatchNorm at the last stage still sees 4x2x2 values
IMG_VIT = 32    # patch-based models (their image size is a constructor argument)
SEQ = 8
VOCAB = 64
CLASSES = 10


# ---- the architectures ------------------------------------------------------


def tv_resnet():
    from torchvision.models.resnet import BasicBlock, ResNet

    class SmallResNet(ResNet):
        """torchvision's ResNet and BasicBlock with narrow stages: ResNet's
        constructor hard-codes the widths 64..512, so the stem and the stages
        are rebuilt with its own _make_layer; forward() is ResNet's."""

        def __init__(self, block, layers, widths, num_classes, groups=1, width_per_group=64):
            super().__init__(block, [1, 1, 1, 1], num_classes=num_classes, groups=groups,
                             width_per_group=width_per_group)
            self.inplanes = widths[0]
            self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(widths[0])
            self.layer1 = self._make_layer(block, widths[0], layers[0])
            self.layer2 = self._make_layer(block, widths[1], layers[1], stride=2)
            self.layer3 = self._make_layer(block, widths[2], layers[2], stride=2)
            self.layer4 = self._make_layer(block, widths[3], layers[3], stride=2)
            self.fc = nn.Linear(widths[3] * block.expansion, num_classes)

    tv_resnet.cls = SmallResNet
    return SmallResNet(BasicBlock, [1, 1, 1, 1], [8, 16, 16, 32], CLASSES)


def tv_resnext():
    from torchvision.models.resnet import Bottleneck
    tv_resnet()
    return tv_resnet.cls(Bottleneck, [1, 1, 1, 1], [8, 8, 16, 16], CLASSES, groups=2, width_per_group=8)


def tv_mobilenet_v2():
    from torchvision.models import MobileNetV2
    m = MobileNetV2(num_classes=CLASSES, width_mult=0.25,
                    inverted_residual_setting=[[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 1, 2]], dropout=0.0)
    return m


def tv_mobilenet_v3():
    from functools import partial
    from torchvision.models.mobilenetv3 import InvertedResidualConfig, MobileNetV3
    c = partial(InvertedResidualConfig, width_mult=1.0)
    setting = [c(8, 3, 8, 8, True, "RE", 2, 1), c(8, 3, 24, 16, False, "RE", 2, 1),
               c(16, 5, 32, 16, True, "HS", 1, 1), c(16, 3, 48, 24, True, "HS", 2, 1)]
    return MobileNetV3(setting, last_channel=64, num_classes=CLASSES, dropout=0.0)


def tv_efficientnet():
    from torchvision.models.efficientnet import EfficientNet, MBConvConfig
    setting = [MBConvConfig(1, 3, 1, 8, 8, 1), MBConvConfig(4, 3, 2, 8, 16, 2), MBConvConfig(4, 5, 2, 16, 24, 1)]
    return EfficientNet(setting, dropout=0.0, stochastic_depth_prob=0.0, num_classes=CLASSES, last_channel=64)


def tv_efficientnet_v2():
    from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig
    setting = [FusedMBConvConfig(1, 3, 1, 8, 8, 1), FusedMBConvConfig(4, 3, 2, 8, 16, 1),
               MBConvConfig(4, 3, 2, 16, 24, 1)]
    return EfficientNet(setting, dropout=0.0, stochastic_depth_prob=0.0, num_classes=CLASSES, last_channel=64)


def tv_convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], stochastic_depth_prob=0.0,
                    num_classes=CLASSES)


def tv_regnet():
    from torchvision.models.regnet import BlockParams, RegNet
    bp = BlockParams.from_init_params(depth=3, w_0=8, w_a=8.0, w_m=2.0, group_width=8)
    return RegNet(bp, num_classes=CLASSES, stem_width=8)


def tv_shufflenet():
    from torchvision.models import ShuffleNetV2
    return ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 64], num_classes=CLASSES)


def tv_squeezenet():
    from torchvision.models.squeezenet import Fire, SqueezeNet
    m = SqueezeNet("1_1", num_classes=CLASSES, dropout=0.0)
    # SqueezeNet 1.1's Fire modules, fewer and narrower (its constructor fixes them).
    m.features = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(16, 8, 16, 16), Fire(32, 8, 16, 16), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(32, 16, 32, 32))
    final = nn.Conv2d(64, CLASSES, 1)
    m.classifier = nn.Sequential(nn.Dropout(p=0.0), final, nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))
    return m


def tv_densenet():
    from torchvision.models import DenseNet
    return DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, bn_size=2, num_classes=CLASSES)


def tv_googlenet():
    from torchvision.models.googlenet import BasicConv2d, GoogLeNet, Inception
    m = GoogLeNet(num_classes=CLASSES, aux_logits=False, transform_input=False, init_weights=True, dropout=0.0)
    # GoogLeNet's own modules, narrow; the later Inception stages left out.
    m.conv1 = BasicConv2d(3, 8, kernel_size=7, stride=2, padding=3)
    m.conv2 = BasicConv2d(8, 8, kernel_size=1)
    m.conv3 = BasicConv2d(8, 16, kernel_size=3, padding=1)
    m.inception3a = Inception(16, 8, 8, 8, 4, 4, 4)
    m.inception3b = Inception(24, 8, 8, 12, 4, 4, 4)
    for name in ("inception4a", "inception4b", "inception4c", "inception4d", "inception4e", "inception5a",
                 "inception5b", "maxpool4"):
        setattr(m, name, nn.Identity())
    m.fc = nn.Linear(28, CLASSES)
    return m


def tv_mnasnet():
    from torchvision.models import MNASNet
    m = MNASNet(0.25, num_classes=CLASSES, dropout=0.0)
    # MNASNet's own stacks at alpha 0.25; its 1280-channel head narrowed.
    layers = list(m.layers)
    head_in = layers[13].in_channels
    layers[13] = nn.Conv2d(head_in, 64, 1, 1, 0, bias=False)
    layers[14] = nn.BatchNorm2d(64, momentum=0.0003)
    m.layers = nn.Sequential(*layers)
    m.classifier = nn.Sequential(nn.Dropout(p=0.0, inplace=True), nn.Linear(64, CLASSES))
    return m


def tv_vit():
    from torchvision.models import VisionTransformer
    return VisionTransformer(image_size=IMG_VIT, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                             num_classes=CLASSES)


def tv_swin():
    from torchvision.models import SwinTransformer
    return SwinTransformer(patch_size=[2, 2], embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=[4, 4],
                           stochastic_depth_prob=0.0, num_classes=CLASSES)


def timm_vit():
    from timm.models.vision_transformer import VisionTransformer
    return VisionTransformer(img_size=IMG_VIT, patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0,
                             num_classes=CLASSES)


def timm_convnext():
    from timm.models.convnext import ConvNeXt
    return ConvNeXt(depths=(1, 1), dims=(16, 32), num_classes=CLASSES)


def timm_resnet():
    from timm.models.resnet import BasicBlock, ResNet
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=CLASSES, stem_width=8, channels=(8, 16, 16, 32))


def timm_mobilevit():
    from timm.models.byobnet import ByobNet, ByoBlockCfg, ByoModelCfg
    cfg = ByoModelCfg(
        blocks=(ByoBlockCfg(type="bottle", d=1, c=16, s=1, gs=1, br=2.0),
                ByoBlockCfg(type="bottle", d=1, c=24, s=2, gs=1, br=2.0),
                ByoBlockCfg(type="mobilevit", d=1, c=32, s=2, br=2.0, gs=1,
                            block_kwargs=dict(transformer_dim=32, transformer_depth=1, patch_size=2,
                                              num_heads=2))),
        stem_chs=8, stem_type="3x3", stem_pool="", downsample="", act_layer="silu", num_features=64)
    return ByobNet(cfg, num_classes=CLASSES)


def timm_efficientformer():
    from timm.models.efficientformer import EfficientFormer
    return EfficientFormer(depths=(1, 1, 1, 1), embed_dims=(8, 16, 24, 32), num_vit=1, num_classes=CLASSES)


class HFLogits(nn.Module):
    """A transformers model called with (input_ids[, attention_mask]) that
    returns its logits (or last_hidden_state) alone, as one graph output."""

    def __init__(self, m, field="logits", mask=True):
        super().__init__()
        self.m, self.field, self.mask = m, field, mask

    def forward(self, input_ids, attention_mask=None):
        kw = dict(attention_mask=attention_mask) if self.mask else {}
        return getattr(self.m(input_ids=input_ids, **kw), self.field)


def _hf_common():
    return dict(attn_implementation="eager")


def hf_bert():
    from transformers import BertConfig, BertForSequenceClassification
    c = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, max_position_embeddings=32, num_labels=4, hidden_dropout_prob=0.0,
                   attention_probs_dropout_prob=0.0, **_hf_common())
    return HFLogits(BertForSequenceClassification(c))


def hf_distilbert():
    from transformers import DistilBertConfig, DistilBertForSequenceClassification
    c = DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                         max_position_embeddings=32, num_labels=4, dropout=0.0, attention_dropout=0.0,
                         seq_classif_dropout=0.0, **_hf_common())
    return HFLogits(DistilBertForSequenceClassification(c))


def hf_roberta():
    from transformers import RobertaConfig, RobertaForSequenceClassification
    c = RobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=32, num_labels=4, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0, **_hf_common())
    return HFLogits(RobertaForSequenceClassification(c))


def hf_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    c = GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
                   embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False, **_hf_common())
    return HFLogits(GPT2LMHeadModel(c), mask=False)


def hf_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    c = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                    num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32, use_cache=False,
                    **_hf_common())
    return HFLogits(LlamaForCausalLM(c), mask=False)


def hf_t5_encoder():
    from transformers import T5Config, T5EncoderModel
    c = T5Config(vocab_size=VOCAB, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2, dropout_rate=0.0,
                 relative_attention_num_buckets=8, relative_attention_max_distance=16, **_hf_common())
    return HFLogits(T5EncoderModel(c), field="last_hidden_state")


def hf_vit():
    from transformers import ViTConfig, ViTForImageClassification
    c = ViTConfig(image_size=IMG_VIT, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, num_labels=CLASSES, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, **_hf_common())

    class Pixels(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = ViTForImageClassification(c)

        def forward(self, pixel_values):
            return self.m(pixel_values=pixel_values).logits

    return Pixels()


class RNNLM(nn.Module):
    """Embedding, a 2-layer nn.LSTM or nn.GRU (batch_first), Linear to the
    vocabulary: logits [N, T, V]."""

    def __init__(self, cell):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.rnn = getattr(nn, cell)(16, 24, num_layers=2, batch_first=True)
        self.head = nn.Linear(24, VOCAB)

    def forward(self, input_ids):
        y, _ = self.rnn(self.emb(input_ids))
        return self.head(y)


def nn_lstm_lm():
    return RNNLM("LSTM")


def nn_gru_lm():
    return RNNLM("GRU")


class TransformerCls(nn.Module):
    """nn.TransformerEncoder (2 layers, GELU, pre-norm) over embeddings,
    mean-pooled, Linear to classes."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.pos = nn.Parameter(torch.zeros(1, SEQ, 32))
        layer = nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 4)

    def forward(self, input_ids):
        return self.head(self.enc(self.emb(input_ids) + self.pos).mean(1))


def nn_transformer():
    return TransformerCls()


class UNet(nn.Module):
    """U-Net (Ronneberger et al.) with padded convs: double Conv+BN+ReLU per
    level, MaxPool down, ConvTranspose up, Concat skips; [N,3,S,S] -> [N,2,S,S]."""

    def __init__(self, base=8, depth=2):
        super().__init__()

        def double(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                 nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

        self.inc = double(3, base)
        self.down = nn.ModuleList()
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        c = base
        for _ in range(depth):
            self.down.append(double(c, 2 * c))
            c *= 2
        for _ in range(depth):
            self.up.append(nn.ConvTranspose2d(c, c // 2, 2, stride=2))
            self.dec.append(double(c, c // 2))
            c //= 2
        self.head = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        x = self.inc(x)
        skips = [x]
        for d in self.down:
            x = d(F.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for u, d in zip(self.up, self.dec):
            x = d(torch.cat([skips.pop(), u(x)], 1))
        return self.head(x)


def nn_unet():
    return UNet()


# name -> (builder, kind, extra exports). kind: image (image -> class scores,
# cross-entropy), tokens (ids+mask -> class scores, cross-entropy), lm (ids ->
# [N,T,V] logits, cross-entropy over the last axis), mse-image, mse-tokens.
# Every architecture gets ts17-train and dynamo18-train; extras add eval-mode
# exports and the dynamo exporter at opset 23.
ARCHS = {
    "tv_resnet": (tv_resnet, "image", ["ts17-eval"]),
    "tv_resnext": (tv_resnext, "image", []),
    "tv_mobilenet_v2": (tv_mobilenet_v2, "image", ["ts17-eval"]),
    "tv_mobilenet_v3": (tv_mobilenet_v3, "image", []),
    "tv_efficientnet": (tv_efficientnet, "image", []),
    "tv_efficientnet_v2": (tv_efficientnet_v2, "image", []),
    "tv_convnext": (tv_convnext, "image", ["dynamo23-train"]),
    "tv_regnet": (tv_regnet, "image", []),
    "tv_shufflenet": (tv_shufflenet, "image", []),
    "tv_squeezenet": (tv_squeezenet, "image", []),
    "tv_densenet": (tv_densenet, "image", []),
    "tv_googlenet": (tv_googlenet, "image", []),
    "tv_mnasnet": (tv_mnasnet, "image", []),
    "tv_vit": (tv_vit, "image", ["dynamo23-train"]),
    "tv_swin": (tv_swin, "image", []),
    "timm_vit": (timm_vit, "image", ["dynamo23-train"]),
    "timm_convnext": (timm_convnext, "image", []),
    "timm_resnet": (timm_resnet, "image", []),
    "timm_mobilevit": (timm_mobilevit, "image", []),
    "timm_efficientformer": (timm_efficientformer, "image", []),
    "hf_bert": (hf_bert, "tokens", ["ts17-eval", "dynamo23-train"]),
    "hf_distilbert": (hf_distilbert, "tokens", []),
    "hf_roberta": (hf_roberta, "tokens", []),
    "hf_gpt2": (hf_gpt2, "lm", ["dynamo18-eval"]),
    "hf_llama": (hf_llama, "lm", ["dynamo23-train"]),
    "hf_t5_encoder": (hf_t5_encoder, "mse-tokens", []),
    "hf_vit": (hf_vit, "image", []),
    "nn_lstm_lm": (nn_lstm_lm, "lm", []),
    "nn_gru_lm": (nn_gru_lm, "lm", []),
    "nn_transformer": (nn_transformer, "tokens-nomask", []),
    "nn_unet": (nn_unet, "mse-image", []),
}


# ---- inputs, loss, references -----------------------------------------------


SMALL_IMAGES = {"tv_vit", "tv_swin", "timm_vit", "hf_vit", "timm_efficientformer"}


def make_inputs(name, kind, gen):
    if kind in ("image", "mse-image"):
        size = IMG_VIT if name in SMALL_IMAGES else IMG
        return [torch.randn(BATCH, 3, size, size, generator=gen)]
    ids = torch.randint(2, VOCAB, (BATCH, SEQ), generator=gen)
    if kind in ("tokens", "mse-tokens"):
        mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
        mask[1, SEQ - 3:] = 0   # the second sequence is padded: the mask matters
        return [ids, mask]
    return [ids]


def make_labels(kind, out, gen):
    if kind in ("image", "tokens", "tokens-nomask"):
        return torch.randint(0, out.shape[1], (out.shape[0],), generator=gen)
    if kind == "lm":
        return torch.randint(0, out.shape[-1], tuple(out.shape[:-1]), generator=gen)
    return torch.randn(out.shape, generator=gen, dtype=out.dtype)


def loss_of(kind, out, labels):
    if kind == "lm":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), labels.reshape(-1))
    if kind.startswith("mse"):
        return F.mse_loss(out, labels.to(out.dtype))
    return F.cross_entropy(out, labels)


def dtrexec_loss(kind):
    return "mse" if kind.startswith("mse") else "cross-entropy"


def perturb(model, gen):
    """Seeded noise on every float parameter and buffer, so that no two
    initializers are equal (the exporters would merge them) and BatchNorm's
    statistics are not the trivial 0 and 1."""
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if not t.is_floating_point():
                continue
            noise = torch.randn(t.shape, generator=gen, dtype=t.dtype)
            if name.endswith("running_var"):
                t.mul_(1 + 0.1 * noise.abs())
            else:
                t.add_(0.02 * noise)


def trajectory(model, kind, inputs, labels, train):
    """Forward output, loss, gradients at the start, losses of STEPS plain
    SGD steps and the parameters after them."""
    model.train(train)
    params = dict(model.named_parameters())
    opt = torch.optim.SGD(params.values(), lr=LR)
    losses, out0, grads0 = [], None, None
    for step in range(STEPS):
        opt.zero_grad()
        out = model(*inputs)
        loss = loss_of(kind, out, labels)
        loss.backward()
        if step == 0:
            out0 = out.detach().clone()
            grads0 = {n: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p))
                      for n, p in params.items()}
        losses.append(float(loss))
        opt.step()
    return out0, losses, grads0, {n: p.detach().clone() for n, p in params.items()}


def max_rel(a, b, floor=1e-30):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(float(np.abs(b).max()) if b.size else 0.0, floor)
    return float(np.abs(a - b).max()) / scale if a.size else 0.0


# ---- exporting --------------------------------------------------------------


def export(model, inputs, path, spec, input_names):
    exporter, mode = spec.split("-")
    opset = int(exporter.lstrip("tsdynamo"))
    train = mode == "train"
    model.train(train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter.startswith("ts"):
            torch.onnx.export(model, tuple(inputs), path, dynamo=False, opset_version=opset,
                              training=torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL,
                              do_constant_folding=False, input_names=input_names, output_names=["output"])
        else:
            # optimize=False: the exporter's optimizer folds BatchNormalization
            # into Conv and pre-transposes MatMul weights, so the initializers
            # would no longer be the parameters a training run updates.
            prog = torch.onnx.export(model, tuple(inputs), dynamo=True, opset_version=opset, optimize=False,
                                     input_names=input_names, output_names=["output"], external_data=False)
            prog.save(path, external_data=False)
            # The dynamo exporter annotates every node with its stack trace
            # (metadata_props): two thirds of the file, no semantics.
            m = onnx.load(path)
            for n in m.graph.node:
                del n.metadata_props[:]
            onnx.save(m, path)


def map_initializers(onnx_model, params):
    """ONNX initializer -> PyTorch parameter: by name (TorchScript keeps
    names mostly; the dynamo exporter uses the parameters' FQNs), else by
    equal value (the noise makes every parameter's value unique)."""
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in onnx_model.graph.initializer}
    mapping, left = {}, dict(params)
    for name in inits:
        if name in left:
            mapping[name] = name
            del left[name]
    for name, arr in inits.items():
        if name in mapping or arr.dtype != np.float32:
            continue
        for pname, p in list(left.items()):
            if tuple(p.shape) == arr.shape and np.array_equal(p.detach().numpy(), arr):
                mapping[name] = pname
                del left[pname]
                break
    return mapping, sorted(left)


def write_ref(d, mode, model, state, kind, inputs, labels):
    """ref-<mode>/: PyTorch's float64 trajectory in that mode."""
    train = mode == "train"
    m64 = copy.deepcopy(model).double()
    m64.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in state.items()})
    in64 = [x.double() if x.is_floating_point() else x for x in inputs]
    lab64 = labels.double() if labels.is_floating_point() else labels
    out64, losses, grads, w3 = trajectory(m64, kind, in64, lab64, train)
    m32 = copy.deepcopy(model)
    m32.load_state_dict(state)
    out32, losses32, grads32, w332 = trajectory(m32, kind, inputs, labels, train)
    gmax = max(float(g.abs().max()) for g in grads.values())
    grad_f32 = {k: max_rel(grads32[k], grads[k], 1e-3 * gmax) for k in grads}
    f32 = dict(output=max_rel(out32, out64), loss=abs(losses32[0] - losses[0]) / max(abs(losses[0]), 1e-30),
               grads=max(grad_f32.values()), weights3=max(max_rel(w332[k], w3[k]) for k in w3))
    r = os.path.join(d, f"ref-{mode}")
    for sub in ("inputs", "grads", "weights3"):
        os.makedirs(os.path.join(r, sub))
    for i, x in enumerate(inputs):
        np.save(os.path.join(r, "inputs", f"input_{i}.npy"), x.numpy())
    np.save(os.path.join(r, "labels.npy"), labels.numpy().astype(np.float32 if labels.is_floating_point()
                                                                 else np.int64))
    np.save(os.path.join(r, "output.npy"), out64.numpy().astype(np.float32))
    for k in grads:
        np.save(os.path.join(r, "grads", f"{k}.npy"), grads[k].numpy().astype(np.float32))
        np.save(os.path.join(r, "weights3", f"{k}.npy"), w3[k].numpy().astype(np.float32))
    # Per parameter, how far PyTorch's own float32 gradient is from the
    # float64 one (relative as tests/real_check.py measures): gradients that
    # are zero in exact arithmetic are rounding alone in float32.
    return dict(losses=losses, torch_f32_err=f32, torch_f32_grad_err=grad_f32, params=sorted(grads)), out64


def has_batchnorm(model):
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def bn_training_mode(om):
    """1 when the graph's BatchNormalization nodes use batch statistics."""
    for n in om.graph.node:
        if n.op_type == "BatchNormalization":
            return int(any(a.name == "training_mode" and a.i for a in n.attribute))
    return None


def refs_only(name, out_dir):
    """Rewrites ref-*/ and meta.json's "refs" of an architecture already
    exported (the same seeds give the same weights), keeping its models."""
    builder, kind, extras = ARCHS[name]
    seed = sum(map(ord, name))
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = builder()
    perturb(model, gen)
    model.eval()
    inputs = make_inputs(name, kind, gen)
    with torch.no_grad():
        out = model(*inputs)
    labels = make_labels(kind, out, gen)
    state = copy.deepcopy(model.state_dict())
    d = os.path.join(out_dir, name)
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    for mode in list(meta["refs"]):
        shutil.rmtree(os.path.join(d, f"ref-{mode}"))
        meta["refs"][mode], _ = write_ref(d, mode, model, state, kind, inputs, labels)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return meta


def build_one(name, out_dir):
    builder, kind, extras = ARCHS[name]
    seed = sum(map(ord, name))   # fixed per architecture
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = builder()
    perturb(model, gen)
    model.eval()
    inputs = make_inputs(name, kind, gen)
    with torch.no_grad():
        out = model(*inputs)
    labels = make_labels(kind, out, gen)
    state = copy.deepcopy(model.state_dict())
    n_params = sum(p.numel() for p in model.parameters())
    bn = has_batchnorm(model)

    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    meta = dict(arch=name, cls=type(model).__name__, kind=kind, loss=dtrexec_loss(kind), lr=LR, steps=STEPS,
                n_params=n_params, seed=seed, refs={}, models=[],
                labels_note="int64 class indices" if meta_ce(kind) else "float targets of the output's shape")
    specs = ["ts17-train", "dynamo18-train"] + extras
    # An eval reference where some export runs in eval mode, and for
    # BatchNorm models always: the dynamo exporter writes train-mode
    # BatchNorm with the running statistics (training_mode 0).
    # Without BatchNorm (and with every dropout at 0) eval mode computes what
    # train mode does, and eval exports share ref-train.
    modes = ["train"] + (["eval"] if bn else [])
    for mode in modes:
        meta["refs"][mode], _ = write_ref(d, mode, model, state, kind, inputs, labels)

    input_names = ["input_ids", "attention_mask"][:len(inputs)] if kind not in ("image", "mse-image") \
        else (["pixel_values"] if name == "hf_vit" else ["input"])
    for spec in specs:
        mode = spec.split("-")[1]
        model.load_state_dict(state)
        path = os.path.join(d, spec + ".onnx")
        exporter = spec.split("-")[0].rstrip("0123456789")
        entry = dict(file=spec + ".onnx", exporter=exporter, mode=mode,
                     opset=int(spec.split("-")[0].lstrip("tsdynamo")), ref=f"ref-{mode}" if bn else "ref-train",
                     # dtrexec trains an inference-mode BatchNormalization as
                     # PyTorch's train() does (ops/batch_norm.c), so every
                     # export's training is compared with PyTorch's train mode.
                     ref_train="ref-train")
        try:
            export(model, inputs, path, spec, input_names)
            om = onnx.load(path)
            mapping, unmapped = map_initializers(om, dict(model.named_parameters()))
            entry.update(inputs=[i.name for i in om.graph.input], outputs=[o.name for o in om.graph.output],
                         params=mapping, unmapped_params=unmapped, bytes=os.path.getsize(path))
            if mode == "train" and bn and bn_training_mode(om) == 0:
                entry["ref"] = "ref-eval"
                entry["note"] = ("the exporter wrote train-mode BatchNormalization with the running statistics "
                                 "(training_mode 0): its inference is PyTorch's eval mode")
        except Exception as e:   # recorded: an exporter that fails is a corpus fact, not ours to fix
            if os.path.exists(path):
                os.remove(path)
            entry.update(export_error=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
        meta["models"].append(entry)
    model.load_state_dict(state)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return meta


def meta_ce(kind):
    return not kind.startswith("mse")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests",
                                                        "data", "real"))
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--refs-only", action="store_true", help="recompute the references, keep the exported models")
    a = ap.parse_args()
    if a.list:
        for k, (b, kind, extras) in ARCHS.items():
            print(k, kind, " ".join(["ts17-train", "dynamo18-train"] + extras))
        return 0
    torch.set_num_threads(2)
    names = [n for n in a.only.split(",") if n] or list(ARCHS)
    os.makedirs(a.out, exist_ok=True)
    import onnxscript
    import timm
    import torchvision
    import transformers
    with open(os.path.join(a.out, "VERSIONS.json"), "w") as f:
        json.dump({m.__name__: m.__version__ for m in (torch, torchvision, timm, transformers, onnx, onnxscript,
                                                      np)}, f, indent=1, sort_keys=True)
    for n in names:
        meta = (refs_only if a.refs_only else build_one)(n, os.path.normpath(a.out))
        sizes = " ".join(f"{m['file']}:{m.get('bytes', 0) // 1024}K" if "bytes" in m else
                         f"{m['file']}:FAILED({m['export_error'][:80]})" for m in meta["models"])
        print(f"{n}: {meta['n_params']} params  {sizes}  f32err {meta['refs']['train']['torch_f32_err']}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
