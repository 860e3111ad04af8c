"""Snapshot steps 1-5: lock, open the consistent read view, record the position and the schema.

See `cdc_sources.mysql.snapshot` for the whole sequence. The statements recorded in the schema
history are Debezium's: ``SET character_set_server=...``, ``DROP TABLE IF EXISTS`` for every
table, then per database ``DROP DATABASE IF EXISTS``, ``CREATE DATABASE``, ``USE`` and each
table's ``SHOW CREATE TABLE`` output.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.snapshot import SnapshotPoint
from cdc_sources.spi import Fatal, SourceError

log = logging.getLogger(__name__)

BUILTIN_DATABASES = frozenset({"mysql", "sys", "information_schema", "performance_schema"})


class SnapshotLockError(SourceError, Fatal):
    """The snapshot could not take the locks its ``snapshot.locking.mode`` needs."""


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
    """

    point: SnapshotPoint
    statements: list[SchemaStatement] = field(default_factory=list)
    tables: list[TableId] = field(default_factory=list)
    locked: bool = False


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _rows(cur: Any, sql: str) -> list[tuple[Any, ...]]:
    cur.execute(sql)
    return list(cur.fetchall())


def prepare_snapshot(conn: Any, *, flavor: str, locking_mode: str, lock_timeout_ms: int,
                     captures_database: Callable[[str], bool], captures: Callable[[TableId], bool],
                     store_only_captured_tables: bool, binlog_status_sql: str,
                     gtid_position: Callable[[Any, str, int], str]) -> PreparedSnapshot:
    """Run steps 1-5 on ``conn`` and leave its consistent-snapshot transaction open.

    ``binlog_status_sql`` is ``SHOW MASTER STATUS`` or ``SHOW BINARY LOG STATUS`` (MySQL 8.2+);
    ``gtid_position(cursor, file, pos)`` gives the GTID set at a position ("" without GTIDs).
    """
    cur = conn.cursor()
    seconds = max(1, lock_timeout_ms // 1000)
    cur.execute(f"SET SESSION lock_wait_timeout={seconds}")
    cur.execute(f"SET SESSION innodb_lock_wait_timeout={seconds}")
    locked = False
    if locking_mode in ("minimal", "extended"):
        locked = _lock(cur, captures_database, captures)
    elif locking_mode == "minimal_percona":
        cur.execute("LOCK TABLES FOR BACKUP")
        locked = True
    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    point = _position(cur, flavor, binlog_status_sql, gtid_position)
    log.info("snapshot: read view at %s:%s%s (locking mode %s)", point.file, point.pos,
             f", GTIDs {point.gtids}" if point.gtids else "", locking_mode)
    prepared = PreparedSnapshot(point, locked=locked)
    _read_schema(cur, prepared, captures_database, captures, store_only_captured_tables)
    if locked and locking_mode != "extended":
        cur.execute("UNLOCK TABLES")
        prepared.locked = False
    cur.close()
    return prepared


def _lock(cur: Any, captures_database: Callable[[str], bool], captures: Callable[[TableId], bool]) -> bool:
    import pymysql

    try:
        cur.execute("FLUSH TABLES WITH READ LOCK")
        return True
    except pymysql.err.OperationalError as exc:
        code = exc.args[0] if exc.args else 0
        if code not in (1227, 1045):  # access denied: no RELOAD
            raise SnapshotLockError(f"snapshot: FLUSH TABLES WITH READ LOCK failed: {exc}") from exc
    # no global read lock allowed (RDS, Aurora, no RELOAD): lock the captured tables instead
    tables = [t for t in _all_tables(cur, captures_database) if captures(t)]
    if not tables:
        return False
    names = ", ".join(f"{_quote(t.database)}.{_quote(t.table)}" for t in tables)
    try:
        cur.execute(f"FLUSH TABLES {names} WITH READ LOCK")
    except pymysql.err.OperationalError as exc:
        raise SnapshotLockError(
            "snapshot: neither FLUSH TABLES WITH READ LOCK (needs RELOAD) nor table locks (needs LOCK TABLES "
            f"and RELOAD) could be taken: {exc}. Grant RELOAD, or set snapshot.locking.mode=none if no DDL "
            "runs during the snapshot") from exc
    log.info("snapshot: no global read lock allowed; locked %d captured tables instead", len(tables))
    return True


def _position(cur: Any, flavor: str, binlog_status_sql: str,
              gtid_position: Callable[[Any, str, int], str]) -> SnapshotPoint:
    if flavor == "mariadb":
        status = dict(_rows(cur, "SHOW STATUS LIKE 'binlog_snapshot_%'"))
        file, pos = str(status.get("Binlog_snapshot_file", "")), int(status.get("Binlog_snapshot_position", 0) or 0)
    else:
        rows = _rows(cur, binlog_status_sql)
        if not rows:
            raise SourceError("snapshot: the server reports no binlog position: is the binlog enabled (log_bin)?")
        file, pos = str(rows[0][0]), int(rows[0][1])
    if not file:
        raise SourceError("snapshot: the server reports no binlog file: is the binlog enabled (log_bin)?")
    return SnapshotPoint(file, pos, gtid_position(cur, file, pos))


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
    for db in sorted({t.database for t in recorded} | _databases(cur, captures_database)):
        create_db = _rows(cur, f"SHOW CREATE DATABASE {_quote(db)}")[0][1]
        statements.append(SchemaStatement(db, f"DROP DATABASE IF EXISTS {_quote(db)}"))
        statements.append(SchemaStatement(db, str(create_db)))
        statements.append(SchemaStatement(db, f"USE {_quote(db)}"))
        for t in recorded:
            if t.database == db:
                create = _rows(cur, f"SHOW CREATE TABLE {_quote(db)}.{_quote(t.table)}")[0][1]
                statements.append(SchemaStatement(db, str(create)))


def _databases(cur: Any, captures_database: Callable[[str], bool]) -> set[str]:
    return {db for (db,) in _rows(cur, "SHOW DATABASES") if db not in BUILTIN_DATABASES and captures_database(db)}
