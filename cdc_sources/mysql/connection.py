"""Connections to MySQL/MariaDB, what the server is, and where its binlog stands.

Three layers, so the MySQL-only paths are testable without a MySQL server:

- connecting (pymysql): the session settings the converters rely on (``time_zone '+00:00'``,
  ``utf8mb4``), ``database.initial.statements``, TLS per ``database.ssl.mode``, the connect
  timeout, and driver errors classified Retriable or Fatal (`cdc_sources.mysql.errors`);
  also opening the binlog reader (python-mysql-replication);
- a small query layer (`server_info`, `current_position`, `gtid_state`, `binary_logs`,
  `binlog_gtid_pos`, `position_available`) that runs the statements;
- pure interpreters of the server's answers (`parse_version`, `binlog_status_sql`,
  `parse_binlog_status`, `check_position_available`), where the MySQL/MariaDB differences live.

MySQL >= 8.2 reports the binlog position with ``SHOW BINARY LOG STATUS`` (8.4 removed
``SHOW MASTER STATUS``); older MySQL and MariaDB with ``SHOW MASTER STATUS``. MySQL's GTID set
is the status row's ``Executed_Gtid_Set`` (purged: ``@@gtid_purged``); MariaDB has no such
column: its position is ``@@gtid_binlog_pos`` (``@@gtid_binlog_state``, ``@@gtid_current_pos``),
and what the oldest binlog file starts with is ``BINLOG_GTID_POS(<oldest file>, 4)``.
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from cdc_sources.mysql import binlog_values
from cdc_sources.mysql.config import MySqlConnectionSettings, split_statements
from cdc_sources.mysql.errors import BinlogUnavailableError, MySqlError, MySqlUnknownHostError, classify
from cdc_sources.mysql.gtid import GtidError, MariaGtidPosition, MySqlGtidSet, SourcePredicate
from cdc_sources.mysql.options import Flavor
from cdc_sources.spi import MissingDependencyError

__all__ = [
    "SESSION_SETTINGS",
    "Availability",
    "BinlogFile",
    "GtidState",
    "ServerInfo",
    "ServerPosition",
    "as_text",
    "binary_logs",
    "binlog_gtid_pos",
    "binlog_status_sql",
    "binlog_status_statement",
    "check_position_available",
    "connect",
    "connect_kwargs",
    "current_position",
    "gtid_position_at",
    "gtid_state",
    "open_binlog_stream",
    "parse_binlog_status",
    "parse_version",
    "position_available",
    "query_rows",
    "report_host",
    "server_info",
    "unbuffered_cursor",
]

SESSION_SETTINGS = {"time_zone": "+00:00"}
"""Session variables of every SQL connection: TIMESTAMP values then come back in UTC."""

CHARSET = "utf8mb4"
REPORT_HOST = "cdc-lakehouse"


def report_host(name: str) -> str:
    """The host name a connector's binlog reader reports to the server (``SHOW SLAVE HOSTS``):
    ``cdc-lakehouse/<topic.prefix>``, at most 60 characters."""
    return f"{REPORT_HOST}/{name}"[:60]


_TEMPORARY_DNS = (socket.EAI_AGAIN,)


def _pymysql() -> Any:
    try:
        import pymysql
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError("pymysql", "mysql") from exc
    return pymysql


# -- connecting -------------------------------------------------------------------------------


def _ssl_context(settings: MySqlConnectionSettings) -> ssl.SSLContext:
    """The TLS context of ``required`` / ``verify_ca`` / ``verify_identity``."""
    verify = settings.ssl_mode in ("verify_ca", "verify_identity")
    try:
        ctx = ssl.create_default_context(cafile=settings.ssl_ca if verify else None)
        ctx.check_hostname = settings.ssl_mode == "verify_identity"
        ctx.verify_mode = ssl.CERT_REQUIRED if verify else ssl.CERT_NONE
        if settings.ssl_cert_key:
            ctx.load_cert_chain(settings.ssl_cert_key, password=settings.ssl_key_password)
    except (OSError, ssl.SSLError) as exc:
        raise MySqlUnknownHostError(
            f"setting up TLS for {settings.describe()} (database.ssl.mode={settings.ssl_mode}): {exc}; "
            "database.ssl.truststore and database.ssl.keystore must be readable PEM files") from None
    return ctx


def connect_kwargs(settings: MySqlConnectionSettings, *, with_database: bool = True,
                   sql: bool = True) -> dict[str, Any]:
    """``pymysql.connect`` keyword arguments (also python-mysql-replication's
    ``connection_settings``). They hold the password: never log them.

    ``sql=False`` is for binlog readers: no default database and no read timeout (an idle
    binlog connection legitimately waits; its liveness comes from replication heartbeats).
    """
    kwargs: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "user": settings.user,
        "password": settings.password or "", "charset": CHARSET,
        "connect_timeout": settings.connect_timeout_s,
    }
    if with_database and sql and settings.database:
        kwargs["database"] = settings.database
    if sql and settings.query_timeout_s:
        kwargs["read_timeout"] = settings.query_timeout_s
    if settings.ssl_mode == "disabled":
        kwargs["ssl_disabled"] = True
    elif settings.ssl_mode != "preferred":
        kwargs["ssl"] = _ssl_context(settings)
    return kwargs


def connect(settings: MySqlConnectionSettings, *, autocommit: bool = True,
            initial_statements: str | Sequence[str] | None = None, conversions: Mapping[Any, Any] | None = None) -> Any:
    """A pymysql connection with the session settings and ``database.initial.statements``.

    Args:
        settings: where to connect.
        autocommit: autocommit mode (False for snapshot transactions).
        initial_statements: overrides ``settings.initial_statements`` (text as in the option,
            or already split).
        conversions: pymysql's ``conv`` table (the snapshot reads with
            `cdc_sources.mysql.converters.SNAPSHOT_CONVERSIONS`); None for pymysql's defaults.

    Raises:
        MySqlError: classified (`cdc_sources.mysql.errors.classify`); Retriable when the server
            may come back, Fatal for credentials, unknown hosts, TLS or privileges.
    """
    pymysql = _pymysql()
    where = f"connecting to {settings.describe()}"
    try:
        extra = {} if conversions is None else {"conv": dict(conversions)}
        conn = pymysql.connect(**connect_kwargs(settings), autocommit=autocommit, **extra)
    except (pymysql.MySQLError, OSError) as exc:
        raise _classify_connect(exc, where) from None
    if isinstance(initial_statements, str):
        statements: Sequence[str] = split_statements(initial_statements)
    else:
        statements = settings.initial_statements if initial_statements is None else initial_statements
    try:
        with conn.cursor() as cur:
            for name, value in SESSION_SETTINGS.items():
                cur.execute(f"SET SESSION {name} = %s", (value,))
            for statement in statements:
                cur.execute(statement)
    except pymysql.MySQLError as exc:
        conn.close()
        raise classify(exc, where=f"running the session set-up (database.initial.statements) on "
                                  f"{settings.describe()}") from None
    return conn


def _classify_connect(exc: BaseException, where: str) -> MySqlError:
    original = getattr(exc, "original_exception", None)
    if isinstance(original, socket.gaierror) and original.errno not in _TEMPORARY_DNS:
        return MySqlUnknownHostError(f"{where}: the host name does not resolve ({original.strerror}); "
                                     "check connection.host", code=2005)
    return classify(exc, where=where)


def unbuffered_cursor(conn: Any) -> Any:
    """A server-side (streaming) cursor, for snapshot reads of large tables."""
    return conn.cursor(_pymysql().cursors.SSCursor)


def query_rows(conn: Any, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
    """All rows of one statement (the query layer the functions below use)."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return [tuple(row) for row in cur.fetchall()]


