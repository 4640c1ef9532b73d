"""Vectors of metric descriptions kept in the data dir across processes.

Each `concerto ask` is a new process; embedding the few dozen metric help texts a
question is compared with costs a second or more on a busy machine, while the texts
rarely change. They are stored in `<data_dir>/metrics/embeddings.npz`, keyed by text.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder

log = logging.getLogger(__name__)
MAX_TEXTS = 20000


class PersistentEmbeddings:
    """An `embed(texts)` that reads known texts from disk and embeds only new ones."""

    def __init__(self, embedder: Embedder, path: Path) -> None:
        self.embedder = embedder
        self.path = path
        self._vectors: dict[str, np.ndarray] | None = None

    def _load(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            self._vectors = {}
            try:
                with np.load(self.path, allow_pickle=False) as data:
                    texts, vectors = data["texts"], data["vectors"]
                    if vectors.ndim == 2 and vectors.shape[1] == self.embedder.dimension:
                        self._vectors = {str(t): v for t, v in zip(texts, vectors, strict=True)}
            except (OSError, KeyError, ValueError) as exc:
                if self.path.exists():
                    log.warning("ignoring unreadable embedding cache %s: %s", self.path, exc)
        return self._vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text, in order."""
        known = self._load()
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            for text, vec in zip(missing, self.embedder.embed(missing), strict=True):
                known[text] = vec
            self._save(known)
        if not texts:
            return np.zeros((0, self.embedder.dimension), np.float32)
        return np.stack([known[t] for t in texts])

    def _save(self, vectors: dict[str, np.ndarray]) -> None:
        if len(vectors) > MAX_TEXTS:
            return  # a catalog this large changes too often to be worth keeping
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, texts=np.array(list(vectors)), vectors=np.stack(list(vectors.values())))
            os.replace(tmp, self.path)
        except OSError as exc:  # a read-only data dir only costs speed
            log.warning("cannot write the embedding cache %s: %s", self.path, exc)
