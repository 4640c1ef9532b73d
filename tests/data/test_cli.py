"""`concerto data load|list|show|drop` as a user runs them: names, JSON, sidecar, errors without traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers.data import write

SALES = "order_id,region,amount,day\n1,East,10.5,2024-01-02\n2,West,3.0,2024-02-03\n3,East,7.25,2024-03-04\n"


def concerto(*args: str, data_dir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {"CONCERTO_DATA_DIR": str(data_dir), "PATH": "/usr/bin:/bin", "HOME": str(data_dir), "COLUMNS": "200"}
    env |= {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}  # the sources under test
    env |= settings
    return subprocess.run(
        [sys.executable, "-m", "concerto.cli", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_load_list_show_drop(tmp_path: Path, data_dir: Path) -> None:
    path = write(tmp_path, "Q3 Sales.csv", SALES)
    (tmp_path / "q3_sales.profile.yaml").write_text("domain: retail\nentity_name: order\n", encoding="utf-8")
    loaded = concerto(
        "data", "load", str(path), "--describe", "amount=Order value in euros", "--json", data_dir=data_dir
    )
    assert loaded.returncode == 0, loaded.stderr
    context = json.loads(loaded.stdout)
    assert context["name"] == "q3_sales" and context["row_count"] == 3
    profile = context["semantic_profile"]
    assert profile["domain"] == "retail" and profile["entity_name"] == "order"
    assert profile["field_descriptions"]["amount"] == "Order value in euros"
    listed = json.loads(concerto("data", "list", "--json", data_dir=data_dir).stdout)
    assert [s["name"] for s in listed] == ["q3_sales"] and listed[0]["row_count"] == 3
    shown = json.loads(concerto("data", "show", "q3_sales", "--json", data_dir=data_dir).stdout)
    assert shown["columns"] == ["order_id", "region", "amount", "day"]
    table = concerto("data", "show", "q3_sales", data_dir=data_dir)
    assert table.returncode == 0 and "Order value in euros" in table.stdout
    assert concerto("data", "drop", "q3_sales", data_dir=data_dir).returncode == 0
    assert json.loads(concerto("data", "list", "--json", data_dir=data_dir).stdout) == []


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", "", "is empty"),
        ("ragged.csv", "a,b\n1,2\n3\n", "line 3 has 1 field(s), the header has 2"),
        ("notes.docx", "x", "unsupported file type"),
    ],
)
def test_a_bad_file_is_a_clear_error(tmp_path: Path, data_dir: Path, name: str, content: str, message: str) -> None:
    done = concerto("data", "load", str(write(tmp_path, name, content)), data_dir=data_dir)
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr


def test_unknown_names_and_bad_describe(tmp_path: Path, data_dir: Path) -> None:
    shown = concerto("data", "show", "nope", data_dir=data_dir)
    assert shown.returncode != 0 and "no data source named 'nope'" in shown.stderr
    dropped = concerto("data", "drop", "nope", data_dir=data_dir)
    assert dropped.returncode != 0 and "Traceback" not in dropped.stderr
    bad = concerto("data", "load", str(write(tmp_path, "s.csv", SALES)), "--describe", "nothing", data_dir=data_dir)
    assert bad.returncode == 2 and "COLUMN=TEXT" in bad.stderr


def test_a_workbook_that_unpacks_over_the_limit_is_a_clear_error(tmp_path: Path, data_dir: Path) -> None:
    from _helpers.workbooks import workbook

    bomb = workbook(tmp_path / "bomb.xlsx", rows=40_000)  # 0.9 MB unpacking to 11 MB
    done = concerto("data", "load", str(bomb), data_dir=data_dir, CONCERTO_DATA_MAX_UNPACKED_MB="4")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "bomb.xlsx unpacks to 11 MB; the limit is 4 MB (CONCERTO_DATA_MAX_UNPACKED_MB)" in done.stderr
    assert not (data_dir / "sources").exists() or not list((data_dir / "sources").iterdir())


def test_a_chosen_name_is_taken_as_it_is_or_refused(tmp_path: Path, data_dir: Path) -> None:
    path = write(tmp_path, "s.csv", SALES)
    done = concerto("data", "load", str(path), "--name", "../x", data_dir=data_dir)
    assert done.returncode == 1 and "'../x' cannot name a source: use lower-case letters" in done.stderr
    assert "e.g. 'x'" in done.stderr
    assert concerto("data", "load", str(path), "--name", "x", data_dir=data_dir).returncode == 0


def test_the_summary_of_a_wide_load_shows_its_first_columns(tmp_path: Path, data_dir: Path) -> None:
    header = ",".join(f"m_{n}" for n in range(60))
    path = write(tmp_path, "wide.csv", f"{header}\n" + ",".join("1" * 60) + "\n")
    done = concerto("data", "load", str(path), data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    assert "m_49" in done.stdout and "m_50" not in done.stdout
    assert "and 10 more columns: concerto data show wide" in done.stdout
    assert "m_59" in concerto("data", "show", "wide", data_dir=data_dir).stdout


def test_describe_corrects_a_kind_and_show_says_why(tmp_path: Path, data_dir: Path) -> None:
    path = write(tmp_path, "s.csv", SALES)
    loaded = concerto("data", "load", str(path), "--describe", "order_id=measure", "--json", data_dir=data_dir)
    assert loaded.returncode == 0, loaded.stderr
    kinds = json.loads(loaded.stdout)["detected_types"]
    assert kinds["order_id"]["role"] == "measure" and kinds["order_id"]["role_reason"].startswith("set by the user")
    assert kinds["amount"]["role"] == "money" and kinds["amount"]["role_reason"]
    table = concerto("data", "show", "s", data_dir=data_dir)
    assert "set by the user" in table.stdout and "named like an amount of money" in table.stdout
