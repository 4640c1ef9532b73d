"""The page in Chromium on a server that requires `CONCERTO_API_TOKEN` (server/edge.py): opened
once with `?token=`, its cookie carries every later request (the page's modules, its questions
and their streams, an upload, a delete) with no token in the page's code or address."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _services.serve import running_serve

TOKEN = "page-token-for-tests"
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {"CONCERTO_DATA_DIR": str(tmp_path_factory.mktemp("data")), "CONCERTO_AGENTS": "echo,analytics"}
    with running_serve({**env, "CONCERTO_API_TOKEN": TOKEN}) as served:
        yield served.base


def test_the_page_works_on_its_cookie(browser: Any, guarded: str, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        asked = page.goto(guarded + "/")
        assert asked is not None and asked.status == 401 and page.locator("input#token").count() == 1
        page.fill("input#token", TOKEN)
        page.click("button[type=submit]")
        page.wait_for_selector("html[data-ready='1']")
        assert page.url == guarded + "/" and TOKEN not in page.content()
        cookie = next(c for c in context.cookies() if c["name"].startswith("concerto_token"))
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["value"] != TOKEN

        page.fill("#question", "echo: signed in")
        page.press("#question", "Enter")
        sync_api.expect(page.locator("#status")).to_have_text(re.compile(r"\.$"), timeout=60_000)
        assert 'Echo: "signed in"' in page.locator("#answer").text_content()

        csv = tmp_path / "shop.csv"
        csv.write_text("region,sales\nWest,10\nEast,20\n", encoding="utf-8")
        page.click("#tab-data")
        page.set_input_files("#file", str(csv))
        sync_api.expect(page.locator("#upload-status")).to_have_text(re.compile("^Loaded"), timeout=60_000)
        page.once("dialog", lambda d: d.accept())
        page.click("button[aria-label='Delete shop']")
        sync_api.expect(page.locator("#source option[value='shop']")).to_have_count(0)
        assert problems == []
    finally:
        context.close()
