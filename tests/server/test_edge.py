"""The HTTP edge (server/edge.py): host names, cross-site requests, the API token and body
limits, in process through the ASGI app; what only a real server shows (the access log, the
server's memory under a 30 MB body) on `concerto serve`."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urljoin, urlsplit

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from _services.memory import peak_growth
from _services.serve import running_serve
from concerto.agents.base import Agent, AgentContext, AgentInfo, AgentResult, FirstUse
from concerto.agents.loader import Packs
from concerto.agents.registry import AgentRegistry
from concerto.agents.task import TaskInput
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.data.pack import pack as data_pack
from concerto.orchestrator.engine import Orchestrator
from concerto.protocols.pack import pack as protocols_pack
from concerto.server.app import create_app
from concerto.settings import Settings, SettingsError
from concerto.testing import fake_agent

SALES = b"region,amount\nNorth,10\nSouth,20\n"
HOSTILE = b"region,amount\nNorth,999999\n"
TOKEN = "s3cret-token-for-tests"
QUESTION = {"query": "say hello to me"}
A2A_MESSAGE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "say hello to me"}]}},
}


class Calls(list[dict[str, Any]]):
    """The tasks the greeter agent was run with: a refused request runs nothing."""


def app_with(tmp_path: Path, calls: Calls, **settings: Any) -> Any:
    """The app with a greeter agent, the data pack's routes and the protocols (OpenAI, A2A)."""
    greeter = fake_agent(
        "greeter",
        description="Says hello to people",
        examples=["say hello to me"],
        summary="Hello!",
        on_run=lambda context, task: calls.append(task.model_dump()),
    )
    orchestrator = Orchestrator(
        Settings(data_dir=tmp_path, store_events=False, **settings),
        registry=AgentRegistry([greeter]),
        packs=Packs([data_pack, protocols_pack]),
    )
    return create_app(orchestrator=orchestrator)


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def client(tmp_path: Path, calls: Calls) -> Iterator[TestClient]:
    with TestClient(app_with(tmp_path, calls), base_url="http://127.0.0.1:8000") as c:
        yield c


def shape(path: str) -> str:
    """The error shape of the route at `path`: its protocol's own, or Concerto's error contract."""
    if path.startswith(("/v1/models", "/v1/chat/")):
        return "openai"
    if path.rstrip("/") == "/a2a":
        return "json-rpc"
    return "a2a-binding" if path.startswith("/a2a/") else "contract"


def refused(response: httpx.Response, status: int) -> str:
    """The message of a request refused at the edge, which came in its route's error shape."""
    assert response.status_code == status, response.text
    body = response.json()
    kind = shape(response.request.url.path)
    if kind == "contract":
        assert body["status"] == "failed" and body["error_category"] == "invalid_input", body
        return str(body["error_message"])
    if kind == "openai":
        assert set(body) == {"error"} and body["error"]["type"] == "invalid_request_error", body
    elif kind == "json-rpc":
        assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["code"] == -32600, body
    else:
        assert set(body) == {"error"} and body["error"]["code"] == status and body["error"]["status"], body
    return str(body["error"]["message"])


def upload(client: TestClient, content: bytes, **headers: str) -> httpx.Response:
    return client.post(
        "/v1/data/sources", files={"file": ("sales.csv", content)}, data={"name": "sales"}, headers=headers
    )


# -- host names --------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.", ""])
def test_a_host_name_not_the_servers_is_refused_before_anything_runs(
    client: TestClient, calls: Calls, host: str
) -> None:
    if host == "localhost.":  # the final dot is the same name
        assert client.get("/health", headers={"host": host}).status_code == 200
        return
    message = refused(client.post("/v1/ask", json=QUESTION, headers={"host": host}), 400)
    assert "CONCERTO_ALLOWED_HOSTS" in message and not calls
    refused(client.get("/", headers={"host": host}), 400)
    refused(client.get("/health", headers={"host": host}), 400)


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST"])
def test_the_default_host_names_are_answered(client: TestClient, host: str) -> None:
    assert client.get("/health", headers={"host": host}).status_code == 200


