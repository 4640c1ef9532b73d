"""`benchmark` (004): how entities and groups compare with averages, peers and their own past.

Query types: average comparison (an entity against the average entity), peer comparison
(against the average of its own category; without a named entity, each group against
the overall average), percentile ranking (rank and percentile overall and in its group),
historical comparison (this year against last year, and the percentile each year) and
category benchmarks (the best in class of each group).

An entity the question names ("Acme Energy") is the focus, not a filter: the population
it is compared with stays whole (only the question's other filters narrow it).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from concerto.agents.base import AgentInfo
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Kind, Planned, Work
from concerto.packs.analytics.reading import Filter, Reading
from concerto.packs.analytics.segmentation import entities

AVERAGE = Kind("average", "compare an entity against the average, above or below average, versus average")
PEERS = Kind("peers", "performance versus peers in the same category or group, relative to others like it")
PERCENTILE = Kind("percentile", "rank and percentile of an entity, where it stands, its ranking or standing")
HISTORY = Kind("history", "compare current performance with last year or the past, year over year")
BEST = Kind("best", "best in class per segment or category, the leader of each group")
KINDS = [AVERAGE, PEERS, PERCENTILE, HISTORY, BEST]


class BenchmarkAgent(AnalyticsAgent):
    """Comparisons with averages, peers, percentiles, the past and the best in class."""

    info = AgentInfo(
        name="benchmark",
        description=(
            "Benchmarks entities and groups in a loaded table: against the average, against peers in the same "
            "category, by percentile rank, against their own past, and the best in class of each group."
        ),
        capabilities=[
            "Compare entities against group averages",
            "Benchmark performance vs peers in same category",
            "Calculate relative performance of entities (% above/below average)",
            "Rank entities within their segments",
            "Compare current performance to historical benchmarks",
            "Name the best performing entity of each category (best in class)",
        ],
        inputs={"request": "What to compare", "data_source_id": "Source", "previous_results": "Optional"},
        outputs={"results": "Values beside their benchmarks", "insights": "Relative performance"},
        examples=[
            "how does Acme Energy compare to the average customer?",
            "how does one of them compare to the average?",
            "rank each one within its group",
            "which regions are above average in sales?",
            "rank customers within their region",
            "the best performing customer in each segment",
            "how did sales this year compare with last year?",
            "how does this one compare to the others in X?",
            "rank them by X",
            "what percentile is it in for X?",
            "which Y are above average in X?",
            "how do X in Y compare with the average?",
            "which one is best in each Y for X?",
        ],
        default_timeout_ms=20000,
    )

    def plan(self, work: Work) -> list[Planned]:
        measure = self.measure(work)
        source = work.source
        focus, population = _split(work)
        category = next(iter(work.reading.dimensions), None) or _entity_category(work, focus)
        has_time = source.semantic_profile.time_column is not None
        available = [k for k in KINDS if (k is not HISTORY or has_time) and (k not in (BEST, PEERS) or category)]
        chosen = self.choose(work, available)
        if focus and not any(k in chosen for k in (AVERAGE, PEERS, PERCENTILE)):
            chosen.insert(0, PERCENTILE)  # a named entity always gets its standing
        named_group = bool(work.reading.dimensions)
        plans = []
        for kind in chosen:
            if kind is HISTORY:  # the years compared are the period: only the other filters apply
                plans.append(_history(work, measure, _split(work, period=False)[1], focus))
            elif kind is BEST or (kind is PERCENTILE and not focus and category):
                plans.append(_best(work, measure, str(category), population, places=1 if kind is BEST else 3))
            elif kind in (PEERS, AVERAGE) and not focus and category and (named_group or kind is PEERS):
                plans.append(_groups(work, measure, category, population))
            else:
                plans.append(_standing(work, measure, category, population, focus, kind))
        return plans

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        entity = work.source.semantic_profile.entity_name
        measure = words.label(work.reading.measure or self.measure(work))
        findings: list[str] = []
        for e in executed:
            if e.result is None:
                continue
            rows = e.result.data
            if e.planned.kind == HISTORY.name:
                findings += _history_findings(rows, entity, measure)
            elif e.planned.kind == BEST.name:
                findings += _best_findings(rows, entity, measure)
            elif e.planned.kind == "groups":
                findings += _group_findings(rows, entity, measure)
            else:
                findings += _standing_findings(rows, entity, measure, e.planned)
        summary = findings[0] if findings else "Nothing could be compared."
        return Insights(summary, findings, follow_ups=[f"what drives the best {words.plural(entity)}' {measure}?"])


def _split(work: Work, *, period: bool = True) -> tuple[Filter | None, exp.Expr | None]:
    """The entity the question names (a filter on the entity's key or name), and the condition
    of the population it is compared with (the other filters, and the period if `period`)."""
    source = work.source
    names = {source.semantic_profile.entity_key, sql.label_column(source)} - {None}
    focus = next((f for f in work.reading.filters if f.column in names), None)
    others = Reading(filters=[f for f in work.reading.filters if f is not focus])
    others.period = work.reading.period if period else None
    return focus, sql.where(others, source)


def _focused(work: Work, focus: Filter) -> exp.Expr:
    """The named entity among rows of one entity each (its key is the column `entity` there)."""
    column = "entity" if focus.column == work.source.semantic_profile.entity_key else focus.column
    target = exp.column(column) if column == "entity" else sql.col(column)
    return exp.In(this=target, expressions=[sql.literal(v) for v in focus.values])


def _entity_category(work: Work, focus: Filter | None) -> str | None:
    categories = work.source.columns_with("category")
    return categories[0] if categories else None


def _standing(
    work: Work, measure: str, category: str | None, population: exp.Expr | None, focus: Filter | None, kind: Kind
) -> Planned:
    """Every entity's value beside the overall and its group's average, with ranks and percentile."""
    label = sql.label_column(work.source)
    extra = [c for c in (label, category) if c]
    rolled = entities(work, measure, population, *extra)
    group = exp.column(category, quoted=True) if category else exp.Literal.string("all")
    query = sql.template(
        """WITH e AS (SELECT *, p_group AS grp FROM p_entities),
        r AS (SELECT *, AVG(value) OVER () AS overall_average, AVG(value) OVER (PARTITION BY grp) AS group_average,
            RANK() OVER (ORDER BY value DESC) AS rank_overall, RANK() OVER (PARTITION BY grp ORDER BY value DESC)
              AS rank_in_group, COUNT(*) OVER () AS n, COUNT(*) OVER (PARTITION BY grp) AS n_group,
            PERCENT_RANK() OVER (ORDER BY value) AS percentile FROM e)
        SELECT *, ROUND(value, 2) AS value_shown, ROUND(overall_average, 2) AS average,
          ROUND(100.0 * (value - overall_average) / NULLIF(ABS(overall_average), 0), 1) AS vs_average_pct,
          ROUND(group_average, 2) AS peer_average,
          ROUND(100.0 * (value - group_average) / NULLIF(ABS(group_average), 0), 1) AS vs_peers_pct,
          ROUND(100 * percentile, 1) AS percentile_rank
        FROM r""",
        entities=rolled.subquery("entities"),
        group=group,
    )
    assert isinstance(query, exp.Select)
    shown = [exp.column("entity"), *(sql.col(c) for c in extra), exp.column("grp")]
    shown += [exp.column(c) for c in ("value_shown", "average", "vs_average_pct", "peer_average", "vs_peers_pct")]
    shown += [exp.column(c) for c in ("rank_overall", "rank_in_group", "n", "n_group", "percentile_rank")]
    outer = exp.select(*shown).from_(query.subquery("s"))
    if focus is not None:
        outer = outer.where(_focused(work, focus))
        purpose = f"{words.listing([str(v) for v in focus.values])} against the average and peers by {measure}"
    else:
        outer = outer.order_by(exp.Ordered(this=exp.column("value_shown"), desc=True)).limit(20)
        purpose = f"{words.plural(work.source.semantic_profile.entity_name)} by {measure} against the average"
    return Planned(purpose, outer, "bar", label or "entity", ["vs_average_pct"], kind.name)


def _groups(work: Work, measure: str, category: str, population: exp.Expr | None) -> Planned:
    query = sql.template(
        """WITH e AS (SELECT * FROM p_entities), o AS (SELECT AVG(value) AS overall FROM e)
        SELECT p_dim AS grp, COUNT(*) AS entities, ROUND(AVG(value), 2) AS average, ROUND(MIN(overall), 2) AS overall,
          ROUND(100.0 * (AVG(value) - MIN(overall)) / NULLIF(ABS(MIN(overall)), 0), 1) AS vs_average_pct
        FROM e CROSS JOIN o GROUP BY p_dim ORDER BY vs_average_pct DESC""",
        entities=entities(work, measure, population, category).subquery("entities"),
        dim=exp.column(category, quoted=True),
    )
    return Planned(
        f"average {measure} per {work.source.semantic_profile.entity_name} by {category} against the overall average",
        query,
        "bar",
        "grp",
        ["vs_average_pct"],
        "groups",
    )


def _best(work: Work, measure: str, category: str, population: exp.Expr | None, *, places: int = 1) -> Planned:
    label = sql.label_column(work.source)
    query = sql.template(
        """WITH e AS (SELECT *, p_dim AS grp FROM p_entities),
        r AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY grp ORDER BY value DESC) AS place,
            AVG(value) OVER (PARTITION BY grp) AS group_average, COUNT(*) OVER (PARTITION BY grp) AS n_group FROM e)
        SELECT *, ROUND(value, 2) AS best_value, ROUND(group_average, 2) AS peer_average,
          ROUND(value / NULLIF(group_average, 0), 2) AS times_average
        FROM r WHERE place <= p_places ORDER BY grp, place""",
        entities=entities(work, measure, population, *([label, category] if label else [category])).subquery("e"),
        dim=exp.column(category, quoted=True),
        places=exp.Literal.number(places),
    )
    what = (
        f"best in class by {measure} in each {category}"
        if places == 1
        else f"top {places} by {measure} in each {category}"
    )
    return Planned(what, query, "bar", "grp", ["best_value"], BEST.name)


def _history(work: Work, measure: str, population: exp.Expr | None, focus: Filter | None) -> Planned:
    """Per entity and year: the value, its percentile that year; the focus entity's rows, else the totals."""
    time_column = work.source.semantic_profile.time_column
    assert time_column is not None
    yearly = sql.panel(work.source, [measure], population, "year")
    query = sql.template(
        """WITH y AS (SELECT entity, period AS year, p_m AS value FROM p_yearly),
        r AS (SELECT *, PERCENT_RANK() OVER (PARTITION BY year ORDER BY value) AS percentile,
            COUNT(*) OVER (PARTITION BY year) AS n FROM y)
        SELECT entity, year, ROUND(value, 2) AS value, ROUND(100 * percentile, 1) AS percentile_rank, n FROM r""",
        yearly=yearly.subquery("yearly"),
        m=sql.col(measure),
    )
    assert isinstance(query, exp.Select)
    if focus is not None:
        labelled = sql.labelled(work.source, query)
        named = labelled.where(_focused(work, focus))
        return Planned(
            f"{measure} and percentile per year",
            named.order_by("year"),
            "line",
            "year",
            ["percentile_rank"],
            HISTORY.name,
        )
    totals = sql.template(
        """SELECT year, ROUND(SUM(value), 2) AS total, ROUND(AVG(value), 2) AS average, COUNT(*) AS entities
        FROM p_h GROUP BY year ORDER BY year""",
        h=query.subquery("h"),
    )
    return Planned(f"{measure} per year", totals, "bar", "year", ["total"], HISTORY.name)


