"""What the OpenAPI document says about the edge (server/edge.py, docs/security.md): the
bearer scheme with `CONCERTO_API_TOKEN`, and the refusals every operation may get before it
runs (401, 403, 413), which FastAPI cannot see from the routes."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from concerto.server.edge import OPEN_PATHS
from concerto.settings import Settings

ERROR_CONTRACT = {"$ref": "#/components/schemas/OrchestratorErrorResponse"}
OWN_REFUSALS = "4XX"  # an operation documenting every 4xx itself answers refusals in its own shape (OpenAI's)


def document_edge(app: FastAPI, settings: Settings) -> None:
    """Add to the OpenAPI document what the edge and the body limit answer: 413 on every
    operation that takes a body, 403 on those that change something and, with
    `CONCERTO_API_TOKEN`, the bearer scheme and 401 on every operation but /health and /ready.
    An operation that documents `4XX` keeps its own description of them."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        """FastAPI's document with the edge's answers, built once."""
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        token = settings.api_token is not None
        if token:
            schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
            schemes["token"] = {
                "type": "http",
                "scheme": "bearer",
                "description": "CONCERTO_API_TOKEN (a browser: open any page once with ?token=TOKEN, a cookie)",
            }
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                responses = operation.setdefault("responses", {})
                if token and path not in OPEN_PATHS:
                    operation["security"] = [{"token": []}]
                if OWN_REFUSALS in responses:
                    continue
                if "requestBody" in operation:
                    responses.setdefault("413", _error(f"The body is over {settings.max_body_bytes:,} bytes"))
                if method not in ("get", "head", "options"):
                    responses.setdefault("403", _error("A cross-site request from a browser, refused"))
                if token and path not in OPEN_PATHS:
                    responses.setdefault("401", _error("The API token is missing or wrong"))
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR_CONTRACT}}}
