"""Refit the answer-column ranker (`concerto/packs/analytics/table/ranker.py`) on
WikiTableQuestions' training split, reproducibly, and write its weights to
`column_ranker.json` beside it (issue 28 item 7).

For each sampled question whose reading answers with a column (a lookup, the row with the most
of something, the first or last row, the row before or after another, the most frequent value),
every candidate column is tried: the reading is run with that column as its answer and scored
with the dataset's official rules (`benchmarks.wtq_score`). Questions where some column is
right and some wrong are the training rows (one per candidate, labelled right or wrong); a
logistic regression (scikit-learn, fixed solver, no randomness) is fitted on the first 80 % of
the questions and its argmax choice checked on the other 20 % against the rules' choice.
Nothing here is used at run time but the JSON it writes.

    .venv/bin/python -m scripts.train_column_ranker [--limit 3000] [--seed 5] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def examples(data_dir: Path, limit: int, seed: int) -> list[list[tuple[dict[str, float], bool, bool]]]:
    """Per usable question: (features, right, the rules' pick) of each candidate column."""
    os.environ["CONCERTO_DATA_DIR"] = str(data_dir)
    from benchmarks.bench_wtq import WTQ, load_tables, read_split, sample, table_name
    from benchmarks.wtq_score import correct, gold_values
    from concerto.contracts.common import answer_value
    from concerto.data.sources import store_for
    from concerto.packs.analytics.table import answer
    from concerto.packs.analytics.table.compile import compile_reading
    from concerto.packs.analytics.table.mentions import find_columns, tokens
    from concerto.packs.analytics.table.reader import read_table
    from concerto.packs.analytics.table.values import table_of
    from concerto.settings import Settings

    settings = Settings(store_events=False)
    questions = sample(read_split(WTQ, "train"), limit, seed, 0)
    store = store_for(settings)
    loaded = {c.name for c in store.contexts()}
    missing = sorted({q["context"] for q in questions if table_name(q["context"]) not in loaded})
    if missing:
        load_tables(settings, WTQ, missing)
    tables: dict[str, Any] = {}
    out = []
    for q in questions:
        name = table_name(q["context"])
        try:
            table = tables.get(name) or tables.setdefault(name, table_of(store, store.context(name)))
            reading = read_table(q["utterance"], table)
        except Exception:  # a table that did not load: no example
            continue
        if reading.kind not in ("lookup", "extreme", "order", "neighbour", "mode"):
            continue
        toks = tokens(q["utterance"])
        columns = find_columns(toks, table)
        skip = (
            {c.column for c in reading.conditions}
            if reading.kind == "lookup"
            else ({reading.measure} if reading.kind == "extreme" and reading.measure else set())
        )
        rule = answer.rule_columns(q["utterance"], toks, columns, table, skip)[0]
        head = answer.head_column(q["utterance"], toks, columns, skip)
        gold = gold_values(q["targetValue"])
        rows = []
        for candidate in answer.candidates(toks, columns, table, skip, rule, head):
            tried = reading.model_copy(update={"answer": [candidate.column]})
            try:
                result = store.query(table.context, compile_reading(tried, table.context))
            except Exception:
                continue
            values = [answer_value(v) for r in result.data for v in list(r.values())[:1] if v is not None]
            rows.append((candidate.features, correct(gold, values), candidate.column == rule))
        if any(r[1] for r in rows) and not all(r[1] for r in rows):
            out.append(rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, help="a data directory the tables are (or will be) loaded in")
    args = parser.parse_args()
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from concerto.packs.analytics.table import ranker

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="concerto-ranker-"))
    found = examples(data_dir, args.limit, args.seed)
    cut = int(len(found) * 0.8)
    fit, held = found[:cut], found[cut:]
    x = np.array([[f[n] for n in ranker.FEATURES] for q in fit for f, _, _ in q])
    y = np.array([right for q in fit for _, right, _ in q])
    model = LogisticRegression(C=1.0, solver="lbfgs", max_iter=1000, class_weight="balanced").fit(x, y)
    weights = dict(zip(ranker.FEATURES, (round(float(v), 4) for v in model.coef_[0]), strict=True))

    def chosen_right(q: list[tuple[dict[str, float], bool, bool]]) -> bool:
        scores = [float(model.decision_function([[f[n] for n in ranker.FEATURES]])[0]) for f, _, _ in q]
        return q[int(np.argmax(scores))][1]

    model_right = sum(chosen_right(q) for q in held)
    rule_right = sum(any(right and rule for _, right, rule in q) for q in held)
    report = {
        "weights": weights,
        "bias": round(float(model.intercept_[0]), 4),
        "trained_on": f"random-split-1-train, {args.limit} questions sorted by id, shuffled with seed {args.seed}",
        "questions": len(found),
        "rows": len(y),
        "held_out": {"questions": len(held), "model_right": model_right, "rules_right": rule_right},
        "command": f"python -m scripts.train_column_ranker --limit {args.limit} --seed {args.seed}",
    }
    ranker.WEIGHTS.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report["held_out"]), f"-> {ranker.WEIGHTS}")


if __name__ == "__main__":
    main()
