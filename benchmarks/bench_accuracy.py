"""Accuracy of the analytics agents without an LLM, on public data sets (issue 14, "Measured").

Loads the data sets of `benchmarks/accuracy/datasets.py` into a fresh data dir, asks every
question of `benchmarks/accuracy/questions.yaml` through `concerto.Orchestrator` (no
`CONCERTO_LLM_*`, no OPENAI_API_KEY: every step runs on the embedded defaults) and checks
each answer against expectations computed independently in pandas:

- executed: the orchestrator answered (no error response) and an agent completed;
- routed: the expected agent (or an alternative the question lists) was invoked;
- right: routed, that agent completed, and every check of the question passes on its output.

    .venv/bin/python -m benchmarks.bench_accuracy [--backend duckdb|postgres|both]
        [--output benchmarks/results/accuracy.md] [--only ID,ID] [--agent NAME] [--show] [--dump FILE]

PostgreSQL: a throwaway cluster from tests/_services/postgres.py (Debian's `postgresql`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.accuracy import datasets as ds  # the data sets and their expected answers

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

AGENTS = [
    "sql_analytics",
    "segmentation",
    "pattern_recognition",
    "benchmark",
    "opportunity",
    "risk",
    "business_impact",
    "semantic_text",
    "semantic_search",
    "data_discovery",
    "data_ingestion",
]
KINDS = {
    "value",
    "group_values",
    "top_label",
    "ranking",
    "set_overlap",
    "direction",
    "count",
    "contains",
    "source_loaded",
}
FETCH_PURPOSES = ("distinct values of ", "similarity of each ")  # semantic_text's look at every value
REL_TOL, ABS_TOL = 0.005, 0.006  # agents round to two decimals


# -- reading an answer ------------------------------------------------------------------------


def norm(value: Any) -> str:
    """A cell or label as comparable text: lower case, stripped, whole floats without '.0'."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()


def same_label(label: str, cell: Any) -> bool:
    """`cell` names `label`; a year ("1954") also names a date of that year ("1954-01-01")."""
    if cell is None or (isinstance(cell, float | int) and not isinstance(cell, bool) and not label.isdigit()):
        return False
    text, want = norm(cell), norm(label)
    if text == want:
        return True
    return bool(re.fullmatch(r"\d{4}", want)) and re.match(r"\d{4}-\d\d-\d\d", text) is not None and text[:4] == want


def number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(float(value)) else None
    return None


def close(got: float, want: float, rel: float = REL_TOL, abs_: float = ABS_TOL) -> bool:
    return abs(got - want) <= max(abs_, rel * abs(want))


_WORD_NUMBER = re.compile(r"([-+]?\d[\d,]*(?:\.\d+)?)\s*([KMB])?(?![\w])")


def text_numbers(text: str) -> list[float]:
    """Numbers as the insights write them: 1,234 / 1.23M / 4.5B / -3.2 (percent signs ignored)."""
    out = []
    for digits, scale in _WORD_NUMBER.findall(text):
        try:
            value = float(digits.replace(",", ""))
        except ValueError:
            continue
        out.append(value * {"": 1, "K": 1e3, "M": 1e6, "B": 1e9}[scale])
    return out


@dataclass
class Answer:
    """What one agent returned, in the shape the checks read."""

    agent: str
    status: str
    output: dict[str, Any]
    summary: str = ""
    findings: list[str] = field(default_factory=list)
    error: str = ""
    error_type: str = ""

    @property
    def results(self) -> list[dict[str, Any]]:
        return [r for r in self.output.get("results") or [] if not str(r.get("purpose", "")).startswith(FETCH_PURPOSES)]

    @property
    def headline(self) -> str:
        return "\n".join([self.summary, str((self.output.get("insights") or {}).get("summary") or "")])

    @property
    def text(self) -> str:
        insights = self.output.get("insights") or {}
        parts = [self.summary, *self.findings, str(insights.get("summary") or "")]
        parts += [str(x) for x in insights.get("findings") or []] + [str(x) for x in insights.get("insights") or []]
        return "\n".join(parts)


def qualifying(answer: Answer, check: dict[str, Any]) -> list[dict[str, Any]]:
    """The results a check looks at: those about its `measure` (named in the purpose or a
    column), narrowed by `result` (first | last | a purpose substring)."""
    results = answer.results
    measure = check.get("measure")
    if measure:
        hints = [measure] if isinstance(measure, str) else list(measure)

        def about(r: dict[str, Any]) -> bool:
            names = " ".join([str(r.get("purpose", "")), *map(str, r.get("columns") or [])]).lower()
            return any(h.lower() in names for h in hints)

        results = [r for r in results if about(r)]
    which = check.get("result")
    if which == "first":
        results = results[:1]
    elif which == "last":
        results = results[-1:]
    elif isinstance(which, str):
        results = [r for r in results if which.lower() in str(r.get("purpose", "")).lower()]
    return results


