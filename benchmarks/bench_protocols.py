"""Protocols benchmark (issue 18): the latency each surface adds over `Orchestrator.ask` for an
echo question, side by side in one run, and 100 questions in flight through the OpenAI endpoint.

Surfaces, each warmed up first and then timed over `--runs` questions one after another
(the median and p95 of the client's round trip):
- `Orchestrator.ask` in process: the baseline;
- `concerto.ask` (the synchronous Python API: its own loop in a thread);
- MCP over stdio and over streamable HTTP (`concerto mcp serve concerto`, the official client);
- the HTTP API's `POST /v1/ask` (for reference), the OpenAI-compatible endpoint (the official
  `openai` client, streaming and not) and A2A (the SDK's client), on one `concerto serve`.
The floor of each transport is the same client calling a trivial hand-written endpoint
(a FastMCP tool, a FastAPI route) that does no work, so "added" splits into the transport's
own cost and Concerto's layer.

    .venv/bin/python -m benchmarks.bench_protocols [--runs 50] [--in-flight 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks._timing import percentile, timed
from tests._services.ports import free_port, stop, wait_for_port

ROOT = Path(__file__).resolve().parent.parent

QUESTION = "echo: hello"
ENV = {"CONCERTO_AGENTS": "echo"}
# The hand-written floors: the same transports around a function that does nothing.
FLOOR_MCP = textwrap.dedent(
    """
    import sys
    from mcp.server.fastmcp import FastMCP
    server = FastMCP("floor", port=int(sys.argv[2]) if len(sys.argv) > 2 else 8000, log_level="WARNING")
    @server.tool()
    def ask(question: str) -> str:
        return question
    server.run(sys.argv[1])
    """
)
FLOOR_HTTP = textwrap.dedent(
    """
    import sys, uvicorn
    from fastapi import FastAPI
    app = FastAPI()
    @app.post("/v1/ask")
    async def ask(body: dict) -> dict:
        return {"response": body["query"]}
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)


def spawn(args: list[str], port: int, data_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **ENV, "CONCERTO_DATA_DIR": str(data_dir)}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, proc, 60)
    return proc


# -- the surfaces -------------------------------------------------------------------------


async def in_process(runs: int) -> list[float]:
    from concerto import Orchestrator

    async with Orchestrator() as orchestrator:

        async def call() -> None:
            result = await orchestrator.ask(QUESTION)
            assert getattr(result, "response", None) == 'Echo: "hello"', result

        return await timed(call, runs, warmup=3)


async def python_api(runs: int) -> list[float]:
    import concerto

    async def call() -> None:
        result = await asyncio.to_thread(concerto.ask, QUESTION)
        assert getattr(result, "response", None) == 'Echo: "hello"', result

    try:
        return await timed(call, runs, warmup=3)
    finally:
        concerto.api.close()


async def mcp_session_times(open_session: Any, tool: str, arguments: dict[str, Any], runs: int) -> list[float]:
    from mcp import ClientSession

    async with open_session as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()

        async def call() -> None:
            result = await session.call_tool(tool, arguments)
            assert not result.isError, result

        return await timed(call, runs, warmup=3)


async def mcp_stdio(runs: int, data_dir: Path, floor: bool = False) -> list[float]:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = ["-c", FLOOR_MCP, "stdio"] if floor else ["-m", "concerto.cli", "mcp", "serve", "concerto"]
    params = StdioServerParameters(
        command=sys.executable, args=args, env={**os.environ, **ENV, "CONCERTO_DATA_DIR": str(data_dir)}
    )
    return await mcp_session_times(stdio_client(params), "ask", {"question": QUESTION}, runs)


async def mcp_http(runs: int, data_dir: Path, floor: bool = False) -> list[float]:
    from mcp.client.streamable_http import streamablehttp_client

    port = free_port()
    args = (
        [sys.executable, "-c", FLOOR_MCP, "streamable-http", str(port)]
        if floor
        else [sys.executable, "-m", "concerto.cli", "mcp", "serve", "concerto", "--transport", "http", "--port"]
    )
    proc = spawn(args if floor else [*args, str(port)], port, data_dir)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        return await mcp_session_times(streamablehttp_client(url), "ask", {"question": QUESTION}, runs)
    finally:
        stop(proc)


async def http_ask(base: str, runs: int) -> list[float]:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:

        async def call() -> None:
            response = await client.post("/v1/ask", json={"query": QUESTION})
            assert response.status_code == 200, response.text

        return await timed(call, runs, warmup=3)


async def openai_chat(base: str, runs: int, stream: bool) -> list[float]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)

    async def call() -> None:
        messages: Any = [{"role": "user", "content": QUESTION}]
        if stream:
            chunks = await client.chat.completions.create(model="concerto", messages=messages, stream=True)
            text = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
        else:
            completion = await client.chat.completions.create(model="concerto", messages=messages)
            text = completion.choices[0].message.content or ""
        assert 'Echo: "hello"' in text, text

    try:
        return await timed(call, runs, warmup=3)
    finally:
        await client.close()


