"""Transformer encoder with BERT-base layer shapes (hidden 768, 12 heads,
FFN 3072; 12 layers and sequence 128 by default).

input_ids int64 [N, L] -> word embedding Gather + position embedding Gather
(position ids are a constant 0..L-1) -> LayerNormalization; then per layer
(post-norm, as BERT): Q/K/V MatMul+Add, Reshape [N,L,heads,d] and Transpose
to [N,heads,L,d] (K to [N,heads,d,L]), MatMul, scale by 1/sqrt(d), Softmax,
MatMul with V, Transpose + Reshape back to [N,L,hidden], output MatMul+Add,
residual Add, LayerNormalization; FFN MatMul+Add, Gelu, MatMul+Add, residual
Add, LayerNormalization. Output "last_hidden_state" [N, L, hidden]. No
attention mask (every position is a real token).

Gelu: by default the exact erf form 0.5*x*(1+erf(x/sqrt 2)) written with
Div/Erf/Add/Mul at opset 17 like every other model here (the Gelu operator
exists only from opset 20); gelu="op" emits the Gelu operator instead and
raises the model to opset 20 / IR version 9.
"""

import numpy as np
from onnx import TensorProto

from _builder import META_INT_HIGH, Builder

FULL = dict(seq=128, layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, max_pos=512, gelu="erf")
TINY = dict(seq=8, layers=2, hidden=32, heads=2, ffn=64, vocab=100, max_pos=16, gelu="erf")


def build(batch=1, seed=0, seq=128, layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, max_pos=512, gelu="erf"):
    if hidden % heads:
        raise ValueError(f"transformer: hidden {hidden} not divisible by heads {heads}")
    if seq > max_pos:
        raise ValueError(f"transformer: seq {seq} exceeds max_pos {max_pos}")
    if gelu not in ("erf", "op"):
        raise ValueError(f"transformer: gelu must be 'erf' or 'op', got '{gelu}'")
    d = hidden // heads
    b = Builder("transformer", seed, **(dict(opset=20, ir_version=9) if gelu == "op" else {}))
    b.metadata[META_INT_HIGH] = f"input_ids={vocab}"
    ids = b.input("input_ids", [batch, seq], dtype=TensorProto.INT64)

    word = b.small("embeddings.word_embeddings.weight", (vocab, hidden))
    pos = b.small("embeddings.position_embeddings.weight", (max_pos, hidden))
    pos_ids = b.ints("embeddings.position_ids", np.arange(seq))
    we = b.node("Gather", [word, ids], "embeddings.word", axis=0)
    pe = b.node("Gather", [pos, pos_ids], "embeddings.position", axis=0)
    x = b.node("Add", [we, pe], "embeddings.add")
    x = b.layernorm(x, "embeddings.LayerNorm", hidden)

    split = b.ints("attention.split_heads_shape", [0, 0, heads, d])
    merge = b.ints("attention.merge_heads_shape", [0, 0, hidden])
    scale = b.floats("attention.scale", np.float32(1.0 / np.sqrt(d)))
    for i in range(layers):
        p = f"encoder.layer.{i}"
        a = f"{p}.attention"
        heads_of = {}
        for name, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])):
            t = b.linear(x, f"{a}.self.{name}", hidden, hidden)
            t = b.node("Reshape", [t, split], f"{a}.self.{name}.split_heads")
            heads_of[name] = b.node("Transpose", [t], f"{a}.self.{name}.transpose", perm=perm)
        s = b.node("MatMul", [heads_of["query"], heads_of["key"]], f"{a}.self.scores")
        s = b.node("Mul", [s, scale], f"{a}.self.scale")
        s = b.node("Softmax", [s], f"{a}.self.softmax", axis=-1)
        c = b.node("MatMul", [s, heads_of["value"]], f"{a}.self.context")
        c = b.node("Transpose", [c], f"{a}.self.context.transpose", perm=[0, 2, 1, 3])
        c = b.node("Reshape", [c, merge], f"{a}.self.context.merge_heads")
        c = b.linear(c, f"{a}.output.dense", hidden, hidden)
        x = b.node("Add", [c, x], f"{a}.output.residual")
        x = b.layernorm(x, f"{a}.output.LayerNorm", hidden)

        h = b.linear(x, f"{p}.intermediate.dense", hidden, ffn)
        if gelu == "op":
            h = b.node("Gelu", [h], f"{p}.intermediate.gelu")
        else:
            h = b.gelu_erf(h, f"{p}.intermediate.gelu")
        h = b.linear(h, f"{p}.output.dense", ffn, hidden)
        x = b.node("Add", [h, x], f"{p}.output.residual")
        x = b.layernorm(x, f"{p}.output.LayerNorm", hidden)
    b.output(x, rename="last_hidden_state")
    return b.build(f"transformer encoder: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, "
                   f"seq {seq}, vocab {vocab}, gelu {gelu}")
