"""A 2 GB upload against `concerto serve` on loopback (a real socket, uvicorn's own reading):
refused with 413 in the error contract, without the server reading the body (declared too
long) or after reading only about the limit of it (a stream), with its memory bounded and
nothing stored. The in-process tests of the route are in test_routes.py.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _helpers.workbooks import understated, workbook
from _services.memory import measurable, peak_growth
from _services.serve import running_serve

LIMIT_MB = 64
TWO_GB = 2 * 2**30
MB = b"x" * 2**20
HEAD = b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\n\r\na\n'
MULTIPART = {"content-type": "multipart/form-data; boundary=b"}


class Server:
    def __init__(self, base: str, pid: int, data_dir: Path) -> None:
        self.base, self.pid, self.data_dir = base, pid, data_dir

    def stored(self) -> list[str]:
        uploads = self.data_dir / "uploads"
        return sorted(str(p.relative_to(uploads)) for p in uploads.rglob("*")) if uploads.exists() else []


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not measurable():
        pytest.skip("reads the server's memory from /proc (Linux)")
    data = tmp_path_factory.mktemp("data")
    env = {k: None for k in os.environ if k.startswith("CONCERTO_")}
    env |= {"CONCERTO_DATA_DIR": str(data), "CONCERTO_DATA_MAX_FILE_MB": str(LIMIT_MB), "CONCERTO_AGENTS": "echo"}
    # ready, not only alive: the router's model loads in the background at start
    with running_serve(env, ready="/ready") as served:
        base = served.base
        assert httpx.get(f"{base}/v1/data/limits").json() == {"max_file_bytes": LIMIT_MB * 2**20}
        assert httpx.get(f"{base}/v1/data/sources").json() == []  # the store opened: its imports are not the upload's
        yield Server(base, served.process.pid, data)


def two_gb(sent: list[int]) -> Iterator[bytes]:
    """A 2 GB multipart body made as it is sent; `sent` counts the megabytes taken from it."""
    yield HEAD
    for _ in range(TWO_GB // len(MB)):
        sent.append(1)
        yield MB
    yield b"\r\n--b--\r\n"


def refusal(response: httpx.Response) -> str:
    """The error contract of a 413 that closed the connection."""
    assert response.status_code == 413, response.text
    assert response.headers["connection"] == "close"
    body: dict[str, Any] = response.json()
    assert body["status"] == "failed" and body["error_category"] == "invalid_input"
    message: str = body["error_message"]
    assert f"over the limit of {LIMIT_MB} MB (CONCERTO_DATA_MAX_FILE_MB)" in message
    return message


def nothing_stored(server: Server) -> None:
    assert httpx.get(f"{server.base}/v1/data/sources").json() == []
    assert server.stored() == []


def test_a_body_declared_at_2_gb_is_refused_before_it_is_sent(server: Server) -> None:
    # As curl sends a large file: headers, then the body only after "100 Continue".
    with socket.create_connection(("127.0.0.1", int(server.base.rsplit(":", 1)[1])), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/data/sources HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\n"
            + f"Content-Length: {TWO_GB}\r\n".encode()
            + b"Expect: 100-continue\r\n\r\n"
        )
        answer = b""
        while chunk := sock.recv(65536):  # the server closes the connection after its answer
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"100 Continue" not in answer
    assert b"the upload (2,048 MB) is over the limit of 64 MB" in body
    nothing_stored(server)


def test_a_body_declared_at_2_gb_is_not_read(server: Server) -> None:
    sent: list[int] = []
    headers = {**MULTIPART, "content-length": str(len(HEAD) + TWO_GB + 9)}
    response = httpx.post(f"{server.base}/v1/data/sources", content=two_gb(sent), headers=headers, timeout=30)
    assert "the upload (2,048 MB)" in refusal(response)
    assert len(sent) < 64  # what the sockets' buffers took before the server closed, not 2 GB
    nothing_stored(server)


def test_a_2_gb_stream_is_cut_off_at_the_limit_in_bounded_memory(server: Server) -> None:
    # Chunked, so the server learns the size only by reading: it reads the limit and stops.
    sent: list[int] = []
    started = time.monotonic()
    with peak_growth(server.pid) as grown:
        response = httpx.post(f"{server.base}/v1/data/sources", content=two_gb(sent), headers=MULTIPART, timeout=60)
    assert refusal(response).startswith("the file is over")
    assert LIMIT_MB <= len(sent) < LIMIT_MB + 64  # the limit, then what the buffers took
    assert time.monotonic() - started < 30
    assert grown.mb < LIMIT_MB / 2, f"the server's peak memory grew {grown.mb:.0f} MB over {LIMIT_MB} MB read"
    nothing_stored(server)


def test_an_upload_within_the_limit_still_loads(server: Server) -> None:
    response = httpx.post(
        f"{server.base}/v1/data/sources", files={"file": ("small.csv", b"a,b\n1,2\n3,4\n")}, timeout=30
    )
    assert response.status_code == 201, response.text
    assert response.json()["row_count"] == 2
    assert server.stored() == ["small.csv"]
    assert httpx.delete(f"{server.base}/v1/data/sources/small", timeout=10).status_code == 204
    nothing_stored(server)


def test_a_workbook_bomb_is_413_and_a_liar_422_without_reading_them(server: Server, tmp_path: Path) -> None:
    bomb = workbook(tmp_path / "bomb.xlsx", rows=300_000)  # 5 MB unpacking to 85 MB (the limit is 64)
    liar = understated(workbook(tmp_path / "liar.xlsx", rows=300_000))  # the same, declaring 1 KB
    with peak_growth(server.pid) as grown:
        response = httpx.post(
            f"{server.base}/v1/data/sources", files={"file": ("bomb.xlsx", bomb.read_bytes())}, timeout=60
        )
        assert response.status_code == 413, response.text
        assert response.json()["error_message"] == (
            "bomb.xlsx unpacks to 85 MB; the limit is 64 MB (CONCERTO_DATA_MAX_UNPACKED_MB)"
        )
        response = httpx.post(
            f"{server.base}/v1/data/sources", files={"file": ("liar.xlsx", liar.read_bytes())}, timeout=60
        )
        assert response.status_code == 422, response.text
        assert response.json()["error_message"] == (
            "liar.xlsx could not be read as an Excel workbook: its part xl/worksheets/sheet1.xml holds more than "
            "the 1,000 bytes it declares"
        )
    assert grown.mb < 32
    nothing_stored(server)


def test_a_workbook_just_within_the_limit_loads_in_bounded_memory(server: Server, tmp_path: Path) -> None:
    path = workbook(tmp_path / "fine.xlsx", rows=200_000)  # unpacks to 58 MB, fastexcel holds it whole
    with peak_growth(server.pid) as grown:
        response = httpx.post(
            f"{server.base}/v1/data/sources", files={"file": ("fine.xlsx", path.read_bytes())}, timeout=120
        )
    assert response.status_code == 201, response.text
    assert response.json()["row_count"] == 200_000
    assert grown.mb < 256, "one upload may raise the server's memory by 256 MB at most"
    assert httpx.delete(f"{server.base}/v1/data/sources/fine", timeout=10).status_code == 204


def test_a_table_of_10000_columns_loads_in_bounded_memory(server: Server, tmp_path: Path) -> None:
    header = ",".join(f"metric_{n}" for n in range(10_000))
    rows = "".join(",".join(str((r * n) % 997) for n in range(10_000)) + "\n" for r in range(10))
    started = time.monotonic()
    with peak_growth(server.pid) as grown:
        response = httpx.post(
            f"{server.base}/v1/data/sources", files={"file": ("wide.csv", f"{header}\n{rows}".encode())}, timeout=120
        )
    took = time.monotonic() - started
    assert response.status_code == 201, response.text
    assert len(response.json()["columns"]) == 10_000
    assert grown.mb < 256, "one upload may raise the server's memory by 256 MB at most"
    assert took < 60, f"{took:.0f} s (it was 2 min 18 s)"
    assert httpx.delete(f"{server.base}/v1/data/sources/wide", timeout=10).status_code == 204
