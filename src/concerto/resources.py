"""Shared, lazily created resources of one orchestrator (embedder, HTTP clients, stores).

Agents of different packs may need the same expensive object (the embedding model, an
HTTP client); `Resources` creates each once, on first use, and closes them all together.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder
    from concerto.settings import Settings

T = TypeVar("T")


class Resources:
    """A keyed cache of shared objects, closed by `aclose()`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._items: dict[str, Any] = {}

    def get(self, key: str, factory: Callable[[], T]) -> T:
        """Return the object stored under `key`, creating it with `factory` the first time."""
        if key not in self._items:
            self._items[key] = factory()
        return self._items[key]

    def put(self, key: str, value: Any) -> None:
        """Store (or replace) an object, e.g. a test double for the embedder."""
        self._items[key] = value

    @property
    def embedder(self) -> Embedder:
        """The local sentence embedder, loaded on first use and shared by all agents."""
        from concerto.nlp.embeddings import default_embedder

        return self.get("embedder", default_embedder)

    async def aclose(self) -> None:
        """Close every object that has `aclose()` or `close()`."""
        items, self._items = list(self._items.values()), {}
        for item in items:
            for name in ("aclose", "close"):
                closer = getattr(item, name, None)
                if closer is None:
                    continue
                result = closer()
                if inspect.isawaitable(result):
                    await asyncio.shield(result)
                break
