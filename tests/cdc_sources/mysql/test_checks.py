"""Start-up checks: binlog settings, privileges and server ids, each only when the run needs it.

Real MariaDB servers of this module's own (their global settings and users change), and pure
tests of the MySQL-only checks over `ServerFacts`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdc_sources.mysql.checks import (
    CheckNeeds,
    CheckResult,
    Grants,
    ReplicaHost,
    ServerFacts,
    check_flavor,
    evaluate_checks,
    gather_facts,
    parse_grants,
    run_startup_checks,
)
from cdc_sources.mysql.config import MySqlSourceConfig, build_mysql_config
from cdc_sources.mysql.connection import (
    ServerInfo,
    connect,
    open_binlog_stream,
    query_rows,
    report_host,
    server_info,
)
from cdc_sources.mysql.errors import MySqlSetupError
from cdc_sources.spi import ConfigError, Fatal, SnapshotPlan
from pipelines.local_mariadb import LocalMariaDB

GOOD_VARIABLES = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}
MYSQL = ServerInfo("mysql", (8, 0, 36), "8.0.36", 1, "3e11fa47-71ca-11e1-9e33-c80aa9429562", gtid_mode=False)
MARIADB = ServerInfo("mariadb", (10, 11, 6), "10.11.6-MariaDB", 1)
ALL = Grants(frozenset({"ALL"}))


def make_config(port: int = 3306, user: str = "root", password: str = "", flavor: Any = "mariadb",
                **options: Any) -> MySqlSourceConfig:
    config, problems = build_mysql_config(
        name="checks", connection={"host": "127.0.0.1", "port": port, "user": user, "password": password},
        options={"database.server.id": 5400, **options}, path="s", flavor=flavor)
    assert problems == [] and config is not None
    return config


def failed(results: list[CheckResult], severity: str = "error") -> dict[str, str]:
    return {r.name: r.message for r in results if not r.ok and r.severity == severity}


# -- pure: the connector matches the server --------------------------------------------------


@pytest.mark.parametrize(("declared", "server", "needed"), [("mysql", MARIADB, "mariadb"), ("mariadb", MYSQL, "mysql")])
def test_a_server_of_the_other_flavour_is_a_config_error_naming_the_connector_to_use(declared, server, needed):
    with pytest.raises(ConfigError) as info:
        check_flavor(make_config(flavor=declared), server)
    text = str(info.value)
    assert f"`connector: {declared}`" in text and f"set `connector: {needed}`" in text, text
    assert server.describe() in text and "root@127.0.0.1:3306" in text, text
    assert isinstance(info.value, Fatal)


def test_a_server_of_the_declared_flavour_passes():
    check_flavor(make_config(flavor="mysql"), MYSQL)
    check_flavor(make_config(flavor="mariadb"), MARIADB)


# -- pure: grants -----------------------------------------------------------------------------


def test_parse_grants() -> None:
    grants = parse_grants([
        "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `cdc`@`%` "
        "IDENTIFIED BY PASSWORD '*A4B6157319038724E3560894F7F932C8886EBFCF'",
        "GRANT LOCK TABLES ON `inventory`.* TO `cdc`@`%`",
        "GRANT SELECT (`id`, `name`), INSERT ON `inventory`.`customers` TO `cdc`@`%`",
        "GRANT EXECUTE ON PROCEDURE `inventory`.`p` TO `cdc`@`%`",
        "GRANT `cdc_role` TO `cdc`@`%`",
        "GRANT `r1`@`%`,`r2`@`%` TO `cdc`@`%`",
        "GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION",
    ])
    assert grants.global_privileges == {"SELECT", "RELOAD", "SHOW DATABASES", "REPLICATION SLAVE", "BINLOG MONITOR"}
    assert grants.scoped["inventory.*"] == {"LOCK TABLES"}
    assert grants.scoped["inventory.customers"] == {"SELECT", "INSERT"}
    assert grants.scoped["inventory.p"] == {"EXECUTE"}
    assert grants.roles == ("cdc_role", "r1@%", "r2@%")
    assert grants.has_global("RELOAD") and not grants.has_global("LOCK TABLES")
    assert grants.has_anywhere("LOCK TABLES") and not grants.has_anywhere("SUPER")
    assert "A4B6157319038724" not in repr(grants)


def test_parse_grants_mysql8_and_all() -> None:
    grants = parse_grants([
        "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`",
        "GRANT BACKUP_ADMIN,REPLICATION_SLAVE_ADMIN ON *.* TO `cdc`@`%`",
    ])
    assert grants.has_global("REPLICATION CLIENT") and grants.has_global("BACKUP_ADMIN")
    everything = parse_grants(["GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"])
    assert everything.has_global("RELOAD") and everything.has_anywhere("LOCK TABLES")
    db_all = parse_grants(["GRANT ALL ON `shop`.* TO `u`@`%`"])
    assert db_all.has_anywhere("SELECT") and not db_all.has_global("SELECT")
    assert parse_grants(["GRANT USAGE ON *.* TO `u`@`%`"]).global_privileges == {"USAGE"}


# -- pure: which checks run -------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "plan", "needs"), [
    ("initial", None, CheckNeeds(True, True, True)),
    ("initial_only", None, CheckNeeds(False, True, True)),
    ("no_data", None, CheckNeeds(True, True, False)),
    ("recovery", None, CheckNeeds(True, True, False)),
    ("initial", SnapshotPlan(False, True, "resume"), CheckNeeds(True, False, False)),
    ("initial", SnapshotPlan(True, True, "fresh"), CheckNeeds(True, True, True)),
    ("initial_only", SnapshotPlan(True, False, "fresh"), CheckNeeds(False, True, True)),
    ("no_data", SnapshotPlan(False, True, "schema"), CheckNeeds(True, True, False)),
])
def test_needs_follow_the_mode_and_plan(mode: str, plan: SnapshotPlan | None, needs: CheckNeeds) -> None:
    assert CheckNeeds.for_run(make_config(**{"snapshot.mode": mode}), plan) == needs


def test_no_data_resuming_takes_no_schema_snapshot() -> None:
    config = make_config(**{"snapshot.mode": "no_data"})
    plan = SnapshotPlan(False, True, "resume")
    assert CheckNeeds.for_run(config, plan, offset_exists=True) == CheckNeeds(True, False, False)
    recovery = make_config(**{"snapshot.mode": "recovery"})
    assert CheckNeeds.for_run(recovery, plan, offset_exists=True) == CheckNeeds(True, True, False)


def test_needs_of_configuration_based_mode() -> None:
    config = make_config(**{"snapshot.mode": "configuration_based",
                            "snapshot.mode.configuration.based.snapshot.data": True})
    assert CheckNeeds.for_run(config) == CheckNeeds(stream=False, snapshot=True, snapshot_data=True)


# -- pure: MySQL-only and edge checks ---------------------------------------------------------


def facts(variables: dict[str, str] | None = None, grants: Grants | None = ALL,
          replicas: tuple[ReplicaHost, ...] | None = ()) -> ServerFacts:
    return ServerFacts({**GOOD_VARIABLES, **(variables or {})}, grants, replicas)


def test_mysql_partial_json_and_old_servers() -> None:
    config = make_config(flavor="mysql")
    assert failed(evaluate_checks(facts(), MYSQL, config, CheckNeeds())) == {}
    found = failed(evaluate_checks(facts({"binlog_row_value_options": "PARTIAL_JSON"}), MYSQL, config, CheckNeeds()))
    assert "SET GLOBAL binlog_row_value_options=''" in found["binlog_row_value_options"]
    old = ServerFacts({k: v for k, v in GOOD_VARIABLES.items() if k != "binlog_row_metadata"}, ALL, ())
    found = failed(evaluate_checks(old, MYSQL, config, CheckNeeds()))
    assert "MySQL 8.0.14 or later" in found["binlog_row_metadata"]
    assert "python-mysql-replication" in found["binlog_row_metadata"]
    no_image = ServerFacts({k: v for k, v in GOOD_VARIABLES.items() if k != "binlog_row_image"}, ALL, ())
    assert "binlog_row_image" not in failed(evaluate_checks(no_image, MYSQL, config, CheckNeeds()))
    maria = failed(evaluate_checks(facts({"binlog_row_value_options": "PARTIAL_JSON"}), MARIADB, make_config(),
                                   CheckNeeds()))
    assert maria == {}


def test_read_only_on_mysql_warns_that_no_incremental_snapshot_can_run() -> None:
    config = make_config(flavor="mysql", **{"read.only": True})
    found = failed(evaluate_checks(facts(), MYSQL, config, CheckNeeds()), "warning")
    assert "MariaDB and PostgreSQL only" in found["read_only_snapshots"]
    assert failed(evaluate_checks(facts(), MYSQL, config, CheckNeeds())) == {}  # a warning, not an error
    with_gtids = ServerInfo("mysql", (8, 0, 36), "8.0.36", 1, "u", gtid_mode=True)
    assert "read_only_snapshots" in failed(evaluate_checks(facts(), with_gtids, config, CheckNeeds()), "warning")
    assert failed(evaluate_checks(facts(), MARIADB, make_config(**{"read.only": True}), CheckNeeds()), "warning") == {}


def test_include_query_warns_without_the_query_log() -> None:
    mysql = evaluate_checks(facts(), MYSQL, make_config(flavor="mysql", **{"include.query": True}), CheckNeeds())
    assert "binlog_rows_query_log_events=ON" in failed(mysql, "warning")["binlog_rows_query_log_events"]
    maria = evaluate_checks(facts({"binlog_annotate_row_events": "OFF"}), MARIADB,
                            make_config(**{"include.query": True}), CheckNeeds())
    assert "binlog_annotate_row_events=ON" in failed(maria, "warning")["binlog_annotate_row_events"]
    on = evaluate_checks(facts({"binlog_annotate_row_events": "ON"}), MARIADB, make_config(**{"include.query": True}),
                         CheckNeeds())
    assert failed(on, "warning") == {}


def test_mysql_privilege_names_and_unreadable_grants() -> None:
    grants = parse_grants(["GRANT SELECT, RELOAD, SHOW DATABASES ON *.* TO `cdc`@`%`"])
    found = failed(evaluate_checks(facts(grants=grants), MYSQL, make_config(flavor="mysql"), CheckNeeds()))
    assert "GRANT REPLICATION CLIENT ON *.*" in found["privilege REPLICATION CLIENT"]
    assert "privilege REPLICATION SLAVE" in found
    unknown = evaluate_checks(facts(grants=None), MYSQL, make_config(flavor="mysql"), CheckNeeds())
    assert "SHOW GRANTS failed" in failed(unknown, "warning")["privileges"]
    assert failed(unknown) == {}


def test_percona_backup_locks() -> None:
    grants = parse_grants(["GRANT SELECT, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `u`@`%`"])
    config = make_config(flavor="mysql", **{"snapshot.locking.mode": "minimal_percona"})
    assert "BACKUP_ADMIN" in failed(evaluate_checks(facts(grants=grants), MYSQL, config, CheckNeeds()),
                                    "warning")["privilege BACKUP_ADMIN"]


def test_server_id_against_listed_replicas() -> None:
    config = make_config()
    replicas = (ReplicaHost(5400, "etl-box"), ReplicaHost(7, "other"))
    found = failed(evaluate_checks(facts(replicas=replicas), MARIADB, config, CheckNeeds()))
    assert "another replica (etl-box) is connected with server id 5400" in found["database.server.id in use"]
    ours = (ReplicaHost(5400, report_host("checks")),)
    results = evaluate_checks(facts(replicas=ours), MARIADB, config, CheckNeeds())
    assert failed(results) == {}
    assert "previous run" in failed(results, "warning")["database.server.id in use"]
    assert failed(evaluate_checks(facts(replicas=None), MARIADB, config, CheckNeeds())) == {}
    own = failed(evaluate_checks(facts(), MARIADB, make_config(**{"database.server.id": 1}), CheckNeeds()))
    assert "the server's own server_id" in own["database.server.id"]
    assert failed(evaluate_checks(facts(replicas=replicas), MARIADB, config, CheckNeeds(stream=False))) == {}


# -- real MariaDB -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[LocalMariaDB]:
    """A private MariaDB whose global settings and users these tests change."""
    base = Path(tempfile.mkdtemp(prefix="cdc-mariadb-checks-"))
    srv = LocalMariaDB(base / "data").start()
    try:
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def root(server: LocalMariaDB) -> Iterator[Any]:
    conn = connect(make_config(server.port).connection)
    try:
        yield conn
    finally:
        conn.close()


def run_as(server: LocalMariaDB, user: str = "root", password: str = "", needs: CheckNeeds | None = None,
           **options: Any) -> list[CheckResult]:
    config = make_config(server.port, user, password, **options)
    conn = connect(config.connection)
    try:
        return run_startup_checks(conn, config, server_info(conn), needs)
    finally:
        conn.close()


@pytest.mark.integration
@pytest.mark.mariadb
def test_a_well_set_up_server_passes(server: LocalMariaDB) -> None:
    results = run_as(server)
    assert [r for r in results if not r.ok] == []
    assert {"log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata", "database.server.id",
            "privilege REPLICATION SLAVE", "privilege RELOAD"} <= {r.name for r in results}


@pytest.mark.integration
@pytest.mark.mariadb
def test_binlog_settings_are_all_reported(server: LocalMariaDB, root: Any) -> None:
    changes = {"binlog_format": "MIXED", "binlog_row_image": "MINIMAL", "binlog_row_metadata": "MINIMAL"}
    for name, value in changes.items():
        query_rows(root, f"SET GLOBAL {name} = '{value}'")
    try:
        with pytest.raises(MySqlSetupError) as err:
            run_as(server)
        message = str(err.value)
        assert isinstance(err.value, Fatal)
        assert f"MariaDB {server_info(root).version_text} at root@127.0.0.1:{server.port}" in message
        assert "binlog_format is MIXED, but the connector needs ROW (MariaDB's default MIXED" in message
        assert "binlog_row_image is MINIMAL, but the connector needs FULL" in message
        assert "binlog_row_metadata is MINIMAL, but must be FULL" in message
        assert err.value.problems == ("binlog_format", "binlog_row_image", "binlog_row_metadata")
        snapshot_only = run_as(server, **{"snapshot.mode": "initial_only"})
        assert failed(snapshot_only) == {}
    finally:
        for name, value in (("binlog_format", "ROW"), ("binlog_row_image", "FULL"), ("binlog_row_metadata", "FULL")):
            query_rows(root, f"SET GLOBAL {name} = '{value}'")


@pytest.mark.integration
@pytest.mark.mariadb
def test_binlog_off_and_mixed_from_the_server_settings() -> None:
    base = Path(tempfile.mkdtemp(prefix="cdc-mariadb-nobinlog-"))
    srv = LocalMariaDB(base / "data", settings={"log-bin": None, "binlog-format": "MIXED"}).start()
    try:
        with pytest.raises(MySqlSetupError) as err:
            run_as(srv)
        assert err.value.problems == ("log_bin", "binlog_format")
        assert "the binary log is off (log_bin=OFF): start the server with log_bin" in str(err.value)
        assert failed(run_as(srv, needs=CheckNeeds(stream=False))) == {}
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)


def _user(root: Any, name: str, grants: list[str]) -> None:
    query_rows(root, f"DROP USER IF EXISTS '{name}'@'%'")
    query_rows(root, f"CREATE USER '{name}'@'%' IDENTIFIED BY 'Pw-{name}-9'")
    for grant in grants:
        query_rows(root, grant.format(user=f"'{name}'@'%'"))


@pytest.mark.integration
@pytest.mark.mariadb
def test_limited_grants_are_reported(server: LocalMariaDB, root: Any) -> None:
    query_rows(root, "CREATE DATABASE IF NOT EXISTS shop")
    _user(root, "limited", ["GRANT SELECT ON shop.* TO {user}"])
    with pytest.raises(MySqlSetupError) as err:
        run_as(server, "limited", "Pw-limited-9")
    message = str(err.value)
    assert err.value.problems == ("privilege BINLOG MONITOR (REPLICATION CLIENT)", "privilege REPLICATION SLAVE",
                                  "privilege RELOAD or LOCK TABLES")
    assert "GRANT BINLOG MONITOR ON *.* TO" in message and "GRANT REPLICATION SLAVE ON *.*" in message
    assert "snapshot.locking.mode=minimal cannot lock" in message
    assert "Pw-limited-9" not in message
    with pytest.raises(MySqlSetupError) as err:
        run_as(server, "limited", "Pw-limited-9", needs=CheckNeeds(stream=False),
               **{"snapshot.locking.mode": "none"})
    assert err.value.problems == ("privilege BINLOG MONITOR (REPLICATION CLIENT)",)


@pytest.mark.integration
@pytest.mark.mariadb
def test_debezium_grants_pass(server: LocalMariaDB, root: Any) -> None:
    _user(root, "dbz", ["GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO {user}"])
    lines = [r[0] for r in query_rows(root, "SHOW GRANTS FOR 'dbz'@'%'")]
    assert "BINLOG MONITOR" in lines[0]
    results = run_as(server, "dbz", "Pw-dbz-9")
    assert [r for r in results if not r.ok] == []


@pytest.mark.integration
@pytest.mark.mariadb
def test_table_lock_fallback_without_reload(server: LocalMariaDB, root: Any) -> None:
    _user(root, "nolock", ["GRANT SELECT, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR, LOCK TABLES ON *.* TO "
                           "{user}"])
    results = run_as(server, "nolock", "Pw-nolock-9")
    assert failed(results) == {}
    assert "locks each captured table instead (LOCK TABLES)" in failed(results, "warning")["privilege RELOAD"]
    assert "privilege RELOAD" not in {r.name for r in run_as(server, "nolock", "Pw-nolock-9",
                                                             **{"snapshot.locking.mode": "none"})}
    conn = connect(make_config(server.port, "nolock", "Pw-nolock-9").connection)
    try:
        grants = gather_facts(conn, MARIADB).grants
    finally:
        conn.close()
    assert grants is not None and grants.has_global("LOCK TABLES") and not grants.has_global("RELOAD")


@pytest.mark.integration
@pytest.mark.mariadb
def test_privileges_through_roles(server: LocalMariaDB, root: Any) -> None:
    query_rows(root, "DROP ROLE IF EXISTS cdc_role")
    query_rows(root, "CREATE ROLE cdc_role")
    query_rows(root, "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO cdc_role")
    _user(root, "viarole", ["GRANT cdc_role TO {user}"])
    inactive = run_as(server, "viarole", "Pw-viarole-9")
    assert failed(inactive) == {}
    warnings = failed(inactive, "warning")
    assert "role(s) cdc_role" in warnings["privilege REPLICATION SLAVE"]
    query_rows(root, "SET DEFAULT ROLE cdc_role FOR 'viarole'@'%'")
    active = run_as(server, "viarole", "Pw-viarole-9")
    assert [r for r in active if not r.ok] == []


@pytest.mark.integration
@pytest.mark.mariadb
def test_server_ids(server: LocalMariaDB, root: Any) -> None:
    with pytest.raises(MySqlSetupError, match="is the server's own server_id"):
        run_as(server, **{"database.server.id": 1})
    settings = make_config(server.port).connection
    other = open_binlog_stream(settings, server_id=6001, file="", pos=0, blocking=True, heartbeat_s=None,
                               mariadb=True, gtids="", report_as="etl-box")
    ours = open_binlog_stream(settings, server_id=6002, file="", pos=0, blocking=True, heartbeat_s=None,
                              mariadb=True, gtids="", report_as=report_host("checks"))
    try:
        assert other.fetchone() is not None and ours.fetchone() is not None
        listed = {(int(r[0]), r[1]) for r in query_rows(root, "SHOW SLAVE HOSTS")}
        assert {(6001, "etl-box"), (6002, report_host("checks"))} <= listed
        with pytest.raises(MySqlSetupError, match=r"another replica \(etl-box\) is connected with server id 6001"):
            run_as(server, **{"database.server.id": 6001})
        rerun = run_as(server, **{"database.server.id": 6002})
        assert "previous run" in failed(rerun, "warning")["database.server.id in use"]
        assert failed(run_as(server, **{"database.server.id": 6003})) == {}
    finally:
        other.close()
        ours.close()
