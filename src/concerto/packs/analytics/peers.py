"""Which category makes entities peers: the one that explains the measure best.

"Spending below their peers" needs a peer group. Of the source's category columns, the
one whose groups explain most of the variance of the measure per entity (the correlation
ratio η² = between-group sum of squares / total sum of squares) is the grouping the data
itself says matters for that measure; the query computing it is reported with the others.
"""

from __future__ import annotations

from sqlglot import exp

from concerto.packs.analytics import sql
from concerto.packs.analytics._base import AnalyticsAgent, Planned, Work


async def peer_category(agent: AnalyticsAgent, work: Work, measure: str, condition: exp.Expr | None) -> str | None:
    """The question's category if it names one, else the category with the highest η² (noted)."""
    named = next((d for d in work.reading.dimensions if work.source.detected_types[d].role == "category"), None)
    categories = work.source.columns_with("category")
    if named or len(categories) < 2:
        return named or next(iter(categories), None)
    from concerto.packs.analytics.segmentation import entities

    parts = []
    for column in categories:
        parts.append(
            sql.template(
                """WITH e AS (SELECT * FROM p_entities),
                o AS (SELECT AVG(value) AS mean, VAR_POP(value) * COUNT(*) AS ss FROM e),
                g AS (SELECT COUNT(*) AS n, AVG(value) AS m FROM e GROUP BY p_c)
                SELECT p_name AS category,
                  ROUND(SUM(n * (m - mean) * (m - mean)) / NULLIF(MIN(ss), 0), 4) AS eta_squared
                FROM g CROSS JOIN o""",
                entities=entities(work, measure, condition, column).subquery("entities"),
                c=exp.column(column, quoted=True),
                name=exp.Literal.string(column),
            )
        )
    wrapped = [exp.select("*").from_(part.subquery(f"c{i}")) for i, part in enumerate(parts)]
    query: exp.Query = wrapped[0]
    for part in wrapped[1:]:
        query = exp.union(query, part, distinct=False)
    done = await agent.run_query(
        work, Planned(f"how much each category explains {measure} (η²)", query, "table", kind="peers")
    )
    if done.result is None or not done.result.data:
        return categories[0]
    best = max(done.result.data, key=lambda r: float(r["eta_squared"] or 0))
    work.reading.notes.append(
        f"peers: same {best['category']} (explains {100 * float(best['eta_squared'] or 0):.0f}% of {measure})"
    )
    return str(best["category"])