def test_allowed_hosts_take_names_and_subdomains(tmp_path: Path, calls: Calls) -> None:
    app = app_with(tmp_path, calls, allowed_hosts="concerto.example, *.corp.example")
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for host, status in [
            ("concerto.example", 200),
            ("a.corp.example:8443", 200),
            ("corp.example", 400),  # `*.` is the subdomains
            ("localhost", 400),  # the setting replaces the defaults
            ("127.0.0.1", 200),  # the address the request arrived at (the client's `server`)
        ]:
            assert c.get("/health", headers={"host": host}).status_code == status, host
    with TestClient(app_with(tmp_path, calls, allowed_hosts="*"), base_url="http://127.0.0.1") as c:
        assert c.get("/health", headers={"host": "anything.example"}).status_code == 200


def test_allowed_hosts_are_names_or_refused() -> None:
    """A scheme or a port written with a name is dropped (the edge compares names); what is not
    a name is refused, naming the entry, instead of never matching any request."""
    given = "http://Concerto.example:8000/, [::1]:8000, *.corp.example, 10.0.0.1:80, ::1"
    names = ["concerto.example", "::1", "*.corp.example", "10.0.0.1", "::1"]
    assert Settings(allowed_hosts=given).allowed_hosts == names
    for entry in ["exa mple.com", "example.com/app", "user@example.com", "http://", "example.com:http", "*evil"]:
        with pytest.raises(SettingsError, match="CONCERTO_ALLOWED_HOSTS") as caught:
            Settings(allowed_hosts=f"localhost, {entry}")
        assert f"{entry!r} is not a host name" in str(caught.value)


# -- cross-site requests -----------------------------------------------------------------------


def test_a_cross_site_upload_does_not_replace_a_source(client: TestClient) -> None:
    """The issue's attack: a page on another site posts a form with a file to the upload route."""
    assert upload(client, SALES, origin="http://127.0.0.1:8000").status_code == 201  # the page's own
    message = refused(upload(client, HOSTILE, origin="http://evil.example"), 403)
    assert "evil.example" in message
    refused(upload(client, HOSTILE, **{"sec-fetch-site": "cross-site"}), 403)
    refused(upload(client, HOSTILE, origin="null"), 403)  # a sandboxed frame, a file
    refused(upload(client, HOSTILE, origin="http://127.0.0.1:3000"), 403)  # another port is another origin
    shown = client.get("/v1/data/sources/sales").json()
    assert shown["row_count"] == 2


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"origin": "http://evil.example"}, 403),
        ({"origin": "http://127.0.0.1:8000"}, 200),
        ({"sec-fetch-site": "cross-site"}, 403),
        ({"sec-fetch-site": "same-site"}, 403),  # localhost:3000 and localhost:8000 are one site
        ({"sec-fetch-site": "same-origin"}, 200),
        ({"sec-fetch-site": "none"}, 200),  # typed by the user
        ({"origin": "http://127.0.0.1:8000", "sec-fetch-site": "same-origin"}, 200),
        ({}, 200),  # not a browser
    ],
)
def test_state_changing_requests_from_other_sites_are_refused(
    client: TestClient, calls: Calls, headers: dict[str, str], status: int
) -> None:
    r = client.post("/v1/ask", json=QUESTION, headers=headers)
    assert r.status_code == status, r.text
    assert len(calls) == (1 if status == 200 else 0)
    if status == 403:
        refused(r, 403)


def test_another_site_may_link_to_the_page_and_nothing_more(client: TestClient, calls: Calls) -> None:
    """A link from another site opens the page (a top-level navigation). Embedding it in a
    frame (clickjacking), or loading the API as an image, a script or a fetch (a GET stream
    runs a question) is refused; a GET without those headers (not a browser) passes."""
    link = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}
    page = client.get("/", headers=link)
    assert page.status_code == 200 and "access-control-allow-origin" not in page.headers
    for mode, dest in [("navigate", "iframe"), ("no-cors", "image"), ("no-cors", "script"), ("cors", "empty")]:
        headers = {**link, "sec-fetch-mode": mode, "sec-fetch-dest": dest}
        refused(client.get("/", headers=headers), 403)
        refused(client.get("/v1/ask/stream", params={"q": "say hello to me"}, headers=headers), 403)
    refused(client.get("/v1/agents", headers={**link, "sec-fetch-site": "same-site", "sec-fetch-mode": "cors"}), 403)
    assert not calls
    assert (
        client.get("/v1/agents", headers={"sec-fetch-site": "same-origin", "sec-fetch-mode": "cors"}).status_code == 200
    )


LINK = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}


