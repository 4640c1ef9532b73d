"""The three query formats agreed between the orchestrator and the KPI agent (000_*.txt).

1. `kpi-{kpi} department-{department} month-{YYYY-MM-DD}`
2. `kpi-{kpi} department-{department} start-{YYYY-MM-DD} end-{YYYY-MM-DD}`
3. `kpi-{kpi} department-{department} range-{N}-months start-{YYYY-MM-DD} end-{YYYY-MM-DD}`

`KPIQuery.parse(text).to_text() == text` for every canonical string, so the agreed
format can be logged, compared and replayed exactly.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from concerto.agents.base import AgentFailure
from concerto.contracts.common import ErrorKind
from concerto.packs.kpi.months import Month, months_between

NAME = r"[a-z0-9]+(?:-[a-z0-9]+)*"
NAME_RE = re.compile(rf"^{NAME}$")
_DATE = r"\d{4}-\d{2}-\d{2}"

# The spec's extraction patterns, used verbatim.
MONTH_PATTERN = re.compile(r"month-(\d{4}-\d{2}-\d{2})")
START_PATTERN = re.compile(r"start-(\d{4}-\d{2}-\d{2})")
END_PATTERN = re.compile(r"end-(\d{4}-\d{2}-\d{2})")
NATURAL_PATTERN = re.compile(r"(?:last|previous) \d+ months?", re.I)

# The whole grammar; names are lower-case slugs, which may contain hyphens.
_GRAMMAR = re.compile(
    rf"^kpi-(?P<kpi>{NAME})\s+department-(?P<department>{NAME})\s+"
    rf"(?:month-(?P<month>{_DATE})"
    rf"|(?:range-(?P<n>\d{{1,4}})-months?\s+)?start-(?P<start>{_DATE})\s+end-(?P<end>{_DATE}))$"
)
# Anything that starts like the format is treated as an attempt at it (and so gets a
# precise error) rather than as natural language.
_LOOKS_STRUCTURED = re.compile(r"^\s*kpi-\S+", re.I)

FORMAT_HELP = (
    "Use one of: `kpi-{kpi_name} department-{department} month-{YYYY-MM-DD}`, "
    "`kpi-{kpi_name} department-{department} start-{YYYY-MM-DD} end-{YYYY-MM-DD}`, or "
    "`kpi-{kpi_name} department-{department} range-{X}-months start-{YYYY-MM-DD} end-{YYYY-MM-DD}`."
)
EXAMPLES = (
    "kpi-attrition-rate department-home-loan month-2025-05-01",
    "kpi-attrition-rate department-home-loan start-2025-02-01 end-2025-05-31",
    "kpi-attrition-rate department-home-loan range-4-months start-2025-02-01 end-2025-05-31",
)


def invalid_format(text: str, reason: str) -> AgentFailure:
    """The spec's "request proper format": what is wrong, the formats, and an example."""
    shown = text if len(text) <= 120 else text[:117] + "..."
    return AgentFailure(
        f"Invalid KPI query format ({reason}): {shown!r}. {FORMAT_HELP} Example: {EXAMPLES[0]}",
        error_type="invalid_format",
        kind=ErrorKind.VALIDATION,
        suggestion="Rewrite the query in one of the formats above; `concerto kpi names` lists "
        "the KPI and department names.",
        details={"formats": list(EXAMPLES), "reason": reason},
    )


def invalid_date(field: str, value: str, reason: str) -> AgentFailure:
    """The spec's "structured error message" for a date that does not parse."""
    return AgentFailure(
        f"Could not parse the date '{value}' in `{field}-{value}`: {reason}.",
        error_type="invalid_date",
        kind=ErrorKind.VALIDATION,
        suggestion="Dates are YYYY-MM-DD, e.g. month-2025-05-01.",
        details={"field": field, "date": value, "reason": reason},
    )


