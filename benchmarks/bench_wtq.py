"""WikiTableQuestions (issue 28): questions people wrote about real tables, scored by
`answer_values` with the dataset's official rules (`benchmarks.wtq_score`). No LLM.

Each sampled question's table is loaded once per run, as `concerto data load PATH --name NAME`
loads it (`store.load` with the profile overrides the command builds, into a temporary data
directory), then the question is asked with that source named, as `concerto ask Q --source NAME
--json` asks it (`Orchestrator.ask` with `{"query": Q, "source": NAME}`), in this one process:
the same code paths without a process start per question (about 1-2 s each). All tables are
loaded before the orchestrator starts, so every question sees the same data directory.

Scored: `answer_values` (missing or null is wrong) against the gold answer; beside it, whether
the gold answer appears anywhere in the response's text (the issue's "contain the right answer
somewhere"). Sample: the split's questions sorted by id, shuffled with `--seed` (a seed < 0
keeps the sorted order), then `--offset` and `--limit`. Report on dev; tune on train only.

    .venv/bin/python -m benchmarks.bench_wtq --split dev --limit 100 [--seed 28] [--offset 0]
        [--timeout 60] [--output benchmarks/results/wtq.md] [--jsonl benchmarks/results/wtq_dev.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks._timing import percentile
from benchmarks.wtq_score import contained_in, correct, gold_values

ROOT = Path(__file__).resolve().parent.parent
WTQ = (ROOT.parent / "shared" / "wtq") if (ROOT.parent / "shared" / "wtq").is_dir() else Path("/work/shared/wtq")
SPLITS = {"dev": "random-split-1-dev.tsv", "train": "random-split-1-train.tsv"}


def read_split(wtq: Path, split: str) -> list[dict[str, str]]:
    """The split's rows (id, utterance, context, targetValue), sorted by id."""
    with (wtq / SPLITS[split]).open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return sorted(rows, key=lambda r: r["id"])


def sample(rows: list[dict[str, str]], limit: int, seed: int, offset: int) -> list[dict[str, str]]:
    """Deterministic: sorted by id, shuffled by `seed` (unless < 0), then `offset`, `limit`."""
    rows = list(rows)
    if seed >= 0:
        random.Random(seed).shuffle(rows)
    return rows[offset : offset + limit]


def table_name(context: str) -> str:
    """A valid source name for a table's path: csv/204-csv/590.csv is t204_590."""
    m = re.fullmatch(r"csv/(\d+)-csv/(\d+)\.csv", context)
    if m is None:
        raise ValueError(f"unexpected table path {context!r}")
    return f"t{m.group(1)}_{m.group(2)}"


def load_tables(settings: Any, wtq: Path, contexts: list[str]) -> dict[str, str]:
    """Load each table as `concerto data load PATH --name NAME` does; the error of each that failed
    (type and first line), by table path."""
    from concerto.data.cli import _overrides, _utf8_named
    from concerto.data.sources import store_for
    from concerto.data.store import valid_name

    store = store_for(settings)
    failed: dict[str, str] = {}
    for context in contexts:
        path = wtq / context
        try:
            with _utf8_named(path) as readable:
                target = valid_name(table_name(context))
                store.load(readable, target, overrides=_overrides(path, target, ()))
        except Exception as exc:  # every failure is a finding, grouped in the report
            failed[context] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return failed


def response_text(dump: dict[str, Any]) -> str:
    """What the user reads: the answer's prose and findings, or the error's message."""
    if "response" in dump:
        return "\n".join([dump.get("response") or "", *(dump.get("key_findings") or [])])
    return dump.get("error_message") or ""


async def ask_all(
    settings: Any, questions: list[dict[str, str]], failed: dict[str, str], timeout: float
) -> list[dict[str, Any]]:
    from concerto.orchestrator.engine import Orchestrator

    records = []
    async with Orchestrator(settings) as orchestrator:
        for q in questions:
            gold = gold_values(q["targetValue"])
            record: dict[str, Any] = {
                "id": q["id"],
                "utterance": q["utterance"],
                "table": q["context"],
                "source": table_name(q["context"]),
                "gold": gold,
            }
            if q["context"] in failed:
                record.update(status="load_failed", error=failed[q["context"]], answer_values=None)
                record.update(correct=False, contains=False, latency_ms=None)
                records.append(record)
                continue
            start = time.perf_counter()
            try:
                result = await asyncio.wait_for(
                    orchestrator.ask({"query": q["utterance"], "source": record["source"]}), timeout
                )
            except TimeoutError:
                record.update(status="timeout", answer_values=None, correct=False, contains=False)
                record["latency_ms"] = (time.perf_counter() - start) * 1000
                records.append(record)
                continue
            latency = (time.perf_counter() - start) * 1000
            dump = result.model_dump(mode="json")
            values = dump.get("answer_values")
            text = response_text(dump)
            record.update(
                status="answered" if "response" in dump else str(dump.get("status")),
                error_category=dump.get("error_category"),
                agents=dump.get("agents_invoked") or (dump.get("intent_classification") or {}).get("agents"),
                answer_values=values,
                correct=correct(gold, values),
                contains=contained_in(gold, text),
                latency_ms=latency,
                response=text[:2000],
            )
            records.append(record)
    return records


