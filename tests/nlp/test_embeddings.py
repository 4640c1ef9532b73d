"""The shared embedder: a load's bulk embedding gives the same vectors as questions do, and
never holds questions back for longer than one chunk."""

from __future__ import annotations

import threading

import numpy as np

from concerto.nlp.embeddings import BULK_CHUNK, LocalEmbedder


def test_bulk_vectors_match_question_vectors_in_order() -> None:
    embedder = LocalEmbedder()
    texts = [f"{'word ' * (i % 7)}customer number {i}" for i in range(BULK_CHUNK + 37)]
    bulk = embedder.embed_bulk(texts)
    assert bulk.shape == (len(texts), embedder.dimension)
    single = embedder.embed(texts[:5] + texts[-5:])
    assert np.allclose(bulk[:5], single[:5], atol=1e-5) and np.allclose(bulk[-5:], single[5:], atol=1e-5)


def test_a_question_is_answered_while_a_large_load_is_still_embedding() -> None:
    """Before, `embed_bulk` held the lock for the whole load: a question's routing waited for
    all of it (minutes for a large upload on a busy machine)."""
    embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    texts = [f"company {i} makes {'industrial ' * (i % 5)}pumps and valves for site {i * 7}" for i in range(3000)]
    started = threading.Event()
    done = threading.Event()

    def load() -> None:
        started.set()
        embedder.embed_bulk(texts)
        done.set()

    worker = threading.Thread(target=load)
    worker.start()
    started.wait()
    while not embedder._lock.locked() and not done.is_set():  # the load holds its first chunk
        threading.Event().wait(0.001)
    vector = embedder.embed(["which customers are at risk?"])
    answered_during_load = not done.is_set()
    worker.join()
    assert vector.shape == (1, embedder.dimension)
    assert answered_during_load, "the question waited for the whole load"
