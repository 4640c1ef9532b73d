"""The data pack's HTTP routes, in process: upload (streamed, size-limited), list, show, drop;
an upload answered by the analytics agents; and the routes' OpenAPI document under
schemathesis (with a PostgreSQL store too; tests/server/test_openapi.py fuzzes them with every pack's routes)."""

from __future__ import annotations

import io
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import negative_data_rejection

from _helpers.openapi import asgi_schema
from _services.postgres import Postgres
from concerto.agents.loader import Packs
from concerto.agents.registry import AgentRegistry
from concerto.data.pack import pack as data_pack
from concerto.orchestrator.engine import Orchestrator
from concerto.server.app import create_app
from concerto.settings import Settings

SOURCES = "/v1/data/sources"
SALES = b"region,amount,product\nNorth,10.5,a\nSouth,20,b\nNorth,5,c\nEast,7.25,a\nSouth,1,b\n"


def _app(data_dir: Path, database_url: str | None = None) -> Any:
    """The app with only the data pack (its routes) and no agents."""
    settings = Settings(data_dir=data_dir, store_events=False, database_url=database_url)
    orchestrator = Orchestrator(settings, registry=AgentRegistry(), packs=Packs([data_pack]))
    return create_app(orchestrator=orchestrator)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(_app(tmp_path)) as c:
        yield c


def upload(client: TestClient, filename: str, content: bytes, **form: Any) -> Any:
    return client.post(SOURCES, files={"file": (filename, content)}, data=form)


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def refused(response: Any, status: int) -> str:
    """The error contract's message of a refused request."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == "failed" and body["error_category"] == "invalid_input"
    assert "Traceback" not in response.text
    message: str = body["error_message"]
    return message


@pytest.fixture(params=["duckdb", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    url = None
    if request.param == "postgres":
        server: Postgres = request.getfixturevalue("postgres")
        url = server.url
    with TestClient(_app(tmp_path, url)) as c:
        yield c
        for source in c.get(SOURCES).json():  # the PostgreSQL cluster is shared by the session
            c.delete(f"{SOURCES}/{source['name']}")


def test_upload_list_show_drop(backend: TestClient, tmp_path: Path) -> None:
    r = upload(backend, "Q3 Sales (final).csv", SALES)
    assert r.status_code == 201, r.text
    context = r.json()
    assert context["name"] == "q3_sales_final" and context["row_count"] == 5
    assert context["columns"] == ["region", "amount", "product"] and context["file_name"] == "q3_sales_final.csv"

    listed = backend.get(SOURCES).json()
    assert [(s["name"], s["row_count"], s["columns"], s["file_name"]) for s in listed] == [
        ("q3_sales_final", 5, ["region", "amount", "product"], "q3_sales_final.csv")
    ]
    assert listed[0]["loaded_at"] == context["loaded_at"]
    assert backend.get(f"{SOURCES}/q3_sales_final").json() == context
    assert backend.get(f"{SOURCES}/{context['data_source_id']}").json()["name"] == "q3_sales_final"
    assert files_under(tmp_path / "uploads") == ["q3_sales_final.csv"]  # kept for a later reload

    gone = backend.delete(f"{SOURCES}/q3_sales_final")
    assert gone.status_code == 204 and gone.content == b""
    assert backend.get(SOURCES).json() == []
    assert files_under(tmp_path / "uploads") == []
    assert "no data source named 'q3_sales_final'" in refused(backend.get(f"{SOURCES}/q3_sales_final"), 404)


def test_upload_parquet_with_a_name_replaces_the_source(client: TestClient, tmp_path: Path) -> None:
    table = pa.table({"city": ["Lyon", "Paris", "Nice"], "visits": [3, 5, 8]})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    assert upload(client, "old.csv", b"a,b\n1,2\n", name="visits").status_code == 201
    r = upload(client, "cities.PARQUET", buffer.getvalue(), name="visits")
    assert r.status_code == 201, r.text
    assert r.json()["columns"] == ["city", "visits"] and r.json()["file_name"] == "visits.parquet"
    assert [s["name"] for s in client.get(SOURCES).json()] == ["visits"]
    assert files_under(tmp_path / "uploads") == ["visits.parquet"]  # the earlier upload of the source is gone


def test_a_file_over_the_limit_is_refused_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONCERTO_DATA_MAX_FILE_MB", "1")
    big = b"region,amount\n" + b"North,12345.678\n" * (2 * 2**20 // 16)
    with TestClient(_app(tmp_path)) as c:
        message = refused(upload(c, "big.csv", big), 413)
        assert "limit of 1 MB" in message and "CONCERTO_DATA_MAX_FILE_MB" in message
        assert c.get(SOURCES).json() == []
        assert upload(c, "small.csv", SALES).status_code == 201  # the limit, not the route, refused it
    assert files_under(tmp_path / "uploads") == ["small.csv"]
    assert [p.name for p in (tmp_path / "uploads").iterdir()] == ["small.csv"]  # no incoming folder left


async def test_an_upload_over_the_limit_is_refused_while_it_arrives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The body is read as it comes: 413 after about 1 MB of a 20 MB upload, the rest never sent."""
    monkeypatch.setenv("CONCERTO_DATA_MAX_FILE_MB", "1")
    app = _app(tmp_path)
    sent = []

    async def body() -> AsyncIterator[bytes]:
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\n\r\na,b\n'
        for _ in range(80):
            sent.append(1)
            yield b"1,2\n" * 65536  # 256 KB
        yield b"\r\n--b--\r\n"

    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c,
    ):
        r = await c.post(SOURCES, content=body(), headers={"content-type": "multipart/form-data; boundary=b"})
    assert "limit of 1 MB" in refused(r, 413)
    assert len(sent) <= 5  # 1 MB and a chunk, not the 20 MB
    assert files_under(tmp_path) == []