def parse_date(field: str, value: str) -> date:
    """`YYYY-MM-DD` to a date, or `invalid_date` naming the field and the text."""
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise invalid_date(field, value, str(exc)) from None


def looks_structured(text: str) -> bool:
    """True when `text` is an attempt at the agreed format (it starts with `kpi-`)."""
    return bool(_LOOKS_STRUCTURED.match(text))


class KPIQuery(BaseModel):
    """One query in the agreed format: a single month, or an inclusive range of months."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kpi: str = Field(..., pattern=NAME_RE.pattern, max_length=100)
    department: str = Field(..., pattern=NAME_RE.pattern, max_length=100)
    month: date | None = None
    start: date | None = None
    end: date | None = None
    range_months: int | None = Field(None, ge=1, le=9999)

    @model_validator(mode="after")
    def _shape(self) -> KPIQuery:
        if self.month is not None:
            if self.start is not None or self.end is not None or self.range_months is not None:
                raise ValueError("a single-month query has no start, end or range")
        elif self.start is None or self.end is None:
            raise ValueError("a query needs month, or start and end")
        elif self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")
        elif self.range_months is not None:
            covered = months_between(Month.of(self.start), Month.of(self.end))
            if covered != self.range_months:
                raise ValueError(
                    f"range-{self.range_months}-months does not match start..end, which covers {covered} months"
                )
        return self

    @property
    def is_range(self) -> bool:
        return self.month is None

    @property
    def first_month(self) -> Month:
        return Month.of(self.month or self.start)  # type: ignore[arg-type]

    @property
    def last_month(self) -> Month:
        return Month.of(self.month or self.end)  # type: ignore[arg-type]

    def to_text(self) -> str:
        """The canonical agreed-format string."""
        head = f"kpi-{self.kpi} department-{self.department}"
        if self.month is not None:
            return f"{head} month-{self.month.isoformat()}"
        rng = f" range-{self.range_months}-months" if self.range_months is not None else ""
        return f"{head}{rng} start-{self.start.isoformat()} end-{self.end.isoformat()}"  # type: ignore[union-attr]

    @classmethod
    def parse(cls, text: str) -> KPIQuery:
        """Parse the agreed format exactly; raises `AgentFailure` (invalid_format, invalid_date)."""
        stripped = text.strip()
        if len(stripped) > 500:
            raise invalid_format(stripped, f"{len(stripped)} characters; a query is one short line")
        m = _GRAMMAR.match(stripped)
        if m is None:
            raise invalid_format(stripped, _diagnose(stripped))
        fields: dict[str, Any] = {"kpi": m["kpi"], "department": m["department"]}
        if m["month"]:
            fields["month"] = parse_date("month", m["month"])
        else:
            fields["start"] = parse_date("start", m["start"])
            fields["end"] = parse_date("end", m["end"])
            if m["n"]:
                fields["range_months"] = int(m["n"])
        try:
            return cls(**fields)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            reason = "; ".join(e["msg"].removeprefix("Value error, ") for e in _errors(exc))
            raise invalid_format(stripped, reason) from None


def _errors(exc: ValueError) -> list[dict[str, Any]]:
    errors = getattr(exc, "errors", None)
    return list(errors()) if callable(errors) else [{"msg": str(exc)}]


def _diagnose(text: str) -> str:
    """Name the first missing or malformed part, so the user knows what to fix."""
    if not re.match(rf"^kpi-{NAME}(\s|$)", text):
        return "the KPI name must be lower-case words joined by hyphens after `kpi-`"
    if not re.search(rf"\sdepartment-{NAME}(\s|$)", text):
        return "missing `department-{department}`"
    if not (MONTH_PATTERN.search(text) or (START_PATTERN.search(text) and END_PATTERN.search(text))):
        return "missing `month-YYYY-MM-DD` or `start-YYYY-MM-DD end-YYYY-MM-DD`"
    return "the parts are not in the agreed order or contain extra text"
