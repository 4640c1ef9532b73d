"""A local weather provider that replays recorded Open-Meteo responses (no network, no mocks).

The weather MCP server runs in its own process, so the provider it talks to must be a
real socket: this is one, on 127.0.0.1, answering every request with the response set
by the test (status, body, delay) and recording the query strings it received.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

RECORDINGS = Path(__file__).parent / "recordings"


def recording(name: str) -> bytes:
    return (RECORDINGS / name).read_bytes()


def forecast(temperature: Any = 72.5, code: Any = 2) -> bytes:
    """The recorded current-conditions answer with another temperature or weather code."""
    body = json.loads(recording("open_meteo_current.json"))
    body["current"]["temperature_2m"] = temperature
    body["current"]["weather_code"] = code
    return json.dumps(body).encode()


class Replay:
    """Serves `status`/`body` after `delay_s` for any GET; `requests` holds what was asked."""

    def __init__(self) -> None:
        self.status = 200
        self.body = recording("open_meteo_current.json")
        self.delay_s = 0.0
        self.requests: list[dict[str, list[str]]] = []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                replay.requests.append({"path": [parts.path], **parse_qs(parts.query)})
                if replay.delay_s:
                    time.sleep(replay.delay_s)
                self.send_response(replay.status if parts.path == "/v1/forecast" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(replay.body)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up (timeout tests)
                    self.wfile.write(replay.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def set(self, body: bytes | None = None, status: int = 200, delay_s: float = 0.0) -> None:
        self.body = body if body is not None else recording("open_meteo_current.json")
        self.status = status
        self.delay_s = delay_s

    def __enter__(self) -> Replay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