@pytest.mark.parametrize("path", ["/", "/docs", "/static/app.js", "/docs/assets/swagger-ui.css"])
def test_a_link_from_another_site_opens_a_page(client: TestClient, path: str) -> None:
    for site in ("cross-site", "same-site"):
        assert client.get(path, headers={**LINK, "sec-fetch-site": site}).status_code == 200, path


@pytest.mark.parametrize(
    "path",
    [
        "/v1/ask/stream?q=say+hello+to+me",  # a link that would run a question
        "/v1/agents",
        "/v1/runs/abc",
        "/openapi.json",
        "/.well-known/agent-card.json",
        "/a2a",
        "/a2a/tasks",
        "/v1/models",
        "/v1/data/sources",  # a pack's API
        "/health",
        "/nowhere",
    ],
)
def test_a_link_from_another_site_reaches_no_api(client: TestClient, calls: Calls, path: str) -> None:
    """Only pages (HTML routes, static files) may be linked to; the rest of the server is an API,
    and a link is a GET any page can make a browser send (an `<a>`, a redirect)."""
    for site in ("cross-site", "same-site"):
        message = refused(client.get(path, headers={**LINK, "sec-fetch-site": site}), 403)
        assert "may open this server's pages" in message
    assert not calls
    assert client.get(path).status_code != 403  # not a browser: it passes the edge


@pytest.mark.parametrize("origin", ["http://[::1", "http://[evil.example]", "http://127.0.0.1:99999", "http://:8000"])
def test_an_origin_that_is_not_an_address_is_refused(client: TestClient, calls: Calls, origin: str) -> None:
    """It was a 500 (the address could not be parsed)."""
    message = refused(client.post("/v1/ask", json=QUESTION, headers={"origin": origin}), 403)
    assert origin in message and not calls


@pytest.mark.parametrize("path", ["/v1/ask", "/v1/runs", "/v1/chat/completions", "/a2a", "/v1/data/sources/sales"])
def test_every_state_changing_route_is_covered(client: TestClient, path: str) -> None:
    method = "DELETE" if path.startswith("/v1/data") else "POST"
    r = client.request(method, path, json={}, headers={"origin": "https://evil.example"})
    refused(r, 403)


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_a2a_takes_json_only(client: TestClient, calls: Calls, content_type: str | None) -> None:
    """A browser sends a text/plain or form post to another site without asking first; a
    chunked body without a Content-Type is a body too (it reached the SDK as an empty one)."""
    body = json.dumps(A2A_MESSAGE).encode()
    headers = {"a2a-version": "1.0"} | ({"content-type": content_type} if content_type else {})
    for chunked in (False, True):  # with a Content-Length, and without
        for path in ("/a2a", "/a2a/message:send"):
            r = client.post(path, content=pieces(body) if chunked else body, headers=headers)
            assert "application/json" in refused(r, 415), path
    for path in ("/v1/ask", "/v1/runs"):  # FastAPI's routes read JSON bodies only
        if content_type is not None:  # (without one they read JSON)
            r = client.post(path, content=json.dumps(QUESTION), headers={"content-type": content_type})
            assert r.status_code == 422
    assert not calls
    ok = client.post("/a2a", json=A2A_MESSAGE, headers={"a2a-version": "1.0"})
    assert ok.status_code == 200 and "result" in ok.json(), ok.text
    assert calls


# -- the API token -----------------------------------------------------------------------------


@pytest.fixture
def guarded(tmp_path: Path, calls: Calls) -> Iterator[TestClient]:
    with TestClient(app_with(tmp_path, calls, api_token=TOKEN), base_url="http://127.0.0.1:8000") as c:
        yield c


@pytest.mark.parametrize(
    "path",
    ["/", "/static/app.js", "/docs", "/openapi.json", "/v1/agents", "/v1/models", "/.well-known/agent-card.json"],
)
def test_with_a_token_every_route_requires_it(guarded: TestClient, path: str) -> None:
    r = guarded.get(path)
    assert "Bearer" in r.headers["www-authenticate"]
    assert "CONCERTO_API_TOKEN" in refused(r, 401)
    assert guarded.get(path, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    refused(guarded.get(path, headers={"authorization": "Bearer wrong"}), 401)
    refused(guarded.get(path, headers={"authorization": f"Basic {TOKEN}"}), 401)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/models"),
        ("GET", "/v1/models/concerto"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/a2a"),
        ("GET", "/a2a/tasks/abc"),
        ("POST", "/a2a/message:send"),
        ("GET", "/.well-known/agent-card.json"),
        ("POST", "/v1/ask"),
        ("GET", "/v1/data/sources"),
    ],
)
def test_refusals_come_in_the_routes_own_shape(guarded: TestClient, calls: Calls, method: str, path: str) -> None:
    """OpenAI's clients read only OpenAI's errors, JSON-RPC's only JSON-RPC's: the edge answers
    each route's refusals (host, another site, token) in its shape, and no route runs."""
    body = {"model": "concerto", "messages": [{"role": "user", "content": "say hello to me"}]}
    auth = {"authorization": f"Bearer {TOKEN}"}
    refused(guarded.request(method, path, json=body), 401)
    refused(guarded.request(method, path, json=body, headers={**auth, "host": "evil.example"}), 400)
    refused(guarded.request(method, path, json=body, headers={**auth, "sec-fetch-site": "cross-site"}), 403)
    assert not calls


