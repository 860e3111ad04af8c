"""Connections, error classification, server detection, binlog positions and purge checks.

Against the real MariaDB where possible (the shared ``mariadb_server`` for reads, a private
LocalMariaDB for purges); the MySQL-only answers (``SHOW BINARY LOG STATUS``,
``Executed_Gtid_Set``, UUID GTID sets, ``@@gtid_purged``) through the pure interpreters.
"""

from __future__ import annotations

import shutil
import ssl
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc_sources.mysql.config import MySqlConnectionSettings
from cdc_sources.mysql.connection import (
    SESSION_SETTINGS,
    ServerInfo,
    binary_logs,
    binlog_gtid_pos,
    binlog_status_sql,
    binlog_status_statement,
    check_position_available,
    connect,
    connect_kwargs,
    current_position,
    gtid_position_at,
    gtid_state,
    open_binlog_stream,
    parse_binlog_status,
    parse_version,
    position_available,
    query_rows,
    report_host,
    server_info,
    unbuffered_cursor,
)
from cdc_sources.mysql.errors import (
    BinlogUnavailableError,
    MySqlAuthError,
    MySqlConnectError,
    MySqlError,
    MySqlUnknownHostError,
    classify,
)
from cdc_sources.spi import Fatal, Retriable
from pipelines.local_mariadb import LocalMariaDB
from pipelines.local_postgres import free_port

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "24bc7850-2c16-11e6-a073-0242ac110002"


def settings_for(args: dict[str, Any], **overrides: Any) -> MySqlConnectionSettings:
    base: dict[str, Any] = {"host": str(args["host"]), "port": int(args["port"]), "user": str(args["user"]),
                            "password": str(args.get("password") or ""), "database": args.get("database"),
                            "ssl_mode": "preferred", "connect_timeout_s": 5.0}
    return MySqlConnectionSettings(**{**base, **overrides})


# -- pure: versions, status rows, availability, errors ----------------------------------------


@pytest.mark.parametrize(("text", "comment", "flavor", "version"), [
    ("8.0.36", "MySQL Community Server - GPL", "mysql", (8, 0, 36)),
    ("8.4.0-commercial", "MySQL Enterprise Server", "mysql", (8, 4, 0)),
    ("5.7.44-log", "", "mysql", (5, 7, 44)),
    ("8.0.35-27", "Percona Server (GPL), Release 27", "mysql", (8, 0, 35)),
    ("5.5.5-10.11.6-MariaDB", "", "mariadb", (10, 11, 6)),
    ("10.11.19-MariaDB-0+deb12u1-log", "Debian 12", "mariadb", (10, 11, 19)),
    ("11.4.2-MariaDB-ubu2404", "mariadb.org binary distribution", "mariadb", (11, 4, 2)),
    ("10.6.12", "MariaDB Server", "mariadb", (10, 6, 12)),
])
def test_parse_version(text: str, comment: str, flavor: str, version: tuple[int, int, int]) -> None:
    assert parse_version(text, comment) == (flavor, version)


def test_parse_version_without_numbers() -> None:
    with pytest.raises(ValueError, match="version number"):
        parse_version("unknown")


@pytest.mark.parametrize(("flavor", "version", "sql"), [
    ("mysql", (8, 0, 36), "SHOW MASTER STATUS"), ("mysql", (8, 2, 0), "SHOW BINARY LOG STATUS"),
    ("mysql", (8, 4, 3), "SHOW BINARY LOG STATUS"), ("mysql", (9, 1, 0), "SHOW BINARY LOG STATUS"),
    ("mysql", (5, 7, 44), "SHOW MASTER STATUS"), ("mariadb", (11, 4, 2), "SHOW MASTER STATUS"),
])
def test_binlog_status_statement(flavor: Any, version: tuple[int, int, int], sql: str) -> None:
    assert binlog_status_statement(flavor, version) == sql
    assert ServerInfo(flavor, version, "x", 1).binlog_status_sql == sql
    assert binlog_status_sql(ServerInfo(flavor, version, "x", 1)) == sql


