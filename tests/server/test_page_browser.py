"""The web page in a real browser: Playwright driving Debian's Chromium (launched by its path,
never `playwright install`) against `concerto serve` on loopback, with every other host blocked
(the fixtures are in conftest.py).

Skipped, with the reason, when Playwright or Chromium is not installed
(`pip install playwright`; `apt-get install -y chromium`).
"""

from __future__ import annotations

import gzip
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

# Screenshots go to docs/screenshots only when asked (CONCERTO_SCREENSHOTS=1), so a test run
# leaves the checkout as it was; otherwise to a temporary folder (they are still taken).
SHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("CONCERTO_SCREENSHOTS") == "1"
    else Path(tempfile.mkdtemp(prefix="concerto-shots-"))
)
STATIC = Path(__file__).resolve().parents[2] / "src" / "concerto" / "server" / "static"
FIRST_LOAD = ["index.html", "style.css", "app.js", "stream.js", "dom.js", "diagram.js", "panels.js"]

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
Ask = Callable[[object, str], None]  # conftest.ask: type the question, press Enter, wait for the answer


def test_echo_shows_html_as_text_and_survives_reload(page: object, ask: Ask) -> None:
    ask(page, "echo: <b>hi</b>")
    answer = page.locator("#answer .response")  # type: ignore[attr-defined]
    assert "<b>hi</b>" in answer.text_content()
    assert page.locator("#answer b").count() == 0  # type: ignore[attr-defined]
    assert page.locator("#diagram .node[data-state='done']").count() == 1  # type: ignore[attr-defined]
    assert page.locator("#timeline li").count() >= 5  # type: ignore[attr-defined]
    page.reload()  # type: ignore[attr-defined]
    page.wait_for_selector("html[data-ready='1']")  # type: ignore[attr-defined]
    log = page.locator("#chat-log")  # type: ignore[attr-defined]
    assert "echo: <b>hi</b>" in log.text_content()
    assert log.locator("b").count() == 0
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_commercial_question_diagram_and_table(page: object, ask: Ask) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    ask(page, "What's the impact of increased sampling on Kisqali prescriptions?")
    node = page.locator("#diagram .node").first  # type: ignore[attr-defined]
    assert node.get_attribute("data-state") == "done"
    panel = page.locator(".panel").first  # type: ignore[attr-defined]
    assert panel.locator("table.data tbody tr").count() >= 1
    page.screenshot(path=str(SHOTS / "ask.png"), full_page=True)  # type: ignore[attr-defined]
    page.set_viewport_size({"width": 400, "height": 860})  # type: ignore[attr-defined]
    page.screenshot(path=str(SHOTS / "ask-400px.png"), full_page=True)  # type: ignore[attr-defined]
    page.set_viewport_size({"width": 1280, "height": 900})  # type: ignore[attr-defined]
    page.click("#tab-agents")  # type: ignore[attr-defined]
    page.wait_for_selector("#agent-list .agent")  # type: ignore[attr-defined]
    metrics = page.locator('#agent-list .agent:has-text("metrics_agent")')  # type: ignore[attr-defined]
    assert metrics.get_attribute("data-available") == "no"  # no Prometheus configured for this server
    assert "CONCERTO_PROMETHEUS_URL" in metrics.text_content()
    page.screenshot(path=str(SHOTS / "agents.png"))  # type: ignore[attr-defined]
    page.click("#tab-data")  # type: ignore[attr-defined]
    page.wait_for_selector("#source-list li")  # type: ignore[attr-defined]
    page.screenshot(path=str(SHOTS / "data.png"))  # type: ignore[attr-defined]
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_a_dropped_stream_reconnects_and_the_answer_arrives(page: object, ask: Ask) -> None:
    opened: list[str] = []

    def drop_first(r: object) -> None:
        opened.append(r.request.url)  # type: ignore[attr-defined]
        if len(opened) == 1:
            r.abort("connectionreset")  # type: ignore[attr-defined]
        else:
            r.continue_()  # type: ignore[attr-defined]

    page.route("**/v1/runs/*/events*", drop_first)  # type: ignore[attr-defined]
    page.problems.clear()  # type: ignore[attr-defined]
    ask(page, "echo: still here")
    assert len(opened) >= 2  # the stream was opened again after the drop
    assert 'Echo: "still here"' in page.locator("#answer").text_content()  # type: ignore[attr-defined]
    assert page.locator("#diagram .node").first.get_attribute("data-state") == "done"  # type: ignore[attr-defined]


