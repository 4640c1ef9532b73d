"""The embedder interface and the default local one (all-MiniLM-L6-v2, offline)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol, runtime_checkable

import numpy as np

BULK_CHUNK = 128  # texts encoded per hold of the lock in `embed_bulk` (about 0.1-0.3 s of work)
QUESTION_TURN_S = 5.0  # the longest a load's chunk waits for questions to go first (no starvation)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors; cosine similarity is then a dot product."""

    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """One float32 row per text."""
        ...


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the installed package, with an in-memory cache per text.

    The model loads on first use (about 0.2 s), never at import time. Calls are serialised
    by a lock, so the router can embed in a worker thread without blocking the event loop.
    """

    dimension = 384
    model_id = "all-MiniLM-L6-v2"  # which vectors it makes (the router's shipped ones must match)

    def __init__(self, cache_size: int = 4096) -> None:
        self._model: object | None = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._turns = threading.Condition()  # questions waiting for the lock go before a load's next chunk
        self._questions = 0

    def _encoder(self):  # type: ignore[no-untyped-def]
        if self._model is None:
            from concerto.nlp.minilm import MiniLM

            self._model = MiniLM()
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._turns:
            self._questions += 1
        try:
            with self._lock:
                return self._embed(texts)
        finally:
            with self._turns:
                self._questions -= 1
                if not self._questions:
                    self._turns.notify_all()

    def embed_bulk(self, texts: list[str]) -> np.ndarray:
        """Many texts at once (a load), without filling the question cache.

        One BLAS thread, like questions: the encoder sorts the texts into batches of similar
        length, and on a busy 2-core machine two threads made the demo table's 300
        descriptions take 13-18 s instead of 2 s (OpenBLAS threads wait on each other when
        other processes hold the cores; BENCHMARKS.md, "MiniLM batches").
        """
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Sorted by length first, so each chunk still batches texts of similar length; the lock
        # is taken per chunk, so a question waits for one chunk (a fraction of a second), not for
        # the whole load (a large upload held it for minutes, and every question's routing with it).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BULK_CHUNK):
            part = order[start : start + BULK_CHUNK]
            with self._turns:  # questions first: a released lock is not handed over by itself
                self._turns.wait_for(lambda: not self._questions, timeout=QUESTION_TURN_S)
            with self._lock:
                out[part] = self._encoder().encode([texts[i] for i in part])
        return out

    def _embed(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = self._encoder().encode(missing)
            for text, vec in zip(missing, vectors, strict=True):
                self._cache[text] = vec
        out = np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)
        for text in texts:
            self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return out.astype(np.float32, copy=False)


def default_embedder() -> Embedder:
    """The embedder every agent shares unless a test or setting provides another."""
    return LocalEmbedder()
