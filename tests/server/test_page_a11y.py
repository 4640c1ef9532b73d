"""Accessibility checked by a tool: axe-core (vendored for the tests, tests/server/vendor/) run
in the page on its main views (empty, an answered question with its panels, the agents, the
data with a profile shown) in the light and the dark scheme and at phone width (390×844),
and on a saved run, with every rule axe runs by default (WCAG 2.0-2.2 A and AA, including
colour contrast, and its best practices); and a visible focus outline on every stop of the
Tab order.

axe is added with `page.evaluate` (the DevTools protocol), so the page keeps its own strict
Content-Security-Policy, which an added <script> would break.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

AXE = Path(__file__).parent / "vendor" / "axe-core-4.14.1" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
NOW = "2025-06-15T12:00:00Z"  # the KPI demo's months
QUESTION = "home-loan attrition rate previous 4 months"  # an answer with a table, a line chart, follow-ups
SOURCE = b"region,sales,margin\nWest,10,0.2\nEast,20,0.3\nNorth,15,0.25\n"

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")

# The first opaque background colour at or behind an element (the page's, at worst).
BEHIND = """const behind = (el) => {
  for (let e = el; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (!/^rgba\\(.*, 0\\)$|^transparent$/.test(c)) return c;
  }
  return getComputedStyle(document.body).backgroundColor;
};"""

# Every rule axe runs by default: its violations, and the colours of the text whose contrast it
# could not decide (text partly scrolled out of a table's box; the diagram's SVG text over its
# boxes: their fill and the box's fill).
RUN_AXE = (
    """async () => {
  """
    + BEHIND
    + """
  const colours = (el) => el instanceof SVGElement
    ? { fg: getComputedStyle(el).fill, bg: getComputedStyle(el.closest("g").querySelector("rect")).fill }
    : { fg: getComputedStyle(el).color, bg: behind(el) };
  const result = await axe.run(document, { resultTypes: ["violations", "incomplete"] });
  const nodes = (v) => v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary }));
  return {
    violations: result.violations.map((v) => ({ rule: v.id, impact: v.impact, help: v.help, nodes: nodes(v) })),
    undecided: result.incomplete.filter((v) => v.id === "color-contrast").flatMap((v) => v.nodes.map((n) =>
      ({ target: n.target.join(" "), ...colours(document.querySelector(n.target[0])) }))),
  };
}"""
)

# The focused element: its outline, and the colour behind the outline (its parent's).
FOCUSED = (
    """() => {
  """
    + BEHIND
    + """
  const el = document.activeElement;
  const s = getComputedStyle(el);
  return { id: el.id || el.textContent.trim().slice(0, 30) || el.tagName, style: s.outlineStyle,
           width: parseFloat(s.outlineWidth), colour: s.outlineColor, behind: behind(el.parentElement) };
}"""
)


@pytest.fixture(scope="module")
def with_source(server: str) -> str:
    """A small source loaded on the server, so the data view lists one and shows its profile."""
    r = httpx.post(f"{server}/v1/data/sources", files={"file": ("regions.csv", SOURCE)}, timeout=60)
    assert r.status_code == 201, r.text
    return "regions"


def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two CSS colours given as `rgb(r, g, b)`."""

    def luminance(colour: str) -> float:
        r, g, b = (float(v) / 255 for v in re.findall(r"[\d.]+", colour)[:3])
        lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def violations(page: Any) -> list[dict[str, Any]]:
    """axe's violations on the page as it is, and text whose contrast axe could not decide
    that is under 4.5:1 by its colours (computed here)."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate(RUN_AXE)
    found: list[dict[str, Any]] = result["violations"]
    low = [n for n in result["undecided"] if contrast(n["fg"], n["bg"]) < 4.5]
    if low:
        nodes = [{"target": n["target"], "summary": f"{n['fg']} on {n['bg']}"} for n in low]
        found.append({"rule": "color-contrast", "impact": "serious", "help": "contrast under 4.5:1", "nodes": nodes})
    return found


def report(found: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for view, items in found.items():
        for v in items:
            lines.append(f"{view}: {v['rule']} ({v['impact']}): {v['help']}")
            lines += [f"    {n['target']}: {n['summary']}".replace("\n", " ") for n in v["nodes"][:5]]
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("scheme", "viewport"),
    [("light", DESKTOP), ("dark", DESKTOP), ("light", PHONE), ("dark", PHONE)],
    ids=["light", "dark", "phone-light", "phone-dark"],
)
def test_the_main_views_have_no_axe_violations(
    new_page: Callable[..., Any],
    ask: Callable[[Any, str], None],
    with_source: str,
    scheme: str,
    viewport: dict[str, int],
) -> None:
    page = new_page(f"/?now={NOW}", color_scheme=scheme, viewport=viewport)
    assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (scheme == "dark")
    found = {"empty page": violations(page)}
    ask(page, QUESTION)
    sync_api.expect(page.locator(".panel canvas[data-drawn='1']")).to_have_count(1)
    assert page.locator(".panel table.data tbody tr").count() >= 1
    assert page.locator("#answer .chip").count() >= 1  # follow-up questions
    found["answered"] = violations(page)
    page.click("#tab-agents")
    page.wait_for_selector("#agent-list .agent")
    found["agents"] = violations(page)
    page.click("#tab-data")
    page.click(f"#source-list button:has-text('{with_source}')")
    page.wait_for_selector("#profile table tbody tr")
    found["data"] = violations(page)
    if any(found.values()):
        pytest.fail(report(found), pytrace=False)
    assert page.problems == [] and page.foreign == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_saved_run_has_no_axe_violations(
    new_page: Callable[..., Any], browser: Any, ask: Callable[[Any, str], None], tmp_path: Path, scheme: str
) -> None:
    page = new_page(f"/?now={NOW}", color_scheme=scheme)
    ask(page, QUESTION)
    with page.expect_download() as got:
        page.click("#save-run")
    saved = tmp_path / "run.html"
    got.value.save_as(saved)
    context = browser.new_context(color_scheme=scheme, viewport=DESKTOP)
    try:
        offline = context.new_page()
        offline.goto(saved.as_uri())
        assert offline.locator(".panel img.chart-img").count() == 1
        found = {"saved run": violations(offline)}
    finally:
        context.close()
    if any(found.values()):
        pytest.fail(report(found), pytrace=False)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_tab_stop_shows_a_focus_outline(
    new_page: Callable[..., Any], ask: Callable[[Any, str], None], scheme: str
) -> None:
    page = new_page(f"/?now={NOW}", color_scheme=scheme)
    ask(page, QUESTION)
    page.focus("#tab-ask")
    stops: list[dict[str, Any]] = []
    while len(stops) < 100 and not page.evaluate("document.activeElement === document.body"):
        stop = page.evaluate(FOCUSED)
        if stops and stop["id"] == stops[0]["id"]:
            break
        stops.append(stop)
        page.keyboard.press("Tab")
    ids = [s["id"] for s in stops]
    # The scrolling lists are stops too (scrolled by keyboard); the panels' sort buttons are reached.
    assert ids[:5] == ["tab-ask", "chat-log", "question", "ask-button", "expertise"], ids
    assert {"timeline", "save-run", "kpi"} <= set(ids), ids
    hidden = [s for s in stops if s["style"] == "none" or s["width"] < 2 or contrast(s["colour"], s["behind"]) < 3]
    assert hidden == [], hidden  # WCAG 2.4.7: visible; 1.4.11: 3:1 against what is behind it
