"""Read a file into a typed DuckDB table with DuckDB's own readers (no Python row loop).

CSV/TSV (delimiter sniffed from the first 64 KB, then read strictly: a row with too few
or too many fields is an error, not silently padded), Parquet, JSON (array or one object
per line), and Excel through fastexcel into Arrow (DuckDB's excel extension cannot load
offline). Every failure is a `LoadError` whose message says what is wrong with the file.
"""

from __future__ import annotations

import csv
import io
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from concerto.data.cells import columns_and_comments, type_cells
from concerto.data.errors import LoadError, TooLarge, without_paths
from concerto.data.unpacked import check_parquet, check_workbook

KINDS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".xlsx": "excel",
    ".xlsm": "excel",
    ".xls": "excel",
    ".ods": "excel",
}
_SNIFF_BYTES = 65536
_LONGEST_HEADER = 16 * 2**20
_BUFFER_PER_COLUMN = 64 * 1024
_WIDE = 1000  # columns from which a file is read by one thread

Progress = Callable[[float], None]


def kind_of(path: Path) -> str:
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise LoadError(f"{path.name}: unsupported file type '{path.suffix}'; load CSV, TSV, Parquet, JSON or Excel")
    return kind


def read_file(
    con: duckdb.DuckDBPyConnection,
    table: str,
    path: Path,
    *,
    max_bytes: int,
    max_unpacked_bytes: int = 64 * 2**20,
    memory_bytes: int = 128 * 2**20,
    progress: Progress | None = None,
) -> list[str]:
    """Create `table` from the file; return notes on what loading changed (renamed columns).

    `max_unpacked_bytes` bounds what an Excel workbook unpacks to (read into memory whole);
    `memory_bytes` is DuckDB's memory limit while it reads (with an allowance per column:
    DuckDB reserves about 64 KB of buffers for each column it writes)."""
    if not path.is_file():
        raise LoadError(f"{path.name}: no such file")
    size = path.stat().st_size
    if size == 0:
        raise LoadError(f"{path.name} is empty")
    if size > max_bytes:
        raise TooLarge(
            f"{path.name} is {size / 2**20:,.0f} MB; the limit is {max_bytes / 2**20:,.0f} MB "
            "(CONCERTO_DATA_MAX_FILE_MB)"
        )
    kind = kind_of(path)
    target = _identifier(table)
    header: list[str] = []
    if kind == "excel":
        check_workbook(path, max_unpacked_bytes)
        _read_excel(con, target, path, memory_bytes)
    else:
        columns = check_parquet(path, max_bytes) if kind == "parquet" else 0
        sql, params, header = _reader(kind, path)
        _limit_memory(con, memory_bytes, columns or len(header))
        _run(con, f"CREATE TABLE {target} AS SELECT * FROM {sql}", params, path, kind, progress)
    types = column_types(con, table)
    rows = con.execute(f"SELECT count(*) FROM {target}").fetchall()[0][0]
    if not types:
        raise LoadError(f"{path.name} has no columns")
    if rows == 0:
        raise LoadError(f"{path.name} has a header but no data rows")
    return _renamed(header, list(types)) + type_cells(con, table, types)


def _limit_memory(con: duckdb.DuckDBPyConnection, memory_bytes: int, columns: int) -> None:
    """DuckDB's memory limit for this load: a 927 MB CSV took 640 MB more without one, 150 MB
    with 128 MB (and 16% longer); a table of 10,000 columns needs its 64 KB per column of
    buffers counted (it fails under 700 MB, though it takes about 220 MB). A wide file is read
    by one thread: each thread has buffers for every column (10,000 columns: 190 MB with one
    thread, 250 MB with two, for the same time)."""
    con.execute(f"SET memory_limit = '{(memory_bytes + columns * _BUFFER_PER_COLUMN) // 1024}KiB'")
    if columns > _WIDE:
        con.execute("SET threads = 1")


def column_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """The table's columns and their SQL types, in order (the catalog: `DESCRIBE` of a table of
    10,000 columns takes 0.6 s, this 0.06 s)."""
    return {name: sql_type for name, (sql_type, _) in columns_and_comments(con, table).items()}


