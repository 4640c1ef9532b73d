"""Numbers and lists as the insights write them."""

from __future__ import annotations

from typing import Any


def number(value: Any) -> str:
    """1234567.8 → "1.23M", 45210.3 → "45,210", 12.345 → "12.35"."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return str(value)
    size = abs(value)
    if size >= 1e9:
        return f"{value / 1e9:,.2f}B"
    if size >= 1e6:
        return f"{value / 1e6:,.2f}M"
    if size >= 1e4 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def change(old: float, new: float) -> str:
    """ "+15.2%" / "-3.0%" (or "n/a" from zero)."""
    if not old:
        return "n/a"
    return f"{100 * (new - old) / abs(old):+.1f}%"


def listing(items: list[str], limit: int = 4) -> str:
    shown = items[:limit]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(shown) + more


def label(column: str) -> str:
    return column.replace("_", " ")


_NOT_NAMES = frozenset({"peer_group", "grp", "side", "tier", "period", "year", "last_active"})


def who(row: dict[str, Any]) -> str:
    """How a result row names its entity: its label (a company's name), else its key."""
    name = next((v for k, v in row.items() if isinstance(v, str) and k not in _NOT_NAMES), None)
    return name if name else str(row.get("entity", "?"))


def plural(noun: str) -> str:
    """ "customer" → "customers", "country" → "countries", "class" → "classes"."""
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"
