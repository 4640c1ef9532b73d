"""KPI load benchmark: wall time and peak memory of `concerto kpi load` on large CSVs.

Each load runs `concerto kpi load FILE.csv` in its own child process on a fresh data
directory; its peak resident memory is that child's `ru_maxrss` (from `os.wait4`, so one
load's peak never hides another's). Files: 8 KPIs x D departments x 48 months (as in
bench_kpi.py), written in series order, plus the same rows shuffled (the months of every
series-year block then lie all over the file). A 1-record load shows the fixed part (Python,
ChromaDB, the MiniLM embedder). With `--baseline REF` the same loads also run on the
`src` tree of git revision REF (extracted with `git archive`, nothing else touched), so
old and new code are measured side by side in one run.

    .venv/bin/python -m benchmarks.bench_kpi_load [--records 288000,1000000]
        [--shuffled 288000,1000000] [--baseline REF] [--out benchmarks/results/kpi_load.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path

from concerto.packs.kpi.demo import KPIS
from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import COLUMNS

ROOT = Path(__file__).resolve().parent.parent
NOTES = (
    "Stable month; no unusual events.",
    "Increase after a seasonal peak.",
    "Decrease after process improvements.",
    "In line with plan.",
)
# The child is the `concerto` console script, with `src` chosen by PYTHONPATH.
CHILD = "import sys; from concerto.cli import main; sys.argv[0] = 'concerto'; sys.exit(main())"


@dataclass(frozen=True)
class Run:
    """One child process: what it loaded and what it cost."""

    code: str
    file: str
    records: int
    wall_s: float
    load_s: float
    peak_mb: float


def write_csv(path: Path, records: int, shuffled: bool) -> int:
    """At least `records` rows: 8 KPIs x D departments x 48 months; returns how many."""
    months = [Month(2023, 1).shift(i) for i in range(48)]
    departments = -(-records // (len(KPIS) * len(months)))
    rng = random.Random(7)
    lines = []
    for d in range(departments):
        dept = f"unit-{d:05d}"
        for kpi in KPIS:
            level = kpi.level * rng.uniform(0.7, 1.3)
            for m in months:
                value = round(level * rng.uniform(0.95, 1.05), 2)
                lines.append(f"{kpi.name},{dept},{m},{value},{kpi.unit},{rng.choice(NOTES)}\n")
    if shuffled:
        rng.shuffle(lines)
    with path.open("w", encoding="utf-8") as out:
        out.write(",".join(COLUMNS) + "\n")
        out.writelines(lines)
    return len(lines)


def extract_src(ref: str, into: Path) -> tuple[Path, str]:
    """The `src` tree of git revision `ref` under `into`, and the revision's short hash."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit, "src"], cwd=ROOT, capture_output=True, check=True
    )
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src", commit


