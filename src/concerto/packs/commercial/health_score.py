"""health_score: a 0–100 score for the health of a source and of a model fitted on it, from
four components, each scored 0–100 with its reason:

- completeness (weight 0.30): the share of non-null cells, scored linearly from 80 % (0) to
  100 % (100); the columns with the most missing values are listed.
- freshness (0.20): how many of the data's periods (its cadence: daily, weekly, monthly …,
  from the spacing of its dates) have passed between the end of the latest period and now;
  up to one period is fresh (100; monthly data one month behind is on time), then 0 at four.
- drift (0.25): the share of features with drift between two periods (`drift_methods`, the
  same split and tests as `drift_monitor`): 100 × (1 − 2 × (significant + ½ moderate) / features),
  so drift in half the features scores 0.
- error (0.25): a simple model's out-of-sample error — a ridge regression of the outcome
  (payload `outcome`; `new_rx` on the built-in data) on the other features, its RMSE
  cross-validated (5 folds) on the earlier period and then measured on the later one; the
  ratio later / cross-validated is 100 up to 1.1 and 0 from 2 (the model no longer holds).

Overall: the weighted mean of the components that could be measured (weights renormalised),
capped at the worst component + 30 so that one failing part is not hidden by healthy ones;
grade healthy (≥ 80), watch (60–80) or unhealthy (< 60). A component that cannot be measured
(no date column, one period only, no outcome) is an unanswered part, not a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial import columns as cols
from concerto.packs.commercial import drift_methods as dm
from concerto.packs.commercial._base import Answer, CommercialAgent, Table, Work, invalid

if TYPE_CHECKING:
    import pandas as pd

WEIGHTS = {"completeness": 0.30, "freshness": 0.20, "drift": 0.25, "error": 0.25}
CAP_ABOVE_WORST = 30
GRADES = ((80, "healthy"), (60, "watch"), (0, "unhealthy"))
DEFAULT_OUTCOME = "new_rx"
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


class HealthScoreAgent(CommercialAgent):
    """Data and model health: completeness, freshness, drift and error, scored 0-100."""

    info = AgentInfo(
        name="health_score",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Scores the health of the data and of a model on it from 0 to 100: completeness (missing "
            "values), freshness (how recent the latest data is), drift between periods and a model's "
            "out-of-sample error, each component with its reason, and an overall grade."
        ),
        capabilities=[
            "Overall data and model health score (0-100) with a healthy / watch / unhealthy grade",
            "Completeness: share of missing values per column, worst columns listed",
            "Freshness: age of the latest data against its cadence",
            "Drift: share of features whose distribution shifted between periods",
            "Model error: out-of-sample error of a simple model on the latest period",
        ],
        inputs={
            "outcome": "The column a model predicts, for the error component (default: new_rx)",
            "period_column": "Periods to compare for drift and error (default: period / the time column)",
            "time_column": "The date column for freshness (default: the source's)",
        },
        outputs={
            "health_score": "0-100",
            "grade": "healthy, watch or unhealthy",
            "components": "completeness, freshness, drift and error: score, weight and reason",
        },
        examples=[
            "How healthy is our data?",
            "Give me a data quality score for the Kisqali data",
            "Is the prescription model still healthy?",
            "Check the system health",
            "How fresh and complete is the commercial data set?",
            "Are there missing values we should worry about?",
            "Is our data up to date?",
            "Run a health check on the Fabhalta data and model",
            "What is the data health score this month?",
            "Can we still trust the new Rx model?",
        ],
        default_timeout_ms=5000,
    )

    def analyse(self, work: Work) -> Answer:
        source = work.source
        frame = work.frame(list(source.columns), dropna=False)
        if frame.empty:
            raise invalid(
                f"{source.name} has no rows" + (f" for {work.brand}" if work.brand else ""),
                "Choose another source or brand.",
                error_type="insufficient_data",
            )
        outcome = self._outcome(work)
        components: list[Component] = [self._completeness(frame)]
        unanswered: list[Unanswered] = []
        drift_rows: list[dict[str, Any]] = []
        for name, measure, suggestion in (
            ("freshness", lambda: self._freshness(work, frame), "Name the date column with time_column."),
            (
                "drift",
                lambda: self._drift(work, frame, drift_rows),
                "Name a period_column with two values, or a time_column with a split_date.",
            ),
            (
                "error",
                lambda: self._error(work, frame, outcome),
                "Name the model's outcome with outcome, and a period_column or time_column to split on.",
            ),
        ):
            try:
                components.append(measure())
            except NotMeasurable as exc:
                unanswered.append(
                    Unanswered(
                        part=f"{name} of the data" if name != "error" else "model error",
                        reason=str(exc),
                        error_type="not_measurable",
                        suggestion=suggestion,
                    )
                )
        return self._answer(work, components, unanswered, drift_rows)

    def _outcome(self, work: Work) -> str | None:
        if work.given("outcome") is not None:
            column = cols.resolve(work.source, str(work.given("outcome")), "outcome")
            return cols.numeric(work.source, column, "outcome")
        return DEFAULT_OUTCOME if DEFAULT_OUTCOME in work.source.detected_types else None

    # --- components ---------------------------------------------------------------------------

    @staticmethod
    def _completeness(frame: pd.DataFrame) -> Component:
        present = frame.notna().mean()
        share = float(frame.notna().to_numpy().mean())
        score = 100 * float(np.clip((share - 0.8) / 0.2, 0, 1))
        worst = present[present < 1].sort_values().head(5)
        missing = {str(c): round(1 - float(v), 4) for c, v in worst.items()}
        reason = f"{share:.2%} of cells are filled" + (
            "; most missing: " + ", ".join(f"{c} {m:.1%}" for c, m in missing.items())
            if missing
            else "; no missing values"
        )
        return Component("completeness", score, reason, {"filled_share": round(share, 5), "worst_columns": missing})

    @staticmethod
    def _freshness(work: Work, frame: pd.DataFrame) -> Component:
        import pandas as pd

        given = work.given("time_column")
        column = cols.resolve(work.source, str(given), "time column") if given else dm.time_column(work.source)
        if column is None:
            raise NotMeasurable(
                f"{work.source.name} has no date column, so the age of its latest data cannot be measured"
            )
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

    @staticmethod
    def _split(work: Work, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str, str, str]:
        try:
            plan = dm.plan_split(work.source, work.request, work.payload)
            ref, cur, ref_label, cur_label = dm.apply_split(frame, plan)
        except dm.SplitError as exc:
            raise NotMeasurable(f"there are no two periods to compare: {exc}") from None
        return ref, cur, ref_label, cur_label, plan.column

    def _drift(self, work: Work, frame: pd.DataFrame, rows: list[dict[str, Any]]) -> Component:
        ref, cur, ref_label, cur_label, split_column = self._split(work, frame)
        numeric, category = dm.default_features(work.source, {split_column} | ({"brand"} if work.brand else set()))
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

    def _error(self, work: Work, frame: pd.DataFrame, outcome: str | None) -> Component:
        if outcome is None:
            raise NotMeasurable(
                f"no model outcome is named for {work.source.name}; give one with outcome to score a model's error"
            )
        ref, cur, ref_label, cur_label, split_column = self._split(work, frame)
        ref, cur = ref[ref[outcome].notna()], cur[cur[outcome].notna()]
        if min(len(ref), len(cur)) < MIN_MODEL_ROWS:
            raise NotMeasurable(f"fewer than {MIN_MODEL_ROWS} rows with {outcome} in a period ({len(ref)}, {len(cur)})")
        if ref[outcome].nunique() < 2:
            raise NotMeasurable(f"{outcome} never varies in {ref_label}: there is nothing to predict")
        numeric, category = dm.default_features(work.source, {split_column, outcome})
        fitted = _model_error(ref, cur, outcome, numeric, category)
        ratio = fitted["current_rmse"] / max(fitted["cv_rmse"], 1e-12)
        score = 100 * float(np.clip((2 - ratio) / 0.9, 0, 1))
        reason = (
            f"ridge model of {outcome}: cross-validated RMSE {fitted['cv_rmse']:.3g} on {ref_label}, "
            f"{fitted['current_rmse']:.3g} on {cur_label} (×{ratio:.2f}; R² {fitted['current_r2']:.2f})"
        )
        details = {"outcome": outcome, "model": "ridge regression (5-fold CV)", "ratio": round(ratio, 3)}
        details |= {k: round(v, 4) for k, v in fitted.items()}
        return Component("error", score, reason, details)

    # --- the answer ---------------------------------------------------------------------------

    def _answer(
        self, work: Work, components: list[Component], unanswered: list[Unanswered], drift_rows: list[dict[str, Any]]
    ) -> Answer:
        weight = sum(WEIGHTS[c.name] for c in components)
        mean = sum(WEIGHTS[c.name] * c.score for c in components) / weight
        worst = min(components, key=lambda c: c.score)
        overall = round(min(mean, worst.score + CAP_ABOVE_WORST), 1)
        grade = next(label for floor, label in GRADES if overall >= floor)
        capped = overall < round(mean, 1)
        parts = {
            c.name: {
                "score": round(c.score, 1),
                "weight": WEIGHTS[c.name],
                "effective_weight": round(WEIGHTS[c.name] / weight, 3),
                "reason": c.reason,
                **c.details,
            }
            for c in components
        }
        scope = f"{work.source.name}" + (f" ({work.brand})" if work.brand else "")
        summary = (
            f"Health of {scope}: {overall:.0f}/100 ({grade}); "
            + ", ".join(f"{c.name} {c.score:.0f}" for c in components)
            + (f"; not measured: {', '.join(u.part for u in unanswered)}" if unanswered else "")
            + "."
        )
        findings = [f"{c.name.capitalize()} {c.score:.0f}/100: {c.reason}" for c in components]
        if capped:
            findings.append(f"The score is capped at {worst.name} + {CAP_ABOVE_WORST} points ({worst.score:.0f}).")
        advice = {
            "completeness": "Fill or explain the missing values in the worst columns before modelling on them.",
            "freshness": "Load the latest periods: the data is behind its usual cadence.",
            "drift": "Check the drifted features and retrain models that use them.",
            "error": "Retrain or recalibrate the model: it predicts the latest period worse than validated.",
        }
        recommendations = [advice[c.name] for c in components if c.score < 80]
        scores = [{"component": k, "score": v["score"], "weight": v["weight"]} for k, v in parts.items()]
        tables = [Table("Health components", scores, "bar", "component", ["score"])]
        if drift_rows:
            tables.append(Table("Drift per feature", drift_rows))
        return Answer(
            payload={
                "health_score": overall,
                "grade": grade,
                "components": parts,
                "weights": WEIGHTS,
                "not_measured": [u.part for u in unanswered],
                "method": (
                    "weighted mean of the measured components (weights renormalised), capped at the worst "
                    f"component + {CAP_ABOVE_WORST}; grades: healthy ≥ 80, watch 60-80, unhealthy < 60"
                ),
                "interpretation": summary,
            },
            summary=summary,
            key_findings=findings,
            recommendations=recommendations,
            follow_ups=["Which features drifted?", "Forecast new Rx for the next 6 months"],
            requires_further_analysis=grade != "healthy",
            tables=tables,
            unanswered=unanswered,
            entities={"health_grade": grade},
        )


def _model_error(
    ref: pd.DataFrame, cur: pd.DataFrame, outcome: str, numeric: list[str], category: list[str]
) -> dict[str, float]:
    """Ridge regression of `outcome` on the features (numbers standardised, missing ones set
    to the reference median; categories one-hot, missing as a category of its own): 5-fold CV
    RMSE on `ref`, then fitted on all of `ref` and scored on `cur` (RMSE and R²)."""
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold, cross_val_predict
    from threadpoolctl import ThreadpoolController

    numeric = [c for c in numeric if ref[c].notna().any()]
    category = [c for c in category if ref[c].notna().any()]
    if not numeric and not category:
        raise NotMeasurable(f"no feature to predict {outcome} from")
    x_ref, x_cur = _design(ref, cur, numeric, category)
    y_ref, y_cur = ref[outcome].to_numpy(dtype=float), cur[outcome].to_numpy(dtype=float)
    model = Ridge(alpha=1.0)
    with ThreadpoolController().limit(limits=1, user_api="blas"):  # narrow matrices: threads only cost
        cv_pred = cross_val_predict(model, x_ref, y_ref, cv=KFold(n_splits=5, shuffle=True, random_state=0))
        predicted = model.fit(x_ref, y_ref).predict(x_cur)
    return {
        "cv_rmse": float(np.sqrt(np.mean((cv_pred - y_ref) ** 2))),
        "cv_r2": float(r2_score(y_ref, cv_pred)),
        "current_rmse": float(np.sqrt(np.mean((predicted - y_cur) ** 2))),
        "current_r2": float(r2_score(y_cur, predicted)),
    }


def _design(
    ref: pd.DataFrame, cur: pd.DataFrame, numeric: list[str], category: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The model matrices of both periods, with the reference period's medians, scales and
    categories (its 30 most common per column; others and missing values get their own columns)."""
    import pandas as pd

    blocks_ref, blocks_cur = [], []
    for c in numeric:
        r, k = pd.to_numeric(ref[c], errors="coerce"), pd.to_numeric(cur[c], errors="coerce")
        median, spread = float(r.median()), float(r.std())
        scale = spread if np.isfinite(spread) and spread > 0 else 1.0
        blocks_ref.append(((r.fillna(median) - median) / scale).to_numpy(dtype=float)[:, None])
        blocks_cur.append(((k.fillna(median) - median) / scale).to_numpy(dtype=float)[:, None])
    for c in category:
        r, k = ref[c].astype("string").fillna("(missing)"), cur[c].astype("string").fillna("(missing)")
        keep = list(r.value_counts().index[:30])
        levels = pd.CategoricalDtype([*keep, "(other)"])
        for part, out in ((r, blocks_ref), (k, blocks_cur)):
            coded = part.where(part.isin(keep), "(other)").astype(levels).cat.codes.to_numpy()
            out.append(np.eye(len(levels.categories))[coded][:, 1:])  # first level as the baseline
    return np.hstack(blocks_ref), np.hstack(blocks_cur)
