"""What a series of KPI values says: change, min/max, trend, and the one-sentence summary."""

from __future__ import annotations

from typing import Any

from concerto.packs.kpi.months import Month, month_range, period_phrase
from concerto.packs.kpi.records import KPIRecord

# A fitted change smaller than this share of the mean level is "stable".
STABLE_SHARE = 0.02


def fmt_value(value: float, unit: str) -> str:
    """4.1 and "%" → "4.1%"; 1234.5 and "kUSD" → "1,234.5 kUSD"."""
    if float(value).is_integer() and unit != "%":
        text = f"{value:,.0f}"
    else:  # at least one decimal, at most two: "3.0%", "4.15%"
        text = f"{value:,.2f}"
        text = text[:-1] if text.endswith("0") else text
    return f"{text}%" if unit == "%" else f"{text} {unit}".rstrip()


def trend_of(values: list[float]) -> tuple[str, float]:
    """("rising" | "falling" | "stable", least-squares slope per month)."""
    n = len(values)
    if n < 2:
        return "stable", 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    slope = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values)) / sum((i - mean_x) ** 2 for i in range(n))
    scale = max(abs(mean_y), 1e-9)
    if abs(slope * (n - 1)) < STABLE_SHARE * scale:
        return "stable", slope
    return ("rising" if slope > 0 else "falling"), slope


def statistics(records: list[KPIRecord]) -> dict[str, Any]:
    """Change over the period, min/max (with their months), mean and trend."""
    values = [r.value for r in records]
    low = min(records, key=lambda r: r.value)
    high = max(records, key=lambda r: r.value)
    first, last = records[0], records[-1]
    change = last.value - first.value
    trend, slope = trend_of(values)
    return {
        "first_value": first.value,
        "last_value": last.value,
        "change": round(change, 6),
        "change_pct": round(100 * change / first.value, 2) if first.value else None,
        "min": low.value,
        "min_month": low.month.first_day.isoformat(),
        "max": high.value,
        "max_month": high.month.first_day.isoformat(),
        "mean": round(sum(values) / len(values), 6),
        "trend": trend,
        "slope_per_month": round(slope, 6),
    }


def label(kpi: str, department: str) -> str:
    """ "Home-loan attrition rate"."""
    return f"{department[:1].upper()}{department[1:]} {kpi.replace('-', ' ')}"


def summarize(
    kpi: str,
    department: str,
    first: Month,
    last: Month,
    records: list[KPIRecord],
    stats: dict[str, Any] | None,
) -> str:
    """One sentence: the value of a month, or the change over a range."""
    unit = records[0].unit
    who = label(kpi, department)
    if stats is None:
        return f"{who} was {fmt_value(records[0].value, unit)} {period_phrase(first, last)}."
    start, end = records[0], records[-1]
    when = period_phrase(start.month, end.month)
    tail = f"(min {fmt_value(stats['min'], unit)}, max {fmt_value(stats['max'], unit)}, trend {stats['trend']})"
    if start.value == end.value:
        return f"{who} was unchanged at {fmt_value(end.value, unit)} {when} {tail}."
    verb = "rose" if end.value > start.value else "fell"
    return f"{who} {verb} from {fmt_value(start.value, unit)} to {fmt_value(end.value, unit)} {when} {tail}."


def missing_months(first: Month, last: Month, records: list[KPIRecord]) -> list[str]:
    """Months of the period with no record, as first days."""
    have = {r.month for r in records}
    return [m.first_day.isoformat() for m in month_range(first, last) if m not in have]
