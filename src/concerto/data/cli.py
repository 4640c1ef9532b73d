"""`concerto data ...`: load a file as a source, list the sources, show one's profile, drop one."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from concerto.data.context import DataContext, ProfileOverrides
    from concerto.data.store import Store


def _store() -> Store:
    from concerto.data.sources import store_for
    from concerto.settings import Settings

    return store_for(Settings())


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.group()
def data() -> None:
    """Data sources: tables loaded from your files, for the analytics agents to query."""


@data.command("load")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--name",
    help="Source name: lower-case letters, digits and '_', starting with a letter (default: made from the "
    "file's name).",
)
@click.option(
    "--describe",
    "describe",
    multiple=True,
    metavar="COLUMN=TEXT",
    help="Say what a column means (repeatable); overrides the detected description. COLUMN=KIND with a kind "
    "(id/identifier, measure/number, money, category, time/date, label/name, text, flag) corrects its kind.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the data context as JSON.")
def load(path: Path, name: str | None, describe: tuple[str, ...], as_json: bool) -> None:
    """Load a CSV, TSV, Parquet, JSON or Excel file as a source (replacing one of the same name).

    A `NAME.profile.yaml` beside the file (domain, entity_name, entity_key, time_column,
    field_descriptions, kinds) corrects the detected profile; `--describe` wins over it.

    \b
    Examples:
      concerto data load sales.csv
      concerto data load q3.parquet --name sales --describe "amt=Invoice amount in euros"
      concerto data load orders.csv --describe "order_no=identifier" --describe "amount=measure"
    """
    from concerto.data.load import LoadError
    from concerto.data.store import SourceError, source_name, valid_name

    try:
        with _utf8_named(path) as readable:
            target = valid_name(name) if name is not None else source_name(readable.stem)
            overrides = _overrides(path, target, describe)
            store = _store()
            context = _with_progress(
                lambda progress: store.load(readable, target, overrides=overrides, progress=progress)
            )
        context = _llm_profile(store, context, overrides)
    except (LoadError, SourceError, ValueError) as exc:
        raise _fail(exc) from None
    if as_json:
        click.echo(context.model_dump_json(indent=2))
        return
    _print_context(context, heading=f"Loaded {context.file_name} as '{context.name}'", most=_SHOWN_AFTER_LOAD)


@contextmanager
def _utf8_named(path: Path) -> Iterator[Path]:
    """`path`, or, when its name holds bytes that are not UTF-8 (Python keeps them as lone
    surrogates, which the readers, DuckDB and fastexcel, cannot take), a link to it in a
    temporary folder, named as a UTF-8 reader shows those bytes (`caf\xe9.csv`: `caf�.csv`),
    the name the source records."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        with tempfile.TemporaryDirectory(prefix="concerto-load-") as folder:
            link = Path(folder) / os.fsencode(path.name).decode("utf-8", "replace")
            link.symlink_to(path.resolve())
            yield link
        return
    yield path


