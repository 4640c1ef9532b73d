"""Plain helpers the test modules share: settings builders, fixed clocks, small wrappers that
ask an agent or read an answer, files the tests make. Nothing here starts a process (that is
`tests/_services/`) and nothing here is a fixture (fixtures live in the conftests, beside the
tests that use them); a test module imports what it needs from here, never from a conftest.

One module per test folder that needs one: `analytics`, `city`, `commercial`, `data`, `kpi`,
`metrics`; `workbooks` (Excel files) is shared with `benchmarks/bench_data_edges.py`.
Importable as `_helpers` because pytest puts `tests/` on the path (`pythonpath` in
pyproject.toml); the benchmarks, run as modules from the repository root, import it as
`tests._helpers`.
"""