def hinted(column: str, check: dict[str, Any]) -> bool:
    hint = check.get("column_hint")
    if not hint:
        return True
    hints = [hint] if isinstance(hint, str) else list(hint)
    return any(h.lower() in column.lower() for h in hints)


def numbers_of(row: dict[str, Any], check: dict[str, Any]) -> list[float]:
    return [n for k, v in row.items() if hinted(k, check) and (n := number(v)) is not None]


def tolerances(check: dict[str, Any]) -> tuple[float, float]:
    return float(check.get("rel_tol", REL_TOL)), float(check.get("abs_tol", ABS_TOL))


# -- the checks -------------------------------------------------------------------------------


def check_value(answer: Answer, check: dict[str, Any]) -> str | None:
    wanted = check["value"] if isinstance(check["value"], list) else [check["value"]]
    wanted = [float(w) for w in wanted if w is not None]
    rel, abs_ = tolerances(check)
    found: list[float] = []
    for r in qualifying(answer, check):
        for row in r.get("data") or []:
            found += numbers_of(row, check)
    if check.get("in_text"):  # the headline: the summary (`in_text: all`: the findings too)
        found += text_numbers(answer.text if check["in_text"] == "all" else answer.headline)
    if any(close(f, w, rel, abs_) for f in found for w in wanted):
        return None
    shown = ", ".join(f"{f:g}" for f in found[:8]) or "no number"
    return f"expected {' or '.join(f'{w:g}' for w in wanted)}, got {shown}"


def _row_labels(row: dict[str, Any]) -> list[Any]:
    return [v for v in row.values() if v is not None]


def check_group_values(answer: Answer, check: dict[str, Any]) -> str | None:
    mapping: dict[str, Any] = check["mapping"]
    rel, abs_ = tolerances(check)
    rows = [row for r in qualifying(answer, check) for row in r.get("data") or []]
    missing = []
    for key, want in mapping.items():
        labels = str(key).split("|")
        ok = False
        for row in rows:
            cells = _row_labels(row)
            named = all(any(same_label(label, c) for c in cells) for label in labels)
            if named and (want is None or any(close(n, float(want), rel, abs_) for n in numbers_of(row, check))):
                ok = True
                break
        if not ok:
            got = next((row for row in rows if any(same_label(labels[0], c) for c in _row_labels(row))), None)
            missing.append(f"{key}={want} (row: {compact(got) if got else 'none'})")
    share = 1 - len(missing) / max(1, len(mapping))
    if share >= float(check.get("min_fraction", 1.0)):
        return None
    return f"{len(missing)} of {len(mapping)} groups wrong or missing: " + "; ".join(missing[:4])


def check_top_label(answer: Answer, check: dict[str, Any]) -> str | None:
    label = str(check["value"])
    firsts = [r["data"][0] for r in qualifying(answer, check) if r.get("data")]
    if any(any(same_label(label, c) for c in _row_labels(row)) for row in firsts):
        return None
    return f"expected {label} first, got " + (" | ".join(compact(r) for r in firsts[:2]) or "no rows")


def check_ranking(answer: Answer, check: dict[str, Any]) -> str | None:
    labels = [str(x) for x in check["labels"]]
    for r in qualifying(answer, check):
        rows = (r.get("data") or [])[: len(labels)]
        if len(rows) < len(labels):
            continue
        if check.get("ordered", True):
            if all(any(same_label(lab, c) for c in _row_labels(row)) for lab, row in zip(labels, rows, strict=True)):
                return None
        elif all(any(any(same_label(lab, c) for c in _row_labels(row)) for row in rows) for lab in labels):
            return None
    return f"expected {labels} first, got " + "; ".join(
        ", ".join(compact(row, 2) for row in (r.get("data") or [])[: len(labels)])
        for r in qualifying(answer, check)[:1]
    )


def returned_labels(answer: Answer, check: dict[str, Any], dataset: str) -> set[str]:
    universe_column = check.get("universe")
    universe = {norm(v) for v in ds.frame(dataset)[universe_column].dropna()} if universe_column else None
    columns = check.get("columns")
    out: set[str] = set()
    for r in qualifying(answer, check):
        rows = r.get("data") or []
        for row in rows[: int(check["top_rows"])] if "top_rows" in check else rows:
            for key, cell in row.items():
                if cell is None or (columns and key not in columns):
                    continue
                if not isinstance(cell, str) and not columns:
                    continue  # numbers count only in the columns named (ids)
                if universe is None or norm(cell) in universe:
                    out.add(norm(cell))
    return out


