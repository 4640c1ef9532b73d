"""The server's records in the shared log (runs, conversation turns, with the events they go
with) on both backends of the store: SQLite in a data dir and a real PostgreSQL database (the
`postgres` fixture); bounded by age and by rows as it goes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _services.databases import databases, events
from concerto.server.log import ServerLog, StoredRun
from concerto.server.startup import register_tables
from concerto.store import Limits

MakeLog = Callable[..., ServerLog]


@pytest.fixture(params=["sqlite", "postgres"])
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeLog]:
    """`make_log(limits=None)`: the server's log on a fresh SQLite file or a fresh PostgreSQL
    database; called twice, two logs on the same database (as two processes would have)."""
    with databases(request, tmp_path) as made:

        def make(limits: Limits | None = None) -> ServerLog:
            return ServerLog(made.open(limits))

        yield make


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

    def ask(log: ServerLog, n: int) -> None:
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
    log.event_log.write(events("old", 3, ts=old) + events("new", 3))
    log.save_run(StoredRun(run_id="old", query_id="old", status="completed", created=old, updated=old))
    log.save_run(StoredRun(run_id="new", query_id="new", created=time.time(), updated=time.time()))
    log.add_turns("c", [("user", "kept")], "new")
    log.database.transaction(lambda x: x("UPDATE turns SET ts = ? WHERE conversation_id = ?", (old, "c")), write=True)
    log.add_turns("d", [("user", "kept")], "new")
    log.database.prune()
    assert log.events("old") == [] and len(log.events("new")) == 3
    assert log.run("old") is None and log.run("new") is not None
    assert log.turns("c") == [] and len(log.turns("d")) == 1


def test_a_server_that_answers_no_conversation_still_prunes_the_turns(make_log: MakeLog) -> None:
    """After a restart a server registers the turns' table at start-up (`register_tables`), so
    its event writes prune turns older than the age limit though it answers no conversation."""
    before = make_log(Limits(max_age_days=1))
    before.add_turns("c", [("user", "my account number is 42")], "q1")
    old = time.time() - 2 * 86_400
    before.database.transaction(
        lambda x: x("UPDATE turns SET ts = ? WHERE conversation_id = ?", (old, "c")), write=True
    )
    restarted = make_log(Limits(max_age_days=1))  # another process: nothing of the server's registered
    restarted.event_log.write(events("new", 3))
    restarted.database.prune()
    assert len(before.turns("c")) == 1  # only the events' pruning ran
    asyncio.run(register_tables(restarted))
    restarted.database.prune()
    assert before.turns("c") == []


def test_runs_go_with_their_events(make_log: MakeLog) -> None:
    log = make_log(Limits(max_rows=100))
    early = time.time() - 60
    log.save_run(StoredRun(run_id="a", query_id="a", status="completed", created=early, updated=early), events("a", 50))
    log.event_log.write(events("b", 150))  # pushes every event of "a" out
    log.database.prune()
    assert log.events("a") == [] and log.run("a") is None
    assert log.database.counts()["events"] == 100


def test_the_log_stays_bounded_as_it_is_written(make_log: MakeLog) -> None:
    """Nobody calls `prune`: writing prunes, in the background, once per `max_rows / 20` rows."""
    limits = Limits(max_rows=200)
    log = make_log(limits)
    most = 0
    for q in range(150):
        log.event_log.write(events(f"q{q}", 10))
        log.add_turns(f"c{q % 7}", [("user", "question"), ("assistant", "answer")], f"q{q}")
        if log.database.pruner is not None:
            log.database.pruner.join(10)
        counts = log.database.counts()
        most = max(most, counts["events"], counts["turns"])
    assert 200 <= most <= limits.max_rows + limits.prune_every + 10
    assert log.database.counts()["events"] <= limits.max_rows + limits.prune_every + 10
    assert [e.seq for e in log.events("q149")] == list(range(1, 11))  # the newest are the ones kept
