"""What goes wrong when a file is read into a table (its own module: the loader and the size
checks of unpacked.py both raise these; callers import them from `concerto.data.load`)."""

from __future__ import annotations


class LoadError(ValueError):
    """A file that cannot become a table; the message says why and what to do (naming the
    file by its own name only: the message reaches API clients, the server's paths must not)."""


class TooLarge(LoadError):
    """A file over a size limit: bigger than CONCERTO_DATA_MAX_FILE_MB, or unpacking to more
    than its limit (see unpacked.py); an upload's 413."""
