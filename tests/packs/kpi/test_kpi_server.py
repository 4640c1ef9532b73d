"""The same store against a real ChromaDB server (`chroma run`), through `CONCERTO_CHROMA_URL`."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import KPIRecord
from concerto.packs.kpi.store import KPIStore
from concerto.resources import Resources
from concerto.settings import Settings

CHROMA = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not Path(CHROMA).exists():
        pytest.skip("the chroma server binary is not installed")
    port = _free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen(
        [CHROMA, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.skip("the chroma server did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_store_on_a_chroma_server(chroma_url: str, tmp_path: Path, kpi_resources: Resources) -> None:
    settings = Settings(data_dir=tmp_path, chroma_url=chroma_url)
    store = KPIStore(settings, kpi_resources.embedder)
    assert store.location == chroma_url
    store.add(
        [KPIRecord("attrition-rate", "home-loan", Month(2025, m), 3.0 + m / 10, "%", f"m{m}") for m in range(1, 7)]
    )
    got = store.query("attrition-rate", "home-loan", Month(2025, 2), Month(2025, 4))
    assert [(r.month.month, r.value) for r in got] == [(2, 3.2), (3, 3.3), (4, 3.4)]
    assert not (tmp_path / "chroma").exists()  # nothing embedded was created
