"""The embedded store: one DuckDB file per source in `<data dir>/sources/`, with its data
context beside it as JSON.

A file per source keeps writing and reading apart: a load writes a new file and renames
it into place, while queries run on a read-only connection to each file, locked so that
no statement can reach the file system or change the settings (`enable_external_access`
off, then `lock_configuration`: DEPENDENCIES.md shows `read_only` alone still runs
`COPY ... TO` and `read_csv('/etc/passwd')`). Each query runs on its own cursor and is
interrupted at the time limit.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import duckdb
from sqlglot import exp

from concerto.data.context import DataContext, ProfileOverrides
from concerto.data.errors import LoadError, without_paths
from concerto.data.profile import profile_table
from concerto.data.store import QueryFailed, QueryResult, SourceError, Store, valid_name

T = TypeVar("T")
_SMALL_FILE = 1 << 20  # files under this get small blocks (`_file_config`)
_SMALL_BLOCK = 16 * 1024


class DuckDBStore(Store):
    """Sources as DuckDB files under `root`."""

    dialect: ClassVar[str] = "duckdb"

    def __init__(self, root: Path, **limits: Any) -> None:
        super().__init__(**limits)
        self.root = Path(root)
        self._lock = threading.Lock()
        self._readers: dict[str, tuple[int, duckdb.DuckDBPyConnection]] = {}  # name → (file id, connection)
        self._listed: tuple[int, list[DataContext]] | None = None  # (directory mtime, contexts)

    def _db(self, name: str) -> Path:
        return self.root / f"{name}.duckdb"

    def _meta(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def contexts(self) -> list[DataContext]:
        """The sources, read again only when the directory changed (routing asks on every question)."""
        try:
            stamp = self.root.stat().st_mtime_ns
        except FileNotFoundError:
            return []
        listed = self._listed
        if listed is not None and listed[0] == stamp:
            return list(listed[1])
        found = []
        for meta in self.root.glob("*.json"):
            try:
                found.append(DataContext.model_validate_json(meta.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue  # a half-written or foreign file: not a source
        found.sort(key=lambda c: (c.loaded_at, c.name))
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
        self.root.mkdir(parents=True, exist_ok=True)
        partial = self.root / f".{name}.{os.getpid()}.loading.duckdb"
        partial.unlink(missing_ok=True)
        try:
            with duckdb.connect(str(partial), config=_file_config(path)) as con:
                notes = self._read(con, path, name, progress)
                context = profile_table(
                    con, name, name=name, file_name=Path(path).name, overrides=overrides, notes=notes
                )
                vectors = self._embeddings(con, context)
                if vectors is not None:
                    con.register("concerto_vectors", vectors)
                    con.execute(
                        f'CREATE TABLE "{context.embedding_table}" AS SELECT column_name, value, '
                        "CAST(embedding AS FLOAT[384]) AS embedding FROM concerto_vectors"
                    )
                    con.unregister("concerto_vectors")
            with self._lock:
                self._forget(name)
                os.replace(partial, self._db(name))
                _write_atomically(self._meta(name), context.model_dump_json(indent=2))
            return context
        except (LoadError, SourceError):
            raise
        except duckdb.Error as exc:
            raise LoadError(f"{path.name} could not be loaded: {self._shown(exc, path)}") from None
        finally:
            partial.unlink(missing_ok=True)
            Path(f"{partial}.wal").unlink(missing_ok=True)

    def save_context(self, context: DataContext) -> None:
        with self._lock:
            if not self._db(context.name).exists():
                raise SourceError(f"the data source '{context.name}' was dropped")
            _write_atomically(self._meta(context.name), context.model_dump_json(indent=2))

    def drop(self, name: str) -> None:
        context = self.context(name)
        with self._lock:
            self._forget(context.name)
            self._meta(context.name).unlink(missing_ok=True)
            self._db(context.name).unlink(missing_ok=True)

    def _reader(self, name: str) -> duckdb.DuckDBPyConnection:
        """The locked read-only connection to the source's file (reopened after a reload)."""
        path = self._db(name)
        try:
            file_id = path.stat().st_ino
        except FileNotFoundError:
            raise SourceError(f"the data source '{name}' was dropped") from None
        with self._lock:
            known = self._readers.get(name)
            if known is not None and known[0] == file_id:
                return known[1]
            self._forget(name)
            # The lock travels with the connection's config: DuckDB shares one instance per file in
            # a process, so a second store opening the same file gets the same, locked instance
            # (SET after the first lock would fail).
            con = duckdb.connect(
                str(path), read_only=True, config={"enable_external_access": False, "lock_configuration": True}
            )
            self._readers[name] = (file_id, con)
            return con

    def _run(self, context: DataContext, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        def rows(cursor: duckdb.DuckDBPyConnection) -> tuple[list[str], list[tuple[Any, ...]]]:
            cursor.execute(sql)
            return [d[0] for d in cursor.description or []], cursor.fetchall()

        return self._fetch(context, rows)

    def _arrow(self, context: DataContext, sql: str) -> Any:
        return self._fetch(context, lambda cursor: cursor.sql(sql).to_arrow_table())

    def _fetch(self, context: DataContext, run: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
        """Run checked SQL (inside `run`) on a cursor of the locked reader, under the time limit."""
        cursor = self._reader(context.name).cursor()
        timer = threading.Timer(self.timeout_s, cursor.interrupt)
        timer.start()
        try:
            return run(cursor)
        except duckdb.InterruptException:
            raise QueryFailed(
                f"the query did not finish within {self.timeout_s:g} s (CONCERTO_DATA_QUERY_TIMEOUT_S)"
            ) from None
        except duckdb.Error as exc:
            raise QueryFailed(self._shown(exc)) from None
        finally:
            timer.cancel()
            cursor.close()

    def nearest(self, context: DataContext, column: str, vector: Any, k: int) -> QueryResult:
        """Cosine similarity in SQL (`array_cosine_similarity` on the FLOAT[384] column)."""
        assert context.embedding_table is not None, f"{context.name} has no embeddings"
        literal = exp.cast(
            exp.Array(expressions=[exp.Literal.number(round(float(x), 6)) for x in vector]),
            exp.DataType.build(f"FLOAT[{len(vector)}]", dialect="duckdb"),
        )
        similarity = exp.Anonymous(this="array_cosine_similarity", expressions=[exp.column("embedding"), literal])
        query = (
            exp.select(
                "value",
                exp.alias_(
                    exp.Round(this=exp.cast(similarity, "DOUBLE"), decimals=exp.Literal.number(4)), "similarity"
                ),
            )
            .from_(exp.to_table(context.embedding_table, quoted=True))
            .where(exp.EQ(this=exp.column("column_name"), expression=exp.Literal.string(column)))
            .order_by(exp.Ordered(this=exp.column("similarity"), desc=True))
            .limit(k)
        )
        return self.query(context, query)

    def _shown(self, exc: BaseException, *paths: Path) -> str:
        """DuckDB's first line of an error, without the data dir's paths (clients see it)."""
        return without_paths(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, *paths, self.root)

    def _forget(self, name: str) -> None:
        known = self._readers.pop(name, None)
        if known is not None:
            with contextlib.suppress(duckdb.Error):
                known[1].close()

    def close(self) -> None:
        with self._lock:
            for name in list(self._readers):
                self._forget(name)


def _file_config(path: Path) -> dict[str, Any]:
    """The new database file's settings: blocks of 16 KB for a small file. DuckDB's default
    256 KB blocks made a 12-byte upload a 536 KB file (its header and two blocks); with 16 KB
    blocks it is about 44 KB. A larger file keeps the default: 16 KB blocks doubled the file of
    a 1M-row table (27 MB against 14 MB) and made its load 20% slower."""
    try:
        small = path.stat().st_size < _SMALL_FILE
    except OSError:
        small = False
    return {"default_block_size": str(_SMALL_BLOCK)} if small else {}


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_suffix(".json.tmp")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
