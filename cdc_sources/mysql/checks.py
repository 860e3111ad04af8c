"""Start-up checks: is the server set up for what this run will do?

Each check runs only when the run needs it, as Debezium's do: the binlog settings and
``REPLICATION SLAVE`` when the run streams (Debezium's ``validateBinlogConfiguration`` checks
``binlog_format`` and ``binlog_row_image`` only if the snapshotter streams); the lock and
``SELECT`` privileges when it snapshots (Debezium finds out while snapshotting). Every failed
check is reported at once, each saying what is wrong and what to set.

The checks are pure functions of `ServerFacts` (global variables, the user's grants, the
replicas the server lists), which `gather_facts` reads, so the MySQL-only ones are tested
without a MySQL server.

Beyond Debezium: ``binlog_row_metadata=FULL`` is required because python-mysql-replication,
the binlog reader, takes column names, signedness, character sets and ENUM/SET values from the
table-map events' optional metadata, which the server writes only with that setting (Debezium
parses DDL instead); and ``database.server.id`` must differ from the server's own id and from
the ids of the replicas the server lists, because the server disconnects a reader when another
one connects with the same id.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cdc_sources.mysql.config import MySqlSourceConfig
from cdc_sources.mysql.connection import ServerInfo, query_rows, report_host
from cdc_sources.mysql.errors import MySqlSetupError, WrongConnectorError
from cdc_sources.spi import SnapshotPlan

__all__ = [
    "CHECKED_VARIABLES",
    "CheckNeeds",
    "CheckResult",
    "Grants",
    "ReplicaHost",
    "ServerFacts",
    "check_flavor",
    "evaluate_checks",
    "gather_facts",
    "parse_grants",
    "run_startup_checks",
]

log = logging.getLogger(__name__)

CHECKED_VARIABLES = ("log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata",
                     "binlog_row_value_options", "gtid_mode", "binlog_annotate_row_events",
                     "binlog_rows_query_log_events")
"""The global variables the checks read."""


@dataclass(frozen=True)
class CheckNeeds:
    """What the run will do, so only the checks it needs run.

    Attributes:
        stream: read the binlog afterwards.
        snapshot: take a snapshot (schema or data): locks and ``SHOW DATABASES``.
        snapshot_data: read table rows (``SELECT``).
    """

    stream: bool = True
    snapshot: bool = True
    snapshot_data: bool = True

    @classmethod
    def for_run(cls, config: MySqlSourceConfig, plan: SnapshotPlan | None = None, *,
                offset_exists: bool = False) -> CheckNeeds:
        """The needs of a run with ``plan``, or the most a run in this ``snapshot.mode`` can need
        when the plan is not known yet. ``offset_exists``: a stored offset is resumed, so
        ``no_data`` takes no schema snapshot (``recovery`` always takes one)."""
        mode = config.snapshot_mode
        if plan is not None:
            schema_snapshot = plan.snapshot_data or mode == "recovery" or (mode == "no_data" and not offset_exists)
            return cls(stream=plan.stream, snapshot=schema_snapshot, snapshot_data=plan.snapshot_data)
        cb = config.configuration_based
        stream = cb.get("start.stream", False) if mode == "configuration_based" else mode != "initial_only"
        data = cb.get("snapshot.data", False) if mode == "configuration_based" else mode not in ("no_data", "recovery")
        return cls(stream=stream, snapshot=True, snapshot_data=data)


@dataclass(frozen=True)
class Grants:
    """The privileges ``SHOW GRANTS`` lists for the connector's user.

    Attributes:
        global_privileges: privileges ``ON *.*``, upper-case (``ALL`` for all privileges).
        scoped: privileges on databases, tables or columns, by object (``db.*``, ``db.t``).
        roles: roles granted to the user (their privileges are not listed).
    """

    global_privileges: frozenset[str] = frozenset()
    scoped: Mapping[str, frozenset[str]] = field(default_factory=dict)
    roles: tuple[str, ...] = ()

    def has_global(self, *names: str) -> bool:
        """Whether one of ``names`` (aliases of one privilege) is granted ``ON *.*``."""
        return "ALL" in self.global_privileges or any(n in self.global_privileges for n in names)

    def has_anywhere(self, *names: str) -> bool:
        """Whether one of ``names`` is granted globally or on some database, table or column."""
        return self.has_global(*names) or any("ALL" in p or any(n in p for n in names) for p in self.scoped.values())


@dataclass(frozen=True)
class ReplicaHost:
    """One replica the server lists (``SHOW SLAVE HOSTS`` / ``SHOW REPLICAS``)."""

    server_id: int
    host: str


@dataclass(frozen=True)
class ServerFacts:
    """What the checks look at.

    Attributes:
        variables: global variables by lower-case name (absent: the server has no such variable).
        grants: the user's grants; None when ``SHOW GRANTS`` failed.
        replicas: the registered replicas; None when the user may not list them.
    """

    variables: Mapping[str, str]
    grants: Grants | None
    replicas: tuple[ReplicaHost, ...] | None


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check.

    Attributes:
        name: what was checked (``binlog_format``, ``privilege RELOAD``...).
        ok: the check passed.
        message: what is wrong and what to set (empty when ok).
        severity: ``error`` stops the connector, ``warning`` is logged.
    """

    name: str
    ok: bool
    message: str = ""
    severity: Literal["error", "warning"] = "error"


