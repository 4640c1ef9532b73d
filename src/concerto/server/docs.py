"""The API's documentation page (`/docs`, Swagger UI), served from this server (docs/security.md).

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

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS = "/docs"
ASSETS = "/docs/assets"
SWAGGER_FILES = Path(fastapi_offline.__file__).parent / "static"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def add_docs(app: FastAPI) -> None:
    """`/docs` with Swagger UI's files served under `/docs/assets` (create the app with
    `docs_url=None, redoc_url=None`: ReDoc injects styles at run time, which a strict policy
    forbids, so there is one documentation page)."""
    app.mount(ASSETS, StaticFiles(directory=SWAGGER_FILES), name="docs-assets")

    @app.get(DOCS, response_class=HTMLResponse, include_in_schema=False)
    async def docs() -> HTMLResponse:
        """Swagger UI's page on this server's files, with its Content-Security-Policy (a page:
        a link from another site may open it)."""
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
