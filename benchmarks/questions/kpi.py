"""The KPI question set's runner: each question through the whole orchestrator, routing included.

`plan(question, now)` asks `concerto.Orchestrator` (no LLM, embedded defaults) in a data
directory of its own holding the demo KPIs plus two user KPIs loaded with the real
`concerto kpi load` command, and reports what the KPI agent ran: the agent chosen, the
agreed-format queries, the analysis, the parts the answer says it does not cover, and the
error types. `bench_questions.py` compares that with kpi.yaml.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

# A user's KPIs: two departments of a chip fab, monthly, January 2024 to May 2025.
USER_CSV = "kpi,department,month,value,unit,notes\n" + "".join(
    f"probe-yield,{dept},{year}-{month:02d},{base + month / 10:.1f},%,\n"
    for dept, base in (("probe-desk", 91.0), ("wafer-lab", 87.5))
    for year in (2024, 2025)
    for month in range(1, 13)
    if (year, month) <= (2025, 5)
)
DESCRIBE = "probe yield: share of dies passing wafer probe test"


class _Runner:
    """One orchestrator on one event loop, in a data directory made on first use."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="concerto-kpi-questions-"))
        atexit.register(shutil.rmtree, self.dir, ignore_errors=True)
        env = {**os.environ, "CONCERTO_DATA_DIR": str(self.dir)}
        csv = self.dir / "fab-kpis.csv"
        csv.write_text(USER_CSV)
        concerto = [sys.executable, "-c", "from concerto.cli import main; main()"]
        subprocess.run([*concerto, "kpi", "load", str(csv), "--demo"], env=env, check=True, capture_output=True)
        from concerto.orchestrator.engine import Orchestrator
        from concerto.settings import Settings

        self.loop = asyncio.new_event_loop()
        self.orchestrator = Orchestrator(Settings(data_dir=self.dir))
        self.loop.run_until_complete(self.orchestrator.start())

    def ask(self, question: str, now: datetime) -> Any:
        return self.loop.run_until_complete(self.orchestrator.ask(question, now=now))


_runner: _Runner | None = None


def runner() -> _Runner:
    global _runner
    if _runner is None:
        _runner = _Runner()
    return _runner


def plan(question: str, now: datetime) -> dict[str, Any]:
    """What the orchestrator ran for `question` at `now` (see the module docstring)."""
    result = runner().ask(question, now).model_dump(mode="json")
    responses = result.get("agent_results") or result.get("partial_results") or []
    got: dict[str, Any] = {
        "agent": responses[0]["agent"] if responses else None,
        "response": result.get("response") or result.get("error_message"),
        "error_types": [e["error_type"] for r in responses for e in r["errors"]],
    }
    for r in responses:
        if r["agent"] != "kpi":
            continue
        out = r["output"]
        got["structured_queries"] = out.get("structured_queries") or (
            [out["structured_query"]] if out.get("structured_query") else []
        )
        if "analysis" in out:
            got["analysis"] = out["analysis"]
        got["unanswered"] = [e["message"] for e in r["errors"] if "part" in e.get("details", {})]
    return got
