"""`pattern_recognition` (004): trends, anomalies, distributions, extremes and changes.

Query types: the trend of a measure over time (with a least-squares slope), outliers
beyond two standard deviations, the distribution (quartiles, skewness, the top decile's
share), the top and bottom entities, and the change between the last two periods.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from concerto.agents.base import AgentInfo
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Kind, Planned, Work
from concerto.packs.analytics.reading import default_grain
from concerto.packs.analytics.segmentation import entities

TREND = Kind("trend", "trend over time: is it increasing, decreasing or stable, growth per month")
OUTLIERS = Kind("outliers", "anomalies and outliers: unusual values far beyond the normal range")
DISTRIBUTION = Kind("distribution", "distribution of values: spread, median, skew, concentration, percentiles")
EXTREMES = Kind("extremes", "top performers and bottom performers, highest and lowest")
CHANGE = Kind("change", "change between the latest period and the previous one, what increased or dropped")
KINDS = [TREND, OUTLIERS, DISTRIBUTION, EXTREMES, CHANGE]


class PatternRecognitionAgent(AnalyticsAgent):
    """Trends, anomalies and distributions, each with the statistic it rests on."""

    info = AgentInfo(
        name="pattern_recognition",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Finds patterns in a loaded table: trends over time, anomalies and outliers, how values are "
            "distributed, the top and bottom performers, and changes from one period to the next."
        ),
        capabilities=[
            "Detect trends over time (increasing, decreasing, stable, cyclical)",
            "Identify anomalies and outliers (values beyond normal range)",
            "Analyze statistical distributions (concentration, spread, skew)",
            "Find top performers and bottom performers",
            "Calculate period-over-period changes and growth rates",
        ],
        inputs={"request": "What to look for", "data_source_id": "Source to analyze", "previous_results": "Optional"},
        outputs={"results": "Trend, outliers, distribution", "insights": "Patterns with their statistics"},
        examples=[
            "are sales trending up or down?",
            "find anomalies in monthly sales",
            "how are sales distributed across customers?",
            "what changed last month compared with the month before?",
            "describe the distribution of X",
            "is X trending up or down over the years?",
            "are there outliers in X?",
            "how spread out are X values?",
            "which ones have unusually high X?",
            "is X improving over the years?",
            "which have the highest and lowest X?",
            "which ones changed the most in the latest period?",
        ],
        default_timeout_ms=20000,
    )

    def plan(self, work: Work) -> list[Planned]:
        measure = self.measure(work)
        condition = sql.where(work.reading, work.source)
        time_column = work.source.semantic_profile.time_column
        chosen = self.choose(work, [k for k in KINDS if time_column or k not in (TREND, CHANGE)])
        builders = {
            TREND: _trend,
            OUTLIERS: _outliers,
            DISTRIBUTION: _distribution,
            EXTREMES: _extremes,
            CHANGE: _change,
        }
        return [builders[kind](work, measure, condition) for kind in chosen]

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        measure = words.label(work.reading.measure or self.measure(work))
        entity = work.source.semantic_profile.entity_name
        findings: list[str] = []
        for e in executed:
            if e.result is None or not e.result.data:
                continue
            rows = e.result.data
            write = {
                TREND.name: _trend_findings,
                OUTLIERS.name: _outlier_findings,
                DISTRIBUTION.name: _distribution_findings,
                EXTREMES.name: _extreme_findings,
                CHANGE.name: _change_findings,
            }.get(e.planned.kind)
            if write is None:  # a step of planning (e.g. which category makes peers)
                continue
            findings += write(rows, measure, entity)
        summary = findings[0] if findings else "No pattern could be computed from the data."
        return Insights(summary, findings, follow_ups=[f"which {words.plural(entity)} drive the {measure} trend?"])


def _time(work: Work) -> str:
    column = work.source.semantic_profile.time_column
    assert column is not None
    return column


def _trend(work: Work, measure: str, condition: exp.Expr | None) -> Planned:
    """The measure per period with its least-squares slope, per group when the question (or an
    earlier segmentation) splits it: "sales trend by region", "... of each segment"."""
    grain = work.reading.grain or default_grain(work.source)
    rollup = sql.aggregate(sql.entity_measure(work.source, measure), measure)
    rows, group, split = _grouped_rows(work)
    query = sql.template(
        """WITH p AS (SELECT p_grp AS grp, p_bucket AS period, p_rollup AS value FROM p_rows WHERE p_cond
          GROUP BY 1, 2),
        n AS (SELECT grp, period, value, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY period) AS step FROM p)
        SELECT grp, period, ROUND(value, 2) AS value,
          ROUND(REGR_SLOPE(value, step) OVER (PARTITION BY grp), 4) AS slope,
          ROUND(REGR_R2(value, step) OVER (PARTITION BY grp), 4) AS r2
        FROM n ORDER BY grp, period""",
        grp=group,
        bucket=sql.bucket(_time(work), grain),
        rollup=rollup,
        rows=rows,
        cond=sql.condition_or_true(condition),
    )
    what = f"{measure} per {grain}" + (f" by {split}" if split else "")
    return Planned(what, query, "line", "period", ["value"], TREND.name, series="grp" if split else None)


def _grouped_rows(work: Work) -> tuple[exp.Expr, exp.Expr, str | None]:
    """(the rows to read, the group expression, what the group is): tiers from an earlier
    segmentation, else the question's category, else one group."""
    source = work.source
    key = source.semantic_profile.entity_key
    if work.segments is not None and key:
        from concerto.packs.analytics.segmentation import tier_of_entity

        joined = exp.select(exp.Star()).from_(sql.table(source))
        joined = joined.join(
            tier_of_entity(work).subquery("tiers"),
            on=exp.EQ(this=sql.col(key, source.table), expression=exp.column("entity", "tiers")),
        )
        return joined.subquery("r"), exp.column("tier"), f"{work.segments.measure} tier"
    dimension = next((d for d in work.reading.dimensions if source.detected_types[d].role == "category"), None)
    if dimension:
        return sql.table(source), sql.col(dimension), dimension
    return sql.table(source), exp.Literal.string("all"), None


