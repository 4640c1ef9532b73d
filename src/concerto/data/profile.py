"""Profile a loaded table: statistics per column, what kind of data each holds, what the
table is about. From names, types and values here; an LLM, when configured, or the user
(`--describe`, a `<name>.profile.yaml` beside the file) can correct the semantic part.

Roles: `time` (dates), `flag` (booleans), `id` (keys: unique or `..._id`), `money`
(amounts by name), `measure` (other numbers), `category` (few distinct values), `text`
(long free text), `label` (short names with many values).
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any

import duckdb

from concerto.data.context import (
    ColumnProfile,
    DataContext,
    FieldMapping,
    ProfileOverrides,
    Role,
    SemanticProfile,
    jsonable,
    logical_name,
)

_NUMERIC = re.compile(r"^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|REAL|DOUBLE|DECIMAL)")
_TIME = re.compile(r"^(DATE|TIMESTAMP|TIME)")
# Profiling reads names (the "from names, types and values"); routing never does.
_MONEY = re.compile(
    r"(sales|revenue|price|cost|amount|spend|income|profit|fee|salary|wage|payment|budget|value_usd|usd|eur|gbp|\$)"
)
_ID = re.compile(r"(^id$|_id$|^id_|_key$|^key$|_code$|^code$|uuid|^sku$)")
_CATEGORY_MAX = 50
_TEXT_MIN_LENGTH = 40
_SAMPLES = 5
_SAMPLE_ROWS = 100_000


def profile_table(
    con: duckdb.DuckDBPyConnection,
    table: str,
    *,
    name: str,
    file_name: str,
    backend: str = "duckdb",
    overrides: ProfileOverrides | None = None,
    notes: list[str] | None = None,
) -> DataContext:
    """The data context of `table` (DuckDB) with roles, statistics and heuristic descriptions."""
    quoted = _quote(table)
    types = {row[0]: str(row[1]) for row in con.execute(f"DESCRIBE {quoted}").fetchall()}
    rows = int(con.execute(f"SELECT count(*) FROM {quoted}").fetchall()[0][0])
    stats = _stats(con, quoted, types)
    detected: dict[str, ColumnProfile] = {}
    for column, sql_type in types.items():
        s = stats[column]
        samples = [jsonable(v) for v in _samples(con, quoted, column, rows)]
        role = _role(column, sql_type, s, rows)
        categories = [jsonable(v) for v in _categories(con, quoted, column)] if role == "category" else []
        detected[column] = ColumnProfile(
            type=sql_type,
            nullable=s["nulls"] > 0,
            sample_values=samples,
            role=role,
            distinct=s["distinct"],
            nulls=s["nulls"],
            min=jsonable(s["min"]),
            max=jsonable(s["max"]),
            mean=s["mean"],
            categories=categories,
        )
    profile = _semantic(name, detected, rows)
    profile.field_descriptions = {c: _describe(c, p, rows) for c, p in detected.items()}
    notes = list(notes or [])
    if overrides is not None:
        notes += _apply(profile, overrides, detected)
    return DataContext(
        data_source_id=uuid.uuid4().hex,
        name=name,
        table=table,
        file_name=file_name,
        row_count=rows,
        columns=list(types),
        detected_types=detected,
        semantic_profile=profile,
        field_mappings={logical_name(c): FieldMapping(column=c, target=_quote(c)) for c in types},
        backend="postgres" if backend == "postgres" else "duckdb",
        loaded_at=datetime.now(UTC),
        notes=notes,
    )


def apply_overrides(context: DataContext, overrides: ProfileOverrides, *, source: str = "user") -> None:
    """Put `overrides` over the context's profile (in place), noting what names no column."""
    context.notes += _apply(context.semantic_profile, overrides, context.detected_types)
    if overrides.model_fields_set:
        context.semantic_profile.source = "llm" if source == "llm" else "user"


def _apply(profile: SemanticProfile, overrides: ProfileOverrides, detected: dict[str, ColumnProfile]) -> list[str]:
    """Put what the user (or the LLM) said over the heuristic profile; note what names no column."""
    notes = []
    for column, text in overrides.field_descriptions.items():
        if column in detected:
            profile.field_descriptions[column] = text
        else:
            notes.append(f"no column '{column}' to describe; the columns are {', '.join(detected)}")
    for key in ("entity_key", "time_column"):
        value = getattr(overrides, key)
        if value is not None and value not in detected:
            notes.append(f"{key} '{value}' is not a column; kept {getattr(profile, key)}")
        elif value is not None:
            setattr(profile, key, value)
    for key in ("domain", "entity_name"):
        if getattr(overrides, key):
            setattr(profile, key, getattr(overrides, key))
    if overrides.model_fields_set:
        profile.source = "user"
    return notes


