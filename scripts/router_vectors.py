"""Write src/concerto/orchestrator/router_vectors.npz: the router's vectors of every text the
built-in packs declare (agents' descriptions, capabilities and examples; intents'
descriptions and examples), so a first question in a new data dir embeds only the question.

Run after changing what a built-in agent or intent declares (a test says when):

    .venv/bin/python scripts/router_vectors.py
"""

from __future__ import annotations

import numpy as np

from concerto.agents.loader import load_packs
from concerto.nlp.embeddings import LocalEmbedder
from concerto.orchestrator.intents import load_intents
from concerto.orchestrator.router import Router
from concerto.orchestrator.semantic import SHIPPED, text_key
from concerto.settings import Settings


def declared_texts() -> list[str]:
    """Every routing text of the built-in packs, in a stable order, without repeats."""
    packs = load_packs()
    registry = packs.registry(Settings())
    intents = load_intents(set(registry.names()), packs.intent_files())
    targets = Router.targets(registry.infos(), intents)
    return sorted({text for target in targets for text in target.texts})


def main() -> None:
    texts = declared_texts()
    embedder = LocalEmbedder()
    vectors = embedder.embed_bulk(texts)
    np.savez_compressed(
        SHIPPED,
        keys=np.array([text_key(t) for t in texts]),
        vectors=vectors.astype(np.float32),
        model_id=np.array(embedder.model_id),
    )
    print(f"wrote {SHIPPED} ({len(texts)} texts, {SHIPPED.stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
