"""An `LLMClient` for any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, llama.cpp, ...).

Everything that can go wrong on the wire becomes an `LLMError` with a `kind` the
orchestrator can act on (fall back to the deterministic path and say why), and a
message a user can act on (which setting to change), never a stack trace.

httpx is imported when the first client is built, not when this module is, so that
importing `concerto.llm` costs nothing for the default set-up, which has no LLM.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Literal

from concerto.llm.base import LLMClient, LLMError, LLMResponse, Message

if TYPE_CHECKING:
    import httpx

    from concerto.settings import Settings

OPENAI_BASE_URL = "https://api.openai.com/v1"

JsonMode = Literal["json_object", "json_schema", "none"]


class OpenAICompatibleLLM:
    """Chat completions over HTTP with one reused connection pool; close it with `aclose()`.

    `json_mode` says how a `json_schema` is passed to the endpoint:

    - `json_object`: `response_format={"type": "json_object", "schema": ...}`. OpenAI,
      Ollama and vLLM read the type and ignore the extra key; llama.cpp's server turns
      the schema into a grammar, so the output has the right shape.
    - `json_schema`: OpenAI's structured outputs (`strict` off, so any pydantic schema
      is accepted). llama-cpp-python's server refuses it.
    - `none`: nothing is sent, for endpoints that reject `response_format`.

    In every mode the schema is also stated in the system prompt, because many models
    only follow what they are told.
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
        import httpx

        self.model = model
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.timeout_s = timeout_s
        self.json_mode = json_mode
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        # `transport` lets tests (and users) answer without a server, as httpx.MockTransport does.
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def __aenter__(self) -> OpenAICompatibleLLM:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def request_body(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
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
        if json_schema is not None and self.json_mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": json_schema}
        elif json_schema is not None and self.json_mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(json_schema),
                    "schema": json_schema,
                    "strict": False,
                },
            }
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
        import httpx

        body = self.request_body(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature
        )
        url = f"{self.base_url}/chat/completions"
        started = time.perf_counter()
        try:
            reply = await self._client.post("/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise LLMError(
                f"LLM endpoint {url} did not answer within {self.timeout_s:g} s "
                "(raise CONCERTO_LLM_TIMEOUT_S or use a faster model)",
                kind="timeout",
            ) from exc
        except httpx.NetworkError as exc:
            raise LLMError(
                f"LLM endpoint {url} is unreachable ({_describe(exc)}); "
                "check CONCERTO_LLM_BASE_URL and that the server is running",
                kind="unavailable",
            ) from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"LLM call to {url} failed: {_describe(exc)}", kind="error") from exc
        latency_ms = (time.perf_counter() - started) * 1000
        if reply.status_code >= 400:
            raise LLMError(_http_error_message(url, reply), kind="error")
        return _parse_completion(url, reply, latency_ms, self.model)


def llm_from_settings(settings: Settings) -> LLMClient | None:
    """The configured LLM, or None when no model and endpoint (or OpenAI key) are set."""
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
    return (
        "Reply with one JSON object only, no prose and no code fences. "
        f"It must match this JSON schema: {schema}"
    )


def _with_schema_instruction(messages: list[Message], json_schema: dict[str, Any]) -> list[Message]:
    """Append the schema to the system message, or add a system message that states it."""
    instruction = schema_instruction(json_schema)
    if messages and messages[0].role == "system":
        first = Message(role="system", content=f"{messages[0].content}\n\n{instruction}")
        return [first, *messages[1:]]
    return [Message(role="system", content=instruction), *messages]


def _schema_name(json_schema: dict[str, Any]) -> str:
    """OpenAI wants a name of letters, digits, `_` and `-`; pydantic puts the class in `title`."""
    title = str(json_schema.get("title") or "answer")
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in title)
    return name[:64] or "answer"


def _describe(exc: BaseException) -> str:
    """The exception's own words (httpx often has none), without a traceback."""
    text = str(exc).strip()
    return text or type(exc).__name__


def _http_error_message(url: str, reply: httpx.Response) -> str:
    """`HTTP 401 from URL: <the server's own message>`, with a hint for the common ones."""
    detail = _server_message(reply)
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
        return reply.text.strip()[:300]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            text = error if isinstance(error, str) else json.dumps(error)
            return text.strip()[:300]
    return json.dumps(data)[:300]


def _parse_completion(
    url: str, reply: httpx.Response, latency_ms: float, model: str
) -> LLMResponse:
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
        snippet = reply.text.strip()[:200]
        raise LLMError(
            f"LLM endpoint {url} did not return a chat completion "
            f"({type(exc).__name__}); the body starts with: {snippet!r}",
            kind="error",
        ) from exc
