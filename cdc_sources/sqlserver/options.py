"""The SQL Server connector's options: Debezium 3.6.3's names and defaults.

Every property of Debezium 3.6.3's ``SqlServerConnectorConfig`` (``ALL_FIELDS``) plus the shared
ones it reads from ``HistorizedRelationalDatabaseConnectorConfig``,
``RelationalDatabaseConnectorConfig``, ``CommonConnectorConfig`` and the topic naming and schema
history classes, with the defaults of the 3.6.3 jar (checked by
``tests/cdc_sources/sqlserver/test_options.py`` against the jar through a Java probe). Options
without meaning for a connector writing to bronze (Kafka, JMX, OpenLineage) are accepted and
marked inert, so Debezium configurations move over unchanged.

SQL Server specifics: ``database.names`` (required, the databases to capture, one SQL Server
instance), ``database.instance`` (a named instance), ``snapshot.isolation.mode``,
``data.query.mode`` (``function``: ``cdc.fn_cdc_get_all_changes_<instance>``; ``direct``: the
change tables themselves), ``max.iteration.transactions`` and ``streaming.fetch.size``.
``driver.*`` options are passed to the ODBC connection string (Debezium passes them to JDBC).

Deliberate differences from Debezium, all stricter: see `STRICTER_MINIMUMS`.
"""

from __future__ import annotations

from types import MappingProxyType

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
    "ISOLATION_MODES",
    "JDBC_PASS_THROUGH",
    "REMOVED_OPTIONS",
    "SNAPSHOT_MODES",
    "SNAPSHOT_MODE_ALIASES",
    "SQLSERVER_OPTIONS",
    "STRICTER_MINIMUMS",
    "TIME_PRECISION_MODES",
]

S = OptionSpec

SNAPSHOT_MODES = ("initial", "initial_only", "when_needed", "when_needed_no_data", "no_data", "recovery",
                  "always", "configuration_based", "custom")
"""Debezium 3.6.3's ``snapshot.mode`` values for SQL Server (``custom`` is reported as unsupported)."""

SNAPSHOT_MODE_ALIASES = MappingProxyType({"schema_only": "no_data", "schema_only_recovery": "recovery"})
"""Debezium 2.x names, removed in 3.x, accepted here for their 3.x replacements (with a warning)."""

ISOLATION_MODES = ("read_uncommitted", "read_committed", "repeatable_read", "snapshot", "exclusive")
"""``snapshot.isolation.mode`` values; ``repeatable_read`` is the default."""

TIME_PRECISION_MODES = ("adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds",
                        "nanoseconds")
"""``time.precision.mode`` values Debezium's shared field accepts; see `cdc_sources.sqlserver.converters`
for what each means for SQL Server's types."""

STRICTER_MINIMUMS = MappingProxyType({
    "database.port": 1,
    "database.query.timeout.ms": 0,
    "errors.max.retries": -1,
    "incremental.snapshot.chunk.size": 1,
    "snapshot.lock.timeout.ms": -1,
    "max.iteration.transactions": 0,
    "streaming.fetch.size": 0,
})
"""Integer options Debezium accepts below these values (without a meaning); rejected here.
``snapshot.lock.timeout.ms`` keeps -1 (wait forever, as SQL Server's ``SET LOCK_TIMEOUT -1``)."""

REMOVED_OPTIONS = MappingProxyType({
    "database.server.name": "removed in Debezium 2.0; use topic.prefix",
    "database.dbname": "removed in Debezium 2.0; use database.names",
    "database.history": "removed in Debezium 2.0; the schema history is kept in bronze",
    "database.history.kafka.topic": "removed in Debezium 2.0; the schema history is kept in bronze",
    "database.history.kafka.bootstrap.servers": "removed in Debezium 2.0; the schema history is kept in bronze",
    "table.whitelist": "removed in Debezium 2.0; use table.include.list",
    "table.blacklist": "removed in Debezium 2.0; use table.exclude.list",
    "column.whitelist": "removed in Debezium 2.0; use column.include.list",
    "column.blacklist": "removed in Debezium 2.0; use column.exclude.list",
    "source.timestamp.mode": "not an option of Debezium 3.6.3: source.ts_ms is the commit time",
    "source.struct.version": "not an option of Debezium 3.6.3: the source block has the v2 layout",
    "database.server.timezone": "not an option of Debezium 3.6.3: commit times are read in UTC from the server",
})
"""Options Debezium no longer has, with what to use instead (shown instead of "unknown option")."""

JDBC_PASS_THROUGH = MappingProxyType({
    "database.encrypt": "Encrypt",
    "database.trustServerCertificate": "TrustServerCertificate",
    "database.hostNameInCertificate": "HostNameInCertificate",
    "database.applicationIntent": "ApplicationIntent",
    "database.applicationName": "APP",
    "database.multiSubnetFailover": "MultiSubnetFailover",
})
"""Microsoft JDBC driver properties found in Debezium SQL Server configurations (Debezium passes
``database.*`` properties to the driver) -> the ODBC connection-string keyword with that meaning."""

_FAILURE_MODES = ("fail", "warn", "skip")
_IGNORE_IS_SKIP = MappingProxyType({"ignore": "skip"})
_ADJUSTMENT_MODES = ("none", "avro", "avro_unicode")


