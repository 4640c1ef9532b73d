"""KPI pack (000_*.txt): the `kpi` agent over a ChromaDB store of KPI records."""