def _outliers(work: Work, measure: str, condition: exp.Expr | None) -> Planned:
    """Values far from the norm: an entity's own values when the data is a panel (an entity over
    time: beyond 3 standard deviations of its own mean), else all rows (beyond 2)."""
    source = work.source
    key = source.semantic_profile.entity_key
    time_column = source.semantic_profile.time_column
    label = sql.label_column(source)
    shown = [c for c in (key, label, time_column) if c]
    # An entity's own norm needs enough of its values (a car's one or two model years do not make one).
    per_entity = source.row_count / max(source.detected_types[key].distinct, 1) if key else 0
    panel = bool(key and time_column and per_entity >= 6)
    query = sql.template(
        """WITH s AS (SELECT *, AVG(p_m) OVER (PARTITION BY p_by) AS mean,
            STDDEV_SAMP(p_m) OVER (PARTITION BY p_by) AS sd,
            COUNT(*) OVER () AS n FROM p_t WHERE p_cond)
        SELECT *, ROUND((p_m - mean) / sd, 2) AS z_score, ROUND(p_m / NULLIF(mean, 0), 2) AS times_average, n
        FROM s WHERE sd > 0 AND ABS(p_m - mean) > p_k * sd
        ORDER BY ABS(p_m - mean) / sd DESC LIMIT 25""",
        m=sql.col(measure),
        by=sql.col(key) if panel and key else exp.Literal.number(1),
        t=sql.table(source),
        cond=sql.condition_or_true(condition),
        k=exp.Literal.number(3 if panel else 2),
    )
    assert isinstance(query, exp.Select)
    query.set("expressions", [*(sql.col(c) for c in shown), sql.col(measure), *query.expressions[1:]])
    entity = source.semantic_profile.entity_name
    norm = f"beyond 3 standard deviations of each {entity}'s own values" if panel else "beyond 2 standard deviations"
    return Planned(f"outliers of {measure} ({norm})", query, "table", kind=OUTLIERS.name)


