"""A task's timeout: which setting chooses it, and which one to raise when it expires.

In order: the user's timeout for that agent (`CONCERTO_AGENT_TIMEOUTS=segmentation=60000`),
used as given; else the intent table's, the agent's own (`AgentInfo.default_timeout_ms`)
or `CONCERTO_DEFAULT_TIMEOUT_MS`, raised to `CONCERTO_MIN_TIMEOUT_MS`. The agent's own
timeout used to win over every setting, so a user on a slow machine could not raise it,
while the timeout error told them to. A fallback agent runs under its own timeout, resolved
the same way (the executor asks `of` for it), not under the agent's it stands in for.

A name in `CONCERTO_AGENT_TIMEOUTS` that is no agent is not an error (a pack may be left out
by `CONCERTO_AGENTS`, or found only at run time): the orchestrator logs it at start-up
(`unknown`), and the timeout error of an agent whose name it nearly spells says so.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from concerto.contracts.dispatch import MAX_TIMEOUT_MS

if TYPE_CHECKING:
    from concerto.settings import Settings

SETTING = "CONCERTO_AGENT_TIMEOUTS"


@dataclass(frozen=True)
class Timeouts:
    """The user's timeout settings (`Settings.default_timeout_ms`, `agent_timeouts`, `min_timeout_ms`)."""

    default_ms: int = 30000
    per_agent: Mapping[str, int] = field(default_factory=dict)
    min_ms: int = 0

    @classmethod
    def of_settings(cls, settings: Settings) -> Timeouts:
        """The timeouts `settings` ask for."""
        return cls(settings.default_timeout_ms, settings.agent_timeouts, settings.min_timeout_ms)

    def of(self, agent: str, declared: int | None = None) -> int:
        """The timeout of a task of `agent`, whose table or declaration says `declared` (or nothing)."""
        if agent in self.per_agent:
            return self.per_agent[agent]
        return min(max(declared or self.default_ms, self.min_ms), MAX_TIMEOUT_MS)

    def unknown(self, loaded: Collection[str], installed: Collection[str] = ()) -> list[str]:
        """One warning per name of `per_agent` that is neither a `loaded` agent nor an `installed`
        one left out by the selection: its timeout applies to nothing (a misspelt name?)."""
        names = sorted({*loaded, *installed})
        warnings = []
        for name in self.per_agent:
            if name in loaded or name in installed:
                continue
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            warnings.append(f"{SETTING} names {name!r}, which is no agent here: its timeout is not used{hint}")
        return warnings

    def suggestion(self, agent: str, timeout_ms: int) -> str:
        """`timeout_suggestion`, and a name of `per_agent` that nearly spells `agent`, which
        is why the user's timeout for it did not apply."""
        text = timeout_suggestion(agent, timeout_ms)
        if agent in self.per_agent:
            return text
        near = difflib.get_close_matches(agent, [n for n in self.per_agent if n != agent], n=1)
        if near:
            text += f" ({SETTING} sets {near[0]}, not {agent}.)"
        return text


def timeout_suggestion(agent: str, timeout_ms: int) -> str:
    """What the timeout error tells the user to do: the exact setting, with a value to try."""
    more = min(max(2 * timeout_ms, 1000), MAX_TIMEOUT_MS)
    return (
        f"Try again, or give {agent} more time: {SETTING}={agent}={more} "
        f"(milliseconds; it had {timeout_ms}), or CONCERTO_MIN_TIMEOUT_MS={more} for every agent."
    )
