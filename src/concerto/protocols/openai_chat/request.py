"""The request side of OpenAI's chat protocol: the models, errors in OpenAI's shape, and how a
conversation becomes Concerto's input (`question`)."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator
from starlette.exceptions import HTTPException

from concerto.contracts.clock import Now
from concerto.contracts.orchestrator import (
    BLANK,
    MAX_QUERY_CHARS,
    OrchestratorErrorResponse,
    OrchestratorInput,
    OrchestratorOutput,
    encodable,
)

log = logging.getLogger(__name__)

BASE_MODEL = "concerto"
EXPERTISE: tuple[str, ...] = get_args(OrchestratorInput.model_fields["user_expertise"].annotation)
# Model id -> the reader it writes for (None: the question's own `user_expertise`, analyst by default).
MODELS: dict[str, str | None] = {
    BASE_MODEL: None,
    **{f"{BASE_MODEL}-{reader.replace('_', '-')}": reader for reader in EXPERTISE},
}
CHARS_PER_TOKEN = 4  # `usage` is an estimate: no tokenizer is involved in answering
SYSTEM_ROLES = frozenset({"system", "developer"})
TURN_ROLES = frozenset({"user", "assistant"})
# A data block this endpoint appended to an answer, at the end of an assistant turn sent back as history.
# Its fence is longer than any run of backticks inside, so the block holds no copy of it.
_DATA_BLOCK = re.compile(r"\s*(`{3,})json\n(?:(?!\1).)*\n\1\s*\Z", re.S)
_NOT_JSON = "We could not parse the JSON body of your request: send it as JSON in UTF-8."
Result = OrchestratorOutput | OrchestratorErrorResponse


def tokens(text: str) -> int:
    """An estimate: one token per four characters."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


# -- errors in OpenAI's shape ------------------------------------------------------------------


class ErrorDetail(BaseModel):
    message: str
    type: str = Field(..., description="invalid_request_error, or server_error for a fault of this server")
    param: str | None = Field(None, description="The request field at fault, e.g. `messages[2].content`")
    code: str | None = Field(None, description="e.g. model_not_found, no_user_message, context_length_exceeded")


class ErrorBody(BaseModel):
    """OpenAI's error shape."""

    error: ErrorDetail


class Refusal(Exception):
    """A request this protocol refuses: answered as `ErrorBody` with `status`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.detail = ErrorDetail(message=message, type=kind, param=param, code=code)

    def response(self) -> JSONResponse:
        return JSONResponse(ErrorBody(error=self.detail).model_dump(mode="json"), status_code=self.status)


# OpenAI's `code` for a refusal of the server's edge (server/edge.py), by status.
EDGE_CODES = {401: "invalid_api_key"}  # what OpenAI itself answers a wrong key with


class OpenAIRoute(APIRoute):
    """A route whose refusals, malformed bodies and own faults are answered in OpenAI's error
    shape rather than by the app's handlers (Concerto's error contract); the server's edge
    finds `refusal` on it (`concerto.server.lookup.OwnErrors`) and answers in the same shape."""

    def refusal(self, status: int, message: str) -> Response:
        """A request refused before the route ran (a wrong host or token, another site's page,
        a body over the limit), in OpenAI's shape."""
        return Refusal(status, message, code=EDGE_CODES.get(status)).response()

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except Refusal as exc:
                return exc.response()
            except RequestValidationError as exc:
                return _invalid(exc.errors()).response()
            except HTTPException as exc:  # FastAPI's "error parsing the body", a body over a size limit
                if exc.status_code == 400:
                    return Refusal(400, _NOT_JSON).response()
                return self.refusal(exc.status_code, str(exc.detail))
            except Exception as exc:
                log.exception("%s %s failed", request.method, request.url.path)
                message = f"Internal error in the OpenAI-compatible endpoint: {type(exc).__name__}"
                return Refusal(500, message, kind="server_error").response()

        return handle


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "A malformed request (OpenAI's error shape)"},
    404: {"model": ErrorBody, "description": "No such model (`model_not_found`)"},
    # Any other refusal (e.g. a body over a size limit) has the same shape; FastAPI would
    # otherwise document a 422 in its own shape, which these routes never send.
    "4XX": {"model": ErrorBody, "description": "Another refusal, in the same shape"},
    500: {"model": ErrorBody, "description": "A fault of this endpoint (`server_error`)"},
}


# -- the request -------------------------------------------------------------------------------


