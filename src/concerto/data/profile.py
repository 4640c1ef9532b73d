"""Profile a loaded table: statistics per column, what kind of data each holds, what the
table is about. From names, types and values here; an LLM, when configured, or the user
(`--describe`, a `<name>.profile.yaml` beside the file) can correct the semantic part.

Roles: `time` (dates), `flag` (booleans), `id` (keys: named `id`/`..._id`, or named like a
code or number with consecutive or fixed-width values, or fixed-width codes one per row),
`money` (amounts by name or currency), `measure` (other numbers), `category` (few distinct
values; years), `text` (long free text), `label` (short names with many values). Each role
comes with its reason (`ColumnProfile.role_reason`); distinctness alone never makes an `id`.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any

import duckdb

from concerto.data.cells import Parsed, columns_and_comments
from concerto.data.cells import parsed as parsed_cells
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
_ID = re.compile(r"((^|[ _])id$|^id[ _]|(^|[ _])key$|uuid|guid|^sku$)")
# Names that make an identifier only with values like one (consecutive or fixed-width).
_ID_WEAK = re.compile(r"((^|[ _])(code|no|nr|num|number)\.?$|^#$)")
_CODE = re.compile(r"^[A-Za-z]*\d[A-Za-z0-9]*$")  # "S0001", "01500": letters and digits, no punctuation
_YEAR = re.compile(r"(^|[ _])(year|season|yr)s?$")
_CURRENCIES = ("$", "€", "£", "¥")
_CATEGORY_MAX = 50
_EXACT_ROWS = 1_000_000  # distinct counts are exact up to here, approximate above
_TEXT_MIN_LENGTH = 40
_SAMPLES = 5
_SAMPLE_ROWS = 100_000
# How profiling queries are cut (see `_stats`): by columns, so that a wide table is read in
# a few queries rather than one per column, and by values, so that memory stays bounded.
_SHORT_ROWS = 50_000  # up to here the statistics unpivot; above, one aggregate per column
_WIDEST_SCAN = 64  # columns of one query with an aggregate per column
_WIDEST_UNPIVOT = 512  # columns of one unpivoting query
_CELLS = 1_000_000  # values one grouping query (samples, categories) reads at most


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
    columns = columns_and_comments(con, table)
    types = {c: sql_type for c, (sql_type, _) in columns.items()}
    rows = int(con.execute(f"SELECT count(*) FROM {quoted}").fetchall()[0][0])
    stats = _stats(con, quoted, types, rows)
    samples, distinct = _samples(con, quoted, types, rows)
    for column, count in distinct.items():  # exact, counted with the samples (see `_samples`)
        if not _nested(types[column]):
            stats[column]["distinct"] = count
    parsed = parsed_cells({c: comment for c, (_, comment) in columns.items()})
    chosen = {c: _role(c, t, stats[c], rows, parsed.get(c)) for c, t in types.items()}
    roles = {c: role for c, (role, _) in chosen.items()}
    categories = _categories(con, quoted, {c: t for c, t in types.items() if roles[c] == "category"}, rows)
    detected: dict[str, ColumnProfile] = {}
    for column, sql_type in types.items():
        s = stats[column]
        detected[column] = ColumnProfile(
            type=sql_type,
            nullable=s["nulls"] > 0,
            sample_values=[jsonable(v) for v in samples[column]],
            role=roles[column],
            role_reason=chosen[column][1],
            unit=parsed[column].unit if column in parsed else None,
            written_as=parsed[column].text_example if column in parsed else None,
            distinct=s["distinct"],
            nulls=s["nulls"],
            min=jsonable(s["min"]),
            max=jsonable(s["max"]),
            mean=s["mean"],
            categories=[jsonable(v) for v in categories.get(column, [])],
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
    notes = _apply_kinds(profile, overrides, detected)
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


def _apply_kinds(
    profile: SemanticProfile, overrides: ProfileOverrides, detected: dict[str, ColumnProfile]
) -> list[str]:
    """Set the roles the user gave (`kinds`); keep the time column and the entity key consistent."""
    notes = []
    for column, role in overrides.kinds.items():
        if column not in detected:
            notes.append(f"no column '{column}' to set the kind of; the columns are {', '.join(detected)}")
            continue
        found = detected[column]
        if found.role == role:
            continue
        found.role, found.role_reason = role, f"set by the user (detected: {found.role}, {found.role_reason})"
        profile.field_descriptions[column] = _describe(column, found, 0)
    if profile.time_column and detected[profile.time_column].role != "time":
        profile.time_column = None
    if profile.time_column is None:
        profile.time_column = next((c for c, p in detected.items() if p.role == "time"), None)
    if profile.entity_key and detected[profile.entity_key].role not in ("id", "label"):
        profile.entity_key = None
    if profile.entity_key is None:
        profile.entity_key = next((c for c, p in detected.items() if p.role == "id"), None)
    return notes


def _stats(con: duckdb.DuckDBPyConnection, table: str, types: dict[str, str], rows: int) -> dict[str, dict[str, Any]]:
    """Nulls, distinct values, min, max, mean and (text) mean length of every column.

    A tall table: one scan per group of columns with an aggregate per column and statistic.
    A short one (a wide table): each group of same-typed columns unpivoted into (name, value)
    rows and aggregated by name, because DuckDB's cost per aggregate expression (about 0.15 ms
    whatever the rows) would dominate: 10,000 columns took 84 s as one query of 60,000
    aggregates, and take about a second this way.
    """
    found: dict[str, tuple[Any, ...]] = {}
    if rows > _SHORT_ROWS:
        for group in _groups(types, _WIDEST_SCAN):
            parts = [a for c in group for a in _aggregates(_quote(c), types[c], rows <= _EXACT_ROWS)]
            values = con.execute(f"SELECT {', '.join(parts)} FROM {table}").fetchall()[0]
            found |= {c: values[i * 6 : i * 6 + 6] for i, c in enumerate(group)}
    else:
        for group in _groups(types, _WIDEST_UNPIVOT, by_type=True):
            parts = _aggregates("value", types[group[0]], exact=False)  # exact from `_samples`
            sql = f"SELECT name, {', '.join(parts)} FROM {_long(table, group)} GROUP BY name"
            found |= {r[0]: r[1:] for r in con.execute(sql).fetchall()}
    out = {}
    for column in types:
        nulls, distinct, low, high, mean, length = found.get(column, (0, 0, None, None, None, None))
        out[column] = {
            "nulls": int(nulls),
            "distinct": int(distinct or 0),
            "min": low,
            "max": high,
            "mean": float(mean) if mean is not None else None,
            "length": float(length or 0.0),
        }
    return out


def _aggregates(q: str, sql_type: str, exact: bool) -> list[str]:
    """The six statistics of one column (or of the `value` of unpivoted columns of one type);
    the distinct count exact (`exact`: up to `_EXACT_ROWS` rows) or approximate."""
    comparable = not _nested(sql_type)
    distinct = f"count(DISTINCT {q})" if exact else f"approx_count_distinct({q})"
    return [
        f"count(*) - count({q})",
        distinct if comparable else "NULL",
        f"min({q})" if comparable else "NULL",
        f"max({q})" if comparable else "NULL",
        f"avg({q})::DOUBLE" if comparable and _NUMERIC.match(sql_type) else "NULL",
        f"avg(length({q}))::DOUBLE" if comparable and sql_type.startswith("VARCHAR") else "NULL",
    ]


def _nested(sql_type: str) -> bool:
    """A list, struct, map or union: no order, no mean, not a measure or a date."""
    return sql_type.startswith(("STRUCT", "MAP", "LIST", "UNION")) or sql_type.endswith("]")


def _samples(
    con: duckdb.DuckDBPyConnection, table: str, types: dict[str, str], rows: int
) -> tuple[dict[str, list[Any]], dict[str, int]]:
    """The most frequent values of every column (ties by value), so the samples are the same on
    every load; on a large table, of its first rows (DuckDB keeps the file's order), which is
    what samples are for. One query per group of same-typed columns. When the whole table is
    read, also each column's exact number of distinct values (its groups): counted here, it
    costs nothing; `count(DISTINCT)` in `_stats` took 6 ms more on the demo's 7,200 rows."""
    read = min(rows, _SAMPLE_ROWS) if rows > 2 * _SAMPLE_ROWS else rows
    limit = _SAMPLE_ROWS if read < rows else None
    out: dict[str, list[Any]] = {c: [] for c in types}
    distinct: dict[str, int] = {}
    for group in _groups(types, _width(read), by_type=True):
        long = _long(table, group, limit)
        grouped = f"SELECT name, value, count(*) AS n FROM {long} WHERE value IS NOT NULL GROUP BY name, value"
        ranked = (
            f"SELECT name, value, count(*) OVER (PARTITION BY name) FROM ({grouped}) "
            f"QUALIFY row_number() OVER (PARTITION BY name ORDER BY n DESC, value) <= {_SAMPLES} "
            "ORDER BY name, n DESC, value"
        )
        for name, value, count in con.execute(ranked).fetchall():
            out[name].append(value)
            if limit is None:
                distinct[name] = int(count)
    return out, distinct


def _categories(con: duckdb.DuckDBPyConnection, table: str, types: dict[str, str], rows: int) -> dict[str, list[Any]]:
    """Every value (up to `_CATEGORY_MAX`, in order) of the category columns `types` names."""
    out: dict[str, list[Any]] = {c: [] for c in types}
    for group in _groups(types, _width(rows), by_type=True):
        ranked = (
            f"SELECT name, value FROM {_long(table, group)} WHERE value IS NOT NULL GROUP BY name, value "
            f"QUALIFY row_number() OVER (PARTITION BY name ORDER BY value) <= {_CATEGORY_MAX} ORDER BY name, value"
        )
        for name, value in con.execute(ranked).fetchall():
            out[name].append(value)
    return out


def _groups(types: dict[str, str], width: int, *, by_type: bool = False) -> list[list[str]]:
    """The columns in groups of at most `width` (of one SQL type each, to be unpivoted together)."""
    kinds: dict[str, list[str]] = {}
    for column, sql_type in types.items():
        kinds.setdefault(sql_type if by_type else "", []).append(column)
    return [columns[i : i + width] for columns in kinds.values() for i in range(0, len(columns), width)]


def _width(rows: int) -> int:
    """How many columns one grouping query takes: up to `_CELLS` values in all (its memory)."""
    return max(1, min(_WIDEST_UNPIVOT, _CELLS // max(rows, 1)))


def _long(table: str, columns: list[str], limit: int | None = None) -> str:
    """Columns of one type as rows of (name, value): a group of columns in one scan."""
    source = f"(SELECT {', '.join(_quote(c) for c in columns)} FROM {table}" + (f" LIMIT {limit})" if limit else ")")
    if len(columns) == 1:
        return f"(SELECT {_literal(columns[0])} AS name, {_quote(columns[0])} AS value FROM {source})"
    names = ", ".join(_quote(c) for c in columns)
    return f"({source} UNPIVOT INCLUDE NULLS (value FOR name IN ({names})))"


def _role(column: str, sql_type: str, s: dict[str, Any], rows: int, parsed: Parsed | None = None) -> tuple[Role, str]:
    """The column's role and why: from its name, type and values together. Distinct values alone
    never make an identifier (an amount whose 120 values all differ is still an amount)."""
    name = column.lower().strip()
    present = rows - s["nulls"]
    if _nested(sql_type):
        return "label", "nested values (list or struct)"
    if _TIME.match(sql_type):
        return "time", f"dates written like '{parsed.text_example}'" if parsed else f"dates ({sql_type})"
    if sql_type == "BOOLEAN":
        return "flag", "true/false values"
    if _NUMERIC.match(sql_type):
        return _numeric_role(name, sql_type, s, present, parsed)
    if sql_type.startswith("VARCHAR"):
        return _text_role(name, s, rows, present)
    return "label", f"values of type {sql_type}"


def _numeric_role(name: str, sql_type: str, s: dict[str, Any], present: int, parsed: Parsed | None) -> tuple[Role, str]:
    distinct, low, high = s["distinct"], s["min"], s["max"]
    whole = sql_type.endswith("INT") or sql_type.endswith("INTEGER")
    consecutive = whole and present > 1 and distinct == present and high - low + 1 == distinct
    fixed = whole and low is not None and low > 0 and len(str(low)) == len(str(high)) >= 3
    spread = f"from {_number(low)} to {_number(high)}"
    if _ID.search(name):
        return "id", "named like an identifier"
    if _ID_WEAK.search(name) and (consecutive or (fixed and distinct >= 0.9 * present)):
        how = "consecutive" if consecutive else "fixed-width"
        return "id", f"named like a number or code, with {how} whole numbers ({spread})"
    if whole and _YEAR.search(name) and low is not None and 1000 <= low <= high <= 2999:
        return "category", f"years ({low} to {high}): a period to group by, not a quantity to add up"
    written = f", written like '{parsed.text_example}'" if parsed else ""
    if parsed is not None and parsed.unit in _CURRENCIES:
        return "money", f"amounts written with a currency{written}"
    if _MONEY.search(name):
        return "money", f"named like an amount of money, numbers {spread}"
    unit = f" in {parsed.unit}" if parsed and parsed.unit else ""
    every = ", every value different" if distinct == present and present > 1 else ""
    return "measure", f"numbers{unit} with a spread of values ({spread}{every}){written}"


def _text_role(name: str, s: dict[str, Any], rows: int, present: int) -> tuple[Role, str]:
    distinct, low, high = s["distinct"], s["min"], s["max"]
    fixed = low is not None and len(str(low)) == len(str(high)) == round(s["length"]) > 1
    if _ID.search(name):
        return "id", "named like an identifier"
    if _ID_WEAK.search(name) and fixed and distinct >= 0.9 * present:
        return "id", f"named like a code, with fixed-width values (e.g. {low})"
    if s["length"] >= _TEXT_MIN_LENGTH:
        return "text", f"long text (on average {s['length']:.0f} characters)"
    if rows >= 3 and s["nulls"] == 0 and distinct >= rows:  # one value per row: a name, not a category
        if fixed and _CODE.match(str(low)) and _CODE.match(str(high)):
            return "id", f"fixed-width codes, one per row (e.g. {low})"
        return "label", "a different name on every row"
    if distinct <= _CATEGORY_MAX:
        return "category", f"{distinct} different values"
    return "label", f"names with many values ({distinct:,})"


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
        unit = f" (in {p.unit})" if p.unit else ""
        return f"{words}: {kind}{unit} from {_number(p.min)} to {_number(p.max)}{mean}"
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


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
