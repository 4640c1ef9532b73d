"""The MCP layer's tests run on asyncio's event loop and on uvloop, the loop `concerto serve` runs on
(where it is installed: the dev extra leaves it out on Windows)."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
from collections.abc import Callable, Mapping

import pytest


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    factories: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"asyncio": asyncio.new_event_loop}
    if importlib.util.find_spec("uvloop") is not None:
        factories["uvloop"] = importlib.import_module("uvloop").new_event_loop
    return factories
