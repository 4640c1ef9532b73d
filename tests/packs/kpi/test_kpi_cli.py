"""`concerto kpi ...` through click's runner, against a temporary data dir."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from concerto.packs.kpi.cli import kpi


@pytest.fixture()
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("CONCERTO_DATA_DIR", str(tmp_path / "data"))
    return CliRunner()


def test_every_command_and_option_has_help() -> None:
    assert kpi.help
    for name, command in kpi.commands.items():
        assert command.help, name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.name}"


def test_load_good_and_bad(runner: CliRunner, tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text("kpi,department,month,value,unit,notes\nrevenue,branch-x,2025-05,10.5,kUSD,ok\n")
    result = runner.invoke(kpi, ["load", str(good)])
    assert result.exit_code == 0, result.output
    assert "Loaded 1 records" in result.output

    bad = tmp_path / "bad.csv"
    bad.write_text("kpi,department,month,value,unit,notes\nrevenue,branch-y,2025-05,ten,kUSD,\n")
    result = runner.invoke(kpi, ["load", str(bad)])
    assert result.exit_code != 0
    assert f"{bad}:2:" in result.output and "nothing was loaded" in result.output

    result = runner.invoke(kpi, ["names", "--json"])
    names = json.loads(result.output)
    assert "branch-x" in names["departments"] and "branch-y" not in names["departments"]


def test_query_command(runner: CliRunner) -> None:
    result = runner.invoke(
        kpi, ["query", "home-loan attrition rate previous 4 months", "--now", "2025-06-15T00:00:00+00:00"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["structured_query"] == (
        "kpi-attrition-rate department-home-loan range-4-months start-2025-02-01 end-2025-05-31"
    )
    result = runner.invoke(kpi, ["query", "kpi-attrition-rate month-2025-05-01"])
    assert result.exit_code == 1 and "invalid_format" in result.output


def test_the_commands_use_no_test_helper() -> None:
    """`concerto.testing` is for tests and users' fakes: `kpi query` builds the agent's context
    from the core's own types."""
    import ast

    from concerto.packs.kpi import cli

    tree = ast.parse(Path(str(cli.__file__)).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and (m == "concerto.testing" or m.startswith("concerto.testing."))}
