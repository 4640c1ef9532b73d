"""An `LLMClient` for any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, llama.cpp, ...).

Everything that can go wrong on the wire becomes an `LLMError` with a `kind` the
orchestrator can act on (fall back to the deterministic path and say why), and a
message a user can act on (which setting to change), never a stack trace.

httpx is imported on the first call, not with this module, so that importing
`concerto.llm` costs nothing in the default set-up, which has no LLM.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Literal

from concerto.llm import guard
from concerto.llm.base import LLMError, LLMResponse, Message
from concerto.redact import mask_url, scrub

if TYPE_CHECKING:
    import httpx

    from concerto.settings import Settings

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"

JsonMode = Literal["json_object", "json_schema", "none"]


# What each JSON mode sends first, and what it falls back to when the endpoint refuses
# it: OpenAI answers 400 to the llama.cpp-style `schema` key, llama-cpp-python answers
# 500 to `json_schema`, some servers refuse `response_format` altogether.
_FORMAT_LADDERS: dict[str, tuple[str, ...]] = {
    "json_object": ("json_object+schema", "json_object", "none"),
    "json_schema": ("json_schema", "json_object+schema", "json_object", "none"),
    "none": ("none",),
}
# Statuses with which servers refuse a request body they do not understand.
_REFUSED = frozenset({400, 422, 500})


class OpenAICompatibleLLM:
    """Chat completions over HTTP with one reused connection pool; close it with `aclose()`.

    `json_mode` says how a `json_schema` is passed to the endpoint:

    - `json_object`: `response_format={"type": "json_object", "schema": ...}`.
      llama.cpp's servers turn the schema into a grammar, so the output has the
      right shape; lenient servers read the type and ignore the extra key, strict
      ones (OpenAI) refuse it and get plain `json_object` instead (below).
    - `json_schema`: OpenAI's structured outputs (`strict` off, so any pydantic
      schema is accepted); also vLLM, LM Studio, Gemini.
    - `none`: nothing is sent, for endpoints that reject `response_format`.

    In every mode the schema is also stated in the system prompt, because many models
    only follow what they are told. When the endpoint refuses the `response_format`
    (HTTP 400, 422 or 500 naming it), the call is repeated with the next simpler form
    (`json_schema`, then `json_object` with the schema, without it, then nothing),
    and the form that worked is kept for later calls, with one warning in the log.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        json_mode: JsonMode = "json_object",
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.timeout_s = timeout_s
        self.json_mode: JsonMode = json_mode
        self.headers = {"Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        # `transport` lets tests (and users) answer without a server, as httpx.MockTransport does.
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._format_step = 0  # how far down the mode's ladder this endpoint needed to go

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(model={self.model!r}, base_url={mask_url(self.base_url)!r})"

    @property
    def response_format_kind(self) -> str:
        """The `response_format` form used now: the mode's first, or what it fell back to."""
        ladder = _FORMAT_LADDERS[self.json_mode]
        return ladder[min(self._format_step, len(ladder) - 1)]

    async def aclose(self) -> None:
        """Close the connection pool (a new one is opened if the client is used again).

        A pool opened on another, finished event loop is only dropped: its connections
        cannot be closed from here.
        """
        client, loop = self._client, self._client_loop
        self._client = self._client_loop = None
        if client is not None and loop is asyncio.get_running_loop():
            await client.aclose()

    async def __aenter__(self) -> OpenAICompatibleLLM:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _http(self) -> httpx.AsyncClient:
        """The pool of the running event loop.

        Connections belong to the loop that opened them; a client kept across
        `asyncio.run` calls (a CLI, a test suite) would otherwise fail with "Event loop
        is closed". The pool of a finished loop is dropped, not closed: it cannot be.
        """
        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self.headers,
                timeout=httpx.Timeout(self.timeout_s),
                transport=self._transport,
            )
            self._client_loop = loop
        return self._client

    def request_body(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        response_format_kind: str | None = None,
    ) -> dict[str, Any]:
        """The JSON body of one `/chat/completions` call (public so that it can be inspected)."""
        if json_schema is not None:
            messages = _with_schema_instruction(messages, json_schema)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if json_schema is not None:
            kind = response_format_kind or self.response_format_kind
            response_format = _response_format(kind, json_schema)
            if response_format is not None:
                body["response_format"] = response_format
        return body

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> LLMResponse:
        """Return the completion with its token counts, latency and finish reason.

        Raises `LLMError` with kind `unavailable` (cannot connect), `timeout`, or
        `error` (HTTP error status, or a body that is not a chat completion).
        """
        # Without a schema there is no response_format, so nothing to fall back from.
        ladder = _FORMAT_LADDERS[self.json_mode] if json_schema is not None else ("none",)
        first = min(self._format_step, len(ladder) - 1)
        started = time.perf_counter()
        first_refusal = ""
        for step in range(first, len(ladder)):
            body = self.request_body(
                messages,
                json_schema=json_schema,
                max_tokens=max_tokens,
                temperature=temperature,
                response_format_kind=ladder[step],
            )
            reply = await self._post(body)
            if reply.status_code < 400:
                if step != first:
                    self._fall_back(step, first_refusal)
                latency_ms = (time.perf_counter() - started) * 1000
                return _parse_completion(self._shown_url, reply, latency_ms, self.model)
            message = _http_error_message(self._shown_url, reply)
            if not _refuses_response_format(body, reply):
                raise LLMError(first_refusal or message, kind="error")
            first_refusal = first_refusal or message
        raise LLMError(first_refusal, kind="error")

    @property
    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def _shown_url(self) -> str:
        """The endpoint as messages name it: without a password or key in the URL."""
        return mask_url(self._url)

    async def _post(self, body: dict[str, Any]) -> httpx.Response:
        """POST the body; transport failures become `LLMError`s that name the setting to fix."""
        import httpx

        if self._transport is None:  # a real network request: tests may forbid it
            guard.check(self._url)
        try:
            return await self._http().post("/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise LLMError(
                f"LLM endpoint {self._shown_url} did not answer within {self.timeout_s:g} s "
                "(raise CONCERTO_LLM_TIMEOUT_S or use a faster model)",
                kind="timeout",
            ) from exc
        except httpx.NetworkError as exc:
            raise LLMError(
                f"LLM endpoint {self._shown_url} is unreachable ({_describe(exc)}); "
                "check CONCERTO_LLM_BASE_URL and that the server is running",
                kind="unavailable",
            ) from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"LLM call to {self._shown_url} failed: {_describe(exc)}", kind="error") from exc

    def _fall_back(self, step: int, refusal: str) -> None:
        ladder = _FORMAT_LADDERS[self.json_mode]
        log.warning(
            "%s refused response_format %r (%s); using %r from now on. "
            "Set CONCERTO_LLM_JSON_MODE to what the endpoint supports to avoid the extra call.",
            mask_url(self.base_url),
            ladder[self._format_step],
            refusal,
            ladder[step],
        )
        self._format_step = step


