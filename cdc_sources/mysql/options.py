"""The MySQL and MariaDB connectors' options: Debezium 3.6.3's names and defaults.

Every property of Debezium 3.6.3's ``MySqlConnectorConfig`` (``ALL_FIELDS``) plus the shared
ones it reads from ``CommonConnectorConfig``, ``BinlogConnectorConfig`` and the topic naming
and schema history classes, with the defaults of the 3.6.3 jars (checked by
``tests/cdc_sources/mysql/test_options.py`` against the jar). Options without meaning for a
connector writing to bronze (Kafka, JMX, JDBC driver classes, OpenLineage) are accepted and
marked inert, so Debezium configurations move over unchanged.

``connector: mariadb`` uses Debezium's MariaDB connector (``MariaDbConnectorConfig``) where it
differs from the MySQL one:

- ``database.ssl.mode``: ``disable`` (default), ``trust``, ``verify-ca``, ``verify-full``
  (MariaDB Connector/J names) instead of MySQL's ``disabled``, ``preferred`` (default),
  ``required``, ``verify_ca``, ``verify_identity``;
- ``snapshot.locking.mode``: ``minimal`` (default), ``extended``, ``none``, ``custom``; the
  Percona backup-lock modes do not exist;
- ``sourceinfo.struct.maker`` defaults to the MariaDB struct maker (inert here), and events
  say ``source.connector: "mariadb"`` (see `connector_name`);
- ``gtid.source.includes``/``excludes`` match ``domain-server`` of MariaDB GTIDs instead of
  MySQL server UUIDs (`cdc_sources.mysql.gtid`).

Deliberate differences from Debezium, all stricter: see `STRICTER_MINIMUMS`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Literal

from cdc_sources.common.captured_tables import NEW_TABLES_SPEC
from cdc_sources.common.options import (
    ENGINE_INTERNAL_OPTIONS,
    KAFKA_CONNECT_OPTIONS,
    KAFKA_PREFIXES,
    RELATIONAL_PREFIXES,
    SCHEMA_HISTORY_STORE_OPTIONS,
    OptionSet,
    OptionSpec,
    PrefixSpec,
)
from cdc_sources.common.signal_options import WATERMARKING_DOC

__all__ = [
    "BUILTIN_DATABASES",
    "LOCKING_MODES",
    "MARIADB_OPTIONS",
    "MYSQL_OPTIONS",
    "REMOVED_OPTIONS",
    "SNAPSHOT_MODES",
    "SNAPSHOT_MODE_ALIASES",
    "SSL_MODES",
    "STRICTER_MINIMUMS",
    "Flavor",
    "connector_name",
    "options_for",
]

Flavor = Literal["mysql", "mariadb"]

S = OptionSpec

SNAPSHOT_MODES = ("initial", "initial_only", "when_needed", "no_data", "recovery", "always",
                  "configuration_based", "custom")
"""Debezium 3.6.3's ``snapshot.mode`` values (``custom`` is reported as unsupported by the config)."""

SNAPSHOT_MODE_ALIASES = MappingProxyType({"schema_only": "no_data", "schema_only_recovery": "recovery",
                                          "never": "no_data"})
"""Debezium 2.x names, removed in 3.x, accepted here for their 3.x replacements (with a warning).
``never`` read the binlog from its start without recording any structure, which cannot decode
tables whose DDL is no longer in the binlog; it is read as ``no_data`` (structure recorded, then
changes from now), as the PostgreSQL connector reads it."""

LOCKING_MODES: dict[Flavor, tuple[str, ...]] = {
    "mysql": ("minimal", "extended", "none", "minimal_percona", "minimal_percona_no_table_locks", "custom"),
    "mariadb": ("minimal", "extended", "none", "custom"),
}
"""``snapshot.locking.mode`` values per flavour."""

SSL_MODES: dict[Flavor, tuple[str, ...]] = {
    "mysql": ("disabled", "preferred", "required", "verify_ca", "verify_identity"),
    "mariadb": ("disable", "trust", "verify-ca", "verify-full"),
}
"""``database.ssl.mode`` values per flavour."""

_SSL_DEFAULT: dict[Flavor, str] = {"mysql": "preferred", "mariadb": "disable"}
_STRUCT_MAKER: dict[Flavor, str] = {
    "mysql": "io.debezium.connector.mysql.MySqlSourceInfoStructMaker",
    "mariadb": "io.debezium.connector.mariadb.MariaDbSourceInfoStructMaker",
}

