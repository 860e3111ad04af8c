"""The SQL Server connector's typed configuration, validated all at once.

`build_sqlserver_config` takes a pipeline source's ``connection:`` map and Debezium
``options:`` and returns a `SqlServerSourceConfig`, or every problem found, each with its key
path and what to do. Connection keys may also be given as Debezium options
(``database.hostname``, ``database.port``, ``database.user``, ``database.password``), but not
both ways at once. ``database.names`` (or ``connection.database`` for one database) names the
databases to capture.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_sources.common.column_rules import parse_column_rules
from cdc_sources.common.filters import SCHEMA_LISTS, BuiltinTables, ColumnFilter, DataCollectionFilter
from cdc_sources.common.key_columns import KeyColumns
from cdc_sources.common.options import CUSTOM_MODES, ParsedOptions, custom_mode_problems, is_kafka_connect_option
from cdc_sources.common.signal_options import signal_problems
from cdc_sources.spi import ConfigProblem
from cdc_sources.spi.retry import RetryPolicy
from cdc_sources.sqlserver.options import JDBC_PASS_THROUGH, REMOVED_OPTIONS, SNAPSHOT_MODE_ALIASES, SQLSERVER_OPTIONS
from cdc_sources.sqlserver.signal_table import SignalTable, parse_signal_tables, signal_table_for

__all__ = ["SQLSERVER_BUILTIN", "SqlServerConnectionSettings", "SqlServerSourceConfig", "build_sqlserver_config"]

SQLSERVER_BUILTIN = BuiltinTables(containers=frozenset({"cdc", "sys", "information_schema"}),
                                  tables=frozenset({"systranschemas"}))
"""The system schemas and tables ``table.ignore.builtin`` hides."""

_SKIPPABLE = frozenset({"c", "u", "d", "t", "none"})
_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_DRIVER = "driver."


@dataclass(frozen=True)
class SqlServerConnectionSettings:
    """Where and how to connect. ``password`` is never printed (see ``__repr__``).

    Attributes:
        host / port / user / password: the server and login.
        instance: a named instance (``database.instance``), or None.
        databases: the databases to capture, in the order given (``database.names``).
        attributes: extra ODBC connection-string attributes: the ``driver.*`` options, prefix
            removed (``driver.ApplicationIntent: ReadOnly``), and the JDBC driver properties of
            Debezium configurations under their ODBC names (``database.encrypt`` -> ``Encrypt``).
        query_timeout_s: ``database.query.timeout.ms`` in seconds (None for 0).
    """

    host: str
    port: int
    user: str
    password: str | None = field(default=None, repr=False)
    instance: str | None = None
    databases: tuple[str, ...] = ()
    attributes: Mapping[str, str] = field(default_factory=dict)
    query_timeout_s: float | None = None

    def describe(self) -> str:
        """``user@host:port``: safe to log."""
        where = f"{self.host}\\{self.instance}" if self.instance else f"{self.host}:{self.port}"
        return f"{self.user}@{where}"


@dataclass(frozen=True)
class SqlServerSourceConfig:
    """Everything the connector needs: logical name, connection, options and filters.

    Attributes:
        name: the logical server name, ``topic.prefix``.
        connection: connection settings.
        options: every Debezium option, validated, defaults filled in (``schema_only`` reads
            ``no_data``, ``ignore`` reads ``skip``).
        tables: ``table.include.list`` / ``table.exclude.list`` over ``schema.table``.
        columns: ``column.include.list`` / ``column.exclude.list``.
        keys: ``message.key.columns``.
        warnings: things to log once at start-up (deprecated values, inert options).
        retry: how the capture retries after a retriable error (``errors.*`` options).
        signal_tables: ``signal.data.collection`` (`cdc_sources.sqlserver.signal_table`): none, or
            at most one per database.
    """

    name: str
    connection: SqlServerConnectionSettings
    options: ParsedOptions
    tables: DataCollectionFilter
    columns: ColumnFilter
    keys: KeyColumns
    warnings: tuple[str, ...] = ()
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    signal_tables: tuple[SignalTable, ...] = ()

    @property
    def signal_table(self) -> SignalTable | None:
        """The signal table of a source capturing one database (None with several: see `signal_table_for`)."""
        return self.signal_tables[0] if len(self.signal_tables) == 1 else None

    def signal_table_for(self, database: str | None) -> SignalTable | None:
        """The signal table of ``database`` (None: the source's one database), or None."""
        return signal_table_for(self.signal_tables, database)

    def opt(self, name: str) -> Any:
        """An option's value (typed, default filled in)."""
        return self.options.get(name)

    @property
    def skipped_operations(self) -> frozenset[str]:
        ops = _operations(self.opt("skipped.operations"))
        return frozenset() if ops <= {"none"} else frozenset(ops)


def _operations(text: Any) -> set[str]:
    return {p.strip().lower() for p in str(text or "").split(",") if p.strip()}


def build_sqlserver_config(
    *, name: str, connection: Mapping[str, Any], options: Mapping[str, Any], path: str
) -> tuple[SqlServerSourceConfig | None, list[ConfigProblem]]:
    """Validate options and connection settings; return the config or every problem found.

    Args:
        name: the pipeline source name (the default ``topic.prefix``).
        connection: the YAML ``connection:`` map (``host``, ``port``, ``user``, ``password``
            (str or pydantic ``SecretStr``), ``database``).
        options: the YAML ``options:`` map of Debezium properties.
        path: the source's YAML path, prefixed to problem paths (``sources[0]``).
    """
    opath = f"{path}.options"
    parsed, problems = SQLSERVER_OPTIONS.parse(options, path=opath)
    problems = [_explain(p, opath) for p in problems]
    warnings = [f"option {n} has no effect when writing to bronze" for n in parsed.inert_used
                if not is_kafka_connect_option(n)]
    settings = _connection_settings(connection, parsed, path, problems)
    prefix = str(parsed.values.get("topic.prefix") or name)
    bad = sorted(set(prefix) - _TOPIC_CHARS)
    if not prefix or bad:
        problems.append(ConfigProblem(f"{opath}.topic.prefix", f"{prefix!r} has invalid characters {bad}: only "
                                                               "letters, digits, '_', '-' and '.' are allowed"))
    problems.extend(custom_mode_problems(parsed, opath, {o: _choices(o) for o in CUSTOM_MODES}))
    mode_text = parsed.raw.get("snapshot.mode", "").strip().lower()
    if mode_text in SNAPSHOT_MODE_ALIASES:
        warnings.append(f"snapshot.mode={mode_text} was removed in Debezium 3.0; "
                        f"it is read as {SNAPSHOT_MODE_ALIASES[mode_text]}")
    ops = _operations(parsed.values.get("skipped.operations"))
    if ops - _SKIPPABLE:
        problems.append(ConfigProblem(f"{opath}.skipped.operations",
                                      f"invalid operations {sorted(ops - _SKIPPABLE)}; valid: c, u, d, t, none"))
    queue, batch = parsed.values.get("max.queue.size"), parsed.values.get("max.batch.size")
    if queue is not None and batch is not None and queue <= batch:
        problems.append(ConfigProblem(f"{opath}.max.queue.size", "must be greater than max.batch.size"))
    signals, signal_table_problems = parse_signal_tables(parsed.raw, settings.databases if settings else (), opath)
    problems.extend(signal_table_problems)
    problems.extend(p for p in signal_problems(parsed.raw, opath) if not p.path.endswith(".signal.data.collection"))
    tables, p1 = DataCollectionFilter.from_options(parsed.raw, container_lists=SCHEMA_LISTS,
                                                   builtin=SQLSERVER_BUILTIN,
                                                   always_include=[(t.schema, t.table) for t in signals])
    columns, p2 = ColumnFilter.from_options(parsed.raw)
    keys, p3 = KeyColumns.from_options(parsed.raw)
    _, tagged = parse_column_rules(parsed.raw)
    problems.extend(ConfigProblem(f"{opath}.{p.path}", p.message) for p in [*p1, *p2, *p3, *(p for _, p in tagged)])
    retry, retry_problems = RetryPolicy.from_options(parsed.values.get, opath)
    problems.extend(retry_problems)
    if problems or settings is None:
        return None, problems
    return SqlServerSourceConfig(prefix, settings, parsed, tables, columns, keys, tuple(warnings), retry, signals), []


def _choices(option: str) -> tuple[str, ...]:
    spec = SQLSERVER_OPTIONS.specs.get(option)
    return spec.choices if spec else ()


def _explain(problem: ConfigProblem, opath: str) -> ConfigProblem:
    name = problem.path.removeprefix(f"{opath}.")
    if name in REMOVED_OPTIONS and problem.message.startswith("unknown option"):
        return ConfigProblem(problem.path, f"unknown option {name!r}: {REMOVED_OPTIONS[name]}", problem.line)
    return problem


def _connection_settings(connection: Mapping[str, Any], parsed: ParsedOptions, path: str,
                         problems: list[ConfigProblem]) -> SqlServerConnectionSettings | None:
    opath, opts, before = f"{path}.options", parsed.values, len(problems)

    def pick(conn_key: str, opt_key: str, default: Any = None) -> Any:
        in_conn, in_opts = connection.get(conn_key), parsed.raw.get(opt_key)
        if in_conn is not None and in_opts is not None:
            problems.append(ConfigProblem(f"{opath}.{opt_key}", f"given twice: also as {path}.connection.{conn_key}"))
        if in_conn is not None:
            return in_conn
        return opts.get(opt_key) if in_opts is not None else default

    host = str(pick("host", "database.hostname", "127.0.0.1"))
    port = pick("port", "database.port", 1433)
    if isinstance(port, str) and port.strip().isdigit():
        port = int(port)
    user = pick("user", "database.user")
    password = pick("password", "database.password")
    names = pick("database", "database.names")
    databases = tuple(n.strip() for n in names.split(",")) if isinstance(names, str) else tuple(names or ())
    if not user:
        problems.append(ConfigProblem(f"{path}.connection.user", "is required (or options.database.user)"))
    if not (isinstance(port, int) and 1 <= port <= 65535):
        problems.append(ConfigProblem(f"{path}.connection.port", f"must be a TCP port 1..65535, got {port!r}"))
    if not databases or not all(databases):
        problems.append(ConfigProblem(f"{opath}.database.names", "is required: a comma-separated list of the "
                                                                 "databases to capture (or connection.database)"))
    elif len({d.lower() for d in databases}) != len(databases):
        problems.append(ConfigProblem(f"{opath}.database.names", f"names a database twice: {', '.join(databases)}"))
    timeout = opts.get("database.query.timeout.ms")
    if len(problems) > before or timeout is None:
        return None
    attributes = {JDBC_PASS_THROUGH[k]: v for k, v in parsed.raw.items() if k in JDBC_PASS_THROUGH}
    attributes.update((k.removeprefix(_DRIVER), v) for k, v in parsed.raw.items() if k.startswith(_DRIVER))
    secret = None if password is None else str(password.get_secret_value() if hasattr(password, "get_secret_value")
                                                else password)
    return SqlServerConnectionSettings(host=host, port=int(port), user=str(user), password=secret,
                                       instance=opts.get("database.instance"), databases=databases,
                                       attributes=attributes, query_timeout_s=(int(timeout) / 1000.0) or None)
