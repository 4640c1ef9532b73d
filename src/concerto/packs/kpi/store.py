"""The KPI store on ChromaDB: records kept as series-year blocks, filtered by metadata.

Why blocks. Measured on 2 cores with chromadb 1.5.9's embedded client: one entry per
record ingests at 2-5k records/s (every metadata key is a SQLite row, every document
feeds a full-text index), and a `$and` filter with `$gte`/`$lte` clauses takes ~190 ms
over 84k entries, because each clause is evaluated over the whole collection before the
intersection. An equality or `$in` filter on one indexed key stays at ~1-7 ms. So one
entry holds the 12 months of one (kpi, department, year); its metadata carries `kpi`,
`department`, `year`, `unit`, `month_start`/`month_end` (YYYYMM integers, which ChromaDB
can range-filter for ad-hoc use), `block` (`kpi|department|year`) and the months' values
and notes as JSON (few keys: each one is a SQLite row per entry). A query filters
`block $in [the years of the range]` and cuts the months in Python. 1M records are 84k
entries: ingestion and the query both meet their goals (see benchmarks/results/kpi.md).

Why these vectors. Each entry's embedding is the normalised sum of the embeddings of its
KPI and department descriptions: those are a few distinct texts, embedded once per load
(MiniLM on 1M notes one by one would take over an hour). Notes stay as text in the entry.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from concerto.packs.kpi.catalog import Catalog, humanize, phrases
from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import KPIRecord
from concerto.packs.kpi.settings import KPISettings

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder
    from concerto.settings import Settings

BLOCKS = "kpi_records"
CATALOG = "kpi_catalog"
# A low ef_construction cuts HNSW insert time; the vectors serve browsing by meaning, not
# the KPI query path, so a small loss of recall is acceptable.
_HNSW = {"space": "cosine", "ef_construction": 32, "batch_size": 1000, "sync_threshold": 10000}


def _block_key(kpi: str, department: str, year: int) -> str:
    return f"{kpi}|{department}|{year}"


class KPIStore:
    """KPI records in ChromaDB; thread-safe, opened on first use."""

    def __init__(self, settings: Settings, embedder: Embedder) -> None:
        self.settings = settings
        self.chroma_url = KPISettings.of(settings).chroma_url
        self.embedder = embedder
        self._lock = threading.RLock()
        self._client: Any = None
        self._blocks: Any = None
        self._catalog_col: Any = None
        self._catalog: Catalog | None = None
        self._has_data = False

    # -- connection -------------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the records live: the server URL or the embedded directory."""
        return self.chroma_url or str(Path(self.settings.data_dir) / "chroma")

    def _open(self) -> None:
        if self._blocks is not None:
            return
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        # Telemetry would try the network on every start.
        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if self.chroma_url:
            url = urlparse(self.chroma_url)
            ssl = url.scheme == "https"
            self._client = chromadb.HttpClient(
                host=url.hostname or "localhost",
                port=url.port or (443 if ssl else 8000),
                ssl=ssl,
                settings=chroma_settings,
            )
        else:
            path = Path(self.settings.data_dir) / "chroma"
            path.mkdir(parents=True, exist_ok=True)
            self._client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
        config: Any = {"hnsw": dict(_HNSW)}
        self._blocks = self._client.get_or_create_collection(
            BLOCKS,
            embedding_function=None,
            configuration=config,
            metadata={"description": "KPI records, one entry per kpi, department and year"},
        )
        self._catalog_col = self._client.get_or_create_collection(
            CATALOG,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"description": "KPI and department names with their descriptions"},
        )

    def close(self) -> None:
        """Drop the client; ChromaDB's embedded system is released with it."""
        with self._lock:
            self._client = self._blocks = self._catalog_col = self._catalog = None

    # -- writing ----------------------------------------------------------------------

    def count_entries(self) -> int:
        with self._lock:
            self._open()
            return int(self._blocks.count())

    def ensure_demo(self) -> bool:
        """Load the demo records into an empty store; True when it did."""
        with self._lock:
            if self._has_data or self.count_entries():
                self._has_data = True
                return False
            from concerto.packs.kpi.demo import demo_records, descriptions

            self.add(demo_records(), descriptions())
            return True

    def add(self, records: Iterable[KPIRecord], descriptions: dict[tuple[str, str], str] | None = None) -> int:
        """Insert or replace records (same kpi, department and month); returns how many.

        Callers validate first (`read_csv`), so a batch only fails on a storage error.
        """
        import numpy as np

        grouped: dict[str, dict[int, list[Any]]] = defaultdict(dict)
        units: dict[str, str] = {}
        count = 0
        for r in records:
            grouped[_block_key(r.kpi, r.department, r.month.year)][r.month.month] = [
                r.value,
                r.notes,
            ]
            units.setdefault(r.kpi, r.unit)
            count += 1
        if not count:
            return 0
        with self._lock:
            self._open()
            self._update_catalog(grouped, units, descriptions or {})
            catalog = self.catalog()
            index = {key: i for i, key in enumerate(catalog.keys)}
            batch = int(self._client.get_max_batch_size())
            keys = list(grouped)
            for start in range(0, len(keys), batch):
                chunk = keys[start : start + batch]
                existing = self._blocks.get(ids=chunk, include=["metadatas"])
                for bid, meta in zip(existing["ids"], existing["metadatas"], strict=True):
                    old = {int(m): [v, n] for m, v, n in json.loads(meta["values"])}
                    grouped[bid] = old | grouped[bid]
                metas, vectors = [], []
                for bid in chunk:
                    kpi, dept, year = bid.split("|")
                    months = grouped[bid]
                    metas.append(
                        {
                            "kpi": kpi,
                            "department": dept,
                            "block": bid,
                            "year": int(year),
                            "unit": catalog.units.get(kpi, units.get(kpi, "")),
                            "month_start": int(year) * 100 + min(months),
                            "month_end": int(year) * 100 + max(months),
                            "values": json.dumps([[m, *months[m]] for m in sorted(months)], separators=(",", ":")),
                        }
                    )
                    v = catalog.vectors[index["kpi", kpi]] + catalog.vectors[index["department", dept]]
                    vectors.append(v / (np.linalg.norm(v) or 1.0))
                self._blocks.upsert(ids=chunk, embeddings=np.stack(vectors), metadatas=metas)
            self._has_data = True
            self._analyze()
        return count

    def _analyze(self) -> None:
        """Give SQLite statistics about the embedded store's metadata index.

        ChromaDB never runs ANALYZE; without statistics SQLite plans the `block $in` filter
        as a scan (8 ms at 1M records) instead of an index lookup (0.5 ms). Measured in
        benchmarks/results/kpi.md; takes about 0.6 s at 1M records. A server is left alone.
        """
        if self.chroma_url:
            return
        import sqlite3

        path = Path(self.settings.data_dir) / "chroma" / "chroma.sqlite3"
        if not path.exists():
            return
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
            db.execute("ANALYZE")
            db.commit()

    def _update_catalog(
        self,
        grouped: dict[str, Any],
        units: dict[str, str],
        descriptions: dict[tuple[str, str], str],
    ) -> None:
        from concerto.packs.kpi.demo import ALIASES
        from concerto.packs.kpi.demo import descriptions as demo_descriptions

        known = set(self.catalog().keys)
        new: set[tuple[str, str]] = set()
        for bid in grouped:
            kpi, dept, _ = bid.split("|")
            new |= {("kpi", kpi), ("department", dept)} - known
        if not new:
            return
        texts = demo_descriptions() | descriptions
        ids: list[str] = []
        docs: list[str] = []
        metas: list[dict[str, Any]] = []
        for kind, name in sorted(new):
            doc = texts.get((kind, name), humanize(name))
            aliases = ALIASES.get((kind, name), ())
            for i, text in enumerate([doc, *phrases(name, doc, aliases)]):
                ids.append(f"{kind}:{name}" if i == 0 else f"{kind}:{name}#{i}")
                docs.append(text)
                meta = {"kind": kind, "name": name, "phrase": i}
                if i == 0:
                    meta |= {"aliases": "|".join(aliases), "unit": units.get(name, "") if kind == "kpi" else ""}
                metas.append(meta)
        import numpy as np

        # Small batches: one padded batch of thousands of texts is slower than many of 64.
        vectors = np.concatenate([self.embedder.embed(docs[i : i + 64]) for i in range(0, len(docs), 64)])
        for start in range(0, len(ids), 5000):
            end = start + 5000
            self._catalog_col.upsert(
                ids=ids[start:end], embeddings=vectors[start:end], documents=docs[start:end], metadatas=metas[start:end]
            )
        self._catalog = None
        from concerto.packs.kpi.held import write_names

        catalog = self.catalog()
        write_names(Path(self.settings.data_dir), catalog.names("kpi"), catalog.names("department"))

    # -- reading ----------------------------------------------------------------------

    def catalog(self) -> Catalog:
        """Every KPI and department name the store holds (cached until the next write)."""
        with self._lock:
            if self._catalog is None:
                self._open()
                got = self._catalog_col.get(include=["embeddings", "metadatas", "documents"])
                self._catalog = Catalog.from_entries(got, self.embedder.dimension)
            return self._catalog

    @staticmethod
    def where(kpi: str, department: str, first: Month, last: Month) -> dict[str, Any]:
        """The metadata filter of a query: the (kpi, department, year) entries of the range."""
        blocks = [_block_key(kpi, department, y) for y in range(first.year, last.year + 1)]
        return {"block": {"$in": blocks}}

    @property
    def backend(self) -> str:
        return "chromadb-server" if self.chroma_url else "chromadb-embedded"

    def query(self, kpi: str, department: str, first: Month, last: Month) -> list[KPIRecord]:
        """Records of one KPI and department from `first` to `last` (inclusive), by month."""
        lo, hi = first.as_int(), last.as_int()
        with self._lock:
            self._open()
            got = self._blocks.get(where=self.where(kpi, department, first, last), include=["metadatas"])
        out: list[KPIRecord] = []
        for meta in got["metadatas"]:
            year = int(meta["year"])
            for m, value, notes in json.loads(meta["values"]):
                if lo <= year * 100 + m <= hi:
                    out.append(
                        KPIRecord(
                            meta["kpi"],
                            meta["department"],
                            Month(year, m),
                            float(value),
                            meta["unit"],
                            notes,
                        )
                    )
        out.sort(key=lambda r: r.month)
        return out

    def span(self, kpi: str, department: str) -> tuple[Month, Month] | None:
        """First and last month held for one series, or None."""
        with self._lock:
            self._open()
            where = {"$and": [{"kpi": kpi}, {"department": department}]}
            got = self._blocks.get(where=where, include=["metadatas"])
        if not got["ids"]:
            return None
        starts = [int(m["month_start"]) for m in got["metadatas"]]
        ends = [int(m["month_end"]) for m in got["metadatas"]]
        return Month.from_int(min(starts)), Month.from_int(max(ends))


def get_store(settings: Settings, resources: Any) -> KPIStore:
    """The orchestrator's shared store (one per `Resources`)."""
    store: KPIStore = resources.get("kpi.store", lambda: KPIStore(settings, resources.embedder))
    return store
