"""One reading of a question against one table (issue 28, decision 45).

Built once per question and source, before routing, by the pack that holds the table
(`Pack.reader`): the router sends a question the reading answers to the agent it names, and
every task of the plan receives it as `TaskInput.reading`. It says what is asked (`kind`:
a cell, a count, a total, the row with the most of something, the row after another, the
difference between two rows, ...), on which columns, under which conditions, and which of
the question's words it used. A word that carries meaning (a number, a comparison, a value
found in a column, a date, a column's name) and was not used is in `not_applied`, so the
answer can say so rather than look whole.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Op = Literal["=", "!=", "in", "not in", "<", "<=", ">", ">=", "between", "contains", "not contains", "year", "month"]
Aggregate = Literal["count", "count_distinct", "sum", "avg", "min", "max", "median"]
ReadingKind = Literal[
    "lookup",  # the value of columns in the rows the conditions select
    "count",  # how many rows (or distinct values) the conditions select
    "aggregate",  # a total, average, extreme value of a column over the selected rows
    "extreme",  # the row with the most/least of a measure: its answer columns
    "mode",  # the value of a column that occurs most (or least) often
    "order",  # the first/last row (table order, or a time column): its answer columns
    "neighbour",  # the row before/after the anchor row: its answer columns
    "difference",  # a measure in one row (or group) minus the same in another
    "choice",  # which of the named rows has more/less of a measure
    "yes_no",  # whether the selected rows exist (or a comparison holds)
]
Cell = str | int | float | bool | date
CONFIDENT = 0.6  # a reading at least this sure is answered as read (routed to `answered_by`, answered by it)
WordKind = Literal[
    "column", "value", "number", "date", "comparison", "order", "aggregate", "negation", "grouping", "analysis"
]


class Condition(BaseModel):
    """`column op values`, and the words of the question it came from."""

    model_config = ConfigDict(frozen=True)

    column: str
    op: Op
    values: list[Cell] = Field(..., min_length=1)
    words: str = Field("", description="The question's words this condition reads, e.g. 'over 200'")

    def text(self) -> str:
        """ "Year > 2000", "Nation = 'France'" (how the answer shows it)."""
        joiner = " or " if self.op in ("in", "not in") else " and "
        shown = joiner.join(repr(v) if isinstance(v, str) else str(v) for v in self.values)
        return f"{self.column} {self.op} {shown}"


class WordUse(BaseModel):
    """A part of the question that carries meaning, what it was read as, and whether it was used."""

    model_config = ConfigDict(frozen=True)

    words: str
    kind: WordKind
    read_as: str = Field("", description="What it matched: a column, 'Nation = France', '> 200'")
    used: bool = True


class TableReading(BaseModel):
    """What one question asks of one table."""

    model_config = ConfigDict(extra="forbid")

    source: str
    kind: ReadingKind
    answer: list[str] = Field(default_factory=list, description="Columns whose values answer (in the order asked)")
    measure: str | None = Field(None, description="The column aggregated, ordered by or compared")
    aggregate: Aggregate | None = None
    descending: bool = Field(True, description="extreme/mode/order/choice: the most (True) or the least")
    conditions: list[Condition] = Field(default_factory=list, description="All must hold (AND)")
    anchor: Condition | None = Field(None, description="neighbour: the row the question is relative to")
    offset: int = Field(0, description="neighbour: +1 the next row, -1 the previous one")
    options: list[Condition] = Field(default_factory=list, description="difference/choice: the rows compared")
    limit: int | None = Field(None, ge=1, description="extreme/order: how many rows")
    words: list[WordUse] = Field(default_factory=list, description="The parts of the question that carry meaning")
    answered_by: str | None = Field(None, description="The agent that answers this reading, named by its pack")
    confidence: float = Field(0.0, ge=0, le=1)

    @property
    def not_applied(self) -> list[WordUse]:
        """Parts that carry meaning and that the reading did not use."""
        return [w for w in self.words if not w.used]

    @property
    def conditions_missed(self) -> list[WordUse]:
        """Parts not used that would change the answer: values, numbers, dates, comparisons,
        breakdowns and analyses (a column named and not used is only reported)."""
        return [w for w in self.not_applied if w.kind != "column"]

    def read_as(self) -> str:
        """The reading in one line, for the answer ("Read as: count of rows where Year > 2000")."""
        where = " and ".join(c.text() for c in self.conditions)
        scope = f" where {where}" if where else ""
        answer = ", ".join(self.answer) or "the rows"
        by = self.measure or "row count"
        order = f" by {self.measure}" if self.measure else " in the table's order"
        match self.kind:
            case "count":
                what = f"number of distinct {answer}" if self.aggregate == "count_distinct" else "number of rows"
            case "aggregate":
                what = f"{self.aggregate} of {self.measure}"
            case "extreme":
                what = f"{answer} with the {'highest' if self.descending else 'lowest'} {by}"
            case "mode":
                what = f"the {'most' if self.descending else 'least'} frequent {answer}"
            case "order":
                what = f"{answer} of the {'last' if self.descending else 'first'} row{order}"
            case "neighbour":
                side = "after" if self.offset > 0 else "before"
                what = f"{answer} of the row {side} {self.anchor.text() if self.anchor else 'it'}{order}"
            case "difference":
                what = f"{self.measure} of {' minus '.join(o.text() for o in self.options)}"
            case "choice":
                more = "more" if self.descending else "less"
                what = f"which of {' or '.join(o.text() for o in self.options)} has the {more} {by}"
            case "yes_no":
                what = "whether any row matches"
            case _:
                what = answer
        return what + scope
