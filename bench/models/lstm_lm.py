"""LSTM language model: embedding, stacked LSTM layers, projection to the
vocabulary.

input_ids int64 [N, L] -> Gather embedding [N, L, E] -> Transpose to the
ONNX LSTM's [L, N, E] layout -> per layer an LSTM node (forward direction,
zero initial state; output Y [L, 1, N, H]) and a Squeeze of the direction
axis -> Transpose back to [N, L, H] -> MatMul + Add -> Reshape to "logits"
[N*L, vocab], flattened the way PyTorch language models feed their loss
(logits.view(-1, V)): 2-D logits make dtrexec's --loss auto a cross-entropy
against labels int64 [N*L] (next-token ids, row n*L + t for sequence n,
position t). Weights are uniform in +-1/sqrt(H), PyTorch's LSTM
initialization.
"""

import numpy as np
from onnx import TensorProto

from _builder import META_INT_HIGH, Builder

FULL = dict(seq=64, layers=2, embed=512, hidden=512, vocab=10000)
TINY = dict(seq=6, layers=2, embed=16, hidden=16, vocab=50)


def build(batch=1, seed=0, seq=64, layers=2, embed=512, hidden=512, vocab=10000):
    b = Builder("lstm_lm", seed)
    b.metadata[META_INT_HIGH] = f"input_ids={vocab}"
    ids = b.input("input_ids", [batch, seq], dtype=TensorProto.INT64)
    emb = b.uniform("embedding.weight", (vocab, embed), 0.1)
    x = b.node("Gather", [emb, ids], "embedding", axis=0)
    x = b.node("Transpose", [x], "embedding.to_time_major", perm=[1, 0, 2])
    axes = b.ints("lstm.direction_axis", [1])
    bound = 1.0 / np.sqrt(hidden)
    cin = embed
    for i in range(layers):
        p = f"lstm{i}"
        # ONNX gate order is i, o, f, c (PyTorch's is i, f, g, o): random
        # weights make the order immaterial here.
        w = b.uniform(f"{p}.W", (1, 4 * hidden, cin), bound)
        r = b.uniform(f"{p}.R", (1, 4 * hidden, hidden), bound)
        bias = b.uniform(f"{p}.B", (1, 8 * hidden), bound)
        y = b.node("LSTM", [x, w, r, bias], p, outputs=["Y"], hidden_size=hidden, direction="forward")[0]
        x = b.node("Squeeze", [y, axes], f"{p}.squeeze")
        cin = hidden
    x = b.node("Transpose", [x], "decoder.to_batch_major", perm=[1, 0, 2])
    x = b.linear(x, "decoder", hidden, vocab)
    x = b.node("Reshape", [x, b.ints("decoder.flat_shape", [-1, vocab])], "decoder.flatten")
    b.output(x, rename="logits")
    return b.build(f"lstm_lm: {layers} LSTM layers, embed {embed}, hidden {hidden}, vocab {vocab}, seq {seq}")
