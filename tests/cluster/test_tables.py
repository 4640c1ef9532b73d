"""Tables travel as Arrow and come back exactly as they were; what Arrow would change stays a list."""

from __future__ import annotations

import math
import pickle
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from concerto.cluster.tables import MIN_ROWS, Records, pack, unpack

N = MIN_ROWS


def rows(**columns: Any) -> list[dict[str, Any]]:
    """N records; each column's value is a function of the row number."""
    return [{k: f(i) for k, f in columns.items()} for i in range(N)]


PACKED = {
    "numbers and text": rows(id=lambda i: i, amount=lambda i: i * 0.5, name=lambda i: f"n{i}"),
    "booleans and gaps": rows(ok=lambda i: i % 2 == 0, score=lambda i: None if i % 3 else float(i)),
    "dates and times": rows(
        day=lambda i: date(2026, 1, 1) + timedelta(days=i),
        at=lambda i: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=i),
        local=lambda i: datetime(2026, 1, 1, 8) + timedelta(minutes=i),
    ),
    "a column of nulls": rows(id=lambda i: i, note=lambda i: None),
    "not a number": rows(x=lambda i: float("nan") if i == 3 else 1.0),
}

KEPT = {
    "too few rows": [{"a": 1}] * (N - 1),
    "ints and floats in one column": rows(x=lambda i: 1 if i else 1.5),
    "bools and ints in one column": rows(x=lambda i: True if i else 1),
    "decimals": rows(x=lambda i: Decimal("1.5") if i else Decimal("1.25")),
    "two time zones": rows(at=lambda i: datetime(2026, 1, 1, tzinfo=UTC if i else timezone(timedelta(hours=2)))),
    "nested values": rows(x=lambda i: {"y": i}),
    "lists in a column": rows(x=lambda i: [i]),
    "keys in another order": [{"a": 1, "b": 2}] * (N - 1) + [{"b": 2, "a": 1}],
    "a missing key": [{"a": 1, "b": 2}] * (N - 1) + [{"a": 1}],
    "an int beyond 64 bits": rows(x=lambda i: 2**70 + i),
    "not records": list(range(N)),
}


def same(a: Any, b: Any) -> bool:
    """Equal, of the same types at every depth (keys in the same order, datetimes with the same
    time zone object), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, datetime):
        return a == b and a.tzinfo is b.tzinfo
    return bool(a == b)


@pytest.mark.parametrize("name", PACKED)
def test_a_table_travels_as_arrow_and_comes_back_exactly(name: str) -> None:
    table = PACKED[name]
    output = {"data": table, "summary": "s", "queries": [{"purpose": "p", "data": table}]}
    packed = pack(output)
    assert isinstance(packed["data"], Records) and isinstance(packed["data"].table, pa.Table)
    assert isinstance(packed["queries"][0]["data"], Records)
    back = unpack(pickle.loads(pickle.dumps(packed)))
    assert same(back, output)
    assert [type(v) for v in back["data"][0].values()] == [type(v) for v in table[0].values()]


@pytest.mark.parametrize("name", KEPT)
def test_what_arrow_would_change_stays_a_list(name: str) -> None:
    output = {"data": KEPT[name]}
    assert pack(output) is output  # nothing packed: the same object, not rebuilt
    assert same(unpack(pack(output)), output)


def test_a_packed_tables_columns_travel_out_of_band() -> None:
    """Pickled by Ray (protocol 5), the columns are buffers of their own, which the object store
    keeps without copying and a reader on the same node maps; the records would be one stream."""
    table = [{"id": i, "amount": i * 0.5, "region": f"r{i % 7}"} for i in range(20_000)]
    buffers: list[pickle.PickleBuffer] = []
    in_band = pickle.dumps(pack({"data": table}), protocol=5, buffer_callback=buffers.append)
    assert len(in_band) < 2_000 and sum(b.raw().nbytes for b in buffers) > 20_000 * (8 + 8)
    buffers.clear()
    assert len(pickle.dumps({"data": table}, protocol=5, buffer_callback=buffers.append)) > 20_000 * 16 and not buffers
