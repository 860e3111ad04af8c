"""Snapshot steps 1-5: lock, open the consistent read view(s), record the position and the schema.

See `cdc_sources.mysql.snapshot` for the whole sequence. The statements recorded in the schema
history are Debezium's: ``SET character_set_server=...``, ``DROP TABLE IF EXISTS`` for every
table, then per database ``DROP DATABASE IF EXISTS``, ``CREATE DATABASE``, ``USE`` and each
table's ``SHOW CREATE TABLE`` output.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.snapshot import SnapshotPoint
from cdc_sources.spi import Fatal, SourceError

log = logging.getLogger(__name__)

BUILTIN_DATABASES = frozenset({"mysql", "sys", "information_schema", "performance_schema"})


class SnapshotLockError(SourceError, Fatal):
    """The snapshot could not take the locks its ``snapshot.locking.mode`` needs."""


class SnapshotReadViewError(SourceError, Fatal):
    """A reader connection's read view is not the snapshot connection's (step 3b)."""


class ReadViewJoiner(Protocol):
    """Another connection that reads tables for the snapshot (`snapshot_process.SnapshotWorker`)."""

    def join_read_view(self, status_sql: str) -> list[tuple[str, ...]]:
        """Open a REPEATABLE READ ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` on that connection
        and return the rows of ``status_sql`` run inside it."""
        ...


@dataclass(frozen=True, slots=True)
class SchemaStatement:
    """One statement for the schema history: the DDL and the database it runs in."""

    database: str
    ddl: str


@dataclass
class PreparedSnapshot:
    """The outcome of steps 1-5.

    Attributes:
        point: the binlog position of the read view.
        statements: the DDL to record in the schema history, in order.
        tables: every non-system table seen, per database.
        locked: a global or table lock is still held (``extended``).
        joined: the ``reader`` passed to `prepare_snapshot` opened its read view under the global
            read lock (step 3b), so it may read the tables.
    """

    point: SnapshotPoint
    statements: list[SchemaStatement] = field(default_factory=list)
    tables: list[TableId] = field(default_factory=list)
    locked: bool = False
    joined: bool = False


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _rows(cur: Any, sql: str) -> list[tuple[Any, ...]]:
    cur.execute(sql)
    return list(cur.fetchall())


def prepare_snapshot(conn: Any, *, flavor: str, locking_mode: str, lock_timeout_ms: int,
                     captures_database: Callable[[str], bool], captures: Callable[[TableId], bool],
                     store_only_captured_tables: bool, binlog_status_sql: str,
                     gtid_position: Callable[[Any, str, int], str],
                     reader: ReadViewJoiner | None = None) -> PreparedSnapshot:
    """Run steps 1-5 on ``conn`` and leave its consistent-snapshot transaction open.

    ``binlog_status_sql`` is ``SHOW MASTER STATUS`` or ``SHOW BINARY LOG STATUS`` (MySQL 8.2+);
    ``gtid_position(cursor, file, pos)`` gives the GTID set at a position ("" without GTIDs).

    Step 3b: a ``reader`` (another connection, already connected) opens its own consistent
    snapshot right after ``conn``'s, while the global read lock is held: no write can commit in
    between, so both read views are the same (MySQL cannot share one between connections).
    That is checked: MariaDB reports each transaction's binlog position
    (``Binlog_snapshot_file``/``_position``); on MySQL the binlog position the reader sees in
    its transaction must still be the snapshot's. A mismatch raises `SnapshotReadViewError`.
    Without the global read lock (``none``, ``minimal_percona``, table locks) the reader is not
    joined (`PreparedSnapshot.joined` stays False).
    """
    cur = conn.cursor()
    seconds = max(1, lock_timeout_ms // 1000)
    cur.execute(f"SET SESSION lock_wait_timeout={seconds}")
    cur.execute(f"SET SESSION innodb_lock_wait_timeout={seconds}")
    lock: _Lock = None
    if locking_mode in ("minimal", "extended"):
        lock = _lock(cur, captures_database, captures)
    elif locking_mode == "minimal_percona":
        cur.execute("LOCK TABLES FOR BACKUP")
        lock = "backup"
    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    point = _position(cur, flavor, binlog_status_sql, gtid_position)
    log.info("snapshot: read view at %s:%s%s (locking mode %s)", point.file, point.pos,
             f", GTIDs {point.gtids}" if point.gtids else "", locking_mode)
    prepared = PreparedSnapshot(point, locked=lock is not None)
    if reader is not None and lock == "global":
        _join(reader, flavor, binlog_status_sql, point)
        prepared.joined = True
    _read_schema(cur, prepared, captures_database, captures, store_only_captured_tables)
    if prepared.locked and locking_mode != "extended":
        cur.execute("UNLOCK TABLES")
        prepared.locked = False
    cur.close()
    return prepared


_Lock = Literal["global", "tables", "backup"] | None
"""The lock step 1 took: FLUSH TABLES WITH READ LOCK, table locks, LOCK TABLES FOR BACKUP, none."""


def _lock(cur: Any, captures_database: Callable[[str], bool], captures: Callable[[TableId], bool]) -> _Lock:
    import pymysql

    try:
        cur.execute("FLUSH TABLES WITH READ LOCK")
        return "global"
    except pymysql.err.OperationalError as exc:
        code = exc.args[0] if exc.args else 0
        if code not in (1227, 1045):  # access denied: no RELOAD
            raise SnapshotLockError(f"snapshot: FLUSH TABLES WITH READ LOCK failed: {exc}") from exc
    # no global read lock allowed (RDS, Aurora, no RELOAD): lock the captured tables instead
    tables = [t for t in _all_tables(cur, captures_database) if captures(t)]
    if not tables:
        return None
    names = ", ".join(f"{_quote(t.database)}.{_quote(t.table)}" for t in tables)
    try:
        cur.execute(f"FLUSH TABLES {names} WITH READ LOCK")
    except pymysql.err.OperationalError as exc:
        raise SnapshotLockError(
            "snapshot: neither FLUSH TABLES WITH READ LOCK (needs RELOAD) nor table locks (needs LOCK TABLES "
            f"and RELOAD) could be taken: {exc}. Grant RELOAD, or set snapshot.locking.mode=none if no DDL "
            "runs during the snapshot") from exc
    log.info("snapshot: no global read lock allowed; locked %d captured tables instead", len(tables))
    return "tables"


_MARIADB_STATUS = "SHOW STATUS LIKE 'binlog_snapshot_%'"


def _status_sql(flavor: str, binlog_status_sql: str) -> str:
    return _MARIADB_STATUS if flavor == "mariadb" else binlog_status_sql


def _file_pos(flavor: str, rows: list[tuple[Any, ...]]) -> tuple[str, int]:
    """The binlog file and position in the rows of `_status_sql`."""
    if flavor == "mariadb":
        status = {str(k): v for k, v in rows}
        return str(status.get("Binlog_snapshot_file", "")), int(status.get("Binlog_snapshot_position", 0) or 0)
    if not rows:
        raise SourceError("snapshot: the server reports no binlog position: is the binlog enabled (log_bin)?")
    return str(rows[0][0]), int(rows[0][1])


def _position(cur: Any, flavor: str, binlog_status_sql: str,
              gtid_position: Callable[[Any, str, int], str]) -> SnapshotPoint:
    file, pos = _file_pos(flavor, _rows(cur, _status_sql(flavor, binlog_status_sql)))
    if not file:
        raise SourceError("snapshot: the server reports no binlog file: is the binlog enabled (log_bin)?")
    return SnapshotPoint(file, pos, gtid_position(cur, file, pos))


def _join(reader: ReadViewJoiner, flavor: str, binlog_status_sql: str, point: SnapshotPoint) -> None:
    """Step 3b: the reader's read view, checked against the snapshot connection's."""
    file, pos = _file_pos(flavor, list(reader.join_read_view(_status_sql(flavor, binlog_status_sql))))
    if (file, pos) != (point.file, point.pos):
        raise SnapshotReadViewError(
            f"snapshot: the reader connection's read view is at binlog {file}:{pos}, the snapshot's at "
            f"{point.file}:{point.pos}: a transaction committed between the two under the global read lock, "
            "so their data may differ. The snapshot stops rather than mix them; retry it")
    log.info("snapshot: the columnar reader joined the read view at %s:%s", file, pos)


def _all_tables(cur: Any, captures_database: Callable[[str], bool]) -> list[TableId]:
    out: list[TableId] = []
    for (db,) in _rows(cur, "SHOW DATABASES"):
        if db in BUILTIN_DATABASES or not captures_database(db):
            continue
        for name, kind in _rows(cur, f"SHOW FULL TABLES FROM {_quote(db)}"):
            if kind == "BASE TABLE":
                out.append(TableId(db, name))
    return out


def _read_schema(cur: Any, prepared: PreparedSnapshot, captures_database: Callable[[str], bool],
                 captures: Callable[[TableId], bool], only_captured: bool) -> None:
    charset = _rows(cur, "SELECT @@character_set_server, @@collation_server")[0]
    statements = prepared.statements
    statements.append(SchemaStatement("", f"SET character_set_server={charset[0]}, collation_server={charset[1]}"))
    tables = _all_tables(cur, captures_database)
    prepared.tables = tables
    recorded = [t for t in tables if captures(t) or not only_captured]
    for t in recorded:
        statements.append(SchemaStatement(t.database, f"DROP TABLE IF EXISTS {_quote(t.database)}.{_quote(t.table)}"))
    locales = {str(name): (charset, collation) for name, charset, collation in _rows(
        cur, "SELECT schema_name, default_character_set_name, default_collation_name FROM information_schema.schemata")}
    for db in sorted({t.database for t in recorded} | _databases(cur, captures_database)):
        statements.append(SchemaStatement(db, f"DROP DATABASE IF EXISTS {_quote(db)}"))
        statements.append(SchemaStatement(db, _create_database(db, *locales.get(db, (None, None)))))
        statements.append(SchemaStatement(db, f"USE {_quote(db)}"))
        for t in recorded:
            if t.database == db:
                create = _rows(cur, f"SHOW CREATE TABLE {_quote(db)}.{_quote(t.table)}")[0][1]
                statements.append(SchemaStatement(db, str(create)))


def _create_database(db: str, charset: str | None, collation: str | None) -> str:
    """The ``CREATE DATABASE`` statement Debezium writes for a database: built from its default
    charset and collation (``information_schema.schemata``), not ``SHOW CREATE DATABASE``."""
    ddl = f"CREATE DATABASE {_quote(db)}"
    if charset:
        ddl += f" CHARSET {charset}"
    if collation:
        ddl += f" COLLATE {collation}"
    return ddl


def _databases(cur: Any, captures_database: Callable[[str], bool]) -> set[str]:
    return {db for (db,) in _rows(cur, "SHOW DATABASES") if db not in BUILTIN_DATABASES and captures_database(db)}
