"""The core HTTP API as `APIRouter`s, one module per concern, mounted by `create_app` the way a
pack's routes are (`Pack.routes`, declared in `concerto/core.py`), before every pack's:

- `ask`: `POST /v1/ask`, `POST|GET /v1/ask/stream` (server-sent events);
- `runs`: `POST /v1/runs`, `GET /v1/runs/{run_id}`, `GET /v1/runs/{run_id}/events`;
- `conversations`: `GET|DELETE /v1/conversations/{conversation_id}`;
- `agents`: `GET /v1/agents`, `GET /v1/agents/availability`;
- `health`: `GET /health` (liveness) and `GET /ready` (readiness);
- `page`: the page at `/` (its files are the core pack's `static`).

Routes keep no state of their own: the orchestrator, the shared log and the runs are the app's
(`request.app.state`, set as the app starts, `server/app.py`).
"""
