"""The PostgreSQL store (`CONCERTO_DATABASE_URL`): sources as tables of the schema `concerto`,
their data contexts in `concerto.sources`.

A file is read and profiled by DuckDB exactly as for the embedded store (same types,
same profile, so the same answers), then streamed into PostgreSQL with `COPY ... FROM
STDIN`. Queries run as the role `concerto_reader` (NOLOGIN, USAGE on the schema and
SELECT on its tables, nothing else), each in a `READ ONLY` transaction with a local
`statement_timeout`: DEPENDENCIES.md notes that a role's read-only defaults can be
switched off with `SET`, so the grants are what enforce read-only, and the sqlglot check
keeps `SET`, `RESET` and every second statement out before anything is sent.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import psycopg
import sqlglot
from psycopg import sql as pgsql
from sqlglot import exp

from concerto.data.context import DataContext, ProfileOverrides
from concerto.data.errors import LoadError, without_paths
from concerto.data.profile import profile_table
from concerto.data.store import QueryFailed, SourceError, Store, valid_name

SCHEMA = "concerto"
READER = "concerto_reader"
_CHUNK = 1 << 20
_TYPES = [
    (re.compile(r"^(BIGINT|HUGEINT|UBIGINT|UINTEGER)"), "bigint"),
    (re.compile(r"^(INTEGER|SMALLINT|TINYINT|USMALLINT|UTINYINT)"), "integer"),
    (re.compile(r"^(DOUBLE|FLOAT|REAL)"), "double precision"),
    (re.compile(r"^DECIMAL"), "numeric"),
    (re.compile(r"^TIMESTAMP WITH TIME ZONE"), "timestamptz"),
    (re.compile(r"^TIMESTAMP"), "timestamp"),
    (re.compile(r"^DATE"), "date"),
    (re.compile(r"^TIME"), "time"),
    (re.compile(r"^BOOLEAN"), "boolean"),
]


class PostgresStore(Store):
    """Sources in one PostgreSQL database."""

    dialect: ClassVar[str] = "postgres"

    def __init__(self, url: str, **limits: Any) -> None:
        from concerto.redact import remember

        super().__init__(**limits)
        self.url = url
        remember(url)  # its password is masked even where psycopg quotes it alone
        self._local = threading.local()
        self._opened: list[psycopg.Connection[Any]] = []
        self._ready = False
        self._setup_lock = threading.Lock()
        self._listed: tuple[Any, list[DataContext]] | None = None  # (catalog stamp, contexts)

    def _connection(self) -> psycopg.Connection[Any]:
        """This thread's connection (psycopg connections are not shared between threads)."""
        con: psycopg.Connection[Any] | None = getattr(self._local, "con", None)
        if con is None or con.closed:
            try:
                con = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                raise QueryFailed(f"cannot connect to PostgreSQL (CONCERTO_DATABASE_URL): {_first_line(exc)}") from None
            self._local.con = con
            with self._setup_lock:
                self._opened.append(con)
        if not self._ready:
            self._setup(con)
        return con

    def _setup(self, con: psycopg.Connection[Any]) -> None:
        """The schema, the catalog table and the read-only role, once per store."""
        with self._setup_lock:
            if self._ready:
                return
            try:
                with con.transaction():
                    con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
                    con.execute(
                        f"CREATE TABLE IF NOT EXISTS {SCHEMA}.sources "
                        "(name text PRIMARY KEY, context jsonb NOT NULL, loaded_at timestamptz NOT NULL)"
                    )
                    exists = con.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [READER]).fetchone()
                    if not exists:
                        con.execute(f"CREATE ROLE {READER} NOLOGIN")
                    con.execute(f"GRANT USAGE ON SCHEMA {SCHEMA} TO {READER}")
                    con.execute(f"GRANT {READER} TO CURRENT_USER")
            except psycopg.Error as exc:
                raise QueryFailed(
                    f"cannot prepare PostgreSQL for Concerto ({_first_line(exc)}); the user of CONCERTO_DATABASE_URL "
                    f"needs to create the schema {SCHEMA} and the NOLOGIN role {READER} (or have them made for it)"
                ) from None
            self._ready = True

    def contexts(self) -> list[DataContext]:
        """The sources, read and validated again only when the catalog changed: routing asks every
        analytics agent what it holds on every question, and a count with the newest row version
        (`xmin`, new on every insert and update) is far cheaper than the contexts themselves."""
        con = self._connection()
        stamp = con.execute(f"SELECT count(*), max(xmin::text::bigint) FROM {SCHEMA}.sources").fetchall()[0]
        listed = self._listed
        if listed is not None and listed[0] == stamp:
            return list(listed[1])
        rows = con.execute(f"SELECT context FROM {SCHEMA}.sources ORDER BY loaded_at, name").fetchall()
        found = [DataContext.model_validate(row[0]) for row in rows]
        self._listed = (stamp, found)
        return list(found)

    def load(
        self,
        path: Path,
        name: str,
        *,
        overrides: ProfileOverrides | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> DataContext:
        name = valid_name(name)
        path = Path(path)
        # A DuckDB file, not an in-memory database: the table must not have to fit in memory.
        with (
            tempfile.TemporaryDirectory(prefix="concerto-pg-load-") as tmp,
            duckdb.connect(str(Path(tmp) / "load.duckdb")) as duck,
        ):
            try:
                notes = self._read(duck, path, name, progress)
                context = profile_table(
                    duck, name, name=name, file_name=path.name, backend="postgres", overrides=overrides, notes=notes
                )
                vectors = self._embeddings(duck, context)
                csv_path = Path(tmp) / "rows.csv"
                duck.execute(f'COPY "{name}" TO $1 (FORMAT csv, HEADER true)', [str(csv_path)])
            except duckdb.Error as exc:
                raise LoadError(f"{path.name} could not be loaded: {without_paths(_first_line(exc), path)}") from None
            self._copy_in(context, csv_path, vectors)
        return context

    def _copy_in(self, context: DataContext, csv_path: Path, vectors: Any = None) -> None:
        """Create the table under a temporary name, stream the rows in, then swap it in."""
        con = self._connection()
        partial = f"{context.name}__loading_{os.getpid()}"
        columns = pgsql.SQL(", ").join(
            pgsql.SQL("{} {}").format(pgsql.Identifier(c), pgsql.SQL(_pg_type(p.type)))
            for c, p in context.detected_types.items()
        )
        try:
            with con.transaction():
                con.execute(pgsql.SQL("DROP TABLE IF EXISTS {}").format(pgsql.Identifier(SCHEMA, partial)))
                con.execute(pgsql.SQL("CREATE TABLE {} ({})").format(pgsql.Identifier(SCHEMA, partial), columns))
                with (
                    con.cursor() as cur,
                    cur.copy(
                        pgsql.SQL("COPY {} FROM STDIN (FORMAT csv, HEADER true)").format(
                            pgsql.Identifier(SCHEMA, partial)
                        )
                    ) as copy,
                    csv_path.open("rb") as rows,
                ):
                    while chunk := rows.read(_CHUNK):
                        copy.write(chunk)
                con.execute(pgsql.SQL("DROP TABLE IF EXISTS {}").format(pgsql.Identifier(SCHEMA, context.name)))
                con.execute(
                    pgsql.SQL("ALTER TABLE {} RENAME TO {}").format(
                        pgsql.Identifier(SCHEMA, partial), pgsql.Identifier(context.name)
                    )
                )
                con.execute(
                    pgsql.SQL("GRANT SELECT ON {} TO {}").format(
                        pgsql.Identifier(SCHEMA, context.name), pgsql.Identifier(READER)
                    )
                )
                self._vectors_in(con, context, vectors)
                con.execute(
                    f"INSERT INTO {SCHEMA}.sources (name, context, loaded_at) VALUES (%s, %s, %s) "
                    "ON CONFLICT (name) DO UPDATE SET context = EXCLUDED.context, loaded_at = EXCLUDED.loaded_at",
                    [context.name, context.model_dump_json(), context.loaded_at],
                )
        except psycopg.Error as exc:
            raise LoadError(f"{context.file_name} could not be stored in PostgreSQL: {_first_line(exc)}") from None

    def save_context(self, context: DataContext) -> None:
        con = self._connection()
        done = con.execute(
            f"UPDATE {SCHEMA}.sources SET context = %s WHERE name = %s", [context.model_dump_json(), context.name]
        )
        if done.rowcount == 0:
            raise SourceError(f"the data source '{context.name}' was dropped")

    def _vectors_in(self, con: psycopg.Connection[Any], context: DataContext, vectors: Any) -> None:
        """The source's embeddings table (real[]: pgvector is not assumed), replaced, readable by the reader."""
        from concerto.data.embed import embedding_table

        target = pgsql.Identifier(SCHEMA, embedding_table(context.name))
        con.execute(pgsql.SQL("DROP TABLE IF EXISTS {}").format(target))
        if vectors is None:
            return
        con.execute(pgsql.SQL("CREATE TABLE {} (column_name text, value text, embedding real[])").format(target))
        with con.cursor() as cur, cur.copy(pgsql.SQL("COPY {} FROM STDIN").format(target)) as copy:
            for column, value, vector in zip(
                vectors.column("column_name").to_pylist(),
                vectors.column("value").to_pylist(),
                vectors.column("embedding").to_pylist(),
                strict=True,
            ):
                copy.write_row((column, value, vector))
        con.execute(pgsql.SQL("GRANT SELECT ON {} TO {}").format(target, pgsql.Identifier(READER)))

    def drop(self, name: str) -> None:
        from concerto.data.embed import embedding_table

        context = self.context(name)
        con = self._connection()
        with con.transaction():
            con.execute(pgsql.SQL("DROP TABLE IF EXISTS {}").format(pgsql.Identifier(SCHEMA, context.name)))
            con.execute(
                pgsql.SQL("DROP TABLE IF EXISTS {}").format(pgsql.Identifier(SCHEMA, embedding_table(context.name)))
            )
            con.execute(f"DELETE FROM {SCHEMA}.sources WHERE name = %s", [context.name])

    def _run(self, context: DataContext, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        con = self._connection()
        timeout_ms = max(int(self.timeout_s * 1000), 1)
        try:
            with con.transaction(), con.cursor() as cur:
                cur.execute("SET TRANSACTION READ ONLY")
                cur.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(READER)))
                cur.execute(pgsql.SQL("SET LOCAL statement_timeout = {}").format(pgsql.Literal(timeout_ms)))
                cur.execute(pgsql.SQL("SET LOCAL search_path = {}").format(pgsql.Identifier(SCHEMA)))
                cur.execute(sql)  # checked by safety.check_query: one SELECT over this source's table
                columns = [d.name for d in cur.description or []]
                return columns, cur.fetchall()
        except psycopg.errors.QueryCanceled:
            limit = f"{self.timeout_s:g} s (CONCERTO_DATA_QUERY_TIMEOUT_S)"
            raise QueryFailed(f"the query did not finish within {limit}") from None
        except psycopg.errors.UndefinedTable:
            raise SourceError(f"the data source '{context.name}' was dropped") from None
        except psycopg.Error as exc:
            raise QueryFailed(_first_line(exc)) from None

    def _adapt(self, query: exp.Query) -> exp.Query:
        """What PostgreSQL 15 lacks, in what it has: `round(double, n)` (only numeric rounds to
        digits), `any_value` (new in 16) and `skewness`; the rest sqlglot transpiles."""

        def adapt(node: exp.Expr) -> exp.Expr:
            # A replaced node is not descended into: adapt its argument first.
            if isinstance(node, exp.Round) and node.args.get("decimals") is not None:
                return exp.Round(this=exp.cast(node.this.transform(adapt), "DECIMAL"), decimals=node.args["decimals"])
            if isinstance(node, exp.AnyValue):
                return exp.Min(this=node.this.transform(adapt))
            if isinstance(node, exp.Skewness):
                return _skewness(node.this.transform(adapt))
            return node

        adapted = query.transform(adapt)
        assert isinstance(adapted, exp.Query)
        return adapted

    def close(self) -> None:
        with self._setup_lock:
            opened, self._opened = self._opened, []
        for con in opened:
            con.close()


