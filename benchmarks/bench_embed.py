"""Embedding benchmark: the demo table's texts through the local MiniLM encoder.

What first use pays (issue 26): the demo source's 300 descriptions, and its 600 distinct
`text`/`label` values (descriptions and company names) as a load embeds them through
`LocalEmbedder.embed_bulk`; plus one question, as the router embeds it. Each case runs
REPEATS times in a child process (model already loaded); the table gives the median wall
and CPU time. With `--baseline REF` the same cases also run on the `src` tree of git
revision REF (extracted with `git archive`), so old and new code are measured side by side.
Run it as it is, and under `/work/shared/tools/with-busy-cores` for a busy machine.

    .venv/bin/python -m benchmarks.bench_embed [--baseline REF] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, statistics, sys, time
from concerto.data.demo import demo_table
from concerto.nlp.embeddings import LocalEmbedder

repeats = int(sys.argv[1])
table = demo_table()
descriptions = sorted(set(table.column("description").to_pylist()))
values = descriptions + sorted(set(table.column("company_name").to_pylist()))
embedder = LocalEmbedder()
embedder.embed_bulk(["warm up"])
cases = {
    "300 descriptions": lambda: embedder.embed_bulk(descriptions),
    "600 text and label values": lambda: embedder.embed_bulk(values),
    "one question": lambda: embedder.embed_bulk(["which customers are at risk?"]),
}
out = {}
for name, run in cases.items():
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    out[name] = [statistics.median(walls), statistics.median(cpus)]
print(json.dumps(out))
"""


def measure(src: Path, repeats: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(repeats)], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def source_tree(ref: str, into: Path) -> Path:
    """The `src` folder of git revision `ref`, extracted into `into`."""
    archive = subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="git revision to measure beside the working tree")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    runs = {"this tree": measure(ROOT / "src", args.repeats)}
    if args.baseline:
        with tempfile.TemporaryDirectory() as tmp:
            runs[args.baseline] = measure(source_tree(args.baseline, Path(tmp)), args.repeats)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {args.repeats}")
    print("| case | " + " | ".join(f"{name} wall s | CPU s" for name in runs) + " |")
    print("|---|" + "---|---|" * len(runs))
    for case in runs["this tree"]:
        cells = " | ".join(f"{r[case][0]:.3f} | {r[case][1]:.3f}" for r in runs.values())
        print(f"| {case} | {cells} |")


if __name__ == "__main__":
    main()
