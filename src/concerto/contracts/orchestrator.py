"""Orchestrator input, intent classification, output and error contracts (001_*.txt)."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import JsonDict

from concerto.contracts.base import BaseAgentInput, BaseAgentOutput
from concerto.contracts.common import AgentName, AnswerValues, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.redact import scrub

MAX_QUERY_CHARS = 500  # 002_*.txt: "Text length must be < 500 characters"
# Blank characters: Python's whitespace (what str.strip removes) and ECMAScript's (what `\s`
# means in the OpenAPI document's patterns) together, so a question the document calls
# non-empty is one the validator calls non-empty ("\x85" is blank to Python only, "\ufeff"
# to ECMAScript only).
BLANK = (
    "\t\n\v\f\r \x1c\x1d\x1e\x1f\x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000\ufeff")
)
_NOT_BLANK = "[^" + "".join(f"\\u{ord(c):04x}" for c in BLANK) + "]"
MAX_NAME_CHARS = 128
MAX_CONTEXT_CHARS = 4000
MAX_PARAMETERS = 32
PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
RESERVED_PAYLOAD_KEYS = frozenset({"request", "previous_results"})
PARAMETER_NAMES: JsonDict = {
    "pattern": PARAMETER_NAME.pattern,
    "not": {"enum": [k for k in sorted(RESERVED_PAYLOAD_KEYS)]},
}


def unencodable(value: Any, path: str = "") -> str | None:
    """What in `value` (text, or lists and objects of it, keys included) UTF-8 cannot encode,
    said for a user, or None.

    Only a lone surrogate (U+D800 to U+DFFF without its pair) is such a character: JSON's
    `"\\ud800"` escape and Python's `surrogateescape` (the undecodable bytes of a command line)
    make one. Text holding it cannot be embedded, stored, logged or sent back as JSON, so the
    input contract refuses it before any of that happens."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(value[exc.start])
            where = f"the text at {path}" if path else "the text"
            at = f"U+{code:04X} at character {exc.start + 1}, a lone surrogate"
            if 0xDC80 <= code <= 0xDCFF:  # how Python keeps a byte of a command line that is not UTF-8
                at += f", or the byte 0x{code - 0xDC00:02X} that is not UTF-8"
            return f"{where} has a character UTF-8 cannot encode ({at})"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{_printable(key)}".lstrip(".")
            if found := unencodable(key, f"{inner} (its name)") or unencodable(item, inner):
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if found := unencodable(item, f"{path}[{i}]"):
                return found
    return None


def encodable(value: Any) -> Any:
    """A validator for every field of a model that takes text from outside (the input contract,
    OpenAI's chat request): `value` unchanged when UTF-8 can encode all its text, else the
    error saying where (`unencodable`)."""
    if problem := unencodable(value):
        raise ValueError(f"{problem}; send text that is valid Unicode")
    return value


def _printable(key: Any) -> str:
    """A key for a message: its lone surrogates escaped, at most 40 characters."""
    return str(key).encode("utf-8", "backslashreplace").decode("utf-8")[:40]


# direct: the caller named the agent; reading: the question read against the table it names (`TableReading`)
ClassificationMethod = Literal["pattern", "reading", "semantic", "llm", "direct", "none"]
ErrorCategory = Literal[
    "invalid_input",
    "classification_failed",
    "routing_failed",
    "all_agents_failed",
    "timeout",
    "synthesis_failed",
]