@pytest.mark.parametrize(
    ("filename", "content", "words"),
    [
        ("notes.exe", b"MZ\x90\x00", "unsupported file type '.exe'; load CSV, TSV, Parquet, JSON or Excel"),
        ("noextension", b"a,b\n1,2\n", "unsupported file type ''"),
        ("empty.csv", b"", "empty.csv is empty"),
        ("ragged.csv", b"a,b,c\n1,2,3\n4,5\n", "line 3 has 2 field(s), the header has 3"),
        ("header.csv", b"a,b\n", "has a header but no data rows"),
        ("broken.parquet", b"not parquet at all", "broken.parquet could not be loaded"),
    ],
)
def test_a_file_that_cannot_be_a_table_gets_the_loaders_message(
    client: TestClient, tmp_path: Path, filename: str, content: bytes, words: str
) -> None:
    assert words in refused(upload(client, filename, content), 422)
    assert client.get(SOURCES).json() == []
    assert files_under(tmp_path / "uploads") == []  # a failed upload is deleted


@pytest.mark.parametrize(
    ("request_args", "words"),
    [
        ({"json": {"file": "a,b"}}, "multipart/form-data"),
        ({"data": {"name": "x"}, "files": {"other": ("x.csv", b"a\n1\n")}}, "unknown form field 'other'"),
        ({"data": {"name": "x"}}, "multipart/form-data"),  # no file: httpx sends a urlencoded form
        ({"files": {"file": ("x.csv", SALES), "name": (None, "!!!")}}, "'!!!' cannot name a source"),
        ({"files": {"file": ("x.csv", SALES)}, "data": {"describe": "amount"}}, "'amount' is not COLUMN=TEXT"),
        ({"files": [("file", ("a.csv", SALES)), ("file", ("b.csv", SALES))]}, "send one file"),
        ({"files": {"file": ("x.csv", SALES)}, "data": {"name": "n" * 70_000}}, "over 64 KB"),
        # text fields that are not UTF-8 (issue 26 saw a bare 500 for `describe`)
        ({"files": {"file": ("x.csv", SALES), "describe": (None, b"amount=\xe9uros")}}, "'describe' is not UTF-8"),
        ({"files": {"file": ("x.csv", SALES), "describe": (None, b"\xed\xa0\x80=x")}}, "'describe' is not UTF-8"),
        ({"files": {"file": ("x.csv", SALES), "name": (None, b"s\xff")}}, "'name' is not UTF-8"),
    ],
)
def test_malformed_uploads_get_the_error_contract(
    client: TestClient, tmp_path: Path, request_args: dict[str, Any], words: str
) -> None:
    assert words in refused(client.post(SOURCES, **request_args), 422)
    assert client.get(SOURCES).json() == []
    assert files_under(tmp_path) == []


