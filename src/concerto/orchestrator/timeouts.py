"""A task's timeout: which setting chooses it, and which one to raise when it expires.

In order: the user's timeout for that agent (`CONCERTO_AGENT_TIMEOUTS=segmentation=60000`),
used as given; else the intent table's, the agent's own (`AgentInfo.default_timeout_ms`)
or `CONCERTO_DEFAULT_TIMEOUT_MS`, raised to `CONCERTO_MIN_TIMEOUT_MS`. The agent's own
timeout used to win over every setting, so a user on a slow machine could not raise it,
while the timeout error told them to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from concerto.contracts.dispatch import MAX_TIMEOUT_MS


@dataclass(frozen=True)
class Timeouts:
    """The user's timeout settings (`Settings.default_timeout_ms`, `agent_timeouts`, `min_timeout_ms`)."""

    default_ms: int = 30000
    per_agent: Mapping[str, int] = field(default_factory=dict)
    min_ms: int = 0

    def of(self, agent: str, declared: int | None = None) -> int:
        """The timeout of a task of `agent`, whose table or declaration says `declared` (or nothing)."""
        if agent in self.per_agent:
            return self.per_agent[agent]
        return min(max(declared or self.default_ms, self.min_ms), MAX_TIMEOUT_MS)


def timeout_suggestion(agent: str, timeout_ms: int) -> str:
    """What the timeout error tells the user to do: the exact setting, with a value to try."""
    more = min(max(2 * timeout_ms, 1000), MAX_TIMEOUT_MS)
    return (
        f"Try again, or give {agent} more time: CONCERTO_AGENT_TIMEOUTS={agent}={more} "
        f"(milliseconds; it had {timeout_ms}), or CONCERTO_MIN_TIMEOUT_MS={more} for every agent."
    )
