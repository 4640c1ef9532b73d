"""The KPI and metrics question sets (issue 15, "Measured"), scored per category.

Each set is `benchmarks/questions/<pack>.yaml` with a runner `benchmarks/questions/<pack>.py`
whose `plan(question, now)` says what the pack ran: the KPI set goes through the whole
orchestrator (routing included) on the demo store plus two user KPIs; the metrics set
reads each question into PromQL and a window offline (the PromQL itself is run against
the real Prometheus by tests/packs/metrics). A question is right when every expectation
it lists holds. Also measured, side by side in one run: the latency of a five-department
comparison against a single-department question, through `Orchestrator.ask`.

    .venv/bin/python -m benchmarks.bench_questions [--pack kpi|metrics|both] [--output FILE]
        [--only ID,ID] [--show] [--no-latency]
"""

from __future__ import annotations

import argparse
import importlib
import platform
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions"
DEFAULT_NOW = "2025-06-15T12:00:00Z"


def load_set(pack: str) -> list[dict[str, Any]]:
    """The questions of one pack, with `now` filled in."""
    import yaml

    items = yaml.safe_load((QUESTIONS / f"{pack}.yaml").read_text())
    for item in items:
        item.setdefault("now", DEFAULT_NOW)
    return list(items)


def load_runner(pack: str) -> ModuleType:
    """benchmarks/questions/<pack>.py, imported on first use (the KPI runner loads a store)."""
    return importlib.import_module(f"benchmarks.questions.{pack}")


def _promql(text: str) -> str:
    return re.sub(r"\s+", "", text)


def check(expect: dict[str, Any], got: dict[str, Any], pack: str) -> list[str]:
    """What does not hold of `expect` in `got` (empty: the answer is right)."""
    problems: list[str] = []
    agent = expect.get("agent", "kpi" if pack == "kpi" else None)
    if agent and got.get("agent") != agent:
        problems.append(f"answered by {got.get('agent')}, expected {agent}")
    if "error_type" in expect:
        types = got.get("error_types") or ([got["error_type"]] if got.get("error_type") else [])
        if expect["error_type"] not in types:
            problems.append(f"error types {types}, expected {expect['error_type']}")
    if "structured_queries" in expect:
        want, have = sorted(expect["structured_queries"]), sorted(got.get("structured_queries") or [])
        if want != have:
            problems.append(f"queries {have}, expected {want}")
    if "promql" in expect:
        want, have = [_promql(q) for q in expect["promql"]], [_promql(q) for q in got.get("promql") or []]
        if want != have:
            problems.append(f"PromQL {got.get('promql')}, expected {expect['promql']}")
    for key in ("start", "end"):
        if key in expect and _instant(expect[key]) != _instant(got.get(key)):
            problems.append(f"{key} {got.get(key)}, expected {expect[key]}")
    for key, value in (expect.get("analysis") or {}).items():
        have = (got.get("analysis") or {}).get(key)
        if have != value:
            problems.append(f"analysis {key}={have}, expected {value}")
    said = " ".join(got.get("unanswered") or got.get("missing") or [])
    for word in [*(expect.get("unanswered") or []), *(expect.get("missing") or [])]:
        if str(word).lower() not in said.lower():
            problems.append(f"the answer does not say that '{word}' is not answered")
    return problems


