"""City pack benchmarks (issue 4): MCP transports, MCP overhead, parallel vs sequential.

Run: .venv/bin/python -m benchmarks.bench_city [--n 30] [--output benchmarks/results/city.md]

1. A datetime question end to end through the `Orchestrator` (router, planner,
   executor, synthesizer), warm, with the datetime MCP server over stdio and over
   streamable HTTP.
2. The added cost of an MCP round trip: `getDateTime` through a warm `ClientSession`
   (stdio, HTTP) versus calling the same function (`local_time`) in process.
3. "What's the weather and the time?": the temperature and datetime agents run in
   parallel versus one after the other, against a local weather provider that answers
   in 200 ms.
Everything runs on 127.0.0.1; nothing reaches the internet.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import platform
import statistics
import subprocess
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks._timing import timed
from tests._services.mcp import start_http_server

NOW = datetime(2025, 3, 9, 8, 0, tzinfo=UTC)
CITIES = ["Chicago", "Denver", "Boston", "Miami", "Phoenix", "Honolulu", "Seattle", "Austin",
          "St. Louis", "Anchorage", "Portland", "Nashville", "Omaha"]  # fmt: skip
FORECAST = (
    b'{"latitude":47.6,"longitude":-122.3,"generationtime_ms":0.03,"utc_offset_seconds":0,'
    b'"timezone":"GMT","timezone_abbreviation":"GMT","elevation":56.0,'
    b'"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"\xc2\xb0F",'
    b'"weather_code":"wmo code"},'
    b'"current":{"time":"2025-06-01T19:00","interval":900,"temperature_2m":72.5,"weather_code":2}}'
)


def start_provider(delay_s: float) -> tuple[ThreadingHTTPServer, str]:
    """A local weather provider replaying one recorded Open-Meteo answer after `delay_s`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(delay_s)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(FORECAST)))
            self.end_headers()
            self.wfile.write(FORECAST)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def start_http_mcp(kind: str, weather_url: str) -> tuple[subprocess.Popen[bytes], str]:
    """`concerto mcp serve KIND --transport http` on a free port."""
    return start_http_server(kind, env={"CONCERTO_WEATHER_URL": weather_url})


def row(label: str, ms: list[float]) -> str:
    """A Markdown table row: label, median, 95th percentile, runs."""
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"| {label} | {statistics.median(ms):.2f} | {p95:.2f} | {len(ms)} |"


def settings_for(data_dir: Path, weather_url: str, servers: dict[str, str] | None = None) -> Any:
    from concerto.mcp.settings import MCPSettings
    from concerto.packs.city.settings import CitySettings
    from concerto.settings import Settings

    path = None
    data_dir.mkdir(parents=True, exist_ok=True)
    if servers:
        path = data_dir / "mcp_servers.yaml"
        path.write_text("".join(f"- name: {k}\n  url: {u}\n" for k, u in servers.items()))
    return Settings(data_dir=data_dir, store_events=False, agents="city").using(
        CitySettings(weather_url=weather_url), MCPSettings(mcp_servers_file=path)
    )


async def bench_end_to_end(n: int, data_dir: Path, weather_url: str, http: dict[str, str]) -> list[str]:
    from concerto.agents.loader import load_packs
    from concerto.contracts.orchestrator import OrchestratorOutput
    from concerto.orchestrator.engine import Orchestrator

    rows = []
    for label, servers in (("stdio", None), ("streamable HTTP", {"datetime": http["datetime"]})):
        settings = settings_for(data_dir / label.split()[0], weather_url, servers)
        async with Orchestrator(settings, packs=load_packs("city")) as orch:
            questions = itertools.cycle(
                t.format(c)
                for t in ("What time is it in {}?", "Current local time in {}", "time in {} now?")
                for c in CITIES
            )

            async def ask(orch: Any = orch, questions: Any = questions) -> None:
                # A different question each time: the router embeds every new text.
                result = await orch.ask(next(questions), now=NOW)
                assert isinstance(result, OrchestratorOutput), result
                assert result.agent_results[0].output["utc_offset"], result

            t = time.perf_counter()
            await ask()
            cold = (time.perf_counter() - t) * 1000
            ms = await timed(ask, n)
        rows.append(row(f"datetime question end to end, warm, MCP over {label}", ms))
        rows.append(row(f"(first question, incl. model load and server start, {label})", [cold]))
    return rows


async def bench_weather_and_time(n: int, data_dir: Path, slow_weather_url: str) -> list[str]:
    """The engine's own plan for "weather and time" (parallel, capped at 2) end to end."""
    from concerto.agents.loader import load_packs
    from concerto.contracts.orchestrator import OrchestratorOutput
    from concerto.orchestrator.engine import Orchestrator

    settings = settings_for(data_dir / "both", slow_weather_url)
    async with Orchestrator(settings, packs=load_packs("city")) as orch:

        async def ask() -> None:
            result = await orch.ask("What's the weather and the time in Seattle?", now=NOW)
            assert isinstance(result, OrchestratorOutput), result
            assert {r.agent for r in result.agent_results} == {"temperature", "datetime"}, result

        ms = await timed(ask, n)
    return [row("weather + time question end to end, engine's plan (provider 200 ms)", ms)]


