"""`concerto kpi load` never crashes and stays bounded: encodings, all-or-nothing, memory.

Real embedded ChromaDB in temporary directories; the CLI through click's runner.
"""

from __future__ import annotations

import gc
import random
import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from concerto.packs.kpi import store as store_module
from concerto.packs.kpi.cli import kpi
from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import CSVEncodingError, CSVError, CSVFile, read_csv
from concerto.packs.kpi.store import KPIStore
from concerto.resources import Resources
from concerto.settings import Settings

HEADER = "kpi,department,month,value,unit,notes\n"
ROWS = (
    "revenue,branch-x,2025-05,10.5,kUSD,ok\n"
    'revenue,branch-x,2025-06,11,kUSD,"{note}"\n'
    "revenue,branch-x,2025-07,12,kUSD,fine\n"
)


@pytest.fixture()
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "data"
    monkeypatch.setenv("CONCERTO_DATA_DIR", str(path))
    return path


def load(*args: str) -> Result:
    return CliRunner().invoke(kpi, ["load", *args])


def held(data_dir: Path, kpi_resources: Resources) -> list[tuple[Month, float, str]]:
    """What the store in `data_dir` holds for revenue at branch-x in 2025."""
    store = KPIStore(Settings(data_dir=data_dir), kpi_resources.embedder)
    got = store.query("revenue", "branch-x", Month(2025, 1), Month(2025, 12))
    return [(r.month, r.value, r.notes) for r in got]


