"""Embeddings of a source's free text and names, computed once at load time for semantic search.

Each distinct value of a `text` or `label` column (descriptions, company names) is embedded
with the local sentence model; the vectors go into a table of their own beside the
source's, `<name>__embeddings (column_name, value, embedding)`, as FLOAT[384] on DuckDB and
real[] on PostgreSQL. Distinct values rather than rows: a description repeated on every
row of an entity is embedded once. A column with more distinct values than
`CONCERTO_DATA_EMBED_MAX_VALUES` is left out, and the load's notes say so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import duckdb

from concerto.data.context import ColumnProfile

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder

EMBEDDED_ROLES = ("text", "label")
SCHEMA = {"column_name": "VARCHAR", "value": "VARCHAR", "embedding": "FLOAT[384]"}
_CHUNK = 8192  # values per call to the embedder: bounds the tokenizer's output, not the batches


def embedding_table(name: str) -> str:
    return f"{name}__embeddings"


def embed_columns(
    con: duckdb.DuckDBPyConnection,
    table: str,
    detected: dict[str, ColumnProfile],
    embedder: Callable[[], Embedder] | None,
    max_values: int,
) -> tuple[Any, list[str], list[str]]:
    """(an Arrow table of the vectors or None, the embedded columns, notes) for `table`'s text and label columns."""
    candidates = [c for c, p in detected.items() if p.role in EMBEDDED_ROLES and p.type.startswith("VARCHAR")]
    if embedder is None or max_values <= 0 or not candidates:
        return None, [], []
    import numpy as np
    import pyarrow as pa

    model = embedder()
    bulk = getattr(model, "embed_bulk", model.embed)  # bypasses the question cache, when the embedder can
    names: list[str] = []
    values: list[str] = []
    vectors: list[Any] = []
    done: list[str] = []
    notes: list[str] = []
    quoted = '"' + table.replace('"', '""') + '"'
    for column in candidates:
        q = '"' + column.replace('"', '""') + '"'
        rows = con.execute(
            f"SELECT DISTINCT {q} FROM {quoted} WHERE {q} IS NOT NULL ORDER BY 1 LIMIT {max_values + 1}"
        ).fetchall()
        found = [str(r[0]) for r in rows]
        if len(found) > max_values:
            notes.append(
                f"{column} has more than {max_values:,} distinct values: not embedded for semantic search "
                "(CONCERTO_DATA_EMBED_MAX_VALUES)"
            )
            continue
        for start in range(0, len(found), _CHUNK):  # the encoder sorts each chunk into batches of similar length
            vectors.append(np.asarray(bulk(found[start : start + _CHUNK]), dtype=np.float32))
        names += [column] * len(found)
        values += found
        done.append(column)
    if not done:
        return None, [], notes
    matrix = np.concatenate(vectors)
    flat = pa.array(matrix.ravel(), pa.float32())
    arrow = pa.table(
        {
            "column_name": pa.array(names, pa.string()),
            "value": pa.array(values, pa.string()),
            "embedding": pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1]),
        }
    )
    return arrow, done, notes