def _who_compared(row: dict[str, Any]) -> str:
    return words.who({k: v for k, v in row.items() if k != "grp"})


def _standing_findings(rows: list[dict[str, Any]], entity: str, measure: str, planned: Planned) -> list[str]:
    if not rows:
        return [f"No {entity} matches the question to compare."]
    out = []
    focused = "against the average and peers" in planned.purpose
    for r in rows[: 3 if focused else 1]:
        side = "above" if (r["vs_average_pct"] or 0) >= 0 else "below"
        name = _who_compared(r)
        out.append(
            f"{name} is {abs(r['vs_average_pct'] or 0)}% {side} the average {entity} in {measure} "
            f"({words.number(r['value_shown'])} against {words.number(r['average'])}, n = {r['n']:,})"
        )
        if r.get("grp") not in (None, "all"):
            peer_side = "above" if (r["vs_peers_pct"] or 0) >= 0 else "below"
            out.append(
                f"Ranked #{r['rank_in_group']} out of {r['n_group']} {words.plural(entity)} in the {r['grp']} group, "
                f"{abs(r['vs_peers_pct'] or 0)}% {peer_side} its peers' average of {words.number(r['peer_average'])}"
            )
        out.append(f"Percentile: {r['percentile_rank']} (rank #{r['rank_overall']} of {r['n']:,} overall)")
    if not focused:
        above = sum(1 for r in rows if (r["vs_average_pct"] or 0) > 0)
        where = "above" if above == len(rows) else "around"
        out.append(f"All {len(rows)} {words.plural(entity)} shown are {where} the average")
    return out


