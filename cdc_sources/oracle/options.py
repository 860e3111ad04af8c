"""The Oracle connector's options: Debezium 3.6.3's names, defaults and validation.

Every property of Debezium 3.6.3's ``OracleConnectorConfig`` (``ALL_FIELDS``, including every
``log.mining.*`` option) plus the shared ones it reads from ``CommonConnectorConfig``,
``RelationalDatabaseConnectorConfig`` and the topic naming and schema history classes, with the
defaults of the 3.6.3 jar and the same accepted values (checked against the jar by
``tests/cdc_sources/oracle/test_options.py``). Options without meaning for a connector writing
to bronze (Kafka, JMX, Java class names, the Ehcache/Infinispan buffer settings, OpenLineage,
XStream and OpenLogReplicator) are accepted and marked inert, so Debezium configurations move
over unchanged.

Debezium 3.6.3 differs from the 2.x documentation in what mining options exist: the
``log.mining.batch.size.*``, ``log.mining.sleep.time.*`` and ``log.mining.scn.gap.*`` options
are gone (the mining window now follows the redo logs: ``log.mining.log.count.min`` and
``log.mining.log.count.growth.max``, bounded by ``log.mining.window.max.ms``), and
``log.mining.transaction.retention.hours`` became ``log.mining.transaction.retention.ms``.
Those 2.x names are rejected with what to use instead (`REMOVED_OPTIONS`).

Deliberate differences from Debezium, all stricter: `STRICTER_MINIMUMS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from cdc_sources.common.options import (
    KAFKA_CONNECT_OPTIONS,
    KAFKA_PREFIXES,
    RELATIONAL_PREFIXES,
    OptionSet,
    OptionSpec,
    ParsedOptions,
    PrefixSpec,
    custom_mode_problems,
)
from cdc_sources.common.signal_options import WATERMARKING_DOC
from cdc_sources.spi import ConfigProblem

__all__ = [
    "ADAPTERS",
    "MINING_STRATEGIES",
    "ORACLE_OPTIONS",
    "REMOVED_OPTIONS",
    "SNAPSHOT_MODES",
    "SNAPSHOT_MODE_ALIASES",
    "STRICTER_MINIMUMS",
    "parse_oracle_options",
]

S = OptionSpec

SNAPSHOT_MODES = ("always", "configuration_based", "custom", "initial", "initial_only", "no_data", "recovery",
                  "when_needed")
"""Debezium 3.6.3's ``snapshot.mode`` values (``custom`` is reported as unsupported)."""

SNAPSHOT_MODE_ALIASES = MappingProxyType({"schema_only": "no_data", "schema_only_recovery": "recovery"})
"""Debezium 2.x names, removed in 3.x, accepted for their 3.x replacements."""

ADAPTERS = ("logminer", "logminer_unbuffered", "olr", "xstream")
"""``database.connection.adapter`` values; Debezium's default is ``LogMiner`` (buffered)."""

MINING_STRATEGIES = ("dictionary_from_file", "hybrid", "online_catalog", "redo_log_catalog")
"""``log.mining.strategy`` values; ``online_catalog`` is the default."""

STRICTER_MINIMUMS = MappingProxyType({
    "database.port": 1,
    "database.query.timeout.ms": 0,
    "errors.max.retries": -1,
    "openlogreplicator.port": 1,
    "secondary.port": 1,
})
"""Integer options Debezium accepts below these values (without a meaning); rejected here."""

REMOVED_OPTIONS = MappingProxyType({
    "database.server.name": "removed in Debezium 2.0; use topic.prefix",
    "log.mining.batch.size.min": "removed in Debezium 3.x; the mining window follows the redo logs "
                                 "(log.mining.log.count.min, log.mining.log.count.growth.max)",
    "log.mining.batch.size.max": "removed in Debezium 3.x; the mining window follows the redo logs "
                                 "(log.mining.log.count.min, log.mining.log.count.growth.max)",
    "log.mining.batch.size.default": "removed in Debezium 3.x; the mining window follows the redo logs "
                                     "(log.mining.log.count.min, log.mining.log.count.growth.max)",
    "log.mining.sleep.time.min.ms": "removed in Debezium 3.x; use poll.interval.ms",
    "log.mining.sleep.time.max.ms": "removed in Debezium 3.x; use poll.interval.ms",
    "log.mining.sleep.time.default.ms": "removed in Debezium 3.x; use poll.interval.ms",
    "log.mining.sleep.time.increment.ms": "removed in Debezium 3.x; use poll.interval.ms",
    "log.mining.scn.gap.detection.gap.size.min": "removed in Debezium 3.x",
    "log.mining.scn.gap.detection.time.interval.max.ms": "removed in Debezium 3.x",
    "log.mining.transaction.retention.hours": "removed in Debezium 3.x; use log.mining.transaction.retention.ms",
    "log.mining.archive.destination.name": "removed in Debezium 3.x; use archive.destination.name",
})
"""Options Debezium no longer has, with what to use instead (shown instead of "unknown option")."""

