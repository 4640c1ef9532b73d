"""City pack (002_*.txt): temperature, date-time and echo agents over MCP servers."""

from concerto.packs.city import echo as echo
