"""`answer_values` (issue 28): values a program can read, from agents to the output contract."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from concerto.contracts.common import AnswerValues, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.orchestrator.synthesizer import answer_values

VALUES: TypeAdapter[list[str | int | float] | None] = TypeAdapter(AnswerValues)


def test_numbers_stay_numbers_dates_are_iso_and_truth_is_yes_or_no() -> None:
    given = [3, 2.5, Decimal("1.25"), date(2015, 7, 1), datetime(2015, 7, 1), datetime(2015, 7, 1, 9, 30), True, "x"]
    expected = [3, 2.5, 1.25, "2015-07-01", "2015-07-01", "2015-07-01T09:30:00", "yes", "x"]
    assert VALUES.validate_python(given) == expected
    assert VALUES.validate_python(None) is None
    with pytest.raises(ValidationError):
        VALUES.validate_python("one value")


def response(agent: str, values: list[object] | None, status: ExecutionStatus = ExecutionStatus.COMPLETED) -> Any:
    return AgentDispatchResponse(agent=agent, status=status, answer_values=values)


def test_the_answer_s_values_are_its_parts_in_plan_order_or_the_writer_s() -> None:
    first, second = response("a", [1]), response("b", ["Seattle"])
    assert answer_values([first, second], None) == [1, "Seattle"]
    assert answer_values([first, response("c", None)], None) == [1]
    assert answer_values([response("c", None)], None) is None
    assert answer_values([first, second], response("explainer", ["written"])) == ["written"]
