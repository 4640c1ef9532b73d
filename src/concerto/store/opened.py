"""The configured database, one per process and place: PostgreSQL when `CONCERTO_DATABASE_URL`
(a core setting) is set, else `events.sqlite` in the data dir."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from concerto.store.database import Database
from concerto.store.limits import Limits
from concerto.store.postgres import PostgresDatabase
from concerto.store.sqlite import SqliteDatabase

if TYPE_CHECKING:
    from concerto.settings import Settings

_opened: OrderedDict[tuple[str, str, Limits], Database] = OrderedDict()
_opened_lock = threading.Lock()
_KEEP_OPEN = 8


def open_database(settings: Settings) -> Database:
    """The database of `settings`, bounded by `CONCERTO_EVENTS_MAX_AGE_DAYS` and
    `CONCERTO_EVENTS_MAX_ROWS`; the same object for the same place and limits, so its connection,
    writer thread and registered tables are shared by every owner in the process. Opening does
    no I/O: the connection is made on first use."""
    limits = Limits(max_age_days=settings.events_max_age_days, max_rows=settings.events_max_rows)
    url = settings.database_url
    key = ("postgres", url.get_secret_value(), limits) if url else ("sqlite", str(settings.data_dir), limits)
    with _opened_lock:
        found = _opened.get(key)
        if found is None:
            if url:
                found = PostgresDatabase(key[1], limits)
            else:
                found = SqliteDatabase(settings.data_dir / "events.sqlite", limits)
            _opened[key] = found
            while len(_opened) > _KEEP_OPEN:  # many data dirs in one process (tests): close the oldest
                _opened.popitem(last=False)[1].close()  # it opens again if still used
        _opened.move_to_end(key)
        return found
