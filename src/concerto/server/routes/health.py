"""Liveness and readiness: `GET /health` (the process answers; agents, LLM, packs that failed)
and `GET /ready` (for a load balancer: the router loaded, the first-use data prepared, the
database and, with Ray, the cluster reachable). Both stay open with `CONCERTO_API_TOKEN`
(probes, `server/edge.py`)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from concerto.server.log import ServerLog
from concerto.server.routes.common import orchestrator_of
from concerto.store import LogUnavailable

router = APIRouter()

READY_WAIT_S = 0.5  # how long /ready waits for a warm-up about to finish before saying "not yet"


class PackProblem(BaseModel):
    """A pack, or a part of one, that could not be loaded; the others work."""

    pack: str
    part: str
    error: str


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    agents: int
    llm: bool
    failed_packs: list[PackProblem] = Field(default_factory=list, description="Packs that did not load, and why")


class Check(BaseModel):
    ok: bool
    detail: str | None = None


class Readiness(BaseModel):
    """Whether this process can answer now, and each check's outcome."""

    ready: bool
    checks: dict[str, Check]


@router.get("/health", response_model=Health)
async def health(request: Request) -> Health:
    """Liveness, the number of agents, whether an LLM is configured, and packs that failed to load."""
    orch = orchestrator_of(request)
    problems = [PackProblem(**f.as_dict()) for f in orch.packs.failures]
    return Health(agents=len(orch.registry), llm=orch.llm is not None, failed_packs=problems)


@router.get(
    "/ready",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "Not ready yet, or no longer: the checks say why"}},
)
async def ready(request: Request) -> Any:
    """Readiness (for a load balancer): the router and its embedding model are loaded, the
    agents' first-use data (demo tables) is prepared, the database is reachable and, with
    `CONCERTO_EXECUTOR=ray`, so is the cluster. 503 with the checks while one fails;
    `/health` is the liveness check."""
    orch = orchestrator_of(request)
    checks = {
        "router": await _router_check(request.app.state.router_loaded),
        "database": await _log_check(request.app.state.log),
    }
    if orch.settings.executor == "ray":
        checks["cluster"] = await _cluster_check(orch.settings.ray_address)
    prepared, detail = orch.first_use.readiness(request.app.state.first_use)
    checks["first_use"] = Check(ok=prepared, detail=detail)
    body = Readiness(ready=all(c.ok for c in checks.values()), checks=checks)
    return body if body.ready else JSONResponse(body.model_dump(mode="json"), status_code=503)


async def _router_check(loading: asyncio.Task[str | None]) -> Check:
    if not loading.done():
        await asyncio.wait({loading}, timeout=READY_WAIT_S)
    if not loading.done() or loading.cancelled():
        return Check(ok=False, detail="loading the router and its embedding model")
    problem = loading.result()
    return Check(ok=problem is None, detail=problem)


async def _log_check(shared: ServerLog) -> Check:
    """The shared log answers and holds the server's tables (a role that cannot create them is
    not ready, as it would fail at its first run)."""
    try:
        await asyncio.wait_for(asyncio.to_thread(_usable, shared), 5)
    except (LogUnavailable, TimeoutError) as exc:
        return Check(ok=False, detail=str(exc) or f"{shared.where} did not answer within 5 s")
    return Check(ok=True)


def _usable(shared: ServerLog) -> None:
    shared.create_tables()
    shared.ping()


async def _cluster_check(address: str) -> Check:
    """Whether the Ray cluster answers at its address (a TCP connection: Ray's own client would
    retry for 30 s). An empty address is a local cluster started on first use."""
    from concerto.cluster.ray_runner import INSTALL_RAY, ray_missing

    if (problem := ray_missing()) is not None:
        return Check(ok=False, detail=f"{problem}. {INSTALL_RAY}")
    ray = sys.modules.get("ray")
    if not address or address == "auto":
        if ray is None or not ray.is_initialized():
            return Check(ok=True, detail="the cluster is joined (or started) with the first task sent to it")
        address = ray.get_runtime_context().gcs_address
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        if not parts.hostname or not parts.port:
            raise ValueError("not host:port or ray://host:port")
        _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, parts.port), 3)
        writer.close()
    except (OSError, TimeoutError, ValueError) as exc:
        return Check(ok=False, detail=f"the Ray cluster at {address} cannot be reached: {exc or 'no answer in 3 s'}")
    return Check(ok=True)
