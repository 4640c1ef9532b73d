"""The names a KPI store holds (KPIs and departments), and the phrases that describe them.

A description such as "attrition rate: employee turnover, staff leaving, resignations"
is embedded whole (that vector also places the records in the store) and phrase by
phrase: a short question span like "staff turnover" is close to one short phrase, while
its similarity to the whole description is diluted by the other words.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


DEPARTMENT_WORDS = ("department", "team", "dept", "division", "unit", "group")


def humanize(name: str) -> str:
    """`home-loan` → `home loan`: the text embedded for a name with no description."""
    return name.replace("-", " ")


def phrases(name: str, description: str, aliases: tuple[str, ...]) -> list[str]:
    """The short phrases of a description, the name in words and the aliases (deduplicated)."""
    parts = [humanize(name), *re.split(r"[:;,]", description), *aliases]
    out: list[str] = []
    for part in parts:
        part = part.strip()
        if part and part != description and part not in out:
            out.append(part)
    return out


@dataclass(frozen=True)
class Catalog:
    """Names with their description vectors (rows align with `keys`) and phrase vectors."""

    keys: list[tuple[str, str]]  # (kind, name)
    descriptions: list[str]
    vectors: np.ndarray
    units: dict[str, str]
    aliases: dict[tuple[str, str], tuple[str, ...]]
    phrase_vectors: np.ndarray
    phrase_owner: list[int]  # row in `keys` of each phrase vector

    @classmethod
    def from_entries(cls, entries: dict[str, Any], dimension: int) -> Catalog:
        """Build from a ChromaDB `get` of the catalog collection (embeddings, metadatas, documents)."""
        import numpy as np

        metas, docs = entries["metadatas"] or [], entries["documents"] or []
        embeddings = entries["embeddings"] if entries["embeddings"] is not None else []
        keys: list[tuple[str, str]] = []
        descriptions: list[str] = []
        rows: list[Any] = []
        index: dict[tuple[str, str], int] = {}
        for meta, doc, vec in zip(metas, docs, embeddings, strict=True):
            if int(meta.get("phrase", 0)) == 0:
                index[meta["kind"], meta["name"]] = len(keys)
                keys.append((meta["kind"], meta["name"]))
                descriptions.append(doc)
                rows.append(vec)
        owners, phrase_rows = [], []
        for meta, vec in zip(metas, embeddings, strict=True):
            owners.append(index[meta["kind"], meta["name"]])
            phrase_rows.append(vec)
        order = sorted(range(len(owners)), key=owners.__getitem__)  # contiguous per owner
        empty = np.zeros((0, dimension), np.float32)
        return cls(
            keys=keys,
            descriptions=descriptions,
            vectors=np.asarray(rows, dtype=np.float32) if rows else empty,
            units={m["name"]: m["unit"] for m in metas if m["kind"] == "kpi" and m.get("unit")},
            aliases={
                (m["kind"], m["name"]): tuple(filter(None, m.get("aliases", "").split("|")))
                for m in metas
                if int(m.get("phrase", 0)) == 0
            },
            phrase_vectors=np.asarray([phrase_rows[i] for i in order], dtype=np.float32) if order else empty,
            phrase_owner=[owners[i] for i in order],
        )

    def names(self, kind: str) -> list[str]:
        """Stored names of one kind ("kpi" or "department"), in catalog order."""
        return [self.keys[i][1] for i in self.rows(kind)]

    def rows(self, kind: str) -> list[int]:
        """Row numbers (into `keys` and `vectors`) of one kind."""
        return self._rows.get(kind, [])

    def has(self, kind: str, name: str) -> bool:
        return (kind, name) in self._keyset

    def similarity(self, vectors: np.ndarray, kind: str) -> tuple[list[str], np.ndarray]:
        """Names of `kind` and, per input vector, the best phrase similarity to each name."""
        import numpy as np

        names, starts, rows = self._phrases_of(kind)
        if not names:
            return [], np.zeros((len(vectors), 0), np.float32)
        sims = vectors @ self.phrase_vectors[rows].T
        return names, np.maximum.reduceat(sims, starts, axis=1)

    def _phrases_of(self, kind: str) -> tuple[list[str], list[int], list[int]]:
        cached = self._phrase_index.get(kind)
        return cached if cached is not None else ([], [], [])

    @cached_property
    def _phrase_index(self) -> dict[str, tuple[list[str], list[int], list[int]]]:
        """kind → (names, start of each name's phrases within `rows`, phrase rows)."""
        out: dict[str, tuple[list[str], list[int], list[int]]] = {}
        for i, owner in enumerate(self.phrase_owner):
            kind, name = self.keys[owner]
            names, starts, rows = out.setdefault(kind, ([], [], []))
            if not names or names[-1] != name:
                names.append(name)
                starts.append(len(rows))
            rows.append(i)
        return out

    @cached_property
    def _rows(self) -> dict[str, list[int]]:
        rows: dict[str, list[int]] = defaultdict(list)
        for i, (kind, _) in enumerate(self.keys):
            rows[kind].append(i)
        return dict(rows)

    @cached_property
    def _keyset(self) -> set[tuple[str, str]]:
        return set(self.keys)

    @cached_property
    def forms(self) -> dict[str, dict[str, str]]:
        """kind → {written form: name}: each name and alias as space-separated words."""
        out: dict[str, dict[str, str]] = defaultdict(dict)
        for kind, name in self.keys:
            for form in (name, *self.aliases.get((kind, name), ())):
                out[kind][" ".join(re.findall(r"[a-z0-9]+", form.lower()))] = name
        # "the IT department", "the wealth team": the first word of a department's name
        # followed by a word for a department, when no other department starts that way.
        firsts = defaultdict(list)
        for name in self.names("department"):
            words = name.split("-")
            if len(words) > 1:
                firsts[words[0]].append(name)
        for first, owners in firsts.items():
            if len(owners) == 1:
                for unit in DEPARTMENT_WORDS:
                    out["department"].setdefault(f"{first} {unit}", owners[0])
        return dict(out)
