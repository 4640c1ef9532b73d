"""A process's memory as Linux reports it in /proc: how far a server's peak RSS rose while
something was sent to it (the tests of its limits, and benchmarks/bench_data_edges.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def measurable() -> bool:
    """Whether this system reports memory as `peak_growth` reads it (Linux's /proc)."""
    return Path("/proc/self/status").exists()


def memory_kb(pid: int, field: str) -> int:
    """A field of the process's /proc status, in KB: VmRSS now, VmHWM the peak so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@dataclass
class Growth:
    """How far the peak rose, in MB: set when the `peak_growth` block ends."""

    mb: float = 0.0


@contextmanager
def peak_growth(pid: int) -> Iterator[Growth]:
    """Measure how far the process's peak RSS rises above its RSS at the start, while the block
    runs. The peak (VmHWM) starts again from the RSS first (Linux's clear_refs "5"), so an
    earlier peak (the router's model loading at start, an earlier request) is not counted."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    before = memory_kb(pid, "VmRSS")
    growth = Growth()
    try:
        yield growth
    finally:
        growth.mb = (memory_kb(pid, "VmHWM") - before) / 1024
