"""What a compressed file unpacks to, checked before a reader opens it.

An Excel workbook (.xlsx, .xlsm, .ods) is a zip of XML parts, and fastexcel reads the sheet
into memory whole (about 2.5 × its XML): 1.9 MB of workbook can unpack to 483 MB. Before
fastexcel sees the file, in this order:

1. The zip's central directory. Python's zipfile reads all of it when it opens the file (as
   many bytes as the end record, or the ZIP64 one, says it takes; it ignores the count of
   parts there) and makes an object per part: 200,000 parts are 10 MB of directory and about
   100 MB of objects. So opening may read at most 1 MB (`_Budgeted`), then there may be at
   most 10,000 parts, counted from what was read, whatever the end record says.
2. The parts' declared sizes, added up, against the limit.
3. Each part's own bytes, its compressed size from after its local header, inflated here
   with zlib in chunks of at most 1 MB and counted: a part that holds more than its declared
   size is refused, having cost at most that size and a chunk. This is not zipfile's reading:
   zipfile stops a part at its declared size and checks the CRC of what it read, so a part
   declared at 1 KB with the CRC of its first KB passed, while fastexcel's reader goes on to
   the end of the compressed bytes and read all 40,000 rows (tested). A stored part holds its
   compressed size. Only stored and deflated parts are read (what Excel and LibreOffice
   write), and the parts' compressed sizes may add up to no more than the file (parts that
   share their bytes are not a workbook), so inflating reads the file at most once.

Over a limit is `TooLarge` (413 over HTTP); a part that holds more than it declares, or a zip
that cannot be read, is `LoadError` (422). An .xls is not compressed: its size is what it
unpacks to.

A Parquet file's footer declares how many rows it has and the uncompressed size of its pages;
DuckDB reads the pages one at a time under the load's memory limit (and refuses a page that
inflates to more than its header says). A Parquet file may hold as much as the largest file
accepted (`CONCERTO_DATA_MAX_FILE_MB`), not more: its pages may unpack to that many bytes, and
it may hold that many values (rows × columns), as many as the largest CSV could (a value takes
at least its separator, one byte). 2.3 MB of run-length-encoded nulls held 1.2 billion rows,
and DuckDB writes every one. Both are read from the row groups (each declares its rows and its
columns' uncompressed total): O(row groups) in Python, not row groups × columns.
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO

from concerto.data.errors import LoadError, TooLarge

_ZIPPED = (".xlsx", ".xlsm", ".ods")
_MOST_PARTS = 10_000  # a workbook has tens; a zip of millions makes its directory the bomb
_MOST_DIRECTORY = 1 << 20  # a part's directory record is 46 bytes and its name: 10,000 parts of names to 58 characters
_END = 22 + 0xFFFF + 20 + 56  # what zipfile reads to find the directory: the end record, its comment, ZIP64's
_LOCAL = 30  # a part's local header, before its name and extra field
_READ = 1 << 16  # compressed bytes read at a time
_CHUNK = 1 << 20  # inflated bytes made at a time
_READABLE = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_MOST_FOOTER = 16 << 20  # a Parquet footer (its schema and row groups) is kilobytes


def check_workbook(path: Path, limit: int) -> None:
    """Refuse a workbook that unpacks to more than `limit` bytes (`TooLarge`) or whose parts
    hold more than they declare or that is not a well-formed zip (`LoadError`), inflating at
    most `limit` bytes of its parts and a chunk."""
    if path.suffix.lower() not in _ZIPPED:
        size = path.stat().st_size
        if size > limit:
            raise TooLarge(_over(path, size, limit))
        return
    members = _directory(path)
    if len(members) > _MOST_PARTS:
        raise TooLarge(f"{path.name} has {len(members):,} parts; a workbook may have at most {_MOST_PARTS:,}")
    declared = sum(m.file_size for m in members)
    if declared > limit:
        raise TooLarge(_over(path, declared, limit))
    unreadable = next((m for m in members if m.compress_type not in _READABLE or m.flag_bits & 0x1), None)
    if unreadable is not None:
        how = "encrypted" if unreadable.flag_bits & 0x1 else f"compressed with method {unreadable.compress_type}"
        raise LoadError(
            _unreadable(path, f"its part {unreadable.filename} is {how}; save it again from Excel or LibreOffice")
        )
    if sum(m.compress_size for m in members) > path.stat().st_size:
        raise LoadError(_unreadable(path, "its parts overlap"))
    with path.open("rb") as handle:
        for member in members:
            held = _held(handle, member, path)
            if held > member.file_size:
                raise LoadError(
                    _unreadable(
                        path, f"its part {member.filename} holds more than the {member.file_size:,} bytes it declares"
                    )
                )


def check_parquet(path: Path, limit: int) -> int:
    """Refuse a Parquet file whose pages unpack to more than `limit` bytes or that holds more
    than `limit` values (rows × columns); return its number of columns (the load's memory
    limit depends on it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        if size >= 12:
            handle.seek(size - 8)
            footer, magic = struct.unpack("<I4s", handle.read(8))
            if magic == b"PAR1" and footer > _MOST_FOOTER:
                raise TooLarge(
                    f"{path.name} has a footer of {footer / 2**20:,.0f} MB; the most is {_MOST_FOOTER >> 20} MB"
                )
    try:
        with pq.ParquetFile(path) as parquet:
            meta = parquet.metadata
            columns = int(meta.num_columns)
            groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
            rows = max(int(meta.num_rows), sum(int(g.num_rows) for g in groups))  # DuckDB reads each group's count
            declared = sum(int(g.total_byte_size) for g in groups)  # its columns' uncompressed pages, added up
    except (pa.ArrowException, OSError):
        return 0  # not Parquet: DuckDB's reader says what is wrong with it
    if rows * max(1, columns) > limit:
        raise TooLarge(
            f"{path.name} holds {rows:,} rows of {columns:,} column(s); a file may hold at most {limit:,} values, "
            "as many as a CSV file of the largest size accepted (CONCERTO_DATA_MAX_FILE_MB)"
        )
    if declared > limit:
        raise TooLarge(_over(path, declared, limit, setting="CONCERTO_DATA_MAX_FILE_MB"))
    return columns


class _Budgeted(io.FileIO):
    """The file, read by zipfile as it opens it, refusing to read more than `budget` bytes in
    all: the end record, then the central directory as large as that record says."""

    def __init__(self, path: Path, budget: int) -> None:
        super().__init__(path, "rb")
        self.path, self.budget = path, budget

    def read(self, size: int | None = -1, /) -> bytes:
        wanted = size if size is not None and size >= 0 else os.fstat(self.fileno()).st_size - self.tell()
        if wanted > self.budget:
            raise TooLarge(
                f"{self.path.name} has a zip directory of {wanted / 2**20:,.1f} MB; a workbook's is kilobytes "
                f"(at most {_MOST_DIRECTORY >> 20} MB, for {_MOST_PARTS:,} parts)"
            )
        data = super().read(size)
        self.budget -= len(data)
        return data


def _directory(path: Path) -> list[zipfile.ZipInfo]:
    """The zip's parts, as zipfile lists them, having read at most the end records and 1 MB."""
    try:
        with _Budgeted(path, _END + _MOST_DIRECTORY) as handle, zipfile.ZipFile(handle) as archive:
            return archive.infolist()
    except LoadError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, struct.error) as exc:
        raise LoadError(_unreadable(path, str(exc))) from None