def report(
    records: list[dict[str, Any]], failed: dict[str, str], args: argparse.Namespace, tables: int, seconds: float
) -> str:
    n = len(records)
    right = sum(r["correct"] for r in records)
    contains = sum(r["contains"] for r in records)
    present = sum(r.get("answer_values") is not None for r in records)
    statuses = Counter(r["status"] for r in records)
    timeouts = statuses.get("timeout", 0)
    errors = sum(1 for r in records if r.get("error_category"))
    latencies = [r["latency_ms"] for r in records if r.get("latency_ms") is not None and r["status"] != "timeout"]
    agents = Counter(",".join(r.get("agents") or []) or "(none)" for r in records if r["status"] != "load_failed")
    load_groups = Counter(re.sub(r"'[^']*'|\d+", "…", reason) for reason in failed.values())
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    command = (
        f".venv/bin/python -m benchmarks.bench_wtq --split {args.split} --limit {args.limit}"
        f" --seed {args.seed} --offset {args.offset}"
    )
    pct = lambda k: f"{100 * k / n:.1f} %" if n else "n/a"  # noqa: E731
    lines = [
        "# WikiTableQuestions (issue 28)",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC at commit {commit}, Python {platform.python_version()}, no LLM:",
        "",
        "```bash",
        command
        + (f" --output {args.output}" if args.output else "")
        + (f" --jsonl {args.jsonl}" if args.jsonl else ""),
        "```",
        "",
        f"{n} questions of `random-split-1-{args.split}` (sorted by id, shuffled with seed {args.seed}, from "
        f"offset {args.offset}) on {tables} tables. Each table loaded once as `concerto data load PATH --name "
        "tNNN_MMM` loads it (`store.load` with the overrides the command builds) into a temporary "
        "CONCERTO_DATA_DIR; each question asked in this one process as `concerto ask Q --source tNNN_MMM "
        "--json` asks it (`Orchestrator.ask({'query': Q, 'source': NAME})`), one at a time. Scored with "
        "`benchmarks/wtq_score.py` (the official evaluator's rules; gold numbers and dates read as its "
        "CoreNLP tagging would for plain numbers and dates in words).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| accuracy (`answer_values`, official rules) | **{right} / {n} = {pct(right)}** |",
        f"| answers with `answer_values` present (not null) | {present} / {n} |",
        f"| gold answer found in the response's text | {contains} / {n} = {pct(contains)} |",
        f"| structured errors (`OrchestratorErrorResponse`) | {errors} |",
        f"| timeouts (> {args.timeout:g} s) | {timeouts} |",
        f"| tables that failed to load | {len(failed)} of {tables} ({statuses.get('load_failed', 0)} questions) |",
        "| latency per question p50 / p95 (ms, `Orchestrator.ask`) | "
        + (f"{percentile(latencies, 0.5):.0f} / {percentile(latencies, 0.95):.0f} |" if latencies else "n/a |"),
        f"| whole run (loads included) | {seconds:.0f} s |",
        "",
        "Outcome by status: " + ", ".join(f"{k} {v}" for k, v in statuses.most_common()) + ".",
        "",
        "Agents that answered (questions): " + ", ".join(f"{k} {v}" for k, v in agents.most_common(10)) + ".",
        "",
    ]
    if load_groups:
        lines += ["Load failures, grouped:", ""]
        lines += [f"- {count} × {reason}" for reason, count in load_groups.most_common()]
        lines.append("")
    if args.jsonl:
        lines += [f"Every question, with what came back: `{args.jsonl}` (one JSON object a line).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--seed", type=int, default=28, help="shuffle seed; < 0 keeps the order by id")
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one question may take")
    parser.add_argument("--wtq", type=Path, default=WTQ, help="the dataset's folder")
    parser.add_argument("--output", help="write the Markdown report here (else stdout)")
    parser.add_argument("--jsonl", help="write each question's record here (one JSON object a line)")
    args = parser.parse_args(argv)

    from concerto.settings import Settings

    questions = sample(read_split(args.wtq, args.split), args.limit, args.seed, args.offset)
    contexts = list(dict.fromkeys(q["context"] for q in questions))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="concerto-wtq-") as folder:
        # No LLM: the goal is measured without one, whatever the environment configures.
        settings = Settings(
            data_dir=Path(folder), llm_model=None, llm_base_url=None, llm_api_key=None, store_events=False
        )
        failed = load_tables(settings, args.wtq, contexts)
        print(f"loaded {len(contexts) - len(failed)} of {len(contexts)} tables", file=sys.stderr)
        records = asyncio.run(ask_all(settings, questions, failed, args.timeout))
    seconds = time.perf_counter() - started
    if args.jsonl:
        with open(args.jsonl, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    text = report(records, failed, args, len(contexts), seconds)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
