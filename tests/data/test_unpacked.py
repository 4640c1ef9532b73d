"""What compressed files unpack to, checked before they are read: workbooks over the limit (by
what they declare, or by what they turn out to hold), too many parts, Parquet pages over the
file limit; a workbook within the limits still loads."""

from __future__ import annotations

import zipfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from concerto.data.load import LoadError, TooLarge, read_file
from concerto.data.unpacked import check_parquet, check_workbook

from .workbooks import understated, workbook

MB = 2**20


def load(path: Path, **limits: int) -> list[str]:
    return read_file(duckdb.connect(), "t", path, **({"max_bytes": 2**30} | limits))


def test_a_workbook_that_unpacks_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    bomb = workbook(tmp_path / "bomb.xlsx", rows=40_000)  # about 0.9 MB, unpacking to 11 MB
    assert bomb.stat().st_size < MB
    with pytest.raises(
        TooLarge, match=r"^bomb\.xlsx unpacks to 11 MB; the limit is 4 MB \(CONCERTO_DATA_MAX_UNPACKED_MB\)$"
    ):
        load(bomb, max_unpacked_bytes=4 * MB)
    assert load(bomb, max_unpacked_bytes=12 * MB) == []  # the same workbook, within a higher limit


def test_a_workbook_that_hides_its_size_is_refused_by_what_it_holds(tmp_path: Path) -> None:
    """Its directory says the sheet is 1 KB; fastexcel would read every byte of it anyway."""
    bomb = understated(workbook(tmp_path / "liar.xlsx", rows=40_000))
    with zipfile.ZipFile(bomb) as archive:
        assert sum(m.file_size for m in archive.infolist()) < 4 * 1024
    import fastexcel

    assert fastexcel.read_excel(str(bomb)).load_sheet(0).height == 40_000  # what the check protects from
    with pytest.raises(LoadError, match=r"liar\.xlsx could not be read as an Excel workbook: Bad CRC-32"):
        load(bomb, max_unpacked_bytes=4 * MB)


def test_a_zip_of_too_many_parts_is_refused_from_its_directory_record(tmp_path: Path) -> None:
    path = tmp_path / "parts.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(10_001):
            archive.writestr(f"p{i}", b"")
    with pytest.raises(TooLarge, match=r"parts\.xlsx has 10,001 parts; a workbook may have at most 10,000"):
        check_workbook(path, MB)


def test_an_xls_is_as_large_as_its_file(tmp_path: Path) -> None:
    path = tmp_path / "old.xls"
    path.write_bytes(b"\0" * (2 * MB))
    with pytest.raises(TooLarge, match=r"old\.xls unpacks to 2 MB; the limit is 1 MB"):
        load(path, max_unpacked_bytes=MB)


def test_parquet_pages_over_the_file_limit_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "pages.parquet"
    values = pa.table({"n": pa.array([7] * 400_000, pa.int64())})  # 3 MB of plain pages, 0.15 MB with zstd
    pq.write_table(values, path, compression="zstd", use_dictionary=False)
    assert path.stat().st_size < MB / 4  # the file is well within the limit
    with pytest.raises(
        TooLarge, match=r"pages\.parquet unpacks to 3 MB; the limit is 1 MB \(CONCERTO_DATA_MAX_FILE_MB\)"
    ):
        load(path, max_bytes=MB)
    assert check_parquet(path, 4 * MB) == 1
    assert load(path, max_bytes=4 * MB) == []


def test_a_workbook_within_the_limits_loads(tmp_path: Path) -> None:
    path = workbook(tmp_path / "fine.xlsx", rows=100, columns=3)
    con = duckdb.connect()
    read_file(con, "t", path, max_bytes=MB, max_unpacked_bytes=MB)
    assert con.execute('SELECT count(*), sum(col_a) FROM "t"').fetchall() == [(100, sum(r % 97 for r in range(2, 102)))]
