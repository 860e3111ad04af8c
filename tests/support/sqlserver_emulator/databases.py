"""More emulated SQL Server databases on the test PostgreSQL server (test infrastructure).

One PostgreSQL database holds one emulated SQL Server database (its own ``cdc`` schema, capture
agent slot and change tables); a source with several databases in ``database.names`` is tested
against several of them on one server, as several databases of one SQL Server instance.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pipelines.local_postgres import LocalPostgres
from tests.support.sqlserver_emulator import SqlServerEmulator

__all__ = ["dbname", "more_databases"]


def dbname(dsn: str) -> str:
    """The database a libpq DSN names."""
    return str(conninfo_to_dict(dsn)["dbname"])


@contextmanager
def more_databases(server: LocalPostgres, names: Sequence[str]) -> Iterator[list[SqlServerEmulator]]:
    """Fresh databases ``names`` with the emulator installed (CDC not enabled yet); dropped after,
    with their capture-agent slots."""
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield [SqlServerEmulator.install(server.dsn(name)) for name in names]
    finally:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            for name in names:
                conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                             "WHERE database = %s AND NOT active", (name,))
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
