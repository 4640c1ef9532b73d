"""The question sets of the KPI and metrics packs, with their runners (`bench_questions.py` scores them)."""
