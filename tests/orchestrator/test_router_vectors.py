"""The router's shipped vectors (router_vectors.npz): every text a built-in pack declares is
in it, each vector is what the embedder makes of the text, and they are used only by the
model that made them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from concerto.nlp.embeddings import Embedder, default_embedder
from concerto.orchestrator.semantic import SHIPPED, SemanticIndex, Target, shipped_vectors, text_key

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return default_embedder()


def _declared_texts() -> list[str]:
    spec = importlib.util.spec_from_file_location("router_vectors", ROOT / "scripts" / "router_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["router_vectors"] = module
    spec.loader.exec_module(module)
    return module.declared_texts()


def test_every_built_in_text_is_shipped(embedder: Embedder) -> None:
    shipped = shipped_vectors(embedder)
    missing = [t for t in _declared_texts() if text_key(t) not in shipped]
    assert not missing, f"{len(missing)} declared texts have no shipped vector (e.g. {missing[0]!r}); run: " + (
        ".venv/bin/python scripts/router_vectors.py"
    )


def test_shipped_vectors_are_the_embedders(embedder: Embedder) -> None:
    texts = _declared_texts()[::40]
    shipped = shipped_vectors(embedder)
    fresh = embedder.embed(texts)
    for text, vector in zip(texts, fresh, strict=True):
        assert np.allclose(shipped[text_key(text)], vector, atol=1e-4), text


class _OtherModel:
    dimension = 384
    model_id = "another-model"

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded += texts
        return np.ones((len(texts), self.dimension), np.float32) / np.sqrt(self.dimension)


def test_another_model_embeds_everything_itself() -> None:
    assert SHIPPED.exists()
    texts = _declared_texts()[:3]
    other = _OtherModel()
    assert shipped_vectors(other) == {}
    index = SemanticIndex([Target("a", tuple(texts))], other)
    index.rank("anything")
    assert set(texts) <= set(other.embedded)


def test_texts_not_shipped_are_embedded_and_shipped_ones_are_not(embedder: Embedder) -> None:
    class Counting:
        dimension = embedder.dimension
        model_id = getattr(embedder, "model_id", None)

        def __init__(self) -> None:
            self.embedded: list[str] = []

        def embed(self, texts: list[str]) -> np.ndarray:
            self.embedded += texts
            return embedder.embed(texts)

    counting = Counting()
    shipped_text = _declared_texts()[0]
    index = SemanticIndex([Target("a", (shipped_text,)), Target("b", ("a text no pack declares",))], counting)
    best = index.rank("a text no pack declares")[0]
    assert best.name == "b"
    assert "a text no pack declares" in counting.embedded and shipped_text not in counting.embedded


@pytest.mark.parametrize("broken", [b"", b"not a zip"])
def test_a_broken_file_is_ignored(tmp_path: Path, embedder: Embedder, broken: bytes) -> None:
    path = tmp_path / "router_vectors.npz"
    path.write_bytes(broken)
    assert shipped_vectors(embedder, path) == {}
