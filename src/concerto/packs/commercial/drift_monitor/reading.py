"""Which features `drift_monitor` checks: the caller's `features` (each a column; categories,
flags, text and dates compared as categories), else every numeric and category column but
ids, dates, the period column and (when filtering by brand) the brand."""

from __future__ import annotations

from typing import TYPE_CHECKING

from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.drift_reading import default_features

if TYPE_CHECKING:
    from concerto.packs.commercial.base.agent import Work
    from concerto.packs.commercial.methods.drift import SplitPlan


def features_of(work: Work, plan: SplitPlan) -> tuple[list[str], list[str]]:
    """(numeric, category) features to check."""
    source = work.source
    given = work.given("features")
    exclude = {plan.column} | ({"brand"} if work.brand else set())
    numeric_all, category_all = default_features(source, exclude)
    if given is None:
        return numeric_all, category_all
    names = [n.strip() for n in given.split(",")] if isinstance(given, str) else [str(n) for n in given]
    numeric, category = [], []
    for name in names:
        column = cols.resolve(source, name, "feature")
        if column in category_all or source.detected_types[column].role in ("category", "label", "flag"):
            category.append(column)
        elif column in numeric_all or column in cols.numeric_columns(source):
            numeric.append(column)
        else:
            category.append(column)  # text or dates: compared as categories
    return numeric, category
