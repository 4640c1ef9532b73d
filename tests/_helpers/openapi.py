"""An app's OpenAPI document as a schemathesis schema, loaded without starting the app.

schemathesis's `from_asgi` fetches `/openapi.json` through a client that runs the app's
lifespan, so a module that loads its schema at import started the app's start-up work (the
warm-up, the router's model, first-use data, in threads) while pytest was still collecting;
CPython 3.11 keeps the AST's recursion state per interpreter, not per thread, and pytest's
parsing of the next test module failed with "AST constructor recursion depth mismatch". The
document is the app's own (`app.openapi()` is what `/openapi.json` serves); requests still go
to the app.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis
from schemathesis.config import SchemathesisConfig


def asgi_schema(app: Any, config: SchemathesisConfig) -> Any:
    """`schemathesis.openapi.from_asgi("/openapi.json", app, config=config)`, without a request."""
    loaded = schemathesis.openapi.from_dict(json.loads(json.dumps(app.openapi())), config=config)
    loaded.app = app
    loaded.location = "/openapi.json"
    return loaded