def _distribution(work: Work, measure: str, condition: exp.Expr | None) -> Planned:
    query = sql.template(
        """WITH e AS (SELECT * FROM p_entities),
        r AS (SELECT value, NTILE(10) OVER (ORDER BY value DESC) AS decile FROM e)
        SELECT COUNT(*) AS n, ROUND(MIN(value), 2) AS min, ROUND(QUANTILE_CONT(value, 0.25), 2) AS p25,
          ROUND(QUANTILE_CONT(value, 0.5), 2) AS median, ROUND(AVG(value), 2) AS mean,
          ROUND(QUANTILE_CONT(value, 0.75), 2) AS p75, ROUND(MAX(value), 2) AS max,
          ROUND(STDDEV_SAMP(value), 2) AS sd, ROUND(SKEWNESS(value), 3) AS skewness,
          ROUND(100.0 * SUM(CASE WHEN decile = 1 THEN value ELSE 0 END) / NULLIF(SUM(value), 0), 1) AS top10_share
        FROM r""",
        entities=entities(work, measure, condition).subquery("entities"),
    )
    entity = work.source.semantic_profile.entity_name
    return Planned(f"distribution of {measure} per {entity}", query, "table", kind=DISTRIBUTION.name)


def _extremes(work: Work, measure: str, condition: exp.Expr | None) -> Planned:
    label = next(iter(work.source.columns_with("label")), None)
    query = sql.template(
        """WITH e AS (SELECT * FROM p_entities),
        r AS (SELECT *, RANK() OVER (ORDER BY value DESC) AS from_top,
            RANK() OVER (ORDER BY value) AS from_bottom FROM e)
        SELECT *, CASE WHEN from_top <= 5 THEN 'top' ELSE 'bottom' END AS side
        FROM r WHERE from_top <= 5 OR from_bottom <= 5 ORDER BY value DESC""",
        entities=entities(work, measure, condition, *([label] if label else [])).subquery("entities"),
    )
    x = label or "entity"
    return Planned(f"top and bottom 5 by {measure}", query, "bar", x, ["value"], EXTREMES.name)


def _change(work: Work, measure: str, condition: exp.Expr | None) -> Planned:
    grain = work.reading.grain or default_grain(work.source)
    rollup = sql.aggregate(sql.entity_measure(work.source, measure), measure)
    key = work.source.semantic_profile.entity_key
    query = sql.template(
        """WITH p AS (SELECT p_key AS entity, p_bucket AS period, p_rollup AS value FROM p_t WHERE p_cond
          GROUP BY 1, 2),
        last AS (SELECT MAX(period) AS latest FROM p),
        prev AS (SELECT MAX(period) AS before FROM p CROSS JOIN last WHERE period < latest),
        w AS (SELECT entity,
            MAX(CASE WHEN period = latest THEN value END) AS now,
            MAX(CASE WHEN period = before THEN value END) AS previous
          FROM p CROSS JOIN last CROSS JOIN prev GROUP BY entity)
        SELECT entity, ROUND(previous, 2) AS previous, ROUND(now, 2) AS now, ROUND(now - previous, 2) AS change,
          ROUND(100.0 * (now - previous) / NULLIF(ABS(previous), 0), 1) AS change_pct,
          (SELECT MAX(latest) FROM last) AS latest, (SELECT MAX(before) FROM prev) AS before
        FROM w WHERE now IS NOT NULL AND previous IS NOT NULL ORDER BY ABS(now - previous) DESC LIMIT 20""",
        key=sql.col(key) if key else exp.Literal.string("all"),
        bucket=sql.bucket(_time(work), grain),
        rollup=rollup,
        t=sql.table(work.source),
        cond=sql.condition_or_true(condition),
    )
    return Planned(f"change of {measure} from the previous {grain}", query, "bar", "entity", ["change"], CHANGE.name)