def _query_columns(conn: Any, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description or ()]
        return names, [tuple(row) for row in cur.fetchall()]


def as_text(value: Any) -> str:
    """A text column value as str (pymysql returns bytes for some SHOW statements)."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


# -- what the server is -----------------------------------------------------------------------


@dataclass(frozen=True)
class ServerInfo:
    """The server: flavour, version, ids and GTID mode.

    Attributes:
        flavor: ``mysql`` or ``mariadb``.
        version: (major, minor, patch).
        version_text: ``SELECT VERSION()``.
        server_id: the server's own ``@@server_id``.
        server_uuid: MySQL's ``@@server_uuid`` (None on MariaDB).
        gtid_mode: MySQL ``gtid_mode=ON``; always True on MariaDB (GTIDs cannot be turned off).
    """

    flavor: Flavor
    version: tuple[int, int, int]
    version_text: str
    server_id: int
    server_uuid: str | None = None
    gtid_mode: bool = True

    @property
    def binlog_status_sql(self) -> str:
        return binlog_status_statement(self.flavor, self.version)

    @property
    def replica_hosts_sql(self) -> str:
        """``SHOW REPLICAS`` on MySQL >= 8.0.22, ``SHOW SLAVE HOSTS`` otherwise (also MariaDB)."""
        return "SHOW REPLICAS" if self.flavor == "mysql" and self.version >= (8, 0, 22) else "SHOW SLAVE HOSTS"

    def describe(self) -> str:
        return f"{'MariaDB' if self.flavor == 'mariadb' else 'MySQL'} {self.version_text}"


_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str, comment: str = "") -> tuple[Flavor, tuple[int, int, int]]:
    """The flavour and version of a ``VERSION()`` text (MariaDB's old ``5.5.5-`` prefix dropped).

    Raises:
        ValueError: no version number in the text.
    """
    is_maria = "mariadb" in text.lower() or "mariadb" in comment.lower()
    body = text[6:] if is_maria and text.startswith("5.5.5-") else text
    m = _VERSION.search(body)
    if m is None:
        raise ValueError(f"cannot read a version number from {text!r}")
    return ("mariadb" if is_maria else "mysql"), (int(m[1]), int(m[2]), int(m[3]))


def server_info(conn: Any) -> ServerInfo:
    """Detect the server's flavour, version, server id and GTID mode."""
    (version, comment, server_id), = query_rows(conn, "SELECT VERSION(), @@version_comment, @@server_id")
    flavor, numbers = parse_version(as_text(version), as_text(comment or ""))
    if flavor == "mariadb":
        return ServerInfo(flavor, numbers, as_text(version), int(server_id))
    (uuid,), = query_rows(conn, "SELECT @@server_uuid")
    gtid_mode = _global_variable(conn, "gtid_mode")
    return ServerInfo(flavor, numbers, as_text(version), int(server_id), as_text(uuid),
                      (gtid_mode or "").upper() == "ON")


def _global_variable(conn: Any, name: str) -> str | None:
    rows = query_rows(conn, "SHOW GLOBAL VARIABLES LIKE %s", (name,))
    return as_text(rows[0][1]) if rows else None


# -- where the binlog stands ------------------------------------------------------------------


def binlog_status_statement(flavor: Flavor, version: tuple[int, int, int]) -> str:
    """``SHOW BINARY LOG STATUS`` on MySQL >= 8.2, else ``SHOW MASTER STATUS`` (MariaDB too)."""
    return "SHOW BINARY LOG STATUS" if flavor == "mysql" and version >= (8, 2, 0) else "SHOW MASTER STATUS"


def binlog_status_sql(server: ServerInfo) -> str:
    """The statement that reports ``server``'s binlog position (`binlog_status_statement`)."""
    return server.binlog_status_sql


class ServerPosition(NamedTuple):
    """The server's current binlog position: file, position and GTID text ("" without GTIDs)."""

    file: str
    pos: int
    gtids: str


def parse_binlog_status(columns: Sequence[str], row: Sequence[Any] | None) -> tuple[str, int, str | None] | None:
    """File, position and ``Executed_Gtid_Set`` (None when the column is absent, as on
    MariaDB) from a ``SHOW MASTER STATUS``/``SHOW BINARY LOG STATUS`` row; None without a row
    (the binlog is off)."""
    if row is None:
        return None
    values = {c.lower(): v for c, v in zip(columns, row, strict=False)}
    gtids = values.get("executed_gtid_set")
    text = None if gtids is None else as_text(gtids).replace("\n", "").replace("\r", "")
    return as_text(values.get("file", row[0])), int(values.get("position", row[1])), text


def current_position(conn: Any, server: ServerInfo) -> ServerPosition:
    """The server's current binlog position and GTID set/position.

    Raises:
        MySqlError: the binlog is off (no status row).
    """
    columns, rows = _query_columns(conn, server.binlog_status_sql)
    parsed = parse_binlog_status(columns, rows[0] if rows else None)
    if parsed is None:
        raise MySqlError(f"'{server.binlog_status_sql}' returned no row: the binary log is not enabled on "
                         f"{server.describe()}; start the server with log_bin")
    file, pos, executed = parsed
    if server.flavor == "mariadb":
        executed = _global_variable(conn, "gtid_binlog_pos")
    return ServerPosition(file, pos, executed or "")


def gtid_position_at(cursor: Any, server: ServerInfo, file: str, pos: int) -> str:
    """The GTID text that goes with ``file:pos``: MariaDB computes it (``BINLOG_GTID_POS``);
    MySQL can only give the executed set of the current position, so use it while the
    position cannot move (under the snapshot lock)."""
    if server.flavor == "mariadb":
        cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
        row = cursor.fetchone()
        return "" if row is None or row[0] is None else as_text(row[0])
    cursor.execute(server.binlog_status_sql)
    names = [d[0] for d in cursor.description or ()]
    parsed = parse_binlog_status(names, cursor.fetchone())
    return (parsed[2] or "") if parsed else ""


@dataclass(frozen=True)
class GtidState:
    """The server's GTID variables.

    Attributes:
        executed: MySQL ``Executed_Gtid_Set`` / MariaDB ``@@gtid_binlog_pos``, as text.
        purged: MySQL ``@@gtid_purged`` ("" on MariaDB, which has none).
        binlog_state: MariaDB ``@@gtid_binlog_state`` (last GTID per domain and server).
        current_pos: MariaDB ``@@gtid_current_pos`` (binlog or replicated, whichever is later).
    """

    executed: str
    purged: str = ""
    binlog_state: str = ""
    current_pos: str = ""


def gtid_state(conn: Any, server: ServerInfo) -> GtidState:
    """Read the server's GTID variables."""
    if server.flavor == "mariadb":
        (pos, state, current), = query_rows(conn, "SELECT @@global.gtid_binlog_pos, @@global.gtid_binlog_state, "
                                                  "@@global.gtid_current_pos")
        return GtidState(as_text(pos or ""), "", as_text(state or ""), as_text(current or ""))
    (purged,), = query_rows(conn, "SELECT @@global.gtid_purged")
    return GtidState(current_position(conn, server).gtids, as_text(purged or "").replace("\n", ""))


class BinlogFile(NamedTuple):
    """One ``SHOW BINARY LOGS`` row."""

    name: str
    size: int


def binary_logs(conn: Any) -> list[BinlogFile]:
    """The binlog files the server still has, oldest first (``SHOW BINARY LOGS``)."""
    return [BinlogFile(as_text(r[0]), int(r[1])) for r in query_rows(conn, "SHOW BINARY LOGS")]


def binlog_gtid_pos(conn: Any, file: str, pos: int) -> MariaGtidPosition | None:
    """MariaDB's ``BINLOG_GTID_POS(file, pos)``: the GTID position a replica starting at
    ``file:pos`` resumes from; None when the file is gone or the position is not an event start."""
    (value,), = query_rows(conn, "SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
    return None if value is None else MariaGtidPosition.parse(as_text(value))


@dataclass(frozen=True)
class Availability:
    """Whether streaming can resume at a stored offset; truthy when it can.

    Attributes:
        available: the server still has every binlog event after the offset.
        reason: why (not), one sentence for logs and errors.
    """

    available: bool
    reason: str

    def __bool__(self) -> bool:
        return self.available


def check_position_available(
    *, flavor: Flavor, offset_file: str | None, offset_gtids: str | None, binlog_files: Sequence[str],
    server_gtids: str, purged_gtids: str = "", oldest_start: str | None = None,
    gtid_filter: SourcePredicate | None = None,
) -> Availability:
    """Debezium's ``isBinlogPositionAvailable``, with a real purge check for MariaDB GTIDs.

    With offset GTIDs: the offset's set (filtered by ``gtid.source.*``) must be contained in
    the server's (else the server misses transactions already captured: another server, or a
    restored backup), and nothing still to be read may be purged (MySQL: the server's set
    minus the offset's must not meet ``@@gtid_purged``; MariaDB: no domain of the offset may
    be behind ``oldest_start``, the position the oldest binlog file starts at). Without GTIDs
    the offset file must be listed by ``SHOW BINARY LOGS``. An offset GTID text of "" means
    "from the start" and a missing file "from the current position": both are available.

    Args:
        flavor: the GTID dialect.
        offset_file / offset_gtids: the stored offset's ``file`` and ``gtids``.
        binlog_files: ``SHOW BINARY LOGS`` names, oldest first.
        server_gtids: MySQL ``Executed_Gtid_Set`` / MariaDB ``@@gtid_binlog_pos``.
        purged_gtids: MySQL ``@@gtid_purged``.
        oldest_start: MariaDB ``BINLOG_GTID_POS(<oldest file>, 4)``.
        gtid_filter: ``gtid.source.includes``/``excludes``.
    """
    if offset_gtids is not None:
        if not offset_gtids.strip():
            return Availability(True, "the offset starts at the beginning of the GTID history")
        try:
            if flavor == "mariadb":
                return _maria_available(offset_gtids, server_gtids, oldest_start, gtid_filter)
            return _mysql_available(offset_gtids, server_gtids, purged_gtids, gtid_filter)
        except GtidError as exc:
            return Availability(False, f"the GTIDs cannot be compared: {exc}")
    if not offset_file:
        return Availability(True, "the offset has no binlog file: reading starts at the current position")
    if offset_file in binlog_files:
        return Availability(True, f"the server still has binlog file {offset_file}")
    oldest = binlog_files[0] if binlog_files else "none"
    return Availability(False, f"binlog file {offset_file} is no longer on the server (the oldest is {oldest}): "
                               "it was purged")


def _mysql_available(offset: str, server: str, purged: str, gtid_filter: SourcePredicate | None) -> Availability:
    available = MySqlGtidSet.parse(server)
    if available.is_empty():
        return Availability(False, "the offset has GTIDs but the server has none (is gtid_mode ON?)")
    wanted = MySqlGtidSet.parse(offset).retain(gtid_filter)
    if not wanted.is_contained_within(available):
        missing = wanted.subtract(available)
        return Availability(False, f"the server lacks transactions already captured ({missing}); it is "
                                   "not the server the offset came from, or it was restored from an older backup")
    to_read = available.retain(gtid_filter).subtract(wanted)
    gone = to_read.subtract(to_read.subtract(MySqlGtidSet.parse(purged)))
    if not gone.is_empty():
        return Availability(False, f"transactions not captured yet were purged from the binlog ({gone})")
    return Availability(True, "the server has every transaction after the offset's GTID set")


def _maria_available(offset: str, server: str, oldest_start: str | None,
                     gtid_filter: SourcePredicate | None) -> Availability:
    available = MariaGtidPosition.parse(server)
    if available.is_empty():
        return Availability(False, "the offset has GTIDs but the server's binlog has none (was it reset?)")
    wanted = MariaGtidPosition.parse(offset).retain(gtid_filter)
    if not wanted.is_contained_within(available):
        return Availability(False, f"the server's binlog position {available} is before the offset's {wanted} in "
                                   "some domain; it is not the server the offset came from, or it was restored "
                                   "from an older backup")
    start = MariaGtidPosition.parse(oldest_start).retain(gtid_filter)
    behind = wanted.behind(start)
    if behind:
        return Availability(False, f"the oldest binlog starts after the offset in domain(s) "
                                   f"{', '.join(map(str, behind))} (offset {wanted}, oldest binlog starts at "
                                   f"{start}): transactions not captured yet were purged")
    return Availability(True, "the server has every transaction after the offset's GTID position")


def position_available(conn: Any, server: ServerInfo, *, file: str | None, gtids: str | None,
                       gtid_filter: SourcePredicate | None = None, ignore_gtids: bool = False) -> Availability:
    """Query the server and apply `check_position_available` to a stored offset.

    ``ignore_gtids`` is ``gtid.ignore.on.recovery``: decide on the binlog file alone.
    """
    files = [f.name for f in binary_logs(conn)]
    offset_gtids = None if ignore_gtids else gtids
    if server.flavor == "mariadb":
        state = gtid_state(conn, server)
        oldest = binlog_gtid_pos(conn, files[0], 4) if files and offset_gtids else None
        return check_position_available(flavor="mariadb", offset_file=file, offset_gtids=offset_gtids,
                                        binlog_files=files, server_gtids=state.executed,
                                        oldest_start=str(oldest) if oldest is not None else "",
                                        gtid_filter=gtid_filter)
    state = gtid_state(conn, server) if offset_gtids else GtidState("")
    return check_position_available(flavor="mysql", offset_file=file, offset_gtids=offset_gtids, binlog_files=files,
                                    server_gtids=state.executed, purged_gtids=state.purged, gtid_filter=gtid_filter)


# -- the binlog reader ------------------------------------------------------------------------


def open_binlog_stream(settings: MySqlConnectionSettings, *, server_id: int, file: str, pos: int, blocking: bool,
                       heartbeat_s: float | None, mariadb: bool, annotate: bool = False, gtids: str | None = None,
                       only_events: Sequence[type] | None = None,
                       gtid_for_position: Callable[[str, int], str | None] | None = None,
                       report_as: str = REPORT_HOST) -> Any:
    """A python-mysql-replication ``BinLogStreamReader`` reading from ``file:pos``.

    MySQL: binlog coordinates, or GTID auto-positioning when ``gtids`` is given. MariaDB: the
    library always positions MariaDB by GTID (it ignores file and position when
    ``is_mariadb``), so ``gtids`` (the slave connect state) is used, or the position for
    ``file:pos`` is computed (``gtid_for_position``, by default ``BINLOG_GTID_POS`` on a
    short-lived SQL connection); that keeps ``ANNOTATE_ROWS`` events (``include.query``)
    available. The reader registers
    as a replica reporting ``report_as`` (use `report_host`), so the server id checks of other
    runs can see it.

    Raises:
        BinlogUnavailableError: MariaDB has no GTID position for ``file:pos`` (purged).
    """
    try:
        from pymysqlreplication import BinLogStreamReader
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError("mysql-replication", "mysql") from exc
    kwargs: dict[str, Any] = {
        "connection_settings": connect_kwargs(settings, sql=False), "server_id": server_id,
        "blocking": blocking, "slave_heartbeat": heartbeat_s, "report_slave": report_as,
        "enable_logging": False,
    }
    if only_events is not None:
        kwargs["only_events"] = list(only_events)
    if mariadb:
        state = gtids
        if not state and file:
            state = (gtid_for_position or (lambda f, p: _gtid_position_text(settings, f, p)))(file, pos)
            if state is None:
                raise BinlogUnavailableError(f"MariaDB has no GTID position for {file}:{pos} "
                                             "(the binlog file was purged, or the position is not an event start)")
        kwargs.update(is_mariadb=True, annotate_rows_event=annotate, auto_position=state or "")
    elif gtids:
        kwargs.update(auto_position=gtids)
    else:
        kwargs.update(log_file=file, log_pos=max(pos, 4), resume_stream=True)
    binlog_values.install()
    return BinLogStreamReader(**kwargs)


def _gtid_position_text(settings: MySqlConnectionSettings, file: str, pos: int) -> str | None:
    """``BINLOG_GTID_POS(file, pos)`` on a connection of its own; None when MariaDB has none."""
    conn = connect(settings)
    try:
        found = binlog_gtid_pos(conn, file, pos)
    finally:
        conn.close()
    return None if found is None else str(found)