def _instant(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


@dataclass
class Scored:
    item: dict[str, Any]
    problems: list[str]
    got: dict[str, Any] = field(default_factory=dict)

    @property
    def right(self) -> bool:
        return not self.problems


def score(pack: str, only: set[str] | None = None) -> list[Scored]:
    """Every question of a pack's set, asked and checked."""
    runner = load_runner(pack)
    out = []
    for item in load_set(pack):
        if only and item["id"] not in only:
            continue
        try:
            got = runner.plan(item["question"], _instant(item["now"]))
        except Exception as exc:  # a crash is a wrong answer, reported with the question
            got = {"crash": f"{type(exc).__name__}: {exc}"}
        problems = ["crashed: " + got["crash"]] if "crash" in got else check(item["expect"], got, pack)
        out.append(Scored(item, problems, got))
    return out


def latency(n: int = 40) -> list[str]:
    """A five-department comparison against a one-department question, through `Orchestrator.ask`."""
    from benchmarks._timing import percentile, timed

    runner = load_runner("kpi").runner()
    now = _instant(DEFAULT_NOW)
    single = "attrition rate of home-loan last 3 months"
    five = (
        "compare attrition rate of home-loan, credit-card, personal-loan, retail-banking "
        "and wealth-management last 3 months"
    )

    async def measure(question: str) -> list[float]:
        return await timed(lambda: runner.orchestrator.ask(question, now=now), n, warmup=3)

    rows = []
    results = {}
    for name, question in (("one department", single), ("five departments", five)):
        results[name] = runner.loop.run_until_complete(measure(question))
    base = percentile(results["one department"], 0.5)
    for name, times in results.items():
        p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
        rows.append(f"| {name} | {p50:.1f} | {p95:.1f} | {p50 / base:.2f}× |")
    return [
        f"Latency through `Orchestrator.ask` (the same question {n} times after 3 warm-ups, so the router's "
        "question embedding is cached for both; no LLM; embedded ChromaDB; the five series are read in one "
        "store call):",
        "",
        "| question | p50 ms | p95 ms | p50 vs one department |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        f'One department: "{single}". Five: "{five}".',
    ]


def report(results: dict[str, list[Scored]], lines_after: list[str], seconds: float) -> str:
    total = sum(len(v) for v in results.values())
    right = sum(s.right for v in results.values() for s in v)
    lines = [
        "# KPI and metrics question sets (issue 15)",
        "",
        f"Command: `.venv/bin/python -m benchmarks.bench_questions` ({datetime.now(UTC):%Y-%m-%d}, "
        f"{platform.machine()}, Python {platform.python_version()}, {seconds:.0f} s).",
        "",
        f"**{right}/{total} right** ({100 * right / max(total, 1):.1f} %), no LLM. The KPI set runs through the "
        "whole orchestrator (routing included) on the demo store plus two user KPIs loaded with "
        "`concerto kpi load`; the metrics set reads each question into PromQL and a window "
        "(tests/packs/metrics runs that PromQL against the real Prometheus).",
        "",
        "| pack | category | right | questions |",
        "|---|---|---:|---:|",
    ]
    for pack, scored in results.items():
        by: dict[str, list[Scored]] = defaultdict(list)
        for s in scored:
            by[s.item["category"]].append(s)
        for category, items in by.items():
            lines.append(f"| {pack} | {category} | {sum(s.right for s in items)} | {len(items)} |")
    lines += ["", *lines_after]
    failures = [s for v in results.values() for s in v if not s.right]
    if failures:
        lines += ["", "## Failures", ""]
        lines += [f"- `{s.item['id']}` {s.item['question']!r}: {'; '.join(s.problems)}" for s in failures]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pack", choices=["kpi", "metrics", "both"], default="both")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "questions.md")
    parser.add_argument("--only", default="", help="comma-separated question ids")
    parser.add_argument("--show", action="store_true", help="print every answer")
    parser.add_argument("--no-latency", action="store_true")
    args = parser.parse_args()
    only = {x for x in args.only.split(",") if x} or None
    started = time.perf_counter()
    packs = ["kpi", "metrics"] if args.pack == "both" else [args.pack]
    results = {pack: score(pack, only) for pack in packs if (QUESTIONS / f"{pack}.py").exists()}
    for scored in results.values():
        for s in scored:
            mark = "ok " if s.right else "BAD"
            print(f"{mark} {s.item['id']}: {s.item['question']}")
            if args.show or not s.right:
                for p in s.problems:
                    print(f"      {p}")
                if args.show:
                    print(f"      -> {s.got.get('response') or s.got}")
    after = [] if args.no_latency or "kpi" not in results or only else latency()
    text = report(results, after, time.perf_counter() - started)
    if not only:
        args.output.write_text(text)
        print(f"written {args.output}")
    print(text.split("\n\n")[2])


if __name__ == "__main__":
    main()
