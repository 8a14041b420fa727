#!/usr/bin/env python3
"""Full-size real exports against onnxruntime and PyTorch, in one run:
torchvision ResNet-50 at 224x224, Hugging Face BERT-base and GPT-2 small,
with random seeded weights, exported by PyTorch's TorchScript exporter
(opset 17, TrainingMode.TRAINING, no constant folding) as
bench/models/real/gen.py exports the corpus.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python3 bench/experiments/real_fullsize.py [--dtrexec build/dtrexec] [--threads 1]
            [--cases resnet50,bert-base,gpt2] [--infer-batch 1] [--train-batch 4]
            [--seq 128] [--repeat 5] [--steps 3] [--rounds 2] [--json OUT] [--md OUT]
    python3 bench/experiments/real_fullsize.py --render OUT.json --md OUT.md   (table only)

Development only: needs torch, torchvision, transformers and onnxruntime
(pip), never installed by setup.sh or CI.

Per case:
  - inference: the eval-mode export, batch --infer-batch, run by dtrexec
    (its --stats step_seconds after one warm-up run that also applies its
    graph fusion) and by onnxruntime (CPUExecutionProvider, the same
    threads, sequential) alternately --rounds times, outputs compared
    (rtol 1e-3, atol 1e-4 of runners.compare);
  - training: the train-mode export, batch --train-batch, plain SGD (lr
    --lr), cross-entropy (the LM's over the last axis, [N, T] labels), by
    dtrexec (`--train --steps 1+steps`, the first step untimed) and by
    PyTorch on the very module that was exported (zero_grad, forward, loss,
    backward, step; torch.set_num_threads), alternately --rounds times.
    The losses of the first two steps are compared (the second checks the
    gradients and the update) against PyTorch's float64 run of the same
    steps, for dtrexec and for PyTorch's float32 run alike: at batch 4 a
    training-mode BatchNorm network's gradients are ill-conditioned in
    float32 (ResNet-50's layer4 gradients differ by ~15% between float32
    and float64 in PyTorch itself), so agreement means dtrexec is within
    max(1e-4, 3x PyTorch float32's error) of float64.

ratio = dtrexec / peer (median seconds per run or step). Dropout is off
(probability 0) in the transformers so that both sides compute the same
function; BatchNorm trains in batch-statistics mode on both.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)  # bench/
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(BENCH_DIR, "models", "real"))

import runners  # noqa: E402

LR = 0.01


def build(name, seq):
    """(module, kind, vocab or classes): random weights, dropout off,
    perturbed by gen.py's seeded noise so that no two initializers are
    equal (the exporters would merge BatchNorm's all-ones scales and the
    zero biases into shared tensors, which then train as one)."""
    import torch
    from gen import perturb
    model, kind, vocab = build_module(name)
    perturb(model, torch.Generator().manual_seed(2))
    return model, kind, vocab


def build_module(name):
    if name == "resnet50":
        import torchvision
        return torchvision.models.resnet50(num_classes=1000), "image", 1000
    from gen import HFLogits
    if name == "bert-base":
        from transformers import BertConfig, BertForSequenceClassification
        c = BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=2,
                       attn_implementation="eager")
        return HFLogits(BertForSequenceClassification(c)), "tokens", c.vocab_size
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        c = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
                       attn_implementation="eager")
        return HFLogits(GPT2LMHeadModel(c)), "lm", c.vocab_size
    raise SystemExit(f"unknown case '{name}' (resnet50, bert-base, gpt2)")


def inputs_for(kind, batch, seq, vocab, gen):
    import torch
    if kind == "image":
        return [torch.randn(batch, 3, 224, 224, generator=gen)], ["input"]
    ids = torch.randint(0, vocab, (batch, seq), generator=gen)
    # An attention mask with the last sequence half padded (GPT-2 without
    # one takes a path through aten::diff that TorchScript cannot export).
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[-1, seq // 2:] = 0
    return [ids, mask], ["input_ids", "attention_mask"]


def labels_for(kind, out, gen):
    import torch
    if kind == "lm":
        return torch.randint(0, out.shape[-1], tuple(out.shape[:-1]), generator=gen)
    return torch.randint(0, out.shape[1], (out.shape[0],), generator=gen)


def loss_of(kind, out, labels):
    import torch.nn.functional as F
    if kind == "lm":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), labels.reshape(-1))
    return F.cross_entropy(out, labels)


def export(model, inputs, names, path, train):
    import torch
    model.train(train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(inputs), path, dynamo=False, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL,
                          do_constant_folding=False, input_names=names, output_names=["output"])


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def infer_case(a, name, model, kind, vocab, wd, gen):
    import torch
    ins, names = inputs_for(kind, a.infer_batch, a.seq, vocab, gen)
    path = os.path.join(wd, f"{name}-eval.onnx")
    if not os.path.exists(path):
        export(model, ins, names, path, train=False)
    feeds = {n: t.numpy() for n, t in zip(names, ins)}
    with torch.no_grad():
        model.eval()
        torch_out = model(*ins).numpy()
    dt_times, ort_times, ok_all, worst = [], [], True, 0.0
    for _ in range(a.rounds):
        d_out, d_t, _ = runners.run_dtrexec(a.dtrexec, path, feeds, threads=a.threads, repeat=a.repeat,
                                            warmup=1, work_dir=os.path.join(wd, "run"), timeout=a.timeout)
        o_out, o_t = runners.run_onnxruntime(path, feeds, threads=a.threads, repeat=a.repeat, warmup=1)
        ok, _, mrel, msg = runners.compare(o_out, d_out)
        if not ok:
            print(f"  {name}: dtrexec and onnxruntime differ: {msg}", file=sys.stderr)
        ok_all &= ok
        worst = max(worst, mrel)
        dt_times += d_t
        ort_times += o_t
    vs_torch = float(np.abs(d_out[0] - torch_out).max() / max(np.abs(torch_out).max(), 1e-30))
    return dict(case=name, batch=a.infer_batch, dtrexec_s=med(dt_times), ort_s=med(ort_times),
                ratio=med(dt_times) / med(ort_times), agree=ok_all, max_rel_vs_ort=worst,
                max_rel_vs_torch=vs_torch, runs=len(dt_times))


def torch_steps(model, kind, ins, labels, steps, threads):
    import torch
    torch.set_num_threads(threads)
    model.train(True)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses, times = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_of(kind, model(*ins), labels)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(float(loss.detach()))
    return losses, times


def train_case(a, name, model, kind, vocab, wd, gen):
    import copy
    import torch
    ins, names = inputs_for(kind, a.train_batch, a.seq, vocab, gen)
    path = os.path.join(wd, f"{name}-train.onnx")
    start = copy.deepcopy(model.state_dict())
    model.train(True)
    with torch.no_grad():
        labels = labels_for(kind, model(*ins), gen)
    model.load_state_dict(start)
    if not os.path.exists(path):
        export(model, ins, names, path, train=True)
        model.load_state_dict(start)
    feeds = {n: t.numpy() for n, t in zip(names, ins)}
    steps = 1 + a.steps
    d_times, t_times, d_losses, t_losses = [], [], None, None
    for _ in range(a.rounds):
        st = runners.run_dtrexec_train(a.dtrexec, path, feeds, steps, labels=labels.numpy(), threads=a.threads,
                                       work_dir=os.path.join(wd, "train"), timeout=a.timeout,
                                       extra_args=["--optimizer", "sgd", "--lr", repr(LR),
                                                   "--loss", "cross-entropy", "--seed", "1"])
        d_times += list(st["step_seconds"])[1:]
        d_losses = st["loss"]
        model.load_state_dict(start)
        t_losses, tt = torch_steps(model, kind, ins, labels, steps, a.threads)
        model.load_state_dict(start)
        t_times += tt[1:]
    m64 = copy.deepcopy(model).double()
    m64.zero_grad(set_to_none=True)
    ins64 = [t.double() if t.is_floating_point() else t for t in ins]
    f64_losses, _ = torch_steps(m64, kind, ins64, labels, 2, a.threads)
    del m64

    def rel(xs):
        return max(abs(x - r) / max(abs(r), 1e-30) for x, r in zip(xs[:2], f64_losses))
    d_err, t_err = rel(d_losses), rel(t_losses)
    return dict(case=name, batch=a.train_batch, dtrexec_s=med(d_times), torch_s=med(t_times),
                ratio=med(d_times) / med(t_times), loss_dtrexec=d_losses[:2], loss_torch=t_losses[:2],
                loss_float64=f64_losses, dtrexec_rel_err=d_err, torch_f32_rel_err=t_err,
                agree=d_err <= max(1e-4, 3 * t_err), steps=len(d_times), peak_bytes=st.get("peak_bytes"))


def render(res):
    """The result page: what one run saw, with its command line and load."""
    lines = ["# Full-size real exports: dtrexec against onnxruntime and PyTorch", "",
             f"Generated by `bench/experiments/real_fullsize.py` at commit {res.get('commit')}, {res['threads']} thread(s), "
             f"load average {res['load']:.1f} at the start and {res.get('load_end', float('nan')):.1f} at the end "
             "(the machine was shared: the ratios compare runs interleaved under the same load, the absolute "
             "times are not a measure of either side alone).", "",
             "TorchScript exporter, opset 17, random seeded weights (perturbed so that no initializers merge), "
             "dropout off. Inference: the eval-mode export; training: the train-mode export, plain SGD, "
             "cross-entropy (the LM's over the last axis with [N, T] labels).", "",
             "## Inference", "", "| model | batch | dtrexec ms | onnxruntime ms | ratio | outputs agree (rtol 1e-3, "
             "atol 1e-4) | max rel. vs PyTorch |", "|---|---|---|---|---|---|---|"]
    for r in res["infer"]:
        lines.append(f"| {r['case']} | {r['batch']} | {r['dtrexec_s'] * 1e3:.1f} | {r['ort_s'] * 1e3:.1f} | "
                     f"{r['ratio']:.2f} | {'yes' if r['agree'] else 'NO'} | {r['max_rel_vs_torch']:.1e} |")
    lines += ["", "## One training step", "", "| model | batch | dtrexec s/step | PyTorch s/step | ratio | "
              "loss step 1, 2 (dtrexec) | PyTorch float32 | PyTorch float64 | rel. error vs float64: dtrexec / "
              "PyTorch float32 | agrees |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["train"]:
        f = lambda xs: ", ".join(f"{x:.6f}" for x in xs)  # noqa: E731
        lines.append(f"| {r['case']} | {r['batch']} | {r['dtrexec_s']:.3f} | {r['torch_s']:.3f} | {r['ratio']:.2f} | "
                     f"{f(r['loss_dtrexec'])} | {f(r['loss_torch'])} | {f(r['loss_float64'])} | "
                     f"{r['dtrexec_rel_err']:.1e} / {r['torch_f32_rel_err']:.1e} | "
                     f"{'yes' if r['agree'] else 'NO'} |")
    lines += ["", "ratio = dtrexec / peer, medians of the timed runs (inference: repeats after one warm-up run "
              "per round; training: steps after the first per round), the two sides alternating each round. "
              "A training step's second loss checks the gradients and the update; at batch 4 ResNet-50's "
              "training-mode BatchNorm makes them ill-conditioned in float32, so both float32 runs are "
              "compared with PyTorch's float64 run of the same steps.", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtrexec", default=os.path.join(BENCH_DIR, "..", "build", "dtrexec"))
    ap.add_argument("--cases", default="resnet50,bert-base,gpt2")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--infer-batch", type=int, default=1)
    ap.add_argument("--train-batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5, help="timed inference runs per side and round")
    ap.add_argument("--steps", type=int, default=3, help="timed training steps per side and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip", default="", help="infer or train: leave that half out")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "dtrx-fullsize"))
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--md", metavar="OUT", help="also write the result page (markdown)")
    ap.add_argument("--render", metavar="JSON", help="only write --md from an earlier --json")
    a = ap.parse_args()
    if a.render:
        with open(a.render) as f:
            res = json.load(f)
        with open(a.md, "w") as f:
            f.write(render(res))
        return 0
    import torch
    for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if v in os.environ:
            print(f"warning: {v} is set; OpenBLAS will not use its fastest kernel", file=sys.stderr)
    os.makedirs(a.work_dir, exist_ok=True)
    res = dict(infer=[], train=[], threads=a.threads, commit=runners.source_commit(),
               load=os.getloadavg()[0])
    for name in a.cases.split(","):
        torch.manual_seed(0)
        model, kind, vocab = build(name, a.seq)
        gen = torch.Generator().manual_seed(1)
        if "infer" not in a.skip:
            r = infer_case(a, name, model, kind, vocab, a.work_dir, gen)
            res["infer"].append(r)
            print(f"infer {name} b{r['batch']}: dtrexec {r['dtrexec_s'] * 1e3:.1f} ms, onnxruntime "
                  f"{r['ort_s'] * 1e3:.1f} ms, ratio {r['ratio']:.2f}, agree {r['agree']} "
                  f"(max rel {r['max_rel_vs_ort']:.1e} vs ort, {r['max_rel_vs_torch']:.1e} vs torch)", flush=True)
        if "train" not in a.skip:
            r = train_case(a, name, model, kind, vocab, a.work_dir, gen)
            res["train"].append(r)
            print(f"train {name} b{r['batch']}: dtrexec {r['dtrexec_s']:.3f} s/step, PyTorch "
                  f"{r['torch_s']:.3f} s/step, ratio {r['ratio']:.2f}; losses dtrexec {r['loss_dtrexec']} "
                  f"torch {r['loss_torch']} float64 {r['loss_float64']} (relative error vs float64: dtrexec "
                  f"{r['dtrexec_rel_err']:.1e}, PyTorch float32 {r['torch_f32_rel_err']:.1e})", flush=True)
    res["load_end"] = os.getloadavg()[0]
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    if a.md:
        with open(a.md, "w") as f:
            f.write(render(res))
    bad = [r["case"] for r in res["infer"] + res["train"] if not r["agree"]]
    if bad:
        print(f"disagreement: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
