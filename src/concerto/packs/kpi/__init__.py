"""KPI pack (000_*.txt): the `kpi` agent over a ChromaDB store of KPI records.

`pack.py` declares it; ChromaDB and numpy load only when the agent first runs.
"""
