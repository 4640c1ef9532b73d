"""What the page's browser tests share: `concerto serve` on loopback (one per test module),
Debian's Chromium driven by Playwright (launched by its path, never `playwright install`),
and pages on which every request to another host is blocked and recorded.

The browser fixtures skip, with the reason, when Playwright or Chromium is not installed
(`pip install playwright`; `apt-get install -y chromium`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from _services.serve import running_serve

CHROMIUM = Path(os.environ.get("CONCERTO_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`concerto serve` with every pack, no Prometheus configured, in a data dir of its own."""
    env = {"CONCERTO_DATA_DIR": str(tmp_path_factory.mktemp("data")), "CONCERTO_AGENTS": None}
    # the agents view shows metrics as unavailable
    env |= {"CONCERTO_PROMETHEUS_URL": None, "CONCERTO_GRAFANA_URL": None}
    with running_serve(env) as served:
        yield served.base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture
def new_page(browser: Any, server: str) -> Iterator[Callable[..., Any]]:
    """`new_page(path="/", **context_options)`: the page loaded and ready, in a context of its own
    (e.g. `color_scheme="dark"`, `viewport=...`), with `page.foreign` (requests to other hosts,
    blocked) and `page.problems` (console and page errors); every context closes after the test."""
    contexts: list[Any] = []

    def open_page(path: str = "/", **options: Any) -> Any:
        context = browser.new_context(**{"viewport": DESKTOP, **options})
        contexts.append(context)
        page = context.new_page()
        page.foreign = []
        page.problems = []

        def route(r: Any) -> None:
            url = r.request.url
            if url.startswith(("data:", "blob:")) or urlsplit(url).hostname in ("127.0.0.1", "localhost"):
                r.continue_()
            else:
                page.foreign.append(url)
                r.abort()

        page.route("**/*", route)
        page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.goto(server + path)
        page.wait_for_selector("html[data-ready='1']")
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page: Callable[..., Any]) -> Any:
    """The page at desktop size in the light scheme."""
    return new_page()


def ask(page: Any, question: str) -> None:
    """Type the question, press Enter, and wait until the status line says it is over."""
    from playwright.sync_api import expect

    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator("#status")).to_have_text(re.compile(r"\.$"), timeout=60_000)


@pytest.fixture(name="ask")
def ask_fixture() -> Callable[[Any, str], None]:
    """`ask(page, question)`, for the test modules (a conftest is not imported by name)."""
    return ask
