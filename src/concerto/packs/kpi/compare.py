"""Several KPI series at once: compared, ranked, totalled; and what none of them covers.

Each series is what one agreed-format query returned. The number compared is the
`measure` of the analysis: the value of a single month, or over a range its average
(default), total or change (last month minus first). Series in different units are
listed, never subtracted from one another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from concerto.agents.base import Unanswered
from concerto.packs.kpi.analysis import fmt_value, label, statistics
from concerto.packs.kpi.asks import Analysis, Measure
from concerto.packs.kpi.demo import better_direction
from concerto.packs.kpi.formats import KPIQuery
from concerto.packs.kpi.months import Month, month_range, period_phrase
from concerto.packs.kpi.records import KPIRecord

ADDITIVE_UNITS = frozenset({"kusd", "usd", "eur", "gbp", "musd", "employees", "people", "count", "units"})


@dataclass(frozen=True)
class Series:
    """One agreed-format query and the records it returned."""

    query: KPIQuery
    records: list[KPIRecord]

    @property
    def unit(self) -> str:
        return self.records[0].unit if self.records else ""

    @property
    def when(self) -> str:
        return period_phrase(self.query.first_month, self.query.last_month)

    @property
    def label(self) -> str:
        """The period in few words: "May 2025", "Q1 2024", "2023", "H2 2023", "Feb-May 2025"."""
        return short_period(self.query.first_month, self.query.last_month)

    def name(self, with_period: bool) -> str:
        """ "Home-loan attrition rate", with " in May 2025" when periods differ between series."""
        text = label(self.query.kpi, self.query.department)
        return f"{text} {self.when}" if with_period else text

    def missing(self) -> list[Month]:
        have = {r.month for r in self.records}
        return [m for m in month_range(self.query.first_month, self.query.last_month) if m not in have]


def measure_of(series: Series, measure: Measure) -> float | None:
    """The number a series is compared by (None when it has no records)."""
    values = [r.value for r in series.records]
    if not values:
        return None
    if measure == "total":
        return round(sum(values), 6)
    if measure == "change":
        return round(values[-1] - values[0], 6)
    if measure == "value":
        return values[-1]
    return round(sum(values) / len(values), 6)


def _measure(analysis: Analysis, series: list[Series]) -> tuple[Measure, list[str]]:
    """The measure to use, and a note when the one asked for does not apply."""
    ranged = any(s.query.first_month != s.query.last_month for s in series)
    measure = analysis.measure or ("average" if ranged else "value")
    notes = []
    if measure == "total" and any(s.unit.lower() not in ADDITIVE_UNITS for s in series if s.records):
        units = sorted({s.unit for s in series if s.records and s.unit.lower() not in ADDITIVE_UNITS})
        notes.append(f"A total of values in {', '.join(units)} is not meaningful; the monthly average is compared.")
        measure = "average"
    if measure == "change" and not ranged:
        notes.append("A change needs a range of months; the value of the month is compared.")
        measure = "value"
    return measure, notes


_MEASURE_WORDS = {
    "value": "",
    "average": " (monthly average)",
    "total": " (total)",
    "change": " (change over the period)",
}


def _difference(value: float, unit: str) -> str:
    """A difference between two values: of rates in percentage points, else in the unit."""
    if unit == "%":
        return f"{fmt_value(round(abs(value), 6), '')} percentage points"
    return fmt_value(round(abs(value), 6), unit)


def _amount(value: float, unit: str, measure: Measure) -> str:
    text = fmt_value(abs(value) if measure == "change" else value, unit)
    if measure == "change":
        text = ("+" if value >= 0 else "-") + text
    return text


def series_output(series: Series, measure: Measure) -> dict[str, Any]:
    """One series in the output: its query, records, statistics and compared number."""
    out: dict[str, Any] = {
        "structured_query": series.query.to_text(),
        "kpi": series.query.kpi,
        "department": series.query.department,
        "period": {
            "start": series.query.first_month.first_day.isoformat(),
            "end": series.query.last_month.last_day.isoformat(),
        },
        "unit": series.unit,
        "records": [r.as_dict() for r in series.records],
        "value": measure_of(series, measure),
    }
    if len(series.records) > 1:
        out["statistics"] = statistics(series.records)
    gaps = series.missing()
    if gaps:
        out["missing_months"] = [m.first_day.isoformat() for m in gaps]
    return out


def gaps(series: list[Series], spans: dict[tuple[str, str], tuple[Month, Month] | None]) -> list[Unanswered]:
    """One `Unanswered` per series with months the store does not hold."""
    out = []
    for s in series:
        missing = s.missing()
        if not missing:
            continue
        span = spans.get((s.query.kpi, s.query.department))
        held = f"; data exists from {span[0].name} to {span[1].name}" if span else "; the store holds no such series"
        months = period_phrase(missing[0], missing[-1]) if len(missing) > 1 else f"in {missing[0].name}"
        count = f"{len(missing)} month(s) " if len(missing) > 1 else ""
        out.append(
            Unanswered(
                part=f"{label(s.query.kpi, s.query.department).lower()} {count}{months}",
                reason=f"no record in the KPI store{held}",
                error_type="no_data",
                suggestion="Ask for a period the store holds, or load the missing months with `concerto kpi load`.",
            )
        )
    return out


@dataclass
class Combined:
    """The multi-series part of the output, and what to say about it."""

    output: dict[str, Any]
    summary: str
    findings: list[str]


def resolve_order(analysis: Analysis, series: list[Series]) -> tuple[Analysis, list[str]]:
    """ "best" and "worst" as highest or lowest: which way is good depends on the KPI."""
    if analysis.order not in ("best", "worst"):
        return analysis, []
    kpis = sorted({s.query.kpi for s in series})
    known = {better_direction(k) for k in kpis}
    notes = []
    if len(known) == 1 and None not in known:
        better = known.pop()
    else:
        better = "higher"
        notes.append(
            f"'{analysis.order}' was read as the {'highest' if analysis.order == 'best' else 'lowest'} value: "
            f"the store does not say whether higher is better for {', '.join(kpis)}."
        )
    good_high = better == "higher"
    order = "highest" if (analysis.order == "best") == good_high else "lowest"
    return analysis.model_copy(update={"order": order}), notes


def combine(series: list[Series], analysis: Analysis) -> Combined:
    """Compare or rank the series (or the months of a single series) as the analysis asks."""
    analysis, judged = resolve_order(analysis, series)
    measure, notes = _measure(analysis, series)
    notes = judged + notes
    with_period = len({(s.query.first_month, s.query.last_month) for s in series}) > 1
    rows = [(s, measure_of(s, measure)) for s in series]
    valued = [(s, v) for s, v in rows if v is not None]
    out: dict[str, Any] = {
        "analysis": analysis.model_copy(update={"measure": measure}).model_dump(),
        "series": [series_output(s, measure) for s in series],
    }
    if len(series) == 1 and analysis.kind == "rank":
        out["ranking"], summary = _rank_months(series[0], analysis)
        return Combined(out, summary, [summary, *notes])
    units = {s.unit for s, _ in valued}
    if not valued:
        return Combined(out, "None of the series asked for has data in the KPI store.", notes)
    if len(series) == 1:  # one series and its total, average or change over the range
        s, v = valued[0]
        word = {"total": "totalled", "average": "averaged", "change": "changed by", "value": "was"}[measure]
        summary = f"{s.name(False)} {word} {_amount(v, s.unit, measure)} {s.when}"
        if measure == "total" and len(s.records) > 1:
            summary += (
                f" (monthly average {fmt_value(round(v / len(s.records), 2), s.unit)} over {len(s.records)} months)"
            )
        return Combined(out, summary + ".", [summary + ".", *notes])
    if len(units) > 1:  # different units: each stated, none subtracted
        by_kpi = "; ".join(
            f"{s.name(with_period)}{_MEASURE_WORDS[measure]} {_amount(v, s.unit, measure)}" for s, v in valued
        )
        summary = f"{by_kpi}."
        return Combined(out, summary, [*notes, "The KPIs have different units, so they are listed, not compared."])
    unit = units.pop()
    descending = analysis.order == "highest"
    ordered = sorted(valued, key=lambda sv: sv[1], reverse=descending)
    ranking: list[dict[str, Any]] = [
        {
            "rank": i + 1,
            "kpi": s.query.kpi,
            "department": s.query.department,
            "period": s.label,
            "value": v,
            "unit": unit,
            "structured_query": s.query.to_text(),
        }
        for i, (s, v) in enumerate(ordered)
    ]
    what = _what(series, measure, with_period)
    if analysis.kind == "rank":
        shown = ranking[: analysis.n] if analysis.n else ranking
        out["ranking"] = ranking
        out["ranking_shown"] = len(shown)
        head = f"{analysis.order.capitalize()} {what}"
        if measure == "change":
            head = f"{'Biggest rise' if descending else 'Biggest fall'} in {_what(series, 'value', with_period)}"
        if analysis.n and analysis.n > 1:
            head = f"{'Top' if descending else 'Bottom'} {len(shown)} by {what}"
        listed = ", ".join(f"{_who(r, series, with_period)} ({_amount(r['value'], unit, measure)})" for r in shown)
        summary = f"{head}: {listed}."
        findings = [summary]
        if analysis.n and len(ranking) > len(shown):
            rest = ", ".join(
                f"{_who(r, series, with_period)} ({_amount(r['value'], unit, measure)})"
                for r in ranking[len(shown) :][:6]
            )
            findings.append(f"Then: {rest}.")
        if analysis.n and len(ranking) < analysis.n:
            findings.append(f"Only {len(ranking)} series have data, fewer than the {analysis.n} asked for.")
        return Combined(out, summary, findings + notes)
    # compare: each series, the differences from the first named, which is higher and by how much
    first_s, first_v = valued[0]
    differences = []
    for s, v in valued[1:]:
        diff = first_v - v
        differences.append(
            {
                "from": first_s.query.to_text(),
                "to": s.query.to_text(),
                "difference": round(diff, 6),
                "difference_pct": round(100 * diff / abs(v), 2) if v else None,
            }
        )
    high, low = ordered[0] if descending else ordered[-1], ordered[-1] if descending else ordered[0]
    out["comparison"] = {
        "measure": measure,
        "unit": unit,
        "highest": {"structured_query": high[0].query.to_text(), "value": high[1]},
        "lowest": {"structured_query": low[0].query.to_text(), "value": low[1]},
        "differences": differences,
    }
    out["ranking"] = ranking
    if len(valued) == 2:
        (a, va), (b, vb) = valued
        if va == vb:
            verdict = "they are equal"
        else:
            (hi, hv), (_, lv) = ((a, va), (b, vb)) if va > vb else ((b, vb), (a, va))
            pct = f" ({abs(hv - lv) / abs(lv) * 100:.1f}%)" if lv else ""
            verdict = f"{_short(hi, series, with_period)} is higher by {_difference(hv - lv, unit)}{pct}"
        summary = (
            f"{_subject(series, with_period)}{_MEASURE_WORDS[measure]}: {_short(a, series, with_period)} "
            f"{_amount(va, unit, measure)}, {_short(b, series, with_period)} {_amount(vb, unit, measure)}; {verdict}."
        )
    else:
        spread = _difference(high[1] - low[1], unit)
        summary = (
            f"{_subject(series, with_period)}{_MEASURE_WORDS[measure]} across {_count(series, len(valued))}: highest "
            f"{_short(high[0], series, with_period)} ({_amount(high[1], unit, measure)}), lowest "
            f"{_short(low[0], series, with_period)} ({_amount(low[1], unit, measure)}); a spread of {spread}."
        )
    if measure in ("total", "average"):  # "total headcount across departments": the series together
        values = [v for _, v in valued]
        overall = sum(values) if measure == "total" else sum(values) / len(values)
        out["comparison"]["overall"] = round(overall, 6)
        word = "Together" if measure == "total" else "On average"
        summary += f" {word}: {fmt_value(round(overall, 2), unit)} across {_count(series, len(valued))}."
    findings = [summary]
    for s in series:
        if len(s.records) > 1:
            stats = statistics(s.records)
            findings.append(f"{s.name(with_period)}: trend {stats['trend']}, {_range_words(stats, s.unit)}.")
    return Combined(out, summary, findings + notes)


def _range_words(stats: dict[str, Any], unit: str) -> str:
    return f"from {fmt_value(stats['first_value'], unit)} to {fmt_value(stats['last_value'], unit)}"


def _count(series: list[Series], n: int) -> str:
    """ "7 departments", "3 KPIs", "4 series"."""
    kpis, depts = _varying(series)
    if depts and not kpis:
        return f"{n} departments"
    if kpis and not depts:
        return f"{n} KPIs"
    return f"{n} series"


def _varying(series: list[Series]) -> tuple[bool, bool]:
    """Whether KPIs and departments differ between the series."""
    return len({s.query.kpi for s in series}) > 1, len({s.query.department for s in series}) > 1


def short_period(first: Month, last: Month) -> str:
    """ "May 2025", "Q1 2024", "H2 2023", "2023", "Feb–May 2025", "Nov 2024–Feb 2025"."""
    if first == last:
        return first.name
    if first.year == last.year:
        span = (first.month, last.month)
        if span == (1, 12):
            return str(first.year)
        if span in ((1, 6), (7, 12)):
            return f"H{1 if first.month == 1 else 2} {first.year}"
        if first.month % 3 == 1 and last.month == first.month + 2:
            return f"Q{(first.month + 2) // 3} {first.year}"
        return f"{first.name[:3]}–{last.name[:3]} {first.year}"
    return f"{first.name[:3]} {first.year}–{last.name[:3]} {last.year}"


def _short(s: Series, series: list[Series], with_period: bool) -> str:
    """The part that tells this series from the others: its department, KPI and/or period."""
    kpis, depts = _varying(series)
    parts = ([s.query.department] if depts else []) + ([s.query.kpi.replace("-", " ")] if kpis else [])
    if with_period:
        parts.append(s.label)
    return " ".join(parts) or s.name(False)


def _subject(series: list[Series], with_period: bool) -> str:
    """What the series share: "Operating cost in Q1 2025", "Home-loan", "Revenue"."""
    kpis, depts = _varying(series)
    s = series[0]
    words = []
    if not kpis:
        words.append(s.query.kpi.replace("-", " "))
    if not depts:
        words.insert(0, s.query.department)
    text = " ".join(words) or "The series"
    text = text[:1].upper() + text[1:]
    return text if with_period else f"{text} {s.when}"


def _what(series: list[Series], measure: Measure, with_period: bool) -> str:
    """ "net promoter score in April 2025" (what a ranking ranks)."""
    kpis, _ = _varying(series)
    s = series[0]
    what = "value" if kpis else s.query.kpi.replace("-", " ")
    what += _MEASURE_WORDS[measure]
    return what if with_period else f"{what} {s.when}"


def _who(row: dict[str, Any], series: list[Series], with_period: bool) -> str:
    kpis, depts = _varying(series)
    parts = ([row["department"]] if depts or not kpis else []) + ([row["kpi"].replace("-", " ")] if kpis else [])
    if with_period:
        parts.append(row["period"])
    return " ".join(parts)


def _rank_months(series: Series, analysis: Analysis) -> tuple[list[dict[str, Any]], str]:
    """One series ranked by month ("the month with the highest attrition in 2024"), and its sentence."""
    records = sorted(series.records, key=lambda r: r.value, reverse=analysis.order == "highest")
    ranking: list[dict[str, Any]] = [
        {"rank": i + 1, "month": r.month.first_day.isoformat(), "value": r.value, "unit": r.unit}
        for i, r in enumerate(records)
    ]
    shown = records[: analysis.n or 1]
    if not shown:
        return ranking, f"{series.name(False)} has no data {series.when}."
    listed = ", ".join(f"{r.month.name} ({fmt_value(r.value, r.unit)})" for r in shown)
    word = "month" if len(shown) == 1 else f"{len(shown)} months"
    return ranking, f"{analysis.order.capitalize()} {word} of {series.name(False).lower()} {series.when}: {listed}."
