"""Analytics pack benchmark (issue 14): load rate, agent overhead over hand-typed SQL, latency.

Run: .venv/bin/python -m benchmarks.bench_analytics [--rows 1000000] [--big-rows 10000000]
     [--runs 20] [--big-runs 10] [--mix-runs 20] [--no-postgres] [--out benchmarks/results/analytics.md]

About 10 minutes on 2 cores; needs Debian's `postgresql` package (as the tests do) unless
--no-postgres, and py-spy in the venv for the sampled profile (`.venv/bin/pip install py-spy`).

All in one process, side by side, with nothing reaching the internet and no LLM:
1. Load rate of a 1M-row CSV (panel data like the demo's: customer id, company name, a
   short description with few distinct values, industry, region, segment, month, four
   numbers): DuckDB's bare `read_csv` into a new database file against `DuckDBStore.load`
   (strict read, profile, embeddings of text/label columns; and with `embedder=None`) and
   `PostgresStore.load`, on a throwaway PostgreSQL cluster (tests/_services/postgres.py),
   with the time of each part of a load.
2. A segmentation and two pattern questions end to end (`Orchestrator.ask`, the source
   named) at `--rows` and `--big-rows` rows on DuckDB and PostgreSQL, against the SQL the
   agent ran (from its output) typed by hand on a plain connection; goal: the agent
   under 50 ms + 1.2 × the hand-typed query.
3. Latency of no-LLM answers on the `--rows` Parquet source (DuckDB): a mix of questions
   for every analytics agent, the first ask of each reported as cold; goal p95 < 300 ms.
Before the timings, the three questions at `--rows` rows are profiled (a timer around each
step of `Orchestrator.ask`, and py-spy sampling this process), for "where the time goes".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._timing import percentile

ROOT = Path(__file__).resolve().parents[1]

MONTHS = 50
START = date(2021, 1, 1)
OVERHEAD_MS, OVERHEAD_FACTOR = 50.0, 1.2
LATENCY_GOAL_MS = 300.0
LOAD_GOAL = 0.8

E2E_QUESTIONS = [
    ("segmentation", "segment customers by sales tier"),
    ("pattern (trend)", "are sales trending up or down?"),
    ("pattern (distribution)", "how are sales distributed across customers?"),
]
MIX_QUESTIONS = [
    ("sql_analytics", "total sales by industry"),
    ("sql_analytics", "top 10 customers by sales"),
    ("sql_analytics", "monthly sales trend"),
    ("sql_analytics", "average engagement score by region"),
    ("segmentation", "segment customers by sales tier"),
    ("pattern_recognition", "are sales trending up or down?"),
    ("pattern_recognition", "how are sales distributed across customers?"),
    ("pattern_recognition", "find anomalies in monthly sales"),
    ("benchmark", "which regions are above average?"),
    ("risk", "which customers are at risk?"),
    ("opportunity", "which customers are upsell candidates?"),
]

TAILS = ["", " Recently hit by supply chain delays.", " Long-standing customer with a dedicated account team."]
PREFIXES = (
    "Acme Apex Atlas Beacon Blue Bright Cedar Crest Delta Eagle Echo Ember Evergreen Falcon Fusion Granite Harbor "
    "Horizon Iron Jade Keystone Lumen Maple Meridian Nimbus Nova Oak Orion Pacific Peak Pine Pioneer Quantum "
    "Radiant Redwood Sierra Silver Summit Titan Vertex Vista Zenith"
).split()
SUFFIXES = "Group Partners Holdings Systems Works Labs Industries Company Trading Services".split()


# -- data ---------------------------------------------------------------------------------


def panel(customers: int, seed: int = 14) -> Any:
    """`customers` × 50 months of one row per customer and month, shaped like the demo's
    source (skewed sales with growth and a Q4 peak, at-risk and upsell customers planted),
    as an Arrow table; vectorised, so 10M rows take seconds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from concerto.data.demo import INDUSTRIES, REGIONS, SEGMENTS  # the demo's vocabulary

    rng = np.random.default_rng(seed)
    n, m = customers, MONTHS
    industry = rng.choice(len(INDUSTRIES), size=n)
    region = rng.choice(4, size=n, p=[0.27, 0.25, 0.23, 0.25])
    size = rng.lognormal(mean=8.3, sigma=0.9, size=n)
    size[region == 3] *= 0.45
    size[region == 1] *= 1.45
    high, low = np.quantile(size, [0.8, 0.4])
    segment = np.where(size >= high, 0, np.where(size >= low, 1, 2))

    months = np.arange(m)
    trend = 1 + 0.15 * months / (m - 1)
    season = 1 + 0.10 * np.isin(months % 12, [9, 10, 11])
    sales = size[:, None] * (trend * season)[None, :] * rng.normal(1.0, 0.06, size=(n, m))
    engagement = np.clip(rng.normal(55, 12, size=n), 10, 95)[:, None] + rng.normal(0, 3, size=(n, m))
    tickets = rng.poisson(1.5, size=(n, m)).astype(float)

    mean_of_segment = np.bincount(segment, weights=size) / np.bincount(segment)
    below = np.flatnonzero(size < mean_of_segment[segment])
    upsell = rng.choice(below, size=max(1, int(0.13 * n)), replace=False)
    engagement[upsell] = np.clip(rng.normal(86, 4, size=(len(upsell), 1)) + rng.normal(0, 2, (len(upsell), m)), 75, 99)
    rest = np.setdiff1d(np.arange(n), upsell)
    east, elsewhere = rest[region[rest] == 0], rest[region[rest] != 0]
    at_risk = np.concatenate(
        [rng.choice(east, size=int(0.053 * n), replace=False), rng.choice(elsewhere, size=int(0.03 * n), replace=False)]
    )
    engagement[at_risk, -3:] *= np.array([0.8, 0.65, 0.55])
    tickets[at_risk, -3:] += np.array([3, 5, 7])
    spikes = rng.choice(np.setdiff1d(np.arange(n), at_risk), size=max(1, n // 60), replace=False)
    sales[spikes, rng.integers(2, m - 2, size=len(spikes))] *= rng.uniform(3.0, 4.0, size=len(spikes))

    sales = np.round(sales, 2)
    price = np.round(40 + 10 * industry[:, None] + rng.normal(0, 2, size=(n, m)), 2)
    units = np.maximum(np.round(sales / price), 1).astype(np.int64)
    names = pa.array([f"{PREFIXES[i % 42]} {SUFFIXES[(i // 42) % 10]} {i // 420 + 1:04d}" for i in rng.permutation(n)])
    industries = list(INDUSTRIES)
    texts = [f"{INDUSTRIES[k][v]}.{tail}".capitalize() for k in industries for v in (0, 1) for tail in TAILS]
    text_of = industry * 6 + (np.arange(n) % 2) * 3 + rng.choice(3, size=n, p=[0.55, 0.2, 0.25])
    per_row = pa.array(np.repeat(np.arange(n), m))
    first = np.datetime64(START, "M")
    month = (first + months).astype("datetime64[D]")
    return pa.table(
        {
            "customer_id": pa.array(np.repeat(np.arange(1, n + 1), m), pa.int64()),
            "company_name": pc.take(names, per_row),
            "description": pc.take(pa.array(texts), pa.array(np.repeat(text_of, m))),
            "industry": pc.take(pa.array(industries), pa.array(np.repeat(industry, m))),
            "region": pc.take(pa.array(REGIONS), pa.array(np.repeat(region, m))),
            "segment": pc.take(pa.array(SEGMENTS), pa.array(np.repeat(segment, m))),
            "month": pa.array(np.tile(month, n), pa.date32()),
            "sales": pa.array(sales.ravel()),
            "units": pa.array(units.ravel()),
            "engagement_score": pa.array(np.round(np.clip(engagement, 0, 100), 1).ravel()),
            "support_tickets": pa.array(tickets.ravel().astype(np.int64)),
        }
    )


def write(table: Any, folder: Path, stem: str) -> tuple[Path, Path]:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    csv_path, parquet_path = folder / f"{stem}.csv", folder / f"{stem}.parquet"
    pcsv.write_csv(table, csv_path)
    pq.write_table(table, parquet_path)
    return csv_path, parquet_path


# -- timing helpers -----------------------------------------------------------------------


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def med(xs: list[float]) -> float:
    return statistics.median(xs)


class Clock:
    """Time spent in wrapped functions, by label (re-entrant calls counted once)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._depth: dict[str, int] = defaultdict(int)

    def reset(self) -> None:
        self.spent.clear()
        self.calls.clear()

    def wrap(self, owner: Any, attribute: str, label: str) -> Callable[[], None]:
        """Replace `owner.attribute` (a function or an async method) with a timed one; returns the undo."""
        original = owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)
        clock = self

        if asyncio.iscoroutinefunction(original):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return await original(*args, **kwargs)
                finally:
                    clock.spent[label] += ms(start)
                    clock.calls[label] += 1

            replacement: Any = timed_async
        else:

            def timed_sync(*args: Any, **kwargs: Any) -> Any:
                clock._depth[label] += 1
                start = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    clock._depth[label] -= 1
                    if clock._depth[label] == 0:
                        clock.spent[label] += ms(start)
                        clock.calls[label] += 1

            replacement = timed_sync
        setattr(owner, attribute, replacement)
        return lambda: setattr(owner, attribute, original)


@contextmanager
def wrapped(clock: Clock, targets: list[tuple[Any, str, str]]) -> Iterator[Clock]:
    undo = [clock.wrap(owner, attribute, label) for owner, attribute, label in targets]
    try:
        yield clock
    finally:
        for u in reversed(undo):
            u()


# -- 1. load rate -------------------------------------------------------------------------


def bare_read_csv(csv_path: Path, folder: Path) -> float:
    import duckdb

    target = folder / "bare.duckdb"
    target.unlink(missing_ok=True)
    start = time.perf_counter()
    con = duckdb.connect(str(target))
    con.execute("CREATE TABLE t AS SELECT * FROM read_csv($1)", [str(csv_path)])
    con.close()
    took = ms(start)
    target.unlink(missing_ok=True)
    return took


def bare_pg_copy(csv_path: Path, url: str) -> float:
    """For reference: PostgreSQL's own `COPY FROM` of the same CSV into a table of the same types."""
    import psycopg

    columns = (
        "customer_id bigint, company_name text, description text, industry text, region text, segment text, "
        "month date, sales double precision, units bigint, engagement_score double precision, support_tickets bigint"
    )
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS bare_copy")
        start = time.perf_counter()
        with con.transaction():
            con.execute(f"CREATE TABLE bare_copy ({columns})")
            sql = "COPY bare_copy FROM STDIN (FORMAT csv, HEADER true)"
            with con.cursor() as cur, cur.copy(sql) as copy, csv_path.open("rb") as rows:
                while chunk := rows.read(1 << 20):
                    copy.write(chunk)
        took = ms(start)
        con.execute("DROP TABLE bare_copy")
    return took


def store_load(store: Any, csv_path: Path, model: Any = None) -> tuple[float, dict[str, float], Any]:
    """Total ms of `store.load`, ms per part, and the data context."""
    from concerto.data import duckdb_store, postgres_store, profile
    from concerto.data.store import Store

    module = duckdb_store if store.dialect == "duckdb" else postgres_store
    targets = [
        (module, "read_file", "read (strict read_csv)"),
        (module, "profile_table", "profile"),
        (profile, "_stats", "profile: one-scan statistics"),
        (profile, "_samples", "profile: sample values per column"),
        (profile, "_categories", "profile: category values"),
        (Store, "_embeddings", "embeddings (distinct values + MiniLM)"),
    ]
    if store.embedder is not None and model is not None:
        targets.append((model, "embed", "embeddings: MiniLM"))
    if store.dialect == "postgres":
        targets.append((type(store), "_copy_in", "PostgreSQL COPY in (+ vectors, catalog)"))
    with wrapped(Clock(), targets) as clock:
        start = time.perf_counter()
        context = store.load(csv_path, "t")
        total = ms(start)
    return total, dict(clock.spent), context


def bench_load(csv_path: Path, rows: int, pg_url: str | None, work: Path, runs: int = 3) -> dict[str, Any]:
    """Bare read_csv against the stores' loads, interleaved, `runs` times each."""
    from concerto.data.duckdb_store import DuckDBStore
    from concerto.data.postgres_store import PostgresStore
    from concerto.nlp.embeddings import LocalEmbedder

    model = LocalEmbedder(cache_size=0)  # nothing cached between loads: each embeds its values again
    model.embed(["warm up the model"])
    limits = {"row_cap": 10000, "timeout_s": 60, "max_file_bytes": 2**33}
    variants: dict[str, Callable[[], Any]] = {
        "DuckDBStore.load (embeddings)": lambda: DuckDBStore(work / "duck", embedder=lambda: model, **limits),
        "DuckDBStore.load (embedder=None)": lambda: DuckDBStore(work / "duck", embedder=None, **limits),
    }
    if pg_url:
        variants["PostgresStore.load (embeddings)"] = lambda: PostgresStore(pg_url, embedder=lambda: model, **limits)
        variants["PostgresStore.load (embedder=None)"] = lambda: PostgresStore(pg_url, embedder=None, **limits)
    totals: dict[str, list[float]] = defaultdict(list)
    parts: dict[str, list[dict[str, float]]] = defaultdict(list)
    notes: dict[str, list[str]] = {}
    bare_read_csv(csv_path, work)  # the file in the page cache for every variant
    for run in range(runs):
        took = bare_read_csv(csv_path, work)
        totals["bare read_csv"].append(took)
        print(f"  load run {run + 1}: bare read_csv {took:,.0f} ms", flush=True)
        if pg_url:
            totals["bare PostgreSQL COPY FROM (reference)"].append(bare_pg_copy(csv_path, pg_url))
        for label, make in variants.items():
            store = make()
            took, spent, context = store_load(store, csv_path, model)
            store.drop("t")
            store.close()
            totals[label].append(took)
            parts[label].append(spent)
            notes[label] = [*context.notes, f"embedded columns: {', '.join(context.embedded_columns) or 'none'}"]
            print(f"  load run {run + 1}: {label} {took:,.0f} ms {dict((k, round(v)) for k, v in spent.items())}")
    # The cost of embedding a label column near CONCERTO_DATA_EMBED_MAX_VALUES (5,000): 1,000
    # distinct short names in the batches of 64 that embed.py uses.
    names = [f"{PREFIXES[i % 42]} {SUFFIXES[(i // 42) % 10]} {i // 420 + 1:04d}" for i in range(1000)]
    start = time.perf_counter()
    for first in range(0, len(names), 64):
        model.embed(names[first : first + 64])
    worst_embed = ms(start) / len(names)
    return {"rows": rows, "totals": totals, "parts": parts, "notes": notes, "worst_embed_ms": worst_embed}


def load_table(result: dict[str, Any], csv_path: Path) -> list[str]:
    rows = result["rows"]
    bare = med(result["totals"]["bare read_csv"])
    size = csv_path.stat().st_size / 2**20
    out = [
        f"**Load rate** ({rows:,}-row CSV, {size:,.0f} MB, 11 columns; median of "
        f"{len(result['totals']['bare read_csv'])} runs, interleaved; goal ≥ {LOAD_GOAL}× bare read_csv)",
        "",
        "| load | median s | rows/s | × bare read_csv | goal |",
        "|---|---|---|---|---|",
    ]
    for label, xs in result["totals"].items():
        m = med(xs)
        ratio = bare / m
        goal = "—" if label.startswith("bare") else ("yes" if ratio >= LOAD_GOAL else "NO")
        out.append(f"| {label} | {m / 1000:.2f} | {rows / (m / 1000):,.0f} | {ratio:.2f}× | {goal} |")
    out += [
        "",
        "**Parts of a load** (median ms; `profile: ...` are parts of `profile`, `embeddings: MiniLM` of `embeddings`)",
        "",
    ]
    labels = [k for k in result["parts"] if result["parts"][k]]
    order = [
        "read (strict read_csv)",
        "profile",
        "profile: one-scan statistics",
        "profile: sample values per column",
        "profile: category values",
        "embeddings (distinct values + MiniLM)",
        "embeddings: MiniLM",
        "PostgreSQL COPY in (+ vectors, catalog)",
    ]
    pieces = [p for p in order if any(p in spent for label in labels for spent in result["parts"][label])]
    out.append("| part | " + " | ".join(labels) + " |")
    out.append("|---|" + "---|" * len(labels))
    for piece in pieces:
        cells = [f"{med([s.get(piece, 0.0) for s in result['parts'][label]]):,.0f}" for label in labels]
        out.append(f"| {piece} | " + " | ".join(cells) + " |")
    rest = []
    for label in labels:
        top = (
            "read (strict read_csv)",
            "profile",
            "embeddings (distinct values + MiniLM)",
            "PostgreSQL COPY in (+ vectors, catalog)",
        )
        others = [
            t - sum(s.get(p, 0.0) for p in top)
            for t, s in zip(result["totals"][label], result["parts"][label], strict=True)
        ]
        rest.append(f"{med(others):,.0f}")
    out.append("| rest (close/checkpoint, rename; PostgreSQL: DuckDB `COPY TO` CSV) | " + " | ".join(rest) + " |")
    out.append("| **total** | " + " | ".join(f"{med(result['totals'][label]):,.0f}" for label in labels) + " |")
    out += [
        "",
        "Load notes: " + "; ".join(sorted({n for notes in result["notes"].values() for n in notes})) + ".",
        f"Embedding distinct values costs {result['worst_embed_ms']:.1f} ms each (1,000 short names in batches of "
        f"64, measured on their own): a label column just under `CONCERTO_DATA_EMBED_MAX_VALUES` (5,000) adds "
        f"about {5 * result['worst_embed_ms']:.0f} s to a load, whatever its row count.",
    ]
    return out


# -- 2. and 3. questions end to end -------------------------------------------------------


class Backend:
    """One orchestrator on one store, and a plain connection for the hand-typed SQL."""

    def __init__(self, label: str, data_dir: Path, database_url: str | None) -> None:
        from concerto import Orchestrator
        from concerto.data.settings import DataSettings
        from concerto.data.sources import store_for
        from concerto.settings import Settings

        self.label = label
        self.url = database_url
        self.data_dir = data_dir
        data = DataSettings(data_max_file_mb=16384)  # default 10 s query limit
        self.orchestrator = Orchestrator(Settings(database_url=database_url).using(data))
        self.store = store_for(self.orchestrator.settings, self.orchestrator.resources)
        self.loads: dict[str, float] = {}
        self._plain: Any = None
        self._duck: dict[str, Any] = {}

    def load(self, path: Path, name: str) -> float:
        start = time.perf_counter()
        context = self.store.load(path, name)
        took = ms(start) / 1000
        self.loads[name] = took
        print(f"  {self.label}: loaded {context.row_count:,} rows as {name} in {took:.1f} s", flush=True)
        return took

    def plain(self, name: str) -> Callable[[str], int]:
        """Run one SQL text on a plain connection; returns the rows fetched."""
        if self.url is None:
            import duckdb

            if name not in self._duck:
                # The same config as the store's own readers: DuckDB allows one configuration per file
                # in a process (and the locked one runs the same SQL at the same speed).
                self._duck[name] = duckdb.connect(
                    str(self.data_dir / "sources" / f"{name}.duckdb"),
                    read_only=True,
                    config={"enable_external_access": False, "lock_configuration": True},
                )
            con = self._duck[name]

            def run_duck(sql: str) -> int:
                return len(con.execute(sql).fetchall())

            return run_duck
        if self._plain is None:
            import psycopg

            self._plain = psycopg.connect(self.url, autocommit=True)
            self._plain.execute("SET search_path = concerto")
        pg = self._plain

        def run_pg(sql: str) -> int:
            with pg.cursor() as cur:
                cur.execute(sql)
                return len(cur.fetchall())

        return run_pg

    async def close(self) -> None:
        for con in self._duck.values():
            con.close()
        if self._plain is not None:
            self._plain.close()
        await self.orchestrator.aclose()

    async def ask(self, question: str, source: str) -> tuple[float, Any]:
        forget(self.orchestrator, question)
        start = time.perf_counter()
        result = await self.orchestrator.ask({"query": question, "source": source})
        return ms(start), result


def forget(orchestrator: Any, question: str) -> None:
    """Drop the question's own vectors from the embedder's cache, so that each timed ask
    embeds its question as a new one would (column and query-type descriptions stay cached)."""
    cache = getattr(orchestrator.resources.embedder, "_cache", None)
    if cache is None:
        return
    lowered = question.lower()
    for key in [k for k in cache if k.lower() in lowered or lowered in k.lower()]:
        cache.pop(key, None)


def answered(result: Any) -> tuple[list[str], list[str], float | None, str | None]:
    """(agents, SQL texts, the agent's own duration_ms, error) of an orchestrator result."""
    from concerto.contracts.orchestrator import OrchestratorOutput

    if not isinstance(result, OrchestratorOutput):
        return [], [], None, f"{result.error_category}: {result.error_message}"
    agents = [a.agent for a in result.agent_results]
    first = result.agent_results[0] if result.agent_results else None
    if first is None or first.status.value != "completed":
        errors = "; ".join(e.message for e in first.errors) if first else "no agent ran"
        return agents, [], None, f"{first.status.value if first else '?'}: {errors}"
    sqls = [q["sql"] for q in first.output.get("queries_executed", [])]
    return agents, sqls, first.output.get("metadata", {}).get("duration_ms"), None


async def overhead(backend: Backend, source: str, question: str, runs: int) -> dict[str, Any]:
    """`runs` asks and hand-typed runs of the agent's SQL, interleaved, after one warm-up of each."""
    _, result = await backend.ask(question, source)  # warm-up (also fetches the source's values once)
    agents, sqls, _, error = answered(result)
    if error:
        return {"error": error, "agents": agents}
    run = backend.plain(source)
    for sql in sqls:
        run(sql)
    asks, hands, own = [], [], []

    def by_hand() -> None:
        start = time.perf_counter()
        for sql in sqls:
            run(sql)
        hands.append(ms(start))

    for i in range(runs):
        if i % 2 == 0:  # alternate which goes first
            by_hand()
        took, result = await backend.ask(question, source)
        if i % 2 == 1:
            by_hand()
        _, again, duration, error = answered(result)
        if error:
            return {"error": error, "agents": agents}
        if again != sqls:
            print(f"  note: the SQL changed between asks of {question!r}", flush=True)
        asks.append(took)
        own.append(duration or 0.0)
    return {"agents": agents, "sqls": sqls, "ask": asks, "hand": hands, "own": own}


def overhead_row(backend: str, rows: int, label: str, question: str, r: dict[str, Any]) -> str:
    head = f"| {backend} | {rows / 1e6:g}M | {label}: `{question}` |"
    if "error" in r:
        return head + f" failed: {r['error'][:160]} | | | | | | |"
    hand, ask = med(r["hand"]), med(r["ask"])
    budget = OVERHEAD_MS + OVERHEAD_FACTOR * hand
    verdict = "yes" if ask <= budget else "NO"
    return (
        head + f" {len(r['sqls'])} | {hand:,.1f} | {ask:,.1f} | {percentile(r['ask'], 0.95):,.1f} | "
        f"{med(r['own']):,.1f} | {ask - hand:+,.1f} | {budget:,.0f} {verdict} |"
    )


async def latency_mix(backend: Backend, source: str, runs: int) -> list[dict[str, Any]]:
    out = []
    for expected, question in MIX_QUESTIONS:
        cold, result = await backend.ask(question, source)
        agents, _, _, error = answered(result)
        times, own, hands = [], [], []
        sqls: list[str] = []
        run = backend.plain(source)
        for _ in range(runs):
            took, result = await backend.ask(question, source)
            _, sqls, duration, error = answered(result)
            times.append(took)
            own.append(duration or 0.0)
            start = time.perf_counter()
            for sql in sqls:
                run(sql)
            hands.append(ms(start))
        out.append(
            {
                "expected": expected,
                "question": question,
                "agents": agents,
                "cold": cold,
                "warm": times,
                "own": own,
                "hand": hands,
                "queries": len(sqls),
                "error": error,
            }
        )
        print(
            f"  {question}: {', '.join(agents)} cold {cold:,.0f} ms, "
            f"p50 {med(times):,.0f}, p95 {percentile(times, 0.95):,.0f}",
            flush=True,
        )
    return out


def latency_table(mix: list[dict[str, Any]], rows: int, runs: int) -> list[str]:
    everything = [t for m in mix for t in m["warm"]]
    out = [
        f"**Latency of no-LLM answers** (`Orchestrator.ask`, {rows:,}-row Parquet source on DuckDB; each question "
        f"asked once cold, then {runs} times; ms; goal p95 < {LATENCY_GOAL_MS:.0f} ms)",
        "",
        "| question | agent(s) | queries | cold | p50 | p95 | agent's own p50 | its SQL by hand p50 | goal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in mix:
        p95 = percentile(m["warm"], 0.95)
        agents = ", ".join(m["agents"]) or "—"
        if m["expected"] not in m["agents"]:
            agents += f" (expected {m['expected']})"
        if m["error"]:
            agents += f"; error: {m['error'][:100]}"
        out.append(
            f"| `{m['question']}` | {agents} | {m['queries']} | {m['cold']:,.0f} | {med(m['warm']):,.0f} | "
            f"{p95:,.0f} | {med(m['own']):,.0f} | {med(m['hand']):,.0f} | {'yes' if p95 < LATENCY_GOAL_MS else 'NO'} |"
        )
    p95 = percentile(everything, 0.95)
    out.append(
        f"| **all {len(everything)} warm asks** | | | | **{med(everything):,.0f}** | **{p95:,.0f}** | | | "
        f"{'yes' if p95 < LATENCY_GOAL_MS else 'NO'} |"
    )
    return out


# -- profile: where the time goes --------------------------------------------------------


def phase_targets() -> list[tuple[Any, str, str]]:
    from concerto.data import store as store_module
    from concerto.data.duckdb_store import DuckDBStore
    from concerto.data.postgres_store import PostgresStore
    from concerto.orchestrator.log import EventLog
    from concerto.orchestrator.router import Router
    from concerto.packs.analytics import _base
    from concerto.packs.analytics._base import AnalyticsAgent
    from concerto.packs.analytics.pattern_recognition import PatternRecognitionAgent
    from concerto.packs.analytics.segmentation import SegmentationAgent

    return [
        (Router, "route", "routing (all)"),
        (Router, "_held", "routing: holdings of every agent"),
        (DuckDBStore, "contexts", "store.contexts()"),
        (PostgresStore, "contexts", "store.contexts()"),
        (AnalyticsAgent, "run", "agent run (all)"),
        (AnalyticsAgent, "_source", "agent: choose the source"),
        (AnalyticsAgent, "_values", "agent: distinct values (cached per source)"),
        (AnalyticsAgent, "_similarity", "agent: question vs measure descriptions (embed)"),
        (_base, "read", "agent: read the question"),
        (AnalyticsAgent, "plan_steps", "agent: plan (incl. query types by embedding)"),
        (AnalyticsAgent, "choose", "agent: plan: query types by embedding"),
        (store_module.Store, "query", "agent: queries (check + run + rows to JSON)"),
        (store_module, "check_query", "agent: queries: sqlglot safety check"),
        (DuckDBStore, "_run", "agent: queries: SQL in the database + fetch"),
        (PostgresStore, "_run", "agent: queries: SQL in the database + fetch"),
        (SegmentationAgent, "insights", "agent: insights"),
        (PatternRecognitionAgent, "insights", "agent: insights"),
        (AnalyticsAgent, "_output", "agent: output dict"),
        (EventLog, "write", "events.sqlite write"),
    ]


async def phases(
    backend: Backend, source: str, question: str, runs: int
) -> tuple[dict[str, float], dict[str, float], float]:
    """Median ms per ask in each wrapped step, calls per ask, and the median ask."""
    await backend.ask(question, source)
    per_run: dict[str, list[float]] = defaultdict(list)
    calls: dict[str, int] = defaultdict(int)
    totals = []
    with wrapped(Clock(), phase_targets()) as clock:
        for _ in range(runs):
            clock.reset()
            took, _ = await backend.ask(question, source)
            totals.append(took)
            for label, spent in clock.spent.items():
                per_run[label].append(spent)
            for label, count in clock.calls.items():
                calls[label] += count
    return (
        {k: med(v + [0.0] * (runs - len(v))) for k, v in per_run.items()},
        {k: v / runs for k, v in calls.items()},
        med(totals),
    )


async def py_spy(backend: Backend, source: str, question: str, seconds: float, out: Path) -> list[str]:
    """Sample this process with py-spy while it asks `question` repeatedly; the top functions."""
    import subprocess

    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        return ["(py-spy not installed: `.venv/bin/pip install py-spy` for the sampled profile)"]
    raw = out / "py-spy.txt"
    proc = subprocess.Popen(
        [
            str(spy),
            "record",
            "--pid",
            str(os.getpid()),
            "--duration",
            str(int(seconds)),
            "--rate",
            "500",
            "--format",
            "raw",
            "--nonblocking",
            "--output",
            str(raw),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    await asyncio.sleep(1.0)
    asks = 0
    end = time.perf_counter() + seconds - 1.5
    while time.perf_counter() < end:
        await backend.ask(question, source)
        asks += 1
    proc.wait(timeout=60)
    return summarize_stacks(raw, asks)


def summarize_stacks(raw: Path, asks: int, top: int = 12) -> list[str]:
    """The hottest functions (self and inclusive share of samples), and the samples by the
    innermost Concerto function on the stack (its own code and the libraries it calls)."""
    if not raw.exists():
        return ["(py-spy wrote no samples)"]
    inclusive: dict[str, int] = defaultdict(int)
    own: dict[str, int] = defaultdict(int)
    ours: dict[str, int] = defaultdict(int)
    ours_sqlglot: dict[str, int] = defaultdict(int)
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        total += n
        frames = [short(f) for f in stack.split(";")]
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
        mine = [i for i, f in enumerate(frames) if "(concerto/" in f]
        where = frames[mine[-1]] if mine else "(no Concerto frame: event loop, thread pool)"
        ours[where] += n
        if mine and any("(sqlglot/" in f for f in frames[mine[-1] :]):
            ours_sqlglot[where] += n
    if not total:
        return ["(no samples)"]
    lines = [
        f"{total:,} samples of threads on CPU over {asks} asks.",
        "",
        "| hottest functions | self % | inclusive % |",
        "|---|---|---|",
    ]
    for frame in sorted(own, key=lambda f: -own[f])[:top]:
        lines.append(f"| `{frame}` | {100 * own[frame] / total:.1f} | {100 * inclusive[frame] / total:.1f} |")
    lines += [
        "",
        "| innermost Concerto function on the stack | % of samples | of which in sqlglot |",
        "|---|---|---|",
    ]
    for frame in sorted(ours, key=lambda f: -ours[f])[:top]:
        lines.append(f"| `{frame}` | {100 * ours[frame] / total:.1f} | {100 * ours_sqlglot[frame] / total:.1f} |")
    return lines


def short(frame: str) -> str:
    """`name (path/module.py:123)` → `name (path/module.py)` (py-spy's paths are relative to sys.path)."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rstrip(')').rsplit(':', 1)[0]})"


def phase_table(found: dict[str, tuple[dict[str, float], dict[str, float], float]]) -> list[str]:
    """One column per (backend, question) profiled; rows in the order of `phase_targets`."""
    labels = list(dict.fromkeys(label for _, _, label in phase_targets()))
    heads = list(found)
    out = ["| step (median ms per ask; calls per ask) | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
    out.append("| **`Orchestrator.ask`, wall** | " + " | ".join(f"**{found[h][2]:,.1f}**" for h in heads) + " |")
    for label in labels:
        if not any(label in found[h][0] for h in heads):
            continue
        cells = []
        for h in heads:
            spent, calls, _ = found[h]
            cells.append(f"{spent.get(label, 0.0):,.1f} ({calls.get(label, 0):g})" if label in spent else "—")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out


# -- the run ------------------------------------------------------------------------------


async def questions(args: argparse.Namespace, files: dict[int, Path], pg_url: str | None, work: Path) -> dict[str, Any]:
    data_dir = Path(os.environ["CONCERTO_DATA_DIR"])
    names = {rows: f"panel_{rows // 1_000_000}m" if rows >= 1_000_000 else f"panel_{rows // 1000}k" for rows in files}
    small = names[args.rows]
    found: dict[str, Any] = {"names": names, "loadavg": {}}

    # 3. first, in a new orchestrator (cold asks mean something), while only the small source exists.
    duck = Backend("DuckDB", data_dir, None)
    duck.load(files[args.rows], small)
    await duck.orchestrator.start()
    duck.orchestrator.resources.embedder.embed(["warm up the model"])
    duck.orchestrator.router.index.rank("warm up the router")  # type: ignore[union-attr]
    print("latency mix ...", flush=True)
    before = os.getloadavg()[0]
    found["mix"] = await latency_mix(duck, small, args.mix_runs)
    found["loadavg"]["mix"] = (before, os.getloadavg()[0])

    backends = [duck]
    if pg_url:
        backends.append(Backend("PostgreSQL", data_dir, pg_url))
    for backend in backends:
        for rows, path in files.items():
            if names[rows] not in backend.loads:
                backend.load(path, names[rows])
    for backend in backends[1:]:  # the embedding model and the router's vectors, then each agent once
        for _, question in MIX_QUESTIONS:
            await backend.ask(question, small)
    found["loads"] = {b.label: dict(b.loads) for b in backends}

    print("profile ...", flush=True)
    before = os.getloadavg()[0]
    profiled: dict[str, Any] = {}
    for backend in backends:
        for label, question in E2E_QUESTIONS:
            profiled[f"{backend.label}, {label}"] = await phases(backend, small, question, 5)
    found["phases"] = profiled
    found["spy"] = {}
    for backend in backends:
        found["spy"][backend.label] = await py_spy(backend, small, E2E_QUESTIONS[0][1], args.spy_seconds, work)
    found["loadavg"]["profile"] = (before, os.getloadavg()[0])

    print("overhead against hand-typed SQL ...", flush=True)
    before = os.getloadavg()[0]
    found["overhead"] = []
    for rows in files:
        runs = args.runs if rows == args.rows else args.big_runs
        for backend in backends:
            for label, question in E2E_QUESTIONS:
                start = time.perf_counter()
                r = await overhead(backend, names[rows], question, runs)
                found["overhead"].append((backend.label, rows, label, question, r))
                print(overhead_row(backend.label, rows, label, question, r), f"({ms(start) / 1000:.0f} s)", flush=True)
    found["loadavg"]["overhead"] = (before, os.getloadavg()[0])
    for backend in backends:
        await backend.close()
    return found


def report(
    args: argparse.Namespace,
    load: dict[str, Any],
    csv_path: Path,
    q: dict[str, Any],
    started: datetime,
    load_avg: tuple[float, float],
) -> str:
    given = [a for a in sys.argv[1:] if not a.startswith("--out") and a != str(args.out)]
    command = " ".join([".venv/bin/python -m benchmarks.bench_analytics", *given])
    lines = [
        "# Analytics pack benchmark (issue 14)",
        "",
        f"Command: `{command}`",
        f"Measured {started:%Y-%m-%d %H:%M} UTC on {os.cpu_count()} cores (shared); {platform.platform()}, "
        f"Python {platform.python_version()}, DuckDB {duckdb_version()}, PostgreSQL {q.get('pg_version', '—')} "
        f"(throwaway cluster, default settings, fsync off). Load average at start / end: "
        f"{load_avg[0]:.1f} / {load_avg[1]:.1f}. No LLM configured; a temporary data dir.",
        "",
        "Data: panel data shaped like the demo source, one row per customer and month "
        f"(customer_id, company_name, description, industry, region, segment, month, sales, units, "
        f"engagement_score, support_tickets); {args.rows:,} rows = {args.rows // MONTHS:,} customers × {MONTHS} "
        f"months, {args.big_rows:,} = {args.big_rows // MONTHS:,} × {MONTHS}.",
        "",
        "Run in this order: 1, then 3 (in a new orchestrator, before anything else is asked), then the "
        "profile, then 2. Another engineer's jobs share the 2 cores: the load average (1 minute) before / "
        "after each part is given with it; the interleaved comparisons (1 and 2) are what to trust when it is high.",
        "",
        "## 1. Load rate",
        "",
        loadavg_line(load["loadavg"]),
        "",
        *load_table(load, csv_path),
        "",
        "## 2. Agent overhead against the same SQL typed by hand",
        "",
        loadavg_line(q["loadavg"]["overhead"]),
        "",
        '`Orchestrator.ask({"query": q, "source": name})` (routing, planning, the agent, synthesis, events) against '
        'the SQL the agent ran (`agent_results[0].output["queries_executed"]`) run directly on a plain connection '
        "(DuckDB: a read-only connection to `<data_dir>/sources/<name>.duckdb`; PostgreSQL: psycopg, "
        "`search_path` set), interleaved, after one warm-up of each. Before each ask the question's own "
        "vectors are dropped from the embedder's cache, so every ask embeds its question like a new one. "
        f"{args.runs} runs at {args.rows / 1e6:g}M rows, {args.big_runs} at {args.big_rows / 1e6:g}M. "
        f"Goal: ask median ≤ {OVERHEAD_MS:.0f} ms + {OVERHEAD_FACTOR} × hand-typed median.",
        "",
        "| store | rows | question | queries | hand-typed median ms | ask median ms | ask p95 ms | agent's own "
        "`duration_ms` median | ask − hand ms | goal ms, met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, rows, label, question, r in q["overhead"]:
        lines.append(overhead_row(backend, rows, label, question, r))
    loads = q["loads"]
    lines += [
        "",
        "Loads into the orchestrators' stores (from Parquet, embeddings on): "
        + "; ".join(f"{b} {name}: {s:.1f} s" for b, named in loads.items() for name, s in named.items())
        + ".",
        "",
        "## 3. Latency of no-LLM answers",
        "",
        loadavg_line(q["loadavg"]["mix"]),
        "",
        *latency_table(q["mix"], args.rows, args.mix_runs),
        "",
        "Cold: the first ask of each question in a new orchestrator that has just loaded the source, the "
        "embedding model and the router's vectors already loaded; the first question also fetches the source's "
        "distinct values (cached per source). Warm asks drop the question's vectors from the embedder's cache "
        'first, as in 2. "Its SQL by hand": the queries the agent ran, run again on a plain connection after '
        "each ask.",
        "",
        f"## Profile at {args.rows / 1e6:g}M rows",
        "",
        loadavg_line(q["loadavg"]["profile"]),
        "",
        "Time inside each step of `Orchestrator.ask` (functions wrapped with a timer; median of 5 asks; "
        f"{args.rows:,} rows; nested steps are included in the step above them):",
        "",
        *phase_table(q["phases"]),
        "",
    ]
    for backend, spy in q["spy"].items():
        lines += [
            f"**py-spy, {backend}**, `{E2E_QUESTIONS[0][1]}` at {args.rows / 1e6:g}M rows: " + spy[0],
            "",
            *spy[1:],
            "",
        ]
    return "\n".join(lines) + "\n"


def loadavg_line(pair: tuple[float, float]) -> str:
    return f"Load average before / after: {pair[0]:.1f} / {pair[1]:.1f}."


def duckdb_version() -> str:
    import duckdb

    return str(duckdb.__version__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="Rows of the load test and the small source")
    parser.add_argument("--big-rows", type=int, default=10_000_000, help="Rows of the large source (0: none)")
    parser.add_argument("--runs", type=int, default=20, help="Timed asks per question at --rows")
    parser.add_argument("--big-runs", type=int, default=10, help="Timed asks per question at --big-rows")
    parser.add_argument("--mix-runs", type=int, default=20, help="Warm asks per question of the latency mix")
    parser.add_argument("--load-runs", type=int, default=5, help="Runs of each load variant")
    parser.add_argument("--spy-seconds", type=float, default=12, help="py-spy sampling per store")
    parser.add_argument("--no-postgres", action="store_true", help="DuckDB only")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/analytics.md")
    args = parser.parse_args()

    for key in list(os.environ):
        if key.startswith(("CONCERTO_LLM_", "CONCERTO_DATABASE")) or key == "OPENAI_API_KEY":
            del os.environ[key]
    work = Path(tempfile.mkdtemp(prefix="concerto-analytics-bench-"))
    os.environ["CONCERTO_DATA_DIR"] = str(work / "data")
    started, load_start = datetime.now(UTC), os.getloadavg()[0]
    t0 = time.perf_counter()

    files: dict[int, Path] = {}
    table = panel(args.rows // MONTHS)
    csv_path, files[args.rows] = write(table, work, "panel_small")
    del table
    if args.big_rows:
        import pyarrow.parquet as pq

        table = panel(args.big_rows // MONTHS, seed=15)
        files[args.big_rows] = work / "panel_big.parquet"
        pq.write_table(table, files[args.big_rows])
        del table
    print(f"data written in {time.perf_counter() - t0:.0f} s to {work}", flush=True)

    with contextlib.ExitStack() as stack:
        pg_url = None
        if not args.no_postgres:
            from tests._services.postgres import running_postgres

            pg = stack.enter_context(running_postgres())
            pg_url = pg.url
        print("load rate ...", flush=True)
        before = os.getloadavg()[0]
        load = bench_load(csv_path, args.rows, pg_url, work, runs=args.load_runs)
        load["loadavg"] = (before, os.getloadavg()[0])
        q = asyncio.run(questions(args, files, pg_url, work))
        if pg_url:
            q["pg_version"] = pg.psql("SHOW server_version").split()[0]
    text = report(args, load, csv_path, q, started, (load_start, os.getloadavg()[0]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    print(f"whole run: {(time.perf_counter() - t0) / 60:.1f} min", flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