def test_the_openai_client_reads_the_edges_refusal(guarded: TestClient) -> None:
    client = openai.OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="wrong", http_client=guarded, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        client.models.list()
    assert caught.value.code == "invalid_api_key" and "CONCERTO_API_TOKEN" in caught.value.message


def test_signing_in_redirects_to_this_server_only(guarded: TestClient) -> None:
    """`//evil.example` (or `/\\evil.example`) as a redirect's target is another site to a browser."""
    for path in ("/%2F%2Fevil.example", "/%2F/%2Fevil.example", "/%5C%5Cevil.example", "/%5C/evil.example"):
        signed = guarded.get(f"{path}?token={TOKEN}", follow_redirects=False)
        location = signed.headers["location"]
        assert signed.status_code == 303 and location.startswith("/") and location[1:2] not in ("/", "\\"), path
        assert urlsplit(urljoin("http://127.0.0.1:8000/", location)).netloc == "127.0.0.1:8000"
        assert "%5C" not in location[:4]


def test_a_refusal_before_the_body_is_read_closes_the_connection(guarded: TestClient) -> None:
    """Otherwise the server reads (and throws away) the whole body to keep the connection."""
    for content in (json.dumps(QUESTION).encode(), pieces(json.dumps(QUESTION).encode())):
        r = guarded.post("/v1/ask", content=content, headers={"content-type": "application/json"})
        assert r.status_code == 401 and r.headers["connection"] == "close"
    assert "connection" not in guarded.get("/v1/agents").headers  # no body: the connection stays
    ok = guarded.post("/v1/ask", json=QUESTION, headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and "connection" not in ok.headers  # read to its end


def test_questions_need_the_token_too(guarded: TestClient, calls: Calls) -> None:
    refused(guarded.post("/v1/ask", json=QUESTION), 401)
    assert guarded.post("/v1/chat/completions", json={"model": "concerto", "messages": []}).status_code == 401
    assert not calls
    ok = guarded.post("/v1/ask", json=QUESTION, headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and calls


class Gated(Agent):
    """An agent whose first-use data is in once `prepared` is set: the server is not ready until then."""

    prepared: ClassVar[threading.Event] = threading.Event()
    info: ClassVar[AgentInfo] = AgentInfo(name="gated", description="Reads its table", examples=["read the table"])

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        return None if self.prepared.is_set() else FirstUse("test.gated", "the table", 0.1, self.prepared.wait)

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        return AgentResult(summary="read")


def test_the_probes_stay_open(tmp_path: Path) -> None:
    """/health and /ready answer without the token: /ready 503 while the server is not ready,
    200 once it is."""
    Gated.prepared.clear()
    settings = Settings(data_dir=tmp_path, store_events=False, api_token=TOKEN)
    orchestrator = Orchestrator(settings, registry=AgentRegistry([Gated]))
    with TestClient(create_app(orchestrator=orchestrator)) as client:
        try:
            assert client.get("/health").status_code == 200
            waiting = client.get("/ready")
            assert waiting.status_code == 503 and waiting.json()["ready"] is False, waiting.text
            assert client.get("/v1/agents").status_code == 401
        finally:
            Gated.prepared.set()
        deadline = time.monotonic() + 60
        while (ready := client.get("/ready")).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.status_code == 200 and ready.json()["ready"] is True, ready.text


def test_the_page_signs_in_once_with_a_cookie(guarded: TestClient) -> None:
    asked = guarded.get("/", headers={"accept": "text/html"})
    assert asked.status_code == 401 and '<input id="token" name="token" type="password"' in asked.text
    assert "script" not in asked.text and "default-src 'none'" in asked.headers["content-security-policy"]
    wrong = guarded.get("/?token=nope", follow_redirects=False)
    assert wrong.status_code == 401 and not wrong.cookies
    signed = guarded.get("/?token=" + TOKEN + "&x=1", follow_redirects=False)
    assert signed.status_code == 303 and signed.headers["location"] == "/?x=1"
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie and TOKEN not in cookie
    assert re.match(r"concerto_token_8000=[0-9a-f]{64};", cookie)  # one per port: a browser shares a host's
    # the client keeps the cookie: the page, its files and its API calls now pass
    assert guarded.get("/").status_code == 200
    assert guarded.get("/static/app.js").status_code == 200
    assert guarded.post("/v1/ask", json=QUESTION, headers={"origin": "http://127.0.0.1:8000"}).status_code == 200
    assert guarded.get("/docs").status_code == 200


def test_the_openapi_document_says_the_token_is_needed(guarded: TestClient) -> None:
    doc = guarded.get("/openapi.json", headers={"authorization": f"Bearer {TOKEN}"}).json()
    assert doc["components"]["securitySchemes"]["token"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "CONCERTO_API_TOKEN (a browser: open any page once with ?token=TOKEN, a cookie)",
    }
    assert doc["paths"]["/v1/ask"]["post"]["security"] == [{"token": []}]
    assert "401" in doc["paths"]["/v1/ask"]["post"]["responses"]
    assert "security" not in doc["paths"]["/health"]["get"]


def test_the_agent_card_says_the_token_is_needed(guarded: TestClient, client: TestClient) -> None:
    card = guarded.get("/.well-known/agent-card.json", headers={"authorization": f"Bearer {TOKEN}"}).json()
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert "securitySchemes" not in client.get("/.well-known/agent-card.json").json()


def test_a_blank_token_is_no_token(tmp_path: Path, calls: Calls) -> None:
    assert Settings(api_token="  ").api_token is None
    with TestClient(app_with(tmp_path, calls, api_token=""), base_url="http://127.0.0.1") as c:
        assert c.get("/v1/agents").status_code == 200


# -- body limits -------------------------------------------------------------------------------


LIMIT = 4096
JSON_ROUTES = ["/v1/ask", "/v1/ask/stream", "/v1/runs", "/v1/chat/completions", "/a2a", "/a2a/message:send"]


@pytest.fixture
def limited(tmp_path: Path, calls: Calls) -> Iterator[TestClient]:
    with TestClient(app_with(tmp_path, calls, max_body_bytes=LIMIT), base_url="http://127.0.0.1") as c:
        yield c


def too_long() -> bytes:
    return json.dumps({"query": "say hello to me", "parameters": {"x": "y" * LIMIT}}).encode()


def pieces(body: bytes) -> Iterator[bytes]:
    """The body in 1 KB pieces, without a Content-Length (chunked)."""
    for i in range(0, len(body), 1024):
        yield body[i : i + 1024]


@pytest.mark.parametrize("path", JSON_ROUTES)
@pytest.mark.parametrize("declared", [True, False])
def test_a_body_over_the_limit_is_413_in_each_routes_error_shape(
    limited: TestClient, calls: Calls, path: str, declared: bool
) -> None:
    body = too_long()
    headers = {"content-type": "application/json", "a2a-version": "1.0"}
    r = limited.post(path, content=body if declared else pieces(body), headers=headers)
    assert r.status_code == 413 and r.headers["connection"] == "close", r.text
    said = "over the limit of 4,096 bytes (CONCERTO_MAX_BODY_BYTES)"
    if path == "/a2a":  # JSON-RPC's error object
        assert r.json()["error"]["code"] == -32600 and said in r.json()["error"]["message"]
    elif path.startswith(("/v1/chat/", "/a2a/")):  # OpenAI's error, the A2A HTTP+JSON binding's
        assert said in r.json()["error"]["message"]
    else:
        assert said in refused(r, 413)
    assert not calls


def test_a_body_within_the_limit_is_read(limited: TestClient, calls: Calls) -> None:
    r = limited.post(
        "/v1/ask", content=pieces(json.dumps(QUESTION).encode()), headers={"content-type": "application/json"}
    )
    assert r.status_code == 200 and calls


def test_an_upload_has_its_own_limit(limited: TestClient) -> None:
    """The upload route counts its file against CONCERTO_DATA_MAX_FILE_MB as it streams in
    (tests/data/test_routes_upload_limit.py), not against the JSON limit."""
    rows = b"region,amount\n" + b"".join(b"North,%d\n" % i for i in range(2000))
    assert len(rows) > 4 * LIMIT
    assert upload(limited, rows).status_code == 201


# -- a real server -----------------------------------------------------------------------------


def test_a_large_upload_refused_by_the_token_check_is_not_read(tmp_path: Path) -> None:
    """2 GB sent chunked without the token: the 401 closes the connection, so the client stops
    after what the sockets' buffers took. Before, the server read and threw away all of it (the
    connection kept for the next request) and the client learnt of the 401 only then."""
    env = {"CONCERTO_DATA_DIR": str(tmp_path), "CONCERTO_AGENTS": "echo", "CONCERTO_API_TOKEN": TOKEN}
    sent: list[int] = []

    def two_gb() -> Iterator[bytes]:
        head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\n\r\n'
        megabyte = b"x" * 2**20
        yield head
        for _ in range(2048):
            sent.append(1)
            yield megabyte
        yield b"\r\n--b--\r\n"

    with running_serve(env) as served:
        started = time.monotonic()
        r = httpx.post(
            served.base + "/v1/data/sources",
            content=two_gb(),
            headers={"content-type": "multipart/form-data; boundary=b"},
            timeout=120,
        )
        took = time.monotonic() - started
    assert r.status_code == 401 and r.headers["connection"] == "close", r.text
    assert len(sent) < 64, f"{len(sent)} MB sent before the server's answer"  # not 2,048
    assert took < 10, f"{took:.1f} s"


def test_concerto_serve_at_its_edge(tmp_path: Path) -> None:
    """Hosts, the token in the address (masked in the access log), and memory: one request
    raises the server's peak RSS by at most 256 MB. A 30 MB body of `{}` items raised it by
    2.2 GB (docs/security.md); now it is refused unread, and the costliest body within the
    1 MiB limit costs about 80 MB."""
    env = {"CONCERTO_DATA_DIR": str(tmp_path), "CONCERTO_AGENTS": "echo", "CONCERTO_API_TOKEN": TOKEN}
    with running_serve(env, ready="/ready", timeout_s=120) as served:
        base, pid = served.base, served.process.pid
        auth = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
        assert httpx.get(base + "/health", headers={"host": "evil.example"}).status_code == 400
        assert httpx.get(base + "/v1/agents", headers={**auth, "host": "localhost"}).status_code == 200
        assert httpx.get(base + "/v1/agents").status_code == 401
        assert httpx.get(base + "/health?token=" + TOKEN).status_code == 200  # masked in the log too
        with httpx.Client(follow_redirects=True) as browser:
            signed = browser.get(base + "/?token=" + TOKEN)
            assert signed.status_code == 200 and str(signed.url) == base + "/"  # redirected
            assert browser.get(base + "/v1/agents").status_code == 200  # with the cookie

        def items(size: int) -> bytes:  # the costliest JSON per byte: Python objects of `{}`
            return b'{"query": "echo: hi", "conversation_history": [' + b",".join([b"{}"] * (size // 3)) + b"]}"

        big = items(30 * 2**20)
        for declared in (True, False):

            def send_big(declared: bool = declared) -> None:
                content = big if declared else (big[i : i + 2**20] for i in range(0, len(big), 2**20))
                try:
                    r = httpx.post(base + "/v1/ask", content=content, headers=auth, timeout=60)
                    assert r.status_code == 413 and "CONCERTO_MAX_BODY_BYTES" in r.json()["error_message"]
                except httpx.WriteError:  # the server answered and closed before the client sent it all
                    pass

            with peak_growth(pid) as grown:
                send_big()
            assert grown.mb <= 256, f"a 30 MB body raised the server's peak RSS by {grown.mb:.0f} MB"

        within = items(2**20 - 100)
        assert len(within) <= 2**20

        def send_within() -> None:
            assert httpx.post(base + "/v1/ask", content=within, headers=auth, timeout=60).status_code == 200

        with peak_growth(pid) as grown:
            send_within()
        assert grown.mb <= 256, f"a body within the limit raised the server's peak RSS by {grown.mb:.0f} MB"
    log = served.process.stdout.read().decode() if served.process.stdout else ""
    assert "token=***" in log and TOKEN not in log, log[-2000:]