def _trend_findings(rows: list[dict[str, Any]], measure: str, entity: str) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row["grp"]), []).append(row)
    out = []
    for name, series in groups.items():
        first, last = float(series[0]["value"]), float(series[-1]["value"])
        slope, r2 = series[0]["slope"], series[0]["r2"]
        direction = "upward" if (slope or 0) > 0 else "downward" if (slope or 0) < 0 else "flat"
        if r2 is not None and r2 < 0.3:
            direction = "no clear"
        who = measure.capitalize() if name == "all" else f"{name}: {measure}"
        out.append(
            f"{who} shows {'an' if direction == 'upward' else 'a'} {direction} trend: {words.change(first, last)} from "
            f"{series[0]['period']} to {series[-1]['period']} (least-squares slope {words.number(slope)} per period, "
            f"R² {r2}, n = {len(series)} periods)"
        )
    if len(groups) > 1:  # one line with every group first, so a summary carries them all
        changes = ", ".join(
            f"{name} {words.change(float(series[0]['value']), float(series[-1]['value']))}"
            for name, series in groups.items()
        )
        out.insert(0, f"{measure.capitalize()} from the first to the last period by group: {changes}")
    if len(groups) == 1:
        series = next(iter(groups.values()))
        peak = max(series, key=lambda r: r["value"])
        trough = min(series, key=lambda r: r["value"])
        out.append(
            f"Peak {words.number(peak['value'])} in {peak['period']}; low {words.number(trough['value'])} in "
            f"{trough['period']}"
        )
    return out


def _outlier_findings(rows: list[dict[str, Any]], measure: str, entity: str) -> list[str]:
    high = [r for r in rows if float(r["z_score"]) > 0]
    strongest = rows[0]
    return [
        f"{len(rows)} value(s) of {measure} are outliers ({len(high)} above the norm, n = {strongest['n']:,} rows)",
        f"The most extreme is {strongest['times_average']}× the average (z = {strongest['z_score']})",
    ]


def _distribution_findings(rows: list[dict[str, Any]], measure: str, entity: str) -> list[str]:
    d = rows[0]
    skew = float(d["skewness"] or 0)
    shape = "right-skewed" if skew > 0.5 else "left-skewed" if skew < -0.5 else "roughly symmetric"
    relation = "below" if d["median"] < d["mean"] else "above"
    return [
        f"Distribution of {measure} per {entity} is {shape}: median {words.number(d['median'])} {relation} mean "
        f"{words.number(d['mean'])} (skewness {skew:.2f}, n = {d['n']:,})",
        f"Top 10% of {words.plural(entity)} account for {d['top10_share']}% of {measure}",
        f"Half of the {words.plural(entity)} lie between {words.number(d['p25'])} and {words.number(d['p75'])}; "
        f"range {words.number(d['min'])} to {words.number(d['max'])}",
    ]


def _extreme_findings(rows: list[dict[str, Any]], measure: str, entity: str) -> list[str]:
    name = next((k for k in rows[0] if k not in ("entity", "value", "from_top", "from_bottom", "side")), "entity")
    top = [r for r in rows if r["side"] == "top"]
    bottom = [r for r in rows if r["side"] == "bottom"]
    out = [
        f"Top {words.plural(entity)} by {measure}: "
        + words.listing([f"{r[name]} ({words.number(r['value'])})" for r in top], 5)
    ]
    if bottom:
        out.append(
            f"Bottom {words.plural(entity)}: "
            + words.listing([f"{r[name]} ({words.number(r['value'])})" for r in bottom], 5)
        )
    return out


def _change_findings(rows: list[dict[str, Any]], measure: str, entity: str) -> list[str]:
    up = [r for r in rows if float(r["change"]) > 0]
    down = [r for r in rows if float(r["change"]) < 0]
    head = f"From {rows[0]['before']} to {rows[0]['latest']}: "
    out = []
    if up:
        r = up[0]
        out.append(head + f"largest rise {entity} {r['entity']} ({words.number(r['change'])}, {r['change_pct']}%)")
    if down:
        r = down[0]
        out.append(head + f"largest drop {entity} {r['entity']} ({words.number(r['change'])}, {r['change_pct']}%)")
    return out
