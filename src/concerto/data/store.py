"""Where loaded sources live and how a checked query runs on them: the one interface of the
DuckDB store (default, a file per source in the data dir) and the PostgreSQL one
(`CONCERTO_DATABASE_URL`). Agents see only this; the dialect is the store's. Which store
is configured, and which source a question is about, is `sources.py`.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field
from sqlglot import exp

from concerto.data.context import DataContext, ProfileOverrides, jsonable
from concerto.data.safety import check_query

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder

NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
DEMO = "demo"


class SourceError(LookupError):
    """A source that does not exist, or a name that cannot be one; the message says which exist."""


class QueryFailed(RuntimeError):
    """A checked query the database refused or stopped (time limit); the message is the database's."""


class QueryResult(BaseModel):
    """Rows of one query as JSON-able dicts, with what produced them."""

    sql: str
    columns: list[str]
    data: list[dict[str, Any]]
    row_count: int
    truncated: bool = Field(False, description="More rows existed than the row cap")
    duration_ms: float = 0.0


def _vectors_query(context: DataContext, column: str) -> exp.Select:
    assert context.embedding_table is not None, f"{context.name} has no embeddings"
    condition = exp.EQ(this=exp.column("column_name"), expression=exp.Literal.string(column))
    table = exp.to_table(context.embedding_table, quoted=True)
    return exp.select("value", "embedding").from_(table).where(condition)


ALLOWED = "lower-case letters, digits and '_', starting with a letter, at most 63 characters"


def source_name(text: str) -> str:
    """A source name made from a file's name: lower snake case, starting with a letter
    ("Q3 Sales (final)" → q3_sales_final, "2024" → t_2024). Only for names derived from a
    file; a name someone chose is taken as it is or refused (`valid_name`)."""
    name = re.sub(r"[^0-9a-z]+", "_", text.strip().lower()).strip("_")
    if name and name[0].isdigit():
        name = f"t_{name}"
    if not NAME.fullmatch(name[:63]):
        raise SourceError(f"'{text[:80]}' cannot name a source; give a name of {ALLOWED}")
    return name[:63]


def valid_name(text: str) -> str:
    """`text` when it is a source name (see `ALLOWED`); else `SourceError` suggesting one. A
    chosen name is never changed into another: "../x", "x;DROP TABLE demo" and "X" would all
    have become "x" and replaced each other's data."""
    if NAME.fullmatch(text):
        return text
    try:
        suggestion = f"; e.g. '{source_name(text)}'"
    except SourceError:
        suggestion = ""
    raise SourceError(f"'{text[:80]}' cannot name a source: use {ALLOWED}{suggestion}")