BUILTIN_DATABASES = frozenset({"mysql", "performance_schema", "sys", "information_schema"})
"""The system databases ``table.ignore.builtin`` hides (Debezium's binlog connectors)."""

STRICTER_MINIMUMS = MappingProxyType({
    "database.port": 1,
    "database.query.timeout.ms": 0,
    "errors.max.retries": -1,
    "incremental.snapshot.chunk.size": 1,
    "snapshot.lock.timeout.ms": 0,
})
"""Integer options Debezium accepts below these values (without a meaning); rejected here."""

REMOVED_OPTIONS = MappingProxyType({
    "database.server.name": "removed in Debezium 2.0; use topic.prefix",
    "database.history": "removed in Debezium 2.0; the schema history is kept in bronze",
    "database.history.kafka.topic": "removed in Debezium 2.0; the schema history is kept in bronze",
    "database.history.kafka.bootstrap.servers": "removed in Debezium 2.0; the schema history is kept in bronze",
    "database.history.skip.unparseable.ddl": "renamed in Debezium 2.0: schema.history.internal.skip.unparseable.ddl",
    "database.history.store.only.captured.tables.ddl":
        "renamed in Debezium 2.0: schema.history.internal.store.only.captured.tables.ddl",
    "database.whitelist": "removed in Debezium 2.0; use database.include.list",
    "database.blacklist": "removed in Debezium 2.0; use database.exclude.list",
    "table.whitelist": "removed in Debezium 2.0; use table.include.list",
    "table.blacklist": "removed in Debezium 2.0; use table.exclude.list",
    "column.whitelist": "removed in Debezium 2.0; use column.include.list",
    "column.blacklist": "removed in Debezium 2.0; use column.exclude.list",
    "snapshot.locking.minimal": "removed; use snapshot.locking.mode=minimal or extended",
    "snapshot.new.tables": "removed in Debezium 2.0; tables added to the filters are snapshotted incrementally "
                           "on restart: see snapshot.new.tables.mode",
    "gtid.new.channel.position": "removed in Debezium 2.0; new GTID channels always start at their first position",
    "database.ssl.keystore.type": "not a Debezium option; database.ssl.keystore takes a PEM file here",
})
"""Options Debezium no longer has, with what to use instead (shown instead of "unknown option")."""

_FAILURE_MODES = ("fail", "warn", "skip")
_IGNORE_IS_SKIP = MappingProxyType({"ignore": "skip"})
_ADJUSTMENT_MODES = ("none", "avro", "avro_unicode")