def load(code: str, src: Path, csv_path: Path, records: int, work: Path) -> Run:
    """`concerto kpi load csv_path` in a child on a fresh data dir; its time and peak RSS."""
    data_dir = Path(tempfile.mkdtemp(prefix="data-", dir=work))
    env = os.environ | {"CONCERTO_DATA_DIR": str(data_dir), "PYTHONPATH": str(src)}
    # Output goes to files so that the child can be reaped with os.wait4, which returns
    # this child's own rusage (RUSAGE_CHILDREN would give the maximum over all children).
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, "kpi", "load", str(csv_path)], env=env, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if child.returncode != 0:
        raise SystemExit(f"{code} load of {csv_path} failed ({child.returncode}):\n{stdout}\n{stderr}")
    got = re.search(r"Loaded (\d+) records .* in ([\d.]+) s", stdout)
    if got is None or int(got[1]) != records:
        raise SystemExit(f"{code}: unexpected output: {stdout}")
    return Run(code, csv_path.name, records, wall, float(got[2]), usage.ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", default="288000,1000000", help="Comma-separated sizes of series-ordered files")
    parser.add_argument(
        "--shuffled", default="288000,1000000", help="Comma-separated sizes of shuffled files ('' for none)"
    )
    parser.add_argument("--baseline", help="Also measure the src tree of this git revision (e.g. HEAD)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/kpi_load.md"), help="Markdown results")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="concerto-kpi-load-"))
    codes: list[tuple[str, Path]] = []
    if args.baseline:
        old_src, commit = extract_src(args.baseline, work / "baseline")
        codes.append((f"before ({commit})", old_src))
    codes.append(("after (working tree)", ROOT / "src"))

    files: list[tuple[Path, int]] = []
    tiny = work / "one.csv"
    tiny.write_text(",".join(COLUMNS) + "\nrevenue,unit-00000,2025-01,1.5,kUSD,\n", encoding="utf-8")
    files.append((tiny, 1))
    sizes = [(int(n), False) for n in args.records.split(",") if n]
    sizes += [(int(n), True) for n in args.shuffled.split(",") if n]
    for n, shuffled in sizes:
        path = work / f"kpis-{n}{'-shuffled' if shuffled else ''}.csv"
        files.append((path, write_csv(path, n, shuffled)))
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)", flush=True)

    runs: list[Run] = []
    for path, count in files:
        for code, src in codes:
            run = load(code, src, path, count, work)
            runs.append(run)
            print(run, flush=True)

    sizes_mb = {path.name: path.stat().st_size / 1e6 for path, _ in files}
    fixed = {r.code: r.peak_mb for r in runs if r.records == 1}
    rows = [
        f"| {r.file} ({sizes_mb[r.file]:.1f} MB) | {r.records:,} | {r.code} | {r.load_s:.1f} | "
        f"{r.records / max(r.load_s, 1e-9):,.0f} | {r.wall_s:.1f} | **{r.peak_mb:,.0f}** | "
        f"{r.peak_mb - fixed[r.code]:,.0f} |"
        for r in runs
    ]
    growth = []
    for code, _ in codes:
        ordered = sorted(
            (r for r in runs if r.code == code and r.records > 1 and "shuffled" not in r.file), key=lambda r: r.records
        )
        if len(ordered) >= 2:
            low, high = ordered[0], ordered[-1]
            per = (high.peak_mb - low.peak_mb) / (high.records - low.records) * 100_000
            growth.append(f"- {code}: {per:.0f} MB more peak per 100,000 more records ({low.file} → {high.file}).")
    command = " ".join(
        [".venv/bin/python -m benchmarks.bench_kpi_load", f"--records {args.records}", f"--shuffled '{args.shuffled}'"]
        + ([f"--baseline {args.baseline}"] if args.baseline else [])
    )
    text = "\n".join(
        [
            "# KPI load: time and peak memory (issue 15)",
            "",
            f"Command: `{command}`",
            f"Machine: {platform.platform()}, Python {platform.python_version()}, "
            f"{os.cpu_count()} cores (shared). ChromaDB embedded (PersistentClient), a fresh data dir per load.",
            f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. "
            f"Load average at start / end: {load_start:.1f} / {os.getloadavg()[0]:.1f}.",
            "",
            "Each row is one `concerto kpi load FILE.csv` in its own process. *load s* is what the",
            "command reports (validation, embedding the new names, writes); *wall s* adds Python start-up",
            "and imports; *peak RSS* is the process's maximum resident memory (`ru_maxrss` from `wait4`);",
            "*above 1-record* subtracts the peak of loading `one.csv` (Python, ChromaDB, MiniLM).",
            "Before: the whole file is validated into a list, then grouped and written. After: one",
            "streaming pass validates and spills records to temporary files by block, a second writes",
            "them a batch at a time (`KPIStore.load_csv`).",
            "",
            "| file | records | code | load s | records/s | wall s | peak RSS MB | above 1-record MB |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "How the peak grows with the file (series-ordered files):",
            "",
            *growth,
            "",
            "After the change what still grows is ChromaDB's own memory, with the entries the collection",
            "holds (one per kpi, department and year, i.e. per 12 records here; its embedded client keeps",
            "the vector index in memory), whoever writes to it. The loader's Python memory is flat in the",
            "file's size (tracemalloc: `test_memory_is_bounded_by_a_batch_not_the_file` in",
            "`tests/packs/kpi/test_kpi_load.py`).",
            "Times move by about ±10% from run to run on this shared machine; compare the two codes",
            "row by row.",
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
