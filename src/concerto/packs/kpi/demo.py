"""Demo KPI data: 7 departments x 8 KPIs x every month 2023-01..2026-12, generated.

Deterministic (seeded by name), so every install and every test sees the same values.
Each series has a level, a slow trend, a yearly season and small noise; notes come from
a few templates so that their embeddings are computed once (see store.py).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from concerto.packs.kpi.months import Month, month_range
from concerto.packs.kpi.records import KPIRecord

FIRST = Month(2023, 1)
LAST = Month(2026, 12)


@dataclass(frozen=True, slots=True)
class KPIDef:
    """A KPI: its unit, typical level, and a description the name matcher embeds."""

    name: str
    unit: str
    level: float
    spread: float
    description: str
    decimals: int = 1
    floor: float = 0.0
    ceiling: float | None = None
    drift: float = 0.012
    better: str = "higher"  # which way is good: "best" and "worst" in a question depend on it


KPIS: tuple[KPIDef, ...] = (
    KPIDef(
        "attrition-rate",
        "%",
        3.0,
        0.35,
        "attrition rate: employee turnover, staff leaving, resignations, people quitting",
        ceiling=100,
        better="lower",
    ),
    KPIDef(
        "headcount",
        "employees",
        250,
        0.4,
        "headcount: number of employees, how many people work there, staff size, FTE, team size",
        decimals=0,
    ),
    KPIDef(
        "revenue",
        "kUSD",
        1200,
        0.5,
        "revenue: income, sales, turnover in money, earnings in thousands of dollars",
    ),
    KPIDef(
        "operating-cost",
        "kUSD",
        700,
        0.4,
        "operating cost: expenses, spending, costs, opex in thousands of dollars",
        better="lower",
    ),
    KPIDef(
        "customer-satisfaction",
        "points",
        78,
        0.08,
        "customer satisfaction score: CSAT, how happy customers are, survey score out of 100",
        ceiling=100,
        drift=0.002,
    ),
    KPIDef(
        "net-promoter-score",
        "points",
        32,
        0.3,
        "net promoter score: NPS, customer loyalty, likelihood to recommend",
        floor=-100,
        ceiling=100,
    ),
    KPIDef(
        "average-handling-time",
        "minutes",
        9,
        0.25,
        "average handling time: AHT, time to serve a customer, call duration, processing time",
        drift=0.006,
        better="lower",
    ),
    KPIDef(
        "absenteeism-rate",
        "%",
        2.5,
        0.3,
        "absenteeism rate: sick days, employees absent from work, unplanned absence",
        ceiling=100,
        better="lower",
    ),
)

DEPARTMENTS: dict[str, str] = {
    "home-loan": "home loans: mortgage lending, home loan team, house purchase financing",
    "credit-card": "credit cards: card issuing, credit card team, card payments",
    "personal-loan": "personal loans: consumer lending, unsecured loans team",
    "retail-banking": "retail banking: branches, current accounts, everyday banking",
    "wealth-management": "wealth management: investments, private banking, advisers",
    "customer-service": "customer service: contact centre, call centre, support team",
    "it-operations": "IT operations: technology, infrastructure, systems and support engineers",
}

_NOTES = {
    "up": (
        "Increase after a seasonal peak.",
        "Rising with new product launch.",
        "Up on higher volumes.",
    ),
    "down": (
        "Decrease after process improvements.",
        "Lower following a quieter month.",
        "Down on seasonal slowdown.",
    ),
    "flat": (
        "Stable month, no unusual events.",
        "In line with plan.",
        "Steady compared with last month.",
    ),
}


def _series(kpi: KPIDef, department: str) -> list[KPIRecord]:
    rng = random.Random(f"concerto-kpi|{kpi.name}|{department}")
    level = kpi.level * rng.uniform(1 - kpi.spread, 1 + kpi.spread)
    trend = rng.uniform(-kpi.drift, kpi.drift * 1.2)  # relative change per month
    season = rng.uniform(0.01, 0.06)
    phase = rng.uniform(0, 2 * math.pi)
    records: list[KPIRecord] = []
    previous: float | None = None
    for i, month in enumerate(month_range(FIRST, LAST)):
        raw = level * (1 + trend) ** i * (1 + season * math.sin(2 * math.pi * month.month / 12 + phase))
        raw *= 1 + rng.gauss(0, 0.015)
        raw = max(kpi.floor, raw if kpi.ceiling is None else min(kpi.ceiling, raw))
        value = round(raw, kpi.decimals)
        if previous is None or abs(value - previous) <= 0.01 * abs(previous):
            mood = "flat"
        else:
            mood = "up" if value > previous else "down"
        records.append(
            KPIRecord(
                kpi=kpi.name,
                department=department,
                month=month,
                value=value,
                unit=kpi.unit,
                notes=rng.choice(_NOTES[mood]),
            )
        )
        previous = value
    return records


def demo_records() -> list[KPIRecord]:
    """Every demo record, ordered by KPI, department and month."""
    return [r for kpi in KPIS for dept in DEPARTMENTS for r in _series(kpi, dept)]


ALIASES: dict[tuple[str, str], tuple[str, ...]] = {
    ("kpi", "attrition-rate"): ("attrition", "turnover rate"),
    ("kpi", "headcount"): ("head count", "fte"),
    ("kpi", "customer-satisfaction"): ("csat",),
    ("kpi", "net-promoter-score"): ("nps",),
    ("kpi", "average-handling-time"): ("aht", "handling time"),
    ("kpi", "absenteeism-rate"): ("absenteeism", "absence rate"),
    ("department", "home-loan"): ("mortgage", "mortgages"),
    ("department", "retail-banking"): ("branches", "branch network"),
    ("department", "customer-service"): ("contact centre", "call centre", "call center"),
}


def descriptions() -> dict[tuple[str, str], str]:
    """(kind, name) → text the name matcher embeds, for the demo KPIs and departments."""
    out = {("kpi", k.name): k.description for k in KPIS}
    out.update({("department", name): text for name, text in DEPARTMENTS.items()})
    return out


def better_direction(kpi: str) -> str | None:
    """ "higher" or "lower" for a demo KPI (which way is good); None for a KPI loaded by a user."""
    return next((k.better for k in KPIS if k.name == kpi), None)