def check_set_overlap(answer: Answer, check: dict[str, Any], dataset: str) -> str | None:
    expected = {norm(v) for v in check["values"]}
    got = returned_labels(answer, check, dataset)
    problems = []
    if len(got) < int(check.get("min_returned", 1 if expected else 0)):
        problems.append(f"{len(got)} returned, at least {check.get('min_returned', 1)} wanted")
    if expected:
        recall = len(expected & got) / len(expected)
        if recall < float(check.get("min_recall", 0.0)):
            problems.append(f"recall {recall:.2f} < {check['min_recall']} (missing: {sorted(expected - got)[:5]})")
    if got and "min_precision" in check:
        precision = len(expected & got) / len(got)
        if precision < float(check["min_precision"]):
            problems.append(
                f"precision {precision:.2f} < {check['min_precision']} (extra: {sorted(got - expected)[:5]})"
            )
    if "max_returned" in check and len(got) > int(check["max_returned"]):
        problems.append(f"{len(got)} returned, at most {check['max_returned']} wanted")
    return "; ".join(problems) or None


def check_direction(answer: Answer, check: dict[str, Any]) -> str | None:
    """The trend the answer states ("upward", "downward", "no clear"), else the sign of the slope
    it returns, else the direction of the series it returns."""
    want = str(check["value"])
    stated = _stated_trend(answer.headline) or _stated_trend(answer.text)
    if stated:
        return None if stated == want else f"the answer says {stated}, expected {want}"
    for r in qualifying(answer, check):
        rows = r.get("data") or []
        slopes = [number(row.get("slope")) for row in rows if "slope" in row]
        if slopes and slopes[0] is not None:
            got = "up" if slopes[0] > 0 else "down" if slopes[0] < 0 else "flat"
            return None if got == want else f"slope {slopes[0]:g}: {got}, expected {want}"
        series = [n for row in rows if (nums := numbers_of(row, check)) for n in nums[-1:]]
        if len(series) >= 3:
            got = ds.trend(series)
            return None if got == want else f"the series returned goes {got}, expected {want}"
    return f"no trend in the answer (expected {want})"


def _stated_trend(text: str) -> str | None:
    lowered = text.lower()
    for words, direction in (("no clear", "flat"), ("upward", "up"), ("downward", "down"), ("flat trend", "flat")):
        if words in lowered:
            return direction
    return None


def check_count(answer: Answer, check: dict[str, Any]) -> str | None:
    results = qualifying(answer, check)
    counts = [int(r.get("row_count") or 0) for r in results]
    wanted = check["value"] if isinstance(check["value"], list) else [check["value"]]
    if any(int(c) == int(w) for c in counts for w in wanted):
        return None
    return f"expected {wanted} rows, got {counts or 'no result'}"


def check_contains(answer: Answer, check: dict[str, Any]) -> str | None:
    texts = check["text"] if isinstance(check["text"], list) else [check["text"]]
    cells = [str(c) for r in answer.results for row in r.get("data") or [] for c in row.values()]
    haystack = (answer.text + "\n" + "\n".join(cells)).lower()
    missing = [t for t in texts if str(t).lower() not in haystack]
    share = 1 - len(missing) / max(1, len(texts))
    if share >= float(check.get("min_fraction", 1.0)):
        return None
    return f"missing {missing[:6]}"


def check_source_loaded(answer: Answer, check: dict[str, Any]) -> str | None:
    source = answer.output.get("source")
    if source != check["name"]:
        return f"loaded as {source!r}, expected {check['name']!r}"
    rows = [n for r in answer.results for row in r.get("data") or [] if (n := number(row.get("rows"))) is not None]
    if int(check["rows"]) in [int(x) for x in rows]:
        return None
    return f"expected {check['rows']} rows, got {rows}"


def check(answer: Answer, spec: dict[str, Any], dataset: str) -> str | None:
    """None when the answer passes the check, else why not. `any_of`: one of the checks passes."""
    if "any_of" in spec:
        reasons = [check(answer, s, dataset) for s in spec["any_of"]]
        return None if any(r is None for r in reasons) else " / ".join(str(r) for r in reasons)
    kind = spec["kind"]
    if kind == "value":
        return check_value(answer, spec)
    if kind == "group_values":
        return check_group_values(answer, spec)
    if kind == "top_label":
        return check_top_label(answer, spec)
    if kind == "ranking":
        return check_ranking(answer, spec)
    if kind == "set_overlap":
        return check_set_overlap(answer, spec, dataset)
    if kind == "direction":
        return check_direction(answer, spec)
    if kind == "count":
        return check_count(answer, spec)
    if kind == "contains":
        return check_contains(answer, spec)
    if kind == "source_loaded":
        return check_source_loaded(answer, spec)
    raise ValueError(f"unknown check kind {kind!r}")