def _result(name: str, ok: bool, message: str = "", severity: Literal["error", "warning"] = "error") -> CheckResult:
    """A check outcome; the message is kept only when the check failed."""
    return CheckResult(name, ok, "" if ok else message, severity)


# -- grants -----------------------------------------------------------------------------------

_GRANT_ON = re.compile(r"^\s*GRANT\s+(?P<privs>.+?)\s+ON\s+(?:(?:TABLE|FUNCTION|PROCEDURE|PACKAGE BODY|PACKAGE)\s+)?"
                       r"(?P<object>\S+)\s+TO\s", re.IGNORECASE | re.DOTALL)
_GRANT_ROLE = re.compile(r"^\s*GRANT\s+(?P<roles>.+?)\s+TO\s", re.IGNORECASE | re.DOTALL)


def _split_privileges(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [re.sub(r"\(.*\)", "", p).strip().upper() for p in out if p.strip()]


def parse_grants(lines: Sequence[str]) -> Grants:
    """Read ``SHOW GRANTS`` lines (MySQL and MariaDB syntax). The lines may hold password
    hashes: they are never kept or logged."""
    global_privs: set[str] = set()
    scoped: dict[str, set[str]] = {}
    roles: list[str] = []
    for line in lines:
        m = _GRANT_ON.match(line)
        if m is not None:
            privs = {"ALL" if p in ("ALL", "ALL PRIVILEGES") else p for p in _split_privileges(m["privs"])}
            obj = m["object"].replace("`", "")
            if obj == "*.*":
                global_privs |= privs
            else:
                scoped.setdefault(obj, set()).update(privs)
            continue
        r = _GRANT_ROLE.match(line)
        if r is not None:
            roles += [x.strip().replace("`", "").replace("'", "") for x in r["roles"].split(",") if x.strip()]
    return Grants(frozenset(global_privs), {k: frozenset(v) for k, v in scoped.items()}, tuple(roles))


# -- gathering --------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


def gather_facts(conn: Any, server: ServerInfo) -> ServerFacts:
    """Read the variables, grants and replica list the checks need."""
    import pymysql

    marks = ", ".join(["%s"] * len(CHECKED_VARIABLES))
    rows = query_rows(conn, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({marks})", CHECKED_VARIABLES)
    variables = {_text(name).lower(): _text(value) for name, value in rows}
    try:
        grants: Grants | None = parse_grants([_text(r[0]) for r in query_rows(conn, "SHOW GRANTS")])
    except pymysql.MySQLError:
        grants = None
    try:
        replicas: tuple[ReplicaHost, ...] | None = _replicas(conn, server)
    except pymysql.MySQLError:
        replicas = None
    return ServerFacts(variables, grants, replicas)


def _replicas(conn: Any, server: ServerInfo) -> tuple[ReplicaHost, ...]:
    with conn.cursor() as cur:
        cur.execute(server.replica_hosts_sql)
        names = [d[0].lower() for d in cur.description or ()]
        out = []
        for row in cur.fetchall():
            values = dict(zip(names, row, strict=False))
            out.append(ReplicaHost(int(values.get("server_id", 0) or 0), _text(values.get("host") or "")))
        return tuple(out)


# -- the checks -------------------------------------------------------------------------------


def _var(facts: ServerFacts, name: str) -> str | None:
    value = facts.variables.get(name)
    return None if value is None else value.strip()


def _binlog_checks(facts: ServerFacts, server: ServerInfo) -> list[CheckResult]:
    out: list[CheckResult] = []
    log_bin = (_var(facts, "log_bin") or "OFF").upper()
    out.append(_result("log_bin", log_bin in ("ON", "1"), (
        "the binary log is off (log_bin=OFF): start the server with log_bin (e.g. --log-bin=mysql-bin) and a "
        "server_id; the connector reads every change from the binlog")))
    fmt = (_var(facts, "binlog_format") or "").upper()
    maria = " (MariaDB's default MIXED writes many changes as statements, which cannot be captured)" \
        if server.flavor == "mariadb" else ""
    out.append(_result("binlog_format", fmt == "ROW", (
        f"binlog_format is {fmt or 'unknown'}, but the connector needs ROW{maria}: set binlog_format=ROW in the "
        "server configuration (SET GLOBAL binlog_format=ROW affects new sessions only) and restart the connector")))
    image = (_var(facts, "binlog_row_image") or "FULL").upper()
    out.append(_result("binlog_row_image", image == "FULL", (
        f"binlog_row_image is {image}, but the connector needs FULL (update and delete events carry every "
        "column): set binlog_row_image=FULL")))
    metadata = _var(facts, "binlog_row_metadata")
    minimum = "MariaDB 10.5" if server.flavor == "mariadb" else "MySQL 8.0.14"
    out.append(_result("binlog_row_metadata", (metadata or "").upper() == "FULL", (
        f"binlog_row_metadata is {metadata.upper()}, but must be FULL" if metadata is not None
        else f"the server has no binlog_row_metadata setting ({minimum} or later is needed)") + (
        ": the binlog reader (python-mysql-replication) takes column names, signedness, character sets and "
        "ENUM/SET values from the table-map metadata the server writes only with binlog_row_metadata=FULL; "
        "set binlog_row_metadata=FULL")))
    if server.flavor == "mysql":
        value_options = (_var(facts, "binlog_row_value_options") or "").upper()
        out.append(_result("binlog_row_value_options", "PARTIAL_JSON" not in value_options, (
            "binlog_row_value_options=PARTIAL_JSON makes JSON updates partial diffs the connector cannot "
            "apply: SET GLOBAL binlog_row_value_options=''")))
    return out


def _privilege(grants: Grants, name: str, ok: bool, message: str, severity: Literal["error", "warning"] = "error",
               ) -> CheckResult:
    if not ok and grants.roles and severity == "error":
        return _result(f"privilege {name}", False, (
            f"{message} (it may come from role(s) {', '.join(grants.roles)}, whose privileges SHOW GRANTS does not "
            "list; if so, make the role a default role)"), "warning")
    return _result(f"privilege {name}", ok, message, severity)


def _privilege_checks(grants: Grants, server: ServerInfo, config: MySqlSourceConfig,
                      needs: CheckNeeds) -> list[CheckResult]:
    user = config.connection.user
    client = ("REPLICATION CLIENT", "BINLOG MONITOR", "SUPER")
    grant = "BINLOG MONITOR" if server.flavor == "mariadb" else "REPLICATION CLIENT"
    client_name = "BINLOG MONITOR (REPLICATION CLIENT)" if server.flavor == "mariadb" else "REPLICATION CLIENT"
    out = [_privilege(grants, client_name, grants.has_global(*client), (
        f"user {user!r} lacks {client_name} ON *.*, needed to read the binlog position and list the binlog files "
        f"(SHOW MASTER STATUS, SHOW BINARY LOGS): GRANT {grant} ON *.* TO ..."))]
    if needs.stream:
        out.append(_privilege(grants, "REPLICATION SLAVE",
                              grants.has_global("REPLICATION SLAVE", "REPLICATION REPLICA"), (
                                  f"user {user!r} lacks REPLICATION SLAVE ON *.*, needed to read the binlog: "
                                  "GRANT REPLICATION SLAVE ON *.* TO ...")))
    if needs.snapshot_data:
        out.append(_privilege(grants, "SELECT", grants.has_anywhere("SELECT"), (
            f"user {user!r} has no SELECT privilege, needed to read the tables in the snapshot: "
            "GRANT SELECT ON *.* (or ON <database>.*) TO ...")))
    if needs.snapshot:
        out.append(_privilege(grants, "SHOW DATABASES", grants.has_global("SHOW DATABASES"), (
            f"user {user!r} lacks SHOW DATABASES ON *.*; the snapshot then sees only databases the user has other "
            "privileges on"), "warning"))
        out.extend(_lock_checks(grants, config, user))
    return out


def _lock_checks(grants: Grants, config: MySqlSourceConfig, user: str) -> list[CheckResult]:
    mode = config.locking_mode
    if mode in ("minimal", "extended"):
        if grants.has_global("RELOAD"):
            return [_result("privilege RELOAD", True)]
        if grants.has_anywhere("LOCK TABLES"):
            return [_result("privilege RELOAD", False, (
                f"user {user!r} lacks RELOAD, so the snapshot cannot take the global read lock (FLUSH TABLES WITH "
                "READ LOCK) and locks each captured table instead (LOCK TABLES), which blocks writes to them until "
                "the snapshot ends; GRANT RELOAD ON *.* to use the global lock"), "warning")]
        return [_privilege(grants, "RELOAD or LOCK TABLES", False, (
            f"user {user!r} has neither RELOAD (for the global read lock) nor LOCK TABLES (for the table-lock "
            f"fallback), so snapshot.locking.mode={mode} cannot lock: GRANT RELOAD ON *.* TO ... (or LOCK TABLES on "
            "the captured databases), or set snapshot.locking.mode=none if no DDL runs during snapshots"))]
    if mode in ("minimal_percona", "minimal_percona_no_table_locks"):
        ok = grants.has_global("BACKUP_ADMIN", "RELOAD")
        return [_privilege(grants, "BACKUP_ADMIN", ok, (
            f"user {user!r} lacks BACKUP_ADMIN (Percona 8) / RELOAD, needed for LOCK TABLES FOR BACKUP "
            f"(snapshot.locking.mode={mode})"), "warning")]
    return []


def _server_id_checks(facts: ServerFacts, server: ServerInfo, config: MySqlSourceConfig) -> list[CheckResult]:
    sid = config.server_id
    out = [_result("database.server.id", sid != server.server_id, (
        f"database.server.id={sid} is the server's own server_id; choose another number (unique among the "
        "server's replicas)"))]
    if facts.replicas is None:
        return out
    own = report_host(config.name)
    for replica in facts.replicas:
        if replica.server_id != sid:
            continue
        if replica.host == own:
            out.append(_result("database.server.id in use", False, (
                f"a binlog reader of this connector ({own}) is still registered with server id {sid}, probably "
                "from a previous run; the server drops it when this run connects"), "warning"))
        else:
            out.append(_result("database.server.id in use", False, (
                f"another replica ({replica.host or 'no host reported'}) is connected with server id {sid}: two "
                "binlog readers with one id disconnect each other; set a different database.server.id")))
    return out


def evaluate_checks(facts: ServerFacts, server: ServerInfo, config: MySqlSourceConfig,
                    needs: CheckNeeds) -> list[CheckResult]:
    """Every check this run needs, passed or not (pure)."""
    out: list[CheckResult] = []
    if needs.stream:
        out += _binlog_checks(facts, server)
        out += _server_id_checks(facts, server, config)
        if config.opt("include.query"):
            out.append(_query_log_check(facts, server))
        if config.opt("read.only") and server.flavor == "mysql":
            out.append(_result("read_only_snapshots", False, (
                "read.only=true on MySQL: no incremental snapshot can run (read-only ones are built for MariaDB "
                "and PostgreSQL only); execute-snapshot signals and tables added to the filters are logged and "
                "skipped"), "warning"))
    if facts.grants is None:
        out.append(_result("privileges", False, "SHOW GRANTS failed, so the privileges were not checked",
                               "warning"))
    else:
        out += _privilege_checks(facts.grants, server, config, needs)
    return out


def _query_log_check(facts: ServerFacts, server: ServerInfo) -> CheckResult:
    if server.flavor == "mariadb":
        on = (_var(facts, "binlog_annotate_row_events") or "OFF").upper() in ("ON", "1")
        return _result("binlog_annotate_row_events", on, (
            "include.query=true, but binlog_annotate_row_events is OFF, so source.query stays empty: set "
            "binlog_annotate_row_events=ON"), "warning")
    on = (_var(facts, "binlog_rows_query_log_events") or "OFF").upper() in ("ON", "1")
    return _result("binlog_rows_query_log_events", on, (
        "include.query=true, but binlog_rows_query_log_events is OFF, so source.query stays empty: set "
        "binlog_rows_query_log_events=ON"), "warning")


def check_flavor(config: MySqlSourceConfig, server: ServerInfo) -> None:
    """Refuse a server of the other flavour than the source's ``connector:`` (pure).

    Raises:
        WrongConnectorError: ``connector: mysql`` at a MariaDB server, or ``connector: mariadb``
            at a MySQL server (a configuration error: exit 2).
    """
    if server.flavor != config.flavor:
        raise WrongConnectorError(config.name, config.flavor, server.flavor, server.describe(),
                                  config.connection.describe())


def run_startup_checks(conn: Any, config: MySqlSourceConfig, server: ServerInfo,
                       needs: CheckNeeds | None = None) -> list[CheckResult]:
    """Run the checks this run needs; log the warnings and return every result.

    Args:
        conn: an open SQL connection of the connector's user.
        config: the connector configuration.
        server: the detected server.
        needs: what the run does; None assumes the most ``snapshot.mode`` can need
            (`CheckNeeds.for_run`).

    Raises:
        MySqlSetupError: with every failed error-level check.
    """
    needs = needs if needs is not None else CheckNeeds.for_run(config)
    results = evaluate_checks(gather_facts(conn, server), server, config, needs)
    for r in results:
        if not r.ok and r.severity == "warning":
            log.warning("%s: %s", config.name, r.message)
    errors = [r for r in results if not r.ok and r.severity == "error"]
    if errors:
        lines = "".join(f"\n  - {r.message}" for r in errors)
        where = f"{server.describe()} at {config.connection.describe()}"
        raise MySqlSetupError(f"{where} is not set up for change data capture:{lines}",
                              problems=tuple(r.name for r in errors))
    return results
