"""Fixtures of the LLM tests: small misbehaving HTTP servers (the real llama.cpp server is in tests/conftest.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from _services.threaded_http import serve_in_thread
from concerto.testing import allow_llm_endpoint


class _Misbehaving(BaseHTTPRequestHandler):
    """Answers `POST /<behaviour>/v1/chat/completions` badly, in the way the path names."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        behaviour = self.path.strip("/").split("/")[0]
        if behaviour == "slow":
            time.sleep(2.0)
            self._send(200, "application/json", json.dumps({"choices": []}))
        elif behaviour == "garbage":
            self._send(200, "text/plain", "<html>this is not a chat completion</html>")
        elif behaviour == "nochoices":
            self._send(200, "application/json", json.dumps({"object": "chat.completion"}))
        elif behaviour == "error500":
            body = {"error": {"message": "model crashed: out of memory", "type": "server_error"}}
            self._send(500, "application/json", json.dumps(body))
        elif behaviour == "trace500":
            # llama-cpp-python puts the Python traceback of its failure in the message.
            message = (
                "1 validation error: bad response_format\n\n"
                'Traceback (most recent call last):\n  File "/srv/app.py", line 3, in f\n'
            )
            self._send(500, "application/json", json.dumps({"error": {"message": message}}))
        elif behaviour == "text500":
            self._send(500, "text/plain", "Internal Server Error")
        elif behaviour == "unauthorized":
            body = {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
            self._send(401, "application/json", json.dumps(body))
        else:
            self._send(404, "application/json", json.dumps({"detail": "Not Found"}))

    def _send(self, status: int, content_type: str, body: str) -> None:
        data = body.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (the timeout test); nothing to answer

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output quiet."""


@pytest.fixture(scope="session")
def bad_server() -> Iterator[str]:
    """Base URL (`http://127.0.0.1:PORT`) of an HTTP server that answers chat calls badly."""
    with serve_in_thread(_Misbehaving) as url:
        allow_llm_endpoint(url)
        yield url