def compact(row: dict[str, Any] | None, limit: int = 6) -> str:
    if not row:
        return "-"
    items = list(row.items())[:limit]
    return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in items) + ("…" if len(row) > limit else "") + "}"


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    text = str(v)
    return text if len(text) <= 30 else text[:27] + "…"


# -- the questions ------------------------------------------------------------------------------


def validate(questions: list[dict[str, Any]]) -> list[str]:
    """What is wrong with the question set (empty: nothing)."""
    problems = []
    ids = Counter(str(q.get("id")) for q in questions)
    problems += [f"duplicate id {i}" for i, n in ids.items() if n > 1]
    for q in questions:
        where = f"{q.get('id')}"
        for key in ("id", "dataset", "question", "agent", "expect"):
            if not q.get(key):
                problems.append(f"{where}: no {key}")
        if q.get("dataset") not in ds.DATASETS:
            problems.append(f"{where}: unknown dataset {q.get('dataset')!r}")
        for agent in [q.get("agent"), *(q.get("also") or [])]:
            if agent not in AGENTS:
                problems.append(f"{where}: unknown agent {agent!r}")
        for spec in ds.checks_of(q):
            problems += [f"{where}: {p}" for p in _spec_problems(spec)]
    return problems


_NEEDS = {
    "value": ["value"],
    "group_values": ["mapping"],
    "top_label": ["value"],
    "ranking": ["labels"],
    "set_overlap": ["values"],
    "direction": ["value"],
    "count": ["value"],
    "contains": ["text"],
    "source_loaded": ["name", "rows"],
}


def _spec_problems(spec: Any) -> list[str]:
    if not isinstance(spec, dict):
        return ["a check is not a mapping"]
    if "any_of" in spec:
        return [p for s in spec["any_of"] for p in _spec_problems(s)]
    kind = spec.get("kind")
    if kind not in KINDS:
        return [f"unknown check kind {kind!r}"]
    out = [f"{kind} check without {k}" for k in _NEEDS[kind] if spec.get(k) is None]
    if kind == "direction" and spec.get("value") not in ("up", "down", "flat"):
        out.append(f"direction {spec.get('value')!r} is not up, down or flat")
    if kind == "group_values" and not isinstance(spec.get("mapping"), dict):
        out.append("group_values mapping is not a mapping")
    if kind in ("set_overlap",) and not isinstance(spec.get("values"), list):
        out.append("set_overlap values is not a list")
    return out


def datasets_of(questions: list[dict[str, Any]]) -> list[str]:
    """The data sets to load up front (those a question names, except the uploads)."""
    return sorted({q["dataset"] for q in questions if not ds.DATASETS[q["dataset"]].upload_only})


# -- asking -----------------------------------------------------------------------------------------


@dataclass
class Outcome:
    id: str
    dataset: str
    question: str
    agent: str
    backend: str
    executed: bool = False
    routed: bool = False
    routed_first: bool = False
    right: bool = False
    invoked: list[str] = field(default_factory=list)
    answered_by: str = ""
    error: str = ""
    reasons: list[str] = field(default_factory=list)
    cause: str = ""
    summary: str = ""
    reading: dict[str, Any] = field(default_factory=dict)
    sql: list[str] = field(default_factory=list)
    rows: list[list[dict[str, Any]]] = field(default_factory=list)
    seconds: float = 0.0
    unanswered: list[str] = field(default_factory=list)  # parts the answer says it does not cover


def answers_of(result: Any) -> list[Answer]:
    responses = getattr(result, "agent_results", None) or getattr(result, "partial_results", None) or []
    out = []
    for r in responses:
        error = r.errors[0] if r.errors else None
        out.append(
            Answer(
                agent=r.agent,
                status=str(r.status.value if hasattr(r.status, "value") else r.status),
                output=r.output or {},
                summary=r.summary or "",
                findings=list(r.key_findings or []),
                error=error.message if error else "",
                error_type=error.error_type if error else "",
            )
        )
    return out


