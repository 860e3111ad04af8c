"""build_mysql_config: connection + options validated at once, with clear problem paths."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from cdc_sources.common.options import kafka_connect_warnings
from cdc_sources.mysql.config import MySqlSourceConfig, build_mysql_config, require_config, split_statements
from cdc_sources.mysql.model import ColumnDef
from cdc_sources.mysql.options import Flavor
from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.config import Connection

CONN = {"host": "db.example", "port": 3307, "user": "cdc", "password": "s3cret-pw", "database": "inventory"}
BASE = {"database.server.id": 5400}


def build(options: dict[str, Any] | None = None, connection: dict[str, Any] | None = None,
          flavor: Flavor = "mysql") -> tuple[MySqlSourceConfig | None, list[ConfigProblem]]:
    return build_mysql_config(name="shop", connection=CONN if connection is None else connection,
                              options={**BASE, **(options or {})}, path="sources[0]", flavor=flavor)


def ok(options: dict[str, Any] | None = None, connection: dict[str, Any] | None = None,
       flavor: Flavor = "mysql") -> MySqlSourceConfig:
    config, problems = build(options, connection, flavor)
    assert problems == []
    assert config is not None
    return config


def problems_of(options: dict[str, Any] | None = None, connection: dict[str, Any] | None = None,
                flavor: Flavor = "mysql") -> dict[str, str]:
    config, problems = build(options, connection, flavor)
    assert config is None
    return {p.path: p.message for p in problems}


# -- connection -------------------------------------------------------------------------------


def test_minimal_config() -> None:
    config = ok()
    c = config.connection
    assert (c.host, c.port, c.user, c.password, c.database) == ("db.example", 3307, "cdc", "s3cret-pw", "inventory")
    assert (c.ssl_mode, c.connect_timeout_s, c.query_timeout_s, c.initial_statements) == ("preferred", 30.0, 600.0, ())
    assert ok({"database.query.timeout.ms": 0}).connection.query_timeout_s is None
    assert (config.name, config.flavor, config.connector_name, config.server_id) == ("shop", "mysql", "mysql", 5400)
    assert config.snapshot_mode == "initial" and config.locking_mode == "minimal"
    assert config.skipped_operations == frozenset({"t"})
    assert config.gtid_filter is None
    assert config.warnings == ()


def test_password_never_prints() -> None:
    config = ok(connection={**CONN, "password": SecretStr("s3cret-pw")})
    assert config.connection.password == "s3cret-pw"
    assert "s3cret-pw" not in repr(config.connection)
    assert "s3cret-pw" not in config.connection.describe()
    assert config.connection.describe() == "cdc@db.example:3307"


def test_pipeline_connection_model_dump() -> None:
    conn = Connection(host="h", user="u", password=SecretStr("pw")).model_dump(exclude_none=True)
    config = ok(connection=conn)
    assert (config.connection.host, config.connection.port, config.connection.password) == ("h", 3306, "pw")
    assert config.connection.database is None


def test_connection_as_debezium_options() -> None:
    config = ok({"database.hostname": "h2", "database.port": 3310, "database.user": "u2",
                 "database.password": "pw2", "connect.timeout.ms": 2500}, connection={})
    c = config.connection
    assert (c.host, c.port, c.user, c.password, c.connect_timeout_s) == ("h2", 3310, "u2", "pw2", 2.5)


def test_connection_given_twice_or_missing() -> None:
    assert problems_of({"database.hostname": "other"}) == {
        "sources[0].options.database.hostname": "given twice: also as sources[0].connection.host"}
    assert ok(connection={**CONN, "port": "3310"}).connection.port == 3310
    found = problems_of(connection={"host": "h", "port": 70000})
    assert found["sources[0].connection.user"].startswith("is required")
    assert "1..65535" in found["sources[0].connection.port"]


def test_initial_statements() -> None:
    config = ok({"database.initial.statements": "SET @a=1; SET @b=';;x';;  ;"})
    assert config.connection.initial_statements == ("SET @a=1", "SET @b=';x';")
    assert split_statements(None) == () and split_statements("") == ()


@pytest.mark.parametrize(("flavor", "given", "mode"), [
    ("mysql", None, "preferred"),
    ("mysql", "verify_identity", "verify_identity"),
    ("mariadb", None, "disabled"),
    ("mariadb", "trust", "required"),
    ("mariadb", "verify-ca", "verify_ca"),
    ("mariadb", "VERIFY-FULL", "verify_identity"),
])
def test_ssl_modes(flavor: Flavor, given: str | None, mode: str) -> None:
    options = {"database.ssl.mode": given} if given else {}
    config = ok(options, flavor=flavor)
    assert config.connection.ssl_mode == mode
    connection = {**CONN, "sslmode": given} if given else CONN
    assert ok(connection=connection, flavor=flavor).connection.ssl_mode == mode


def test_ssl_mode_of_the_wrong_flavour() -> None:
    found = problems_of(connection={**CONN, "sslmode": "verify-ca"}, flavor="mysql")
    assert "verify_ca" in found["sources[0].connection.sslmode"]
    found = problems_of({"database.ssl.mode": "preferred"}, flavor="mariadb")
    assert "disable, trust, verify-ca, verify-full" in found["sources[0].options.database.ssl.mode"]
    config = ok({"database.ssl.truststore": "/ca.pem", "database.ssl.keystore": "/me.pem",
                 "database.ssl.keystore.password": "kpw"})
    assert (config.connection.ssl_ca, config.connection.ssl_cert_key) == ("/ca.pem", "/me.pem")
    assert "kpw" not in repr(config.connection)


# -- server id, prefix, modes -----------------------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    (None, "is required"),
    (0, "must be at least 1"),
    (-5, "must be at least 1"),
    ("abc", "must be a whole number"),
    (2**32, "at most 4294967295"),
])
def test_server_id(value: Any, message: str) -> None:
    options = {} if value is None else {"database.server.id": value}
    config, problems = build_mysql_config(name="shop", connection=CONN, options=options, path="s", flavor="mysql")
    assert config is None
    assert [p.path for p in problems] == ["s.options.database.server.id"]
    assert message in problems[0].message


def test_topic_prefix() -> None:
    assert ok({"topic.prefix": "a.b-c_D9"}).name == "a.b-c_D9"
    found = problems_of({"topic.prefix": "bad prefix/x"})
    assert "' ', '/'" in found["sources[0].options.topic.prefix"]
    config, problems = build_mysql_config(name="bad name", connection=CONN, options=BASE, path="s", flavor="mysql")
    assert config is None and "defaults to the source name" in problems[0].path


@pytest.mark.parametrize("mode", ["initial", "initial_only", "when_needed", "no_data", "recovery", "always",
                                  "configuration_based", "INITIAL"])
def test_snapshot_modes(mode: str) -> None:
    assert ok({"snapshot.mode": mode}).snapshot_mode == mode.lower()


def test_removed_snapshot_modes() -> None:
    config = ok({"snapshot.mode": "schema_only"})
    assert config.snapshot_mode == "no_data"
    assert any("schema_only was removed" in w for w in config.warnings)
    assert ok({"snapshot.mode": "schema_only_recovery"}).snapshot_mode == "recovery"
    never = ok({"snapshot.mode": "never"})
    assert never.snapshot_mode == "no_data"
    assert any("never was removed" in w and "read as no_data" in w for w in never.warnings)
    found = problems_of({"snapshot.mode": "sometimes"})
    assert "valid values: initial, initial_only" in found["sources[0].options.snapshot.mode"]


def test_custom_plugins_are_rejected() -> None:
    found = problems_of({"snapshot.mode": "custom", "snapshot.mode.custom.name": "x",
                         "snapshot.locking.mode": "custom", "snapshot.query.mode": "custom"})
    assert set(found) == {f"sources[0].options.{o}" for o in ("snapshot.mode", "snapshot.locking.mode",
                                                              "snapshot.query.mode")}
    assert all("Java class" in m for m in found.values())


def test_configuration_based_flags() -> None:
    config = ok({"snapshot.mode": "configuration_based", "snapshot.mode.configuration.based.snapshot.data": True,
                 "snapshot.mode.configuration.based.start.stream": "true"})
    assert config.configuration_based == {"snapshot.data": True, "snapshot.schema": False, "start.stream": True,
                                           "snapshot.on.schema.error": False, "snapshot.on.data.error": False}


@pytest.mark.parametrize(("flavor", "mode", "valid"), [
    ("mysql", "minimal_percona", True), ("mysql", "minimal_percona_no_table_locks", True), ("mysql", "none", True),
    ("mysql", "extended", True), ("mariadb", "minimal_percona", False), ("mariadb", "extended", True),
])
def test_locking_modes(flavor: Flavor, mode: str, valid: bool) -> None:
    config, _ = build({"snapshot.locking.mode": mode}, flavor=flavor)
    assert (config is not None) is valid


def test_deprecated_failure_mode_and_time_precision() -> None:
    config = ok({"event.processing.failure.handling.mode": "ignore", "inconsistent.schema.handling.mode": "skip",
                 "event.deserialization.failure.handling.mode": "warn"})
    assert config.opt("event.processing.failure.handling.mode") == "skip"
    assert any("ignore is deprecated" in w for w in config.warnings)
    assert any("event.deserialization.failure.handling.mode is deprecated" in w for w in config.warnings)
    found = problems_of({"time.precision.mode": "adaptive"})
    assert "no longer supported" in found["sources[0].options.time.precision.mode"]


# -- operations, heartbeats, topics, queues ---------------------------------------------------


def test_skipped_operations() -> None:
    assert ok({"skipped.operations": "none"}).skipped_operations == frozenset()
    assert ok({"skipped.operations": "c, U"}).skipped_operations == frozenset({"c", "u"})
    assert "invalid operations ['x']" in problems_of({"skipped.operations": "c,x"})[
        "sources[0].options.skipped.operations"]
    assert "cannot be combined" in problems_of({"skipped.operations": "none,c"})[
        "sources[0].options.skipped.operations"]


def test_topics_and_heartbeats() -> None:
    config = ok({"topic.prefix": "fulfillment", "heartbeat.interval.ms": 5000, "heartbeat.action.query": "SELECT 1"})
    assert config.heartbeat_topic == "__debezium-heartbeat.fulfillment"
    assert config.transaction_topic == "fulfillment.transaction"
    assert config.opt("heartbeat.interval.ms") == 5000
    config = ok({"topic.delimiter": "_", "topic.transaction": "tx", "topic.heartbeat.prefix": "hb"})
    assert (config.heartbeat_topic, config.transaction_topic) == ("hb_shop", "shop_tx")
    found = problems_of({"heartbeat.interval.ms": -1})
    assert "must be at least 0" in found["sources[0].options.heartbeat.interval.ms"]


def test_booleans_and_numbers() -> None:
    config = ok({"tombstones.on.delete": False, "provide.transaction.metadata": "true",
                 "include.schema.changes": "false",
                 "include.query": True, "binlog.buffer.size": 1000,
                 "schema.history.internal.skip.unparseable.ddl": True,
                 "schema.history.internal.store.only.captured.tables.ddl": "true",
                 "schema.history.internal.store.only.captured.databases.ddl": "true"})
    for name, value in (("tombstones.on.delete", False), ("provide.transaction.metadata", True),
                        ("include.schema.changes", False), ("include.query", True), ("binlog.buffer.size", 1000),
                        ("schema.history.internal.skip.unparseable.ddl", True),
                        ("schema.history.internal.store.only.captured.tables.ddl", True),
                        ("schema.history.internal.store.only.captured.databases.ddl", True)):
        assert config.opt(name) == value
    found = problems_of({"tombstones.on.delete": "yes", "binlog.buffer.size": -1, "connect.timeout.ms": 0})
    assert set(found) == {"sources[0].options.tombstones.on.delete", "sources[0].options.binlog.buffer.size",
                          "sources[0].options.connect.timeout.ms"}


def test_queue_sizes() -> None:
    assert problems_of({"max.queue.size": 100}) == {
        "sources[0].options.max.queue.size": "must be greater than max.batch.size"}
    assert "must be at least 1" in problems_of({"max.batch.size": 0})["sources[0].options.max.batch.size"]


def test_removed_and_unknown_options() -> None:
    found = problems_of({"database.server.name": "x", "table.whitelist": "a.b", "snapshot.lock.timeout": 1})
    assert found["sources[0].options.database.server.name"] == (
        "unknown option 'database.server.name': removed in Debezium 2.0; use topic.prefix")
    assert "use table.include.list" in found["sources[0].options.table.whitelist"]
    assert "did you mean 'snapshot.lock.timeout.ms'?" in found["sources[0].options.snapshot.lock.timeout"]


def test_inert_options_are_warned() -> None:
    options = {"schema.history.internal.kafka.topic": "h", "database.jdbc.driver": "x"}
    config = ok(options)
    # the Kafka-only ones are logged together by the pipeline (kafka_connect_warnings), not twice
    assert set(config.warnings) == {"option database.jdbc.driver has no effect when writing to bronze"}
    [kafka] = kafka_connect_warnings(options, source="my")
    assert "no effect here" in kafka and "schema.history.internal.kafka.topic" in kafka
    assert "database.jdbc.driver" not in kafka


def test_converter_options_are_kept_for_the_converters() -> None:
    config = ok({"converters": "boolean, zero", "boolean.type": "io.debezium.connector.binlog.converters."
                 "TinyIntOneToBooleanConverter", "boolean.selector": "db.t.*", "zero.type": "x"})
    assert config.converter_options == {"boolean.type": "io.debezium.connector.binlog.converters."
                                        "TinyIntOneToBooleanConverter", "boolean.selector": "db.t.*", "zero.type": "x"}
    assert config.opt("converters") == "boolean, zero"
    assert "sources[0].options.other.type" in problems_of({"converters": "boolean", "other.type": "x"})
    config = ok({"converters": "snapshot", "snapshot.mode": "no_data", "snapshot.type": "x"})
    assert config.snapshot_mode == "no_data" and config.converter_options == {"snapshot.type": "x"}


# -- filters and the policy -------------------------------------------------------------------


def test_database_and_table_filters() -> None:
    policy = ok({"database.include.list": "inv.*", "table.exclude.list": r"inventory\.secret.*"}).policy
    assert policy.captures("inventory", "orders") and policy.captures("INVENTORY", "Orders")
    assert not policy.captures("inventory", "secret_keys")
    assert not policy.captures("other", "orders")
    assert policy.captures_database("inventory") and not policy.captures_database("other")
    builtin = ok().policy
    for database in ("mysql", "sys", "performance_schema", "information_schema"):
        assert not builtin.captures(database, "user")
    assert ok({"table.ignore.builtin": False}).policy.captures("mysql", "user")
    signal = ok({"database.include.list": "inventory", "signal.data.collection": "ops.debezium_signal"}).policy
    assert signal.captures("ops", "debezium_signal") and not signal.captures("ops", "other")


def test_filter_problems_are_reported_with_paths() -> None:
    found = problems_of({"database.include.list": "a", "database.exclude.list": "b", "table.include.list": "a(",
                         "column.include.list": "", "message.key.columns": "nocolon",
                         "signal.data.collection": "justonepart", "snapshot.include.collection.list": "x["})
    assert set(found) == {f"sources[0].options.{o}" for o in (
        "database.exclude.list", "table.include.list", "column.include.list", "message.key.columns",
        "signal.data.collection", "snapshot.include.collection.list")}
    assert "cannot be used together with database.include.list" in found["sources[0].options.database.exclude.list"]


def _col(name: str, jdbc: int = 12, type_name: str = "VARCHAR", length: int | None = 20) -> ColumnDef:
    return ColumnDef(name, 1, type_name, type_name, jdbc, length=length)


def test_column_policy() -> None:
    policy = ok({"column.exclude.list": r"inv\.customers\.ssn", "column.mask.with.3.chars": r"inv\.customers\.name",
                 "column.truncate.to.4.chars": r"inv\.customers\.city",
                 "column.mask.hash.SHA-256.with.salt.pepper": r"inv\.customers\.email",
                 "column.propagate.source.type": r"inv\.customers\.age",
                 "datatype.propagate.source.type": r".+\.DECIMAL",
                 "message.key.columns": "inv.customers:email,name",
                 "snapshot.include.collection.list": r"inv\.customers",
                 "snapshot.select.statement.overrides.inv.customers": "SELECT * FROM inv.customers WHERE id > 0",
                 }).policy
    assert not policy.includes("inv", "customers", "ssn") and policy.includes("inv", "customers", "name")
    fn, params = policy.transform("inv", "customers", _col("name"))
    assert fn is not None and fn("Alice") == "***" and params == {"masked": "true"}
    fn, params = policy.transform("inv", "customers", _col("city"))
    assert fn is not None and fn("Amsterdam") == "Amst" and params == {"truncateLength": "4"}
    fn, _ = policy.transform("inv", "customers", _col("email", length=None))
    assert fn is not None and fn("a@b.c") != "a@b.c" and len(fn("a@b.c")) == 64
    fn, params = policy.transform("inv", "customers", _col("name", jdbc=4, type_name="INT"))
    assert fn is None and params == {"masked": "true"}
    assert policy.transform("inv", "customers", _col("other")) == (None, {})
    assert policy.propagates_type("inv", "customers", _col("age", 4, "INT"))
    assert policy.propagates_type("inv", "orders", _col("total", 3, "DECIMAL"))
    assert not policy.propagates_type("inv", "orders", _col("qty", 4, "INT"))
    assert policy.key_columns("inv", "customers", ["id", "name", "email"]) == ("email", "name")
    assert policy.key_columns("inv", "orders", ["id"]) is None
    assert policy.snapshots("inv", "customers") and not policy.snapshots("inv", "orders")
    assert policy.select_override("inv", "customers") == "SELECT * FROM inv.customers WHERE id > 0"
    assert policy.select_override("inv", "orders") is None


def test_gtid_source_filters() -> None:
    u1, u2 = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "24bc7850-2c16-11e6-a073-0242ac110002"
    includes = ok({"gtid.source.includes": f"{u1.upper()},ffff.*"}).gtid_filter
    assert includes is not None and includes(u1) and not includes(u2) and includes("ffff-x")
    excludes = ok({"gtid.source.excludes": "0-1"}, flavor="mariadb").gtid_filter
    assert excludes is not None and not excludes("0-1") and excludes("0-2") and excludes("10-1")
    found = problems_of({"gtid.source.includes": "a", "gtid.source.excludes": "b"})
    assert "cannot be used together" in found["sources[0].options.gtid.source.excludes"]
    assert "sources[0].options.gtid.source.includes" in problems_of({"gtid.source.includes": "a("})


def test_every_problem_at_once() -> None:
    config, problems = build_mysql_config(
        name="shop", connection={"host": "h"}, path="sources[2]", flavor="mariadb",
        options={"snapshot.mode": "sometimes", "snapshot.locking.mode": "minimal_percona", "max.queue.size": 10,
                 "table.include.list": "(", "bogus.option": 1})
    assert config is None
    assert {p.path for p in problems} == {
        "sources[2].options.snapshot.mode", "sources[2].options.snapshot.locking.mode",
        "sources[2].options.max.queue.size", "sources[2].options.table.include.list",
        "sources[2].options.bogus.option", "sources[2].connection.user", "sources[2].options.database.server.id"}
    with pytest.raises(ConfigError) as err:
        require_config(config, problems)
    assert "sources[2].options.snapshot.mode" in str(err.value)
    assert require_config(ok(), []).name == "shop"


def test_retry_delays_the_connector_reads_are_not_called_kafka_only() -> None:
    from cdc_sources.mysql.options import MYSQL_OPTIONS

    options = {"errors.retry.delay.initial.ms": 100, "errors.retry.delay.max.ms": 1000, "errors.tolerance": "all"}
    [kafka] = kafka_connect_warnings(options, source="my", declared=MYSQL_OPTIONS)
    assert "errors.tolerance" in kafka and "errors.retry.delay" not in kafka
    [undeclared] = kafka_connect_warnings(options, source="my")
    assert "errors.retry.delay.initial.ms" in undeclared


def test_signal_channel_and_watermarking_problems_are_reported_with_paths() -> None:
    found = problems_of({"signal.enabled.channels": "source,kafka",
                         "incremental.snapshot.watermarking.strategy": "insert_delete"})
    assert "unsupported channel 'kafka'" in found["sources[0].options.signal.enabled.channels"]
    assert "sources[0].options.incremental.snapshot.watermarking.strategy" not in found
    found = problems_of({"incremental.snapshot.watermarking.strategy": "insert_delete", "skipped.operations": "d"})
    assert "skipped.operations drops deletes" in \
        found["sources[0].options.incremental.snapshot.watermarking.strategy"]
    assert ok({"incremental.snapshot.watermarking.strategy": "insert_delete"}).opt(
        "incremental.snapshot.watermarking.strategy") == "insert_delete"
    assert ok({"signal.enabled.channels": "source,file", "signal.file": "/tmp/s.jsonl"}).opt("signal.file") == \
        "/tmp/s.jsonl"
