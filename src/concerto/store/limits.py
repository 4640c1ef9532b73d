"""How much the store keeps: one bound for every owner's tables."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Rows older than `max_age_days`, and beyond the newest `max_rows` of a table, are pruned;
    pruning runs at most once per `prune_every` rows written or `prune_interval_s` of writing."""

    max_age_days: float = 30.0
    max_rows: int = 200_000
    prune_interval_s: float = 60.0

    @property
    def prune_every(self) -> int:
        """Rows written between two prunings."""
        return max(1, min(self.max_rows // 20, 10_000))