def llm_from_settings(settings: Settings) -> OpenAICompatibleLLM | None:
    """The configured LLM, or None when no model and endpoint (or OpenAI key) are set.

    The result is an `LLMClient`; its concrete type is returned so that the owner
    can `aclose()` it, which the protocol does not require of every client.
    """
    if not settings.llm_configured:
        return None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return OpenAICompatibleLLM(
        model=settings.llm_model or "",
        base_url=settings.llm_base_url,
        api_key=key,
        timeout_s=settings.llm_timeout_s,
        json_mode=settings.llm_json_mode,
    )


def schema_instruction(json_schema: dict[str, Any]) -> str:
    """The sentence that tells the model which JSON to write."""
    schema = json.dumps(json_schema, separators=(",", ":"), ensure_ascii=False)
    return f"Reply with one JSON object only, no prose and no code fences. It must match this JSON schema: {schema}"


def _with_schema_instruction(messages: list[Message], json_schema: dict[str, Any]) -> list[Message]:
    """Append the schema to the system message, or add a system message that states it."""
    instruction = schema_instruction(json_schema)
    if messages and messages[0].role == "system":
        first = Message(role="system", content=f"{messages[0].content}\n\n{instruction}")
        return [first, *messages[1:]]
    return [Message(role="system", content=instruction), *messages]


