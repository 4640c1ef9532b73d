"""The `data` pack: the data-source layer's settings, the `concerto data` command and its HTTP routes."""

from concerto.agents.pack import Pack

pack = Pack(
    name="data",
    description="Data sources: your files as tables (DuckDB files, or PostgreSQL) for the analytics agents.",
    settings="concerto.data.settings:DataSettings",
    commands={"data": "concerto.data.cli:data"},
    routes=["concerto.data.routes:router"],
)