def _specs(flavor: Flavor) -> list[OptionSpec]:
    return [
        # connection (host/port/user/password may also be given in the `connection:` block)
        S("database.hostname"), S("database.port", "3306", "int", minimum=1),
        S("database.user"), S("database.password"),
        S("database.server.id", kind="int", minimum=1,
          doc="the numeric replication client id; required, unique among the server's replicas"),
        S("database.server.id.offset", "10000", "int", doc="server id offset for read-only incremental snapshots"),
        S("database.ssl.mode", _SSL_DEFAULT[flavor], "enum", SSL_MODES[flavor]),
        S("database.ssl.keystore", doc="PEM file with the client certificate and key (not a Java keystore)"),
        S("database.ssl.keystore.password"),
        S("database.ssl.truststore", doc="PEM file with the CA certificates (not a Java truststore)"),
        S("database.ssl.truststore.password", inert=True),
        S("database.initial.statements", doc="';'-separated SQL run on every SQL connection (';;' is a ';')"),
        S("database.query.timeout.ms", "600000", "int", minimum=0),
        S("database.jdbc.driver", "com.mysql.cj.jdbc.Driver", inert=True),
        S("database.protocol", "jdbc:mysql", inert=True),
        S("connect.timeout.ms", "30000", "int", minimum=1),
        S("connect.keep.alive", "true", "bool"),
        S("connect.keep.alive.interval.ms", "60000", "int", minimum=1),
        S("connection.validation.timeout.ms", "60000", "int", minimum=1, inert=True),
        S("use.nongraceful.disconnect", "false", "bool"),
        S("binlog.net.read.timeout", "0", "int", minimum=0),
        S("binlog.net.write.timeout", "0", "int", minimum=0),
        S("topic.prefix"), S("name"),
        S("connector.class", inert=True), S("tasks.max", "1", "int", inert=True),
        # filters and column transforms (validated by cdc_sources.common, Debezium's list syntax)
        S("database.include.list"), S("database.exclude.list"),
        S("table.include.list"), S("table.exclude.list"), S("table.ignore.builtin", "true", "bool"),
        S("column.include.list"), S("column.exclude.list"),
        S("message.key.columns"), S("column.propagate.source.type"), S("datatype.propagate.source.type"),
        S("gtid.source.includes"), S("gtid.source.excludes"),
        S("gtid.source.filter.dml.events", "true", "bool"),
        S("gtid.ignore.on.recovery", "false", "bool"),
        S("skipped.operations", "t"), S("skip.messages.without.change", "false", "bool"),
        S("tombstones.on.delete", "true", "bool"),
        # types
        S("decimal.handling.mode", "precise", "enum", ("precise", "double", "string")),
        S("bigint.unsigned.handling.mode", "long", "enum", ("long", "precise")),
        S("time.precision.mode", "adaptive_time_microseconds", "enum",
          ("adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds")),
        S("binary.handling.mode", "bytes", "enum", ("bytes", "base64", "base64-url-safe", "hex")),
        S("enable.time.adjuster", "true", "bool"),
        S("include.schema.comments", "false", "bool"),
        S("unavailable.value.placeholder", "__debezium_unavailable_value"),
        S("schema.name.adjustment.mode", "none", "enum", _ADJUSTMENT_MODES),
        S("field.name.adjustment.mode", "none", "enum", _ADJUSTMENT_MODES),
        S("converters", doc="custom converters; their own options are <name>.<property>"),
        # snapshots
        S("snapshot.mode", "initial", "enum", SNAPSHOT_MODES, aliases=SNAPSHOT_MODE_ALIASES),
        S("snapshot.mode.configuration.based.snapshot.data", "false", "bool"),
        S("snapshot.mode.configuration.based.snapshot.schema", "false", "bool"),
        S("snapshot.mode.configuration.based.start.stream", "false", "bool"),
        S("snapshot.mode.configuration.based.snapshot.on.schema.error", "false", "bool"),
        S("snapshot.mode.configuration.based.snapshot.on.data.error", "false", "bool"),
        S("snapshot.mode.custom.name"),
        S("snapshot.locking.mode", "minimal", "enum", LOCKING_MODES[flavor]),
        S("snapshot.locking.mode.custom.name"),
        S("snapshot.query.mode", "select_all", "enum", ("select_all", "custom")),
        S("snapshot.query.mode.custom.name"),
        S("snapshot.include.collection.list"),
        S("snapshot.select.statement.overrides"),
        S("snapshot.lock.timeout.ms", "10000", "int", minimum=0),
        S("snapshot.fetch.size", kind="int", minimum=0),
        S("snapshot.max.threads", "1", "int", minimum=1),
        S("snapshot.max.threads.multiplier", "1", "int", minimum=1),
        S("legacy.snapshot.max.threads", "false", "bool", inert=True),
        S("snapshot.delay.ms", "0", "int", minimum=0), S("streaming.delay.ms", "0", "int", minimum=0),
        S("snapshot.tables.order.by.row.count", "disabled", "enum", ("disabled", "ascending", "descending")),
        S("min.row.count.to.stream.results", "1000", "int", minimum=0),
        S("query.fetch.size", "0", "int", minimum=0),
        S("incremental.snapshot.chunk.size", "1024", "int", minimum=1),
        NEW_TABLES_SPEC,
        S("incremental.snapshot.allow.schema.changes", "false", "bool"),
        S("incremental.snapshot.watermarking.strategy", "insert_insert", "enum", ("insert_insert", "insert_delete"),
          doc=WATERMARKING_DOC),
        S("read.only", "false", "bool", doc="nothing written to the source; incremental snapshots read-only "
          "(MariaDB: chunks in consistent snapshots; MySQL: none)"),
        # binlog reading and events
        S("binlog.buffer.size", "0", "int", minimum=0),
        S("include.query", "false", "bool"),
        S("include.schema.changes", "true", "bool"),
        S("provide.transaction.metadata", "false", "bool"),
        S("event.processing.failure.handling.mode", "fail", "enum", _FAILURE_MODES, aliases=_IGNORE_IS_SKIP),
        S("event.deserialization.failure.handling.mode", "fail", "enum", _FAILURE_MODES, aliases=_IGNORE_IS_SKIP),
        S("event.converting.failure.handling.mode", "warn", "enum", ("fail", "warn", "skip")),
        S("inconsistent.schema.handling.mode", "fail", "enum", _FAILURE_MODES, aliases=_IGNORE_IS_SKIP),
        S("extended.headers.enabled", "true", "bool"),
        S("heartbeat.interval.ms", "0", "int", minimum=0), S("heartbeat.action.query"),
        S("heartbeat.topics.prefix", "__debezium-heartbeat"),
        S("topic.heartbeat.prefix", "__debezium-heartbeat"), S("topic.heartbeat.name"),
        S("topic.delimiter", "."), S("topic.transaction", "transaction"),
        S("topic.naming.strategy", "io.debezium.schema.SchemaTopicNamingStrategy", inert=True),
        S("topic.cache.size", "10000", "int", inert=True),
        S("max.batch.size", "2048", "int", minimum=1), S("max.queue.size", "8192", "int", minimum=1),
        S("max.queue.size.in.bytes", "0", "int", minimum=0), S("poll.interval.ms", "500", "int", minimum=1),
        S("errors.max.retries", "-1", "int", minimum=-1),
        S("errors.retry.delay.initial.ms", "300", "int", minimum=1),
        S("errors.retry.delay.max.ms", "10000", "int", minimum=1),
        S("retriable.restart.connector.wait.ms", "10000", "int", minimum=1, inert=True),
        S("signal.data.collection", doc="the signal table, <database>.<table> (columns id, type, data)"),
        S("signal.enabled.channels", "source", "list", doc="source (the signal table) and/or file"),
        S("signal.file", "file-signals.txt", doc="the file channel's JSON-lines file"),
        S("signal.poll.interval.ms", "5000", "int", minimum=1, doc="how often the file channel is read"),
        S("notification.enabled.channels", kind="list", inert=True), S("notification.sink.topic.name", inert=True),
        S("guardrail.collections.max", "0", "int", minimum=0),
        S("guardrail.collections.limit.action", "warn", "enum", ("warn", "fail")),
        # schema history (kept in bronze; the Kafka store options are inert)
        S("schema.history.internal.skip.unparseable.ddl", "false", "bool"),
        S("schema.history.internal.store.only.captured.tables.ddl", "false", "bool"),
        S("schema.history.internal.store.only.captured.databases.ddl", "false", "bool"),
        S("schema.history.internal.prefer.ddl", "false", "bool"),
        *SCHEMA_HISTORY_STORE_OPTIONS,
        # engine internals without meaning here
        S("ddl.parser.type", "default", "enum", ("default", "legacy"), inert=True),
        S("sourceinfo.struct.maker", _STRUCT_MAKER[flavor], inert=True),
        *ENGINE_INTERNAL_OPTIONS,
        *KAFKA_CONNECT_OPTIONS,
    ]


