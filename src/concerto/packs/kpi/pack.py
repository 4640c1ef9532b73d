"""The KPI pack (000_*.txt): the `kpi` agent over a ChromaDB store, and `concerto kpi`."""

from concerto.agents.pack import Pack

pack = Pack(
    name="kpi",
    description="Monthly KPI values by department, from a ChromaDB store (demo data built in).",
    agents=["concerto.packs.kpi.agent:KPIAgent"],
    settings="concerto.packs.kpi.settings:KPISettings",
    commands={"kpi": "concerto.packs.kpi.cli:kpi"},
)