@data.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_sources(as_json: bool) -> None:
    """List the loaded sources (name, rows, columns, file)."""
    contexts = _store().contexts()
    if as_json:
        rows = [
            {"name": c.name, "row_count": c.row_count, "columns": c.columns, "file_name": c.file_name} for c in contexts
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    if not contexts:
        click.echo("No data sources yet. Load one with: concerto data load FILE  (the demo loads on first question)")
    for c in contexts:
        click.echo(f"{c.name:<24} {c.row_count:>12,} rows  {len(c.columns):>3} columns  {c.file_name}")


@data.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the data context as JSON.")
def show(name: str, as_json: bool) -> None:
    """Show a source's data context: columns, types, samples, what each column means."""
    from concerto.data.store import SourceError

    try:
        context = _store().context(name)
    except SourceError as exc:
        raise _fail(exc) from None
    if as_json:
        click.echo(context.model_dump_json(indent=2))
        return
    _print_context(context, heading=f"{context.name} ({context.file_name})")


@data.command("drop")
@click.argument("name")
def drop(name: str) -> None:
    """Remove a source and its data."""
    from concerto.data.store import SourceError

    try:
        _store().drop(name)
    except SourceError as exc:
        raise _fail(exc) from None
    click.echo(f"Dropped {name}.")


def _llm_profile(store: Store, context: DataContext, overrides: ProfileOverrides) -> DataContext:
    """With an LLM configured, its description of the data (the user's words over it)."""
    import asyncio

    from concerto.settings import Settings

    settings = Settings()
    if not settings.llm_configured:
        return context
    from concerto.data.llm_profile import profile_with_llm
    from concerto.llm.openai_compat import llm_from_settings

    llm = llm_from_settings(settings)
    if llm is None:
        return context
    return asyncio.run(profile_with_llm(store, context, llm, overrides))


# `--describe COLUMN=KIND` with one of these words sets the column's kind (role).
_KINDS = {
    **{role: role for role in ("id", "time", "money", "measure", "category", "label", "text", "flag")},
    "identifier": "id",
    "date": "time",
    "number": "measure",
    "name": "label",
}


def _overrides(path: Path, name: str, describe: tuple[str, ...]) -> ProfileOverrides:
    """The sidecar `<name>.profile.yaml` (or `<file stem>.profile.yaml`), then `--describe` pairs."""
    from concerto.data.context import ProfileOverrides

    overrides = ProfileOverrides()
    for sidecar in {path.with_name(f"{name}.profile.yaml"), path.with_name(f"{path.stem}.profile.yaml")}:
        if sidecar.is_file():
            overrides = overrides.merged(_read_sidecar(sidecar))
    pairs, kinds = {}, {}
    for item in describe:
        column, sep, text = item.partition("=")
        if not sep or not column.strip() or not text.strip():
            raise click.BadParameter(f"'{item}' is not COLUMN=TEXT", param_hint="--describe")
        kind = _KINDS.get(text.strip().lower())
        if kind is not None:  # "amount=measure": the column's kind, not its description
            kinds[column.strip()] = kind
        else:
            pairs[column.strip()] = text.strip()
    given = ProfileOverrides(field_descriptions=pairs, kinds=kinds)
    return overrides.merged(given) if pairs or kinds else overrides


def _read_sidecar(path: Path) -> ProfileOverrides:
    import yaml
    from pydantic import ValidationError

    from concerto.data.context import ProfileOverrides

    try:
        return ProfileOverrides.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"{path.name} is not a valid profile: {str(exc).splitlines()[0]}") from None


def _with_progress(work: Any) -> DataContext:
    """Run the load with a progress bar on stderr (it disappears when done)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("loading"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("load", total=100)
        context: DataContext = work(lambda done: bar.update(task, completed=done))
    return context


_SHOWN_AFTER_LOAD = 50  # columns the summary of a load shows (rendering 10,000 rows took 12 s)


def _print_context(context: DataContext, heading: str, most: int | None = None) -> None:
    """The context as a table of its columns (the first `most`, then how many more)."""
    from rich.console import Console
    from rich.table import Table

    profile = context.semantic_profile
    table = Table(
        title=f"{heading}: {context.row_count:,} rows, one {profile.entity_name} per "
        f"{profile.entity_key or 'row'}" + (f", over {profile.time_column}" if profile.time_column else "")
    )
    for col in ("column", "type", "kind", "nulls", "examples", "meaning"):
        table.add_column(col)
    for column in context.columns[:most]:
        p = context.detected_types[column]
        examples = ", ".join(str(v)[:20] for v in p.sample_values[:3])
        kind = f"{p.role} ({p.role_reason})" if p.role_reason else p.role  # what profiling chose, and why
        table.add_row(column, p.type, kind, f"{p.nulls:,}", examples, context.describe(column))
    out = Console()
    out.print(table)
    if most is not None and len(context.columns) > most:
        out.print(f"and {len(context.columns) - most:,} more columns: concerto data show {context.name}")
    for note in context.notes:
        out.print(f"[yellow]note:[/yellow] {note}")
