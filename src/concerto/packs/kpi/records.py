"""KPI records and the CSV they are loaded from, validated before anything is written.

CSV columns (header required, any order, any case, each named once): kpi, department,
month, value, unit, notes; other columns are not read.
`month` is YYYY-MM or YYYY-MM-DD (the day is ignored); `notes` may be empty.

A file is read as a stream (`CSVFile.scan`): rows are checked one by one, keeping only
the per-name caches and the first errors, so reading a file of any size holds no more
than its distinct names (`KPIStore.load_csv` writes it in batches). The file is UTF-8
(with or without a byte-order mark) unless another encoding is named; bytes the encoding
cannot decode are reported by line and byte offset (`CSVEncodingError`), never as a
traceback.
"""

from __future__ import annotations

import codecs
import csv
import math
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

from concerto.packs.kpi.months import Month

COLUMNS = ("kpi", "department", "month", "value", "unit", "notes")
REQUIRED = ("kpi", "department", "month", "value", "unit")
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")
MAX_NOTES = 500
MAX_ERRORS = 20
# UTF-8, skipping a byte-order mark if there is one (spreadsheets often write it).
DEFAULT_ENCODING = "utf-8-sig"


# A validated row: (kpi, department, month, value, unit, notes). Cheaper than a KPIRecord
# (a frozen dataclass) when a load only passes the fields on.
Row = tuple[str, str, Month, float, str, str]


@dataclass(frozen=True, slots=True)
class KPIRecord:
    """One KPI value for one department and month."""

    kpi: str
    department: str
    month: Month
    value: float
    unit: str
    notes: str = ""

    def as_dict(self) -> dict[str, object]:
        """JSON form: month as its first day, as in the agreed query format."""
        return {
            "kpi": self.kpi,
            "department": self.department,
            "month": self.month.first_day.isoformat(),
            "value": self.value,
            "unit": self.unit,
            "notes": self.notes,
        }


class CSVError(ValueError):
    """A CSV that cannot be loaded; `errors` lists (line number, message), first ones only.

    `problem` names what `total` counts. Every check runs before anything is written, so
    a CSVError always means that nothing was loaded.
    """

    def __init__(self, path: str, errors: list[tuple[int, str]], total: int, problem: str = "invalid row(s)") -> None:
        super().__init__(path, errors, total)
        self.path = path
        self.errors = errors
        self.total = total
        self.problem = problem

    @property
    def headline(self) -> str:
        """'3 invalid row(s), nothing was loaded.': what `total` counts and the outcome."""
        return f"{self.total} {self.problem}, nothing was loaded."

    def __str__(self) -> str:
        lines = "; ".join(f"line {n}: {msg}" for n, msg in self.errors[:5])
        more = f" (and {self.total - 5} more)" if self.total > 5 else ""
        return f"{self.path}: {self.headline} {lines}{more}"


class CSVEncodingError(CSVError):
    """Bytes the file's encoding cannot decode; each error names the line, byte offset and bytes."""

    def __init__(self, path: str, errors: list[tuple[int, str]], total: int, encoding: str) -> None:
        super().__init__(path, errors, total, problem=f"line(s) not valid {display(encoding)}")
        self.args = (path, errors, total, encoding)
        self.encoding = encoding


def check_encoding(name: str) -> str:
    """The canonical name of a text encoding (`latin-1` → `iso8859-1`), or ValueError.

    Unknown names and codecs that are not text encodings (`base64`, `rot13`) are refused
    here, before any file is opened.
    """
    try:
        info = codecs.lookup(name)
        "kpi".encode(info.name)
    except LookupError:
        raise ValueError(f"unknown text encoding {name!r} (examples: utf-8, latin-1, cp1252, utf-16)") from None
    return info.name


def display(encoding: str) -> str:
    """How an encoding is named to a user: the default (UTF-8 with an optional BOM) as UTF-8."""
    return "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding


# -- locating undecodable bytes (only once a file failed to decode) ---------------------

_MARK = "\udfff"  # a lone surrogate: strict decoders never produce one, so it marks a hit
_found = threading.local()