def assert_clean_failure(result: Result) -> None:
    """A non-zero exit with a message, never a Python traceback."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("encoding", "note"),
    [("latin-1", "Café crème, été"), ("cp1252", "Café — “quoted” €5")],
)
def test_a_file_in_another_encoding_names_the_line_then_loads_when_declared(
    tmp_path: Path, data_dir: Path, kpi_resources: Resources, encoding: str, note: str
) -> None:
    path = tmp_path / f"{encoding}.csv"
    body = (HEADER + ROWS.format(note=note)).encode(encoding)
    path.write_bytes(body)

    result = load(str(path))
    assert_clean_failure(result)
    offset = body.index("é".encode(encoding))
    assert f"{path}:3: byte(s) 0xE9 at byte offset {offset} are not valid UTF-8" in result.output
    assert "nothing was loaded" in result.output and "--encoding" in result.output
    assert held(data_dir, kpi_resources) == []

    result = load(str(path), "--encoding", encoding)
    assert result.exit_code == 0, result.output
    assert "Loaded 3 records" in result.output
    assert held(data_dir, kpi_resources)[1] == (Month(2025, 6), 11.0, note)


def test_utf16_with_a_bom(tmp_path: Path, data_dir: Path, kpi_resources: Resources) -> None:
    path = tmp_path / "u16.csv"
    path.write_bytes((HEADER + ROWS.format(note="Zürich, 東京")).encode("utf-16"))

    result = load(str(path))
    assert_clean_failure(result)
    assert f"{path}:1: byte(s) 0xFF at byte offset 0" in result.output
    assert "UTF-16 byte-order mark" in result.output

    result = load(str(path), "--encoding", "utf-16")
    assert result.exit_code == 0, result.output
    assert held(data_dir, kpi_resources)[1][2] == "Zürich, 東京"


def test_utf8_with_or_without_a_bom_is_the_default(tmp_path: Path) -> None:
    body = (HEADER + ROWS.format(note="naïve")).encode("utf-8")
    for name, data in (("plain.csv", body), ("bom.csv", b"\xef\xbb\xbf" + body)):
        (tmp_path / name).write_bytes(data)
        assert [r.notes for r in read_csv(tmp_path / name)] == ["ok", "naïve", "fine"]
    # Declared as plain "utf-8", the mark would be the header's first character: dropped.
    assert len(read_csv(tmp_path / "bom.csv", encoding="utf-8")) == 3


@pytest.mark.parametrize("name", ["klingon", "base64"])
def test_an_unknown_encoding_is_a_usage_error(tmp_path: Path, data_dir: Path, name: str) -> None:
    path = tmp_path / "k.csv"
    path.write_text(HEADER + ROWS.format(note="x"), encoding="utf-8")
    result = load(str(path), "--encoding", name)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert f"unknown text encoding {name!r}" in result.output
    assert not data_dir.exists() or not any(data_dir.iterdir())  # the store was never opened
    with pytest.raises(ValueError, match="unknown text encoding"):
        CSVFile(path, encoding=name)


def test_an_undecodable_byte_in_the_middle_of_a_good_file(tmp_path: Path, data_dir: Path) -> None:
    lines = [HEADER] + [f"revenue,branch-{i % 7},2025-{1 + i % 12:02d},{i},kUSD,note {i}\n" for i in range(200)]
    body = "".join(lines).encode("utf-8")
    at = body.index(b"note 123\n") + 4  # line 125: header + row 123 (0-based) + 1
    path = tmp_path / "mid.csv"
    path.write_bytes(body[:at] + b"\xff" + body[at:])

    result = load(str(path))
    assert_clean_failure(result)
    assert f"{path}:125: byte(s) 0xFF at byte offset {at} are not valid UTF-8" in result.output
    assert "1 line(s) not valid UTF-8, nothing was loaded." in result.output
    with pytest.raises(CSVEncodingError) as info:
        CSVFile(path).validate()
    assert info.value.errors == [(125, f"byte(s) 0xFF at byte offset {at} are not valid UTF-8")]


def test_undecodable_lines_are_all_counted_across_chunks(tmp_path: Path) -> None:
    """Offsets stay exact when multi-byte characters and bad bytes straddle read chunks."""
    rng = random.Random(5)
    out = bytearray(HEADER.encode())
    bad: list[tuple[int, int]] = []  # (line, offset)
    for i in range(6000):
        out += f"revenue,branch-x,2025-01,1,kUSD,{'x' * rng.randrange(50)}".encode()
        out += "€日é".encode() * rng.randrange(4)
        if rng.random() < 0.2:
            bad.append((i + 2, len(out)))
            out += b"\xc3"  # a truncated two-byte sequence
        out += b"\n"
    path = tmp_path / "many.csv"
    path.write_bytes(bytes(out))
    with pytest.raises(CSVEncodingError) as info:
        CSVFile(path).validate()
    assert info.value.total == len(bad) and len(info.value.errors) == 20
    got = [(line, int(re.search(r"offset (\d+)", msg)[1])) for line, msg in info.value.errors]  # type: ignore[index]
    assert got == bad[:20]


def test_a_csv_syntax_error_is_a_row_error(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    path.write_text(HEADER + ROWS.format(note="x" * 200_000), encoding="utf-8")
    with pytest.raises(CSVError) as info:
        read_csv(path)
    assert info.value.errors[0][0] == 3 and "not valid CSV" in info.value.errors[0][1]


UNCLOSED = (
    HEADER
    + 'revenue,branch-x,2025-05,10.5,kUSD,"the quote opened here\n'
    + "revenue,branch-x,2025-06,11,kUSD,swallowed\n"
    + "revenue,branch-x,2025-07,12,kUSD,swallowed too\n"
)
# A later quote "closes" it: followed by text, or at the end of a line (then the rows inside
# would be one valid record's notes).
CLOSED_LATER = HEADER + 'revenue,branch-x,2025-05,10.5,kUSD,"opened\nrevenue,branch-x,2025-06,11,kUSD,"quoted"\n'
CLOSED_AT_LINE_END = HEADER + 'revenue,branch-x,2025-05,10.5,kUSD,"opened\nrevenue,branch-x,2025-06,11,kUSD,"\n'


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (UNCLOSED, "a quoted field opened on line 2 is never closed (the file ends inside it, at line 4)"),
        (CLOSED_LATER, "a quoted field opened on line 2 does not end where it should (line 3"),
        (CLOSED_AT_LINE_END, "runs to line 3 and holds 1 line(s) that look like records: is a closing quote missing?"),
    ],
)
def test_an_unclosed_quote_is_refused_naming_its_line(
    tmp_path: Path, data_dir: Path, kpi_resources: Resources, body: str, problem: str
) -> None:
    path = tmp_path / "quote.csv"
    path.write_text(body, encoding="utf-8")
    result = load(str(path))
    assert_clean_failure(result)
    assert f"{path}:2: " in result.output and problem in result.output, result.output
    assert "nothing was loaded" in result.output and "Loaded" not in result.output
    assert held(data_dir, kpi_resources) == []


def test_notes_over_several_lines_in_quotes_still_load(tmp_path: Path) -> None:
    path = tmp_path / "multi.csv"
    path.write_text(HEADER + 'revenue,branch-x,2025-05,10.5,kUSD,"first line\nsecond line"\n' + ROWS.format(note="x"))
    records = read_csv(path)
    assert len(records) == 4 and records[0].notes == "first line\nsecond line"


@pytest.mark.parametrize(
    ("header", "named"),
    [
        ("kpi,department,month,value,unit,notes,value", "'value' (columns 4, 7)"),
        ("kpi,department,month,value,unit,Notes,notes", "'Notes' (columns 6, 7)"),
        ("kpi,kpi,department,month,value,unit,notes", "'kpi' (columns 1, 2)"),
    ],
)
def test_a_column_named_twice_is_refused_naming_it(
    tmp_path: Path, data_dir: Path, kpi_resources: Resources, header: str, named: str
) -> None:
    path = tmp_path / "twice.csv"
    width = header.count(",") + 1
    row = ["revenue", "branch-x", "2025-05", "10.5", "kUSD", "ok", "99"][:width]
    if header.startswith("kpi,kpi"):
        row = ["revenue", "headcount", "branch-x", "2025-05", "10.5", "kUSD", "ok"]
    path.write_text(f"{header}\n{','.join(row)}\n", encoding="utf-8")
    result = load(str(path))
    assert_clean_failure(result)
    assert f"{path}:1: the header names {named} more than once" in result.output, result.output
    assert "1 repeated column name(s), nothing was loaded." in result.output
    assert held(data_dir, kpi_resources) == []


def test_column_names_are_read_in_any_case(tmp_path: Path) -> None:
    path = tmp_path / "case.csv"
    path.write_text("KPI,Department,Month,Value,Unit,Notes\nrevenue,branch-x,2025-05,10.5,kUSD,kept\n")
    (record,) = read_csv(path)
    assert record.notes == "kept" and record.value == 10.5


def series_csv(path: Path, count: int, *, shuffle: bool = False, bad_line: int | None = None) -> list[str]:
    """`count` records of 2 KPIs x 5 departments, month after month from 1900; the rows."""
    rows = []
    for i in range(count):
        month = Month(1900, 1).shift(i // 10)
        kpi, unit = ("revenue", "kUSD") if i % 2 else ("headcount", "people")
        rows.append(f"{kpi},dept-{i // 2 % 5},{month},{i},{unit},record {i:06d} {'x' * 200}\n")
    if shuffle:
        random.Random(3).shuffle(rows)
    if bad_line is not None:
        rows[bad_line - 2] = "revenue,dept-0,1900-01,lots,kUSD,not a number\n"
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return rows


def test_all_or_nothing_with_a_bad_row_after_several_batches(tmp_path: Path, fresh_store: KPIStore) -> None:
    path = tmp_path / "late-bad.csv"
    series_csv(path, 600, bad_line=550)
    with pytest.raises(CSVError) as info:
        fresh_store.load_csv(path, batch_size=50)  # the bad row comes after 10 batches' worth
    assert info.value.errors[0][0] == 550 and "nothing was loaded" in str(info.value)
    assert fresh_store.count_entries() == 0
    assert fresh_store.catalog().keys == []  # no name was registered either
    assert not list(Path(fresh_store.settings.data_dir).glob("kpi-load-*"))  # spill removed


def test_an_unsorted_file_in_many_batches_loads_every_month_once(tmp_path: Path, fresh_store: KPIStore) -> None:
    path = tmp_path / "shuffled.csv"
    rows = series_csv(path, 1200, shuffle=True)
    # The same record again near the end with a new value: the last one wins, as before.
    with path.open("a", encoding="utf-8") as handle:
        handle.write("revenue,dept-0,1900-01,-1,kUSD,again\n")
    assert fresh_store.load_csv(path, batch_size=37) == len(rows) + 1
    assert fresh_store.count_entries() == 10 * 10  # 10 series x 10 years
    got = fresh_store.query("revenue", "dept-0", Month(1900, 1), Month(1909, 12))
    assert len(got) == 120 and got[0].value == -1 and got[0].notes == "again"
    assert [r.month for r in got] == [Month(1900, 1).shift(i) for i in range(120)]
    # A second load of part of the file merges with the stored blocks.
    part = tmp_path / "part.csv"
    part.write_text(HEADER + "revenue,dept-0,1900-02,7,kUSD,fixed\n", encoding="utf-8")
    assert fresh_store.load_csv(part) == 1
    got = fresh_store.query("revenue", "dept-0", Month(1900, 1), Month(1900, 3))
    assert [(r.value, r.notes[:6]) for r in got] == [(-1, "again"), (7, "fixed"), (got[2].value, "record")]


def traced_peak(action: Callable[[], object]) -> int:
    """Peak traced Python memory (bytes) while `action` runs, above what was held before."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        action()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_memory_is_bounded_by_a_batch_not_the_file(
    tmp_path: Path, kpi_resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading 4x the records peaks at about the same memory; holding them would not.

    A load's memory is one batch plus one write buffer per spill file; at the production
    batch size a file needs hundreds of thousands of records to reach the cap on spill
    files, so the cap is lowered here to measure a file well past it.
    """
    monkeypatch.setattr(store_module, "MAX_SPILL_FILES", 4)
    small, large = tmp_path / "n.csv", tmp_path / "4n.csv"
    # In series order: a shuffled file is as bounded, but each batch then merges up to
    # `batch_size` stored blocks of up to 12 months, a constant that blurs the comparison.
    series_csv(small, 2000)
    series_csv(large, 8000)

    def store(name: str) -> KPIStore:
        return KPIStore(Settings(data_dir=tmp_path / name), kpi_resources.embedder)

    warm = store("warm")  # first-use costs (imports, ChromaDB's system) outside the measure
    warm.load_csv(small, batch_size=250)
    peak_n = traced_peak(lambda: store("n").load_csv(small, batch_size=250))
    peak_4n = traced_peak(lambda: store("4n").load_csv(large, batch_size=250))
    # What holding the records costs: the growth the bound must not show (~0.35 KB a record).
    held_n = traced_peak(lambda: read_csv(small))
    held_4n = traced_peak(lambda: read_csv(large))
    assert held_4n - held_n > 1_500_000, (held_n, held_4n)
    assert peak_4n - peak_n < (held_4n - held_n) / 3, (peak_n, peak_4n, held_n, held_4n)