def test_upload_profile_delete(page: object, tmp_path: Path) -> None:
    csv = tmp_path / "shop.csv"
    csv.write_text('region,sales,"<img src=x onerror=alert(1)>"\nWest,10,a\nEast,20,b\n', encoding="utf-8")
    page.click("#tab-data")  # type: ignore[attr-defined]
    page.set_input_files("#file", str(csv))  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#upload-status")).to_have_text(re.compile("^Loaded"), timeout=30_000)  # type: ignore[attr-defined]
    assert page.locator("#profile table tbody tr").count() == 3  # type: ignore[attr-defined]
    assert page.locator("#profile img").count() == 0  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#source")).to_have_value("shop")  # type: ignore[attr-defined]
    page.once("dialog", lambda d: d.accept())  # type: ignore[attr-defined]
    page.click("button[aria-label='Delete shop']")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#source option[value='shop']")).to_have_count(0)  # type: ignore[attr-defined]
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_first_load_weight() -> None:
    total = sum(len(gzip.compress((STATIC / name).read_bytes())) for name in FIRST_LOAD)
    total += len(gzip.compress((STATIC / "vendor/dagre-3.1.3/dagre.esm.js").read_bytes()))
    assert total <= 300 * 1024, total


def save_and_open(page: object, browser: object, tmp_path: Path) -> tuple[object, list[str], str]:
    """Click "Save this run", then open the saved file in a new context where every request but
    the file's own is recorded and aborted: (the page, the requests it tried, the file's text)."""
    with page.expect_download() as got:  # type: ignore[attr-defined]
        page.click("#save-run")  # type: ignore[attr-defined]
    saved = tmp_path / "run.html"
    got.value.save_as(saved)
    assert re.fullmatch(r"concerto-run-\d{8}-\d{6}\.html", got.value.suggested_filename)
    offline = browser.new_context().new_page()  # type: ignore[attr-defined]
    requests: list[str] = []

    def only_the_file(r: object) -> None:
        if r.request.url == saved.as_uri():  # type: ignore[attr-defined]
            r.continue_()  # type: ignore[attr-defined]
        else:
            requests.append(r.request.url)  # type: ignore[attr-defined]
            r.abort()  # type: ignore[attr-defined]

    offline.route("**/*", only_the_file)
    offline.goto(saved.as_uri())
    return offline, requests, saved.read_text(encoding="utf-8")


