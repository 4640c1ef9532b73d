"""The agent extension point: declared `info` plus one async `run(context, task)`.

Agents never import or call one another. What they are asked comes as a typed `TaskInput`
(the question, the source, their inputs, the results of the tasks they depend on); what they
may use comes through the `AgentContext` (clock, settings, resources, LLM, events, and the
user's request for how to answer).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from concerto.agents.task import TaskInput
from concerto.contracts.common import AnswerValues, ErrorKind
from concerto.contracts.events import EventType
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.contracts.reading import TableReading

if TYPE_CHECKING:
    from concerto.llm.base import LLMClient
    from concerto.resources import Resources
    from concerto.settings import Settings


class AgentInfo(BaseModel):
    """What an agent declares about itself; the router and the LLM prompt read only this."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., pattern=r"^[a-z][a-z0-9_]*$")
    description: str = Field(..., min_length=1)
    capabilities: list[str] = []
    inputs: dict[str, str] = {}
    outputs: dict[str, str] = {}
    examples: list[str] = Field(default_factory=list, description="Questions this agent answers")
    pack: str = ""
    default_timeout_ms: int | None = Field(
        None, gt=0, le=600_000, description="Task timeout; none: the CONCERTO_DEFAULT_TIMEOUT_MS setting"
    )
    max_concurrency: int | None = Field(
        None, ge=1, description="Cap on concurrent tasks in a plan that uses this agent (002: 2)"
    )
    remote: Literal["never", "task", "actor"] = Field(
        "never",
        description="With CONCERTO_EXECUTOR=ray: stay in process (cheap agents), run each task as a Ray task, "
        "or on Ray actors that keep the agent's state (models, connections) across questions",
    )
    synthesizes: bool = Field(
        False,
        description="Writes the answer from the results of the tasks it depends on (001's explainer); "
        "when it completes after them, its summary is the response",
    )


class Unanswered(BaseModel):
    """A part of the question an answer does not cover, and why.

    An agent that answers part of a question (two departments asked, one known; a month
    with no data yet) returns its result with one of these per missing part. The executor
    turns each into an error entry of the agent's response and a key finding, so no answer
    is half an answer without saying so.
    """

    model_config = ConfigDict(extra="forbid")

    part: str = Field(..., min_length=1, description="What was asked and not answered, e.g. \"department 'atlantis'\"")
    reason: str = Field(..., min_length=1, description="Why, in words a user can act on")
    error_type: str = "unanswered_part"
    kind: ErrorKind = ErrorKind.NOT_FOUND
    suggestion: str | None = None

    @property
    def sentence(self) -> str:
        """ "Not answered: department 'atlantis': no such department." (as the synthesizer says it)."""
        return f"Not answered: {self.part}: {self.reason.rstrip('.')}."


class AgentResult(BaseModel):
    """What `run` returns: the data, one sentence saying it, findings and follow-ups."""

    output: dict[str, Any] = Field(default_factory=dict)
    summary: str | None = None
    key_findings: list[str] = Field(default_factory=list)
    follow_up_questions: list[str] = Field(default_factory=list)
    entities: dict[str, Any] = Field(
        default_factory=dict,
        description="What the agent recognised in the question (a city, a KPI, a metric ...); "
        "the orchestrator reports them in `intent_classification.entities_extracted`",
    )
    unanswered: list[Unanswered] = Field(
        default_factory=list, description="Parts of the question this result does not cover, and why"
    )
    answer_values: AnswerValues = None


