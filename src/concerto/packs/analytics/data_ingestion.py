"""`data_ingestion` (004): load a file as a source when a question asks for it.

"load sales.csv as sales" goes through the same loader as `concerto data load` (typed
table, profile, embeddings) and answers with the source's profile. Only files inside the
uploads folder of the data dir (where the HTTP API's uploads land) or a folder listed in
`CONCERTO_DATA_IMPORT_DIRS` can be named: a question arriving over HTTP must not make the
server read its own files.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path, PurePath
from typing import Any

from sqlglot import exp

from concerto.agents.base import AgentContext, AgentFailure, AgentInfo, FirstUse
from concerto.agents.task import TaskInput
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.data.context import DataContext
from concerto.data.load import KINDS, LoadError
from concerto.data.settings import DataSettings
from concerto.data.store import SourceError, Store, source_name, valid_name
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Planned, Work

_FILE = re.compile(
    r"""(?:"([^"]+)"|'([^']+)'|(\S+\.(?:""" + "|".join(k.lstrip(".") for k in KINDS) + r""")))\b""", re.I
)
_COMMAND = re.compile(
    r"^(?:please\s+)?(?:load|import|ingest|upload)\s+(?:the\s+)?(?:file\s+)?(?:\S+\.(?:"
    + "|".join(k.lstrip(".") for k in KINDS)
    + r")|\"[^\"]+\"|'[^']+')(?:\s+(?:as|named|called)\s+\S.*)?$",
    re.I,
)
# Whatever follows "as" is the name asked for: taken as it is or refused, never ignored.
_AS = re.compile(r"\b(?:as|named|called|call it)\s+[\"']?(\S.{0,99}?)[\"']?[?.!]*\s*$", re.I)


class DataIngestionAgent(AnalyticsAgent):
    """Loads an uploaded (or allowed) file as a source and reports what it holds."""

    llm_planning = False  # its own steps (the LLM, when configured, reasons where the step needs it)
    needs_values = False
    info = AgentInfo(
        name="data_ingestion",
        description=(
            "Loads a data file (CSV, TSV, Parquet, JSON or Excel) as a new table when asked to, and reports its "
            "columns, types and profile."
        ),
        capabilities=[
            "Load an uploaded CSV, Parquet, JSON or Excel file as a queryable table",
            "Detect column types, nulls and sample values",
            "Profile what the data is about and what each column means",
        ],
        inputs={"request": "Which file to load and under which name", "context": "Optional"},
        outputs={"results": "The new source's columns and profile", "insights": "What was loaded"},
        examples=["load sales.csv as sales", "import the file customers.parquet", "ingest q3.xlsx as q3"],
        default_timeout_ms=120000,
    )

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        return None  # it loads the file it is given, never the demo table

    def match_structured(self, text: str) -> dict[str, Any] | None:
        """ "load FILE [as NAME]" (also import / ingest / upload): the command form of this agent."""
        found = _COMMAND.match(text.strip())
        return {"command": text.strip()} if found else None

    async def source(self, store: Store, task: TaskInput, context: AgentContext) -> DataContext:
        given, name = _file_and_name(task.question.strip())
        path = _allowed(given, context)
        try:
            target = valid_name(name) if name is not None else source_name(path.stem)
            await context.emit(EventType.ACTION, f"Loading {path.name} as {target}", {"file": path.name}, 2)
            loaded = await asyncio.to_thread(store.load, path, target)
        except (LoadError, SourceError) as exc:
            raise AgentFailure(str(exc), error_type="load_failed", kind=ErrorKind.VALIDATION) from None
        if context.llm is None:
            return loaded
        from concerto.data.llm_profile import profile_with_llm

        return await profile_with_llm(store, loaded, context.llm)

    def plan(self, work: Work) -> list[Planned]:
        source = work.source
        query = sql.select_from(source, exp.alias_(exp.Count(this=exp.Star()), "rows"))
        return [Planned(f"rows in the new source {source.name}", query, "table", kind="check")]

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        return describe(work.source, executed)


def describe(source: DataContext, executed: list[Executed]) -> Insights:
    """What a source holds, in findings: size, entity, time span, each column's meaning."""
    profile = source.semantic_profile
    rows = (
        executed[0].result.data[0]["rows"]
        if executed and executed[0].result and executed[0].result.data
        else source.row_count
    )
    span = ""
    if profile.time_column:
        p = source.detected_types[profile.time_column]
        span = f", {profile.time_column} from {p.min} to {p.max}"
    summary = (
        f"'{source.name}' ({source.file_name}) holds {rows:,} rows and {len(source.columns)} columns: one "
        f"{profile.entity_name} per {profile.entity_key or 'row'}{span}."
    )
    findings = [summary]
    findings += [
        f"{c} ({source.detected_types[c].type}, {source.detected_types[c].role}): {source.describe(c)}"
        for c in source.columns[:12]
    ]
    if len(source.columns) > 12:
        findings.append(f"and {len(source.columns) - 12} more columns")
    findings += source.notes
    return Insights(summary, findings, follow_ups=example_questions(source))


def example_questions(source: DataContext) -> list[str]:
    """Questions this source can answer, from what its columns are."""
    money = source.columns_with("money", "measure")
    categories = source.columns_with("category")
    entity = source.semantic_profile.entity_name
    out = []
    if money and categories:
        out.append(f"total {words.label(money[0])} by {words.label(categories[0])}")
    if money and source.semantic_profile.time_column:
        out.append(f"is {words.label(money[0])} trending up or down?")
    if money and source.semantic_profile.entity_key:
        out.append(f"segment {words.plural(entity)} by {words.label(money[0])}")
    if source.embedded_columns:
        out.append(f"find {words.plural(entity)} about a topic in {source.embedded_columns[0]}")
    return out[:4]


def _file_and_name(request: str) -> tuple[str, str | None]:
    found = _FILE.search(request)
    if not found:
        raise AgentFailure(
            "Say which file to load, e.g. 'load sales.csv as sales' (CSV, TSV, Parquet, JSON or Excel).",
            error_type="no_file",
            kind=ErrorKind.VALIDATION,
        )
    given = next(g for g in found.groups() if g)
    named = _AS.search(request[found.end() :])
    return given, named.group(1).strip() if named else None


def _allowed(given: str, context: AgentContext) -> Path:
    """The file, if it lies inside an allowed folder; never a path that climbs out of one."""
    settings = DataSettings.of(context.settings)
    folders = [Path(context.settings.data_dir) / "uploads"]
    folders += [Path(p).expanduser() for p in settings.data_import_dirs.split(":") if p.strip()]
    for folder in folders:
        root = folder.resolve()
        candidate = (root / given).resolve()
        if candidate.is_relative_to(root) and candidate.is_file():
            return candidate
    # The folders by what they are, not where: the message reaches API clients.
    shown = "the data dir's uploads folder" + (", or a folder of CONCERTO_DATA_IMPORT_DIRS" if folders[1:] else "")
    raise AgentFailure(
        f"No file '{PurePath(given).name}' in the folders a question may load from ({shown}).",
        error_type="file_not_found",
        kind=ErrorKind.NOT_FOUND,
        suggestion="Upload it (POST /v1/data/sources, or the page), load it with `concerto data load PATH`, or add "
        "its folder to CONCERTO_DATA_IMPORT_DIRS.",
    )