def judge(q: dict[str, Any], result: Any, backend: str, seconds: float) -> Outcome:
    """Executed, routed and right for one question's result."""
    from concerto import OrchestratorOutput

    out = Outcome(str(q["id"]), q["dataset"], q["question"], q["agent"], backend, seconds=round(seconds, 2))
    answers = answers_of(result)
    classification = getattr(result, "intent_classification", None)
    out.invoked = list(getattr(result, "agents_invoked", None) or (classification.agents if classification else []))
    if not out.invoked:
        out.invoked = [a.agent for a in answers]
    acceptable = [q["agent"], *(q.get("also") or [])]
    out.executed = isinstance(result, OrchestratorOutput) and any(a.status == "completed" for a in answers)
    out.routed = any(a in acceptable for a in out.invoked)
    out.routed_first = bool(out.invoked) and out.invoked[0] == q["agent"]
    if not isinstance(result, OrchestratorOutput):
        out.error = f"{result.error_category}: {result.error_message}"[:300]
    candidates = [a for a in answers if a.agent in acceptable]
    best: Answer | None = None
    for answer in candidates:
        if answer.status != "completed":
            out.error = out.error or f"{answer.agent} {answer.status}: {answer.error_type}: {answer.error}"[:300]
            best = best or answer
            continue
        reasons = [r for spec in ds.checks_of(q) if (r := check(answer, spec, q["dataset"])) is not None]
        if not reasons:
            best, out.right, out.reasons = answer, True, []
            break
        if best is None or best.status != "completed":
            best, out.reasons = answer, reasons
    if best is not None:
        out.answered_by = best.agent
        out.unanswered = [f for f in best.findings if f.startswith("Not answered")]
        out.summary = (best.summary or str((best.output.get("insights") or {}).get("summary") or ""))[:300]
        out.reading = best.output.get("reading") or {}
        out.sql = [str(x.get("sql", "")) for x in best.output.get("queries_executed") or []]
        out.rows = [(r.get("data") or [])[:100] for r in best.results]
    elif answers:
        first = answers[0]
        out.summary = (first.summary or first.error)[:300]
    out.cause = "" if out.right else cause(q, out, best)
    return out


_REFUSALS = {"unknown_column", "no_measure", "no_concept", "no_match", "no_time_column", "no_text_column", "no_file"}


def cause(q: dict[str, Any], out: Outcome, answer: Answer | None) -> str:
    """A first, automatic sorting of a failure: routing, reading the question (refused, another
    measure, a named value not taken as a filter), wrong answer, or crash."""
    if not out.routed:
        return "routing"
    if answer is None:
        return "crash"
    if answer.status != "completed":
        return "reading (refused)" if answer.error_type in _REFUSALS else f"crash ({answer.error_type})"
    columns = [c.lower() for c in ds.frame(q["dataset"]).columns]
    hints = [q["column"]] if q.get("column") else [m for m in _measure_hints(ds.checks_of(q)) if m in " ".join(columns)]
    # the measure the agent used: the one it read, the default its notes name, else what its SQL names
    used = [str(m).lower() for m in out.reading.get("measures") or []]
    used += [m.lower() for n in out.reading.get("notes") or [] for m in re.findall(r"\bused (\w+)", str(n))]
    used = used or [" ".join(out.sql).lower()]
    if hints and not any(h.lower() in m for h in hints for m in used):
        return "reading (measure)"
    filtered = {norm(v) for values in (out.reading.get("filters") or {}).values() for v in values}
    missed = [v for v in named_values(q) if norm(v) not in filtered]
    if missed and answer.agent not in ("semantic_text", "semantic_search", "data_ingestion", "data_discovery"):
        return "reading (filter)"
    return "wrong answer"


