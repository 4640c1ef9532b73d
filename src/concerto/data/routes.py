"""HTTP routes of the `data` pack: upload a file as a source, list the sources, show one's
data context, drop one — `concerto data load|list|show|drop` over the API.

Every route works on the store of the running app's orchestrator (its settings and shared
resources, `request.app.state.orchestrator`), so the agents see an upload on the next
question. Errors come back in the app's error contract (`OrchestratorErrorResponse`,
category `invalid_input`; 503 `all_agents_failed` when the store cannot be used: the
database cannot be reached or a `CONCERTO_DATA_*` setting is invalid), with the loader's
or the store's message, never a traceback.

An upload is read from the request stream as it arrives (no form parsing beforehand):
the file part goes to disk in `<data dir>/uploads/` chunk by chunk and the request is
refused with 413 as soon as it passes `CONCERTO_DATA_MAX_FILE_MB`, or before a byte is
read when its `Content-Length` is more than a file within the limit and the form's fields
can make (so a client sending `Expect: 100-continue` never sends the body). A refusal
before the body's end closes the connection (`Connection: close`, added by the server's
edge to any answer that starts before the body was read): the server stops reading, where it
would otherwise read and discard the rest to keep the connection
(tests/data/test_routes_upload_limit.py sends 2 GB to `concerto serve`). Of the client's file
name only the extension is kept (it says the file type); the file is stored as
`<source name><extension>`. A loaded upload stays there (a later load or agent can read it
again; `DELETE` removes it with the source); an upload that failed is deleted.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from concerto.contracts.orchestrator import OrchestratorErrorResponse
from concerto.data.context import DataContext, ProfileOverrides
from concerto.data.load import KINDS, LoadError, TooLarge, kind_of
from concerto.data.sources import store_for
from concerto.data.store import ALLOWED, NAME, QueryFailed, SourceError, Store, source_name, valid_name
from concerto.server.errors import error_response, too_large
from concerto.settings import Settings, SettingsError

FIELD_BYTES = 64 * 1024  # the most one text field (name, describe) may hold
HEADER_BYTES = 16 * 1024  # the most one form part's headers may hold
MOST_FIELDS = 1000
_FLUSH_BYTES = 1024 * 1024  # file data is written in pieces of about this size
STREAMED = sys.maxsize  # the route's own limit for FastAPI (its bytes are counted while they stream in)
_FILE, _NAME, _DESCRIBE = "file", "name", "describe"

ERROR = {"model": OrchestratorErrorResponse, "description": "The error contract"}
UNKNOWN = {"model": OrchestratorErrorResponse, "description": "No source of that name; the message lists them"}
UNAVAILABLE = {
    "model": OrchestratorErrorResponse,
    "description": "The store cannot be used: the database (CONCERTO_DATABASE_URL) failed, or a CONCERTO_DATA_* "
    "setting is invalid",
}

UPLOAD_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": [_FILE],
                "additionalProperties": False,
                "properties": {
                    _FILE: {
                        "type": "string",
                        "format": "binary",
                        "description": "The file; its extension says its type: "
                        + ", ".join(sorted(KINDS))
                        + " (at most CONCERTO_DATA_MAX_FILE_MB)",
                    },
                    _NAME: {
                        "type": "string",
                        "pattern": NAME.pattern,
                        "description": f"Source name: {ALLOWED}; another name is refused (422) with a "
                        "suggestion, never changed into one. Default: made from the file's name. A source of the "
                        "same name is replaced",
                    },
                    _DESCRIBE: {
                        "type": "array",
                        "items": {"type": "string", "pattern": r"^[^=]*[^=\s][^=]*=[\s\S]*\S[\s\S]*$"},
                        "description": "COLUMN=TEXT: what a column means (repeat the field for several); "
                        "overrides the detected description",
                    },
                },
            },
            "encoding": {
                _FILE: {
                    "headers": {
                        "Content-Disposition": {
                            "description": "The file name's extension says the type; the rest of it is not used",
                            "schema": {"type": "string"},
                            "example": f'form-data; name="{_FILE}"; filename="sales.csv"',
                        }
                    }
                }
            },
        }
    },
}

router = APIRouter(prefix="/v1/data", tags=["data"])


class SourceSummary(BaseModel):
    """One loaded source, as `concerto data list` shows it."""

    name: str = Field(..., description="The source's name: `source` of /v1/ask")
    row_count: int = Field(..., ge=0)
    columns: list[str]
    file_name: str = Field(..., description="The file it was loaded from")
    loaded_at: datetime


class Refused(Exception):
    """A request answered with the error contract: its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.orchestrator.settings
    return settings


