"""Every kind of condition and question form the table reading has, asked about a table of
the user's own with `source` named (issue 28 items 1-2): each is applied (the values equal
what plain Python computes from the same rows) or named as not applied, never dropped.

One orchestrator over its own data directory (loading a table here must not change the
sources the other analytics tests route with); DuckDB, where the rows keep their load order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import pytest

from _helpers.analytics import ask, close_stores, make_orchestrator
from concerto.data.sources import store_for
from concerto.nlp.embeddings import Embedder
from concerto.orchestrator.engine import Orchestrator

REGIONS = ["North", "South", "East", "West"]
PRODUCTS = ["Gadget", "Widget", "Gizmo Pro", "Doohickey"]
ROWS: list[dict[str, Any]] = [
    {
        "order_id": 1000 + i,
        "region": REGIONS[i % 4],
        "product": PRODUCTS[(i * 3) % 4],
        "amount": 10 + (i * 37) % 290,
        "ordered": date(2023 + (i * 7) % 3, 1 + (i * 5) % 12, 1 + (i * 5) % 28),  # not in row order
    }
    for i in range(30)
]


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Orchestrator]:
    root = tmp_path_factory.mktemp("conditions")
    path = root / "orders.csv"
    lines = ["order_id,region,product,amount,ordered"]
    lines += [f"{r['order_id']},{r['region']},{r['product']},{r['amount']},{r['ordered'].isoformat()}" for r in ROWS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    orchestrator = make_orchestrator(root / "data", embedder)
    store_for(orchestrator.settings, orchestrator.resources).load(path, "orders")
    yield orchestrator
    close_stores(orchestrator)


def count(keep: Callable[[dict[str, Any]], bool]) -> list[object]:
    return [sum(1 for r in ROWS if keep(r))]


def total(keep: Callable[[dict[str, Any]], bool]) -> list[object]:
    return [sum(r["amount"] for r in ROWS if keep(r))]


def where(column: str, keep: Callable[[dict[str, Any]], bool]) -> list[object]:
    return [r[column] for r in ROWS if keep(r)]


def after(order_id: int, step: int, column: str) -> list[object]:
    i = next(i for i, r in enumerate(ROWS) if r["order_id"] == order_id)
    return [ROWS[i + step][column]]


BIGGEST = max(ROWS, key=lambda r: r["amount"])
SMALLEST = min(ROWS, key=lambda r: r["amount"])
TIMES = {g: sum(r["region"] == g for r in ROWS) for g in REGIONS}
MOST_LISTED: list[object] = sorted(g for g in REGIONS if TIMES[g] == max(TIMES.values()))
CASES: list[tuple[str, str, list[object]]] = [
    # (question, kind of condition or form, expected answer_values)
    ("how many orders have amount over 200?", ">", count(lambda r: r["amount"] > 200)),
    ("how many orders have an amount of at least 150?", ">=", count(lambda r: r["amount"] >= 150)),
    ("how many orders have amount under 50?", "<", count(lambda r: r["amount"] < 50)),
    ("how many orders had 100 or less amount?", "<=", count(lambda r: r["amount"] <= 100)),
    ("how many orders have amount between 100 and 200?", "between", count(lambda r: 100 <= r["amount"] <= 200)),
    ("how many orders are in the South region?", "=", count(lambda r: r["region"] == "South")),
    ("how many orders were not in the North?", "!=", count(lambda r: r["region"] != "North")),
    ("how many orders other than gadget are there?", "other than", count(lambda r: r["product"] != "Gadget")),
    ("how many orders for gizmo?", "part of a value", count(lambda r: "Gizmo" in r["product"])),
    ("how many orders were placed in 2024?", "year", count(lambda r: r["ordered"].year == 2024)),
    ("how many orders were placed after 2023?", "after a year", count(lambda r: r["ordered"].year > 2023)),
    (
        "how many orders were placed in march 2024?",
        "month",
        count(lambda r: (r["ordered"].year, r["ordered"].month) == (2024, 3)),
    ),
    ("how many orders in the north or the west?", "either value", count(lambda r: r["region"] in ("North", "West"))),
    ("how many different products are there?", "distinct count", [len({r["product"] for r in ROWS})]),
    ("what is the total amount of widget orders?", "sum", total(lambda r: r["product"] == "Widget")),
    ("what is the highest amount?", "max", [BIGGEST["amount"]]),
    ("which order_id has the lowest amount?", "extreme row", [SMALLEST["order_id"]]),
    ("what was the amount of order 1007?", "lookup", where("amount", lambda r: r["order_id"] == 1007)),
    ("which region is listed the most?", "mode", MOST_LISTED),  # every region tied at the most
    ("what is the region of the last order?", "last row", [ROWS[-1]["region"]]),
    ("which order_id was ordered first?", "first by a date", [min(ROWS, key=lambda r: r["ordered"])["order_id"]]),
    ("how many orders were placed outside the North?", "outside", count(lambda r: r["region"] != "North")),
    ("what was the amount of the order after 1010?", "next row", after(1010, 1, "amount")),
    (
        "what is the difference in amount between order 1003 and order 1004?",
        "difference",
        [abs(ROWS[3]["amount"] - ROWS[4]["amount"])],
    ),
]


@pytest.mark.parametrize(("question", "kind", "expected"), CASES, ids=[c[1] for c in CASES])
async def test_each_condition_is_applied(
    orders: Orchestrator, question: str, kind: str, expected: list[object]
) -> None:
    answer = await ask(orders, question, source="orders")
    assert answer.intent_classification.classification_method == "reading", answer.intent_classification
    assert answer.answer_values == expected, (kind, answer.response)
    assert "Not answered" not in answer.response


async def test_a_number_the_table_cannot_place_is_named_not_applied(orders: Orchestrator) -> None:
    """ "over 5 stars": no column holds stars, so the count is not given as if it applied."""
    answer = await orders.ask({"query": "how many orders in the South have over 5 stars?", "source": "orders"})
    assert answer.answer_values is None  # type: ignore[union-attr]
    assert "Not answered: 'over 5'" in answer.response  # type: ignore[union-attr]


async def test_a_breakdown_is_left_to_the_agents_that_group(orders: Orchestrator) -> None:
    answer = await ask(orders, "total amount by region", source="orders")
    assert answer.intent_classification.classification_method != "reading"
    assert "sql_analytics" in answer.agents_invoked


async def test_a_named_source_never_goes_to_agents_that_take_no_table(orders: Orchestrator) -> None:
    """With `source` named, the question goes to the table agents (issue 28 item 4)."""
    answer = await orders.ask({"query": "what's the weather like for the orders?", "source": "orders"})
    invoked = getattr(answer, "agents_invoked", None) or []
    assert not {"temperature", "datetime", "kpi", "metrics"} & set(invoked)


async def test_the_answer_shows_the_reading(orders: Orchestrator) -> None:
    """The agent's output carries the typed reading, every word with what it was read as."""
    answer = await ask(orders, "how many orders have amount over 200?", source="orders")
    (result,) = [r for r in answer.agent_results if r.agent == "sql_analytics"]
    table = result.output["reading"]["table"]
    assert table["kind"] == "count"
    assert {"words": "over 200", "kind": "comparison", "read_as": "amount > 200", "used": True} in table["words"]
