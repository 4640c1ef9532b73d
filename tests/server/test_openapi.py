"""The OpenAPI document says what the API really does: schemathesis generates requests from it
(valid and invalid) and checks every answer against it with every one of its checks on
(`max_response_time` too), in process through the ASGI app with every pack's routes (uploads,
the OpenAI endpoint) and two fake agents; then again on a server with `CONCERTO_API_TOKEN`,
where every operation but the probes must refuse a request without the token.

Outcomes that are part of the contract are configured as such: a well-formed question that no
agent can answer is 422 with `classification_failed` (checked below, so a 422 for any other
reason still fails), an upload whose file is not a table is 422, a deadline that expires is
504 (`max_latency_ms`), a name in a path that names nothing (a run, a conversation, a source, a
model) is 404 (only on those paths, checked below), and OpenAI's endpoint refuses a chat with
no question with its 400.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.mutations import OperatorKind
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import negative_data_rejection

from _helpers.openapi import asgi_schema
from concerto.agents.loader import load_packs
from concerto.agents.registry import AgentRegistry
from concerto.orchestrator.engine import Orchestrator
from concerto.server.app import create_app
from concerto.settings import Settings
from concerto.testing import fake_agent

AGENTS = [
    fake_agent("greeter", description="Says hello to people", examples=["say hello to me"]),
    fake_agent("counter", description="Counts the words of a text", examples=["count the words of this"]),
]
TOKEN = "openapi-test-token"


def _app(**settings: Any) -> Any:
    """Every pack's routes (uploads, the OpenAI endpoint ...); the agents above answer."""
    data_dir = Path(tempfile.mkdtemp(prefix="concerto-openapi-"))
    orchestrator = Orchestrator(
        Settings(data_dir=data_dir, store_events=False, **settings), registry=AgentRegistry(AGENTS), packs=load_packs()
    )
    return create_app(orchestrator=orchestrator)


RAW: dict[str, Any] = {
    "checks": {
        "max_response_time": 30,  # seconds: fake agents answer at once; the machine may be busy
        # 503: /ready before the router has loaded (documented, with the checks that failed)
        "not_a_server_error": {"expected-statuses": ["2xx", "3xx", "4xx", "503", "504"]},
        "positive_data_acceptance": {"expected-statuses": ["2xx", "404", "422", "504"]},
    },
    # OpenAI's protocol refuses with 400 what Concerto refuses with 422: a chat whose last user
    # message has no text is valid JSON Schema (the schema cannot say "the last one") and no question.
    "operations": [
        {
            "include-path": "/v1/chat/completions",
            "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "400", "404", "504"]}},
        }
    ],
}
CONFIG = SchemathesisConfig.from_dict(RAW)
schema = asgi_schema(_app(), CONFIG)  # not `from_asgi`: it would start the app here (_helpers/openapi.py)
# With CONCERTO_API_TOKEN: the document declares the bearer scheme, schemathesis sends the token,
# and its `ignored_auth` check sends requests without it (or with a wrong one) and expects 401.
AUTH = {"Authorization": f"Bearer {TOKEN}"}
guarded = asgi_schema(_app(api_token=TOKEN), SchemathesisConfig.from_dict({**RAW, "headers": AUTH}))


# Paths whose 404 says that what the path names does not exist, and how it says so.
NOT_FOUND = {
    "/v1/runs/": ("error_message", ("no run",)),
    "/v1/conversations/": ("error_message", ("no conversation",)),
    "/v1/data/sources/": ("error_message", ("no data source named",)),
    "/v1/models/": ("error", ({"code": "model_not_found"},)),
    "/v1/chat/completions": ("error", ({"code": "model_not_found"},)),  # OpenAI's answer to an unknown model
}
QUESTIONS = ("/v1/ask", "/v1/ask/stream", "/v1/runs")  # a valid body is a question any agent may fail to answer


def _text_on_the_wire(case: Any) -> bool:
    """Every mutation of this invalid case changes the JSON type of a multipart form field: a
    form sends every field as text, so a `name` "of type number" (-3.0) is the valid name
    "-3.0" the server receives (schemathesis allows for this in paths and queries only)."""
    mutations = getattr(case.meta.phase.data, "mutations", ()) if case.meta is not None else ()
    return (
        (case.media_type or "").startswith("multipart/form-data")
        and bool(mutations)
        and all(
            m.operator == OperatorKind.CHANGE_TYPE and m.parameter_location == ParameterLocation.BODY for m in mutations
        )
    )


def invalid_data_is_rejected(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis's `negative_data_rejection`, but for type changes a form cannot carry."""
    return None if _text_on_the_wire(case) else negative_data_rejection(ctx, response, case)


@schemathesis.check
def unanswerable_is_the_only_valid_422(ctx: Any, response: Any, case: Any) -> bool | None:
    """A schema-valid question may be refused only because no agent can answer it (an upload
    whose file is not a table is refused by the loader: the schema cannot say what a table is);
    a 404 only names what a path names."""
    meta = case.meta
    valid = meta is not None and meta.generation.mode.is_positive
    if valid and response.status_code == 422 and case.path in QUESTIONS:
        category = response.json().get("error_category")
        assert category == "classification_failed", f"valid request refused as {category}: {response.text[:300]}"
    if response.status_code == 404:
        prefix = next((p for p in NOT_FOUND if case.formatted_path.startswith(p)), None)
        assert prefix is not None, f"404 for no named thing: {case.formatted_path}"
        key, (expected,) = NOT_FOUND[prefix]
        found = response.json()[key]
        if isinstance(expected, str):
            assert found.startswith(expected), found
        else:
            assert expected.items() <= found.items(), found
    return None


def test_every_check_is_on() -> None:
    load_all_checks()
    checks = CONFIG.projects.default.checks
    off = [c.__name__ for c in CHECKS.get_all() if not checks.get_by_name(name=c.__name__).enabled]
    assert off == [] and checks.max_response_time.enabled


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_endpoint_keeps_its_documented_contract(case: Any) -> None:
    case.call_and_validate(
        additional_checks=[unanswerable_is_the_only_valid_422, invalid_data_is_rejected],
        excluded_checks=[negative_data_rejection],
    )


@guarded.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_with_a_token_every_endpoint_keeps_its_contract_and_requires_it(case: Any) -> None:
    case.call_and_validate(
        additional_checks=[unanswerable_is_the_only_valid_422, invalid_data_is_rejected],
        excluded_checks=[negative_data_rejection],
    )
