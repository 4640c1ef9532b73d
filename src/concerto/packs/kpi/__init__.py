"""KPI pack (000_*.txt): the `kpi` agent over a ChromaDB store of KPI records.

Importing the pack registers the agent; ChromaDB and numpy load only when it first runs.
"""

from concerto.packs.kpi import agent as agent
