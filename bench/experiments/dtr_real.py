#!/usr/bin/env python3
"""DTR on real exports (issue 21): dtrexec's Dynamic Tensor Rematerialization
against PyTorch's torch.utils.checkpoint.checkpoint_sequential, on the very
modules PyTorch trains, exported with the TorchScript exporter (opset 17,
TrainingMode.TRAINING, no constant folding) as bench/models/real/gen.py
and bench/experiments/real_fullsize.py export them.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE \\
        /work/.venv-corpus/bin/python bench/experiments/dtr_real.py [--dtrexec build/dtrexec]
            [--models resnet18,resnet50,efficientnet_b0,vit,bert,gpt2,lstm,mlp]
            [--batch N] [--image-size S] [--seq T] [--layers K] [--width D]
            [--steps 3] [--threads 1] [--resolution 0.01] [--max-batch BYTES]
            [--out bench/results/dtr_real]

Development only: needs torch, torchvision and timm (pip), never in CI.
Defaults are full size (per-model batch and size below; --batch etc.
override them for every model); a 2-core shared machine wants much less,
see bench/results/dtr_real.md for the settings of the committed figures.

Per model (each one an nn.Sequential of its natural blocks: torchvision
ResNet's stem, every block of layer1..4, head; EfficientNet's feature
stages, head; timm ViT's patch embedding, every block, head; the
BERT-/GPT-2-shaped transformers' embeddings, every block, head; the LSTM
LM's embedding, LSTM, head; the MLP's layers), one thread, random seeded
weights, the same inputs, labels (cross-entropy; the LM's over the last
axis with [N, T] labels), plain SGD (lr --lr) on both sides:

  - PyTorch plain (zero_grad, forward, loss, backward, step) and with
    checkpoint_sequential(use_reentrant=False) at 2, 4 and round(sqrt(n))
    segments: peak = the highest point of torch.profiler's memory timeline
    of one step (train_bench._profiler_peak: every tensor, parameters and
    gradients included), time = the median of --steps steps after one
    warm-up step;
  - dtrexec unbudgeted, then at each PyTorch peak given as bytes
    (`--budget <bytes>`; budgets at or above dtrexec's unbudgeted peak are
    run too: the arena and DTR are still on), then its lowest feasible
    budget, bisected on the ratio of its unbudgeted peak to --resolution
    (probes of 2 steps; the budget passed as bytes = floor(ratio * peak),
    which is what `--budget Rx` computes, minus its throwaway measuring
    session); exit 2 = infeasible, a probe over --probe-timeout counts as
    infeasible too (thrashing) and is marked so. dtrexec's peak is its
    --stats peak_bytes (the arena's high-water mark), its time the median
    of step_seconds after the first step;
  - checks, printed loudly and marked in the table: every budgeted run's
    losses equal the unbudgeted run's bit for bit (--stats prints them
    with 9 significant digits, which round-trips float32), and peak_bytes
    <= the budget. PyTorch's first loss beside dtrexec's is informational
    (float32 kernels differ).
  - --max-batch BYTES (optional, slow): the DTR paper's Table 1: the
    largest batch that trains within BYTES, for dtrexec (DTR at that
    budget), PyTorch plain and PyTorch's best checkpoint_sequential
    setting; doubling then bisection on the batch, a new export per batch.

Output: OUT.csv (one row per model and method), OUT.md (the tables, the
settings, the load average, every dtrexec failure message seen), OUT.svg
(one panel per model: peak memory on x, step time on y, one line per
method) and OUT.json (everything); OUT.notes.md, when it exists, is
appended to OUT.md.
"""

