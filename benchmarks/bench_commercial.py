"""Commercial pack benchmark (issue 16): each agent's time at 10k, 100k and 1M rows, the
refutations' time, the recovered effects against the planted truth over many seeds (bias
and interval coverage), the causal estimate side by side with a hand-written statsmodels
regression and with DoWhy (when a venv with the `causal` extra is given), and the cold
start of a question.

Each size is the built-in data set generated with as many HCPs as the size needs, loaded as
the source `commercial` of a fresh data dir, and every agent runs on it as the executor
would run it (its `run`, task and context), so the time includes reading the columns
out of DuckDB.

    .venv/bin/python -m benchmarks.bench_commercial [--sizes 10000,100000,1000000] [--seeds 50]
        [--causal-venv /tmp/venv-causal] [--output benchmarks/results/commercial.md]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 15, 12, 0, tzinfo=UTC)
QUESTIONS = {
    "causal_impact": "What's the impact of increased sampling on new prescriptions?",
    "heterogeneous_optimizer": "which specialties respond best to increased sampling?",
    "gap_analyzer": "which territories are furthest below their potential?",
    "experiment_designer": "How many HCPs do we need to detect a 10% lift in new Rx with 80% power?",
    "prediction_synthesizer": "forecast new prescriptions for the next 6 months",
    "resource_optimizer": "how should we allocate the promotion budget across channels?",
    "health_score": "how healthy is our data?",
    "drift_monitor": "has anything drifted between the baseline and recent period?",
}
SEED_QUESTION = "What's the impact of increased sampling on Kisqali prescriptions?"


class Runner:
    """The commercial agents over one data dir, called as the executor calls them."""

    def __init__(self, data_dir: Path) -> None:
        from concerto.agents.loader import load_registry
        from concerto.data.sources import store_for
        from concerto.resources import Resources
        from concerto.settings import Settings

        self.settings = Settings(data_dir=data_dir, store_events=False)
        self.resources = Resources(self.settings)
        self.store = store_for(self.settings, self.resources)
        self.registry = load_registry("commercial")

    def load(self, panel: Any, name: str = "commercial") -> None:
        """Load an Arrow table as the built-in panel source (replacing the last one)."""
        import pyarrow.parquet as pq

        from concerto.data.context import ProfileOverrides
        from concerto.packs.commercial.base.data import PROFILES

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.parquet"
            pq.write_table(panel, path)
            context = self.store.load(path, name, overrides=ProfileOverrides.model_validate(PROFILES[name]))
        context.built_in = "commercial"
        self.store.save_context(context)

    async def run(self, agent: str, question: str, **inputs: Any) -> Any:
        from concerto.agents.base import AgentContext
        from concerto.agents.task import TaskInput
        from concerto.contracts.orchestrator import OrchestratorInput

        cls = self.registry.get(agent)
        query = OrchestratorInput(query=question)
        context = AgentContext(query=query, now=NOW, settings=self.settings, resources=self.resources, agent=agent)
        return await cls(self.settings, self.resources).run(context, TaskInput.build(query, task_input=inputs))


def hcps_for(rows: int) -> int:
    from concerto.packs.commercial.base.data import BRANDS, MONTHS

    return max(rows // (len(BRANDS) * MONTHS), 20)


async def sizes_table(sizes: list[int]) -> list[str]:
    """Seconds per agent at each size (one run each, after one warm-up run at the first size)."""
    from concerto.packs.commercial.base.data import generate

    lines = ["| agent | " + " | ".join(f"{n:,} rows" for n in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    times: dict[str, list[str]] = {a: [] for a in QUESTIONS}
    refutations: list[str] = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-commercial-") as tmp:
            runner = Runner(Path(tmp))
            made = generate(hcps_per_brand=hcps_for(n))
            runner.load(made.panel)
            runner.load(made.spend, "commercial_spend")
            if n == sizes[0]:
                await runner.run("causal_impact", QUESTIONS["causal_impact"])  # warm-up: imports
            for agent, question in QUESTIONS.items():
                started = time.perf_counter()
                try:
                    result = await runner.run(agent, question)
                    seconds = time.perf_counter() - started
                    times[agent].append(f"{seconds:.2f} s")
                    if agent == "causal_impact":
                        refutations.append(_refutation_time(result.output))
                except Exception as exc:  # a size an agent refuses is a result too
                    times[agent].append(f"— ({type(exc).__name__}: {str(exc)[:60]})")
            print(f"size {n:,} done", file=sys.stderr)
    lines += [f"| {a} | " + " | ".join(t) + " |" for a, t in times.items()]
    lines += ["", "Refutations of causal_impact (all three together, inside the times above): "]
    lines[-1] += ", ".join(f"{r} at {n:,} rows" for r, n in zip(refutations, sizes, strict=False)) + "."
    return lines


def _refutation_time(output: dict[str, Any]) -> str:
    refutations = output.get("refutations") or []
    total = sum(float(r.get("seconds") or r.get("duration_s") or 0) for r in refutations if isinstance(r, dict))
    return f"{total:.2f} s" if total else "n/a"


async def coverage(seeds: int) -> list[str]:
    """The causal and CATE intervals against the truth planted with each seed."""
    from concerto.packs.commercial.base.data import generate

    ate_err, ate_cover, naive_err, cate_cover, cate_total, widths = [], 0, [], 0, 0, []
    with tempfile.TemporaryDirectory(prefix="bench-coverage-") as tmp:
        runner = Runner(Path(tmp))
        for seed in range(1, seeds + 1):
            made = generate(seed=seed)
            runner.load(made.panel)
            out = (await runner.run("causal_impact", QUESTIONS["causal_impact"])).output
            truth = made.truth.ate["all"]
            low, high = out["confidence_interval"]
            ate_err.append(out["ate"] - truth)
            naive_err.append(made.truth.naive_difference["all"] - truth)
            ate_cover += low <= truth <= high
            widths.append(high - low)
            cate = (await runner.run("heterogeneous_optimizer", QUESTIONS["heterogeneous_optimizer"])).output
            for segment in cate.get("segments", []):
                name = segment.get("segment")
                if name in made.truth.cate_by_specialty:
                    lo, hi = segment["confidence_interval"]
                    cate_total += 1
                    cate_cover += lo <= made.truth.cate_by_specialty[name] <= hi
            print(f"seed {seed} done", file=sys.stderr)
    return [
        "| estimate | seeds | mean bias | bias sd | 95 % interval covers the truth | mean width |",
        "|---|---|---|---|---|---|",
        f"| causal_impact ATE (doubly robust) | {seeds} | {statistics.mean(ate_err):+.3f} | "
        f"{statistics.stdev(ate_err):.3f} | {ate_cover}/{seeds} ({ate_cover / seeds:.0%}) | "
        f"{statistics.mean(widths):.3f} |",
        f"| naive difference in means | {seeds} | {statistics.mean(naive_err):+.3f} | "
        f"{statistics.stdev(naive_err):.3f} | — | — |",
        f"| heterogeneous_optimizer CATE by specialty | {seeds} × 6 | — | — | "
        f"{cate_cover}/{cate_total} ({cate_cover / max(cate_total, 1):.0%}) | — |",
    ]


def side_by_side(causal_venv: Path | None) -> list[str]:
    """One 10k-row panel: Concerto's agent, a hand-written statsmodels OLS, and DoWhy."""
    import pyarrow.parquet as pq

    from concerto.packs.commercial.base.data import generate

    made = generate(hcps_per_brand=hcps_for(10_000))
    lines = ["| implementation | estimate | 95 % interval | seconds |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="bench-side-") as tmp:
        runner = Runner(Path(tmp))
        runner.load(made.panel)
        asyncio.run(runner.run("causal_impact", QUESTIONS["causal_impact"]))  # warm-up: imports, as the others
        started = time.perf_counter()
        out = asyncio.run(runner.run("causal_impact", QUESTIONS["causal_impact"])).output
        lines.append(
            f"| Concerto causal_impact (3 estimators + 3 refutations) | {out['ate']:.3f} | "
            f"[{out['confidence_interval'][0]:.3f}, {out['confidence_interval'][1]:.3f}] | "
            f"{time.perf_counter() - started:.2f} |"
        )
        parquet = Path(tmp) / "panel.parquet"
        pq.write_table(made.panel, parquet)
        lines.append(_subprocess_row("hand-written statsmodels OLS (no refutation)", sys.executable, parquet, "ols"))
        if causal_venv is not None and (causal_venv / "bin" / "python").exists():
            python = str(causal_venv / "bin" / "python")
            lines.append(
                _subprocess_row(
                    "DoWhy 0.14 linear regression + placebo, random cause, subset", python, parquet, "dowhy"
                )
            )
    lines.append("")
    lines.append(
        "Times exclude imports (Concerto's agent ran once before). Concerto: three estimators (regression, IPW, "
        "AIPW) and three refutations of 30 runs each, the placebo refitting the propensity model each run; DoWhy: "
        "one regression estimate and its three refuters (100 runs each, regression only)."
    )
    lines.append(
        f"Truth planted: ATE {made.truth.ate['all']:.3f}; naive difference {made.truth.naive_difference['all']:.3f}."
    )
    return lines


_SCRIPT = r"""
import sys, time, json
import pandas as pd
df = pd.read_parquet(sys.argv[1])
df = pd.get_dummies(df, columns=["specialty"], drop_first=True, dtype=float)
covs = ["decile"] + [c for c in df.columns if c.startswith("specialty_")]
if sys.argv[2] == "ols":
    import statsmodels.api as sm
else:
    import numpy as np
    from dowhy import CausalModel
started = time.perf_counter()  # after the imports: the estimate and its checks only
if sys.argv[2] == "ols":
    X = sm.add_constant(df[["increased_sampling"] + covs].astype(float))
    fit = sm.OLS(df["new_rx"].astype(float), X).fit(cov_type="HC1")
    est, (lo, hi) = fit.params["increased_sampling"], fit.conf_int().loc["increased_sampling"]
else:
    model = CausalModel(data=df[["increased_sampling", "new_rx"] + covs], treatment="increased_sampling",
                        outcome="new_rx", common_causes=covs)
    estimand = model.identify_effect(proceed_when_unidentifiable=True)
    estimate = model.estimate_effect(estimand, method_name="backdoor.linear_regression", confidence_intervals=True)
    est = estimate.value
    lo, hi = np.ravel(estimate.get_confidence_intervals())
    for method in ("placebo_treatment_refuter", "random_common_cause", "data_subset_refuter"):
        model.refute_estimate(estimand, estimate, method_name=method)
print(json.dumps({"est": float(est), "lo": float(lo), "hi": float(hi), "s": time.perf_counter() - started}))
"""


def _subprocess_row(label: str, python: str, parquet: Path, kind: str) -> str:
    import json

    done = subprocess.run([python, "-c", _SCRIPT, str(parquet), kind], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        return f"| {label} | failed: {done.stderr.strip().splitlines()[-1][:80] if done.stderr else '?'} | | |"
    r = json.loads(done.stdout.strip().splitlines()[-1])
    return f"| {label} | {r['est']:.3f} | [{r['lo']:.3f}, {r['hi']:.3f}] | {r['s']:.2f} |"


def cold_start(causal_venv: Path | None) -> list[str]:
    """Wall time of `concerto ask` for the seed's question in a fresh process (data loaded on
    first use, then again with the data in place), and of importing the optional extra."""
    lines = ["| what | seconds |", "|---|---|"]
    concerto = ROOT / ".venv" / "bin" / "concerto"
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        env = {**os.environ, "CONCERTO_DATA_DIR": tmp}
        for label in ("first question (generates and loads the data set)", "second question (data in place)"):
            started = time.perf_counter()
            subprocess.run(
                [str(concerto), "ask", SEED_QUESTION, "--now", NOW.isoformat()],
                env=env,
                capture_output=True,
                check=False,
                timeout=600,
            )
            lines.append(f"| `concerto ask` seed question, {label} | {time.perf_counter() - started:.2f} |")
        extra_concerto = causal_venv / "bin" / "concerto" if causal_venv is not None else None
        if extra_concerto is not None and extra_concerto.exists():
            # The data dir is warm now (router vectors, data set): what is left is the process,
            # the imports and the question; with DoWhy asked for, its import and estimate too.
            for label, extra in (
                ("core path", []),
                ("DoWhy asked for (`--param library=dowhy`)", ["--param", "library=dowhy"]),
            ):
                started = time.perf_counter()
                subprocess.run(
                    [str(extra_concerto), "ask", SEED_QUESTION, "--now", NOW.isoformat(), *extra],
                    env=env,
                    capture_output=True,
                    check=False,
                    timeout=600,
                )
                seconds = time.perf_counter() - started
                lines.append(f"| `concerto ask` seed question in the `causal` venv, {label} | {seconds:.2f} |")
    for module in ("statsmodels.api", "sklearn.linear_model", "scipy.optimize"):
        lines.append(f"| `import {module}` (core path) | {_import_time(sys.executable, module):.2f} |")
    if causal_venv is not None and (causal_venv / "bin" / "python").exists():
        extra_python = str(causal_venv / "bin" / "python")
        for module in ("dowhy", "econml"):
            lines.append(f"| `import {module}` (the `causal` extra) | {_import_time(extra_python, module):.2f} |")
    return lines


def _import_time(python: str, module: str) -> float:
    started = time.perf_counter()
    subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False, timeout=300)
    return time.perf_counter() - started


def _sections(text: str) -> dict[str, list[str]]:
    """The `### ` sections of a previous result file, keyed by the start of their title."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("### "):
            key = next(
                (
                    k
                    for k in ("Time per agent", "Recovered effects", "Side by side", "Cold start")
                    if line[4:].startswith(k)
                ),
                line[4:],
            )
            current = out.setdefault(key, [])
        if current is not None:
            current.append(line)
    return {k: [*v][: len(v) - (1 if v and not v[-1] else 0)] for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--causal-venv", type=Path, default=None)
    parser.add_argument("--parts", default="sizes,coverage,side,cold", help="Which sections to measure")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "commercial.md")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    command = " ".join(["python -m benchmarks.bench_commercial", *sys.argv[1:]])
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    parts = set(args.parts.split(","))
    measured = {
        "Time per agent": lambda: asyncio.run(sizes_table(sizes)),
        "Recovered effects": lambda: asyncio.run(coverage(args.seeds)),
        "Side by side": lambda: side_by_side(args.causal_venv),
        "Cold start": lambda: cold_start(args.causal_venv),
    }
    titles = {
        "Time per agent": "Time per agent (built-in data set at each size, read from DuckDB)",
        "Recovered effects": f"Recovered effects against the planted truth ({args.seeds} seeds, 39,600 rows each)",
        "Side by side": "Side by side: the causal estimate at 10k rows",
        "Cold start": "Cold start",
    }
    chosen = dict(zip(measured, ("sizes", "coverage", "side", "cold"), strict=True))
    # Sections not measured this time are kept from the last run's file, with their own command.
    previous = _sections(args.output.read_text(encoding="utf-8")) if args.output.exists() else {}
    body = ["## Commercial pack (issue 16)", ""]
    for key, measure in measured.items():
        if chosen[key] in parts:
            section = [f"### {titles[key]}", "", f"`{command}` on {machine}.", "", *measure()]
        else:
            section = previous.get(key, [f"### {titles[key]}", "", "(not measured yet)"])
        body += [*section, ""]
    args.output.write_text("\n".join(body).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