def _mark(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: note where the undecodable bytes are, mark them, go on."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    _found.hits.append((exc.start, bytes(exc.object[exc.start : exc.end])))
    return _MARK, exc.end


codecs.register_error("concerto.kpi.mark", _mark)


# Byte-order marks of the encodings that are not ASCII-compatible (UTF-32 first: its
# little-endian mark begins with UTF-16's).
_BOMS = (
    ("UTF-32", codecs.BOM_UTF32_LE),
    ("UTF-32", codecs.BOM_UTF32_BE),
    ("UTF-16", codecs.BOM_UTF16_LE),
    ("UTF-16", codecs.BOM_UTF16_BE),
)


def _pending(decoder: codecs.IncrementalDecoder) -> int:
    """Bytes an incremental decoder holds from earlier input (a split multi-byte sequence)."""
    try:
        state = decoder.getstate()
    except (AttributeError, NotImplementedError):  # pragma: no cover - every stdlib decoder has it
        return 0
    return len(state[0]) if isinstance(state[0], bytes) else 0


def decode_errors(path: Path | str, encoding: str) -> CSVEncodingError:
    """Every line of the file `encoding` cannot decode: line, byte offset and bytes.

    One pass over the file in 64 KiB chunks with an incremental decoder whose error handler
    marks each undecodable sequence; lines are counted by their line feeds. The first
    MAX_ERRORS lines are described, all are counted.
    """
    name = codecs.lookup(encoding).name
    errors: list[tuple[int, str]] = []
    total = 0
    with open(path, "rb") as handle:
        head = handle.read(4)
        bom = next((n for n, mark in _BOMS if head.startswith(mark)), None)
        handle.seek(0)
        consumed = 0
        if name == "utf-8-sig":  # skip the mark here so offsets stay those of the file
            name = "utf-8"
            consumed = 3 if handle.read(3) == codecs.BOM_UTF8 else 0
            handle.seek(consumed)
        decoder = codecs.getincrementaldecoder(name)(errors="concerto.kpi.mark")
        line, last_bad = 1, 0
        final = False
        while not final:
            chunk = handle.read(1 << 16)
            final = not chunk
            base = consumed - _pending(decoder)
            _found.hits = []
            text = decoder.decode(chunk, final)
            at = 0
            for start, raw in _found.hits:
                mark = text.find(_MARK, at)
                if mark < 0:  # a codec that reported a position it did not mark
                    break
                line += text.count("\n", at, mark)
                at = mark + 1
                if line == last_bad:
                    continue
                last_bad = line
                total += 1
                if len(errors) < MAX_ERRORS:
                    offset = base + start
                    shown = " ".join(f"0x{b:02X}" for b in raw[:8])
                    message = f"byte(s) {shown} at byte offset {offset} are not valid {display(encoding)}"
                    if offset == 0 and bom and not name.startswith(bom.lower()):
                        message += f" (the file starts with a {bom} byte-order mark)"
                    errors.append((line, message))
            line += text.count("\n", at)
            consumed += len(chunk)
    _found.hits = []
    if not total:  # the text layer failed where this pass did not: name the file at least
        errors, total = [(1, f"the file could not be decoded as {display(encoding)}")], 1
    return CSVEncodingError(str(path), errors, total, encoding)


# -- validation ----------------------------------------------------------------------------


def parse_month(text: str) -> Month:
    """YYYY-MM or YYYY-MM-DD to a Month; raises ValueError naming the text."""
    m = _MONTH.match(text.strip())
    if m is None:
        raise ValueError(f"month {text!r} is not YYYY-MM or YYYY-MM-DD")
    year, month = int(m[1]), int(m[2])
    if not 1 <= month <= 12:
        raise ValueError(f"month {text!r}: month must be 01..12")
    parsed = Month(year, month)
    if m[3] is not None and not 1 <= int(m[3]) <= parsed.last_day.day:
        raise ValueError(f"month {text!r}: day must be 01..{parsed.last_day.day}")
    return parsed


class _Validator:
    """Checks rows one by one; names, months and units seen once are cached (1M rows/load).

    The caches grow with the distinct names and months of a file, never with its rows.
    """

    def __init__(self, known_units: dict[str, str] | None) -> None:
        self.units = dict(known_units or {})
        self.unit_line: dict[str, int] = {}
        self.kpis: set[str] = set()
        self.departments: set[str] = set()
        self.months: dict[str, Month] = {}

    @staticmethod
    def name(column: str, value: str, seen: set[str]) -> None:
        if not _NAME.match(value):
            raise ValueError(f"{column} {value!r} must be lower-case words joined by hyphens")
        seen.add(value)

    def month(self, text: str) -> Month:
        month = self.months.get(text)
        if month is None:
            month = self.months[text] = parse_month(text)
        return month

    def row(self, line: int, kpi: str, dept: str, month: str, value: str, unit: str, notes: str) -> Row:
        kpi, dept, unit, notes = kpi.strip(), dept.strip(), unit.strip(), notes.strip()
        if kpi not in self.kpis:
            self.name("kpi", kpi, self.kpis)
        if dept not in self.departments:
            self.name("department", dept, self.departments)
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"value {value!r} is not a number") from None
        if not math.isfinite(number):
            raise ValueError(f"value {value!r} is not a finite number")
        if not unit or len(unit) > 30:
            raise ValueError("unit must be 1 to 30 characters")
        if len(notes) > MAX_NOTES:
            raise ValueError(f"notes are {len(notes)} characters; the maximum is {MAX_NOTES}")
        parsed = self.month(month)
        known = self.units.setdefault(kpi, unit)
        self.unit_line.setdefault(kpi, line)
        if known != unit:
            raise ValueError(
                f"unit {unit!r} differs from {known!r} used for {kpi} (line {self.unit_line[kpi]} or the store)"
            )
        return kpi, dept, parsed, number, unit, notes