def _reader(kind: str, path: Path) -> tuple[str, list[Any], list[str]]:
    """The DuckDB reader for the file, its parameters, and (for CSV) the header as written."""
    if kind == "parquet":
        return "read_parquet($1)", [str(path)], []
    if kind == "json":
        return "read_json($1)", [str(path)], []
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        if b"\n" not in head:  # a header longer than the sample (10,000 columns): all of it
            head += handle.readline(_LONGEST_HEADER)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the sample
            raise LoadError(_not_utf8(path, head, exc.start)) from None
        text = head[: exc.start].decode("utf-8")
    delimiter = "\t" if path.suffix.lower() == ".tsv" else _delimiter(text)
    try:  # newline="": a header ended by a lone CR (old Mac files) is a line, as the csv module wants
        header = next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])
    except csv.Error as exc:
        raise LoadError(f"{path.name}: its first line cannot be read as CSV ({exc})") from None
    options = "header=true, skip=0, delim=$2, quote='\"', strict_mode=true, null_padding=false"
    return f"read_csv($1, {options})", [str(path), delimiter], header


def _delimiter(text: str) -> str:
    try:
        return csv.Sniffer().sniff(text[:20000], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _run(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: list[Any],
    path: Path,
    kind: str,
    progress: Progress | None,
) -> None:
    """Run the load, reporting DuckDB's own progress (0-100) while it works."""
    failure: list[BaseException] = []

    def work() -> None:
        try:
            con.execute(sql, params)
        except BaseException as exc:
            failure.append(exc)

    if progress is None:
        work()
    else:
        con.execute("SET enable_progress_bar=true")
        con.execute("SET enable_progress_bar_print=false")
        worker = threading.Thread(target=work, name="concerto-load", daemon=True)
        worker.start()
        while worker.is_alive():
            done = con.query_progress()
            if done >= 0:
                progress(done)
            time.sleep(0.1)
        progress(100.0)
    if failure:
        raise LoadError(_describe(failure[0], path, kind)) from None


def _read_excel(con: duckdb.DuckDBPyConnection, target: str, path: Path, memory_bytes: int) -> None:
    import fastexcel

    try:
        sheet = fastexcel.read_excel(str(path)).load_sheet(0)
        table = sheet.to_arrow()
    except Exception as exc:  # fastexcel's own errors: not a workbook, a broken sheet
        reason = without_paths(str(exc), path)
        raise LoadError(f"{path.name} could not be read as an Excel workbook: {reason}") from None
    _limit_memory(con, memory_bytes, table.num_columns)
    con.register("concerto_upload", table)
    try:
        con.execute(f"CREATE TABLE {target} AS SELECT * FROM concerto_upload")
    finally:
        con.unregister("concerto_upload")


def _describe(exc: BaseException, path: Path, kind: str) -> str:
    """DuckDB's error in the words a user needs."""
    text = without_paths(str(exc), path)
    if isinstance(exc, duckdb.OutOfMemoryException):
        return (
            f"{path.name} needs more memory to load than a load may use; raise CONCERTO_DATA_LOAD_MEMORY_MB "
            f"({text.splitlines()[0]})"
        )
    if "not utf-8" in text.lower() or "invalid unicode" in text.lower():
        return f"{path.name} is not UTF-8 text; save it as UTF-8 (e.g. 'Save as CSV UTF-8') and load it again"
    if kind == "csv" and ("sniffing" in text or "Expected Number of Columns" in text):
        return f"{path.name}: {_ragged(path) or 'the rows do not have the same number of fields as the header'}"
    first = text.split("\n")[0].removeprefix("Invalid Input Error: ").removeprefix("Conversion Error: ")
    line = next((part.strip() for part in text.split("\n") if part.strip().startswith("Line")), "")
    return f"{path.name} could not be loaded as {kind.upper()}: {first}" + (f" ({line})" if line else "")


def _ragged(path: Path, limit: int = 100_000) -> str | None:
    """The first line whose field count differs from the header's (a diagnosis after DuckDB refused)."""
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        sample = handle.read(_SNIFF_BYTES)
        handle.seek(0)
        delimiter = "\t" if path.suffix.lower() == ".tsv" else _delimiter(sample)
        reader = csv.reader(handle, delimiter=delimiter)
        header = next(reader, [])
        for number, row in enumerate(reader, start=2):
            if number > limit:
                break
            if row and len(row) != len(header):
                return f"line {number} has {len(row)} field(s), the header has {len(header)}"
    return None


def _not_utf8(path: Path, head: bytes, at: int) -> str:
    line = head[:at].count(b"\n") + 1
    return f"{path.name} is not UTF-8 text (line {line}); save it as UTF-8 (e.g. 'Save as CSV UTF-8') and load it again"


def _renamed(header: list[str], columns: list[str]) -> list[str]:
    """Notes on the header's names DuckDB changed (blank or repeated names)."""
    out = []
    for position, (given, column) in enumerate(zip(header, columns, strict=False), start=1):
        if not given.strip():
            out.append(f"column {position} has no name in the file; it is called '{column}'")
        elif given != column:
            out.append(f"column {position} '{given}' is called '{column}' (the name was repeated)")
    return out


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
