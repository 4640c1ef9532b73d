"""Concerto's benchmarks, one `bench_*.py` module each, run as modules from the repository root:

    .venv/bin/python -m benchmarks.bench_engine

so the repository root is on the path and every shared piece is imported by its package name:
`benchmarks._timing` and `benchmarks._executing` (shared by the benchmarks), `tests._services`
(the real services the test suite starts) and `tests._helpers` (the files the tests make). The
test suite imports the benchmarks' question sets and checkers the same way (`from benchmarks
import bench_questions`; pytest puts the root on the path, `pythonpath` in pyproject.toml).
Nothing edits `sys.path`.
"""
