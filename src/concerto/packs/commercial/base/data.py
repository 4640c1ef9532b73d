"""The built-in commercial data set: three brands' HCPs, their monthly activity and
prescriptions, and promotion spend by territory and channel, generated the same way for a
given seed, with the effects planted in it written beside it (`Truth`).

Two sources, loaded into the data store on first use like any user file:

- `commercial` — one row per HCP and month (2025-01 … 2026-10): brand, specialty, decile,
  territory, region, month, period (`baseline` = 2025, `recent` = 2026), calls, samples,
  `increased_sampling` (0/1: the HCP got more samples than usual that month), emails,
  speaker events, new and total Rx, and the HCP's monthly Rx potential.
- `commercial_spend` — one row per territory, channel and month: spend and the new Rx
  attributed to it, on response curves with diminishing returns.

Planted, and recovered by the agents' tests:

- a causal effect of `increased_sampling` on `new_rx` that differs by specialty, confounded
  by decile (high-decile HCPs get more samples *and* write more), so the naive difference
  overstates it (`ate`, `naive_difference`, `cate_by_specialty`);
- three territories far below their potential (`gap_territories`);
- `emails` drifts in the recent period (more than doubles), the other features do not;
  `speaker_events` has about 2 % missing values;
- monthly new Rx follow a trend with a yearly season; the next six months' expected totals
  are kept out of the data (`future_new_rx`);
- each territory × channel's spend response `a · (1 − exp(−spend / b))` (`response`).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

    from concerto.agents.base import FirstUse
    from concerto.data.context import DataContext
    from concerto.data.store import Store

SEED = 20260101
HCPS_PER_BRAND = 600
MONTHS = 22  # 2025-01 … 2026-10
FIRST_MONTH = date(2025, 1, 1)
BASELINE_MONTHS = 12  # 2025: baseline; 2026: recent
FUTURE_MONTHS = 6
PANEL = "commercial"
SPEND = "commercial_spend"

BRANDS: dict[str, dict[str, float]] = {
    # brand → specialty → effect of increased sampling on monthly new Rx
    "Kisqali": {"Oncology": 3.0, "Hematology-Oncology": 1.5},
    "Fabhalta": {"Hematology": 2.0, "Nephrology": 0.8},
    "Remibrutinib": {"Dermatology": 2.5, "Allergy-Immunology": 1.0},
}
REGIONS = {"Northeast": 6, "Southeast": 6, "Central": 6, "West": 6}  # territories per region
GAP_TERRITORIES = ("T05", "T12", "T19")  # planted: about 45 % below potential (others about 10 %)
CHANNELS = ("calls", "samples", "emails", "speaker_events")
CONFOUNDERS = ("decile", "specialty")
_LOADING = threading.Lock()  # two agents of one plan (health_score, drift_monitor) ask for it at once


@dataclass
class Truth:
    """What the generator planted, computed from the same draws (per brand and overall)."""

    seed: int
    rows: int
    treatment: str = "increased_sampling"
    outcome: str = "new_rx"
    confounders: list[str] = field(default_factory=lambda: list(CONFOUNDERS))
    ate: dict[str, float] = field(default_factory=dict)  # brand (or "all") → sample average effect
    naive_difference: dict[str, float] = field(default_factory=dict)
    cate_by_specialty: dict[str, float] = field(default_factory=dict)
    gap_territories: list[str] = field(default_factory=lambda: list(GAP_TERRITORIES))
    gap_share: dict[str, float] = field(default_factory=dict)  # territory → (potential − actual) / potential
    drifted: list[str] = field(default_factory=lambda: ["emails"])
    stable: list[str] = field(default_factory=lambda: ["calls", "samples", "decile"])
    missing: dict[str, float] = field(default_factory=dict)
    future_new_rx: dict[str, float] = field(default_factory=dict)  # month → expected total new Rx (all brands)
    response: dict[str, dict[str, float]] = field(default_factory=dict)  # "T01/calls" → {a, b}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Generated:
    panel: pa.Table
    spend: pa.Table
    truth: Truth


def month(k: int) -> date:
    """The first day of the k-th month from January 2025 (k may pass the data's end)."""
    return date(FIRST_MONTH.year + (k // 12), k % 12 + 1, 1)


def _season(k: Any) -> Any:
    return 1 + 0.08 * np.sin(2 * np.pi * (k % 12) / 12)


def _trend(k: Any) -> Any:
    return 1 + 0.012 * k


def generate(seed: int = SEED, hcps_per_brand: int = HCPS_PER_BRAND, months: int = MONTHS) -> Generated:
    """The two tables and the truth. `hcps_per_brand` scales the panel (rows = 3 × it × months)."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    brand_names = list(BRANDS)
    territories = [f"T{i + 1:02d}" for i in range(sum(REGIONS.values()))]
    territory_region = np.repeat(list(REGIONS), list(REGIONS.values()))

    n = hcps_per_brand * len(brand_names)
    brand = np.repeat(np.arange(len(brand_names)), hcps_per_brand)
    first_specialty, specialty, decile, territory, effect = _hcps(rng, brand, len(territories))
    brand_base = np.array([1.0, 0.4, 0.8])[brand]
    specialty_base = np.where(first_specialty, 0.6, 0.0)

    k = np.arange(months)
    rows = n * months
    # HCP-level arrays repeated per month (HCP-major order).
    hb, hs, hd, ht, he = (np.repeat(a, months) for a in (brand, specialty, decile, territory, effect))
    hk = np.tile(k, n)
    recent = hk >= BASELINE_MONTHS

    calls = rng.poisson(1.0 + 0.35 * hd)
    samples = rng.poisson(2.0 + 0.5 * hd)
    # Treatment: more samples than usual; high-decile HCPs get it more often (the confounding).
    logit = -2.4 + 0.38 * hd + np.where(np.repeat(first_specialty, months), 0.3, 0.0)
    treated = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    samples = samples + treated * rng.poisson(4.0, size=rows)
    emails = rng.poisson(np.where(recent, 4.6, 2.0))  # planted drift
    speaker = rng.poisson(0.3, size=rows).astype(float)
    speaker[rng.random(rows) < 0.02] = np.nan  # planted missing values

    level = (0.8 + 0.9 * hd + np.repeat(brand_base + specialty_base, months)) * _trend(hk) * _season(hk)
    mean_new = level + he * treated
    new_rx = rng.poisson(mean_new)
    total_rx = new_rx + rng.poisson(1.5 * hd)
    # Potential: what an HCP of this decile could write; three territories fall far short of it.
    short = np.isin(np.array(territories)[ht], GAP_TERRITORIES)
    potential = np.round((level + 1.5 * hd + he * 0.5) / np.where(short, 0.55, 0.9), 1)

    month_dates = [month(int(i)) for i in k]
    panel = pa.table(
        {
            "hcp_id": pa.array(np.repeat([f"H{i + 1:06d}" for i in range(n)], months)),
            "brand": pa.array(np.array(brand_names)[hb]),
            "specialty": pa.array(hs),
            "decile": pa.array(hd, pa.int64()),
            "territory": pa.array(np.array(territories)[ht]),
            "region": pa.array(territory_region[ht]),
            "month": pa.array(month_dates * n, pa.date32()),
            "period": pa.array(np.where(recent, "recent", "baseline")),
            "calls": pa.array(calls, pa.int64()),
            "samples": pa.array(samples, pa.int64()),
            "increased_sampling": pa.array(treated, pa.int64()),
            "emails": pa.array(emails, pa.int64()),
            "speaker_events": pa.array(speaker, pa.float64(), mask=np.isnan(speaker)),
            "new_rx": pa.array(new_rx, pa.int64()),
            "total_rx": pa.array(total_rx, pa.int64()),
            "rx_potential": pa.array(potential, pa.float64()),
        }
    )

    truth = Truth(seed=seed, rows=rows)
    for b, name in enumerate([*brand_names, "all"]):
        rows_of = hb == b if name != "all" else np.ones(rows, bool)
        truth.ate[name] = round(float(he[rows_of].mean()), 4)
        t, y = treated[rows_of], new_rx[rows_of]
        truth.naive_difference[name] = round(float(y[t == 1].mean() - y[t == 0].mean()), 4)
    truth.cate_by_specialty = {s: e for effects in BRANDS.values() for s, e in effects.items()}
    truth.gap_share = _gap_share(territories, ht, total_rx, potential)
    truth.missing = {"speaker_events": round(float(np.isnan(speaker).mean()), 4)}
    per_hcp = 0.8 + 0.9 * decile + brand_base + specialty_base
    base_rate = 1 / (1 + np.exp(-(-2.4 + 0.38 * decile + np.where(first_specialty, 0.3, 0.0))))
    truth.future_new_rx = _future_new_rx(per_hcp, effect * base_rate, months)

    spend, truth.response = _spend(rng, territories, territory_region, k)
    return Generated(panel=panel, spend=spend, truth=truth)


def _hcps(rng: Any, brand: Any, territories: int) -> tuple[Any, Any, Any, Any, Any]:
    """Each HCP's specialty (whether the brand's first, and its name), decile, territory and the
    effect of increased sampling on its new Rx (its specialty's)."""
    brand_names = list(BRANDS)
    first_specialty = rng.random(len(brand)) < 0.6
    specialty = np.array(
        [list(BRANDS[brand_names[b]])[0 if first else 1] for b, first in zip(brand, first_specialty, strict=True)]
    )
    decile = rng.integers(1, 11, size=len(brand))
    territory = rng.integers(0, territories, size=len(brand))
    effect = np.array([BRANDS[brand_names[b]][s] for b, s in zip(brand, specialty, strict=True)])
    return first_specialty, specialty, decile, territory, effect


def _gap_share(territories: list[str], territory: Any, actual: Any, potential: Any) -> dict[str, float]:
    """Each territory's (potential − actual) / potential, rows summed by `territory` (codes)."""
    actual_by_t = np.bincount(territory, weights=actual, minlength=len(territories))
    potential_by_t = np.bincount(territory, weights=potential, minlength=len(territories))
    return {
        t: round(float((potential_by_t[i] - actual_by_t[i]) / potential_by_t[i]), 4) for i, t in enumerate(territories)
    }


def _future_new_rx(per_hcp: Any, sampling_lift: Any, months: int) -> dict[str, float]:
    """The expected total new Rx of the `FUTURE_MONTHS` after the data: each HCP's level on the
    trend and season, plus the effect of sampling at its usual rate (`sampling_lift`)."""
    future: dict[str, float] = {}
    for f in np.arange(months, months + FUTURE_MONTHS):
        expected = (per_hcp * _trend(f) * _season(f) + sampling_lift).sum()
        future[month(int(f)).isoformat()] = round(float(expected), 1)
    return future


def _spend(rng: Any, territories: list[str], regions: Any, k: np.ndarray) -> tuple[pa.Table, dict[str, Any]]:
    """Monthly spend per territory and channel around a current plan, and the new Rx it
    brought on `a · (1 − exp(−spend / b))` plus noise: channels differ in ceiling `a` and in
    how fast they saturate `b`, so equal splits are far from the best."""
    import pyarrow as pa

    ceiling = {"calls": 60.0, "samples": 45.0, "emails": 12.0, "speaker_events": 30.0}
    scale = {"calls": 9000.0, "samples": 6000.0, "emails": 2500.0, "speaker_events": 15000.0}
    current = {"calls": 9000.0, "samples": 4000.0, "emails": 3000.0, "speaker_events": 4000.0}
    response: dict[str, dict[str, float]] = {}
    columns: dict[str, list[Any]] = {c: [] for c in ("territory", "region", "channel", "month", "spend", "new_rx")}
    for i, t in enumerate(territories):
        size = rng.uniform(0.6, 1.6)
        for channel in CHANNELS:
            a = round(ceiling[channel] * size * rng.uniform(0.8, 1.2), 2)
            b = round(scale[channel] * rng.uniform(0.8, 1.2), 1)
            response[f"{t}/{channel}"] = {"a": a, "b": b}
            spend = np.round(current[channel] * size * rng.uniform(0.4, 1.8, size=len(k)), 0)
            rx = np.maximum(a * (1 - np.exp(-spend / b)) + rng.normal(0, 0.04 * a, size=len(k)), 0)
            columns["territory"] += [t] * len(k)
            columns["region"] += [str(regions[i])] * len(k)
            columns["channel"] += [channel] * len(k)
            columns["month"] += [month(int(j)) for j in k]
            columns["spend"] += spend.tolist()
            columns["new_rx"] += np.round(rx, 2).tolist()
    table = pa.table(
        {
            "territory": pa.array(columns["territory"]),
            "region": pa.array(columns["region"]),
            "channel": pa.array(columns["channel"]),
            "month": pa.array(columns["month"], pa.date32()),
            "spend": pa.array(columns["spend"], pa.float64()),
            "new_rx": pa.array(columns["new_rx"], pa.float64()),
        }
    )
    return table, response


PROFILES: dict[str, dict[str, Any]] = {
    PANEL: {
        "domain": "pharmaceutical commercial analytics",
        "entity_name": "HCP",
        "entity_key": "hcp_id",
        "time_column": "month",
        "field_descriptions": {
            "hcp_id": "HCP id: the health-care professional's id",
            "brand": "brand: the product (Kisqali, Fabhalta, Remibrutinib)",
            "specialty": "specialty: the HCP's medical specialty",
            "decile": "decile: the HCP's prescribing-volume decile, 1 (lowest) to 10 (highest)",
            "territory": "territory: the sales territory (T01 … T24)",
            "region": "region: the sales region (Northeast, Southeast, Central, West)",
            "month": "month: the month the figures are for (first day of the month)",
            "period": "period: baseline (2025) or recent (2026)",
            "calls": "calls: sales-rep calls (details) to the HCP in the month",
            "samples": "samples: product samples given to the HCP in the month",
            "increased_sampling": "increased sampling: 1 when the HCP got more samples than usual that month",
            "emails": "emails: marketing emails sent to the HCP in the month",
            "speaker_events": "speaker events: speaker programs the HCP attended in the month",
            "new_rx": "new Rx: new prescriptions the HCP wrote in the month",
            "total_rx": "total Rx: all prescriptions (new and refills) the HCP wrote in the month",
            "rx_potential": "Rx potential: the prescriptions the HCP could write in a month (market potential)",
        },
    },
    SPEND: {
        "domain": "pharmaceutical promotion spend",
        "entity_name": "territory channel",
        "entity_key": "territory",
        "time_column": "month",
        "field_descriptions": {
            "territory": "territory: the sales territory (T01 … T24)",
            "region": "region: the sales region",
            "channel": "channel: promotion channel (calls, samples, emails, speaker_events)",
            "month": "month: the month the figures are for",
            "spend": "spend: promotion budget spent in the month, in dollars",
            "new_rx": "new Rx: new prescriptions attributed to the channel's promotion in the month",
        },
    },
}


def truth(seed: int = SEED) -> Truth:
    """The facts planted in the built-in data set of `seed`."""
    return generate(seed).truth


PREPARE_SECONDS = {PANEL: 3.0, SPEND: 1.0}  # generating and loading each on an idle 2-core machine


def first_use(store: Store, name: str = PANEL) -> FirstUse | None:
    """Loading the built-in source `name`, when it is not loaded yet (`Agent.first_use`)."""
    from concerto.agents.base import FirstUse

    if any(c.name == name for c in store.contexts()):
        return None
    title = "the commercial data set" if name == PANEL else "the commercial spend data set"
    return FirstUse(f"commercial.{name}", title, PREPARE_SECONDS[name], lambda: load_commercial(store, name))


def load_commercial(store: Store, name: str = PANEL) -> DataContext:
    """The built-in source `name` (`commercial` or `commercial_spend`), loaded on first use."""
    from concerto.data.store import SourceError

    if name not in PROFILES:
        raise SourceError(f"no built-in commercial source '{name}'")
    with _LOADING:
        known = {c.name: c for c in store.contexts()}
        if name in known:
            return known[name]
        return _load(store, name)


def _load(store: Store, name: str) -> DataContext:
    import tempfile
    from pathlib import Path

    import pyarrow.parquet as pq

    from concerto.data.context import ProfileOverrides

    made = generate()
    table = made.panel if name == PANEL else made.spend
    with tempfile.TemporaryDirectory(prefix="concerto-commercial-") as tmp:
        path = Path(tmp) / f"{name}.parquet"
        pq.write_table(table, path)
        overrides = ProfileOverrides.model_validate(PROFILES[name])
        context = store.load(path, name, overrides=overrides)
    context.built_in = "commercial"
    store.save_context(context)
    return context
