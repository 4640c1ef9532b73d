"""The data context of a loaded source (004_*.txt `get_data_context()`), as pydantic models.

What every table-reading agent knows of a source: its file, row count and columns; each
column's type, nullability, samples and statistics (`detected_types`); what the data is
about (`semantic_profile`: domain, entity, field descriptions, the entity key and the
time column); and `field_mappings` from logical names (snake_case) to the exact SQL
expression of each column — the spec's `_build_sql_expressions`, over typed tables the
expression is the quoted column name.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["id", "time", "money", "measure", "category", "label", "text", "flag"]
ProfileSource = Literal["heuristic", "llm", "user"]

_NOT_WORD = re.compile(r"[^0-9a-z]+")


def logical_name(column: str) -> str:
    """A column's logical name: lower snake case ("Company Name" → company_name)."""
    name = _NOT_WORD.sub("_", column.strip().lower()).strip("_")
    return name if name and not name[0].isdigit() else f"col_{name}" if name else "col"


def jsonable(value: Any) -> Any:
    """Dates as ISO text, decimals as floats: what the data context stores as JSON."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return str(value)


class ColumnProfile(BaseModel):
    """One column: its SQL type, whether it holds nulls, samples, and what kind of data it is."""

    type: str = Field(..., description="SQL type, e.g. BIGINT, DOUBLE, DATE, VARCHAR")
    nullable: bool
    sample_values: list[Any] = Field(default_factory=list)
    role: Role = Field(..., description="What the values are: id, time, money, measure, category, label, text, flag")
    role_reason: str = Field("", description="Why profiling chose the role (from the name, type and values)")
    unit: str | None = Field(None, description="The unit the file wrote the values with ($, %, km, ordinal, seconds)")
    written_as: str | None = Field(None, description="One value as the file wrote it, when loading parsed its text")
    distinct: int = Field(0, ge=0, description="Number of distinct values (approximate above 1,000,000 rows)")
    nulls: int = Field(0, ge=0)
    min: Any = None
    max: Any = None
    mean: float | None = None
    categories: list[Any] = Field(default_factory=list, description="Every value, for a category column")


class SemanticProfile(BaseModel):
    """What the data is about; from the LLM when one is configured, else from names, types and values."""

    domain: str = "general"
    entity_name: str = Field("record", description="What one entity is (customer, patient, product)")
    field_descriptions: dict[str, str] = Field(default_factory=dict)
    entity_key: str | None = Field(None, description="The column naming the entity (an id or a name)")
    time_column: str | None = Field(None, description="The main date column, for trends over time")
    source: ProfileSource = "heuristic"


class ProfileOverrides(BaseModel):
    """What a user (`--describe`, a `<name>.profile.yaml` beside the file) or the LLM says of a
    source, over what profiling found; every field is optional."""

    model_config = {"extra": "forbid"}

    domain: str | None = None
    entity_name: str | None = None
    entity_key: str | None = None
    time_column: str | None = None
    field_descriptions: dict[str, str] = Field(default_factory=dict)
    kinds: dict[str, Role] = Field(default_factory=dict, description="Column → role, over the detected one")

    def merged(self, other: ProfileOverrides) -> ProfileOverrides:
        """These overrides, with `other`'s taking precedence."""
        given = other.model_dump(exclude_unset=True, exclude={"field_descriptions", "kinds"})
        return self.model_copy(
            update={
                **given,
                "field_descriptions": {**self.field_descriptions, **other.field_descriptions},
                "kinds": {**self.kinds, **other.kinds},
            }
        )


class FieldMapping(BaseModel):
    """Where a logical column lives: the exact SQL expression to use."""

    column: str = Field(..., description="The column's name in the table")
    target: str = Field(..., description="The SQL expression, quoted for the source's dialect")


class DataContext(BaseModel):
    """Everything an agent needs to plan queries over one source."""

    data_source_id: str
    name: str = Field(..., description="The source's name (also its table's)")
    table: str
    file_name: str
    row_count: int = Field(..., ge=0)
    columns: list[str]
    detected_types: dict[str, ColumnProfile]
    semantic_profile: SemanticProfile
    field_mappings: dict[str, FieldMapping] = Field(default_factory=dict, description="logical name → column")
    backend: Literal["duckdb", "postgres"] = "duckdb"
    loaded_at: datetime
    embedding_table: str | None = Field(None, description="Table holding the embeddings of embedded_columns")
    embedded_columns: list[str] = Field(
        default_factory=list, description="Text columns with embeddings, for semantic search"
    )
    notes: list[str] = Field(default_factory=list, description="What loading changed or noticed")
    built_in: str | None = Field(
        None, description="The pack that ships this source (e.g. commercial); None for a user's own"
    )

    def column_of(self, logical: str) -> str | None:
        """The table column a logical name (or a column name) refers to."""
        if logical in self.detected_types:
            return logical
        mapping = self.field_mappings.get(logical)
        return mapping.column if mapping else None

    def columns_with(self, *roles: Role) -> list[str]:
        return [c for c in self.columns if self.detected_types[c].role in roles]

    def describe(self, column: str) -> str:
        """The column's description, or its name in words."""
        return self.semantic_profile.field_descriptions.get(column) or column.replace("_", " ")
