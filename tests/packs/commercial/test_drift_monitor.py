"""drift_monitor: the planted drift (emails) is found and the stable features are not flagged;
categorical drift on a generated frame; the periods from the payload and the question; bad
input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _helpers.commercial import load_table
from concerto.agents.base import AgentFailure
from concerto.data.store import Store
from concerto.packs.commercial.base.data import truth
from concerto.packs.commercial.drift_monitor.agent import DriftMonitorAgent
from concerto.packs.commercial.methods import drift as dm


def _by_feature(output: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["feature"]: f for f in output["features"]}


async def test_planted_drift_is_flagged_and_stable_features_are_not(run_agent: Any) -> None:
    result = await run_agent(DriftMonitorAgent, "Which features drifted between the baseline and recent periods?")
    out = result.output
    planted = truth()
    features = _by_feature(out)
    for f in out["features"]:
        print(f"{f['feature']:>20} PSI {f['psi']:.4f} {f['test']} p_adj {f['p_adjusted']:.3g} {f['level']}")
    assert (out["reference_period"], out["current_period"]) == ("baseline", "recent")
    assert out["reference_rows"] == 1800 * 12 and out["current_rows"] == 1800 * 10
    for name in planted.drifted:
        assert features[name]["level"] == "significant"
        assert features[name]["psi"] > dm.PSI_SIGNIFICANT and features[name]["p_adjusted"] < 0.05
        assert name in out["significant_features"]
    for name in planted.stable:
        assert features[name]["level"] == "stable" and features[name]["psi"] < dm.PSI_MODERATE
        assert name not in out["drifted_features"]
    # Categories are compared too (chi-square), ids, dates and the period column are not.
    assert features["specialty"]["test"] == "chi2" and features["specialty"]["level"] == "stable"
    assert features["emails"]["test"] == "ks"
    assert not {"hcp_id", "month", "period"} & set(features)
    assert out["thresholds"]["multiple_testing"] == "holm"
    assert all(f["p_adjusted"] >= f["p_value"] for f in out["features"])
    assert out["status"] == "significant drift"
    assert "emails" in result.summary
    assert out["results"][0]["chart"]["type"] == "bar"


async def test_periods_from_the_question(run_agent: Any) -> None:
    since = await run_agent(DriftMonitorAgent, "Has the data drifted since January?", query_fields={"brand": "Kisqali"})
    assert since.output["current_period"] == "since 2026-01-01"
    assert "emails" in since.output["significant_features"]
    assert since.output["current_rows"] == 600 * 10  # Kisqali only
    assert not {"brand", "period"} & set(_by_feature(since.output))
    this_year = await run_agent(DriftMonitorAgent, "Has the specialty mix changed this year?")
    assert this_year.output["current_period"] == "since 2026-01-01"
    by_date = await run_agent(DriftMonitorAgent, "Has the data drifted?", time_column="month", split_date="2026-01-01")
    assert (by_date.output["reference_period"], by_date.output["current_period"]) == (
        "before 2026-01-01",
        "since 2026-01-01",
    )
    assert by_date.output["significant_features"] == ["emails"]
    quarters = await run_agent(DriftMonitorAgent, "Compare last quarter with the quarter before")
    out = quarters.output
    assert (out["reference_period"], out["current_period"]) == ("2026-05 to 2026-07", "2026-08 to 2026-10")
    assert "emails" not in out["drifted_features"]  # emails moved at the start of 2026, not within it


async def test_categorical_drift_on_a_generated_frame(run_agent: Any, store: Store, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    rows = []
    for period, mix in (("before", [0.7, 0.2, 0.1]), ("after", [0.35, 0.35, 0.3])):
        channel = rng.choice(["field", "email", "web"], size=800, p=mix)
        region = rng.choice(["North", "South"], size=800, p=[0.5, 0.5])
        spend = rng.normal(100, 15, size=800)
        rows += [f"{period},{c},{r},{s:.2f}" for c, r, s in zip(channel, region, spend, strict=True)]
    path = tmp_path / "dm_mix.csv"
    path.write_text("period,channel,region,spend\n" + "\n".join(rows) + "\n")
    load_table(store, path, "dm_mix")
    result = await run_agent(DriftMonitorAgent, "Did the channel mix change?", source="dm_mix")
    features = _by_feature(result.output)
    assert (result.output["reference_period"], result.output["current_period"]) == ("before", "after")
    assert features["channel"]["test"] == "chi2"
    assert features["channel"]["level"] == "significant" and features["channel"]["p_adjusted"] < 1e-6
    assert features["region"]["level"] == "stable" and features["spend"]["level"] == "stable"


def test_psi_on_known_shares() -> None:
    import pandas as pd

    # (0.5 − 0.25)·ln 2 + (0.5 − 0.75)·ln(2/3) over two categories
    expected = 0.25 * np.log(2) - 0.25 * np.log(2 / 3)
    assert dm.psi_shares(pd.Series(["a", "b", "b", "b"]), pd.Series(["a", "b"])) == pytest.approx(expected, rel=1e-9)
    same = np.random.default_rng(0).normal(size=5000)
    assert dm.psi_numeric(same, same) == pytest.approx(0.0, abs=1e-12)
    assert dm.level_of(0.3, 0.01) == "significant" and dm.level_of(0.3, 0.2) == "inconclusive"
    assert dm.level_of(0.15, 0.01) == "moderate" and dm.level_of(0.05, 1e-9) == "stable"


@pytest.mark.parametrize(
    ("payload", "error_type"),
    [
        ({"period_column": "period", "reference_period": "2019"}, "unknown_period"),
        ({"period_column": "period", "reference_period": "recent", "current_period": "recent"}, "single_period"),
        ({"split_date": "2030-01-01"}, "single_period"),
        ({"split_date": "soon"}, "invalid_period"),
        ({"period_column": "quarterr"}, "unknown_column"),
        ({"features": ["emails", "bogus"]}, "unknown_column"),
    ],
)
async def test_bad_periods_and_columns(run_agent: Any, payload: dict[str, Any], error_type: str) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(DriftMonitorAgent, "Has the data drifted?", **payload)
    assert failure.value.error_type == error_type
    assert failure.value.suggestion


async def test_one_period_empty_feature_and_few_rows(run_agent: Any, store: Store, tmp_path: Path) -> None:
    one = tmp_path / "dm_one.csv"
    one.write_text("period,calls\n" + "\n".join(f"2026,{i % 7}" for i in range(60)) + "\n")
    load_table(store, one, "dm_one")
    with pytest.raises(AgentFailure) as failure:
        await run_agent(DriftMonitorAgent, "Has the data drifted?", source="dm_one", period_column="period")
    assert failure.value.error_type == "single_period"
    assert "only one period" in failure.value.message

    empty = tmp_path / "dm_empty.csv"
    empty.write_text("period,calls,notes\n" + "\n".join(f"{'a' if i % 2 else 'b'},{i % 7}," for i in range(80)) + "\n")
    load_table(store, empty, "dm_empty")
    result = await run_agent(DriftMonitorAgent, "Has the data drifted?", source="dm_empty")
    assert [f["feature"] for f in result.output["features"]] == ["calls"]
    assert [u.part for u in result.unanswered] == ["drift of notes"]
    assert "no values" in result.unanswered[0].reason
    with pytest.raises(AgentFailure) as failure:
        await run_agent(DriftMonitorAgent, "Has the notes column drifted?", source="dm_empty", features="notes")
    assert failure.value.error_type == "insufficient_data"

    few = tmp_path / "dm_few.csv"
    few.write_text("period,calls\n" + "\n".join(f"{'a' if i % 2 else 'b'},{i}" for i in range(12)) + "\n")
    load_table(store, few, "dm_few")
    with pytest.raises(AgentFailure) as failure:
        await run_agent(DriftMonitorAgent, "Has the data drifted?", source="dm_few")
    assert failure.value.error_type == "insufficient_data"
    assert "fewer than 20" in failure.value.message


async def test_missing_values_are_ignored_per_feature(run_agent: Any) -> None:
    result = await run_agent(DriftMonitorAgent, "Did speaker events drift?", features="speaker_events,emails")
    features = _by_feature(result.output)
    assert features["speaker_events"]["level"] == "stable"  # ~2 % missing in both periods, same distribution
    assert features["emails"]["level"] == "significant"