_PREFIXES = [
    *RELATIONAL_PREFIXES,
    PrefixSpec(r"driver\..+", "JDBC driver properties (no pymysql equivalent)", inert=True),
    PrefixSpec(r"internal\..+", "Debezium internals", inert=True),
    PrefixSpec(r"schema\.history\.internal\.(producer|consumer|kafka)\..+", "Kafka schema history store", inert=True),
    *KAFKA_PREFIXES,
    PrefixSpec(r"offset\..+", "Kafka Connect offset storage", inert=True),
    PrefixSpec(r"errors\.(tolerance|log\..+|deadletterqueue\..+|retry\..+)", "Kafka Connect error handling",
               inert=True),
]

_REFERENCE = "docs/mysql.md"

MYSQL_OPTIONS = OptionSet(_specs("mysql"), _PREFIXES, reference=_REFERENCE)
"""Every option of ``connector: mysql``."""

MARIADB_OPTIONS = OptionSet(_specs("mariadb"), _PREFIXES, reference=_REFERENCE)
"""Every option of ``connector: mariadb`` (see the module doc for the differences)."""


def options_for(flavor: Flavor) -> OptionSet:
    """The option set of a flavour."""
    return MARIADB_OPTIONS if flavor == "mariadb" else MYSQL_OPTIONS


def connector_name(flavor: Flavor) -> str:
    """``source.connector`` of the events: ``mysql`` or ``mariadb`` (Debezium's ``Module.name()``)."""
    return flavor