def _refuses_response_format(body: dict[str, Any], reply: httpx.Response) -> bool:
    """Did the endpoint refuse the request because of its `response_format`?

    Servers say so with 400, 422 or 500 and a message naming the field (OpenAI:
    "Unknown parameter: 'response_format.schema'"; llama-cpp-python: a validation
    error at `response_format.type`). Other errors, such as a prompt longer than the
    context, are not worth repeating with another form.
    """
    if "response_format" not in body or reply.status_code not in _REFUSED:
        return False
    text = reply.text.lower()
    return any(word in text for word in ("response_format", "json", "schema"))


def _response_format(kind: str, json_schema: dict[str, Any]) -> dict[str, Any] | None:
    """The `response_format` value of one rung of a JSON mode's ladder."""
    if kind == "json_object+schema":
        return {"type": "json_object", "schema": json_schema}
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {
                "name": _schema_name(json_schema),
                "schema": json_schema,
                "strict": False,
            },
        }
    return None


def _schema_name(json_schema: dict[str, Any]) -> str:
    """OpenAI wants a name of letters, digits, `_` and `-`; pydantic puts the class in `title`."""
    title = str(json_schema.get("title") or "answer")
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in title)
    return name[:64] or "answer"


def _describe(exc: BaseException) -> str:
    """The exception's own words (httpx often has none, or quotes the URL), without a traceback."""
    text = scrub(str(exc).strip())
    return text or type(exc).__name__


def _http_error_message(url: str, reply: httpx.Response) -> str:
    """`HTTP 401 from URL: <the server's own message>`, with a hint for the common ones."""
    detail = scrub(_server_message(reply))
    message = f"LLM endpoint {url} answered HTTP {reply.status_code}"
    if detail:
        message += f": {detail}"
    if reply.status_code in (401, 403):
        message += " (check CONCERTO_LLM_API_KEY or OPENAI_API_KEY)"
    elif reply.status_code == 404:
        message += " (check CONCERTO_LLM_BASE_URL, usually ending in /v1, and CONCERTO_LLM_MODEL)"
    return message


def _server_message(reply: httpx.Response) -> str:
    """The `error.message` (OpenAI), `error` (Ollama) or `detail` (FastAPI) of an error body."""
    try:
        data = reply.json()
    except ValueError:
        return _without_traceback(reply.text)
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return _without_traceback(error if isinstance(error, str) else json.dumps(error))
    return _without_traceback(json.dumps(data))


def _without_traceback(text: str, limit: int = 300) -> str:
    """One line of the server's message, cut before any traceback it carries.

    llama-cpp-python, for one, puts the Python traceback of its failure in the
    message; the user needs the first line, not the server's stack.
    """
    kept: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("Traceback (most recent call last)", 'File "')):
            break
        if stripped:
            kept.append(stripped)
    message = " ".join(kept)
    return message if len(message) <= limit else message[: limit - 3] + "..."


def _parse_completion(url: str, reply: httpx.Response, latency_ms: float, model: str) -> LLMResponse:
    """Read text, usage and finish reason; anything that is not a chat completion is an error."""
    try:
        data = reply.json()
        choice = data["choices"][0]
        message = choice.get("message") or {}
        text = message.get("content") or ""
        usage = data.get("usage") or {}
        return LLMResponse(
            text=text,
            model=str(data.get("model") or model),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_ms=latency_ms,
            finish_reason=choice.get("finish_reason"),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        snippet = scrub(reply.text.strip()[:200])
        raise LLMError(
            f"LLM endpoint {url} did not return a chat completion "
            f"({type(exc).__name__}); the body starts with: {snippet!r}",
            kind="error",
        ) from exc
