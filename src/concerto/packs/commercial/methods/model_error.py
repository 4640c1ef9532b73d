"""How far a model fitted on an earlier period misses a later one, for `health_score`: a
ridge regression of the outcome on the other features (numbers standardised with the
earlier period's median and SD, categories one-hot with its 30 most common values), its RMSE
cross-validated (5 folds) on the earlier period, then fitted on all of it and scored on the
later one. A later error well above the cross-validated one says the model no longer holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from concerto.packs.commercial.methods.errors import MethodError

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class HeldOutError:
    """The model's error: cross-validated on the earlier period, and on the later one."""

    cv_rmse: float
    cv_r2: float
    current_rmse: float
    current_r2: float


def model_error(
    ref: pd.DataFrame, cur: pd.DataFrame, outcome: str, numeric: list[str], category: list[str]
) -> HeldOutError:
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
        raise MethodError(f"no feature to predict {outcome} from", error_type="no_features")
    x_ref, x_cur = _design(ref, cur, numeric, category)
    y_ref, y_cur = ref[outcome].to_numpy(dtype=float), cur[outcome].to_numpy(dtype=float)
    model = Ridge(alpha=1.0)
    with ThreadpoolController().limit(limits=1, user_api="blas"):  # narrow matrices: threads only cost
        cv_pred = cross_val_predict(model, x_ref, y_ref, cv=KFold(n_splits=5, shuffle=True, random_state=0))
        predicted = model.fit(x_ref, y_ref).predict(x_cur)
    return HeldOutError(
        cv_rmse=float(np.sqrt(np.mean((cv_pred - y_ref) ** 2))),
        cv_r2=float(r2_score(y_ref, cv_pred)),
        current_rmse=float(np.sqrt(np.mean((predicted - y_cur) ** 2))),
        current_r2=float(r2_score(y_cur, predicted)),
    )


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
