"""Analytics pack (004_*.txt): agents that answer questions about loaded tables with
checked, read-only SQL. `pack.py` declares it; the data sources are `concerto.data`'s.
"""