def test_replica_hosts_statement_and_report_host() -> None:
    assert ServerInfo("mysql", (8, 0, 22), "x", 1).replica_hosts_sql == "SHOW REPLICAS"
    assert ServerInfo("mysql", (8, 0, 21), "x", 1).replica_hosts_sql == "SHOW SLAVE HOSTS"
    assert ServerInfo("mariadb", (11, 4, 2), "x", 1).replica_hosts_sql == "SHOW SLAVE HOSTS"
    assert report_host("shop") == "cdc-lakehouse/shop"
    assert len(report_host("x" * 100)) == 60
    assert ServerInfo("mariadb", (10, 11, 6), "10.11.6-MariaDB", 1).describe() == "MariaDB 10.11.6-MariaDB"


def test_parse_binlog_status_rows() -> None:
    mysql_columns = ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"]
    row = ("binlog.000042", 1913, "", "", f"{U1}:1-5,\n{U2}:1-3")
    assert parse_binlog_status(mysql_columns, row) == ("binlog.000042", 1913, f"{U1}:1-5,{U2}:1-3")
    assert parse_binlog_status(mysql_columns, ("binlog.000001", 4, "", "", "")) == ("binlog.000001", 4, "")
    maria_columns = ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"]
    assert parse_binlog_status(maria_columns, (b"mysql-bin.000003", "385", "", "")) == ("mysql-bin.000003", 385, None)
    assert parse_binlog_status(maria_columns, None) is None


@pytest.mark.parametrize(("kw", "available", "reason"), [
    ({"offset_gtids": ""}, True, "beginning"),
    ({"offset_gtids": f"{U1}:1-5", "server_gtids": ""}, False, "gtid_mode"),
    ({"offset_gtids": f"{U1}:1-5", "server_gtids": f"{U1}:1-9"}, True, "every transaction"),
    ({"offset_gtids": f"{U1}:1-5", "server_gtids": f"{U1}:1-4"}, False,
     f"lacks transactions already captured ({U1}:5-5)"),
    ({"offset_gtids": f"{U1}:1-5", "server_gtids": f"{U1}:1-9", "purged_gtids": f"{U1}:1-5"}, True, "every"),
    ({"offset_gtids": f"{U1}:1-5", "server_gtids": f"{U1}:1-9", "purged_gtids": f"{U1}:1-6"}, False,
     f"were purged from the binlog ({U1}:6-6)"),
    ({"offset_gtids": f"{U1}:1-5", "server_gtids": f"{U1}:1-9,{U2}:1-9", "purged_gtids": f"{U1}:1-5,{U2}:1-3"},
     False, f"({U2}:1-3)"),
    ({"offset_gtids": f"{U1}:1-5", "server_gtids": f"{U1}:1-9,{U2}:1-9", "purged_gtids": f"{U1}:1-5,{U2}:1-3",
      "gtid_filter": lambda uuid: uuid == U1}, True, "every"),
    ({"offset_gtids": f"{U1}:1-5,{U2}:1-99", "server_gtids": f"{U1}:1-9",
      "gtid_filter": lambda uuid: uuid == U1}, True, "every"),
    ({"offset_gtids": "garbage"}, False, "cannot be compared"),
    ({"offset_file": None}, True, "current position"),
    ({"offset_file": "binlog.000003"}, True, "still has binlog file binlog.000003"),
    ({"offset_file": "binlog.000001"}, False, "binlog file binlog.000001 is no longer on the server (the oldest is "
                                              "binlog.000002): it was purged"),
])
def test_mysql_position_availability(kw: dict[str, Any], available: bool, reason: str) -> None:
    args: dict[str, Any] = {"flavor": "mysql", "offset_file": "binlog.000002", "offset_gtids": None,
                            "binlog_files": ["binlog.000002", "binlog.000003"], "server_gtids": f"{U1}:1-9"}
    result = check_position_available(**{**args, **kw})
    assert bool(result) is available
    assert reason in result.reason