def _skewness(x: exp.Expr) -> exp.Expr:
    """The sample skewness DuckDB's `skewness` gives, from moments PostgreSQL has:
    n² / ((n-1)(n-2)) · (E[x³] − 3μE[x²] + 2μ³) / s³ over the population moments' n."""
    return sqlglot.parse_one(
        "CASE WHEN COUNT(x) > 2 AND STDDEV_POP(x) > 0 THEN "
        "(SQRT(COUNT(x) * (COUNT(x) - 1.0)) / (COUNT(x) - 2.0)) * "
        "(AVG(x * x * x) - 3 * AVG(x) * AVG(x * x) + 2 * POWER(AVG(x), 3)) / POWER(STDDEV_POP(x), 3) END",
        read="postgres",
    ).transform(lambda n: x.copy() if isinstance(n, exp.Column) and n.name == "x" else n)


def _pg_type(duckdb_type: str) -> str:
    for pattern, pg in _TYPES:
        if pattern.match(duckdb_type):
            return pg
    return "text"


def _first_line(exc: BaseException) -> str:
    """The first line of psycopg's message, scrubbed: libpq quotes the connection string it
    could not parse (`invalid URI query parameter`, `unexpected spaces found in "<password>"`)."""
    from concerto.redact import scrub

    return scrub(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
