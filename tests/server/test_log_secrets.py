"""The safety net where the shared log stores rows: a secret an agent or a library put in an
event, a result or a turn is masked, and stored JSON stays JSON. Where events leave the stream:
tests/orchestrator/test_events_secrets.py."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from concerto.contracts.events import Event, EventType
from concerto.server.log import ServerLog, StoredRun
from concerto.store import SqliteDatabase

PASSWORD = "s3cret-PASSWORD"
URL = f"http://user:{PASSWORD}@127.0.0.1:9/api"


def _leaky_event(seq: int) -> Event:
    return Event(
        query_id="q1",
        seq=seq,
        type=EventType.ERROR,
        title=f"metrics_agent: Prometheus at {URL} cannot be reached",
        source="metrics_agent",
        details={
            "url": URL,
            "dsn": f'host=db password="{PASSWORD}"',  # JSON-escaped quotes around the secret
            "headers": {"Authorization": f"Bearer {PASSWORD}"},
            "exception": ConnectionError(f"refused: {URL}"),
        },
    )


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as con:
        return [row for table in ("events", "runs", "turns") for row in con.execute(f"SELECT * FROM {table}")]


def test_stored_rows_hold_no_secret_and_stay_readable(tmp_path: Path) -> None:
    log = ServerLog(SqliteDatabase(tmp_path / "events.sqlite"))
    log.event_log.write([_leaky_event(1)])
    result = json.dumps({"status": "failed", "error_message": f"cannot reach {URL}", "details": {"url": URL}})
    now = time.time()
    log.save_run(
        StoredRun(run_id="r1", query_id="q2", status="failed", result=result, created=now, updated=now),
        [_leaky_event(1).model_copy(update={"query_id": "q2"})],
    )
    log.add_turns("c1", [("user", f"why does {URL} fail?"), ("assistant", f"{URL} refused")], "q2")
    log.database.close()

    rows = _rows(tmp_path / "events.sqlite")
    assert len(rows) == 5 and PASSWORD not in repr(rows)
    (stored,) = ServerLog(SqliteDatabase(tmp_path / "events.sqlite")).events("q1")
    assert stored.details["url"] == "http://user:***@127.0.0.1:9/api"
    assert stored.details["dsn"] == "host=db password=***"
    assert stored.details["headers"] == {"Authorization": "***"}
    run = ServerLog(SqliteDatabase(tmp_path / "events.sqlite")).run("r1")
    assert (
        run is not None
        and json.loads(run.result or "")["error_message"] == "cannot reach http://user:***@127.0.0.1:9/api"
    )
