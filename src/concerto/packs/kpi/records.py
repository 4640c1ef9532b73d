"""KPI records and the CSV they are loaded from, validated before anything is written.

CSV columns (header required, any order): kpi, department, month, value, unit, notes.
`month` is YYYY-MM or YYYY-MM-DD (the day is ignored); `notes` may be empty.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from concerto.packs.kpi.months import Month

COLUMNS = ("kpi", "department", "month", "value", "unit", "notes")
REQUIRED = ("kpi", "department", "month", "value", "unit")
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")
MAX_NOTES = 500
MAX_ERRORS = 20


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
    """A CSV that cannot be loaded; `errors` lists (line number, message), first ones only."""

    def __init__(self, path: str, errors: list[tuple[int, str]], total: int) -> None:
        self.path = path
        self.errors = errors
        self.total = total
        lines = "; ".join(f"line {n}: {msg}" for n, msg in errors[:5])
        more = f" (and {total - 5} more)" if total > 5 else ""
        super().__init__(f"{path}: {total} invalid row(s), nothing was loaded. {lines}{more}")


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
    """Checks rows one by one; names, months and units seen once are cached (1M rows/load)."""

    def __init__(self, known_units: dict[str, str] | None) -> None:
        self.units = dict(known_units or {})
        self.unit_line: dict[str, int] = {}
        self.names: set[str] = set()
        self.months: dict[str, Month] = {}

    def name(self, column: str, value: str) -> str:
        if value not in self.names:
            if not _NAME.match(value):
                raise ValueError(f"{column} {value!r} must be lower-case words joined by hyphens")
            self.names.add(value)
        return value

    def month(self, text: str) -> Month:
        month = self.months.get(text)
        if month is None:
            month = self.months[text] = parse_month(text)
        return month

    def row(self, line: int, kpi: str, dept: str, month: str, value: str, unit: str, notes: str) -> KPIRecord:
        kpi, dept, unit, notes = kpi.strip(), dept.strip(), unit.strip(), notes.strip()
        self.name("kpi", kpi)
        self.name("department", dept)
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
        return KPIRecord(kpi, dept, parsed, number, unit, notes)


def read_csv(path: Path | str, known_units: dict[str, str] | None = None) -> list[KPIRecord]:
    """Every record of the file, or `CSVError` listing bad rows by line number.

    A KPI keeps one unit: across the file and against `known_units` (what the store holds).
    """
    check = _Validator(known_units)
    records: list[KPIRecord] = []
    errors: list[tuple[int, str]] = []
    total = 0
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader, [])]
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            message = f"missing column(s): {', '.join(missing)}; expected {', '.join(COLUMNS)}"
            raise CSVError(str(path), [(1, message)], 1)
        at = [header.index(c) for c in REQUIRED]
        notes_at = header.index("notes") if "notes" in header else None
        width = len(header)
        for row in reader:
            line = reader.line_num
            try:
                if len(row) != width:
                    if not row:
                        continue  # a blank line
                    raise ValueError(f"expected {width} fields, found {len(row)}")
                notes = row[notes_at] if notes_at is not None else ""
                kpi, dept, month, value, unit = (row[i] for i in at)
                records.append(check.row(line, kpi, dept, month, value, unit, notes))
            except ValueError as exc:
                total += 1
                if len(errors) < MAX_ERRORS:
                    errors.append((line, str(exc)))
    if total:
        raise CSVError(str(path), errors, total)
    return records


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