@dataclass
class CSVSummary:
    """What a pass over a valid file found: its record count and the names a load adds."""

    records: int
    units: dict[str, str] = field(default_factory=dict)  # KPI → unit, for the file's KPIs
    departments: set[str] = field(default_factory=set)


class CSVFile:
    """A CSV of KPI records, read as a stream: the file is never held in memory whole.

    `known_units` are the units the store already holds (a KPI keeps one unit). `encoding`
    is any Python text encoding; the default reads UTF-8 with or without a byte-order mark.
    """

    def __init__(
        self,
        path: Path | str,
        known_units: dict[str, str] | None = None,
        encoding: str = DEFAULT_ENCODING,
    ) -> None:
        self.path = path
        self.known_units = dict(known_units or {})
        self.encoding = check_encoding(encoding)
        self.summary: CSVSummary | None = None

    def validate(self) -> CSVSummary:
        """Check every row, keeping no records; CSVError lists the first bad rows by line."""
        for _ in self.rows():
            pass
        assert self.summary is not None
        return self.summary

    def scan(self) -> Iterator[KPIRecord]:
        """Every valid record in file order, then CSVError if any row was bad (see `rows`)."""
        for row in self.rows():
            yield KPIRecord(*row)

    def rows(self) -> Iterator[Row]:
        """Every valid row in file order as a `Row` tuple, then CSVError if any row was bad.

        A caller that keeps what it is given must therefore discard it on CSVError (all or
        nothing). Bad rows are collected (the first MAX_ERRORS described, all counted); a
        decoding failure anywhere is reported instead as every undecodable line
        (`CSVEncodingError`). Once the last row is read, `summary` is set.
        """
        path = str(self.path)
        check = _Validator(self.known_units)
        errors: list[tuple[int, str]] = []
        total = count = 0
        try:
            with open(self.path, newline="", encoding=self.encoding) as handle:
                # strict: a quote that is never closed, or text after a closing quote, is an
                # error rather than a field that silently swallows the rows after it
                reader = csv.reader(handle, strict=True)
                try:
                    header = [h.strip() for h in next(reader, [])]
                    if header:  # a byte-order mark left by an encoding that keeps it ("utf-8")
                        header[0] = header[0].lstrip("\ufeff").strip()
                except csv.Error as exc:
                    raise CSVError(
                        path, [(1, f"the header is not valid CSV: {_quote_problem(1, reader.line_num, exc)}")], 1
                    ) from None
                _check_header(path, header)
                named = [h.lower() for h in header]  # "Notes" is the notes column, not an extra one
                has_notes = "notes" in named
                fields = itemgetter(*(named.index(c) for c in REQUIRED), named.index("notes") if has_notes else 0)
                width = len(header)
                row_of = check.row
                ended = reader.line_num  # the last line of the previous row: a row starts after it
                while True:  # restarted after a row the csv module cannot parse
                    try:
                        for row in reader:
                            line, ended = ended + 1, reader.line_num
                            try:
                                if len(row) != width:
                                    if not row:
                                        continue  # a blank line
                                    raise ValueError(f"expected {width} fields, found {len(row)}")
                                if ended > line:
                                    _check_spanning(row, ended, width)
                                kpi, dept, month, value, unit, notes = fields(row)
                                valid = row_of(line, kpi, dept, month, value, unit, notes if has_notes else "")
                            except ValueError as exc:
                                total += 1
                                if len(errors) < MAX_ERRORS:
                                    errors.append((line, str(exc)))
                                continue
                            count += 1
                            yield valid
                        break
                    except csv.Error as exc:
                        total += 1
                        if len(errors) < MAX_ERRORS:
                            errors.append((ended + 1, _quote_problem(ended + 1, reader.line_num, exc)))
                        ended = reader.line_num
        except UnicodeDecodeError:
            raise decode_errors(self.path, self.encoding) from None
        if total:
            raise CSVError(path, errors, total)
        self.summary = CSVSummary(count, {k: check.units[k] for k in check.kpis}, check.departments)


