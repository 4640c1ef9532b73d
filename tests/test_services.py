"""The real services of tests/_services that no pack uses yet start and answer (PostgreSQL is
for the analytics pack's tables)."""

from __future__ import annotations

from _services.postgres import Postgres


def test_postgres_cluster_answers(postgres: Postgres) -> None:
    assert int(postgres.psql("select current_setting('server_version_num')::int / 10000")) >= 15
    assert postgres.psql("create table t(x int); insert into t values (1), (2); select sum(x) from t") == "3"
    assert postgres.url.startswith("postgresql://postgres@127.0.0.1:")
