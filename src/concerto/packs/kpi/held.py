"""The KPI and department names the store holds, in a small file beside it, for routing.

The router asks every agent what it holds on every question; opening ChromaDB for that
would cost a cold `concerto ask` seconds. The store writes the names it holds
(`kpi-names.json` in the data dir) whenever its catalog grows, and routing reads that
file, again only when it changed. With a ChromaDB server shared by several machines, the
file knows what was loaded from this one.

The file is also the store's version for its catalog (`KPIStore.catalog`): a process that
adds names replaces it after writing them, so a long-running server notices names loaded
by `concerto kpi load` in another process with one `stat` per question.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from concerto.agents.base import Holdings

_FILE = "kpi-names.json"
Stamp = tuple[int, int, int]
_cache: dict[Path, tuple[Stamp, Holdings]] = {}


def names_file(data_dir: Path) -> Path:
    return Path(data_dir) / _FILE


def write_names(data_dir: Path, kpis: list[str], departments: list[str]) -> None:
    """Record the held names (atomically: a reader never sees half a file)."""
    path = names_file(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"kpi": sorted(kpis), "department": sorted(departments)}), encoding="utf-8")
    os.replace(partial, path)


def stamp(data_dir: Path) -> Stamp | None:
    """Which version of the names file is on disk (None: none yet); one `stat`, no read.

    Every write replaces the file (a new inode), so inode, mtime and size together change
    even when two writes fall in the same clock tick.
    """
    try:
        info = names_file(data_dir).stat()
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


def held(data_dir: Path) -> Holdings:
    """The names a question may use to mean the KPI store's data (the demo's before any load)."""
    path = names_file(data_dir)
    found_stamp = stamp(data_dir)
    if found_stamp is None:
        from concerto.packs.kpi.demo import DEPARTMENTS, KPIS

        return Holdings("kpi-demo", _terms([k.name for k in KPIS] + list(DEPARTMENTS)))
    known = _cache.get(path)
    if known is not None and known[0] == found_stamp:
        return known[1]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        names = [str(n) for n in data.get("kpi", []) + data.get("department", [])]
    except (OSError, ValueError):
        names = []
    found = Holdings(f"kpi-{found_stamp[1]}-{found_stamp[0]}", _terms(names))
    _cache[path] = (found_stamp, found)
    return found


def _terms(names: list[str]) -> tuple[str, ...]:
    """Each name as written (`probe-yield`) and in words (`probe yield`)."""
    out: list[str] = []
    for name in names:
        for term in (name.lower(), name.lower().replace("-", " ").replace("_", " ")):
            if term and term not in out:
                out.append(term)
    return tuple(out)