def _check_header(path: str, header: list[str]) -> None:
    """The required columns (in any case), each named once: a repeated name would leave one
    of them unread."""
    missing = [c for c in REQUIRED if c not in {h.lower() for h in header}]
    if missing:
        message = f"missing column(s): {', '.join(missing)}; expected {', '.join(COLUMNS)}"
        if any("\x00" in h for h in header):
            message += " (the header holds NUL characters: is the file UTF-16? name its encoding)"
        raise CSVError(path, [(1, message)], 1)
    positions: dict[str, list[int]] = {}
    for number, name in enumerate(header, start=1):
        if name:
            positions.setdefault(name.lower(), []).append(number)
    repeated = [
        f"'{header[numbers[0] - 1]}' (columns {', '.join(map(str, numbers))})"
        for numbers in positions.values()
        if len(numbers) > 1
    ]
    if repeated:
        message = f"the header names {', '.join(repeated)} more than once; name each column once"
        raise CSVError(path, [(1, message)], len(repeated), problem="repeated column name(s)")


def _quote_problem(start: int, end: int, exc: csv.Error) -> str:
    """What the csv module's error means for a row from line `start` to line `end`."""
    if "unexpected end of data" in str(exc):
        return f"a quoted field opened on line {start} is never closed (the file ends inside it, at line {end})"
    if end > start:
        return f"a quoted field opened on line {start} does not end where it should (line {end}: {exc})"
    return f"not valid CSV: {exc}"


def _check_spanning(row: list[str], end: int, width: int) -> None:
    """A row over several lines is a quoted field with line breaks: fine for notes, but not when
    the lines inside it look like records (a missing closing quote that a later quote closed)."""
    swallowed = sum(
        1 for value in row if "\n" in value for text in value.splitlines()[1:] if text.count(",") >= width - 1
    )
    if swallowed:
        raise ValueError(
            f"a quoted field opened on this line runs to line {end} and holds {swallowed} line(s) that look "
            "like records: is a closing quote missing?"
        )


def read_csv(
    path: Path | str, known_units: dict[str, str] | None = None, encoding: str = DEFAULT_ENCODING
) -> list[KPIRecord]:
    """Every record of the file, or `CSVError` listing bad rows by line number.

    A KPI keeps one unit: across the file and against `known_units` (what the store holds).
    Holds the whole file's records: for loading a large file use `KPIStore.load_csv`,
    which streams it.
    """
    return list(CSVFile(path, known_units, encoding).scan())


def write_csv(path: Path | str, records: Iterable[KPIRecord]) -> int:
    """Write records in the loadable CSV form; returns how many."""
    count = 0
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for r in records:
            writer.writerow((r.kpi, r.department, str(r.month), repr(r.value), r.unit, r.notes))
            count += 1
    return count


def batched(items: Iterable[KPIRecord], size: int) -> Iterator[list[KPIRecord]]:
    """Lists of at most `size` items."""
    batch: list[KPIRecord] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
