"""What compressed files unpack to, checked before they are read: workbooks over the limit (by
what they declare), parts that hold more than they declare (deflated or stored), zip
directories too large or of too many parts (whatever the end record says), Parquet pages over
the file limit and Parquet files of more values than a CSV could hold; a workbook within the
limits still loads."""

from __future__ import annotations

import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _helpers.workbooks import many_parts, overlapping, understated, workbook
from concerto.data.load import LoadError, TooLarge, read_file
from concerto.data.unpacked import check_parquet, check_workbook

MB = 2**20


def load(path: Path, **limits: int) -> list[str]:
    return read_file(duckdb.connect(), "t", path, **({"max_bytes": 2**30} | limits))


def traced_peak(check: Callable[[], object]) -> int:
    """The most memory Python allocated at once while `check()` ran (it is expected to raise)."""
    tracemalloc.start()
    try:
        with pytest.raises(LoadError):
            check()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_workbook_that_unpacks_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    bomb = workbook(tmp_path / "bomb.xlsx", rows=40_000)  # about 0.9 MB, unpacking to 11 MB
    assert bomb.stat().st_size < MB
    with pytest.raises(
        TooLarge, match=r"^bomb\.xlsx unpacks to 11 MB; the limit is 4 MB \(CONCERTO_DATA_MAX_UNPACKED_MB\)$"
    ):
        load(bomb, max_unpacked_bytes=4 * MB)
    assert load(bomb, max_unpacked_bytes=12 * MB) == []  # the same workbook, within a higher limit


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED], ids=["deflated", "stored"])
def test_a_workbook_that_hides_its_size_is_refused_by_what_it_holds(tmp_path: Path, compression: int) -> None:
    """Its directory says the sheet is 1 KB, with the CRC-32 of the sheet's first KB: Python's
    zipfile reads 1 KB and finds the CRC right; fastexcel reads every row anyway."""
    bomb = understated(workbook(tmp_path / "liar.xlsx", rows=40_000, compression=compression))
    with zipfile.ZipFile(bomb) as archive:
        assert sum(m.file_size for m in archive.infolist()) < 4 * 1024
        assert all(len(archive.read(m)) == m.file_size for m in archive.infolist())  # no "Bad CRC-32"
    import fastexcel

    assert fastexcel.read_excel(str(bomb)).load_sheet(0).height == 40_000  # what the check protects from
    with pytest.raises(
        LoadError,
        match=r"^liar\.xlsx could not be read as an Excel workbook: its part xl/worksheets/sheet1\.xml holds more "
        r"than the 1,000 bytes it declares$",
    ):
        load(bomb, max_unpacked_bytes=4 * MB)


def test_a_part_is_inflated_no_further_than_its_declared_size(tmp_path: Path) -> None:
    bomb = understated(workbook(tmp_path / "liar.xlsx", rows=40_000))  # 11 MB of sheet, declared 1 KB
    peak = traced_peak(lambda: check_workbook(bomb, 64 * MB))
    assert peak < 4 * MB, f"{peak / MB:.1f} MB"  # a chunk or two, not the sheet


@pytest.mark.parametrize("zip64", [False, True], ids=["end record", "ZIP64 end record"])
def test_a_zip_directory_of_200_000_parts_is_refused_unread_whatever_its_count_says(
    tmp_path: Path, zip64: bool
) -> None:
    """The end record says 1 part; zipfile would read the 10 MB directory and make 200,000
    objects (about 100 MB) before anyone could count them."""
    path = many_parts(tmp_path / "parts.xlsx", 200_000, declared=1, zip64=zip64)
    with pytest.raises(
        TooLarge,
        match=r"^parts\.xlsx has a zip directory of 10\.0 MB; a workbook's is kilobytes "
        r"\(at most 1 MB, for 10,000 parts\)$",
    ):
        check_workbook(path, MB)
    peak = traced_peak(lambda: check_workbook(path, MB))
    assert peak < MB, f"{peak / MB:.1f} MB"


def test_a_zip_of_too_many_parts_is_refused_whatever_its_count_says(tmp_path: Path) -> None:
    path = many_parts(tmp_path / "parts.xlsx", 10_001, declared=1)  # within the directory's 1 MB
    with pytest.raises(TooLarge, match=r"^parts\.xlsx has 10,001 parts; a workbook may have at most 10,000$"):
        check_workbook(path, MB)
    fewer = many_parts(tmp_path / "fewer.xlsx", 10_000, declared=1)
    with zipfile.ZipFile(fewer) as archive:
        assert len(archive.infolist()) == 10_000
    check_workbook(fewer, MB)


def test_parts_sharing_their_bytes_are_refused(tmp_path: Path) -> None:
    path = overlapping(workbook(tmp_path / "shared.xlsx", rows=2000), times=3)
    with zipfile.ZipFile(path) as archive:
        assert len(archive.infolist()) == 15  # five parts, each listed three times over its one copy
    with pytest.raises(LoadError, match=r"^shared\.xlsx could not be read as an Excel workbook: its parts overlap$"):
        check_workbook(path, 64 * MB)


def test_a_part_compressed_otherwise_than_deflate_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bz.xlsx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_BZIP2) as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(LoadError, match=r"its part xl/workbook\.xml is compressed with method 12; save it again"):
        check_workbook(path, MB)


def test_a_file_that_is_not_a_zip_is_a_load_error(tmp_path: Path) -> None:
    path = tmp_path / "text.xlsx"
    path.write_text("region,amount\n")
    with pytest.raises(LoadError, match=r"^text\.xlsx could not be read as an Excel workbook: File is not a zip file$"):
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


def test_a_parquet_file_of_more_values_than_a_csv_could_hold_is_refused(tmp_path: Path) -> None:
    """Ten million nulls, run-length encoded, take a few KB and declare pages of a few KB;
    DuckDB would write every row."""
    path = tmp_path / "rows.parquet"
    nulls = pa.table({"n": pa.nulls(1_000_000, pa.int32())})
    with pq.ParquetWriter(path, nulls.schema) as writer:
        for _ in range(10):
            writer.write_table(nulls)
    assert path.stat().st_size < 64 * 1024
    with pytest.raises(
        TooLarge,
        match=r"^rows\.parquet holds 10,000,000 rows of 1 column\(s\); a file may hold at most 1,048,576 values, "
        r"as many as a CSV file of the largest size accepted \(CONCERTO_DATA_MAX_FILE_MB\)$",
    ):
        load(path, max_bytes=MB)
    assert check_parquet(path, 10_000_000) == 1  # within a larger limit


def test_a_workbook_within_the_limits_loads(tmp_path: Path) -> None:
    path = workbook(tmp_path / "fine.xlsx", rows=100, columns=3)
    con = duckdb.connect()
    read_file(con, "t", path, max_bytes=MB, max_unpacked_bytes=MB)
    assert con.execute('SELECT count(*), sum(col_a) FROM "t"').fetchall() == [(100, sum(r % 97 for r in range(2, 102)))]