_IGNORE_IS_SKIP = MappingProxyType({"ignore": "skip"})


def _specs() -> list[OptionSpec]:
    return [
        S("topic.prefix"),
        S("database.hostname"),
        S("database.port", "1528", "int", minimum=1),
        S("database.user"),
        S("database.password"),
        S("database.dbname"),
        S("database.query.timeout.ms", "600000", "int", minimum=0),
        S("database.pdb.name"),
        S("xstream.out.server.name", inert=True),
        S("snapshot.mode", "initial", "enum", SNAPSHOT_MODES, aliases=SNAPSHOT_MODE_ALIASES),
        S("database.connection.adapter", "logminer", "enum", ADAPTERS),
        S("log.mining.strategy", "online_catalog", "enum", MINING_STRATEGIES),
        S("database.url"),
        S("event.processing.failure.handling.mode", "fail", "enum", ("fail", "warn", "skip"), aliases=_IGNORE_IS_SKIP),
        S("max.batch.size", "2048", "int", minimum=1),
        S("max.queue.size", "8192", "int", minimum=1),
        S("poll.interval.ms", "500", "int", minimum=1),
        S("max.queue.size.in.bytes", "0", "int", minimum=0),
        S("provide.transaction.metadata", "false", "bool"),
        S("skipped.operations", "t"),
        S("snapshot.delay.ms", "0", "int", minimum=0),
        S("streaming.delay.ms", "0", "int", minimum=0),
        S("snapshot.include.collection.list"),
        S("snapshot.fetch.size", kind="int", minimum=0),
        S("snapshot.max.threads", "1", "int", minimum=1),
        S("snapshot.max.threads.multiplier", "1", "int", minimum=1),
        S("legacy.snapshot.max.threads", "false", "bool", inert=True),
        S("snapshot.mode.custom.name"),
        S("snapshot.mode.configuration.based.snapshot.data", "false", "bool"),
        S("snapshot.mode.configuration.based.snapshot.schema", "false", "bool"),
        S("snapshot.mode.configuration.based.start.stream", "false", "bool"),
        S("snapshot.mode.configuration.based.snapshot.on.schema.error", "false", "bool"),
        S("snapshot.mode.configuration.based.snapshot.on.data.error", "false", "bool"),
        S("retriable.restart.connector.wait.ms", "10000", "int", minimum=1),
        S("errors.max.retries", "-1", "int", minimum=-1),
        S("incremental.snapshot.watermarking.strategy", "insert_insert", "enum", ("insert_insert", "insert_delete"),
          doc=WATERMARKING_DOC),
        S("internal.log.position.check.enable", "true", "bool", inert=True),
        S("internal.advanced.metrics.enable", "false", "bool", inert=True),
        S("connection.validation.timeout.ms", "60000", "int", minimum=1, inert=True),
        S("executor.shutdown.timeout.ms", "4000", "int", minimum=1, inert=True),
        S("openlineage.integration.enabled", "false", "bool", inert=True),
        S("openlineage.integration.config.file.path", "./openlineage.yml", inert=True),
        S("openlineage.integration.job.namespace", inert=True),
        S("openlineage.integration.job.description", "Debezium change data capture job", inert=True),
        S("openlineage.integration.job.tags", inert=True),
        S("openlineage.integration.job.owners", inert=True),
        S("openlineage.integration.dataset.kafka.bootstrap.servers", inert=True),
        S("extended.headers.enabled", "true", "bool"),
        S("guardrail.collections.max", "0", "int", minimum=0),
        S("guardrail.collections.limit.action", "warn", "enum", ("fail", "warn")),
        S("custom.sanitize.pattern", r".*secret$|.*password$|.*sasl\.jaas\.config$|.*basic\.auth\.user\.info|"
          r".*registry\.auth\.client-secret|.*credentials\.json$|.*connectionstring$|.*connection\.string$",
          inert=True),
        S("statistics.metrics.enabled", "true", "bool", inert=True),
        S("decimal.handling.mode", "precise", "enum", ("double", "precise", "string")),
        S("time.precision.mode", "adaptive", "enum",
          ("adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds")),
        S("snapshot.lock.timeout.ms", "10000", "int"),
        S("memory.management.schemas.class", "io.debezium.relational.ConcurrentMapTableMappingStorage", inert=True),
        S("memory.management.tables.class", "io.debezium.relational.ConcurrentMapTableMappingStorage", inert=True),
        S("query.fetch.size", "10000", "int", minimum=0),
        S("internal.snapshot.enhance.predicate.scn", inert=True),
        S("snapshot.locking.mode", "shared", "enum", ("custom", "none", "shared")),
        S("rac.nodes"),
        S("interval.handling.mode", "numeric", "enum", ("numeric", "string")),
        S("archive.log.hours", "0", "int"),
        S("log.mining.transaction.retention.ms", "0", "int", minimum=0),
        S("log.mining.archive.log.only.mode", "false", "bool"),
        S("lob.enabled", "false", "bool"),
        S("log.mining.username.include.list"),
        S("log.mining.username.exclude.list"),
        S("archive.destination.name"),
        S("log.mining.buffer.type", "memory", "enum",
          ("ehcache", "infinispan_embedded", "infinispan_remote", "memory")),
        S("log.mining.buffer.track.rs_id", "true", "bool"),
        S("log.mining.buffer.track.client_id", "true", "bool"),
        S("log.mining.buffer.track.username", "true", "bool"),
        S("log.mining.buffer.track.commit_timestamp", "true", "bool"),
        S("log.mining.buffer.track.start_timestamp", "true", "bool"),
        S("log.mining.buffer.drop.on.stop", "false", "bool", inert=True),
        S("log.mining.buffer.infinispan.cache.global", inert=True),
        S("log.mining.buffer.infinispan.cache.transactions", inert=True),
        S("log.mining.buffer.infinispan.cache.events", inert=True),
        S("log.mining.buffer.infinispan.cache.processed_transactions", inert=True),
        S("log.mining.buffer.infinispan.cache.schema_changes", inert=True),
        S("log.mining.buffer.transaction.events.threshold", "0", "int", minimum=0),
        S("log.mining.archive.log.only.scn.poll.interval.ms", "10000", "int"),
        S("unavailable.value.placeholder", "__debezium_unavailable_value"),
        S("binary.handling.mode", "bytes", "enum", ("base64", "base64-url-safe", "bytes", "hex")),
        S("schema.name.adjustment.mode", "none", "enum", ("avro", "avro_unicode", "none")),
        S("internal.log.mining.log.query.max.retries", "5", "int", minimum=1, inert=True),
        S("internal.log.mining.log.backoff.initial.delay.ms", "1000", "int", minimum=1, inert=True),
        S("internal.log.mining.log.backoff.max.delay.ms", "60000", "int", minimum=1, inert=True),
        S("log.mining.session.max.ms", "0", "int", minimum=0),
        S("log.mining.window.max.ms", "0", "int", minimum=0),
        S("internal.log.mining.transaction.snapshot.boundary.mode", "skip", "enum",
          ("all", "skip", "transaction_view_only"), inert=True),
        S("log.mining.read.only", "false", "bool"),
        S("log.mining.flush.table.name", "LOG_MINING_FLUSH"),
        S("log.mining.query.filter.mode", "none", "enum", ("in", "none", "regex")),
        S("log.mining.restart.connection", "false", "bool"),
        S("internal.log.mining.max.scn.deviation.ms", "0", "int", minimum=0, inert=True),
        S("internal.log.mining.schema_changes.username.exclude.list", "SYS,SYSTEM", inert=True),
        S("log.mining.include.redo.sql", "false", "bool"),
        S("openlogreplicator.source", inert=True),
        S("openlogreplicator.host", inert=True),
        S("openlogreplicator.port", kind="int", minimum=1, inert=True),
        S("snapshot.database.errors.max.retries", "0", "int", minimum=0),
        S("log.mining.continuous.mine", "false", "bool"),
        S("log.mining.buffer.ehcache.global.config", inert=True),
        S("log.mining.buffer.ehcache.transactions.config", inert=True),
        S("log.mining.buffer.ehcache.processedtransactions.config", inert=True),
        S("log.mining.buffer.ehcache.schemachanges.config", inert=True),
        S("log.mining.buffer.ehcache.events.config", inert=True),
        S("internal.object.id.cache.size", "256", "int", minimum=1, inert=True),
        S("internal.log.mining.sql.relaxed.quote.detection", "false", "bool", inert=True),
        S("log.mining.clientid.include.list"),
        S("log.mining.clientid.exclude.list"),
        S("internal.log.mining.resume.position.interval.ms", "10000", "int", minimum=1, inert=True),
        S("log.mining.buffer.deferred.transaction.start", "false", "bool"),
        S("log.mining.buffer.deferred.transaction.retention.ms", "86400000", "int", minimum=0),
        S("log.mining.path.dictionary"),
        S("capture.mode", "primary", "enum", ("downstream", "physical_standby", "primary")),
        S("secondary.dbname"),
        S("secondary.hostname"),
        S("secondary.port", "1528", "int", minimum=1),
        S("secondary.url"),
        S("legacy.decimal.handling.strategy", "false", "bool"),
        S("internal.log.mining.use.cte.query", "false", "bool", inert=True),
        S("internal.log.mining.redo.thread.scn.adjustment", "1", "int", inert=True),
        S("internal.log.mining.hash.area.size", "0", "int", minimum=0, inert=True),
        S("internal.log.mining.sort.area.size", "0", "int", minimum=0, inert=True),
        S("log.mining.log.count.min", "2", "int", minimum=0),
        S("log.mining.log.count.growth.max", "4", "int", minimum=1),
        S("schema.history.internal", "io.debezium.storage.kafka.history.KafkaSchemaHistory", inert=True),
        S("schema.history.internal.skip.unparseable.ddl", "false", "bool"),
        S("schema.history.internal.store.only.captured.tables.ddl", "false", "bool"),
        S("schema.history.internal.store.only.captured.databases.ddl", "false", "bool"),
        S("converters"),
        S("post.processors", inert=True),
        S("tombstones.on.delete", "true", "bool"),
        S("heartbeat.interval.ms", "0", "int", minimum=0),
        S("heartbeat.topics.prefix", "__debezium-heartbeat"),
        S("signal.poll.interval.ms", "5000", "int", minimum=1),
        S("signal.enabled.channels", "source", "list"),
        S("signal.file", "file-signals.txt"),  # Debezium's file signal channel
        S("topic.naming.strategy", "io.debezium.schema.SchemaTopicNamingStrategy", inert=True),
        S("notification.enabled.channels", inert=True),
        S("notification.sink.topic.name", inert=True),
        S("transaction.metadata.factory", "io.debezium.pipeline.txmetadata.DefaultTransactionMetadataFactory",
          inert=True),
        S("custom.metric.tags", inert=True),
        S("column.include.list"),
        S("column.exclude.list"),
        S("table.include.list"),
        S("table.exclude.list"),
        S("message.key.columns"),
        S("snapshot.select.statement.overrides"),
        S("include.schema.changes", "true", "bool"),
        S("include.schema.comments", "false", "bool"),
        S("column.propagate.source.type"),
        S("datatype.propagate.source.type"),
        S("internal.snapshot.scan.all.columns.force", "false", "bool", inert=True),
        S("snapshot.tables.order.by.row.count", "disabled", "enum", ("ascending", "descending", "disabled")),
        S("heartbeat.action.query"),
        S("sourceinfo.struct.maker", "io.debezium.connector.oracle.OracleSourceInfoStructMaker", inert=True),
        S("signal.data.collection"),
        S("table.ignore.builtin", "true", "bool"),
        S("schema.include.list"),
        S("schema.exclude.list"),
        S("database.include.list"),
        S("database.exclude.list"),
        S("queue.provider.type", "memory", inert=True),
        S("incremental.snapshot.chunk.size", "1024", "int", minimum=0),
        S("incremental.snapshot.allow.schema.changes", "false", "bool"),
        S("skip.messages.without.change", "false", "bool"),
        S("field.name.adjustment.mode", "none", "enum", ("avro", "avro_unicode", "none")),
        S("internal.custom.retriable.exception", "false", inert=True),
        S("event.converting.failure.handling.mode", "warn", "enum", ("fail", "skip", "warn")),
        S("snapshot.locking.mode.custom.name"),
        S("snapshot.query.mode", "select_all", "enum", ("custom", "select_all")),
        S("snapshot.query.mode.custom.name"),
        S("topic.delimiter", "."),
        S("topic.cache.size", "10000", "int", inert=True),
        S("topic.heartbeat.prefix", "__debezium-heartbeat"),
        S("topic.heartbeat.name"),
        S("topic.transaction", "transaction"),
        S("schema.history.internal.name", inert=True),
        S("schema.history.internal.connector.class", inert=True),
        S("schema.history.internal.connector.id", inert=True),
        S("schema.history.internal.prefer.ddl", "false", "bool"),
        S("schema.history.internal.kafka.topic", inert=True),
        S("schema.history.internal.kafka.bootstrap.servers", inert=True),
        S("schema.history.internal.kafka.recovery.poll.interval.ms", "100", "int", minimum=0, inert=True),
        S("schema.history.internal.kafka.recovery.attempts", "100", "int", inert=True),
        S("schema.history.internal.kafka.query.timeout.ms", "3000", "int", minimum=1, inert=True),
        S("schema.history.internal.kafka.create.timeout.ms", "30000", "int", minimum=1, inert=True),
        S("schema.history.internal.kafka.buffer.batch.size", "1024", "int", minimum=1, inert=True),
        S("name"),
        *KAFKA_CONNECT_OPTIONS,
    ]


