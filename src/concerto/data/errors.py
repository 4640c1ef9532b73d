"""What goes wrong when a file is read into a table, and how its message is kept fit to show
(its own module: the loader, the size checks of unpacked.py and the stores raise these;
`LoadError` and `TooLarge` are also imported from `concerto.data.load`)."""

from __future__ import annotations

import re
from pathlib import Path

# An absolute path (POSIX or Windows) not inside a word: "/srv/data/x.csv" → "x.csv".
_ABSOLUTE = re.compile(r"(?<![\w.~])(?:[A-Za-z]:)?[/\\](?:[^\s'\"/\\]+[/\\])+([^\s'\"/\\]+)")


class LoadError(ValueError):
    """A file that cannot become a table; the message says why and what to do (naming the
    file by its own name only: the message reaches API clients, the server's paths must not)."""


class TooLarge(LoadError):
    """A file over a size limit: bigger than CONCERTO_DATA_MAX_FILE_MB, or unpacking to more
    than its limit (see unpacked.py); an upload's 413."""


def without_paths(text: str, *paths: Path) -> str:
    """`text` with each of `paths` (as given and resolved) shown by its own name, and any other
    absolute path by its last part: what a message may show a client of the server (DuckDB's,
    fastexcel's and the OS's errors name the files they could not read by their full paths)."""
    for path in paths:
        for shown in {str(path.resolve()), str(path)}:
            text = text.replace(shown, path.name)
    return _ABSOLUTE.sub(lambda m: m.group(1), text)