import argparse
import copy
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import OrderedDict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH_DIR)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(BENCH_DIR, "models", "real"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gen import perturb  # noqa: E402  (seeded noise: no two initializers equal, so none merge)
from real_fullsize import export as onnx_export  # noqa: E402
from train_bench import _profiler_peak  # noqa: E402
import runners  # noqa: E402

ALL_MODELS = ("resnet18", "resnet50", "efficientnet_b0", "vit", "bert", "gpt2", "lstm", "mlp")
# Full-size defaults per model: batch, image size or sequence, layers, width.
DEFAULTS = {
    "resnet18": dict(batch=32, image_size=224),
    "resnet50": dict(batch=16, image_size=224),
    "efficientnet_b0": dict(batch=16, image_size=224),
    "vit": dict(batch=16, image_size=224, layers=12, width=768, patch=16),   # ViT-B/16
    "bert": dict(batch=8, seq=512, layers=12, width=768, vocab=30522),        # BERT-base
    "gpt2": dict(batch=4, seq=1024, layers=12, width=768, vocab=50257),       # GPT-2 small
    "lstm": dict(batch=32, seq=128, layers=2, width=1024, vocab=10000),
    "mlp": dict(batch=256, layers=8, width=4096, inputs=1024),
}


# ---- models as nn.Sequential of their blocks ---------------------------------


class Fn(nn.Module):
    """A block made of a function over modules it owns (a stem or a head)."""

    def __init__(self, fn, **mods):
        super().__init__()
        self.fn = fn
        for k, m in mods.items():
            setattr(self, k, m)

    def forward(self, x):
        return self.fn(self, x)


def resnet(name, c):
    import torchvision
    m = getattr(torchvision.models, name)(num_classes=1000)
    stem = Fn(lambda s, x: s.maxpool(s.relu(s.bn1(s.conv1(x)))), conv1=m.conv1, bn1=m.bn1, relu=m.relu,
              maxpool=m.maxpool)
    head = Fn(lambda s, x: s.fc(torch.flatten(s.avgpool(x), 1)), avgpool=m.avgpool, fc=m.fc)
    blocks = [b for layer in (m.layer1, m.layer2, m.layer3, m.layer4) for b in layer]
    return nn.Sequential(stem, *blocks, head), "image"


def efficientnet(c):
    import torchvision
    m = torchvision.models.efficientnet_b0(num_classes=1000, dropout=0.0, stochastic_depth_prob=0.0)
    head = Fn(lambda s, x: s.classifier(torch.flatten(s.avgpool(x), 1)), avgpool=m.avgpool,
              classifier=m.classifier)
    return nn.Sequential(*m.features, head), "image"


def vit(c):
    from timm.models.vision_transformer import VisionTransformer
    w = c["width"]
    m = VisionTransformer(img_size=c["image_size"], patch_size=c["patch"], embed_dim=w, depth=c["layers"],
                          num_heads=max(1, w // 64), num_classes=1000)
    stem = Fn(lambda s, x: s.v.norm_pre(s.v._pos_embed(s.v.patch_embed(x))), v=m)
    # The stem holds the whole timm module (for _pos_embed): its blocks and
    # head are called by the Sequential, not by the stem.
    head = Fn(lambda s, x: s.v.forward_head(s.v.norm(x)), v=m)
    return _Shared(stem, list(m.blocks), head), "image"


class _Shared(nn.Sequential):
    """nn.Sequential over blocks whose stem/head share one parent module:
    registered once (parameters are not duplicated)."""

    def __init__(self, stem, blocks, head):
        super().__init__()
        v = stem.v
        self.add_module("0", _Call(lambda x: stem.fn(stem, x)))
        for i, b in enumerate(blocks):
            self.add_module(str(i + 1), _Call(b))
        self.add_module(str(len(blocks) + 1), _Call(lambda x: head.fn(head, x)))
        self.v = v   # owns every parameter

    def forward(self, x):
        for k, m in self._modules.items():
            if k != "v":
                x = m(x)
        return x

    def __len__(self):
        return len(self._modules) - 1

    def __iter__(self):
        return iter(m for k, m in self._modules.items() if k != "v")

    def children(self):
        return iter(self)


class _Call(nn.Module):
    """Calls f without registering it (its parameters belong to the parent)."""

    def __init__(self, f):
        super().__init__()
        self.__dict__["f"] = f

    def forward(self, x):
        return self.__dict__["f"](x)


class Block(nn.Module):
    """A transformer block: BERT-shaped (post-LN, bidirectional) or GPT-2-shaped
    (pre-LN, causal); exact GELU, MLP 4x, no dropout."""

    def __init__(self, d, heads, seq, causal):
        super().__init__()
        self.h, self.causal = heads, causal
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        if causal:
            self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).triu(1), persistent=False)

    def attn(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d // self.h))
        if self.causal:
            s = s.masked_fill(self.mask[:t, :t], -1e9)
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(n, t, d)
        return self.proj(y)

    def mlp(self, x):
        return self.fc2(F.gelu(self.fc1(x)))

    def forward(self, x):
        if self.causal:   # GPT-2: pre-LN
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))   # BERT: post-LN
        return self.ln2(x + self.mlp(x))


class Embed(nn.Module):
    def __init__(self, vocab, seq, d, norm):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(0.02 * torch.randn(1, seq, d))
        self.ln = nn.LayerNorm(d) if norm else nn.Identity()

    def forward(self, ids):
        return self.ln(self.tok(ids) + self.pos[:, :ids.shape[1]])


