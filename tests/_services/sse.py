"""Reading a server-sent event stream to its end, as the runs' tests do."""

from __future__ import annotations

import json
from typing import Any

from starlette.testclient import TestClient


def read_stream(client: TestClient, url: str, **headers: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(event, id, data) of every item of a server-sent event stream, to its end."""
    with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(response.iter_text())
    items = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        items.append((fields["event"], fields["id"], json.loads(fields["data"])))
    return items