def _measure_hints(checks: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for c in checks:
        if "any_of" in c:
            out += _measure_hints(c["any_of"])
        elif isinstance(c.get("measure"), str):
            out.append(c["measure"].lower())
    return out


def named_values(q: dict[str, Any]) -> list[str]:
    """Values of the data set's text columns that the question names word for word."""
    frame = ds.frame(q["dataset"])
    text = " " + " ".join(re.findall(r"[a-z0-9]+", q["question"].lower())) + " "
    found = []
    for column in frame.columns:
        if frame[column].dtype.kind in "biufcmM":
            continue
        values = frame[column].dropna().astype(str).unique()
        if len(values) > 5000:
            continue
        for v in values:
            if v.isupper():  # a code ("ARE") is named in capitals, not by the word "are"
                if re.search(rf"\b{re.escape(v)}\b", q["question"]):
                    found.append(v)
                continue
            words = " ".join(re.findall(r"[a-z0-9]+", v.lower()))
            if len(words) >= 3 and f" {words} " in text:
                found.append(v)
    return found


@contextmanager
def clean_environment(data_dir: Path, database_url: str | None, agents: str | None = None) -> Iterator[None]:
    """No CONCERTO_* (hence no LLM) nor OPENAI_API_KEY from the caller; this run's data dir and database
    (and `CONCERTO_AGENTS` when the run is limited to some packs)."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith("CONCERTO_") or name == "OPENAI_API_KEY":
            del os.environ[name]
    os.environ["CONCERTO_DATA_DIR"] = str(data_dir)
    if database_url:
        os.environ["CONCERTO_DATABASE_URL"] = database_url
    if agents:
        os.environ["CONCERTO_AGENTS"] = agents
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


async def ask_all(
    questions: list[dict[str, Any]], data_dir: Path, backend: str, *, progress: bool = True
) -> list[Outcome]:
    """Load the data sets, then ask every question (in order) and judge each answer."""
    from concerto import Orchestrator, Settings
    from concerto.data.sources import store_for

    files = ds.write(data_dir.parent / "files", datasets_of(questions))
    uploads = [q["dataset"] for q in questions if ds.DATASETS[q["dataset"]].upload_only]
    ds.write(data_dir / "uploads", sorted(set(uploads)))
    settings = Settings(store_events=False)
    outcomes = []
    async with Orchestrator(settings) as orch:
        if settings.llm_base_url or orch.llm is not None:
            raise SystemExit("an LLM is configured: this benchmark measures answers without one")
        store = store_for(orch.settings, orch.resources)
        started = time.perf_counter()
        for name, path in files.items():
            await asyncio.to_thread(store.load, path, name)
        if progress:
            print(f"[{backend}] loaded {len(files)} data sets in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        for i, q in enumerate(questions, 1):
            request: dict[str, Any] = {"query": q["question"]}
            if q.get("source", True) and not ds.DATASETS[q["dataset"]].upload_only:
                request["source"] = q["dataset"]
            began = time.perf_counter()
            result = await orch.ask(request)
            outcome = judge(q, result, backend, time.perf_counter() - began)
            outcomes.append(outcome)
            if progress:
                mark = "ok " if outcome.right else "-- "
                print(f"[{backend}] {i:3}/{len(questions)} {mark}{q['id']}: {outcome.cause}", file=sys.stderr)
    return outcomes


def run_backend(
    questions: list[dict[str, Any]], backend: str, *, agents: str | None = None, progress: bool = True
) -> list[Outcome]:
    """Every question on one backend, in a fresh data dir (and a throwaway PostgreSQL cluster)."""
    root = Path(tempfile.mkdtemp(prefix=f"concerto-accuracy-{backend}-"))
    try:
        if backend == "postgres":
            from tests._services.postgres import running_postgres

            with running_postgres() as pg, clean_environment(root / "data", pg.url, agents):
                return asyncio.run(ask_all(questions, root / "data", backend, progress=progress))
        with clean_environment(root / "data", None, agents):
            return asyncio.run(ask_all(questions, root / "data", backend, progress=progress))
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- the report -------------------------------------------------------------------------------------


def canonical_sql(sql: str, dialect: str) -> str:
    """A query in one dialect with what the PostgreSQL store adds set aside: casts (for ROUND
    and division), NULLS LAST, MIN for ANY_VALUE, PERCENTILE_CONT ... WITHIN GROUP for
    QUANTILE_CONT and MEDIAN. Two backends ran the same plan when these are equal."""
    import logging

    import sqlglot
    from sqlglot import exp

    logging.getLogger("sqlglot").setLevel(logging.ERROR)

    def plain(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Cast):
            return node.this
        if isinstance(node, exp.Ordered):
            node.set("nulls_first", None)
        if isinstance(node, exp.AnyValue):
            return exp.Min(this=node.this)
        if isinstance(node, exp.Median):
            return exp.PercentileCont(this=node.this, expression=exp.Literal.number(0.5))
        if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
            order = node.expression.expressions[0].this if node.expression.expressions else None
            return exp.PercentileCont(this=order, expression=node.this.this)
        return node

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        for _ in range(2):  # a cast inside a replaced node is reached on the second pass
            tree = tree.transform(plain)
        return tree.sql(dialect="duckdb", normalize=True)
    except Exception:
        return sql


def answered_both(a: Outcome, b: Outcome) -> bool:
    return bool(a.sql and b.sql)


def same_sql(a: Outcome, b: Outcome) -> bool:
    """The same queries on both backends (see `canonical_sql`)."""
    if len(a.sql) != len(b.sql):
        return False
    return all(
        canonical_sql(x, "duckdb" if a.backend == "duckdb" else "postgres")
        == canonical_sql(y, "duckdb" if b.backend == "duckdb" else "postgres")
        for x, y in zip(a.sql, b.sql, strict=True)
    )


def same_rows(a: Outcome, b: Outcome) -> bool:
    """The same rows (up to 100 per result) in each result, in any order (ties may be ordered
    differently), numbers equal to 6 significant digits."""

    def canonical(rows: list[list[dict[str, Any]]]) -> list[list[str]]:
        def cell(v: Any) -> Any:
            if isinstance(v, int | float) and not isinstance(v, bool):
                return float(f"{float(v):.6g}")
            return v

        return [sorted(json.dumps({k: cell(v) for k, v in row.items()}, default=str) for row in r) for r in rows]

    return canonical(a.rows) == canonical(b.rows)


def first_difference(a: Outcome, b: Outcome) -> str:
    """The first cell that differs between the two backends' rows (sorted alike), as `column a / b`."""
    if len(a.rows) != len(b.rows):
        return f"{len(a.rows)} / {len(b.rows)} results"
    for ra, rb in zip(a.rows, b.rows, strict=True):
        if len(ra) != len(rb):
            return f"{len(ra)} / {len(rb)} rows"
        key = lambda row: json.dumps(row, sort_keys=True, default=str)  # noqa: E731
        for x, y in zip(sorted(ra, key=key), sorted(rb, key=key), strict=True):
            for column in x:
                u, v = x.get(column), y.get(column)
                nu, nv = number(u), number(v)
                equal = float(f"{nu:.6g}") == float(f"{nv:.6g}") if nu is not None and nv is not None else u == v
                if not equal and json.dumps(u, default=str) != json.dumps(v, default=str):
                    return f"{column} {u} / {v}"
    return "row order"


def table(outcomes: list[Outcome]) -> list[str]:
    by_agent: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_agent[o.agent].append(o)
    lines = [
        "| agent | questions | executed | routed (first) | routed | right | right % |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def line(name: str, group: list[Outcome]) -> str:
        n = len(group)
        count = [sum(getattr(o, f) for o in group) for f in ("executed", "routed_first", "routed", "right")]
        return f"| {name} | {n} | " + " | ".join(str(c) for c in count) + f" | {100 * count[3] / max(1, n):.0f}% |"

    for agent in AGENTS:
        if by_agent.get(agent):
            lines.append(line(agent, by_agent[agent]))
    lines.append(line("**all**", outcomes))
    return lines


def report(
    runs: dict[str, list[Outcome]],
    questions: list[dict[str, Any]],
    command: str,
    seconds: float,
    packs: str | None = None,
) -> str:
    datasets = sorted({q["dataset"] for q in questions})
    out = [
        "# Accuracy of the analytics agents without an LLM",
        "",
        f"Command: `{command}`  ",
        f"Code: {revision()}  ",
        f"Run: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()} on {platform.machine()}, "
        f"{seconds:.0f}s in all. No `CONCERTO_LLM_*` nor OPENAI_API_KEY: routing, reading and answering on the "
        f"embedded defaults. Agents loaded: {packs or 'every installed pack (as `concerto ask` runs)'}.",
        "",
        f"{len(questions)} questions (benchmarks/accuracy/questions.yaml) over {len(datasets)} public data sets "
        f"({', '.join(datasets)}), every expected answer computed in pandas (benchmarks/accuracy/datasets.py). "
        "*executed*: the orchestrator answered and an agent completed; *routed (first)*: the expected agent was the "
        "first invoked; *routed*: it (or an alternative the question lists) was invoked; *right*: routed, completed, "
        "and every check passed on its output.",
        "",
    ]
    for backend, outcomes in runs.items():
        right = sum(o.right for o in outcomes)
        out += [f"## {backend}: {right}/{len(outcomes)} right ({100 * right / max(1, len(outcomes)):.1f}%)", ""]
        out += table(outcomes)
        out.append("")
    if len(runs) == 2:
        a, b = (runs[k] for k in runs)
        pairs = list(zip(a, b, strict=True))
        answered = [(x, y) for x, y in pairs if answered_both(x, y)]
        sql = sum(same_sql(x, y) for x, y in answered)
        rows = sum(same_rows(x, y) for x, y in answered)
        both = sum(same_sql(x, y) and same_rows(x, y) for x, y in answered)
        verdict = sum(x.right == y.right for x, y in pairs)
        out += [
            "## DuckDB against PostgreSQL",
            "",
            f"Of the {len(answered)} questions an expected agent answered with SQL on both backends:",
            "",
            f"- same SQL: {sql} (each backend's queries in one dialect, with what the PostgreSQL store adds set aside: "
            "casts, NULLS LAST, MIN for ANY_VALUE, PERCENTILE_CONT for QUANTILE_CONT and MEDIAN)",
            f"- same rows (in any order, to 6 significant digits): {rows}",
            f"- same SQL and same rows: {both}",
            "",
            f"Same verdict (right or not) on all {len(pairs)} questions: {verdict}.",
        ]
        differing = [(x, y) for x, y in pairs if x.right != y.right or (answered_both(x, y) and not same_rows(x, y))]
        differing += [(x, y) for x, y in answered if same_rows(x, y) and not same_sql(x, y)]
        if differing:
            out += ["", "Where they differ:", ""]
            for x, y in differing:
                what = []
                if x.right != y.right:
                    what.append(f"duckdb {'right' if x.right else 'wrong'}, postgres {'right' if y.right else 'wrong'}")
                what.append("same SQL" if same_sql(x, y) else "different SQL")
                what.append("same rows" if same_rows(x, y) else f"different rows ({first_difference(x, y)})")
                out.append(f"- `{x.id}`: {', '.join(what)}")
        out.append("")
    listed: list[tuple[str, str]] | None = None
    for backend, outcomes in runs.items():
        failed = [o for o in outcomes if not o.right]
        out += [f"## Failures on {backend} ({len(failed)})", ""]
        if listed is not None and [(o.id, o.cause) for o in failed] == listed:
            out += ["The same questions, for the same causes, as on the backend above.", ""]
            continue
        listed = [(o.id, o.cause) for o in failed]
        by_cause: dict[str, list[Outcome]] = defaultdict(list)
        for o in failed:
            by_cause[o.cause.split(" (")[0]].append(o)
        for name in sorted(by_cause, key=lambda c: -len(by_cause[c])):
            out += [f"### {name} ({len(by_cause[name])})", ""]
            for o in by_cause[name]:
                got = o.error or "; ".join(o.reasons)
                if not got and o.invoked:
                    got = f'{o.invoked[0]} answered "{o.summary[:160]}"'
                reading = ", ".join(f"{k}={v}" for k, v in o.reading.items() if v and k != "notes")
                out.append(
                    f'- `{o.id}` ({o.agent}, {o.dataset}) "{o.question}" → invoked {", ".join(o.invoked) or "none"}'
                    f"; {o.cause}: {got[:260]}" + (f" [read: {reading[:160]}]" if reading else "")
                )
            out.append("")
    return "\n".join(out) + "\n"


def revision() -> str:
    """The checkout's commit, and whether files differ from it (the code measured)."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout

    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    changed = [line[3:] for line in git("status", "--porcelain", "--", "src").splitlines() if line.strip()]
    return f"commit {commit}" + (f" with uncommitted changes in {', '.join(changed)}" if changed else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["duckdb", "postgres", "both"], default="both")
    parser.add_argument("--output", type=Path, help="write the report (Markdown) here")
    parser.add_argument("--only", help="comma-separated question ids")
    parser.add_argument("--agent", help="only the questions expecting this agent")
    parser.add_argument("--dataset", help="only the questions about this data set")
    parser.add_argument(
        "--packs", help="load only these agents or packs (CONCERTO_AGENTS, e.g. 'analytics'); default: every pack"
    )
    parser.add_argument("--show", action="store_true", help="print each answer's reading, rows and check results")
    parser.add_argument("--dump", type=Path, help="write every outcome as JSON here")
    args = parser.parse_args(argv)
    questions = ds.load_questions()
    problems = validate(questions)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    stale = ds.stale()
    if stale:
        print(f"expectations out of date (run datasets.py --write-expected): {', '.join(stale)}", file=sys.stderr)
        return 2
    if args.only:
        wanted = set(args.only.split(","))
        questions = [q for q in questions if str(q["id"]) in wanted]
    if args.agent:
        questions = [q for q in questions if q["agent"] == args.agent]
    if args.dataset:
        questions = [q for q in questions if q["dataset"] == args.dataset]
    backends = ["duckdb", "postgres"] if args.backend == "both" else [args.backend]
    started = time.perf_counter()
    runs = {b: run_backend(questions, b, agents=args.packs) for b in backends}
    seconds = time.perf_counter() - started
    if args.show:
        for outcomes in runs.values():
            for o in outcomes:
                print(f"\n## {o.backend} {o.id} [{'RIGHT' if o.right else o.cause}] {o.question}")
                print(f"   invoked {o.invoked} answered_by {o.answered_by} error {o.error}")
                print(f"   reading {o.reading}")
                print(f"   summary {o.summary}")
                for reason in o.reasons:
                    print(f"   ✗ {reason}")
                for rows in o.rows[:3]:
                    print("   rows " + " ".join(compact(r, 8) for r in rows[:4]))
    command = "python -m benchmarks.bench_accuracy " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(runs, questions, command.strip(), seconds, args.packs)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    if args.dump:
        args.dump.write_text(json.dumps({b: [asdict(o) for o in r] for b, r in runs.items()}, default=str, indent=1))
    for backend, outcomes in runs.items():
        right = sum(o.right for o in outcomes)
        print(f"{backend}: {right}/{len(outcomes)} right ({100 * right / max(1, len(outcomes)):.1f}%)")
        print("\n".join(table(outcomes)))
    if len(runs) == 2:
        answered = [(x, y) for x, y in zip(runs["duckdb"], runs["postgres"], strict=True) if answered_both(x, y)]
        both = sum(same_sql(x, y) and same_rows(x, y) for x, y in answered)
        print(f"same SQL and same rows on both backends: {both} of the {len(answered)} answered with SQL on both")
    return 0


if __name__ == "__main__":
    sys.exit(main())