def test_save_this_run_is_one_offline_file(page: object, browser: object, tmp_path: Path, ask: Ask) -> None:
    assert not page.is_visible("#save-run")  # type: ignore[attr-defined]
    ask(page, "What's the impact of increased sampling on Kisqali prescriptions?")
    answer = page.locator("#answer .response").text_content()  # type: ignore[attr-defined]
    first_row = page.locator(".panel table.data tbody tr").first.locator("td").first.text_content()  # type: ignore[attr-defined]
    agent = page.locator("#diagram .node").first.get_attribute("data-agent")  # type: ignore[attr-defined]
    charts = page.locator(".panel canvas").count()  # type: ignore[attr-defined]
    offline, requests, html = save_and_open(page, browser, tmp_path)
    try:
        assert "<script" not in html.replace('<script type="application/json" id="concerto-run">', "")
        assert not re.search(r"(src|href)=\"(?!data:|#)", html)  # no URL but data: and in-page references
        assert answer and answer.strip() in offline.locator("main").text_content()  # type: ignore[attr-defined]
        cell = offline.locator(".panel table.data tbody tr td", has_text=first_row or "")  # type: ignore[attr-defined]
        assert cell.count() >= 1
        node = offline.locator(f"svg .node[data-agent='{agent}']")  # type: ignore[attr-defined]
        assert node.count() == 1 and node.get_attribute("data-state") == "done"
        assert offline.locator(".timeline li").count() >= 5  # type: ignore[attr-defined]
        assert offline.locator("img.chart-img[src^='data:image/png']").count() == charts  # type: ignore[attr-defined]
        assert offline.locator("button, canvas, script:not([type='application/json'])").count() == 0  # type: ignore[attr-defined]
        run = offline.evaluate("JSON.parse(document.getElementById('concerto-run').textContent)")  # type: ignore[attr-defined]
        assert run["result"]["response"] == answer and len(run["events"]) >= 5
        assert requests == []
    finally:
        offline.context.close()  # type: ignore[attr-defined]
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_a_saved_run_shows_markup_as_text(page: object, browser: object, tmp_path: Path, ask: Ask) -> None:
    question = "echo: </script><img src=x onerror=alert(1)><b>bold</b>"
    ask(page, question)
    offline, requests, _ = save_and_open(page, browser, tmp_path)
    try:
        assert question in offline.locator(".question").text_content()  # type: ignore[attr-defined]
        assert "<b>bold</b>" in offline.locator(".response").text_content()  # type: ignore[attr-defined]
        assert offline.locator("main img, main b").count() == 0  # type: ignore[attr-defined]
        run = offline.evaluate("JSON.parse(document.getElementById('concerto-run').textContent)")  # type: ignore[attr-defined]
        assert run["question"] == question
        assert requests == []
    finally:
        offline.context.close()  # type: ignore[attr-defined]
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_kpi_time_series_is_a_line_chart(page: object, server: str, ask: Ask) -> None:
    page.goto(server + "/?now=2025-06-15T12:00:00Z")  # type: ignore[attr-defined]
    page.wait_for_selector("html[data-ready='1']")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#clock")).to_have_text("Clock fixed at 2025-06-15T12:00:00Z")  # type: ignore[attr-defined]
    ask(page, "home-loan attrition rate previous 4 months")
    panel = page.locator(".panel[data-agent='kpi']")  # type: ignore[attr-defined]
    canvas = panel.locator(".chart-box.timeseries canvas[data-chart='line'][data-drawn='1']")
    sync_api.expect(canvas).to_have_count(1)
    drawn = canvas.evaluate(
        """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                  let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"""
    )
    assert drawn > 500  # pixels painted: axes, labels and the line
    labels = canvas.evaluate("c => Chart.getChart(c).data.labels")
    assert labels == ["2025-02", "2025-03", "2025-04", "2025-05"]
    assert canvas.evaluate("c => Chart.getChart(c).data.datasets[0].data") == [2.9, 3.0, 3.1, 3.0]
    assert panel.locator("table.data tbody tr").count() == 4
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_a_failing_agent_fails_alone(page: object, server: str, tmp_path: Path, ask: Ask) -> None:
    # No treatment column in the table: causal_impact fails; gap_analyzer answers; explainer,
    # which needs both, is skipped.
    rows = [f"T{i:02d},{10 + (i * 7) % 40},{20 + (i * 13) % 50 + (i * 7) % 40}" for i in range(40)]
    csv = tmp_path / "territories.csv"
    csv.write_text("territory,total_rx,rx_potential\n" + "\n".join(rows) + "\n", encoding="utf-8")
    page.click("#tab-data")  # type: ignore[attr-defined]
    page.set_input_files("#file", str(csv))  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#upload-status")).to_have_text(re.compile("^Loaded"), timeout=30_000)  # type: ignore[attr-defined]
    try:
        sync_api.expect(page.locator("#source")).to_have_value("territories")  # type: ignore[attr-defined]
        page.click("#tab-ask")  # type: ignore[attr-defined]
        ask(page, "comprehensive analysis of Kisqali")
        state = lambda agent: page.locator(f"#diagram .node[data-agent='{agent}']").get_attribute("data-state")  # type: ignore[attr-defined]  # noqa: E731
        assert (state("causal_impact"), state("gap_analyzer"), state("explainer")) == ("failed", "done", "skipped")
        failed = page.locator(".panel[data-agent='causal_impact']")  # type: ignore[attr-defined]
        assert "no treatment named" in failed.locator(".agent-error").text_content()
        assert "failed" in failed.locator(".badge").text_content()
        answered = page.locator(".panel[data-agent='gap_analyzer']")  # type: ignore[attr-defined]
        assert answered.locator("table.data tbody tr").count() >= 1
        assert "below potential" in page.locator("#answer").text_content()  # type: ignore[attr-defined]
        ask(page, "echo: still usable")
        assert 'Echo: "still usable"' in page.locator("#answer").text_content()  # type: ignore[attr-defined]
    finally:
        httpx.delete(f"{server}/v1/data/sources/territories", timeout=10)
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_empty_and_too_long_questions_are_refused_and_kept(page: object, ask: Ask) -> None:
    page.press("#question", "Enter")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#status")).to_have_text("Type a question first.")  # type: ignore[attr-defined]
    page.fill("#question", "   ")  # type: ignore[attr-defined]
    page.click("#ask-button")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#status")).to_have_text("Type a question first.")  # type: ignore[attr-defined]
    long = "how many " + "x" * 9_991
    page.fill("#question", long)  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#count")).to_have_text("10000 / 499 characters")  # type: ignore[attr-defined]
    page.press("#question", "Enter")  # type: ignore[attr-defined]
    status = page.locator("#status")  # type: ignore[attr-defined]
    sync_api.expect(status).to_contain_text("10000 characters long; the limit is 499")
    assert page.input_value("#question") == long  # type: ignore[attr-defined]
    assert page.get_attribute("#question", "aria-invalid") == "true"  # type: ignore[attr-defined]
    assert page.locator("#chat-log li").count() == 0  # type: ignore[attr-defined]
    ask(page, "echo: short again")
    assert 'Echo: "short again"' in page.locator("#answer").text_content()  # type: ignore[attr-defined]
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_a_server_error_is_said_and_the_next_question_works(page: object, ask: Ask) -> None:
    page.route(  # type: ignore[attr-defined]
        "**/v1/runs",
        lambda r: r.fulfill(status=500, content_type="text/plain", body="Internal Server Error"),
    )
    page.problems.clear()  # type: ignore[attr-defined]
    ask(page, "echo: first try")
    assert "The server had an error (HTTP 500)" in page.locator("#answer [role=alert]").text_content()  # type: ignore[attr-defined]
    assert page.input_value("#question") == "echo: first try"  # type: ignore[attr-defined]  # kept, to ask again
    assert "echo: first try" not in page.locator("#chat-log").text_content()  # type: ignore[attr-defined]
    assert not page.is_visible("#save-run")  # type: ignore[attr-defined]
    page.unroute("**/v1/runs")  # type: ignore[attr-defined]
    page.press("#question", "Enter")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#status")).to_have_text("Answered.", timeout=60_000)  # type: ignore[attr-defined]
    assert 'Echo: "first try"' in page.locator("#answer").text_content()  # type: ignore[attr-defined]
    assert page.input_value("#question") == ""  # type: ignore[attr-defined]
    assert page.foreign == []  # type: ignore[attr-defined]
    assert [p for p in page.problems if "500" not in p] == []  # type: ignore[attr-defined]  # the browser logs the 500


