"""KPI pack benchmark: store query and end-to-end question latency, and ingestion rate.

Measures, with the demo data and then with N extra records (default 1,000,000) loaded
from a CSV through the same path as `concerto kpi load`:
- the store query alone (`KPIStore.query`, a 4-month range), median/p95 over many runs;
- a KPI question end to end, warm (`KPIAgent.prepare` + `run`), structured and plain;
- ingestion: CSV validation + writes, in records/s.

    .venv/bin/python -m benchmarks.bench_kpi [--records N] [--out benchmarks/results/kpi.md]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from concerto.agents.base import Agent
from concerto.packs.kpi.agent import KPIAgent
from concerto.packs.kpi.demo import KPIS
from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import COLUMNS
from concerto.packs.kpi.store import get_store
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import make_context, run_agent

NOW = datetime(2025, 6, 15, tzinfo=UTC)
NOTES = (
    "Stable month; no unusual events.",
    "Increase after a seasonal peak.",
    "Decrease after process improvements.",
    "In line with plan.",
)


def timed(fn: Callable[[], object], runs: int) -> dict[str, float]:
    """Median, p95 and max in milliseconds of `runs` calls (after one warm-up call)."""
    fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {"median": statistics.median(samples), "p95": samples[int(0.95 * (runs - 1))], "max": samples[-1]}


def write_bulk_csv(path: Path, records: int) -> tuple[int, int]:
    """8 KPIs x D departments x 48 months (2023-01..2026-12), at least `records` rows."""
    months = [Month(2023, 1).shift(i) for i in range(48)]
    departments = -(-records // (len(KPIS) * len(months)))
    rng = random.Random(7)
    rows = 0
    with path.open("w", encoding="utf-8") as out:
        out.write(",".join(COLUMNS) + "\n")
        for d in range(departments):
            dept = f"unit-{d:05d}"
            for kpi in KPIS:
                level = kpi.level * rng.uniform(0.7, 1.3)
                for m in months:
                    value = round(level * rng.uniform(0.95, 1.05), 2)
                    out.write(f"{kpi.name},{dept},{m},{value},{kpi.unit},{rng.choice(NOTES)}\n")
                    rows += 1
    return rows, departments


def agent_latency(agent: Agent, question: str, runs: int) -> dict[str, float]:
    context = make_context(question, now=NOW, settings=agent.settings, resources=agent.resources)

    async def once() -> None:
        await run_agent(agent, context, question)

    loop = asyncio.new_event_loop()
    try:
        return timed(lambda: loop.run_until_complete(once()), runs)
    finally:
        loop.close()


def measure(agent: Agent, label: str) -> list[str]:
    store = get_store(agent.settings, agent.resources)
    rng = random.Random(1)
    names = store.catalog()
    depts, kpis = names.names("department"), names.names("kpi")

    def query() -> None:
        kpi, dept = rng.choice(kpis), rng.choice(depts)
        start = Month(2023, 1).shift(rng.randrange(0, 44))
        store.query(kpi, dept, start, start.shift(3))

    rows = [
        f"| {label} | store query (random series, 4-month range) | "
        + "{median:.2f} | {p95:.2f} | {max:.2f} |".format(**timed(query, 300))
    ]
    for question in (
        "kpi-attrition-rate department-home-loan start-2025-02-01 end-2025-05-31",
        "home-loan attrition rate previous 4 months",
        "employee turnover in the home loan team for March 2025",
    ):
        stats = agent_latency(agent, question, 50)
        rows.append(
            f"| {label} | end to end, warm: `{question}` | " + "{median:.2f} | {p95:.2f} | {max:.2f} |".format(**stats)
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="Bulk records to load")
    parser.add_argument("--data-dir", type=Path, help="Data directory (default: a temporary one)")
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/kpi.md"), help="Markdown file for the results"
    )
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="concerto-kpi-bench-"))
    settings = Settings(data_dir=data_dir)
    resources = Resources(settings)
    agent = KPIAgent(settings, resources)
    store = get_store(settings, resources)

    start = time.perf_counter()
    store.ensure_demo()
    demo_s = time.perf_counter() - start
    rows = measure(agent, "demo (2,688)")
    print("\n".join(rows), flush=True)

    csv_path = data_dir / "bulk.csv"
    written, departments = write_bulk_csv(csv_path, args.records)
    print(f"wrote {written:,} rows ({departments} departments) to {csv_path}", flush=True)
    from concerto.packs.kpi.records import CSVFile

    # Reading + validating alone (not part of the load below, which does it in its first pass).
    start = time.perf_counter()
    CSVFile(csv_path, known_units=store.catalog().units).validate()
    parse_s = time.perf_counter() - start
    start = time.perf_counter()
    store.load_csv(csv_path)  # what `concerto kpi load` runs
    ingest_s = time.perf_counter() - start
    print(f"ingested {written:,} in {ingest_s:.1f} s (parse {parse_s:.1f} s)", flush=True)
    entries = store.count_entries()

    # A new process: import, open the persisted store, first query (what a CLI start pays).
    probe = (
        "import time; t = time.perf_counter(); from concerto.settings import Settings; "
        "from concerto.resources import Resources; from concerto.packs.kpi.store import get_store; "
        f"from concerto.packs.kpi.months import Month; s = Settings(data_dir={str(data_dir)!r}); "
        "get_store(s, Resources(s)).query('attrition-rate', 'home-loan', Month(2025, 2), "
        "Month(2025, 5)); print(time.perf_counter() - t)"
    )
    reopen_s = float(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    )

    label = f"demo + {written:,}"
    rows += measure(agent, label)
    print("\n".join(rows[-4:]), flush=True)

    text = "\n".join(
        [
            "# KPI pack benchmark",
            "",
            f"Command: `.venv/bin/python -m benchmarks.bench_kpi --records {args.records}`",
            f"Machine: {platform.platform()}, Python {platform.python_version()}, "
            f"{os.cpu_count()} cores (shared). ChromaDB embedded (PersistentClient).",
            f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Clock for relative dates: {NOW:%Y-%m-%d}. "
            f"Load average at start / end: {load_start:.1f} / {os.getloadavg()[0]:.1f} (other jobs share the cores).",
            "",
            "## Latency (ms; warm; 300 store queries, 50 questions each)",
            "",
            "| data | what | median | p95 | max |",
            "|---|---|---|---|---|",
            *rows,
            "",
            "## Ingestion",
            "",
            f"- Demo data on first use (2,688 records, embedding 15 names' descriptions and phrases): {demo_s:.1f} s",
            f"- Bulk CSV: {written:,} records ({departments:,} departments x 8 KPIs x 48 months) "
            f"in {ingest_s:.1f} s = **{written / ingest_s:,.0f} records/s** "
            f"(of which reading + validating the CSV: {parse_s:.1f} s; ChromaDB entries after: {entries:,}; "
            "peak memory: benchmarks/results/kpi_load.md)",
            f"- A new process opening the store and answering a first query: {reopen_s:.1f} s",
            "",
            "Goals: store query < 20 ms at 1M records; 1M records ingested in < 2 minutes.",
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