def _specs() -> list[OptionSpec]:
    return [
        # connection (host/port/user/password may also be given in the `connection:` block)
        S("database.hostname"), S("database.port", "1433", "int", minimum=1),
        S("database.user"), S("database.password"),
        S("database.instance", doc="a named SQL Server instance (host\\instance)"),
        S("database.names", kind="list", doc="the databases to capture (required)"),
        S("database.query.timeout.ms", "600000", "int", minimum=0),
        S("connection.validation.timeout.ms", "60000", "int", minimum=1, inert=True),
        S("topic.prefix"), S("name"),
        S("connector.class", inert=True), S("tasks.max", "1", "int", inert=True),
        # filters and column transforms (validated by cdc_sources.common, Debezium's list syntax)
        S("table.include.list"), S("table.exclude.list"), S("table.ignore.builtin", "true", "bool"),
        S("column.include.list"), S("column.exclude.list"),
        S("message.key.columns"), S("column.propagate.source.type"), S("datatype.propagate.source.type"),
        S("skipped.operations", "t"), S("skip.messages.without.change", "false", "bool"),
        S("tombstones.on.delete", "true", "bool"),
        # types
        S("decimal.handling.mode", "precise", "enum", ("precise", "double", "string")),
        S("time.precision.mode", "adaptive", "enum", TIME_PRECISION_MODES),
        S("binary.handling.mode", "bytes", "enum", ("bytes", "base64", "base64-url-safe", "hex")),
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
        S("snapshot.isolation.mode", "repeatable_read", "enum", ISOLATION_MODES),
        S("snapshot.locking.mode.custom.name"),
        S("snapshot.query.mode", "select_all", "enum", ("select_all", "custom")),
        S("snapshot.query.mode.custom.name"),
        S("snapshot.include.collection.list"),
        S("snapshot.select.statement.overrides"),
        S("snapshot.lock.timeout.ms", "10000", "int", minimum=-1),
        S("snapshot.fetch.size", kind="int", minimum=0),
        S("snapshot.max.threads", "1", "int", minimum=1),
        S("snapshot.max.threads.multiplier", "1", "int", minimum=1),
        S("legacy.snapshot.max.threads", "false", "bool", inert=True),
        S("snapshot.delay.ms", "0", "int", minimum=0), S("streaming.delay.ms", "0", "int", minimum=0),
        S("snapshot.tables.order.by.row.count", "disabled", "enum", ("disabled", "ascending", "descending")),
        S("query.fetch.size", "0", "int", minimum=0),
        S("incremental.snapshot.chunk.size", "1024", "int", minimum=1),
        S("incremental.snapshot.allow.schema.changes", "false", "bool"),
        S("incremental.snapshot.option.recompile", "false", "bool"),
        S("incremental.snapshot.watermarking.strategy", "insert_insert", "enum", ("insert_insert", "insert_delete"),
          doc=WATERMARKING_DOC),
        # streaming from the change tables
        S("data.query.mode", "direct", "enum", ("direct", "function"),
          doc="read the change tables directly or through cdc.fn_cdc_get_all_changes_<instance>"),
        S("max.iteration.transactions", "500", "int", minimum=0,
          doc="transactions read per streaming iteration (0: all up to the current maximum LSN)"),
        S("streaming.fetch.size", "0", "int", minimum=0),
        S("include.schema.changes", "true", "bool"),
        S("provide.transaction.metadata", "false", "bool"),
        S("event.processing.failure.handling.mode", "fail", "enum", _FAILURE_MODES, aliases=_IGNORE_IS_SKIP),
        S("event.converting.failure.handling.mode", "warn", "enum", ("fail", "warn", "skip")),
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
        S("retriable.restart.connector.wait.ms", "10000", "int", minimum=1),
        S("signal.data.collection"), S("signal.enabled.channels", "source", "list"),
        S("signal.poll.interval.ms", "5000", "int", minimum=1),
        S("signal.file", "file-signals.txt", doc="the file channel's JSON-lines file"),
        S("notification.enabled.channels", kind="list", inert=True), S("notification.sink.topic.name", inert=True),
        S("guardrail.collections.max", "0", "int", minimum=0),
        S("guardrail.collections.limit.action", "warn", "enum", ("warn", "fail")),
        # schema history (kept in bronze; the Kafka store options are inert)
        S("schema.history.internal.skip.unparseable.ddl", "false", "bool"),
        S("schema.history.internal.store.only.captured.tables.ddl", "false", "bool"),
        S("schema.history.internal.store.only.captured.databases.ddl", "false", "bool"),
        S("schema.history.internal.prefer.ddl", "false", "bool", inert=True),
        *SCHEMA_HISTORY_STORE_OPTIONS,
        # engine internals without meaning here
        S("sourceinfo.struct.maker", "io.debezium.connector.sqlserver.SqlServerSourceInfoStructMaker", inert=True),
        *ENGINE_INTERNAL_OPTIONS,
        *KAFKA_CONNECT_OPTIONS,
    ]


_PREFIXES = [
    *RELATIONAL_PREFIXES,
    PrefixSpec(r"driver\..+", "ODBC connection string attributes (Debezium: JDBC driver properties)"),
    PrefixSpec(r"database\.(encrypt|trustServerCertificate|hostNameInCertificate|applicationIntent|applicationName|"
               r"multiSubnetFailover)", "Microsoft JDBC driver properties Debezium passes on; given to ODBC under "
               "their ODBC names (see JDBC_PASS_THROUGH)"),
    PrefixSpec(r"internal\..+", "Debezium internals", inert=True),
    PrefixSpec(r"schema\.history\.internal\.(producer|consumer|kafka)\..+", "Kafka schema history store", inert=True),
    *KAFKA_PREFIXES,
    PrefixSpec(r"offset\..+", "Kafka Connect offset storage", inert=True),
]

SQLSERVER_OPTIONS = OptionSet(_specs(), _PREFIXES, reference="docs/sqlserver.md")
"""Every option of ``connector: sqlserver``."""