def _store(request: Request) -> Store:
    """The store of the app's orchestrator: the one its agents query."""
    orchestrator = request.app.state.orchestrator
    try:
        return store_for(orchestrator.settings, orchestrator.resources)
    except SettingsError as exc:  # the pack's own settings; its agents are left out too
        raise Refused(503, f"the data pack is not available: {exc}") from None


async def _call(work: Any, *args: Any, **kwargs: Any) -> Any:
    """Run blocking store work in a worker thread; its errors become `Refused`."""
    try:
        return await run_in_threadpool(work, *args, **kwargs)
    except SourceError as exc:
        raise Refused(404, str(exc)) from None
    except TooLarge as exc:
        raise Refused(413, str(exc)) from None
    except LoadError as exc:
        raise Refused(422, str(exc)) from None
    except QueryFailed as exc:
        raise Refused(503, str(exc)) from None


@router.post(
    "/sources",
    status_code=201,
    response_model=DataContext,
    summary="Upload a file as a data source",
    responses={413: ERROR, 422: ERROR, 503: UNAVAILABLE},
    openapi_extra={"requestBody": UPLOAD_BODY},
    max_body_size=STREAMED,  # the app's JSON body limit does not apply: `_receive` counts as it streams
)
async def upload_source(request: Request) -> Any:
    """Load an uploaded CSV, TSV, Parquet, JSON or Excel file as a source (replacing one of
    the same name) and answer its data context, as `concerto data load` does.

    Form fields: `file` (required), `name`, and `describe` (repeatable `COLUMN=TEXT`). A file
    over `CONCERTO_DATA_MAX_FILE_MB` is refused with 413 while it arrives, a workbook that
    unpacks to more than `CONCERTO_DATA_MAX_UNPACKED_MB` with 413 before it is read; a file that
    cannot become a table (its type, empty, ragged rows, ...) with 422 and the loader's
    message, a `name` that is not a source name with 422 and a suggestion.
    """
    uploads = Path(_settings(request).data_dir) / "uploads"
    incoming = uploads / f".incoming-{uuid.uuid4().hex}"
    try:
        store = _store(request)
        form = await _receive(request, incoming, store.max_file_bytes)
        target = valid_name(form.name) if form.name is not None else source_name(form.stem)
        overrides = _overrides(form.describe)
        path = form.path.rename(form.path.with_name(f"{target}{form.suffix}"))
        context: DataContext = await _call(store.load, path, target, overrides=overrides)
        await run_in_threadpool(_keep, path, uploads, target)
        llm = request.app.state.orchestrator.llm
        if llm is not None:  # the model's description of the data, the user's words over it
            from concerto.data.llm_profile import profile_with_llm

            context = await profile_with_llm(store, context, llm, overrides)
    except SourceError as exc:  # a name that cannot be a source
        return error_response(422, str(exc))
    except Refused as exc:
        return error_response(422 if exc.status == 404 else exc.status, exc.message)
    finally:
        await run_in_threadpool(shutil.rmtree, incoming, True)
    return context


class Limits(BaseModel):
    """What an upload may be, so a client can refuse a file before sending it."""

    max_file_bytes: int = Field(..., description="Largest file an upload may be (CONCERTO_DATA_MAX_FILE_MB)")


@router.get("/limits", response_model=Limits, summary="Upload limits")
async def limits(request: Request) -> Limits:
    """The largest file `POST /sources` takes, in bytes."""
    from concerto.data.settings import DataSettings

    return Limits(max_file_bytes=DataSettings.of(_settings(request)).data_max_file_mb * 2**20)


@router.get(
    "/sources", response_model=list[SourceSummary], summary="List the data sources", responses={503: UNAVAILABLE}
)
async def list_sources(request: Request) -> Any:
    """Every loaded source, oldest first: name, rows, columns, file and when it was loaded."""
    try:
        contexts: list[DataContext] = await _call(_store(request).contexts)
    except Refused as exc:
        return error_response(exc.status, exc.message)
    return [SourceSummary.model_validate(c, from_attributes=True) for c in contexts]


@router.get(
    "/sources/{name}",
    response_model=DataContext,
    summary="Show a data source's data context",
    responses={404: UNKNOWN, 503: UNAVAILABLE},
)
async def show_source(name: str, request: Request) -> Any:
    """The source's data context (by name or `data_source_id`): columns, types, samples,
    statistics and what each column means, as `concerto data show` prints it."""
    try:
        return await _call(_store(request).context, name)
    except Refused as exc:
        return error_response(exc.status, exc.message)


