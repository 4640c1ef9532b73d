"""The statistics behind `gap_analyzer`: potential against actual by segment with bootstrap
intervals, and a change between two periods split into volume, mix and rate effects.

Gap. A segment's gap is Σ potential − Σ actual over its rows; its gap share is the gap over
Σ potential (a ratio estimator) and its share of the total gap is its gap over the sum of
all segments' gaps. The intervals come from a cluster bootstrap: the resampled unit is the
entity (an HCP, whose months are correlated; its rows in each segment), or the row when the
source names no entity. Each replicate's sums per segment are one sparse matrix product of
the units' totals with their resampling counts.

Change. Each period's outcome is written Y = Σ_s N · w_s · r_s, with N the volume (rows,
e.g. HCP-months, per month when the periods have a time column), w_s = N_s / N the
segment's share of it (mix) and r_s = Y_s / N_s its outcome per unit (rate). The change
Y₁ − Y₀ is split by the Shapley value of the three factors, term by term: for a product
x·y·z the effect of x is Δx · [(y₀z₀ + y₁z₁)/3 + (y₀z₁ + y₁z₀)/6], and likewise for y and z;
the three effects add up to the change exactly (no residual, no order dependence). A
segment present in one period only has no rate in the other; it is given the rate it has
in the period where it exists, so its appearance or disappearance counts as mix (and
volume), never as a rate change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from concerto.packs.commercial.methods.errors import PeriodError

BOOTSTRAP = 500
SEED = 16
MAX_UNITS = 50_000
_BATCH_CELLS = 4_000_000  # replicates × units per batch of the bootstrap


def _codes(values: pd.Series) -> tuple[np.ndarray, list[Any]]:
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64), list(uniques)


def bootstrap_sums(
    unit: np.ndarray, cell: np.ndarray, values: list[np.ndarray], n_cells: int, replicates: int, seed: int
) -> list[np.ndarray]:
    """Per value array, a (replicates × n_cells) array of its sums per cell, each replicate
    drawing the resampling units (`unit` codes) with replacement, as many as there are."""
    from scipy import sparse

    n_units = int(unit.max()) + 1 if len(unit) else 0
    matrices = [
        sparse.csr_matrix((v.astype(float), (unit, cell)), shape=(n_units, n_cells)) for v in values
    ]  # duplicates are summed: the unit's total per cell
    rng = np.random.default_rng(seed)
    out = [np.empty((replicates, n_cells)) for _ in values]
    batch = max(1, min(replicates, _BATCH_CELLS // max(n_units, 1)))
    for start in range(0, replicates, batch):
        stop = min(replicates, start + batch)
        size = stop - start
        drawn = rng.integers(0, n_units, size=(size, n_units)) + (np.arange(size) * n_units)[:, None]
        weights = np.bincount(drawn.ravel(), minlength=size * n_units).reshape(size, n_units).astype(float)
        for o, m in zip(out, matrices, strict=True):
            o[start:stop] = np.asarray((m.T @ weights.T).T)
    return out


def row_units(rows: int, seed: int) -> np.ndarray:
    """Resampling units when rows are independent: each row, or past `MAX_UNITS` rows random
    blocks of rows (resampling random blocks of independent rows is still a valid bootstrap,
    and keeps a million rows' bootstrap to a second)."""
    if rows <= MAX_UNITS:
        return np.arange(rows, dtype=np.int64)
    return np.random.default_rng(seed).integers(0, MAX_UNITS, size=rows)


def interval(draws: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column, ignoring replicates where the statistic is undefined."""
    tail = (1 - level) / 2 * 100
    with np.errstate(all="ignore"):
        lo = np.nanpercentile(draws, tail, axis=0)
        hi = np.nanpercentile(draws, 100 - tail, axis=0)
    return lo, hi


@dataclass
class Gaps:
    """Potential against actual per segment, sorted by absolute gap (largest first)."""

    table: pd.DataFrame  # segment, rows, units, actual, potential, gap, gap_share(+ci), share_of_total_gap(+ci)
    total_actual: float
    total_potential: float
    top_k: int
    top_segments: list[str]  # the top-k segments by gap share
    top_gap_share: tuple[float, float, float]  # their pooled gap share (estimate, 95 % low, high)
    top_share_of_total: tuple[float, float, float]  # their share of the total gap (estimate, low, high)
    top_stability: float  # share of replicates whose top-k set (by gap share) equals the estimate's
    replicates: int

    @property
    def total_gap(self) -> float:
        return self.total_potential - self.total_actual


def gaps(
    frame: pd.DataFrame,
    segment: str,
    actual: str,
    potential: str,
    cluster: str | None,
    *,
    top_k: int = 3,
    replicates: int = BOOTSTRAP,
    seed: int = SEED,
) -> Gaps:
    """The gap table of `frame` by `segment`, with 95 % cluster-bootstrap intervals."""
    seg_codes, segments = _codes(frame[segment])
    n_seg = len(segments)
    if cluster is not None:
        unit, _ = _codes(pd.Series(_codes(frame[cluster])[0] * n_seg + seg_codes))
    else:
        unit = row_units(len(frame), seed)
    a = frame[actual].to_numpy(dtype=float)
    p = frame[potential].to_numpy(dtype=float)
    sum_a = np.bincount(seg_codes, weights=a, minlength=n_seg)
    sum_p = np.bincount(seg_codes, weights=p, minlength=n_seg)
    rows = np.bincount(seg_codes, minlength=n_seg)
    units = pd.Series(unit).groupby(seg_codes).nunique().reindex(range(n_seg), fill_value=0).to_numpy()
    gap = sum_p - sum_a
    with np.errstate(all="ignore"):
        share = np.where(sum_p != 0, gap / sum_p, np.nan)
    total_gap = gap.sum()
    of_total = gap / total_gap if total_gap != 0 else np.full(n_seg, np.nan)

    boot_a, boot_p = bootstrap_sums(unit, seg_codes, [a, p], n_seg, replicates, seed)
    boot_gap = boot_p - boot_a
    with np.errstate(all="ignore"):
        boot_share = np.where(boot_p != 0, boot_gap / boot_p, np.nan)
        totals = boot_gap.sum(axis=1, keepdims=True)
        boot_of_total = np.where(totals != 0, boot_gap / totals, np.nan)
    share_lo, share_hi = interval(boot_share)
    total_lo, total_hi = interval(boot_of_total)

    k = min(top_k, n_seg)
    ranked = np.argsort(-np.nan_to_num(share, nan=-np.inf), kind="stable")[:k]
    wanted = set(ranked.tolist())
    tops = np.argsort(-np.nan_to_num(boot_share, nan=-np.inf), axis=1, kind="stable")[:, :k]
    stability = float(np.mean([set(row.tolist()) == wanted for row in tops])) if k else 1.0
    top_gap_share, top_of_total = _top_set(ranked, (sum_a, sum_p), (boot_a, boot_p), totals[:, 0], total_gap)

    table = pd.DataFrame(
        {
            "segment": [str(s) for s in segments],
            "rows": rows,
            "units": units,
            "actual": sum_a,
            "potential": sum_p,
            "gap": gap,
            "gap_share": share,
            "gap_share_low": share_lo,
            "gap_share_high": share_hi,
            "share_of_total_gap": of_total,
            "share_of_total_gap_low": total_lo,
            "share_of_total_gap_high": total_hi,
        }
    )
    table["rank_by_gap_share"] = table["gap_share"].rank(ascending=False, method="first").astype(int)
    table = table.sort_values("gap", ascending=False, kind="stable").reset_index(drop=True)
    return Gaps(
        table=table,
        total_actual=float(sum_a.sum()),
        total_potential=float(sum_p.sum()),
        top_k=k,
        top_segments=[str(segments[i]) for i in ranked],
        top_gap_share=top_gap_share,
        top_share_of_total=top_of_total,
        top_stability=stability,
        replicates=replicates,
    )


def _top_set(
    ranked: np.ndarray,
    sums: tuple[np.ndarray, np.ndarray],
    boot: tuple[np.ndarray, np.ndarray],
    boot_totals: np.ndarray,
    total_gap: float,
) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """The `ranked` segments together: their pooled gap share and their share of the total
    gap, each as (estimate, 95 % low, high) from the replicates' sums (actual, potential)."""
    (sum_a, sum_p), (boot_a, boot_p) = sums, boot
    set_a, set_p = sum_a[ranked].sum(), sum_p[ranked].sum()
    boot_set_a, boot_set_p = boot_a[:, ranked].sum(axis=1), boot_p[:, ranked].sum(axis=1)
    with np.errstate(all="ignore"):
        set_share = np.where(boot_set_p != 0, (boot_set_p - boot_set_a) / boot_set_p, np.nan)
        set_of_total = np.where(boot_totals != 0, (boot_set_p - boot_set_a) / boot_totals, np.nan)
    (s_lo,), (s_hi,) = interval(set_share[:, None])
    (t_lo,), (t_hi,) = interval(set_of_total[:, None])
    top_gap_share = (float((set_p - set_a) / set_p) if set_p else float("nan"), float(s_lo), float(s_hi))
    top_of_total = (float((set_p - set_a) / total_gap) if total_gap else float("nan"), float(t_lo), float(t_hi))
    return top_gap_share, top_of_total


def shapley3(
    x0: np.ndarray, y0: np.ndarray, z0: np.ndarray, x1: np.ndarray, y1: np.ndarray, z1: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Shapley split of x₁y₁z₁ − x₀y₀z₀ into the effects of x, y and z (elementwise)."""
    ex = (x1 - x0) * ((y0 * z0 + y1 * z1) / 3 + (y0 * z1 + y1 * z0) / 6)
    ey = (y1 - y0) * ((x0 * z0 + x1 * z1) / 3 + (x0 * z1 + x1 * z0) / 6)
    ez = (z1 - z0) * ((x0 * y0 + x1 * y1) / 3 + (x0 * y1 + x1 * y0) / 6)
    return ex, ey, ez


@dataclass
class Change:
    """Y₁ − Y₀ split into volume, mix and rate effects, in total and per segment."""

    segments: list[str]
    y0: np.ndarray  # outcome per segment and period (per month when `per_month`)
    y1: np.ndarray
    n0: np.ndarray  # volume per segment and period
    n1: np.ndarray
    volume: np.ndarray  # effects per segment
    mix: np.ndarray
    rate: np.ndarray
    new_segments: list[str] = field(default_factory=list)
    vanished_segments: list[str] = field(default_factory=list)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # effect → 95 % interval

    @property
    def total(self) -> float:
        return float(self.y1.sum() - self.y0.sum())

    def effect(self, name: str) -> float:
        return float(getattr(self, name).sum())


def split_change(y0: np.ndarray, n0: np.ndarray, y1: np.ndarray, n1: np.ndarray) -> tuple[np.ndarray, ...]:
    """Volume, mix and rate effects per segment (last axis) of Y = Σ_s N·w_s·r_s between two
    periods; arrays may carry leading (replicate) axes. Rates of a segment absent from one
    period are taken from the other period (see the module docstring)."""
    big_n0 = n0.sum(axis=-1, keepdims=True)
    big_n1 = n1.sum(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        w0 = np.where(big_n0 > 0, n0 / big_n0, 0.0)
        w1 = np.where(big_n1 > 0, n1 / big_n1, 0.0)
        r0 = np.where(n0 > 0, y0 / n0, np.nan)
        r1 = np.where(n1 > 0, y1 / n1, np.nan)
    r0 = np.where(np.isnan(r0), r1, r0)
    r1 = np.where(np.isnan(r1), r0, r1)
    r0 = np.nan_to_num(r0)
    r1 = np.nan_to_num(r1)
    return shapley3(np.broadcast_to(big_n0, w0.shape), w0, r0, np.broadcast_to(big_n1, w1.shape), w1, r1)


def change(
    frame: pd.DataFrame,
    segment: str,
    outcome: str,
    period: pd.Series,
    cluster: str | None,
    months: tuple[int, int] | None,
    *,
    replicates: int = 200,
    seed: int = SEED,
) -> Change:
    """The change of `outcome` from period 0 to period 1 (`period` holds 0/1 per row) by
    `segment`; `months` (distinct months per period) turns totals into monthly averages."""
    seg_codes, segments = _codes(frame[segment])
    n_seg = len(segments)
    per = period.to_numpy().astype(np.int64)
    cell = per * n_seg + seg_codes
    y = frame[outcome].to_numpy(dtype=float)
    ones = np.ones(len(frame))
    scale = np.array([1.0, 1.0]) if months is None else 1.0 / np.array(months, dtype=float)
    ys = np.bincount(cell, weights=y, minlength=2 * n_seg).reshape(2, n_seg) * scale[:, None]
    ns = np.bincount(cell, weights=ones, minlength=2 * n_seg).reshape(2, n_seg) * scale[:, None]
    volume, mix, rate = split_change(ys[0], ns[0], ys[1], ns[1])
    result = Change(
        segments=[str(s) for s in segments],
        y0=ys[0],
        y1=ys[1],
        n0=ns[0],
        n1=ns[1],
        volume=volume,
        mix=mix,
        rate=rate,
        new_segments=[str(s) for s, a, b in zip(segments, ns[0], ns[1], strict=True) if a == 0 and b > 0],
        vanished_segments=[str(s) for s, a, b in zip(segments, ns[0], ns[1], strict=True) if a > 0 and b == 0],
    )
    unit = _codes(frame[cluster])[0] if cluster is not None else row_units(len(frame), seed)
    boot_y, boot_n = bootstrap_sums(unit, cell, [y, ones], 2 * n_seg, replicates, seed)
    by = boot_y.reshape(replicates, 2, n_seg) * scale[None, :, None]
    bn = boot_n.reshape(replicates, 2, n_seg) * scale[None, :, None]
    bv, bm, br = split_change(by[:, 0], bn[:, 0], by[:, 1], bn[:, 1])
    draws = {
        "total": by[:, 1].sum(axis=1) - by[:, 0].sum(axis=1),
        "volume": bv.sum(axis=1),
        "mix": bm.sum(axis=1),
        "rate": br.sum(axis=1),
    }
    for name, d in draws.items():
        lo, hi = interval(d[:, None])
        result.intervals[name] = (float(lo[0]), float(hi[0]))
    return result


YEAR = re.compile(r"\b((?:19|20)\d{2})\b")


@dataclass
class Periods:
    """Which rows are period 0 and period 1, and how the two were chosen."""

    code: pd.Series  # 0, 1, or -1 (neither)
    labels: tuple[str, str]
    how: str


def choose_periods(
    values: pd.Series,
    column: str,
    *,
    is_time: bool,
    given: Any,
    split: Any,
    text: str,
    times: pd.Series | None,
) -> Periods:
    """Period 0 and 1 of each row. A time column is split by two years (given, or named in
    `text`: "from 2025 to 2026"), else at the `split` date, else at its middle month. A period
    column takes the two values given, else two it names in `text` (in the order said), else
    baseline → recent, else its earliest and latest value (by `times` when known)."""
    if is_time:
        stamps = pd.to_datetime(values)
        years = list(dict.fromkeys(YEAR.findall(text)))
        if given is not None or (split is None and len(years) >= 2):
            pair = [str(g) for g in (given if given is not None else years[:2])]
            if len(pair) != 2 or not all(re.fullmatch(r"\d{4}", p) for p in pair):
                raise PeriodError(
                    f"periods of the time column '{column}' are two years, got {pair}",
                    "Give `periods` as two years, e.g. [2025, 2026], or a `split` date.",
                    error_type="invalid_period",
                )
            year = stamps.dt.year.astype(str)
            code = pd.Series(np.select([year == pair[0], year == pair[1]], [0, 1], -1), index=values.index)
            return _checked(code, (pair[0], pair[1]), f"{column} in {pair[0]} vs {pair[1]}")
        distinct = np.sort(stamps.dropna().unique())
        if split is not None:
            try:
                cut = pd.Timestamp(str(split))
            except ValueError:
                raise PeriodError(
                    f"the split '{split}' is not a date", "Give `split` as YYYY-MM-DD.", error_type="invalid_period"
                ) from None
        elif len(distinct) >= 2:
            cut = pd.Timestamp(distinct[len(distinct) // 2])
        else:
            cut = pd.Timestamp(distinct[0]) if len(distinct) else pd.Timestamp.min
        code = pd.Series(np.where(stamps < cut, 0, 1), index=values.index)
        return _checked(code, (f"before {cut.date()}", f"from {cut.date()}"), f"{column} split at {cut.date()}")
    present = [str(v) for v in pd.unique(values)]
    if given is not None:
        pair = [str(g) for g in given] if not isinstance(given, str) else [given]
        if len(pair) != 2:
            raise PeriodError(
                f"a change needs two periods, got {pair}", "Give `periods` as [from, to].", error_type="invalid_period"
            )
        unknown = [p for p in pair if p not in present]
        if unknown:
            raise PeriodError(
                f"no rows with {column} = {', '.join(unknown)}",
                f"Choose two of: {', '.join(present)}",
                error_type="unknown_period",
            )
    else:
        lowered = text.lower()
        named = sorted((lowered.find(p.lower()), p) for p in present if p.lower() in lowered)
        if len(named) >= 2:
            pair = [named[0][1], named[1][1]]
        elif set(present) >= {"baseline", "recent"}:
            pair = ["baseline", "recent"]
        else:
            if times is not None:  # in time order: the earliest and the latest period
                order = pd.to_datetime(times).groupby(values.astype(str)).min().sort_values()
                ordered = [str(v) for v in order.index]
            else:
                ordered = sorted(present)
            pair = [ordered[0], ordered[-1]]
    as_text = values.astype(str)
    code = pd.Series(np.select([as_text == pair[0], as_text == pair[1]], [0, 1], -1), index=values.index)
    return _checked(code, (pair[0], pair[1]), f"{column}: {pair[0]} vs {pair[1]}")


def _checked(code: pd.Series, labels: tuple[str, str], how: str) -> Periods:
    counts = [int((code == 0).sum()), int((code == 1).sum())]
    if min(counts) == 0 or labels[0] == labels[1]:
        only = labels[0] if counts[0] else labels[1]
        raise PeriodError(
            f"the data has a single period ({only}): a change needs rows in two periods",
            "Choose a source or brand with two periods, or name them with `period_column` and `periods` "
            "(or a `split` date of the time column).",
            error_type="single_period",
            rows_per_period=dict(zip(labels, counts, strict=True)),
        )
    return Periods(code=code, labels=labels, how=how)
