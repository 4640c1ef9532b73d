"""What goes wrong when a file is read into a table, and how its message is kept fit to show
(its own module: the loader, the size checks of unpacked.py and the stores raise these;
`LoadError` and `TooLarge` are also imported from `concerto.data.load`; `without_paths`, which
keeps the server's paths out of their messages, is `concerto.redact`'s)."""

from __future__ import annotations

from concerto.redact import without_paths as without_paths


class LoadError(ValueError):
    """A file that cannot become a table; the message says why and what to do (naming the
    file by its own name only: the message reaches API clients, the server's paths must not)."""


class TooLarge(LoadError):
    """A file over a size limit: bigger than CONCERTO_DATA_MAX_FILE_MB, or unpacking to more
    than its limit (see unpacked.py); an upload's 413."""