def _stats(con: duckdb.DuckDBPyConnection, table: str, types: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Nulls, distinct values, min, max and (numbers) mean of every column, in one scan."""
    parts: list[str] = []
    for column, sql_type in types.items():
        q = _quote(column)
        comparable = not sql_type.startswith(("STRUCT", "MAP", "LIST", "UNION")) and "[]" not in sql_type
        parts += [
            f"count(*) - count({q})",
            f"approx_count_distinct({q})" if comparable else "NULL",
            f"min({q})" if comparable else "NULL",
            f"max({q})" if comparable else "NULL",
            f"avg({q})::DOUBLE" if _NUMERIC.match(sql_type) else "NULL",
            f"avg(length({q}))::DOUBLE" if sql_type.startswith("VARCHAR") else "NULL",
        ]
    values = con.execute(f"SELECT {', '.join(parts)} FROM {table}").fetchall()[0]
    out = {}
    for i, column in enumerate(types):
        nulls, distinct, low, high, mean, length = values[i * 6 : i * 6 + 6]
        out[column] = {
            "nulls": int(nulls),
            "distinct": int(distinct or 0),
            "min": low,
            "max": high,
            "mean": float(mean) if mean is not None else None,
            "length": float(length or 0.0),
        }
    return out


def _samples(con: duckdb.DuckDBPyConnection, table: str, column: str, rows: int) -> list[Any]:
    """The most frequent values (ties by value), so the samples are the same on every load; on a
    large table, of its first rows (DuckDB keeps the file's order), which is what samples are for."""
    q = _quote(column)
    source = f"(SELECT {q} FROM {table} LIMIT {_SAMPLE_ROWS})" if rows > 2 * _SAMPLE_ROWS else table
    rows_ = con.execute(
        f"SELECT {q} FROM {source} WHERE {q} IS NOT NULL GROUP BY {q} ORDER BY count(*) DESC, {q} LIMIT {_SAMPLES}"
    ).fetchall()
    return [r[0] for r in rows_]
    return [r[0] for r in rows]


def _categories(con: duckdb.DuckDBPyConnection, table: str, column: str) -> list[Any]:
    q = _quote(column)
    rows = con.execute(f"SELECT DISTINCT {q} FROM {table} WHERE {q} IS NOT NULL ORDER BY {q} LIMIT {_CATEGORY_MAX}")
    return [r[0] for r in rows.fetchall()]


def _role(column: str, sql_type: str, s: dict[str, Any], rows: int) -> Role:
    name = column.lower()
    distinct = s["distinct"]
    if _TIME.match(sql_type):
        return "time"
    if sql_type == "BOOLEAN":
        return "flag"
    if _NUMERIC.match(sql_type):
        if _ID.search(name) or (distinct >= 0.98 * rows > 50 and sql_type.endswith("INT")):
            return "id"
        if _MONEY.search(name):
            return "money"
        return "measure"
    if sql_type.startswith("VARCHAR"):
        if _ID.search(name):
            return "id"
        if s["length"] >= _TEXT_MIN_LENGTH:
            return "text"
        if rows >= 3 and s["nulls"] == 0 and distinct >= rows:  # one value per row: a name, not a category
            return "label"
        return "category" if distinct <= _CATEGORY_MAX else "label"
    return "label"


def _semantic(name: str, detected: dict[str, ColumnProfile], rows: int) -> SemanticProfile:
    """Which column names the entity and which is the time axis; what one entity is."""
    ids = [c for c, p in detected.items() if p.role == "id"]
    labels = [c for c, p in detected.items() if p.role == "label"]
    times = [c for c, p in detected.items() if p.role == "time"]
    key = next(iter(ids + labels), None)
    entity = _entity_from(key) if key else None
    return SemanticProfile(
        entity_name=entity or _singular(name),
        entity_key=key,
        time_column=times[0] if times else None,
    )


def _entity_from(column: str) -> str | None:
    words = [w for w in logical_name(column).split("_") if w not in {"id", "key", "code", "name", "no", "number"}]
    return words[0] if words else None


def _singular(word: str) -> str:
    """ "customers" → "customer": a plural source name says what a row is; anything else does not."""
    word = word.split("_")[-1]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return "record"


def _describe(column: str, p: ColumnProfile, rows: int) -> str:
    """One line on what the column holds, from its role and statistics."""
    words = column.replace("_", " ")
    if p.role == "time":
        return f"{words}: dates from {p.min} to {p.max}"
    if p.role in ("money", "measure"):
        kind = "amount of money" if p.role == "money" else "number"
        mean = f", average {p.mean:,.2f}" if p.mean is not None else ""
        return f"{words}: {kind} from {_number(p.min)} to {_number(p.max)}{mean}"
    if p.role == "category":
        shown = ", ".join(str(v) for v in p.sample_values[:4])
        return f"{words}: category with {p.distinct} values (e.g. {shown})"
    if p.role == "id":
        return f"{words}: identifier ({p.distinct:,} distinct values)"
    if p.role == "text":
        return f"{words}: free text"
    if p.role == "flag":
        return f"{words}: yes/no"
    return f"{words}: name or label ({p.distinct:,} distinct values)"


def _number(value: Any) -> str:
    return f"{value:,.2f}".rstrip("0").rstrip(".") if isinstance(value, int | float) else str(value)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
