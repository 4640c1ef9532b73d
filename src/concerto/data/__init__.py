"""Data sources shared by table-reading packs: load a file into a typed table, profile it,
and run checked read-only SQL on it (DuckDB files by default, PostgreSQL when configured).

`store.py` is the interface, `sources.py` opens the configured one (`store_for(settings)`),
`load.py` reads files, `profile.py` builds the data context (`context.py`), `safety.py` checks every query.
`pack.py` declares the `data` pack: its settings and the `concerto data` command.
"""