def test_a_server_restart_mid_question_says_it_was_lost(page: object, ask: Ask) -> None:
    lost = '{"error_message": "no run \'x\' (finished runs are kept for 3600 s)", "error_category": "invalid_input"}'
    page.route(  # type: ignore[attr-defined]
        "**/v1/runs/*/events*",
        lambda r: r.fulfill(status=404, content_type="application/json", body=lost),
        times=1,
    )
    page.problems.clear()  # type: ignore[attr-defined]
    ask(page, "echo: lost one")
    assert "restarted and lost this question" in page.locator("#answer [role=alert]").text_content()  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#status")).to_contain_text("ask it again")  # type: ignore[attr-defined]
    assert page.input_value("#question") == "echo: lost one"  # type: ignore[attr-defined]
    page.press("#question", "Enter")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#status")).to_have_text("Answered.", timeout=60_000)  # type: ignore[attr-defined]
    assert 'Echo: "lost one"' in page.locator("#answer").text_content()  # type: ignore[attr-defined]
    assert page.locator("#chat-log li.user").count() == 1  # type: ignore[attr-defined]  # asked once, answered once
    assert [p for p in page.problems if "404" not in p] == []  # type: ignore[attr-defined]


def test_an_upload_over_the_limit_says_the_limit(page: object, tmp_path: Path) -> None:
    # What the server answers once a file passes CONCERTO_DATA_MAX_FILE_MB (data/routes.py), without sending 1 GB.
    refusal = (
        '{"error_message": "the file is over the limit of 1,024 MB (CONCERTO_DATA_MAX_FILE_MB)",'
        ' "error_category": "invalid_input", "retry_recommended": false}'
    )

    def refuse(r: object) -> None:
        if r.request.method == "POST":  # type: ignore[attr-defined]
            r.fulfill(status=413, content_type="application/json", body=refusal)  # type: ignore[attr-defined]
        else:
            r.continue_()  # type: ignore[attr-defined]

    page.route("**/v1/data/sources", refuse)  # type: ignore[attr-defined]
    page.problems.clear()  # type: ignore[attr-defined]
    big = tmp_path / "big.csv"
    big.write_text("a,b\n1,2\n", encoding="utf-8")
    page.click("#tab-data")  # type: ignore[attr-defined]
    page.set_input_files("#file", str(big))  # type: ignore[attr-defined]
    status = page.locator("#upload-status")  # type: ignore[attr-defined]
    sync_api.expect(status).to_have_text(
        "Upload refused (file too large): the file is over the limit of 1,024 MB (CONCERTO_DATA_MAX_FILE_MB)."
    )
    assert "error" in status.get_attribute("class")
    assert page.locator("#source option[value='big']").count() == 0  # type: ignore[attr-defined]
    page.unroute("**/v1/data/sources")  # type: ignore[attr-defined]
    page.set_input_files("#file", [])  # type: ignore[attr-defined]
    page.set_input_files("#file", str(big))  # type: ignore[attr-defined]
    sync_api.expect(status).to_have_text(re.compile("^Loaded big"), timeout=30_000)
    page.once("dialog", lambda d: d.accept())  # type: ignore[attr-defined]
    page.click("button[aria-label='Delete big']")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#source option[value='big']")).to_have_count(0)  # type: ignore[attr-defined]
    assert [p for p in page.problems if "413" not in p] == []  # type: ignore[attr-defined]