@router.delete(
    "/sources/{name}",
    status_code=204,
    response_class=Response,
    summary="Drop a data source",
    responses={404: UNKNOWN, 503: UNAVAILABLE},
)
async def drop_source(name: str, request: Request) -> Response:
    """Remove the source, its data and its uploaded file, as `concerto data drop` does."""
    try:
        store = _store(request)
        context: DataContext = await _call(store.context, name)
        await _call(store.drop, context.name)
    except Refused as exc:
        return error_response(exc.status, exc.message)
    uploads = Path(_settings(request).data_dir) / "uploads"
    await run_in_threadpool(_forget, uploads, context.name)
    return Response(status_code=204)


# -- the upload, read as it arrives --------------------------------------------------------


class Received:
    """What an upload sent: the file (on disk), its client-given stem and extension, the fields."""

    def __init__(self) -> None:
        self.path: Path = Path()
        self.stem = ""
        self.suffix = ""
        self.name: str | None = None
        self.describe: list[str] = []


class _Part:
    def __init__(self) -> None:
        self.headers: dict[bytes, bytes] = {}
        self.field = ""
        self.data = bytearray()
        self.file: IO[bytes] | None = None


async def _receive(request: Request, incoming: Path, limit: int) -> Received:
    """Parse the multipart body from the request stream, writing the file part to `incoming/`."""
    media, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if media != b"multipart/form-data" or not boundary:
        raise Refused(422, "Invalid request — send the file as multipart/form-data with a `file` field")
    most = _most_body(limit, boundary)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > most:
        raise Refused(413, _over(f"the upload ({int(declared) / 2**20:,.0f} MB)", limit))
    events: list[tuple[str, bytes]] = []
    header = [b"", b"", b""]  # this header's name and value, and every header of the part so far

    def on_header(i: int, data: bytes, start: int, end: int) -> None:
        header[i] += data[start:end]
        if len(header[0]) + len(header[1]) + len(header[2]) > HEADER_BYTES:
            raise Refused(422, f"Invalid request — a form part's headers are over {HEADER_BYTES // 1024} KB")

    def on_header_end() -> None:
        events.append(("header", header[0].lower() + b"\0" + header[1]))
        header[2] += header[0] + header[1]
        header[0] = header[1] = b""

    def on_part_begin() -> None:
        events.append(("begin", b""))
        header[2] = b""

    callbacks: Any = {
        "on_part_begin": on_part_begin,
        "on_header_field": lambda data, start, end: on_header(0, data, start, end),
        "on_header_value": lambda data, start, end: on_header(1, data, start, end),
        "on_header_end": on_header_end,
        "on_headers_finished": lambda: events.append(("headers", b"")),
        "on_part_data": lambda data, start, end: events.append(("data", bytes(data[start:end]))),
        "on_part_end": lambda: events.append(("end", b"")),
    }
    receiving = _Receiving(incoming, limit)
    read = 0
    try:
        parser = MultipartParser(boundary, callbacks)
        async for chunk in _chunks(request):
            read += len(chunk)
            if read > most:  # no file within the limit makes a body this long (e.g. a long epilogue)
                raise Refused(413, _over("the upload", limit))
            parser.write(chunk)
            await receiving.handle(events)
            events.clear()
        parser.finalize()
        await receiving.handle(events)
    except FormParserError as exc:  # the parser's own words say where (e.g. "Maximum header size exceeded")
        message = f"Invalid request — the body is not valid multipart/form-data ({exc})"
        raise Refused(422, message) from None
    finally:
        await receiving.close()
    return receiving.done()


def _most_body(limit: int, boundary: bytes) -> int:
    """The longest body an upload within the limits can have: the file, every text field,
    each part's headers and boundary line, and the closing boundary."""
    part = HEADER_BYTES + len(boundary) + 8  # CRLF "--" boundary CRLF, and the headers' blank line
    return limit + MOST_FIELDS * FIELD_BYTES + (MOST_FIELDS + 2) * part


def _over(what: str, limit: int) -> str:
    return too_large(what, f"{limit / 2**20:,.0f} MB", "CONCERTO_DATA_MAX_FILE_MB")


async def _chunks(request: Request) -> AsyncIterator[bytes]:
    try:
        async for chunk in request.stream():
            if chunk:
                yield chunk
    except ClientDisconnect:
        raise Refused(422, "Invalid request — the client went away before the upload ended") from None


