"""The API's documentation page (`/docs`, Swagger UI) served from this server, and what the
OpenAPI document says about the edge (docs/security.md).

Swagger UI's files come from the `fastapi-offline` package (its `static/` folder), so the
page works without a network, unlike FastAPI's default, which loads them from a CDN. The page
has a strict Content-Security-Policy like the app's own page: scripts and styles from this
server only, plus the one inline script that starts Swagger UI, allowed by its hash.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from concerto.server.edge import OPEN_PATHS
from concerto.settings import Settings

DOCS = "/docs"
ASSETS = "/docs/assets"
SWAGGER_FILES = Path(fastapi_offline.__file__).parent / "static"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)
ERROR_CONTRACT = {"$ref": "#/components/schemas/OrchestratorErrorResponse"}


def add_docs(app: FastAPI) -> None:
    """`/docs` with Swagger UI's files served under `/docs/assets` (create the app with
    `docs_url=None, redoc_url=None`: ReDoc injects styles at run time, which a strict policy
    forbids, so there is one documentation page)."""
    app.mount(ASSETS, StaticFiles(directory=SWAGGER_FILES), name="docs-assets")

    @app.get(DOCS, include_in_schema=False)
    async def docs() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title}: API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            # no badge from the online validator: nothing leaves this server
            swagger_ui_parameters={"validatorUrl": None, "deepLinking": True},
        )
        html = bytes(page.body).decode("utf-8")
        return HTMLResponse(html, headers={"Content-Security-Policy": policy(html), "Cache-Control": "no-cache"})


def policy(html: str) -> str:
    """The page's Content-Security-Policy: this server's files, and its inline scripts by hash."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode('utf-8')).digest()).decode('ascii')}'"
        for s in _INLINE_SCRIPT.findall(html)
    )
    return (
        f"default-src 'self'; script-src 'self' {hashes}; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    )


def document_edge(app: FastAPI, settings: Settings) -> None:
    """Add to the OpenAPI document what the edge and the body limit answer: 413 on every
    operation that takes a body, 403 on those that change something and, with
    `CONCERTO_API_TOKEN`, the bearer scheme and 401 on every operation but /health and /ready."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
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
                if "requestBody" in operation and "4XX" not in responses:  # OpenAI's routes: their own 413
                    responses.setdefault("413", _error(f"The body is over {settings.max_body_bytes:,} bytes"))
                if method not in ("get", "head", "options"):
                    responses.setdefault("403", _error("A cross-site request from a browser, refused"))
                if token and path not in OPEN_PATHS:
                    operation["security"] = [{"token": []}]
                    responses.setdefault("401", _error("The API token is missing or wrong"))
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR_CONTRACT}}}