def test_a_form_without_a_file_part(client: TestClient) -> None:
    body = b'--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nsales\r\n--b--\r\n'
    r = client.post(SOURCES, content=body, headers={"content-type": "multipart/form-data; boundary=b"})
    assert "no `file` part" in refused(r, 422)
    cut = client.post(SOURCES, content=body[:30], headers={"content-type": "multipart/form-data; boundary=b"})
    assert cut.status_code == 422


def test_part_headers_over_16_kb_are_refused(client: TestClient, tmp_path: Path) -> None:
    pads = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 3500) for i in range(5))  # lines the parser takes
    head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.csv"\r\n'
    body = head + pads + b"\r\na,b\n1,2\r\n--b--\r\n"
    r = client.post(SOURCES, content=body, headers={"content-type": "multipart/form-data; boundary=b"})
    assert "a form part's headers are over 16 KB" in refused(r, 422)
    # The test client hands the app the whole body at once: nothing is left unread, so the
    # connection is kept. A refusal before the body's end closes it (the server's edge adds
    # `Connection: close`; test_routes_upload_limit.py, tests/server/test_edge.py).
    assert "connection" not in r.headers
    long_line = body.replace(pads, b"X-Pad: " + b"a" * 20_000 + b"\r\n")
    r = client.post(SOURCES, content=long_line, headers={"content-type": "multipart/form-data; boundary=b"})
    assert "not valid multipart/form-data (Maximum header size exceeded)" in refused(r, 422)
    assert files_under(tmp_path) == []