class TextPart(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    type: Literal["text"]
    text: str


class OtherPart(BaseModel):
    """A part Concerto does not read (an image, audio, a file, a refusal): accepted and left out."""

    model_config = ConfigDict(extra="allow", strict=True)

    type: Literal["image_url", "input_audio", "file", "refusal"]


ContentPart = Annotated[TextPart | OtherPart, Field(discriminator="type")]


class ChatMessage(BaseModel):
    """One message of the conversation; its other fields (name, tool_calls, ...) are not read."""

    model_config = ConfigDict(extra="allow", strict=True)

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = Field(None, description="Text, or content parts (text parts are read)")

    def text(self) -> str:
        """The message's text: its content, or its text parts one per line."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content or [] if isinstance(part, TextPart))


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    include_usage: bool | None = Field(None, description="Send a last chunk with `usage` (and no choices)")


class _OptionsBase(BaseModel):
    """Strict as the input contract, with its one allowance: JSON counts 662.0 as an integer."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("max_latency_ms", mode="before", check_fields=False)
    @classmethod
    def _json_integer(cls, value: Any) -> Any:
        return OrchestratorInput._json_integer(value)


def _options_model() -> type[BaseModel]:
    """`ConcertoOptions`: the input contract's fields but the question and the history (the
    messages give those), a fixed clock, and whether to send the output contract attached."""
    fields: dict[str, Any] = {
        name: (field.annotation, field)
        for name, field in OrchestratorInput.model_fields.items()
        if name not in ("query", "conversation_history")
    }
    fields["now"] = (Now, None)
    fields["attachment"] = (
        bool,
        Field(False, description="Send the whole output contract in the response's `concerto` field, not as text"),
    )
    model = create_model("ConcertoOptions", __base__=_OptionsBase, **fields)
    model.__doc__ = "Concerto's own options: `extra_body={'concerto': {...}}` with the official client."
    return model


ConcertoOptions: Any = _options_model()


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat request. Concerto reads `model`, `messages`, `stream`, `stream_options`,
    `metadata.concerto` and `concerto`; the other fields (temperature, max_tokens, top_p, n,
    stop, tools, user, ...) are accepted and not used: an answer is neither sampled nor cut."""

    model_config = ConfigDict(
        extra="allow",
        strict=True,
        json_schema_extra={
            "examples": [
                {"model": BASE_MODEL, "messages": [{"role": "user", "content": "echo hello world"}]},
                {
                    "model": f"{BASE_MODEL}-executive",
                    "messages": [
                        {"role": "system", "content": "Figures in euros."},
                        {"role": "user", "content": "home-loan attrition rate previous 4 months"},
                        {"role": "assistant", "content": "Home-loan attrition rate fell from 2.6% to 2.5% ..."},
                        {"role": "user", "content": [{"type": "text", "text": "and for credit cards?"}]},
                    ],
                    "stream": True,
                    "stream_options": {"include_usage": True},
                    "concerto": {"attachment": True, "now": "2026-11-25T12:00:00Z"},
                },
            ]
        },
    )

    model: str = Field(..., description="A model of GET /v1/models", json_schema_extra={"enum": list(MODELS)})
    messages: list[ChatMessage] = Field(
        ...,
        min_length=1,
        json_schema_extra={
            "contains": {"type": "object", "required": ["role"], "properties": {"role": {"const": "user"}}}
        },
        description="The conversation: the last user message is the question (at most "
        f"{MAX_QUERY_CHARS - 1} characters), earlier user and assistant turns its history, system "
        "and developer messages its context",
    )
    stream: bool | None = Field(False, description="Answer as server-sent `chat.completion.chunk`s")
    stream_options: StreamOptions | None = None
    metadata: dict[str, Any] | None = Field(
        None, description="Its `concerto` key, if any: Concerto's options as an object or as JSON text"
    )
    concerto: ConcertoOptions | None = None

    # Text UTF-8 can encode, as the input contract requires (a lone surrogate is refused).
    _encodable = field_validator("*", mode="before")(encodable)

    @model_validator(mode="after")
    def _encodable_extra(self) -> ChatCompletionRequest:
        """The same of the fields Concerto does not read (`user`, `tools` ...)."""
        encodable(self.model_extra or {})
        return self


@dataclass(frozen=True)
class Question:
    """What a chat request asks, in Concerto's terms."""

    input: OrchestratorInput
    now: datetime | None
    model: str
    attachment: bool
    include_usage: bool
    prompt_tokens: int


def question(body: ChatCompletionRequest) -> Question:
    """Read a chat request as a question; raise `Refusal` for one the protocol cannot take."""
    if body.model not in MODELS:
        raise Refusal(
            404,
            f"The model `{body.model}` does not exist; this server's models are {', '.join(MODELS)}.",
            param="model",
            code="model_not_found",
        )
    options = _options(body)
    now, attachment = options.pop("now", None), options.pop("attachment", False)
    messages = body.messages
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if last is None:
        raise Refusal(
            400,
            "The messages have no user message: the last one is the question.",
            param="messages",
            code="no_user_message",
        )
    turns = [(m.role, _turn(m)) for m in messages[:last] if m.role in TURN_ROLES]
    history = [{"role": role, "content": text} for role, text in turns if text.strip(BLANK)]
    context = "\n\n".join(t for m in messages if m.role in SYSTEM_ROLES and (t := m.text().strip(BLANK)))
    if options.get("context"):
        context = f"{context}\n\n{options['context']}" if context else options["context"]
    reader = MODELS[body.model]
    if reader is not None:
        options.setdefault("user_expertise", reader)
    fields = {**options, "query": messages[last].text(), "conversation_history": history or None}
    fields["context"] = context or None
    try:
        request = OrchestratorInput.model_validate(fields)
    except ValidationError as exc:
        raise _refused_input(exc, last, fields["query"]) from None
    return Question(
        input=request,
        now=now,
        model=body.model,
        attachment=bool(attachment),
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
        prompt_tokens=sum(tokens(m.text()) for m in messages),
    )


def _options(body: ChatCompletionRequest) -> dict[str, Any]:
    """Concerto's options set in `metadata.concerto` and in `concerto` (the latter wins)."""
    found: dict[str, Any] = {}
    given = (body.metadata or {}).get(BASE_MODEL)
    if given is not None:
        if isinstance(given, str):
            try:
                given = json.loads(given)
            except ValueError:
                raise Refusal(400, "metadata.concerto: give the options as a JSON object", param="metadata") from None
        try:
            found = ConcertoOptions.model_validate(given).model_dump(exclude_unset=True)
        except ValidationError as exc:
            raise _invalid(exc.errors(), prefix=("metadata", BASE_MODEL)) from None
    if body.concerto is not None:
        found.update(body.concerto.model_dump(exclude_unset=True))
    return found


def _turn(message: ChatMessage) -> str:
    """An earlier turn's text; an answer of this endpoint without the data block it carried."""
    text = message.text()
    return _DATA_BLOCK.sub("", text) if message.role == "assistant" else text


def _refused_input(exc: ValidationError, last: int, query: str) -> Refusal:
    """The input contract's refusal, named after the request field it came from."""
    error = exc.errors()[0]
    name = str(error["loc"][0]) if error["loc"] else ""
    message = str(error["msg"]).removeprefix("Value error, ")
    if name == "query":
        too_long = len(query.strip(BLANK)) >= MAX_QUERY_CHARS
        code = "context_length_exceeded" if too_long else "invalid_value"
        return Refusal(
            400, f"The question (the last user message): {message}", param=f"messages[{last}].content", code=code
        )
    if name == "context":
        return Refusal(400, f"The system messages and concerto.context together: {message}", param="messages")
    return _invalid(exc.errors(), prefix=(BASE_MODEL,))


def _invalid(errors: Sequence[Mapping[str, Any]], prefix: tuple[str, ...] = ()) -> Refusal:
    """Pydantic's errors as one refusal: the first field at fault is `param`, every one is named."""
    parts: dict[str | None, str] = {}
    first_type = ""
    for error in errors:
        kind = str(error.get("type", ""))
        if kind == "json_invalid":
            return Refusal(400, _NOT_JSON)
        loc = tuple(error.get("loc", ()))
        param, inside = _param((*prefix, *(loc[1:] if loc[:1] == ("body",) else loc)))
        if param in parts:
            continue
        first_type = first_type or kind
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if inside:  # the members of `content`'s union, each refused on its own terms
            message = 'give text, or a list of content parts such as {"type": "text", "text": "..."}'
        elif param is None and kind != "value_error":  # a check of the whole body says what it found
            message = "the body must be a JSON object" if kind != "missing" else "the body is missing"
        parts[param] = f"{param or 'body'}: {message}"
    if not parts:
        return Refusal(400, "Invalid request")
    code = "missing_required_parameter" if first_type == "missing" else "invalid_value"
    if first_type.endswith("_type") or first_type == "union_tag_invalid":
        code = "invalid_type"
    return Refusal(400, "Invalid request — " + "; ".join(parts.values()), param=next(iter(parts)), code=code)


def _param(loc: Sequence[Any]) -> tuple[str | None, bool]:
    """`("messages", 0, "content", "str")` -> `("messages[0].content", True)`: the field's path
    in OpenAI's notation, and whether pydantic went on into a union's members."""
    out = ""
    for i, part in enumerate(loc):
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
        if part == "content" and i + 1 < len(loc):
            return out, True
    return out or None, False