class AgentFailure(Exception):
    """Raised by an agent to report a failure a user can act on.

    `error_type` is the pack's vocabulary (e.g. `invalid_format`, `metric_not_found`);
    `kind` decides whether a fallback agent runs.
    """

    def __init__(
        self,
        message: str,
        *,
        error_type: str = "error",
        kind: ErrorKind = ErrorKind.ERROR,
        suggestion: str | None = None,
        details: dict[str, Any] | None = None,
        output: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type
        self.kind = kind
        self.suggestion = suggestion
        self.details = details or {}
        self.output = output or {}


@dataclass(frozen=True)
class Holdings:
    """What an agent holds right now (its data), offered to the router beside its declared
    capabilities: a question that names one of `terms` (a table's column, a category value,
    a KPI's name) can reach the agent even when its wording matches no capability well.

    `key` changes whenever `terms` do (e.g. the ids of the loaded sources).
    """

    key: str
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class FirstUse:
    """Work an agent needs done once before it can answer (loading a demo table and
    embedding its texts), which the orchestrator does outside any task's timeout, with
    progress, before the agent's task starts (and `concerto serve` at start-up).

    `key` names the work, so agents that need the same thing share one run; `run` is
    idempotent, synchronous (it runs in a thread) or a coroutine function (it runs on the
    loop: a session it opens belongs to it); `seconds` is about how long it takes on an idle
    machine, for the progress message. `lasting` work leaves its result in the data dir
    (demo data), so `concerto serve` does it at start-up; other work (starting an MCP
    server process) is done before the first question that needs it.
    """

    key: str
    title: str
    seconds: float
    run: Callable[[], object] = field(compare=False)
    lasting: bool = True


Emit = Callable[..., Awaitable[None]]


@dataclass(slots=True)
class AgentContext:
    """Everything an agent may use while answering one task.

    `query` is the user's request as sent: read it for how to answer (`user_expertise`,
    `output_format`, `query_id`), not for what (that is the `TaskInput`)."""

    query: OrchestratorInput
    now: datetime
    settings: Settings
    resources: Resources
    llm: LLMClient | None = None
    task_id: str = ""
    agent: str = ""
    _emit: Emit | None = None
    reading: TableReading | None = None  # the question read against its table: becomes `TaskInput.reading`

    async def emit(self, type: EventType, title: str, details: dict[str, Any] | None = None, step: int = 1) -> None:
        """Make a step of this agent visible in the event stream."""
        if self._emit is not None:
            await self._emit(type, title, details or {}, step, self.agent, self.task_id)


class Agent(ABC):
    """Base of every agent. Subclasses set `info` and implement `run`.

    Optional hooks, all deterministic and cheap by default:
    - `match_structured(text)`: the exact grammar this agent accepts (router step 1);
    - `prepare(question, context)`: the orchestrator side of the agent's contract, reading
      the question into the agent's inputs (e.g. natural language into the KPI query format);
    - `holdings()`: what the agent holds now (loaded tables, KPI names), for routing;
    - `ready()`: why the agent cannot answer at all right now (a precondition), or None;
    - `availability()`: what a user should know before asking it (a backend not configured);
    - `first_use(query)`: slow one-time work to do before it answers (demo data), or None;
    - `aclose()`: release connections when the orchestrator shuts down.
    """

    info: ClassVar[AgentInfo]

    def __init__(self, settings: Settings, resources: Resources) -> None:
        self.settings = settings
        self.resources = resources

    def match_structured(self, text: str) -> dict[str, Any] | None:
        """This agent's inputs if `text` is exactly in a format it defines, else None."""
        return None

    async def prepare(self, question: str, context: AgentContext) -> dict[str, Any]:
        """This agent's inputs read from the question (`TaskInput.inputs`); the default: none."""
        return {}

    @abstractmethod
    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        """Answer one task. Raise `AgentFailure` for failures a user can act on."""

    def holdings(self) -> Holdings | None:
        """What this agent holds now, for data-aware routing; called on every routed question,
        so it must be cheap (cache what it reads)."""
        return None

    def ready(self, query: OrchestratorInput | None = None) -> str | None:
        """None when the agent can answer `query` (or any question, when None); else why not
        (e.g. "the source has no embeddings"). An agent that is not ready is not offered to the
        router."""
        return None

    def availability(self) -> str | None:
        """None when the agent can do its work now; else what a user should know first (no
        Prometheus configured). Unlike `ready`, it does not hide the agent from the router:
        the agent still answers, with an error that says what to set up. Cheap: called for the
        page's agent list."""
        return self.ready()

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        """What must be prepared before this agent answers `query` (any question, when None)
        and is not yet, or None. Cheap: asked before every plan runs. The agent must still
        work without it (doing the same work itself), so this only moves the wait out of
        its timeout and says what is happening."""
        return None

    async def aclose(self) -> None:
        """Release resources held by this agent (connections, subprocesses)."""
        return None
