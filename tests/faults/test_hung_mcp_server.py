"""The city pack's datetime MCP server stopped (SIGSTOP) under a running orchestrator: one
question fails on the timeout, the next ones are answered by a new server process, and the
stopped one is killed. Before, every question failed for as long as the process stayed stopped.
And `concerto serve` with questions in flight on a stopped server stops in < 5 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from _services.serve import running_serve
from concerto.agents.registry import AgentRegistry
from concerto.contracts.orchestrator import OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.packs.city.datetime_agent import DateTimeAgent
from concerto.settings import Settings

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the server's process in /proc")


def children_running(marker: str, parent: int | None = None) -> list[int]:
    """PIDs of the children of `parent` (this process) whose command line contains `marker`."""
    me, found = parent or os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and marker in cmdline:
            found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    """Whether `pid` is a process that has not exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def answered(orch: Orchestrator) -> None:
    """Ask the datetime agent until it answers, for up to a minute: the next question after a
    server is started or replaced is answered, unless starting the process (a second or two)
    takes the question's whole timeout, as it may on a busy machine."""
    deadline = time.monotonic() + 60
    while not isinstance(result := await orch.ask("what time is it in Chicago?", agent="datetime"), OrchestratorOutput):
        assert time.monotonic() < deadline, f"never answered: {result.error_message}"


async def test_a_stopped_datetime_server_is_replaced(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, store_events=False)
    async with Orchestrator(settings, registry=AgentRegistry([DateTimeAgent])) as orch:
        await answered(orch)
        (stopped,) = children_running("datetime_server")
        try:
            os.kill(stopped, signal.SIGSTOP)
            failed = await orch.ask("what time is it in Chicago?", agent="datetime")
            assert not isinstance(failed, OrchestratorOutput)
            assert "did not answer" in failed.error_message
            await answered(orch)  # by a new server process: the stopped one was replaced
            assert children_running("datetime_server") != [stopped]
            for _ in range(100):  # the stopped process is killed, not left behind
                if stopped not in children_running("datetime_server"):
                    break
                await asyncio.sleep(0.1)
            else:
                pytest.fail("the stopped datetime server process is still there")
        finally:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(stopped, sig)


async def dispatched(client: httpx.AsyncClient, question: dict[str, str], seen: asyncio.Event) -> None:
    """Ask `question` on the event stream; set `seen` once its datetime task is dispatched."""
    async with client.stream("POST", "/v1/ask/stream", json=question) as reply:
        async for line in reply.aiter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("title") == "Dispatching datetime":
                seen.set()


async def test_sigterm_with_questions_on_a_stopped_server_stops_within_5_s(tmp_path: Path) -> None:
    """Three questions wait on the stopped server, and would for two minutes (their timeouts):
    the server stops within 5 s of SIGTERM, timed from the signal to its exit."""
    question = {"query": "what time is it in Chicago?"}
    env = {
        "CONCERTO_DATA_DIR": str(tmp_path),
        "CONCERTO_AGENT_TIMEOUTS": "datetime=120000",  # no question ends on its own during the test
        "CONCERTO_CITY_REQUEST_TIMEOUT_MS": "120000",
    }
    with running_serve(env, ready="/ready", timeout_s=180) as served:
        async with httpx.AsyncClient(base_url=served.base, timeout=60) as client:
            assert (await client.post("/v1/ask", json=question)).status_code == 200
            (stopped,) = children_running("datetime_server", served.process.pid)
            try:
                os.kill(stopped, signal.SIGSTOP)
                seen = [asyncio.Event() for _ in range(3)]
                asking = [asyncio.ensure_future(dispatched(client, question, s)) for s in seen]
                # in flight: each one's task dispatched to the stopped server
                await asyncio.wait_for(asyncio.gather(*(s.wait() for s in seen)), 60)
                assert not any(a.done() for a in asking)
                took = await asyncio.to_thread(served.terminate_timed, 60)
                await asyncio.gather(*asking, return_exceptions=True)
                assert took is not None, "concerto serve was still running 60 s after SIGTERM"
                assert took < 5, f"concerto serve took {took:.1f} s to stop"
                assert not running(stopped), "the stopped MCP server outlived concerto serve"
            finally:
                for sig in (signal.SIGCONT, signal.SIGKILL):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(stopped, sig)