def test_a_file_over_the_servers_limit_is_refused_before_sending(page: object, server: str, tmp_path: Path) -> None:
    assert httpx.get(f"{server}/v1/data/limits").json() == {"max_file_bytes": 1024 * 2**20}  # the default
    posted: list[str] = []
    page.route(  # type: ignore[attr-defined]
        "**/v1/data/limits",
        lambda r: r.fulfill(status=200, content_type="application/json", body='{"max_file_bytes": 8}'),
    )

    def record(r: object) -> None:
        if r.method == "POST":  # type: ignore[attr-defined]
            posted.append(r.url)  # type: ignore[attr-defined]

    page.on("request", record)  # type: ignore[attr-defined]
    page.reload()  # type: ignore[attr-defined]
    page.wait_for_selector("html[data-ready='1']")  # type: ignore[attr-defined]
    big = tmp_path / "big.csv"
    big.write_text("a,b\n1,2\n3,4\n", encoding="utf-8")
    page.click("#tab-data")  # type: ignore[attr-defined]
    page.set_input_files("#file", str(big))  # type: ignore[attr-defined]
    status = page.locator("#upload-status")  # type: ignore[attr-defined]
    sync_api.expect(status).to_contain_text("the server takes files up to")
    assert "CONCERTO_DATA_MAX_FILE_MB" in status.text_content() and posted == []


