"""The Oracle connector's typed configuration, validated all at once.

`build_oracle_config` takes a pipeline source's ``connection:`` map (``host``, ``port``, ``user``,
``password``, ``database``: the service name) and Debezium ``options:`` and returns an
`OracleSourceConfig`, or every problem found, each with its key path. Connection keys may also be
given as Debezium options (``database.hostname``, ``database.port``, ``database.user``,
``database.password``, ``database.dbname``). Capture supports ``snapshot.mode`` ``always``,
``initial``, ``initial_only``, ``no_data``, ``recovery`` and ``when_needed`` (Debezium 2.x's
``schema_only`` and ``schema_only_recovery`` are read as ``no_data`` and ``recovery`` with a
warning); ``configuration_based`` and ``custom`` are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from cdc_sources.common.filters import SCHEMA_LISTS, BuiltinTables, DataCollectionFilter
from cdc_sources.common.options import ParsedOptions
from cdc_sources.oracle.converters import OracleConverterSettings
from cdc_sources.oracle.envelope import EnvelopeSettings
from cdc_sources.oracle.mining_query import MiningQuerySettings
from cdc_sources.oracle.options import SNAPSHOT_MODE_ALIASES, parse_oracle_options
from cdc_sources.oracle.signal_table import signal_table_problems
from cdc_sources.oracle.transactions import EXCLUDED_SCHEMAS
from cdc_sources.spi import ConfigProblem
from cdc_sources.spi.retry import RetryPolicy

__all__ = ["CAPTURE_SNAPSHOT_MODES", "OracleConnectionSettings", "OracleSourceConfig", "build_oracle_config"]

CAPTURE_SNAPSHOT_MODES = ("always", "initial", "initial_only", "no_data", "recovery", "when_needed")
_BUILTIN = BuiltinTables(containers=frozenset(s.lower() for s in EXCLUDED_SCHEMAS), tables=frozenset())
_SKIPPABLE = frozenset({"c", "u", "d", "t", "none"})


@dataclass(frozen=True)
class OracleConnectionSettings:
    """Where and how to connect. ``password`` is never printed (see ``__repr__``)."""

    host: str
    port: int
    user: str
    service: str
    password: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        """``user@host:port/service``: safe to log."""
        return f"{self.user}@{self.host}:{self.port}/{self.service}"


@dataclass(frozen=True)
class OracleSourceConfig:
    """Everything the connector needs.

    Attributes:
        name: ``topic.prefix``.
        connection: the connection settings.
        options: every Debezium option, validated, defaults filled in.
        tables: ``schema.*`` / ``table.*`` include and exclude lists over ``OWNER.TABLE``.
        envelope: the options that shape events.
        mining: the options the mining query depends on.
        retry: ``errors.*``.
    """

    name: str
    connection: OracleConnectionSettings
    options: ParsedOptions
    tables: DataCollectionFilter
    envelope: EnvelopeSettings
    mining: MiningQuerySettings
    retry: RetryPolicy
    snapshot_mode: str = "initial"
    fetch_size: int = 10_000
    poll_interval_s: float = 1.0
    warnings: tuple[str, ...] = ()
    include_schema_changes: bool = True
    """``include.schema.changes``: publish schema change events on the ``topic.prefix`` topic."""
    skip_unparseable_ddl: bool = False
    """``schema.history.internal.skip.unparseable.ddl``: skip (with a warning) DDL that cannot be read."""


def _secret(value: Any) -> str | None:
    if value is None:
        return None
    get = getattr(value, "get_secret_value", None)
    return str(get() if callable(get) else value)


def build_oracle_config(*, name: str, connection: Mapping[str, Any], options: Mapping[str, Any],
                        path: str) -> tuple[OracleSourceConfig | None, list[ConfigProblem]]:
    """Validate options and connection settings; return the config or every problem found."""
    opath = f"{path}.options"
    parsed, problems = parse_oracle_options(options, path=opath)
    opts = parsed.values
    conn: dict[str, Any] = {}
    for key, option in (("host", "database.hostname"), ("port", "database.port"), ("user", "database.user"),
                        ("password", "database.password"), ("database", "database.dbname")):
        given, as_option = connection.get(key), parsed.raw.get(option)
        if given is not None and as_option is not None:
            problems.append(ConfigProblem(f"{opath}.{option}", f"given twice: also as {path}.connection.{key}"))
        conn[key] = given if given is not None else (opts.get(option) if as_option is not None else None)
    for key in ("host", "user", "database"):
        if not conn[key]:
            problems.append(ConfigProblem(f"{path}.connection.{key}", "required"))
    mode = str(opts.get("snapshot.mode") or "initial")
    if mode not in CAPTURE_SNAPSHOT_MODES:
        problems.append(ConfigProblem(f"{opath}.snapshot.mode", f"{mode!r} is not supported by this connector yet; "
                                                                f"supported: {', '.join(CAPTURE_SNAPSHOT_MODES)}"))
    warnings: list[str] = []
    mode_text = str(parsed.raw.get("snapshot.mode") or "").strip().lower()
    if mode_text in SNAPSHOT_MODE_ALIASES:
        warnings.append(f"snapshot.mode={mode_text} was removed in Debezium 3.0; "
                        f"it is read as {SNAPSHOT_MODE_ALIASES[mode_text]}")
    skipped = {p.strip() for p in str(opts.get("skipped.operations") or "").split(",") if p.strip()}
    if skipped - _SKIPPABLE:
        problems.append(ConfigProblem(f"{opath}.skipped.operations",
                                      f"invalid operations {sorted(skipped - _SKIPPABLE)}; valid: c, u, d, t, none"))
    tables, table_problems = DataCollectionFilter.from_options(parsed.raw, container_lists=SCHEMA_LISTS,
                                                               builtin=_BUILTIN)
    problems.extend(ConfigProblem(f"{opath}.{p.path}", p.message) for p in table_problems)
    retry, retry_problems = RetryPolicy.from_options(opts.get, opath)
    problems.extend(retry_problems)
    problems.extend(signal_table_problems(parsed.raw, opath, str(opts.get("database.pdb.name") or conn["database"])))
    prefix = str(opts.get("topic.prefix") or name)
    if problems:
        return None, problems
    converters = OracleConverterSettings(
        decimal_mode=opts.get("decimal.handling.mode") or "precise",
        time_precision_mode=opts.get("time.precision.mode") or "adaptive",
        binary_mode=opts.get("binary.handling.mode") or "bytes",
        interval_mode=opts.get("interval.handling.mode") or "numeric",
        unavailable_placeholder=str(opts.get("unavailable.value.placeholder") or "__debezium_unavailable_value"))
    envelope = EnvelopeSettings(converters=converters, tombstones_on_delete=bool(opts.get("tombstones.on.delete")),
                                skipped_operations=frozenset(skipped - {"none"}),
                                include_redo_sql=bool(opts.get("log.mining.include.redo.sql")),
                                database_offset=timedelta(0), lob_enabled=bool(opts.get("lob.enabled")))
    port = int(conn["port"] or opts.get("database.port") or 1528)
    settings = OracleConnectionSettings(str(conn["host"]), port, str(conn["user"]), str(conn["database"]),
                                        _secret(conn["password"]))
    fetch = int(opts.get("query.fetch.size") or 10_000)
    return OracleSourceConfig(prefix, settings, parsed, tables, envelope, MiningQuerySettings.from_options(parsed),
                              retry, mode, fetch or 10_000,
                              float(opts.get("poll.interval.ms") or 1000) / 1000, tuple(warnings),
                              include_schema_changes=bool(opts.get("include.schema.changes", True)),
                              skip_unparseable_ddl=bool(opts.get("schema.history.internal.skip.unparseable.ddl"))), []
