"""Tables in an agent's output as Arrow while they travel through Ray's object store.

An agent's output is the contracts' JSON-like dict; its tables are lists of records (`"data":
[{"state": "CA", "sales": 1.2}, ...]`). Pickled as they are, every record repeats its keys and
every value is a Python object, so a 100,000-row result is tens of MB to write, copy and read
back. `pack` replaces each such list with an Arrow table (columns in contiguous buffers, which
Ray stores out of band and a reader maps without copying); `unpack` turns them back into the
same records where the output is used (the driver, or a dependent task's worker).

Only lists that come back exactly as they were are packed: every record a dict with the same
keys in the same order, and every column holding one plain type (int, float, str, bool, date or
datetime in one time zone) besides None. Anything else (mixed types, Decimals, nested values,
ints beyond 64 bits) stays a list, so an output never changes by travelling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from typing import Any

MIN_ROWS = 64  # below this a list pickles about as fast as a table (benchmarks/bench_ray.py)
_PLAIN = frozenset({int, float, str, bool, date, datetime})


@dataclass(frozen=True)
class Records:
    """A list of records carried as an Arrow table (`pyarrow.Table`), with the time zone object of
    each zoned datetime column (Arrow keeps its name: UTC would come back as `ZoneInfo("UTC")`)."""

    table: Any
    zones: dict[str, tzinfo] = field(default_factory=dict)


def pack(value: Any) -> Any:
    """`value` with every list of at least `MIN_ROWS` uniform records, at any depth, as
    `Records`; the rest as it is (containers rebuilt only where something was packed)."""
    if isinstance(value, dict):
        packed = {k: pack(v) for k, v in value.items()}
        return packed if any(packed[k] is not value[k] for k in value) else value
    if isinstance(value, list):
        records = _records(value)
        if records is not None:
            return records
        items = [pack(v) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def unpack(value: Any) -> Any:
    """`value` with every `Records` back as its list of records."""
    if isinstance(value, Records):
        rows: list[dict[str, Any]] = value.table.to_pylist()
        for name, zone in value.zones.items():
            for row in rows:
                if row[name] is not None:
                    row[name] = row[name].replace(tzinfo=zone)
        return rows
    if isinstance(value, dict):
        return {k: unpack(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unpack(v) for v in value]
    return value


def _records(rows: list[Any]) -> Records | None:
    """`rows` as an Arrow table, or None when they are not uniform plain records."""
    if len(rows) < MIN_ROWS or type(rows[0]) is not dict:
        return None
    keys = tuple(rows[0])
    if not all(type(k) is str for k in keys):
        return None
    if not all(type(r) is dict and tuple(r) == keys for r in rows):
        return None
    columns = {k: [r[k] for r in rows] for k in keys}
    zones: dict[str, tzinfo] = {}
    for name, column in columns.items():
        types = set(map(type, column))
        types.discard(type(None))
        if len(types) > 1 or not types <= _PLAIN:  # all None is a null column
            return None
        if types == {datetime}:
            found = {v.tzinfo for v in column if v is not None}
            if len(found) > 1:
                return None  # Arrow keeps one time zone per column
            zone = found.pop()
            if zone is not None:
                zones[name] = zone
    import pyarrow as pa

    try:
        return Records(pa.Table.from_pydict(columns), zones)
    except (pa.ArrowException, OverflowError):  # e.g. an int beyond 64 bits
        return None
