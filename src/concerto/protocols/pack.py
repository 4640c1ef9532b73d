"""The `protocols` pack: Concerto over MCP, the OpenAI chat protocol and A2A.

It adds no agents: routes on `concerto serve` (sharing the app's one orchestrator) and the
`concerto` MCP server (`concerto mcp serve concerto`).
"""

from concerto.agents.pack import Pack

pack = Pack(
    name="protocols",
    description="Concerto as an MCP server, an OpenAI-compatible model and an A2A agent.",
    routes=["concerto.protocols.openai_chat.routes:router", "concerto.protocols.a2a_routes:router"],
    mcp_servers={"concerto": "concerto.protocols.mcp_server:concerto_server"},
)
