"""A small table as the reader sees it, built without a store (profile and values given):
players with a name, a nation, points and a year."""

from __future__ import annotations

from datetime import UTC, datetime

from concerto.data.context import ColumnProfile, DataContext, SemanticProfile
from concerto.packs.analytics.table.mentions import Table


def players() -> Table:
    profiles = {
        "Name": ColumnProfile(type="VARCHAR", nullable=False, role="label", distinct=3),
        "Nation": ColumnProfile(type="VARCHAR", nullable=False, role="category", distinct=3),
        "Points": ColumnProfile(type="BIGINT", nullable=False, role="measure", distinct=3, min=3, max=40),
        "Year": ColumnProfile(type="BIGINT", nullable=False, role="category", distinct=3, min=1999, max=2004),
    }
    context = DataContext(
        data_source_id="t-1",
        name="players",
        table="players",
        file_name="players.csv",
        row_count=3,
        loaded_at=datetime(2026, 1, 1, tzinfo=UTC),
        columns=list(profiles),
        detected_types=profiles,
        semantic_profile=SemanticProfile(),
    )
    values: dict[str, list[object]] = {
        "Name": ["Ann Lee", "Bo Diaz", "Cy Young"],
        "Nation": ["France", "Côte d'Ivoire", "United States"],
        "Points": [3, 12, 40],
        "Year": [1999, 2001, 2004],
    }
    return Table(context, values)