def transformer(c, causal):
    d, t = c["width"], c["seq"]
    blocks = [Block(d, max(1, d // 64), t, causal) for _ in range(c["layers"])]
    if causal:   # GPT-2: final LN, LM head (untied) -> [N, T, V]
        head = Fn(lambda s, x: s.out(s.ln(x)), ln=nn.LayerNorm(d), out=nn.Linear(d, c["vocab"], bias=False))
        kind = "lm"
    else:        # BERT: pooler on the first token, 2 classes
        head = Fn(lambda s, x: s.cls(torch.tanh(s.pool(x[:, 0]))), pool=nn.Linear(d, d), cls=nn.Linear(d, 2))
        kind = "tokens"
    return nn.Sequential(Embed(c["vocab"], t, d, norm=not causal), *blocks, head), kind


class LSTMBody(nn.Module):
    def __init__(self, d, layers):
        super().__init__()
        self.rnn = nn.LSTM(d, d, num_layers=layers, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


def lstm(c):
    d = c["width"]
    return nn.Sequential(nn.Embedding(c["vocab"], d), LSTMBody(d, c["layers"]), nn.Linear(d, c["vocab"])), "lm"


def mlp(c):
    d = c["width"]
    layers = [nn.Sequential(nn.Linear(c["inputs"] if i == 0 else d, d), nn.ReLU()) for i in range(c["layers"])]
    return nn.Sequential(*layers, nn.Linear(d, 1000)), "vector"


def build(name, c):
    if name in ("resnet18", "resnet50"):
        return resnet(name, c)
    if name == "efficientnet_b0":
        return efficientnet(c)
    if name == "vit":
        return vit(c)
    if name in ("bert", "gpt2"):
        return transformer(c, causal=(name == "gpt2"))
    if name == "lstm":
        return lstm(c)
    if name == "mlp":
        return mlp(c)
    raise SystemExit(f"unknown model '{name}' ({', '.join(ALL_MODELS)})")


def make_data(kind, c, gen):
    n = c["batch"]
    if kind == "image":
        x = torch.randn(n, 3, c["image_size"], c["image_size"], generator=gen)
        return x, torch.randint(0, 1000, (n,), generator=gen), "input"
    if kind == "vector":
        return torch.randn(n, c["inputs"], generator=gen), torch.randint(0, 1000, (n,), generator=gen), "input"
    ids = torch.randint(0, c["vocab"], (n, c["seq"]), generator=gen)
    if kind == "lm":
        return ids, torch.randint(0, c["vocab"], (n, c["seq"]), generator=gen), "input_ids"
    return ids, torch.randint(0, 2, (n,), generator=gen), "input_ids"


def loss_of(kind, out, y):
    if kind == "lm":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.cross_entropy(out, y)


def describe(name, c):
    keys = [k for k in ("batch", "image_size", "patch", "seq", "layers", "width", "vocab", "inputs") if k in c]
    return " ".join(f"{k}={c[k]}" for k in keys)


# ---- PyTorch -------------------------------------------------------------------


def torch_method(model, kind, x, y, segments, a, wd):
    """One method (segments None = plain): peak from the profiler, median time."""
    from torch.utils.checkpoint import checkpoint_sequential
    model.train(True)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    losses = []

    def step():
        opt.zero_grad(set_to_none=True)
        if segments:
            out = checkpoint_sequential(model, segments, x, use_reentrant=False)
        else:
            out = model(x)
        loss = loss_of(kind, out, y)
        loss.backward()
        opt.step()
        return float(loss.detach())

    times = []
    for i in range(1 + a.steps):
        t0 = time.perf_counter()
        losses.append(step())
        times.append(time.perf_counter() - t0)
    peak = _profiler_peak(step, wd)
    return dict(peak_bytes=int(peak), step_s=statistics.median(times[1:]), loss=losses)


# ---- dtrexec -------------------------------------------------------------------


def run_dtrexec(a, model_path, feeds, labels_path, steps, budget=None, timeout=None):
    """(rc, stats or None, stderr, wall seconds); rc None: timed out."""
    wd = os.path.dirname(model_path)
    stats_path = os.path.join(wd, "stats.json")
    if os.path.exists(stats_path):
        os.remove(stats_path)
    cmd = [a.dtrexec, model_path]
    for k, v in feeds.items():
        cmd += ["--input", f"{k}={v}"]
    cmd += ["--labels", labels_path, "--train", "--steps", str(steps), "--threads", str(a.threads),
            "--optimizer", "sgd", "--lr", repr(a.lr), "--loss", "cross-entropy", "--seed", "1",
            "--stats", stats_path, "--quiet"]
    if budget is not None:
        cmd += ["--budget", str(budget)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, None, err, time.perf_counter() - t0
    wall = time.perf_counter() - t0
    st = None
    if p.returncode == 0 and os.path.exists(stats_path):
        with open(stats_path) as f:
            st = json.load(f)
    return p.returncode, st, p.stderr, wall


def last_line(err):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no message)"


def dtr_row(st, base, budget):
    steps = st.get("step_seconds", [])
    t = statistics.median(steps[1:]) if len(steps) > 1 else (steps[0] if steps else float("nan"))
    r = dict(peak_bytes=st["peak_bytes"], budget_bytes=budget, step_s=t, loss=st.get("loss", []),
             remats=st.get("remats"), evictions=st.get("evictions"))
    if base is not None:
        r["losses_equal"] = r["loss"] == base["loss"]
        r["peak_ok"] = budget is None or st["peak_bytes"] <= budget
    return r


def lowest_ratio(a, model_path, feeds, labels_path, peak, probe_timeout, failures):
    """Bisection on the ratio of the unbudgeted peak: (lowest feasible ratio,
    its bytes, the probes)."""
    lo, hi, probes = 0.0, 1.0, []
    while hi - lo > a.resolution + 1e-12:
        mid = round((lo + hi) / 2, 4)
        b = int(math.floor(mid * peak))
        rc, st, err, wall = run_dtrexec(a, model_path, feeds, labels_path, 2, budget=b, timeout=probe_timeout)
        ok = rc == 0
        probes.append(dict(ratio=mid, budget_bytes=b, rc=rc, wall_s=round(wall, 2),
                           msg=None if ok else ("timeout after %.0f s" % probe_timeout if rc is None
                                                else last_line(err))))
        if not ok:
            failures.append(dict(ratio=mid, budget_bytes=b, rc=rc, msg=probes[-1]["msg"]))
        print(f"    probe {mid:.4f}x ({b} B): {'ok' if ok else 'FAIL rc=%s: %s' % (rc, probes[-1]['msg'])} "
              f"[{wall:.1f} s]", flush=True)
        if ok:
            hi = mid
        else:
            lo = mid
    return hi, int(math.floor(hi * peak)), probes


# ---- one model -----------------------------------------------------------------


def export_model(model, x, in_name, path):
    state = copy.deepcopy(model.state_dict())
    onnx_export(model, [x], [in_name], path, train=True)
    model.load_state_dict(state)   # tracing ran the forward: BatchNorm's running stats moved


def run_model(name, c, a, root):
    torch.manual_seed(0)
    model, kind = build(name, c)
    perturb(model, torch.Generator().manual_seed(2))
    gen = torch.Generator().manual_seed(1)
    x, y, in_name = make_data(kind, c, gen)
    wd = os.path.join(root, name)
    os.makedirs(wd, exist_ok=True)
    path = os.path.join(wd, "train.onnx")
    start = copy.deepcopy(model.state_dict())
    export_model(model, x, in_name, path)
    xp, yp = os.path.join(wd, "x.npy"), os.path.join(wd, "y.npy")
    np.save(xp, x.numpy())
    np.save(yp, y.numpy().astype(np.int64))
    feeds = {in_name: xp}
    n = len(model)
    segs = sorted({s for s in (2, 4, int(round(math.sqrt(n)))) if 1 < s <= n})
    res = dict(model=name, setting=describe(name, c), blocks=n, segments=segs, onnx_bytes=os.path.getsize(path),
               load_start=os.getloadavg()[0], torch={}, dtrexec={}, failures=[], violations=[])
    print(f"{name} ({res['setting']}, {n} blocks, ONNX {res['onnx_bytes'] / 2**20:.1f} MiB)", flush=True)

    def torch_run(label, s):
        model.load_state_dict(start)
        r = torch_method(model, kind, x, y, s, a, wd)
        res["torch"][label] = r
        print(f"  torch {label}: peak {r['peak_bytes'] / 2**20:.1f} MiB, {r['step_s']:.3f} s/step, "
              f"loss {r['loss'][0]:.6f}", flush=True)

    def dtr_run(label, budget, steps=None, timeout=None):
        rc, st, err, wall = run_dtrexec(a, path, feeds, yp, steps or 1 + a.steps, budget=budget,
                                        timeout=timeout or a.timeout)
        if rc != 0:
            msg = "timeout" if rc is None else last_line(err)
            res["dtrexec"][label] = dict(budget_bytes=budget, rc=rc, msg=msg)
            res["failures"].append(dict(ratio=None, budget_bytes=budget, rc=rc, msg=msg, where=label))
            print(f"  dtrexec {label}: FAILED rc={rc}: {msg}", flush=True)
            return None
        r = dtr_row(st, res["dtrexec"].get("unbudgeted"), budget)
        res["dtrexec"][label] = r
        bad = []
        if r.get("losses_equal") is False:
            bad.append(f"losses differ from unbudgeted: {r['loss']} vs {res['dtrexec']['unbudgeted']['loss']}")
        if r.get("peak_ok") is False:
            bad.append(f"peak {r['peak_bytes']} > budget {budget}")
        for b in bad:
            res["violations"].append(f"{label}: {b}")
            print(f"  !!! VIOLATION {name} dtrexec {label}: {b}", flush=True)
        print(f"  dtrexec {label}: peak {r['peak_bytes'] / 2**20:.1f} MiB"
              f"{'' if budget is None else ' (budget %.1f MiB)' % (budget / 2**20)}, {r['step_s']:.3f} s/step, "
              f"remats {r['remats']}, loss {r['loss'][0]:.6f}", flush=True)
        return r

    # Interleaved: dtrexec and PyTorch alternate so both see the same load.
    base = dtr_run("unbudgeted", None)
    torch_run("plain", None)
    if base is None:
        return res
    for s in segs:
        torch_run(f"ckpt{s}", s)
        dtr_run(f"at-ckpt{s}", res["torch"][f"ckpt{s}"]["peak_bytes"])
    dtr_run("at-plain", res["torch"]["plain"]["peak_bytes"])
    probe_timeout = a.probe_timeout or max(60.0, 30 * 2 * base["step_s"])
    ratio, b, probes = lowest_ratio(a, path, feeds, yp, base["peak_bytes"], probe_timeout, res["failures"])
    res["lowest_ratio"], res["lowest_bytes"], res["probes"] = ratio, b, probes
    dtr_run("lowest", b)
    if a.max_batch:
        res["max_batch"] = max_batch(name, c, a, root)
    res["load_end"] = os.getloadavg()[0]
    return res


def max_batch(name, c, a, root):
    """Largest batch within a.max_batch bytes: dtrexec (DTR), PyTorch plain and
    PyTorch's best checkpoint_sequential segments."""
    limit = a.max_batch
    cache = {}

    def probe(batch):
        if batch in cache:
            return cache[batch]
        cc = dict(c, batch=batch)
        torch.manual_seed(0)
        model, kind = build(name, cc)
        perturb(model, torch.Generator().manual_seed(2))
        x, y, in_name = make_data(kind, cc, torch.Generator().manual_seed(1))
        wd = os.path.join(root, f"{name}-b{batch}")
        os.makedirs(wd, exist_ok=True)
        path = os.path.join(wd, "train.onnx")
        export_model(model, x, in_name, path)
        np.save(os.path.join(wd, "x.npy"), x.numpy())
        np.save(os.path.join(wd, "y.npy"), y.numpy().astype(np.int64))
        rc, _, _, _ = run_dtrexec(a, path, {in_name: os.path.join(wd, "x.npy")}, os.path.join(wd, "y.npy"), 2,
                                  budget=limit, timeout=a.probe_timeout or 600)
        a1 = dict(a.__dict__, steps=1)
        ns = argparse.Namespace(**a1)
        n = len(model)
        plain = torch_method(model, kind, x, y, None, ns, wd)["peak_bytes"]
        best = min(torch_method(model, kind, x, y, s, ns, wd)["peak_bytes"]
                   for s in sorted({2, 4, int(round(math.sqrt(n)))}) if 1 < s <= n)
        cache[batch] = dict(dtrexec=rc == 0, plain=plain <= limit, ckpt=best <= limit)
        print(f"    max-batch {name} b{batch}: {cache[batch]}", flush=True)
        return cache[batch]

    out = {}
    for who in ("dtrexec", "plain", "ckpt"):
        lo, hi = 0, 1
        while probe(hi)[who] and hi < 4096:
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if probe(mid)[who]:
                lo = mid
            else:
                hi = mid
        out[who] = lo
    return dict(limit_bytes=limit, **out)


# ---- output --------------------------------------------------------------------


METHOD_ORDER = ["plain", "ckpt2", "ckpt4"]


def rows_of(res):
    rows = []
    tb = res["torch"].get("plain")
    db = res["dtrexec"].get("unbudgeted")
    for label, r in res["torch"].items():
        rows.append(dict(model=res["model"], setting=res["setting"], system="pytorch", method=label,
                         budget_bytes="", peak_bytes=r["peak_bytes"], step_s=round(r["step_s"], 5),
                         slowdown=round(r["step_s"] / tb["step_s"], 3) if tb else "", loss0=r["loss"][0],
                         losses_equal="", peak_ok="", remats="", status="ok"))
    for label, r in res["dtrexec"].items():
        if "rc" in r:
            rows.append(dict(model=res["model"], setting=res["setting"], system="dtrexec", method=label,
                             budget_bytes=r["budget_bytes"], peak_bytes="", step_s="", slowdown="", loss0="",
                             losses_equal="", peak_ok="", remats="", status=f"FAILED rc={r['rc']}: {r['msg']}"))
            continue
        bad = r.get("losses_equal") is False or r.get("peak_ok") is False
        rows.append(dict(model=res["model"], setting=res["setting"], system="dtrexec", method=label,
                         budget_bytes=r["budget_bytes"] if r["budget_bytes"] is not None else "",
                         peak_bytes=r["peak_bytes"], step_s=round(r["step_s"], 5),
                         slowdown=round(r["step_s"] / db["step_s"], 3) if db else "",
                         loss0=r["loss"][0] if r["loss"] else "", losses_equal=r.get("losses_equal", ""),
                         peak_ok=r.get("peak_ok", ""), remats=r.get("remats"),
                         status="VIOLATION" if bad else "ok"))
    return rows


def mib(b):
    return f"{b / 2**20:.1f}" if isinstance(b, (int, float)) and b != "" else "–"


def render_md(allres, a, meta):
    L = ["# DTR on real exports: dtrexec against PyTorch checkpointing", "",
         f"Generated by `bench/experiments/dtr_real.py` at commit {meta['commit']}, {a.threads} thread(s), "
         f"torch {meta.get('torch', torch.__version__)}, load average between {meta['load_start']:.2f} and "
         f"{meta['load_end']:.2f} (start/end of each run) (a shared 2-core machine: dtrexec and PyTorch runs alternate per "
         "model, so time ratios are fairer than absolute times; memory figures are unaffected by load).", "",
         f"Command(s): `{meta['command']}`", "",
         "Peaks: PyTorch's is the highest point of torch.profiler's memory timeline of one step (every tensor: "
         "parameters, gradients, activations, temporaries); dtrexec's its `--stats` peak_bytes (the arena's "
         "high-water mark, also every tensor). MiB = 2^20 bytes. Times: median s/step after the first step. "
         "Slowdown: against the same system's unbudgeted/plain step.", ""]
    L += ["## Summary", "",
          "| model | setting | PyTorch plain MiB | ckpt peaks MiB (segments) | dtrexec unbudgeted MiB | dtrexec "
          "lowest ratio (MiB) | s/step: PyTorch plain / dtrexec unbudgeted / dtrexec lowest | checks |",
          "|---|---|---|---|---|---|---|---|"]
    for res in allres:
        t, d = res["torch"], res["dtrexec"]
        ck = ", ".join(f"{mib(t[k]['peak_bytes'])} ({k[4:]})" for k in t if k.startswith("ckpt"))
        low = d.get("lowest", {})
        lowtxt = (f"{res['lowest_ratio']:.3f}x ({mib(res['lowest_bytes'])})" if "lowest_ratio" in res else "–")
        times = " / ".join(f"{x['step_s']:.3f}" if x and "step_s" in x else "–"
                           for x in (t.get("plain"), d.get("unbudgeted"), low))
        checks = "ok" if not res["violations"] else "**VIOLATION: " + "; ".join(res["violations"]) + "**"
        L.append(f"| {res['model']} | {res['setting']} | {mib(t.get('plain', {}).get('peak_bytes', ''))} | {ck} | "
                 f"{mib(d.get('unbudgeted', {}).get('peak_bytes', ''))} | {lowtxt} | {times} | {checks} |")
    L += ["", "## At equal memory", "",
          "dtrexec given each PyTorch peak as its budget in bytes.", "",
          "| model | PyTorch method | peak MiB | PyTorch s/step (slowdown) | dtrexec peak MiB under that budget | "
          "dtrexec s/step (slowdown) | remats | losses = unbudgeted | peak ≤ budget |",
          "|---|---|---|---|---|---|---|---|---|"]
    for res in allres:
        t, d = res["torch"], res["dtrexec"]
        tb, db = t.get("plain"), d.get("unbudgeted")
        for k, r in t.items():
            dr = d.get(f"at-{k}")
            if dr is None:
                continue
            ts = f"{r['step_s']:.3f} ({r['step_s'] / tb['step_s']:.2f}x)"
            if "rc" in dr:
                L.append(f"| {res['model']} | {k} | {mib(r['peak_bytes'])} | {ts} | FAILED rc={dr['rc']}: "
                         f"{dr['msg']} | | | | |")
                continue
            L.append(f"| {res['model']} | {k} | {mib(r['peak_bytes'])} | {ts} | {mib(dr['peak_bytes'])} | "
                     f"{dr['step_s']:.3f} ({dr['step_s'] / db['step_s']:.2f}x) | {dr['remats']} | "
                     f"{'yes' if dr['losses_equal'] else '**NO**'} | {'yes' if dr['peak_ok'] else '**NO**'} |")
        low = d.get("lowest")
        if low and "rc" not in low:
            L.append(f"| {res['model']} | (dtrexec lowest {res['lowest_ratio']:.3f}x) | | | {mib(low['peak_bytes'])} | "
                     f"{low['step_s']:.3f} ({low['step_s'] / db['step_s']:.2f}x) | {low['remats']} | "
                     f"{'yes' if low['losses_equal'] else '**NO**'} | {'yes' if low['peak_ok'] else '**NO**'} |")
    if any("max_batch" in r for r in allres):
        L += ["", "## Largest batch within a fixed memory (DTR paper, Table 1)", "",
              "| model | memory MiB | dtrexec (DTR) | PyTorch plain | PyTorch best checkpoint_sequential |",
              "|---|---|---|---|---|"]
        for res in allres:
            m = res.get("max_batch")
            if m:
                L.append(f"| {res['model']} | {mib(m['limit_bytes'])} | {m['dtrexec']} | {m['plain']} | {m['ckpt']} |")
    L += ["", "## dtrexec failures seen (bisection probes and budgeted runs)", ""]
    seen = False
    for res in allres:
        for f in res["failures"]:
            seen = True
            r = f"{f['ratio']:.4f}x, " if f.get("ratio") is not None else ""
            L.append(f"- {res['model']}: {r}{f['budget_bytes']} B, rc={f['rc']}: `{f['msg']}`")
    if not seen:
        L.append("- none")
    L.append("")
    return "\n".join(L)


def render_svg(allres):
    """One panel per model: peak MiB on x, s/step on y; PyTorch (plain, then
    checkpointing by peak) and dtrexec (unbudgeted and every budgeted run, by
    peak) as lines."""
    W, H, cols = 360, 260, 3
    rows = (len(allres) + cols - 1) // cols
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * cols}" height="{H * rows + 30}" '
           'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="18" font-size="13">DTR on real exports: peak tensor memory (MiB, x) against '
           'step time (s, y); blue PyTorch (plain + checkpoint_sequential), red dtrexec (unbudgeted + DTR budgets)'
           '</text>']
    for i, res in enumerate(allres):
        ox, oy = (i % cols) * W, 30 + (i // cols) * H
        series = []
        tp = [(r["peak_bytes"] / 2**20, r["step_s"], k) for k, r in res["torch"].items()]
        dp = [(r["peak_bytes"] / 2**20, r["step_s"], k) for k, r in res["dtrexec"].items() if "rc" not in r]
        series = [("#1f5fbf", sorted(tp)), ("#c0392b", sorted(dp))]
        pts = tp + dp
        if not pts:
            continue
        x0, x1 = 0, max(p[0] for p in pts) * 1.05
        y0, y1 = 0, max(p[1] for p in pts) * 1.1
        px = lambda v: ox + 50 + (v - x0) / (x1 - x0 or 1) * (W - 70)  # noqa: E731
        py = lambda v: oy + H - 40 - (v - y0) / (y1 - y0 or 1) * (H - 70)  # noqa: E731
        out.append(f'<text x="{ox + 50}" y="{oy + 16}" font-weight="bold">{res["model"]}</text>')
        out.append(f'<text x="{ox + 50}" y="{oy + 28}" font-size="9">{res["setting"]}</text>')
        out.append(f'<line x1="{px(x0)}" y1="{py(y0)}" x2="{px(x1)}" y2="{py(y0)}" stroke="black"/>')
        out.append(f'<line x1="{px(x0)}" y1="{py(y0)}" x2="{px(x0)}" y2="{py(y1)}" stroke="black"/>')
        for k in range(5):
            xv, yv = x0 + (x1 - x0) * k / 4, y0 + (y1 - y0) * k / 4
            out.append(f'<text x="{px(xv):.1f}" y="{py(y0) + 14:.1f}" text-anchor="middle" font-size="9">'
                       f'{xv:.0f}</text>')
            out.append(f'<text x="{px(x0) - 4:.1f}" y="{py(yv) + 3:.1f}" text-anchor="end" font-size="9">'
                       f'{yv:.2f}</text>')
        out.append(f'<text x="{ox + W / 2}" y="{oy + H - 8}" text-anchor="middle" font-size="9">peak MiB</text>')
        for color, ps in series:
            if len(ps) > 1:
                out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                           % (color, " ".join(f"{px(p[0]):.1f},{py(p[1]):.1f}" for p in ps)))
            for p in ps:
                out.append(f'<circle cx="{px(p[0]):.1f}" cy="{py(p[1]):.1f}" r="3" fill="{color}">'
                           f'<title>{p[2]}: {p[0]:.1f} MiB, {p[1]:.3f} s</title></circle>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_outputs(allres, a, meta):
    rows = [r for res in allres for r in rows_of(res)]
    with open(a.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["model"])
        w.writeheader()
        w.writerows(rows)
    md = render_md(allres, a, meta)
    if os.path.exists(a.out + ".notes.md"):   # hand-written observations, kept across re-renders
        with open(a.out + ".notes.md") as f:
            md += "\n" + f.read()
    with open(a.out + ".md", "w") as f:
        f.write(md)
    with open(a.out + ".svg", "w") as f:
        f.write(render_svg(allres))
    with open(a.out + ".json", "w") as f:
        json.dump(dict(meta=meta, results=allres), f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtrexec", default=os.path.join(REPO, "build", "dtrexec"))
    ap.add_argument("--models", default=",".join(ALL_MODELS))
    for k in ("batch", "image-size", "seq", "layers", "width", "patch", "vocab"):
        ap.add_argument("--" + k, type=int, help="override every model's default")
    ap.add_argument("--set", action="append", default=[], metavar="MODEL.KEY=N",
                    help="override one model's setting (e.g. vit.batch=32)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps after one warm-up step")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--resolution", type=float, default=0.01, help="bisection resolution on the ratio")
    ap.add_argument("--probe-timeout", type=float, default=0, help="s per bisection probe (0: 60 s or 30 steps)")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--max-batch", type=float, default=0, metavar="BYTES",
                    help="also find the largest batch within BYTES (slow)")
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "dtrx-dtr-real"))
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "results", "dtr_real"))
    ap.add_argument("--render", metavar="JSON[,JSON...]",
                    help="only rewrite the outputs (--out) from earlier OUT.json files, merged")
    a = ap.parse_args()
    if a.render:   # one or more earlier runs (comma-separated), merged in order
        runs = []
        for path in a.render.split(","):
            with open(path) as f:
                runs.append(json.load(f))
        meta = dict(runs[0]["meta"], load_start=min(r["meta"]["load_start"] for r in runs),
                    load_end=max(r["meta"]["load_end"] for r in runs),
                    command="` and `".join(r["meta"]["command"] for r in runs))
        write_outputs([x for r in runs for x in r["results"]], a, meta)
        return 0
    for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if v in os.environ:
            print(f"warning: {v} is set; OpenBLAS will not use its fastest kernel", file=sys.stderr)
    a.max_batch = int(a.max_batch)
    torch.set_num_threads(a.threads)
    warnings.filterwarnings("ignore")
    os.makedirs(a.work_dir, exist_ok=True)
    meta = dict(commit=runners.source_commit(), load_start=os.getloadavg()[0],
                command="python3 bench/experiments/dtr_real.py " + " ".join(sys.argv[1:]), torch=torch.__version__)
    overrides = {k.replace("-", "_"): getattr(a, k.replace("-", "_"))
                 for k in ("batch", "image-size", "seq", "layers", "width", "patch", "vocab")}
    allres = []
    for name in [m for m in a.models.split(",") if m]:
        if name not in DEFAULTS:
            raise SystemExit(f"unknown model '{name}' ({', '.join(ALL_MODELS)})")
        c = dict(DEFAULTS[name])
        for k, v in overrides.items():
            if v is not None and (k in c or k == "batch"):
                c[k] = v
        for s in a.set:
            key, val = s.split("=")
            m, k = key.split(".")
            if m == name:
                c[k.replace("-", "_")] = int(val)
        try:
            allres.append(run_model(name, c, a, a.work_dir))
        except Exception as e:   # one model that cannot be built or exported does not stop the others
            print(f"{name}: FAILED: {type(e).__name__}: {e}", flush=True)
            allres.append(dict(model=name, setting=describe(name, c), torch={}, dtrexec={}, violations=[],
                               failures=[dict(ratio=None, budget_bytes="", rc="python",
                                              msg=f"{type(e).__name__}: {str(e)[:300]}")]))
        meta["load_end"] = os.getloadavg()[0]
        write_outputs(allres, a, meta)   # after each model: partial results survive an interrupted run
    bad = [v for r in allres for v in r["violations"]]
    if bad:
        print("VIOLATIONS:\n  " + "\n  ".join(bad), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
