"""What a compressed file unpacks to, checked before a reader opens it.

An Excel workbook (.xlsx, .xlsm, .ods) is a zip of XML parts, and fastexcel reads the sheet
into memory whole (about 2.5 × its XML): 1.9 MB of workbook can unpack to 483 MB. So the
zip's directory (how many parts), then each part's declared size, then each part itself,
inflated as a stream and counted, are checked against the limit before fastexcel sees the
file: a part that inflates to more than it declares is caught here, not in the reader. An
.xls is not compressed: its size is what it unpacks to.

A Parquet file's footer declares the uncompressed size of its pages; DuckDB reads the pages
one at a time under the load's memory limit (and refuses a page that inflates to more than
its header says), so the footer's total is what is checked, against the file limit: a
Parquet file may hold as much data as the largest file accepted, not more.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

from concerto.data.errors import LoadError, TooLarge

_ZIPPED = (".xlsx", ".xlsm", ".ods")
_MOST_PARTS = 10_000  # a workbook has tens; a zip of millions makes its directory the bomb
_END = b"PK\x05\x06"  # the zip's end-of-directory record
_END_SIZE = 22
_CHUNK = 1 << 20
_MOST_FOOTER = 16 << 20  # a Parquet footer (its schema and row groups) is kilobytes


def check_workbook(path: Path, limit: int) -> None:
    """Refuse a workbook that unpacks to more than `limit` bytes (`TooLarge`) or is not a
    well-formed zip (`LoadError`), reading at most `limit` bytes of its inflated parts."""
    if path.suffix.lower() not in _ZIPPED:
        size = path.stat().st_size
        if size > limit:
            raise TooLarge(_over(path, size, limit))
        return
    parts = _directory_entries(path)
    if parts > _MOST_PARTS:
        raise TooLarge(f"{path.name} has {parts:,} parts; a workbook may have at most {_MOST_PARTS:,}")
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            declared = sum(m.file_size for m in members)
            if declared > limit:
                raise TooLarge(_over(path, declared, limit))
            inflated = 0
            for member in members:
                with archive.open(member) as part:
                    while chunk := part.read(_CHUNK):
                        inflated += len(chunk)
                        if inflated > limit:
                            raise TooLarge(_over(path, limit, limit, at_least=True))
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise LoadError(f"{path.name} could not be read as an Excel workbook: {exc}") from None


def check_parquet(path: Path, limit: int) -> int:
    """Refuse a Parquet file whose pages unpack to more than `limit` bytes; return its number
    of columns (the load's memory limit depends on it)."""
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
        meta = pq.ParquetFile(path).metadata
    except (pa.ArrowException, OSError):
        return 0  # not Parquet: DuckDB's reader says what is wrong with it
    declared = sum(
        meta.row_group(g).column(c).total_uncompressed_size
        for g in range(meta.num_row_groups)
        for c in range(meta.num_columns)
    )
    if declared > limit:
        raise TooLarge(_over(path, declared, limit, setting="CONCERTO_DATA_MAX_FILE_MB"))
    return int(meta.num_columns)


def _directory_entries(path: Path) -> int:
    """How many parts the zip's end-of-directory record declares (read from the file's tail,
    before `zipfile` builds an object per part); 0 when there is no such record."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - _END_SIZE - 0xFFFF))  # the record, then a comment of up to 64 KB
        tail = handle.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < _END_SIZE:
        return 0
    entries: int = struct.unpack("<H", tail[at + 10 : at + 12])[0]
    return _MOST_PARTS + 1 if entries == 0xFFFF else entries  # 0xFFFF: more, in a ZIP64 record


def _over(path: Path, size: int, limit: int, *, at_least: bool = False, setting: str = "") -> str:
    amount = f"{'more than ' if at_least else ''}{size / 2**20:,.0f} MB"
    return (
        f"{path.name} unpacks to {amount}; the limit is {limit / 2**20:,.0f} MB "
        f"({setting or 'CONCERTO_DATA_MAX_UNPACKED_MB'})"
    )
