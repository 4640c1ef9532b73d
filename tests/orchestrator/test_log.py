"""The shared log (events, runs, conversation turns) on both backends: SQLite in a data dir and
a real PostgreSQL database (the `postgres` fixture); bounded by age and by rows as it goes."""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _services.ports import dead_url
from _services.postgres import Postgres
from concerto.contracts.events import Event, EventType, QueryState
from concerto.orchestrator.events import EventLog
from concerto.orchestrator.log import Limits, Log, LogUnavailable, PostgresLog, SqliteLog, StoredRun, open_log
from concerto.settings import Settings

_databases = itertools.count()
MakeLog = Callable[..., Log]


def events(query_id: str, n: int, start: int = 1, ts: float | None = None) -> list[Event]:
    base = ts if ts is not None else time.time()
    return [
        Event(
            query_id=query_id,
            seq=i,
            type=EventType.STATE if i == start else EventType.ACTION,
            title=f"step {i}",
            source="echo",
            state=QueryState.RECEIVED if i == start else None,
            task_id="t1",
            details={"i": i, "text": "é\x00"},
            ts=base + i / 1000,
        )
        for i in range(start, start + n)
    ]


@pytest.fixture(params=["sqlite", "postgres"])
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeLog]:
    """`make_log(limits=None)`: a log on a fresh SQLite file or a fresh PostgreSQL database;
    called twice, two logs on the same database (as two processes would have)."""
    opened: list[Log] = []
    if request.param == "sqlite":
        where = tmp_path / "events.sqlite"

        def make(limits: Limits | None = None) -> Log:
            opened.append(SqliteLog(where, limits))
            return opened[-1]
    else:
        postgres: Postgres = request.getfixturevalue("postgres")
        name = f"log_{next(_databases)}_{int(time.time() * 1000)}"
        postgres.psql(f"CREATE DATABASE {name}")
        url = postgres.url.rsplit("/", 1)[0] + f"/{name}"

        def make(limits: Limits | None = None) -> Log:
            opened.append(PostgresLog(url, limits))
            return opened[-1]

    yield make
    for log in opened:
        if log.pruner is not None:
            log.pruner.join(10)
        log.close()


def test_events_round_trip_in_order_and_resume_after_a_sequence_number(make_log: MakeLog) -> None:
    log = make_log()
    written = events("q1", 5)
    log.write_events(written[:3])
    log.write_events(written)  # the first three again: kept once, unchanged
    log.write_events(events("q2", 2, ts=time.time() + 1))
    assert log.events("q1") == written
    assert log.events("q1", after=3) == written[3:]
    assert log.events("nope") == []
    assert [e.query_id for e in log.recent_events(3)] == ["q1", "q2", "q2"]
    assert log.counts()["events"] == 7


def test_a_run_written_by_one_process_is_read_by_another(make_log: MakeLog) -> None:
    writer, reader = make_log(), make_log()
    now = time.time()
    run = StoredRun(run_id="r1", query_id="r1", conversation_id="c1", created=now, updated=now)
    writer.save_run(run, events("r1", 2))
    assert reader.run("r1") == run
    assert [e.seq for e in reader.events("r1")] == [1, 2]
    done = run.model_copy(update={"status": "completed", "events": 3, "last_seq": 3, "result": '{"x": 1}'})
    writer.save_run(done, events("r1", 1, start=3))
    assert reader.run("r1") == done
    assert [e.seq for e in reader.events("r1", after=2)] == [3]
    assert reader.run("other") is None


def test_turns_follow_each_other_and_a_conversation_can_be_removed(make_log: MakeLog) -> None:
    log = make_log()
    log.add_turns("c1", [("user", "first question"), ("assistant", "first answer")], "q1")
    log.add_turns("c1", [("user", "second"), ("assistant", "second answer")], "q2")
    log.add_turns("c2", [("user", "elsewhere")], "q3")
    turns = log.turns("c1")
    assert [(t.turn, t.role, t.content, t.query_id) for t in turns] == [
        (1, "user", "first question", "q1"),
        (2, "assistant", "first answer", "q1"),
        (3, "user", "second", "q2"),
        (4, "assistant", "second answer", "q2"),
    ]
    assert [t.turn for t in log.turns("c1", last=2)] == [3, 4]
    assert log.delete_conversation("c1") == 4
    assert log.turns("c1") == [] and log.delete_conversation("c1") == 0
    assert len(log.turns("c2")) == 1