def _held(handle: BinaryIO, member: zipfile.ZipInfo, path: Path) -> int:
    """How many bytes `member` unpacks to, counted up to its declared size and one chunk
    more: its compressed bytes (after its local header, as many as the directory says)
    inflated with zlib, or themselves when stored."""
    handle.seek(member.header_offset)
    local = handle.read(_LOCAL)
    if len(local) < _LOCAL or local[:4] != b"PK\x03\x04":
        raise LoadError(_unreadable(path, f"its part {member.filename} has no local header"))
    name_length, extra_length = struct.unpack_from("<HH", local, 26)
    handle.seek(member.header_offset + _LOCAL + name_length + extra_length)
    if member.compress_type == zipfile.ZIP_STORED:
        return int(member.compress_size)
    inflater = zlib.decompressobj(-15)  # a raw deflate stream, as a zip holds it
    left, held, pending = member.compress_size, 0, b""
    while not inflater.eof and held <= member.file_size:
        if not pending:
            pending = handle.read(min(_READ, left))
            left -= len(pending)
            if not pending:
                break
        try:
            held += len(inflater.decompress(pending, _CHUNK))
        except zlib.error as exc:
            raise LoadError(_unreadable(path, f"its part {member.filename} is not deflated data ({exc})")) from None
        pending = inflater.unconsumed_tail
    return held + len(inflater.flush()) if held <= member.file_size else held


def _unreadable(path: Path, why: str) -> str:
    return f"{path.name} could not be read as an Excel workbook: {why}"


def _over(path: Path, size: int, limit: int, *, setting: str = "") -> str:
    return (
        f"{path.name} unpacks to {size / 2**20:,.0f} MB; the limit is {limit / 2**20:,.0f} MB "
        f"({setting or 'CONCERTO_DATA_MAX_UNPACKED_MB'})"
    )
