"""The numpy MiniLM reproduces sentence-transformers' all-MiniLM-L6-v2 vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from concerto.nlp.embeddings import LocalEmbedder
from concerto.nlp.minilm import MiniLM, batches

REFERENCE = json.loads((Path(__file__).parent / "minilm_reference.json").read_text())


def test_matches_reference_vectors_from_sentence_transformers() -> None:
    # minilm_reference.json was computed with sentence-transformers 6.2 on the same weights.
    ours = MiniLM().encode(REFERENCE["texts"])
    ref = np.array(REFERENCE["vectors"], dtype=np.float32)
    cosines = (ours * ref).sum(1)
    assert cosines.min() > 0.9999, cosines


def test_batch_and_single_agree_and_vectors_are_unit_length() -> None:
    model = MiniLM()
    batch = model.encode(["short", "a much longer sentence with many more tokens in it"])
    single = model.encode(["short"])
    assert np.allclose(batch[0], single[0], atol=1e-5)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1, atol=1e-5)


def test_long_text_is_truncated_not_rejected() -> None:
    assert MiniLM().encode(["word " * 2000]).shape == (1, 384)


def test_embedder_cache_returns_same_vectors() -> None:
    emb = LocalEmbedder(cache_size=2)
    a = emb.embed(["x y", "z"])
    b = emb.embed(["z", "x y", "new"])
    assert np.allclose(a[0], b[1]) and np.allclose(a[1], b[0])
    assert emb.embed([]).shape == (0, 384)


def test_many_texts_of_different_lengths_come_back_in_order() -> None:
    # One call sorts the texts by length into packed batches; each vector must still be the
    # one its text gets alone, in the order given.
    model = MiniLM()
    texts = [("word " * n).strip() + f" {n}" for n in (40, 3, 17, 3, 90, 1, 25, 8)] + ["", "é ü 漢字"]
    together = model.encode(texts)
    alone = np.concatenate([model.encode([t]) for t in texts])
    assert np.allclose(together, alone, atol=2e-5)


def test_batches_cover_every_text_once_within_the_token_budget() -> None:
    lengths = [5, 30, 12, 12, 256, 7, 30, 1, 64, 64, 64]
    groups = batches(lengths, budget=128)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        longest = max(lengths[i] for i in group)
        assert len(group) == 1 or len(group) * longest <= 128
    flat = [lengths[i] for g in groups for i in g]
    assert flat == sorted(flat)  # similar lengths together: little padding