def test_two_processes_appending_to_one_conversation_at_once_lose_no_turn(make_log: MakeLog) -> None:
    logs = [make_log(), make_log()]

    def ask(log: Log, n: int) -> None:
        for i in range(10):
            log.add_turns("shared", [("user", f"{n}-{i}"), ("assistant", f"answer {n}-{i}")], f"q{n}-{i}")

    threads = [threading.Thread(target=ask, args=(log, n)) for n, log in enumerate(logs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    turns = logs[0].turns("shared")
    assert [t.turn for t in turns] == list(range(1, 41))
    # Each question is followed by its own answer: a pair is written in one transaction.
    for question, answer in zip(turns[::2], turns[1::2], strict=True):
        assert question.role == "user" and answer.content == f"answer {question.content}"


def test_pruning_drops_what_is_older_than_the_age_limit(make_log: MakeLog) -> None:
    log = make_log(Limits(max_age_days=1))
    old = time.time() - 2 * 86_400
    log.write_events(events("old", 3, ts=old) + events("new", 3))
    log.save_run(StoredRun(run_id="old", query_id="old", status="completed", created=old, updated=old))
    log.save_run(StoredRun(run_id="new", query_id="new", created=time.time(), updated=time.time()))
    log.add_turns("c", [("user", "kept")], "new")
    log._run(lambda x: x("UPDATE turns SET ts = ? WHERE conversation_id = ?", (old, "c")), write=True)
    log.add_turns("d", [("user", "kept")], "new")
    log.prune()
    assert log.events("old") == [] and len(log.events("new")) == 3
    assert log.run("old") is None and log.run("new") is not None
    assert log.turns("c") == [] and len(log.turns("d")) == 1


def test_runs_go_with_their_events(make_log: MakeLog) -> None:
    log = make_log(Limits(max_rows=100))
    early = time.time() - 60
    log.save_run(StoredRun(run_id="a", query_id="a", status="completed", created=early, updated=early), events("a", 50))
    log.write_events(events("b", 150))  # pushes every event of "a" out
    log.prune()
    assert log.events("a") == [] and log.run("a") is None
    assert log.counts()["events"] == 100


def test_the_log_stays_bounded_as_it_is_written(make_log: MakeLog) -> None:
    """Nobody calls `prune`: writing prunes, in the background, once per `max_rows / 20` rows."""
    limits = Limits(max_rows=200)
    log = make_log(limits)
    most = 0
    for q in range(150):
        log.write_events(events(f"q{q}", 10))
        log.add_turns(f"c{q % 7}", [("user", "question"), ("assistant", "answer")], f"q{q}")
        if log.pruner is not None:
            log.pruner.join(10)
        counts = log.counts()
        most = max(most, counts["events"], counts["turns"])
    assert 200 <= most <= limits.max_rows + limits.prune_every + 10
    assert log.counts()["events"] <= limits.max_rows + limits.prune_every + 10
    assert [e.seq for e in log.events("q149")] == list(range(1, 11))  # the newest are the ones kept


def test_events_written_soon_are_written_in_order_by_the_log_s_thread(make_log: MakeLog) -> None:
    log = make_log()
    for q in range(20):
        log.write_events_soon(events(f"q{q}", 3, ts=1000.0 + q))
    log.flush()
    assert [e.query_id for e in log.recent_events(60)] == [f"q{q}" for q in range(20) for _ in range(3)]


def test_an_unreachable_database_is_a_clear_error_that_never_holds_up_the_engine() -> None:
    log = PostgresLog(dead_url().replace("http://", "postgresql://postgres@") + "/postgres")
    started = time.monotonic()
    with pytest.raises(LogUnavailable, match=r"cannot be reached"):
        log.ping()
    assert time.monotonic() - started < 6
    assert "postgresql://" not in log.where  # messages never show the URL (it may hold a password)
    started = time.monotonic()
    with pytest.raises(LogUnavailable, match=r"did not answer a moment ago"):  # not tried again at once
        log.ping()
    log.write_events_soon(events("q", 3))  # the engine's way: returns at once, the failure is logged
    assert time.monotonic() - started < 0.1
    log.close()


def test_sqlite_log_is_in_wal_mode_so_processes_share_it(tmp_path: Path) -> None:
    SqliteLog(tmp_path / "events.sqlite").ping()
    con = sqlite3.connect(tmp_path / "events.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_the_configured_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres: Postgres) -> None:
    monkeypatch.setenv("CONCERTO_EVENTS_MAX_AGE_DAYS", "7")
    monkeypatch.setenv("CONCERTO_EVENTS_MAX_ROWS", "5000")
    embedded = open_log(Settings(data_dir=tmp_path))
    assert isinstance(embedded, SqliteLog) and embedded.path == tmp_path / "events.sqlite"
    assert embedded.limits == Limits(max_age_days=7, max_rows=5000)
    assert open_log(Settings(data_dir=tmp_path)) is embedded  # one per process and place
    monkeypatch.setenv("CONCERTO_DATABASE_URL", postgres.url)
    shared = open_log(Settings(data_dir=tmp_path))
    assert isinstance(shared, PostgresLog)
    log = EventLog.of(Settings(data_dir=tmp_path))
    log.write(events("configured", 2))
    assert [e.seq for e in log.read("configured")] == [1, 2]
    assert postgres.psql("SELECT count(*) FROM concerto_log.events WHERE query_id = 'configured'") == "2"


def test_invalid_settings_give_a_log_that_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONCERTO_DATA_ROW_CAP", "lots")  # the data layer's settings cannot be read
    log = open_log(Settings(data_dir=tmp_path))
    with pytest.raises(LogUnavailable, match=r"CONCERTO_DATA_ROW_CAP='lots'"):
        log.ping()
    log.write_events_soon(events("q", 1))  # logged, never raised
    log.flush()
