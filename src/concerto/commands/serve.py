"""`concerto serve`: the HTTP API and the page, behind the edge (docs/security.md)."""

from __future__ import annotations

import click


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option(
    "--shutdown-timeout",
    default=2,
    show_default=True,
    type=click.IntRange(0, 600),
    help="Seconds the requests in flight get to finish after SIGTERM or Ctrl-C; those still "
    "running then are answered 503 (ask again) and the server stops.",
)
def serve(host: str, port: int, shutdown_timeout: int) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the web page at /.

    It answers only to its own host names (CONCERTO_ALLOWED_HOSTS, plus --host), refuses
    cross-site requests from browsers and, with CONCERTO_API_TOKEN set, requests without the
    token (docs/security.md). On SIGTERM it stops within a few seconds (--shutdown-timeout,
    then closing the agents' connections and MCP servers), whatever its backends do.

    \b
    Example:
      concerto serve --port 8000 &
      curl -s localhost:8000/v1/ask -H 'content-type: application/json' -d '{"query": "echo: hi"}'
    """
    import uvicorn

    from concerto.server.app import create_app
    from concerto.server.shutdown import answer_when_cancelled
    from concerto.settings import Settings

    settings = Settings()
    name = host.strip("[]").lower()
    if name not in ("", "0.0.0.0", "::") and name not in settings.allowed_hosts:  # any address: see server/edge.py
        settings = settings.model_copy(update={"allowed_hosts": [*settings.allowed_hosts, name]})
    if settings.api_token is None and name not in ("localhost", "127.0.0.1", "::1"):
        click.echo(
            f"Warning: serving on {host} without CONCERTO_API_TOKEN: anyone who can reach it can ask, "
            "upload and delete (docs/security.md)",
            err=True,
        )
    uvicorn.run(
        answer_when_cancelled(create_app(settings)),
        host=host,
        port=port,
        log_level="info",
        timeout_graceful_shutdown=shutdown_timeout,
    )
