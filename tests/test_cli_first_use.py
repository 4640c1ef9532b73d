"""`concerto ask` on a fresh data dir says on stderr what it prepares before answering, and
the answer on stdout stays clean (`--json` parses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_the_first_question_says_it_prepares_the_demo_table(tmp_path: Path) -> None:
    env = {**os.environ, "CONCERTO_DATA_DIR": str(tmp_path), "CONCERTO_AGENTS": "segmentation"}
    ask = [sys.executable, "-m", "concerto.cli", "ask", "segment our customers by sales tier", "--json"]
    first = subprocess.run(ask, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    assert any(line.startswith("Preparing the demo table (first use, about ") for line in lines), first.stderr
    assert any(line.startswith("Prepared the demo table in ") for line in lines), first.stderr
    assert json.loads(first.stdout)["agents_invoked"] == ["segmentation"]
    again = subprocess.run(ask, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "Preparing" not in again.stderr