async def openai_in_flight(base: str, n: int) -> tuple[int, int, float]:
    """`n` questions at once through the OpenAI endpoint: (answered, errors, wall seconds)."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0, timeout=120)

    async def one(i: int) -> bool:
        completion = await client.chat.completions.create(
            model="concerto", messages=[{"role": "user", "content": f"echo: question {i}"}]
        )
        return f'Echo: "question {i}"' in (completion.choices[0].message.content or "")

    start = time.perf_counter()
    outcomes = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    wall = time.perf_counter() - start
    await client.close()
    answered = sum(1 for o in outcomes if o is True)
    return answered, n - answered, wall


async def a2a_send(base: str, runs: int) -> list[float]:
    """`SendMessage` over JSON-RPC without streaming: the reply is the completed task."""
    from a2a.client import ClientConfig, create_client
    from a2a.helpers import get_text_parts, new_text_message
    from a2a.types import Role, SendMessageRequest

    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(base, ClientConfig(httpx_client=http, streaming=False))
        async with client:

            async def call() -> None:
                request = SendMessageRequest(message=new_text_message(QUESTION, role=Role.ROLE_USER))
                items = [item async for item in client.send_message(request)]
                (text,) = get_text_parts(items[-1].task.artifacts[0].parts)
                assert text == 'Echo: "hello"', text

            return await timed(call, runs, warmup=3)


# -- the run ------------------------------------------------------------------------------


def summary(times: list[float]) -> tuple[float, float]:
    return statistics.median(times), percentile(times, 0.95)


async def main(runs: int, in_flight: int, output: Path) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="concerto-bench-protocols-"))
    os.environ.update(ENV)
    os.environ["CONCERTO_DATA_DIR"] = str(data_dir)
    rows: list[tuple[str, list[float] | None, str]] = []
    base_times = await in_process(runs)
    rows.append(("Orchestrator.ask (in process)", base_times, "baseline"))
    rows.append(("concerto.ask (sync Python API)", await python_api(runs), ""))
    rows.append(("MCP stdio: floor (FastMCP tool, no work)", await mcp_stdio(runs, data_dir, floor=True), "floor"))
    rows.append(("MCP stdio: concerto `ask`", await mcp_stdio(runs, data_dir), ""))
    rows.append(("MCP HTTP: floor (FastMCP tool, no work)", await mcp_http(runs, data_dir, floor=True), "floor"))
    rows.append(("MCP HTTP: concerto `ask`", await mcp_http(runs, data_dir), ""))

    port = free_port()
    floor = spawn([sys.executable, "-c", FLOOR_HTTP, str(port)], port, data_dir)
    try:
        rows.append(("HTTP: floor (FastAPI route, no work)", await http_ask(f"http://127.0.0.1:{port}", runs), "floor"))
    finally:
        stop(floor)
    port = free_port()
    server = spawn([str(ROOT / ".venv" / "bin" / "concerto"), "serve", "--port", str(port)], port, data_dir)
    base = f"http://127.0.0.1:{port}"
    try:
        rows.append(("HTTP API POST /v1/ask", await http_ask(base, runs), ""))
        rows.append(("OpenAI endpoint (openai client)", await openai_chat(base, runs, stream=False), ""))
        rows.append(("OpenAI endpoint, streaming", await openai_chat(base, runs, stream=True), ""))
        rows.append(("A2A message/send (a2a-sdk client)", await a2a_send(base, runs), ""))
        answered, errors, wall = await openai_in_flight(base, in_flight)
    finally:
        stop(server)

    base_median, _ = summary(base_times)
    lines = [
        "# Protocols benchmark (issue 18)",
        "",
        f"`{' '.join(['.venv/bin/python', 'benchmarks/bench_protocols.py', '--runs', str(runs)])}` on "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"question `{QUESTION}` (echo agent over its stdio MCP server), {runs} runs after 3 warm-ups.",
        "",
        "| surface | median ms | p95 ms | added over Orchestrator.ask (median) |",
        "|---|---|---|---|",
    ]
    for name, times, kind in rows:
        if times is None:
            lines.append(f"| {name} | - | - | not measured |")
            continue
        median, p95 = summary(times)
        added = "" if kind in {"baseline", "floor"} else f"+{median - base_median:.1f} ms"
        lines.append(f"| {name} | {median:.1f} | {p95:.1f} | {added or kind} |")
    lines += [
        "",
        'The MCP, HTTP, OpenAI and A2A surfaces answer in their own server process: "added" is the '
        "client's round trip minus the in-process baseline measured here, so it is the transport plus "
        "the protocol's layer (the floors show each transport alone; about 1 ms either way is within "
        "this run's noise). The streaming OpenAI call sends every event of the question as a chunk, and "
        "A2A's SendMessage writes the task to the shared log (SQLite in the data dir here) at each change "
        "before it returns it: created, its events as status updates (those within 50 ms of each other in one), "
        "the answer, completed; five transactions for this question, so that any process can serve the task.",
        "",
        f"{in_flight} questions in flight at once through the OpenAI endpoint (non-streaming, one "
        f"`concerto serve`): {answered} answered, {errors} errors, {wall:.2f} s wall.",
        "",
    ]
    output.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "protocols.md")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.in_flight, args.output))
