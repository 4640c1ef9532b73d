"""PostgreSQL connection errors do not show the password of CONCERTO_DATABASE_URL.

libpq quotes the connection string it cannot parse, and a password with a space alone
(`unexpected spaces found in "..."`); these need no server, the refused connection the
throwaway cluster's address with nothing listening.
"""

from __future__ import annotations

import pytest

from _services.ports import free_port
from concerto.data.postgres_store import PostgresStore
from concerto.data.store import QueryFailed
from concerto.store import LogUnavailable, PostgresDatabase

PASSWORD = "s3cret-PASSWORD"
URLS = {
    "refused": f"postgresql://user:{PASSWORD}@127.0.0.1:{free_port()}/db",
    "unparsable": f"postgresql://user:{PASSWORD}@[bad/db",
    "bad parameter": f"postgresql://user:{PASSWORD}@127.0.0.1/db?foo=bar",
    "space in the password": "postgresql://user:s3cret PASSWORD@127.0.0.1/db",
    "bad port": f"postgresql://user:{PASSWORD}@127.0.0.1:abc/db",
}


@pytest.mark.parametrize("case", URLS)
def test_store_connection_errors_do_not_show_the_password(case: str) -> None:
    store = PostgresStore(URLS[case], row_cap=10, timeout_s=5, max_file_bytes=1 << 20)
    with pytest.raises(QueryFailed, match="cannot connect to PostgreSQL") as caught:
        store.contexts()
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize("case", URLS)
def test_log_connection_errors_do_not_show_the_password(case: str) -> None:
    log = PostgresDatabase(URLS[case])
    with pytest.raises(LogUnavailable, match=r"cannot be reached|failed") as caught:
        log.ping()
    assert "s3cret" not in str(caught.value) + log.where
