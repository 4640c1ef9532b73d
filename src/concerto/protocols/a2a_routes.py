"""The A2A routes on `concerto serve`: the SDK's (`a2a_server.py`), or, when the `a2a` extra is
not installed, routes at the same paths that say how to get it (HTTP 501), so a user
following the README who fetches the agent card learns what to install instead of a 404."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

CARD_PATH = "/.well-known/agent-card.json"  # the SDK's AGENT_CARD_WELL_KNOWN_PATH
A2A_PATH = "/a2a"
MISSING = "A2A needs the a2a extra, which is not installed: pip install 'concerto[a2a]'"


def router() -> APIRouter:
    """The A2A routes, or the routes that name the missing extra."""
    try:
        from concerto.protocols import a2a_server
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("a2a"):
            raise
        return missing()
    return a2a_server.router()


def missing() -> APIRouter:
    """The card and the endpoint's paths, each answering 501 with what to install."""
    api = APIRouter(include_in_schema=False)

    async def not_installed() -> None:
        raise HTTPException(501, detail=MISSING)

    api.add_api_route(CARD_PATH, not_installed, methods=["GET"])
    api.add_api_route(A2A_PATH, not_installed, methods=["GET", "POST"])
    api.add_api_route(A2A_PATH + "/{path:path}", not_installed, methods=["GET", "POST", "DELETE"])
    return api
