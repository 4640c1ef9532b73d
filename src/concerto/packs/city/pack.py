"""The city pack (002_*.txt): temperature, date-time and echo agents over its own MCP servers."""

from concerto.agents.pack import Pack

pack = Pack(
    name="city",
    description="Temperature, local date-time and echo for US cities, through three MCP servers.",
    agents=[
        "concerto.packs.city.temperature:TemperatureAgent",
        "concerto.packs.city.datetime_agent:DateTimeAgent",
        "concerto.packs.city.echo:EchoAgent",
    ],
    settings="concerto.packs.city.settings:CitySettings",
    mcp_servers={
        "weather": "concerto.packs.city.servers:weather_server",
        "datetime": "concerto.packs.city.servers:datetime_server",
        "echo": "concerto.packs.city.servers:echo_server",
    },
    warm_up="concerto.mcp.client:preload_sdk",  # its agents start their MCP servers on first use
)
