"""The three MCP servers of 002_*.txt: weather, datetime and echo (official `mcp` SDK, 1.x).

Each tool returns the result shape of the spec's "MCP Protocol Messages" as structured
content. On failure it raises `concerto.mcp.errors.tool_error`, whose text is the spec's
error body, `{"error": {"code": ..., "message": ...}}`, so any MCP client shows a message
a user can act on and the pack's agents can read the code back.
The pack declares `weather_server`, `datetime_server` and `echo_server`; run one with
`concerto mcp serve weather|datetime|echo --transport stdio|http`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from concerto.mcp.errors import tool_error
from concerto.mcp.serve import HTTP_PATH
from concerto.packs.city.models import MAX_ECHO_CHARS

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

ServerKind = Literal["weather", "datetime", "echo"]
SERVER_KINDS: tuple[ServerKind, ...] = ("weather", "datetime", "echo")
TOOL_OF: dict[str, str] = {"weather": "getTemperature", "datetime": "getDateTime", "echo": "echo"}
PROVIDER_TIMEOUT_S = 4.0  # below the agents' 5 s request timeout, so the provider's error wins


def _resolve(city: str) -> Any:
    from concerto.packs.city.cities import CityError, resolve

    try:
        return resolve(city)
    except CityError as exc:
        raise tool_error(exc.code, exc.message, {"reason": exc.reason, "options": exc.options}) from None


def build_server(kind: ServerKind, *, host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """A FastMCP server for one kind; the tool is registered with the spec's name."""
    from mcp.server.fastmcp import FastMCP

    server = FastMCP(
        name=f"concerto-{kind}",
        host=host,
        port=port,
        streamable_http_path=HTTP_PATH,
        log_level="WARNING",
        instructions=f"Concerto city pack: the {TOOL_OF[kind]} tool for US cities.",
    )
    {"weather": _add_weather, "datetime": _add_datetime, "echo": _add_echo}[kind](server)
    if kind != "echo":
        # Load the city table while the client connects, not during the first call.
        import threading

        from concerto.packs.city.cities import table

        threading.Thread(target=table, name="city-table", daemon=True).start()
    return server


def weather_server(host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """The weather server (getTemperature)."""
    return build_server("weather", host=host, port=port)


def datetime_server(host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """The date-time server (getDateTime)."""
    return build_server("datetime", host=host, port=port)


def echo_server(host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """The echo server (echo)."""
    return build_server("echo", host=host, port=port)


def _add_weather(server: FastMCP) -> None:
    from concerto.packs.city.settings import CitySettings

    base_url = CitySettings().weather_url
    # One HTTP client per server process: connections and the TLS context are reused
    # (creating a client costs tens of milliseconds per call).
    clients: list[Any] = []

    @server.tool(name="getTemperature")
    async def get_temperature(city: str) -> dict[str, Any]:
        """Current temperature in Fahrenheit and a short weather description for a US city.

        `city` is a US city name as people type it ("Seattle", "St. Louis", "Springfield, IL").
        """
        import httpx

        from concerto.packs.city.weather import WeatherError, current_temperature

        place = _resolve(city)
        if not clients:
            clients.append(httpx.AsyncClient(timeout=PROVIDER_TIMEOUT_S))
        try:
            result = await current_temperature(place, base_url, timeout_s=PROVIDER_TIMEOUT_S, client=clients[0])
        except WeatherError as exc:
            raise tool_error(exc.code, exc.message) from None
        return result.model_dump()


def _add_datetime(server: FastMCP) -> None:
    @server.tool(name="getDateTime")
    async def get_date_time(city: str, at: str | None = None) -> dict[str, Any]:
        """Local date and time, IANA timezone and UTC offset (±HH:MM) of a US city.

        `city` is a US city name; `at` is an optional ISO 8601 instant (default: now).
        """
        from concerto.packs.city.clock import local_time

        place = _resolve(city)
        instant = datetime.now(UTC)
        if at:
            try:
                instant = datetime.fromisoformat(at)
            except ValueError:
                raise tool_error(400, f"'{at}' is not an ISO 8601 instant.") from None
            if instant.tzinfo is None:
                instant = instant.replace(tzinfo=UTC)
        return local_time(place, instant).model_dump()


def _add_echo(server: FastMCP) -> None:
    @server.tool(name="echo")
    async def echo(text: str) -> dict[str, Any]:
        """Return the given text unchanged (1 to 1000 characters)."""
        if not text or not text.strip():
            raise tool_error(400, "Echo text must be non-empty.")
        if len(text) > MAX_ECHO_CHARS:
            raise tool_error(
                400,
                f"Echo text is {len(text)} characters; the maximum is {MAX_ECHO_CHARS}.",
            )
        return {"original_text": text, "echo_text": text}