class _Receiving:
    """The state of one upload while its parts arrive."""

    def __init__(self, incoming: Path, limit: int) -> None:
        self.incoming = incoming
        self.limit = limit
        self.received = Received()
        self.part = _Part()
        self.fields = 0
        self.file_bytes = 0
        self.has_file = False
        self.pending = bytearray()

    async def handle(self, events: list[tuple[str, bytes]]) -> None:
        for kind, data in events:
            if kind == "begin":
                self.part = _Part()
            elif kind == "header":
                name, _, value = data.partition(b"\0")
                self.part.headers[name] = value
            elif kind == "headers":
                await self._start()
            elif kind == "data":
                await self._data(data)
            elif kind == "end":
                await self._end()

    async def _start(self) -> None:
        part = self.part
        _, options = parse_options_header(part.headers.get(b"content-disposition", b""))
        if b"name" not in options:
            raise Refused(422, "Invalid request — a form part has no name")
        part.field = _text(options[b"name"])
        filename = _text(options[b"filename"]) if b"filename" in options else None
        if part.field not in (_FILE, _NAME, _DESCRIBE):
            raise Refused(422, f"Invalid request — unknown form field '{part.field[:60]}'; send file, name, describe")
        if part.field != _FILE:
            self.fields += 1
            if self.fields > MOST_FIELDS:
                raise Refused(422, f"Invalid request — more than {MOST_FIELDS} form fields")
            return
        if self.has_file:
            raise Refused(422, "Invalid request — send one file per upload")
        if filename is None:
            raise Refused(422, "Invalid request — `file` must be a file part with a file name (e.g. sales.csv)")
        base = PurePosixPath(filename.replace("\\", "/")).name[:200]  # never a path: its last part only
        suffix = PurePosixPath(base).suffix.lower()
        try:
            kind_of(Path(base or "file"))
        except LoadError as exc:
            raise Refused(422, str(exc)) from None
        self.has_file = True
        self.received.stem, self.received.suffix = PurePosixPath(base).stem, suffix
        self.received.path = self.incoming / f"upload{suffix}"
        part.file = await run_in_threadpool(_create, self.received.path)

    async def _data(self, data: bytes) -> None:
        part = self.part
        if part.file is None:
            if len(part.data) + len(data) > FIELD_BYTES:
                raise Refused(422, f"Invalid request — the field '{part.field}' is over {FIELD_BYTES // 1024} KB")
            part.data += data
            return
        self.file_bytes += len(data)
        if self.file_bytes > self.limit:
            raise Refused(413, _over("the file", self.limit))
        self.pending += data
        if len(self.pending) >= _FLUSH_BYTES:
            await self._flush()

    async def _flush(self) -> None:
        if self.part.file is not None and self.pending:
            chunk, self.pending = bytes(self.pending), bytearray()
            await run_in_threadpool(self.part.file.write, chunk)

    async def _end(self) -> None:
        part = self.part
        if part.file is not None:
            await self._flush()
            await run_in_threadpool(part.file.close)
            return
        try:
            value = part.data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(422, f"Invalid request — the field '{part.field}' is not UTF-8 text") from None
        if part.field == _NAME:
            if self.received.name is not None:
                raise Refused(422, "Invalid request — give `name` once")
            self.received.name = value
        else:
            self.received.describe.append(value)

    async def close(self) -> None:
        if self.part.file is not None and not self.part.file.closed:
            await run_in_threadpool(self.part.file.close)

    def done(self) -> Received:
        if not self.has_file:
            raise Refused(422, "Invalid request — the form has no `file` part")
        return self.received


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _create(path: Path) -> IO[bytes]:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("xb")


def _overrides(describe: list[str]) -> ProfileOverrides:
    """`COLUMN=TEXT` pairs as overrides (the form's `describe`, the CLI's `--describe`)."""
    pairs = {}
    for item in describe:
        column, sep, text = item.partition("=")
        if not sep or not column.strip() or not text.strip():
            raise Refused(422, f"Invalid request — describe '{item[:80]}' is not COLUMN=TEXT")
        pairs[column.strip()] = text.strip()
    return ProfileOverrides(field_descriptions=pairs)


def _keep(path: Path, uploads: Path, name: str) -> None:
    """Keep a loaded upload as `uploads/<name><ext>`, replacing an earlier one of that source."""
    _forget(uploads, name, but=path.suffix)
    os.replace(path, uploads / path.name)


def _forget(uploads: Path, name: str, but: str | None = None) -> None:
    """Delete the kept upload of a source (every extension, except `but`)."""
    for suffix in KINDS:
        if suffix != but:
            (uploads / f"{name}{suffix}").unlink(missing_ok=True)