def _group_findings(rows: list[dict[str, Any]], entity: str, measure: str) -> list[str]:
    above = [r for r in rows if (r["vs_average_pct"] or 0) > 0]
    below = [r for r in rows if (r["vs_average_pct"] or 0) < 0]
    out = []
    if above:
        out.append(
            "Above the average "
            + entity
            + ": "
            + words.listing([f"{r['grp']} ({r['vs_average_pct']:+}%)" for r in above], 6)
            + f" (average {measure} per {entity} {words.number(rows[0]['overall'])})"
        )
    if below:
        out.append("Below average: " + words.listing([f"{r['grp']} ({r['vs_average_pct']:+}%)" for r in below], 6))
    return out


def _best_findings(rows: list[dict[str, Any]], entity: str, measure: str) -> list[str]:
    out = []
    for r in rows[:12]:
        place = "Best" if r["place"] == 1 else f"#{r['place']}"
        out.append(
            f"{place} in {r['grp']}: {_who_compared(r)} with {words.number(r['best_value'])}, {r['times_average']}× "
            f"the group's average of {words.number(r['peer_average'])} (n = {r['n_group']})"
        )
    return out


def _history_findings(rows: list[dict[str, Any]], entity: str, measure: str) -> list[str]:
    if len(rows) < 2:
        return [f"Only one year of {measure} in the data: nothing to compare with."] if rows else []
    last, before = rows[-1], rows[-2]
    if "percentile_rank" in last:
        move = "improved" if last["percentile_rank"] >= before["percentile_rank"] else "fell"
        return [
            f"{_who_compared(last)}: performance {move} from the {before['percentile_rank']:.0f}th percentile in "
            f"{str(before['year'])[:4]} to the {last['percentile_rank']:.0f}th in {str(last['year'])[:4]} "
            f"({measure} {words.number(before['value'])} → {words.number(last['value'])}, n = {last['n']})"
        ]
    return [
        f"{measure.capitalize()} in {str(last['year'])[:4]}: {words.number(last['total'])}, "
        f"{words.change(float(before['total']), float(last['total']))} against {str(before['year'])[:4]} "
        f"({words.number(before['total'])}); average per {entity} {words.number(last['average'])}"
    ]
