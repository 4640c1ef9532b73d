"""`concerto kpi ...`: load KPI records from CSV, reload the demo data, ask the store."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import click


def _store():  # type: ignore[no-untyped-def]
    from concerto.packs.kpi.store import KPIStore
    from concerto.resources import Resources
    from concerto.settings import Settings

    settings = Settings()
    return KPIStore(settings, Resources(settings).embedder)


@click.group()
def kpi() -> None:
    """KPI records (000_*.txt): load a CSV, load the demo data, query the store."""


def _encoding(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Refuse an unknown encoding name before the store is opened."""
    from concerto.packs.kpi.records import check_encoding

    try:
        return check_encoding(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


@kpi.command("load")
@click.argument("csv_file", metavar="FILE.csv", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--encoding",
    default="utf-8-sig",
    show_default=True,
    callback=_encoding,
    help="The file's text encoding, e.g. latin-1, cp1252 or utf-16 (the default reads UTF-8, with or without a BOM).",
)
@click.option(
    "--demo/--no-demo",
    default=False,
    show_default=True,
    help="Also load the demo records if the store is empty.",
)
def load(csv_file: Path, encoding: str, demo: bool) -> None:
    """Validate FILE.csv and add its records to the store.

    Columns: kpi, department, month (YYYY-MM or YYYY-MM-DD), value, unit, notes.
    Every row is checked first: if any row is bad, or a byte cannot be decoded in the
    file's encoding, its line number is reported and nothing is written. Meanwhile the
    valid records are set aside in a temporary folder of the data directory, then written
    in batches, so memory does not grow with the file's size. A record for an existing
    kpi, department and month replaces it.

    \b
    Examples:
      concerto kpi load kpis.csv
      concerto kpi load export.csv --encoding cp1252
    """
    from concerto.packs.kpi.records import CSVEncodingError, CSVError, display

    store = _store()
    if demo:
        store.ensure_demo()
    started = time.perf_counter()
    try:
        count = store.load_csv(csv_file, encoding=encoding)
    except CSVError as exc:
        for line, message in exc.errors:
            click.echo(f"{csv_file}:{line}: {message}", err=True)
        if exc.total > len(exc.errors):
            click.echo(f"... {exc.total - len(exc.errors)} more", err=True)
        if isinstance(exc, CSVEncodingError):
            click.echo(
                f"The file is not {display(exc.encoding)}: name its encoding with --encoding NAME "
                "(for example latin-1, cp1252 or utf-16).",
                err=True,
            )
        raise click.ClickException(exc.headline) from None
    except OSError as exc:  # unreadable file, full disk while spilling, ...
        raise click.ClickException(f"{csv_file}: {exc}") from None
    elapsed = time.perf_counter() - started
    click.echo(
        f"Loaded {count} records from {csv_file} into {store.location} "
        f"in {elapsed:.1f} s ({count / max(elapsed, 1e-9):,.0f} records/s)."
    )


@kpi.command("demo")
def demo() -> None:
    """Load the demo records (7 departments x 8 KPIs x 2023-01..2026-12) into the store.

    Records already present for the same kpi, department and month are replaced.
    """
    from concerto.packs.kpi.demo import demo_records, descriptions

    store = _store()
    count = store.add(demo_records(), descriptions())
    click.echo(f"Loaded {count} demo records into {store.location}.")


@kpi.command("names")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def names(as_json: bool) -> None:
    """List the KPIs (with units) and departments the store holds."""
    store = _store()
    store.ensure_demo()
    catalog = store.catalog()
    data = {"kpis": catalog.units, "departments": catalog.names("department")}
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo("KPIs: " + ", ".join(f"{k} ({u})" for k, u in sorted(catalog.units.items())))
    click.echo("Departments: " + ", ".join(sorted(data["departments"])))


@kpi.command("query")
@click.argument("question")
@click.option("--now", help="Current date-time (ISO 8601) for relative periods such as 'last month'.")
def query(question: str, now: str | None) -> None:
    """Answer QUESTION (agreed format or plain language) and print the agent's JSON output.

    \b
    Examples:
      concerto kpi query "kpi-attrition-rate department-home-loan month-2025-05-01"
      concerto kpi query "home-loan attrition rate previous 4 months" --now 2025-06-15
    """
    import asyncio

    from concerto.agents.base import AgentContext, AgentFailure
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.packs.kpi.agent import KPIAgent
    from concerto.resources import Resources
    from concerto.settings import Settings

    clock = datetime.fromisoformat(now) if now else datetime.now(UTC)
    settings = Settings()
    context = AgentContext(
        query=OrchestratorInput(query=question),
        now=clock,
        settings=settings,
        resources=Resources(settings),
        agent="kpi",
    )
    agent = KPIAgent(context.settings, context.resources)

    async def answer() -> dict[str, object]:
        payload = await agent.prepare(question, context)
        result = await agent.run(context, payload)
        return {"summary": result.summary, **result.output}

    try:
        click.echo(json.dumps(asyncio.run(answer()), indent=2))
    except AgentFailure as exc:
        click.echo(
            json.dumps(
                {
                    "error_type": exc.error_type,
                    "message": exc.message,
                    "suggestion": exc.suggestion,
                },
                indent=2,
            )
        )
        raise SystemExit(1) from None