_PREFIXES = [
    *RELATIONAL_PREFIXES,
    PrefixSpec(r"driver\..+", "JDBC driver properties (no python-oracledb equivalent)", inert=True),
    PrefixSpec(r"internal\..+", "Debezium internals", inert=True),
    *KAFKA_PREFIXES,
    PrefixSpec(r"offset\..+", "Kafka Connect offset storage", inert=True),
]

ORACLE_OPTIONS = OptionSet(_specs(), _PREFIXES, reference="docs/oracle.md")
"""Every option of ``connector: oracle``."""


def _explain_removed(problem: ConfigProblem, path: str) -> ConfigProblem:
    name = problem.path.removeprefix(f"{path}.")
    if name in REMOVED_OPTIONS and problem.message.startswith("unknown option"):
        return ConfigProblem(problem.path, f"unknown option {name!r}: {REMOVED_OPTIONS[name]}", problem.line)
    return problem


def parse_oracle_options(options: Mapping[str, Any], *, path: str) -> tuple[ParsedOptions, list[ConfigProblem]]:
    """Parse and check the ``options:`` of an Oracle source: every problem, each with its key path.

    Besides each option's own validation (`ORACLE_OPTIONS`), checks what Debezium checks across
    options: ``max.queue.size`` above ``max.batch.size``, ``custom`` modes (a Java class, which
    cannot be loaded here), ``log.mining.strategy: dictionary_from_file`` with its
    ``log.mining.path.dictionary`` (and required for a secondary database), downstream capture
    (XStream only), include and exclude lists of users or clients given together. Stricter than
    Debezium: only the LogMiner adapters and the in-memory buffer are accepted.
    """
    parsed, problems = ORACLE_OPTIONS.parse(options, path=path)
    problems = [_explain_removed(p, path) for p in problems]
    opts = parsed.values
    queue, batch = opts.get("max.queue.size"), opts.get("max.batch.size")
    if queue is not None and batch is not None and queue <= batch:
        problems.append(ConfigProblem(f"{path}.max.queue.size", "must be greater than max.batch.size"))
    problems += custom_mode_problems(parsed, path, {"snapshot.mode": SNAPSHOT_MODES,
                                                    "snapshot.locking.mode": ("shared", "none", "custom"),
                                                    "snapshot.query.mode": ("select_all", "custom")})
    adapter = opts.get("database.connection.adapter")
    if adapter in {"olr", "xstream"}:
        problems.append(ConfigProblem(f"{path}.database.connection.adapter",
                                      f"{adapter!r} is not supported by this connector; it reads changes with "
                                      "LogMiner: logminer (the default) or logminer_unbuffered"))
    if opts.get("log.mining.buffer.type") not in {None, "memory"}:
        problems.append(ConfigProblem(f"{path}.log.mining.buffer.type",
                                      "only the in-memory transaction buffer (memory) is supported by this connector"))
    if opts.get("capture.mode") == "downstream" and adapter not in {"olr", "xstream"}:
        problems.append(ConfigProblem(f"{path}.capture.mode", "downstream mining is only supported by XStream"))
    if (parsed.raw.get("secondary.hostname") or parsed.raw.get("secondary.url")) \
            and opts.get("log.mining.strategy") != "dictionary_from_file":
        problems.append(ConfigProblem(f"{path}.log.mining.strategy",
                                      "mining on a secondary (standby) database needs dictionary_from_file"))
    for kind in ("username", "clientid"):
        if parsed.raw.get(f"log.mining.{kind}.include.list") and parsed.raw.get(f"log.mining.{kind}.exclude.list"):
            problems.append(ConfigProblem(f"{path}.log.mining.{kind}.exclude.list",
                                          f"cannot be given with log.mining.{kind}.include.list"))
    if opts.get("log.mining.strategy") == "dictionary_from_file" and not parsed.raw.get("log.mining.path.dictionary"):
        problems.append(ConfigProblem(f"{path}.log.mining.strategy",
                                      "dictionary_from_file needs log.mining.path.dictionary (the dictionary file)"))
    return parsed, problems
