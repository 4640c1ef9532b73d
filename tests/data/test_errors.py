"""What a load's message may show a client of the server: files by their own names, no paths."""

from __future__ import annotations

from pathlib import Path

from concerto.data.errors import without_paths


def test_paths_are_cut_to_their_last_part(tmp_path: Path) -> None:
    assert without_paths(f"IO Error: cannot open '{tmp_path}/x.csv' or C:\\srv\\y.csv", tmp_path / "x.csv") == (
        "IO Error: cannot open 'x.csv' or y.csv"
    )
    assert without_paths(f"{tmp_path.resolve()}/x.csv is locked", tmp_path / "x.csv") == "x.csv is locked"


def test_slashes_that_are_not_paths_stay() -> None:
    assert without_paths("format YYYY/MM/DD, ratio 1/2, a / b") == "format YYYY/MM/DD, ratio 1/2, a / b"