@pytest.mark.parametrize(("kw", "available", "reason"), [
    ({"offset_gtids": "0-1-5", "server_gtids": "0-1-9", "oldest_start": "0-1-3"}, True, "every transaction"),
    ({"offset_gtids": "0-1-5", "server_gtids": "0-1-9", "oldest_start": ""}, True, "every transaction"),
    ({"offset_gtids": "0-1-5", "server_gtids": "0-1-9", "oldest_start": "0-1-5"}, True, "every transaction"),
    ({"offset_gtids": "0-1-5", "server_gtids": "0-1-9", "oldest_start": "0-1-6"}, False, "domain(s) 0"),
    ({"offset_gtids": "0-1-5,1-2-8", "server_gtids": "0-1-9,1-2-9", "oldest_start": "0-1-2,1-2-9"}, False,
     "domain(s) 1"),
    ({"offset_gtids": "0-1-5,1-2-8", "server_gtids": "0-1-9,1-2-9", "oldest_start": "0-1-2,1-2-9",
      "gtid_filter": lambda source: source.startswith("0-")}, True, "every"),
    ({"offset_gtids": "0-1-10", "server_gtids": "0-1-9"}, False, "not the server the offset came from"),
    ({"offset_gtids": "0-1-10", "server_gtids": ""}, False, "has none"),
    ({"offset_gtids": "", "server_gtids": ""}, True, "beginning"),
])
def test_mariadb_position_availability(kw: dict[str, Any], available: bool, reason: str) -> None:
    args: dict[str, Any] = {"flavor": "mariadb", "offset_file": "mysql-bin.000001", "binlog_files": []}
    result = check_position_available(**{**args, **kw})
    assert bool(result) is available
    assert reason in result.reason


