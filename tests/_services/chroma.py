"""A real ChromaDB server (`chroma run`, installed with the chromadb package) on loopback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .ports import ServiceUnavailable, free_port, stop, wait_for_http

HINT = "pip install chromadb (it brings the `chroma` command), or set CONCERTO_SKIP_CHROMA=1"


def chroma_binary() -> str:
    found = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(found).exists():
        raise ServiceUnavailable("the `chroma` command is not installed beside this Python")
    return found


@contextmanager
def running_chroma(path: Path) -> Iterator[str]:
    """`chroma run` storing under `path`; yields its base URL and stops it afterwards."""
    port = free_port()
    proc = subprocess.Popen(
        [chroma_binary(), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/api/v2/heartbeat", proc, timeout_s=60)
        yield url
    finally:
        stop(proc)