def test_a_declared_length_over_the_longest_allowed_upload_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The longest body within the limits: the file, every text field, each part's headers and
    boundary; one byte more is refused on its `Content-Length` alone (test_routes_upload_limit.py
    sends 2 GB to a real server); up to it, the body is read."""
    from concerto.data.routes import _most_body

    monkeypatch.setenv("CONCERTO_DATA_MAX_FILE_MB", "1")
    body = b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.csv"\r\n\r\na,b\n1,2\r\n--b--\r\n'
    most = _most_body(2**20, b"b")
    assert most > 2**20 + 1000 * 64 * 1024  # room for every field besides the file
    with TestClient(_app(tmp_path)) as c:
        answers = []
        for declared in (most + 1, most):
            headers = {"content-type": "multipart/form-data; boundary=b", "content-length": str(declared)}
            answers.append(c.post(SOURCES, content=body, headers=headers))
    message = refused(answers[0], 413)
    assert message == f"the upload ({(most + 1) / 2**20:,.0f} MB) is over the limit of 1 MB (CONCERTO_DATA_MAX_FILE_MB)"
    assert answers[0].headers["connection"] == "close"
    assert answers[1].status_code == 201, answers[1].text


@pytest.mark.parametrize(
    "filename", ["../../etc/x.csv", "/tmp/x.csv", "..\\..\\x.csv", "C:\\Windows\\x.csv", "sub/../../x.csv"]
)
def test_a_client_file_name_cannot_choose_the_path(client: TestClient, tmp_path: Path, filename: str) -> None:
    r = upload(client, filename, SALES)
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "x" and r.json()["file_name"] == "x.csv"
    assert files_under(tmp_path) == ["sources/x.duckdb", "sources/x.json", "uploads/x.csv"]
    assert not (tmp_path.parent / "etc").exists() and not (tmp_path.parent / "x.csv").exists()


@pytest.mark.parametrize(
    ("name", "suggested"),
    [("../../x", "x"), ("../x", "x"), ("x;DROP TABLE demo", "x_drop_table_demo"), ("Sales", "sales"), ("", None)],
)
def test_a_name_that_is_not_a_source_name_is_refused_not_changed(
    client: TestClient, tmp_path: Path, name: str, suggested: str | None
) -> None:
    """Names that differ never become one name (they would replace each other's data)."""
    assert upload(client, "sales.csv", SALES, name="x").status_code == 201
    message = refused(upload(client, "other.csv", b"a,b\n1,2\n", name=name), 422)
    assert message.startswith(f"'{name}' cannot name a source: use lower-case letters, digits and '_'")
    assert message.endswith(f"e.g. '{suggested}'" if suggested else "at most 63 characters")
    assert client.get(f"{SOURCES}/x").json()["columns"] == ["region", "amount", "product"]
    assert files_under(tmp_path / "uploads") == ["x.csv"]


def test_describe_overrides_a_column_description(client: TestClient) -> None:
    r = client.post(
        SOURCES,
        files={"file": ("sales.csv", SALES)},
        data={"describe": ["amount=Invoice amount in euros", " region = Sales territory "]},
    )
    assert r.status_code == 201, r.text
    descriptions = r.json()["semantic_profile"]["field_descriptions"]
    assert descriptions["amount"] == "Invoice amount in euros" and descriptions["region"] == "Sales territory"
    assert client.get(f"{SOURCES}/sales").json()["semantic_profile"]["field_descriptions"] == descriptions
    noted = upload(client, "sales.csv", SALES, describe="nope=What is not there").json()["notes"]
    assert any("no column 'nope'" in note for note in noted)


def test_unknown_names_are_404_with_the_loaded_ones(client: TestClient) -> None:
    assert "loaded: none yet" in refused(client.get(f"{SOURCES}/nothing"), 404)
    assert upload(client, "sales.csv", SALES).status_code == 201
    assert "no data source named 'nothing'; loaded: sales" in refused(client.delete(f"{SOURCES}/nothing"), 404)
    assert client.get(SOURCES).json()[0]["name"] == "sales"


def test_a_store_that_cannot_be_used_is_503(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    down = "postgresql://concerto@127.0.0.1:1/none"
    with TestClient(_app(tmp_path, down)) as c:
        r = c.get(SOURCES)
        assert r.status_code == 503 and "cannot connect to PostgreSQL" in r.json()["error_message"]
        assert upload(c, "sales.csv", SALES).status_code == 503
        assert files_under(tmp_path) == []
    monkeypatch.setenv("CONCERTO_DATA_ROW_CAP", "lots")
    with TestClient(_app(tmp_path)) as c:
        r = c.delete(f"{SOURCES}/sales")
        assert r.status_code == 503 and "CONCERTO_DATA_ROW_CAP='lots'" in r.json()["error_message"]
        assert r.json()["error_category"] == "all_agents_failed" and "Traceback" not in r.text


def test_an_upload_is_answered_by_the_analytics_agents(tmp_path: Path) -> None:
    """The installed packs as `concerto serve` loads them: the upload route comes from the data
    pack, the answer from sql_analytics on the app's own store."""
    with TestClient(create_app(Settings(data_dir=tmp_path, store_events=False, agents="analytics"))) as c:
        assert upload(c, "orders.csv", SALES, name="uploaded_orders").status_code == 201
        r = c.post("/v1/ask", json={"query": "total amount by region", "source": "uploaded_orders"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["agents_invoked"][0] == "sql_analytics"
        output = body["agent_results"][0]["output"]
        assert output["source"] == "uploaded_orders"
        rows = {row["region"]: row["total_amount"] for row in output["results"][0]["data"]}
        assert rows == {"South": 21.0, "North": 15.5, "East": 7.25}
        assert "South" in body["response"]


# -- the OpenAPI document of these routes, under schemathesis ---------------------------------

CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "not_a_server_error": {"expected-statuses": ["2xx", "4xx"]},
            "positive_data_acceptance": {"expected-statuses": ["2xx", "404", "422"]},
        }
    }
)
app = _app(Path(tempfile.mkdtemp(prefix="concerto-data-openapi-")))
schema = asgi_schema(app, CONFIG).include(path_regex="^/v1/data/")  # not `from_asgi` (_helpers/openapi.py)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_data_routes_keep_their_documented_contract(case: Any) -> None:
    # Checks other test modules register (tests/server/test_openapi.py's, about /v1/ask) are
    # global in schemathesis; they are not about these routes.
    skipped = [c for c in CHECKS.get_all() if not c.__module__.startswith("schemathesis.")]
    if case.method == "POST" and case.path == SOURCES:
        # A multipart form sends every value as text: a `name` "of type number" (-3.0) is the
        # valid name "-3.0" on the wire, which schemathesis would count as invalid data
        # accepted. The malformed uploads are checked one by one above instead.
        skipped.append(negative_data_rejection)
    case.call_and_validate(excluded_checks=skipped)
