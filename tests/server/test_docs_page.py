"""`/docs` (server/docs.py) in Chromium with every other host blocked: Swagger UI loads from the
server itself under its strict Content-Security-Policy, and a question sent from it (a POST
from the server's own page) passes the edge's cross-site check."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from concerto.server.docs import policy


def test_the_policy_allows_exactly_the_inline_scripts_by_hash() -> None:
    page = "<script src='/x.js'></script><script>start()</script>"
    assert "'sha256-" in policy(page) and policy(page).count("'sha256-") == 1
    assert "'unsafe-inline'" not in policy(page) and "'unsafe-eval'" not in policy(page)


def test_docs_work_offline_and_send_questions(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    foreign: list[str] = []
    problems: list[str] = []

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith(("data:", "blob:")) or urlsplit(url).hostname == "127.0.0.1":
            r.continue_()
        else:
            foreign.append(url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        response = page.goto(server + "/docs")
        assert response is not None and "script-src 'self' 'sha256-" in response.headers["content-security-policy"]
        page.wait_for_selector("#operations-default-ask_v1_ask_post", timeout=60_000)
        page.click("#operations-default-ask_v1_ask_post .opblock-summary")
        page.click("#operations-default-ask_v1_ask_post .try-out__btn")
        page.fill("#operations-default-ask_v1_ask_post textarea.body-param__text", json.dumps({"query": "echo: hi"}))
        with page.expect_response(lambda r: r.url.endswith("/v1/ask")) as answered:
            page.click("#operations-default-ask_v1_ask_post .execute")
        assert answered.value.status == 200, answered.value.text()
        assert answered.value.json()["response"] == 'Echo: "hi"'
        assert foreign == [] and problems == [], (foreign, problems)
    finally:
        context.close()
