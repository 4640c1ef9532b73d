"""Timing helpers shared by the benchmarks (`benchmarks._timing`)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any


async def timed(fn: Callable[[], Awaitable[Any]], n: int, warmup: int = 1) -> list[float]:
    """Milliseconds of `n` awaited calls of `fn`, after `warmup` calls that are not counted."""
    for _ in range(warmup):
        await fn()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def percentile(xs: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `xs`, nearest rank."""
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
