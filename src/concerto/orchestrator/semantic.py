"""Semantic matching of a question against what each routing target declares.

A target is an agent (its description, capabilities and example questions) or a named
intent of the intent table (its description and examples). Vectors of the declared
texts are cached on disk, so a cold `concerto ask` embeds only the question; the built-in
packs' texts come embedded in the package (`router_vectors.npz`, written by
`scripts/router_vectors.py`), so even the first question in a new data dir embeds only
what a user's own packs declare.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from concerto.nlp.embeddings import Embedder

SHIPPED = Path(__file__).with_name("router_vectors.npz")


def text_key(text: str) -> str:
    """How a declared text is found among the shipped vectors."""
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def shipped_vectors(embedder: Embedder, path: Path = SHIPPED) -> dict[str, np.ndarray]:
    """The packaged vectors by text key, when they were made by `embedder`'s model (else none)."""
    model = getattr(embedder, "model_id", None)
    if model is None or not path.exists():
        return {}
    try:
        with np.load(path) as data:
            if str(data["model_id"]) != model or data["vectors"].shape[1] != embedder.dimension:
                return {}
            return dict(zip((str(k) for k in data["keys"]), data["vectors"], strict=True))
    except (OSError, ValueError, KeyError, EOFError):  # a damaged file only costs the embedding
        return {}


# A question may ask for several things at once ("the weather and the time in Seattle").
# Clauses are split on coordinating words so each part can find its own agent.
_CLAUSES = re.compile(r"\s*(?:[,;]|\band also\b|\band\b|\balso\b|\bplus\b|&)\s*", re.I)


@dataclass(frozen=True)
class Target:
    """Something the router can choose: an agent or a named intent."""

    name: str
    texts: tuple[str, ...]


@dataclass(frozen=True)
class Match:
    name: str
    score: float


class SemanticIndex:
    """Cosine similarity of a question to every target's texts; a target scores its best text."""

    def __init__(self, targets: list[Target], embedder: Embedder, cache_dir: Path | None = None) -> None:
        self.targets = targets
        self._embedder = embedder
        self._texts = [t for target in targets for t in target.texts]
        self._owner = np.array([i for i, target in enumerate(targets) for _ in target.texts], dtype=np.int64)
        self._cache_dir = cache_dir
        self._matrix_: np.ndarray | None = None
        self._lock = threading.Lock()

    @property
    def _matrix(self) -> np.ndarray:
        # Computed on the first semantic question: a structured one never loads the model.
        with self._lock:  # questions routed in parallel threads build it once
            if self._matrix_ is None:
                self._matrix_ = self._vectors(self._texts, self._cache_dir)
            return self._matrix_

    def _vectors(self, texts: list[str], cache_dir: Path | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._embedder.dimension), np.float32)
        key = hashlib.sha256("\x1f".join(texts).encode()).hexdigest()[:20]
        path = cache_dir / f"router-{key}.npy" if cache_dir else None
        if path is not None and path.exists():
            try:
                cached = np.load(path)
                if cached.shape == (len(texts), self._embedder.dimension):
                    return cached
            except (OSError, ValueError):
                pass
        matrix = self._embed_declared(texts)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                with partial.open("wb") as fh:
                    np.save(fh, matrix)
                partial.replace(path)  # atomic: another process never reads half a file
            except OSError:
                pass  # a read-only data dir only costs the cache
        return matrix

    def _embed_declared(self, texts: list[str]) -> np.ndarray:
        """Vectors of declared texts: the shipped ones, then the rest embedded in one batch
        with every core (the embedder's bulk path, when it has one)."""
        known = shipped_vectors(self._embedder)
        missing = list(dict.fromkeys(t for t in texts if text_key(t) not in known))
        if missing:
            bulk = getattr(self._embedder, "embed_bulk", None)
            fresh = bulk(missing) if callable(bulk) else self._embedder.embed(missing)
            known.update(zip((text_key(t) for t in missing), fresh, strict=True))
        return np.stack([known[text_key(t)] for t in texts]).astype(np.float32, copy=False)

    def rank(self, text: str) -> list[Match]:
        """Targets by descending similarity to `text`."""
        return self.rank_many([text])[0]

    def rank_many(self, texts: list[str]) -> list[list[Match]]:
        if not self.targets:
            return [[] for _ in texts]
        sims = self._embedder.embed(texts) @ self._matrix.T  # (questions, target texts)
        out = []
        for row in sims:
            best = np.full(len(self.targets), -1.0, dtype=np.float32)
            np.maximum.at(best, self._owner, row)
            order = np.argsort(-best)
            out.append([Match(self.targets[i].name, float(best[i])) for i in order])
        return out


# "A, then B" / "A and then B" / "A; after that B": B works on A's result.
_STEPS = re.compile(
    r"\s*(?:[,;]\s*)?(?:\band then\b|\bthen\b|\bafter that\b|\bafterwards\b|\bfollowed by\b)[,:]?\s*", re.I
)


def steps(question: str) -> list[str]:
    """The steps of a question that asks for one thing after another ("segment customers,
    then show the trend of each segment"); one step when it does not."""
    return [p.strip(" ,;.") for p in _STEPS.split(question) if p and p.strip(" ,;.")]


def clauses(question: str) -> list[str]:
    """The parts of a question joined by "and", commas and the like.

    A part of one word is an item of a list ("Seattle, Boston and Gotham", "top and bottom
    states"), not a request of its own, so it stays with the part it belongs to.
    """
    parts = [p.strip() for p in _CLAUSES.split(question) if p and p.strip()]
    requests = [p for p in parts if len(p.split()) > 1]
    return requests if len(requests) > 1 else [question.strip()]