@pytest.mark.parametrize(("exc", "kind", "retriable", "fragment"), [
    (pymysql.err.OperationalError(2013, "Lost connection to server during query"), MySqlConnectError, True, "2013"),
    (pymysql.err.OperationalError(2006, "Server has gone away"), MySqlConnectError, True, "gone away"),
    (pymysql.err.OperationalError(2003, "Can't connect to MySQL server on 'h' ([Errno 111] Connection refused)"),
     MySqlConnectError, True, "refused"),
    (pymysql.err.OperationalError(2003, "Can't connect to MySQL server on 'h' ([Errno -2] Name or service not known)"),
     MySqlUnknownHostError, False, "does not resolve"),
    (pymysql.err.OperationalError(1040, "Too many connections"), MySqlConnectError, True, "Too many"),
    (pymysql.err.OperationalError(1053, "Server shutdown in progress"), MySqlConnectError, True, "shutdown"),
    (pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"), MySqlConnectError, True, "Lock wait"),
    (pymysql.err.OperationalError(1045, "Access denied for user 'cdc'@'h' (using password: YES)"), MySqlAuthError,
     False, "check the user, password and grants"),
    (pymysql.err.OperationalError(1227, "Access denied; you need (at least one of) the RELOAD privilege(s)"),
     MySqlAuthError, False, "RELOAD"),
    (pymysql.err.OperationalError(1049, "Unknown database 'x'"), MySqlAuthError, False, "connection.database"),
    (pymysql.err.OperationalError(1236, "Could not find first log file name in binary log index file"),
     BinlogUnavailableError, False, "new snapshot is required"),
    (pymysql.err.OperationalError(2026, "SSL connection error: SSL is required but the server doesn't support it"),
     MySqlUnknownHostError, False, "database.ssl.mode"),
    (pymysql.err.ProgrammingError(1064, "You have an error in your SQL syntax"), MySqlError, False, "syntax"),
    (ConnectionResetError(104, "Connection reset by peer"), MySqlConnectError, True, "reset"),
])
def test_classify(exc: BaseException, kind: type[MySqlError], retriable: bool, fragment: str) -> None:
    err = classify(exc, where="connecting to cdc@h:3306")
    assert type(err) is kind
    assert isinstance(err, Retriable) is retriable
    assert isinstance(err, Fatal) is (kind is not MySqlError and not retriable)
    assert err.message.startswith("connecting to cdc@h:3306: ")
    assert fragment in err.message


def test_classify_scrubs_passwords() -> None:
    err = classify(pymysql.err.OperationalError(1105, "bad option password=hunter2 given"), where="w")
    assert "hunter2" not in str(err) and "password=***" in str(err)


def test_connect_kwargs_per_ssl_mode() -> None:
    base = MySqlConnectionSettings("h", 3306, "u", "pw", "db", connect_timeout_s=2.5, query_timeout_s=600.0)
    kw = connect_kwargs(base)
    assert kw == {"host": "h", "port": 3306, "user": "u", "password": "pw", "charset": "utf8mb4",
                  "connect_timeout": 2.5, "database": "db", "read_timeout": 600.0}
    assert "database" not in connect_kwargs(base, with_database=False)
    binlog = connect_kwargs(base, sql=False)
    assert "database" not in binlog and "read_timeout" not in binlog
    assert connect_kwargs(MySqlConnectionSettings("h", 1, "u", ssl_mode="disabled"))["ssl_disabled"] is True
    required = connect_kwargs(MySqlConnectionSettings("h", 1, "u", ssl_mode="required"))["ssl"]
    assert isinstance(required, ssl.SSLContext) and required.verify_mode == ssl.CERT_NONE
    identity = connect_kwargs(MySqlConnectionSettings("h", 1, "u", ssl_mode="verify_identity"))["ssl"]
    assert identity.verify_mode == ssl.CERT_REQUIRED and identity.check_hostname
    ca = connect_kwargs(MySqlConnectionSettings("h", 1, "u", ssl_mode="verify_ca"))["ssl"]
    assert ca.verify_mode == ssl.CERT_REQUIRED and not ca.check_hostname
    with pytest.raises(MySqlUnknownHostError, match="readable PEM files") as err:
        connect_kwargs(MySqlConnectionSettings("h", 1, "u", ssl_mode="verify_ca", ssl_ca="/nonexistent/ca.pem"))
    assert isinstance(err.value, Fatal)


# -- real MariaDB: connecting -----------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.mariadb
def test_connect_sets_the_session(mariadb_db: dict[str, Any]) -> None:
    conn = connect(settings_for(mariadb_db, initial_statements=("SET @a = 'x;y'", "SET @b = 2")))
    try:
        ((tz, charset, autocommit, a, b, db),) = query_rows(
            conn, "SELECT @@session.time_zone, @@character_set_client, @@autocommit, @a, @b, DATABASE()")
        assert (tz, charset, autocommit, a, b, db) == (SESSION_SETTINGS["time_zone"], "utf8mb4", 1, "x;y", 2,
                                                       mariadb_db["database"])
        ((global_tz,),) = query_rows(conn, "SELECT @@global.time_zone")
        assert global_tz == "+02:00"
    finally:
        conn.close()
    conn = connect(settings_for(mariadb_db), autocommit=False, initial_statements="SET @c = 'p;;q';; ; SET @d = 1")
    try:
        assert query_rows(conn, "SELECT @@autocommit, @c, @d") == [(0, "p;q", 1)]
        with unbuffered_cursor(conn) as cur:
            cur.execute("SELECT 1 UNION ALL SELECT 2")
            assert [r[0] for r in cur.fetchall_unbuffered()] == [1, 2]
    finally:
        conn.close()


@pytest.mark.integration
@pytest.mark.mariadb
def test_failing_initial_statement(mariadb_db: dict[str, Any]) -> None:
    with pytest.raises(MySqlError, match=r"database.initial.statements.*error 1064") as err:
        connect(settings_for(mariadb_db), initial_statements="SELEKT 1")
    assert not isinstance(err.value, Retriable | Fatal)


@pytest.mark.integration
@pytest.mark.mariadb
def test_wrong_password_is_fatal_and_not_printed(mariadb_db: dict[str, Any]) -> None:
    with pytest.raises(MySqlAuthError) as err:
        connect(settings_for(mariadb_db, password="Wr0ng-Secret"))
    assert isinstance(err.value, Fatal)
    assert "Wr0ng-Secret" not in str(err.value) and "Wr0ng-Secret" not in repr(err.value.attrs)
    assert f"root@127.0.0.1:{mariadb_db['port']}" in str(err.value)
    assert err.value.code == 1045


@pytest.mark.integration
@pytest.mark.mariadb
def test_unknown_database_is_fatal(mariadb_db: dict[str, Any]) -> None:
    with pytest.raises(MySqlAuthError, match=r"connection\.database"):
        connect(settings_for(mariadb_db, database="no_such_database"))


def test_unknown_host_is_fatal() -> None:
    with pytest.raises(MySqlUnknownHostError, match="does not resolve") as err:
        connect(MySqlConnectionSettings("no-such-host.invalid", 3306, "u", "pw", connect_timeout_s=3))
    assert isinstance(err.value, Fatal)


def test_refused_connection_is_retriable() -> None:
    with pytest.raises(MySqlConnectError) as err:
        connect(MySqlConnectionSettings("127.0.0.1", free_port(), "u", "Secret-1", connect_timeout_s=3))
    assert isinstance(err.value, Retriable)
    assert "Secret-1" not in str(err.value)


@pytest.mark.integration
@pytest.mark.mariadb
def test_tls_required_without_server_tls_is_fatal(mariadb_db: dict[str, Any]) -> None:
    with pytest.raises(MySqlUnknownHostError, match=r"database\.ssl\.mode") as err:
        connect(settings_for(mariadb_db, ssl_mode="required"))
    assert isinstance(err.value, Fatal)
    conn = connect(settings_for(mariadb_db, ssl_mode="disabled"))
    conn.close()


@pytest.mark.integration
@pytest.mark.mariadb
def test_killed_connection_is_retriable(mariadb_db: dict[str, Any]) -> None:
    victim = connect(settings_for(mariadb_db))
    killer = connect(settings_for(mariadb_db))
    try:
        query_rows(killer, "KILL %s", (victim.thread_id(),))
        with pytest.raises(pymysql.MySQLError) as raised:
            query_rows(victim, "SELECT 1")
        err = classify(raised.value, where="reading")
        assert isinstance(err, MySqlConnectError) and isinstance(err, Retriable)
    finally:
        killer.close()
        victim.close()


# -- real MariaDB: what the server is and where its binlog stands -----------------------------


@pytest.mark.integration
@pytest.mark.mariadb
def test_server_info(mariadb_db: dict[str, Any]) -> None:
    conn = connect(settings_for(mariadb_db))
    try:
        info = server_info(conn)
        ((version,),) = query_rows(conn, "SELECT VERSION()")
        assert info.flavor == "mariadb" and info.version_text == version
        assert info.version == parse_version(version)[1] and info.version >= (10, 5, 0)
        assert info.server_id == 1 and info.server_uuid is None and info.gtid_mode
    finally:
        conn.close()


@pytest.mark.integration
@pytest.mark.mariadb
def test_positions_and_gtids(mariadb_db: dict[str, Any]) -> None:
    conn = connect(settings_for(mariadb_db))
    try:
        info = server_info(conn)
        before = current_position(conn, info)
        query_rows(conn, "CREATE TABLE t (id INT PRIMARY KEY)")
        query_rows(conn, "INSERT INTO t VALUES (1), (2)")
        after = current_position(conn, info)
        assert (after.file, after.pos) > (before.file, before.pos)
        assert after.gtids and after.gtids != before.gtids
        domain, server, seq = (int(x) for x in after.gtids.split(",")[0].split("-"))
        assert (domain, server) == (0, 1) and seq >= 2
        state = gtid_state(conn, info)
        assert state.executed == after.gtids and state.purged == ""
        assert after.gtids in state.binlog_state and state.current_pos
        logs = binary_logs(conn)
        assert after.file in [f.name for f in logs] and all(f.size > 0 for f in logs)
        at = binlog_gtid_pos(conn, after.file, after.pos)
        assert at is not None and str(at) == after.gtids
        assert binlog_gtid_pos(conn, after.file, after.pos + 1) is None
        assert binlog_gtid_pos(conn, "mysql-bin.999999", 4) is None
        with conn.cursor() as cur:
            assert gtid_position_at(cur, info, after.file, after.pos) == after.gtids
            assert gtid_position_at(cur, info, after.file, after.pos + 1) == ""
        assert position_available(conn, info, file=after.file, gtids=after.gtids)
        assert position_available(conn, info, file=after.file, gtids=None)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def own_server() -> Iterator[LocalMariaDB]:
    """A private MariaDB whose binlogs these tests purge."""
    base = Path(tempfile.mkdtemp(prefix="cdc-mariadb-conn-"))
    server = LocalMariaDB(base / "data").start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def _purge_to_current(conn: Any) -> str:
    """FLUSH, then PURGE every older binlog (MariaDB purges after its binlog checkpoint: retry)."""
    query_rows(conn, "FLUSH BINARY LOGS")
    newest = binary_logs(conn)[-1].name
    deadline = time.monotonic() + 20
    while len(binary_logs(conn)) > 1:
        assert time.monotonic() < deadline, "MariaDB did not purge its binlogs"
        query_rows(conn, f"PURGE BINARY LOGS TO '{newest}'")
        time.sleep(0.05)
    return newest


@pytest.mark.integration
@pytest.mark.mariadb
def test_purged_positions_are_unavailable(own_server: LocalMariaDB) -> None:
    conn = connect(settings_for(own_server.connect_args()))
    try:
        info = server_info(conn)
        query_rows(conn, "CREATE DATABASE IF NOT EXISTS p")
        query_rows(conn, "CREATE TABLE p.t (id INT PRIMARY KEY)")
        query_rows(conn, "INSERT INTO p.t VALUES (1)")
        old = current_position(conn, info)
        query_rows(conn, "FLUSH BINARY LOGS")
        query_rows(conn, "INSERT INTO p.t VALUES (2)")
        assert position_available(conn, info, file=old.file, gtids=old.gtids)
        assert position_available(conn, info, file=old.file, gtids=None)
        newest = _purge_to_current(conn)
        query_rows(conn, "INSERT INTO p.t VALUES (3)")
        assert [f.name for f in binary_logs(conn)] == [newest]
        by_gtid = position_available(conn, info, file=old.file, gtids=old.gtids)
        assert not by_gtid and "transactions not captured yet were purged" in by_gtid.reason
        by_file = position_available(conn, info, file=old.file, gtids=None)
        assert not by_file and f"binlog file {old.file} is no longer on the server" in by_file.reason
        ignoring = position_available(conn, info, file=old.file, gtids=old.gtids, ignore_gtids=True)
        assert not ignoring and "no longer on the server" in ignoring.reason
        now = current_position(conn, info)
        assert position_available(conn, info, file=now.file, gtids=now.gtids)
        future = position_available(conn, info, file=now.file, gtids="0-1-999999")
        assert not future and "not the server the offset came from" in future.reason
        filtered = position_available(conn, info, file=old.file, gtids=old.gtids, gtid_filter=lambda s: s != "0-1")
        assert filtered
        with pytest.raises(BinlogUnavailableError):
            open_binlog_stream(settings_for(own_server.connect_args()), server_id=5401, file=old.file, pos=old.pos,
                               blocking=False, heartbeat_s=None, mariadb=True,
                               gtid_for_position=lambda f, p: _gtid_text(conn, f, p))
    finally:
        conn.close()


def _gtid_text(conn: Any, file: str, pos: int) -> str | None:
    found = binlog_gtid_pos(conn, file, pos)
    return None if found is None else str(found)


@pytest.mark.integration
@pytest.mark.mariadb
def test_binlog_stream_starts_at_the_position(own_server: LocalMariaDB) -> None:
    from pymysqlreplication.row_event import WriteRowsEvent

    settings = settings_for(own_server.connect_args())
    conn = connect(settings)
    try:
        info = server_info(conn)
        query_rows(conn, "CREATE DATABASE IF NOT EXISTS s")
        query_rows(conn, "CREATE TABLE s.t (id INT PRIMARY KEY, v VARCHAR(10))")
        query_rows(conn, "INSERT INTO s.t VALUES (1, 'before')")
        start = current_position(conn, info)
        query_rows(conn, "INSERT INTO s.t VALUES (2, 'after'), (3, 'after')")
        stream = open_binlog_stream(settings, server_id=5402, file=start.file, pos=start.pos, blocking=False,
                                    heartbeat_s=None, mariadb=True, annotate=True, only_events=[WriteRowsEvent],
                                    gtid_for_position=lambda f, p: _gtid_text(conn, f, p),
                                    report_as=report_host("conn-test"))
        try:
            rows = [row["values"] for event in stream for row in event.rows if event.table == "t"]
        finally:
            stream.close()
        assert rows == [{"id": 2, "v": "after"}, {"id": 3, "v": "after"}]
        from_gtid = open_binlog_stream(settings, server_id=5402, file="", pos=0, blocking=False, heartbeat_s=None,
                                       mariadb=True, gtids=start.gtids, only_events=[WriteRowsEvent])
        try:
            assert [r["values"]["id"] for e in from_gtid for r in e.rows if e.table == "t"] == [2, 3]
        finally:
            from_gtid.close()
        own = open_binlog_stream(settings, server_id=5402, file=start.file, pos=start.pos, blocking=False,
                                 heartbeat_s=None, mariadb=True, only_events=[WriteRowsEvent])
        try:
            assert [r["values"]["id"] for e in own for r in e.rows if e.table == "t"] == [2, 3]
        finally:
            own.close()
    finally:
        conn.close()
