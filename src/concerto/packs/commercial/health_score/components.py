"""The four components of `health_score`, each scored 0–100 with its reason, and how they
weigh in the overall score (see the agent's docstring for each one's scale). A component that
cannot be measured on the source raises `NotMeasurable`, which the answer says as an
unanswered part."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.drift_reading import default_features, plan_split, time_column
from concerto.packs.commercial.methods import drift as dm
from concerto.packs.commercial.methods.errors import MethodError, PeriodError
from concerto.packs.commercial.methods.model_error import model_error

if TYPE_CHECKING:
    import pandas as pd

    from concerto.packs.commercial.base.agent import Work

WEIGHTS = {"completeness": 0.30, "freshness": 0.20, "drift": 0.25, "error": 0.25}
CAP_ABOVE_WORST = 30
GRADES = ((80, "healthy"), (60, "watch"), (0, "unhealthy"))
MIN_MODEL_ROWS = 30  # per period
CADENCES = ((0.9, "intraday"), (1.5, "daily"), (8, "weekly"), (35, "monthly"), (100, "quarterly"), (1e9, "yearly"))


@dataclass
class Component:
    name: str
    score: float
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


class NotMeasurable(Exception):
    """A component that cannot be measured on this source (becomes an unanswered part)."""


@dataclass
class Overall:
    """The overall score: the weighted mean of the measured components, capped at the worst + 30."""

    score: float
    grade: str
    mean: float  # before the cap
    worst: Component
    weight: float  # the measured components' total weight (the weights are renormalised by it)

    @property
    def capped(self) -> bool:
        return self.score < round(self.mean, 1)


def overall(components: list[Component]) -> Overall:
    """The weighted mean of `components` (weights renormalised), capped at the worst one's
    score + `CAP_ABOVE_WORST`, and its grade."""
    weight = sum(WEIGHTS[c.name] for c in components)
    mean = sum(WEIGHTS[c.name] * c.score for c in components) / weight
    worst = min(components, key=lambda c: c.score)
    score = round(min(mean, worst.score + CAP_ABOVE_WORST), 1)
    grade = next(label for floor, label in GRADES if score >= floor)
    return Overall(score, grade, mean, worst, weight)


def completeness(frame: pd.DataFrame) -> Component:
    present = frame.notna().mean()
    share = float(frame.notna().to_numpy().mean())
    score = 100 * float(np.clip((share - 0.8) / 0.2, 0, 1))
    worst = present[present < 1].sort_values().head(5)
    missing = {str(c): round(1 - float(v), 4) for c, v in worst.items()}
    reason = f"{share:.2%} of cells are filled" + (
        "; most missing: " + ", ".join(f"{c} {m:.1%}" for c, m in missing.items()) if missing else "; no missing values"
    )
    return Component("completeness", score, reason, {"filled_share": round(share, 5), "worst_columns": missing})


def freshness(work: Work, frame: pd.DataFrame) -> Component:
    import pandas as pd

    given = work.given("time_column")
    column = cols.resolve(work.source, str(given), "time column") if given else time_column(work.source)
    if column is None:
        raise NotMeasurable(f"{work.source.name} has no date column, so the age of its latest data cannot be measured")
    when = pd.to_datetime(frame[column], errors="coerce")
    if getattr(when.dt, "tz", None) is not None:
        when = when.dt.tz_localize(None)
    distinct = pd.Series(when.dropna().unique()).sort_values()
    if distinct.empty:
        raise NotMeasurable(f"{column} holds no dates")
    gaps = distinct.diff().dt.total_seconds().dropna() / 86400
    spacing = max(float(gaps.median()), 1 / 24) if len(gaps) else 30.0
    cadence = next(label for limit, label in CADENCES if spacing <= limit)
    latest = distinct.iloc[-1]
    end = latest + pd.Timedelta(days=spacing)  # the latest period's end (its start + one period)
    now = pd.Timestamp(work.context.now.replace(tzinfo=None))
    lag = (now - end).total_seconds() / 86400 / spacing
    score = 100.0 if lag <= 1 else 100 * float(np.clip(1 - (lag - 1) / 3, 0, 1))
    state = "fresh" if lag <= 1 else "aging" if score > 0 else "stale"
    reason = (
        f"latest {cadence} data is for {latest.date()}; {max(lag, 0):.1f} period(s) have passed since it "
        f"ended ({state})" + (" — dated after now" if latest > now else "")
    )
    details = {"latest": str(latest.date()), "cadence": cadence, "periods_behind": round(lag, 2), "state": state}
    return Component("freshness", score, reason, details)


def _split(work: Work, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str, str, str]:
    try:
        plan = plan_split(work)
        ref, cur, ref_label, cur_label = dm.apply_split(frame, plan)
    except PeriodError as exc:
        raise NotMeasurable(f"there are no two periods to compare: {exc}") from None
    return ref, cur, ref_label, cur_label, plan.column


def drift(work: Work, frame: pd.DataFrame, rows: list[dict[str, Any]]) -> Component:
    ref, cur, ref_label, cur_label, split_column = _split(work, frame)
    numeric, category = default_features(work.source, {split_column} | ({"brand"} if work.brand else set()))
    report = dm.compare(ref, cur, numeric, category)
    if not report.features:
        raise NotMeasurable("no feature has enough values in both periods to compare")
    significant = [f.feature for f in report.of_level("significant")]
    moderate = [f.feature for f in report.of_level("moderate")]
    penalty = (len(significant) + 0.5 * len(moderate)) / len(report.features)
    score = 100 * max(0.0, 1 - 2 * penalty)
    rows.extend(f.as_dict() for f in sorted(report.features, key=lambda f: -f.psi))
    drifted = ", ".join(significant + [f"{m} (moderate)" for m in moderate])
    n = len(report.features)
    reason = (
        f"{ref_label} vs {cur_label}: "
        + (
            f"drift in {drifted} ({len(significant) + len(moderate)} of {n} features"
            if drifted
            else f"no drift in any of {n} features"
        )
        + (" (" if not drifted else "; ")
        + "PSI > 0.1 confirmed by Holm-adjusted tests)"
    )
    details = {
        "reference": ref_label,
        "current": cur_label,
        "features": len(report.features),
        "significant": significant,
        "moderate": moderate,
    }
    return Component("drift", score, reason, details)


def error(work: Work, frame: pd.DataFrame, outcome: str | None) -> Component:
    if outcome is None:
        raise NotMeasurable(
            f"no model outcome is named for {work.source.name}; give one with outcome to score a model's error"
        )
    ref, cur, ref_label, cur_label, split_column = _split(work, frame)
    ref, cur = ref[ref[outcome].notna()], cur[cur[outcome].notna()]
    if min(len(ref), len(cur)) < MIN_MODEL_ROWS:
        raise NotMeasurable(f"fewer than {MIN_MODEL_ROWS} rows with {outcome} in a period ({len(ref)}, {len(cur)})")
    if ref[outcome].nunique() < 2:
        raise NotMeasurable(f"{outcome} never varies in {ref_label}: there is nothing to predict")
    numeric, category = default_features(work.source, {split_column, outcome})
    try:
        fitted = model_error(ref, cur, outcome, numeric, category)
    except MethodError as exc:
        raise NotMeasurable(str(exc)) from None
    ratio = fitted.current_rmse / max(fitted.cv_rmse, 1e-12)
    score = 100 * float(np.clip((2 - ratio) / 0.9, 0, 1))
    reason = (
        f"ridge model of {outcome}: cross-validated RMSE {fitted.cv_rmse:.3g} on {ref_label}, "
        f"{fitted.current_rmse:.3g} on {cur_label} (×{ratio:.2f}; R² {fitted.current_r2:.2f})"
    )
    details = {"outcome": outcome, "model": "ridge regression (5-fold CV)", "ratio": round(ratio, 3)}
    details |= {k: round(v, 4) for k, v in asdict(fitted).items()}
    return Component("error", score, reason, details)