class OrchestratorInput(BaseAgentInput):
    """Input to the orchestrator from a user interface.

    Strict: a value of the wrong JSON type (a number for a string, a string for a number) is
    refused rather than converted, so the API takes exactly what its OpenAPI document says.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    query: str = Field(
        ...,
        description="User's natural language query",
        # What `_query_rules` enforces, for the OpenAPI document (its messages are kinder than the constraints').
        json_schema_extra={"minLength": 1, "maxLength": MAX_QUERY_CHARS - 1, "pattern": _NOT_BLANK},
    )
    brand: str | None = Field(
        None, max_length=MAX_NAME_CHARS, description="Brand context (Remibrutinib, Fabhalta, Kisqali)"
    )
    user_expertise: Literal["executive", "analyst", "data_scientist"] = Field(
        "analyst", description="Who the answer is written for"
    )
    output_format: Literal["narrative", "structured", "brief"] = Field("narrative", description="Shape of the answer")
    max_latency_ms: int | None = Field(
        None, gt=0, le=3_600_000, description="Overall deadline in ms; what finished by then is returned"
    )
    conversation_history: list[dict[str, Any]] | None = Field(
        None, description="Earlier turns, e.g. [{'role': 'user', 'content': '...'}], oldest first"
    )
    prior_analysis_ids: list[str] | None = Field(None, description="IDs of earlier analyses this one builds on")
    source: str | None = Field(
        None, min_length=1, max_length=MAX_NAME_CHARS, description="Name of a loaded data source to ask about"
    )
    data_source_id: str | None = Field(
        None, min_length=1, max_length=MAX_NAME_CHARS, description="ID of the data source to analyze (004_*.txt)"
    )
    context: str | None = Field(
        None, max_length=MAX_CONTEXT_CHARS, description="Additional context for the agents (004_*.txt)"
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        max_length=MAX_PARAMETERS,
        description="Further inputs for the agents, added to every task's inputs (e.g. a treatment column)",
        json_schema_extra={"propertyNames": PARAMETER_NAMES},
    )

    _encodable = field_validator("*", mode="before")(encodable)

    @field_validator("max_latency_ms", mode="before")
    @classmethod
    def _json_integer(cls, value: Any) -> Any:
        """JSON (and its Schema) count 662.0 as an integer; strict mode would refuse it."""
        return int(value) if isinstance(value, float) and value.is_integer() else value

    @field_validator("parameters")
    @classmethod
    def _parameter_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if not PARAMETER_NAME.match(key):
                raise ValueError(
                    f"parameter name '{key[:40]}' must be a letter or '_' followed by letters, digits, '_'"
                )
            if key in RESERVED_PAYLOAD_KEYS:
                raise ValueError(f"'{key}' is set by the orchestrator and cannot be a parameter")
        return value

    @classmethod
    def structured_fields(cls) -> set[str]:
        """Fields holding a list or a map: a URL query or a command-line flag cannot carry
        them as a single value."""
        out = set()
        for name, field in cls.model_fields.items():
            annotation = field.annotation
            # `X | None` lists its members; `dict[str, Any]` is itself the kind (its args are not).
            kinds = [annotation] if get_origin(annotation) in (list, dict) else []
            kinds = kinds or [a for a in get_args(annotation) if a is not type(None)] or [annotation]
            if any(get_origin(k) in (list, dict) for k in kinds):
                out.add(name)
        return out

    @field_validator("query")
    @classmethod
    def _query_rules(cls, value: str) -> str:
        text = value.strip(BLANK)
        if not text:
            raise ValueError("the question is empty; ask something, e.g. 'what time is it in Seattle?'")
        if len(text) >= MAX_QUERY_CHARS:
            raise ValueError(
                f"the question is {len(text)} characters long; the limit is "
                f"{MAX_QUERY_CHARS - 1}. Shorten it to one question."
            )
        return text


class IntentClassification(BaseModel):
    """Result of intent classification, with the method of the router cascade that decided."""

    primary_intent: str
    confidence: float = Field(..., ge=0, le=1)
    secondary_intents: list[str] = []
    entities_extracted: dict[str, Any] = {}
    classification_method: ClassificationMethod = "pattern"
    classification_latency_ms: float = Field(0, ge=0)
    agents: list[AgentName] = Field(default_factory=list, description="Agents the classification selected, in order")
    reasoning: str | None = None


class OrchestratorOutput(BaseAgentOutput):
    """Final answer of the orchestrator to the user."""

    response: str
    response_type: Literal["direct", "synthesized", "explanation"]
    key_findings: list[str] = []
    agents_invoked: list[AgentName]
    agent_results: list[AgentDispatchResponse]
    total_latency_ms: float
    breakdown: dict[str, Any] = {}
    follow_up_questions: list[str] = []
    related_analyses: list[str] = []
    intent_classification: IntentClassification
    notes: list[str] = Field(
        default_factory=list,
        description="What the orchestrator had to fall back on (e.g. LLM plan invalid)",
    )
    answer_values: AnswerValues = None

    @field_validator("notes")
    @classmethod
    def _scrub_notes(cls, value: list[str]) -> list[str]:
        """A note may carry an LLM endpoint's error: scrubbed (`concerto.redact`)."""
        return [scrub(n) for n in value]


class OrchestratorErrorResponse(BaseAgentOutput):
    """Error response from the orchestrator: what failed, what was salvaged, what to try.

    The message and alternatives are scrubbed (`concerto.redact`): an error that quotes a
    backend's URL with its password, wherever it was built, does not show it."""

    status: ExecutionStatus = ExecutionStatus.FAILED
    error_message: str
    error_category: ErrorCategory
    partial_results: list[AgentDispatchResponse] | None = None
    retry_recommended: bool = False
    alternative_queries: list[str] = []
    intent_classification: IntentClassification | None = None
    total_latency_ms: float = 0

    @field_validator("error_message")
    @classmethod
    def _scrub_message(cls, value: str) -> str:
        return scrub(value)

    @field_validator("alternative_queries")
    @classmethod
    def _scrub_alternatives(cls, value: list[str]) -> list[str]:
        return [scrub(q) for q in value]