def test_metrics_time_series_is_a_line_chart(page: object) -> None:
    # A metrics answer's shape (packs/metrics/models.py MetricsQueryResult, dumped as JSON): no
    # Prometheus here, so the panel is given one; the baseline window is not drawn over the current.
    chart = page.evaluate(  # type: ignore[attr-defined]
        """async () => {
        const { agentPanel, chartsDrawn } = await import("/static/panels.js");
        const points = (start, values) => values.map((v, i) =>
            ({ timestamp: new Date(Date.parse(start) + i * 60e3).toISOString().replace(".000Z", "Z"), value: v }));
        const series = (host, role, start, values) => ({ metric_name: "cpu_usage", label: "CPU usage", unit: "%",
            labels: { instance: host }, role, window: "the last hour", promql: "x", datapoints: points(start, values),
            datapoint_count: values.length, is_empty: false });
        const output = { metric_name: "cpu_usage", label: "CPU usage", unit: "%", promql: "x",
            time_range: { start_time: "2025-06-15T11:00:00Z", end_time: "2025-06-15T12:00:00Z", step_seconds: 60 },
            datapoints: points("2025-06-15T11:00:00Z", [15, 25, 35]), datapoint_count: 3, is_empty: false,
            series: [series("web-1", "current", "2025-06-15T11:00:00Z", [10, 20, 30]),
                     series("web-2", "current", "2025-06-15T11:00:00Z", [20, 30, 40]),
                     series("web-1", "baseline", "2025-06-14T11:00:00Z", [5, 5, 5])] };
        const result = { agent: "metrics_agent", task_id: "t1", status: "completed", output, errors: [] };
        document.querySelector("#panels").append(agentPanel(result));
        await chartsDrawn();
        const panel = document.querySelector(".panel[data-agent='metrics_agent']");
        const c = panel.querySelector(".timeseries canvas[data-chart='line'][data-drawn='1']");
        const chart = Chart.getChart(c);
        return { type: chart.config.type, labels: chart.data.labels.length,
                 datasets: chart.data.datasets.map((d) => [d.label, d.data]) };
    }"""
    )
    assert chart["type"] == "line" and chart["labels"] == 3
    assert chart["datasets"] == [
        ["CPU usage {instance=web-1} (%)", [10, 20, 30]],
        ["CPU usage {instance=web-2} (%)", [20, 30, 40]],
    ]
    assert page.problems == [] and page.foreign == []  # type: ignore[attr-defined]


def test_the_page_works_from_the_keyboard(page: object) -> None:
    page.focus("#tab-ask")  # type: ignore[attr-defined]
    page.keyboard.press("ArrowRight")  # type: ignore[attr-defined]
    assert page.evaluate("document.activeElement.id") == "tab-data"  # type: ignore[attr-defined]
    assert page.is_visible("#view-data") and not page.is_visible("#view-ask")  # type: ignore[attr-defined]
    page.keyboard.press("End")  # type: ignore[attr-defined]
    assert page.get_attribute("#tab-agents", "aria-selected") == "true"  # type: ignore[attr-defined]
    page.keyboard.press("Home")  # type: ignore[attr-defined]
    assert page.is_visible("#view-ask")  # type: ignore[attr-defined]
    for _ in range(8):  # from the tabs, Tab reaches the question box
        page.keyboard.press("Tab")  # type: ignore[attr-defined]
        if page.evaluate("document.activeElement.id") == "question":  # type: ignore[attr-defined]
            break
    assert page.evaluate("document.activeElement.id") == "question"  # type: ignore[attr-defined]
    page.keyboard.type("echo: by keyboard")  # type: ignore[attr-defined]
    page.keyboard.press("Enter")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#status")).to_have_text("Answered.", timeout=60_000)  # type: ignore[attr-defined]
    assert 'Echo: "by keyboard"' in page.locator("#answer").text_content()  # type: ignore[attr-defined]