async def bench_round_trip(n: int, weather_url: str, http: dict[str, str]) -> list[str]:
    from concerto.mcp.client import MCPServer
    from concerto.mcp.settings import MCPSettings
    from concerto.mcp.spec import ServerSpec
    from concerto.packs.city.calls import builtin_spec
    from concerto.packs.city.cities import resolve
    from concerto.packs.city.clock import local_time
    from concerto.packs.city.settings import CitySettings
    from concerto.settings import Settings

    settings = Settings().using(CitySettings(weather_url=weather_url))
    args = {"city": "Chicago", "at": NOW.isoformat()}

    async def in_process() -> None:
        local_time(resolve(args["city"]), NOW)

    rows = [row("getDateTime in process (resolve + zoneinfo)", await timed(in_process, n * 5))]
    for label, spec in (
        ("stdio", builtin_spec("datetime", settings)),
        ("streamable HTTP", ServerSpec(name="datetime", url=http["datetime"])),
    ):
        server = MCPServer.configured(spec, MCPSettings.of(settings))
        try:
            ms = await timed(lambda s=server: s.call("getDateTime", args), n * 5)
            rows.append(row(f"getDateTime over MCP {label} (warm session)", ms))
        finally:
            await server.aclose()
    return rows


async def bench_parallel(n: int, data_dir: Path, slow_weather_url: str) -> list[str]:
    from concerto.agents.task import TaskInput
    from concerto.packs.city.datetime_agent import DateTimeAgent
    from concerto.packs.city.temperature import TemperatureAgent
    from concerto.resources import Resources
    from concerto.testing import make_context

    settings = settings_for(data_dir / "parallel", slow_weather_url)
    resources = Resources(settings)
    ctx = make_context(
        "What's the weather and the time in Seattle?",
        now=NOW,
        settings=settings,
        resources=resources,
    )
    temperature, clock = TemperatureAgent(settings, resources), DateTimeAgent(settings, resources)
    seattle = TaskInput(question=ctx.query.query, inputs={"city": "Seattle"})
    boston = TaskInput(question=ctx.query.query, inputs={"city": "Boston"})

    async def parallel() -> None:
        await asyncio.gather(temperature.run(ctx, seattle), clock.run(ctx, seattle))

    async def sequential() -> None:
        await temperature.run(ctx, seattle)
        await clock.run(ctx, seattle)

    async def two_cities_parallel() -> None:
        await asyncio.gather(temperature.run(ctx, seattle), temperature.run(ctx, boston))

    async def two_cities_sequential() -> None:
        await temperature.run(ctx, seattle)
        await temperature.run(ctx, boston)

    try:
        rows = [
            row("weather + time, agents in parallel (provider 200 ms)", await timed(parallel, n)),
            row("weather + time, agents in sequence (provider 200 ms)", await timed(sequential, n)),
            row("weather in two cities, in parallel", await timed(two_cities_parallel, n)),
            row("weather in two cities, in sequence", await timed(two_cities_sequential, n)),
        ]
    finally:
        await resources.aclose()
    return rows


async def main(n: int) -> str:
    fast, fast_url = start_provider(0.0)
    slow, slow_url = start_provider(0.2)
    procs = [start_http_mcp("datetime", fast_url)]
    http = {"datetime": procs[0][1]}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data_dir = Path(tmp)
            rows = await bench_end_to_end(n, data_dir, fast_url, http)
            rows += await bench_round_trip(n, fast_url, http)
            rows += await bench_parallel(n, data_dir, slow_url)
            rows += await bench_weather_and_time(n, data_dir, slow_url)
    finally:
        for proc, _ in procs:
            proc.terminate()
            proc.wait(10)
        fast.shutdown()
        slow.shutdown()
    header = [
        "| measurement | median ms | p95 ms | runs |",
        "|---|---:|---:|---:|",
    ]
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
    when = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    intro = f"Machine: {machine}, Python {platform.python_version()}; {when}; load average {load}."
    return "\n".join([intro, "", *header, *rows])


NOTES = """
- End to end = `Orchestrator.ask` (router with local embeddings, planner, executor,
  synthesizer) with a different question each time, so every question is embedded;
  the MCP session is warm. The first question of an orchestrator also loads the
  embedding model and starts the stdio server (the HTTP server was already running).
- The MCP rows are one `getDateTime` call through the pack's shared `ClientSession`;
  the in-process row calls the same function (`resolve` + `local_time`) directly, so
  the difference is the cost of the MCP round trip (JSON-RPC, pipes or HTTP, the
  server's dispatch).
- Weather + time: the weather provider is a local server answering in 200 ms; the
  datetime call needs no provider, so running the two agents in parallel saves only
  the datetime call (a few ms). Two provider-bound calls (weather in two cities) show
  what parallel dispatch saves: one provider delay. The last row is the engine's own
  plan for "What's the weather and the time in Seattle?" (parallel, capped at 2;
  the same question each time).
- The machine is shared with other jobs (see the load average); medians are steadier
  than the 95th percentiles.
"""


def report(table: str, n: int) -> str:
    """The Markdown section for BENCHMARKS.md: command, table, what the rows mean."""
    command = ".venv/bin/python -m benchmarks.bench_city" + (f" --n {n}" if n != 30 else "")
    return f"## City pack (issue 4)\n\nCommand: `{command}`\n\n{table}\n{NOTES}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="timed runs per measurement (round trips: 5x)")
    parser.add_argument("--output", type=Path, help="also write the report to this Markdown file")
    options = parser.parse_args()
    text = report(asyncio.run(main(options.n)), options.n)
    print(text)
    if options.output:
        options.output.write_text(text, encoding="utf-8")