class Store(ABC):
    """Sources of one backend. Thread-safe: agents run queries from worker threads."""

    dialect: ClassVar[str]

    def __init__(
        self,
        *,
        row_cap: int,
        timeout_s: float,
        max_file_bytes: int,
        max_unpacked_bytes: int = 64 * 2**20,
        load_memory_bytes: int = 128 * 2**20,
        embedder: Callable[[], Embedder] | None = None,
        embed_max_values: int = 5000,
    ) -> None:
        self.row_cap = row_cap
        self.timeout_s = timeout_s
        self.max_file_bytes = max_file_bytes
        self.max_unpacked_bytes = max_unpacked_bytes
        self.load_memory_bytes = load_memory_bytes
        self.embedder = embedder  # text columns are embedded at load time when given
        self.embed_max_values = embed_max_values

    @abstractmethod
    def contexts(self) -> list[DataContext]:
        """Every loaded source, oldest first."""

    def context(self, name: str) -> DataContext:
        for found in self.contexts():
            if found.name == name or found.data_source_id == name:
                return found
        known = ", ".join(c.name for c in self.contexts()) or "none yet (concerto data load FILE)"
        raise SourceError(f"no data source named '{name}'; loaded: {known}")

    @abstractmethod
    def load(
        self,
        path: Path,
        name: str,
        *,
        overrides: ProfileOverrides | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> DataContext:
        """Read the file into a new source (replacing one of the same name) and profile it.
        `name` must be a source name (`valid_name`); it is not changed into one."""

    def _read(self, con: Any, path: Path, name: str, progress: Callable[[float], None] | None) -> list[str]:
        """`read_file` under this store's limits, with a note when the load replaces a source."""
        from concerto.data.load import read_file

        notes = read_file(
            con,
            name,
            path,
            max_bytes=self.max_file_bytes,
            max_unpacked_bytes=self.max_unpacked_bytes,
            memory_bytes=self.load_memory_bytes,
            progress=progress,
        )
        earlier = next((c for c in self.contexts() if c.name == name), None)
        if earlier is not None:
            when = f"{earlier.loaded_at:%Y-%m-%d %H:%M} UTC"
            notes.append(f"replaces the source '{name}' loaded from {earlier.file_name} at {when}")
        return notes

    def _embeddings(self, con: Any, context: DataContext) -> Any:
        """Embed the loaded table's text and name columns (see embed.py); record them in `context`
        and return the vectors as an Arrow table for the store to write (None: nothing embedded)."""
        from concerto.data.embed import embed_columns, embedding_table

        vectors, embedded, notes = embed_columns(
            con, context.table, context.detected_types, self.embedder, self.embed_max_values
        )
        context.notes += notes
        if vectors is not None:
            context.embedded_columns = embedded
            context.embedding_table = embedding_table(context.name)
        return vectors

    @abstractmethod
    def save_context(self, context: DataContext) -> None:
        """Store a corrected data context (the profile from the LLM) for the same source."""

    @abstractmethod
    def drop(self, name: str) -> None:
        """Remove the source and its data."""

    def query(self, context: DataContext, sql: str | exp.Expr) -> QueryResult:
        """Check `sql` against the source (see safety.py), then run it under the row cap and time limit."""
        checked = self._checked(context, sql)
        capped = self._capped(checked)
        text = checked.sql(dialect=self.dialect)
        started = time.perf_counter()
        columns, rows = self._run(context, capped.sql(dialect=self.dialect))
        truncated = len(rows) > self.row_cap
        data = [dict(zip(columns, (jsonable(v) for v in row), strict=True)) for row in rows[: self.row_cap]]
        return QueryResult(
            sql=text,
            columns=columns,
            data=data,
            row_count=len(data),
            truncated=truncated,
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    def table(self, context: DataContext, columns: list[str], *, max_rows: int) -> Any:
        """Whole columns of the source as an Arrow table, for agents that fit models on every
        row (the commercial pack's statistics) rather than read aggregates. The SELECT is
        checked like any other; `max_rows` bounds memory (more rows: `QueryFailed`)."""
        unknown = [c for c in columns if c not in context.detected_types]
        if unknown:
            raise SourceError(f"{context.name} has no column {', '.join(map(repr, unknown))}")
        if context.row_count > max_rows:
            raise QueryFailed(
                f"{context.name} has {context.row_count:,} rows, more than the {max_rows:,} an analysis may read"
            )
        query = exp.select(*(exp.column(c, quoted=True) for c in columns)).from_(
            exp.to_table(context.table, quoted=True)
        )
        return self._arrow(context, self._checked(context, query).sql(dialect=self.dialect))

    def _checked(self, context: DataContext, sql: str | exp.Expr) -> exp.Query:
        """`sql` checked against the source's tables (see safety.py), in this backend's terms."""
        schema = {context.table: {c: p.type for c, p in context.detected_types.items()}}
        if context.embedding_table:
            from concerto.data.embed import SCHEMA

            schema[context.embedding_table] = SCHEMA
        return self._adapt(check_query(sql, schema, dialect=self.dialect))

    def _arrow(self, context: DataContext, sql: str) -> Any:
        """Checked SQL's rows as an Arrow table; stores with a native Arrow path override it."""
        import pyarrow as pa

        names, rows = self._run(context, sql)
        return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})

    def nearest(self, context: DataContext, column: str, vector: Any, k: int) -> QueryResult:
        """The `k` values of an embedded column most similar (cosine) to `vector`, as rows of
        `value, similarity`. Here: the column's vectors are fetched by a checked query and
        compared in numpy (PostgreSQL without pgvector); DuckDB compares them in SQL."""
        import numpy as np

        fetched = self.query(context, _vectors_query(context, column))
        if not fetched.data:
            return fetched
        matrix = np.asarray([row["embedding"] for row in fetched.data], dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(vector))
        scores = matrix @ np.asarray(vector, dtype=np.float32) / np.maximum(norms, 1e-12)
        order = np.argsort(-scores)[:k]
        data = [{"value": fetched.data[i]["value"], "similarity": round(float(scores[i]), 4)} for i in order]
        return fetched.model_copy(
            update={"data": data, "columns": ["value", "similarity"], "row_count": len(data), "truncated": False}
        )

    def _adapt(self, query: exp.Query) -> exp.Query:
        """The checked query in what this backend can run, where sqlglot's rendering alone is
        not enough (functions the database lacks); the default changes nothing."""
        return query

    def _capped(self, query: exp.Query) -> exp.Query:
        """The query with at most `row_cap + 1` rows (one more tells that rows were cut)."""
        if isinstance(query, exp.Select):
            limit = query.args.get("limit")
            given = limit.expression if isinstance(limit, exp.Limit) else None
            if isinstance(given, exp.Literal) and given.is_int and int(given.this) <= self.row_cap:
                return query
            return query.limit(self.row_cap + 1)
        return exp.select("*").from_(query.subquery("q")).limit(self.row_cap + 1)

    @abstractmethod
    def _run(self, context: DataContext, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run already-checked SQL on a connection that cannot write or read files."""

    def close(self) -> None:
        """Release connections."""
        return None
