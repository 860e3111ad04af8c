"""The MySQL/MariaDB connector's typed configuration, validated all at once.

`build_mysql_config` takes a pipeline source's ``connection:`` map and Debezium ``options:``
and returns a `MySqlSourceConfig`, or every problem found, each with its key path and what to
do. Connection keys may also be given as Debezium options (``database.hostname``,
``database.port``, ``database.user``, ``database.password``, ``database.ssl.mode``), but not
both ways at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_sources.common.options import (
    CUSTOM_MODES,
    OptionSet,
    ParsedOptions,
    custom_mode_problems,
    is_kafka_connect_option,
)
from cdc_sources.common.regex_list import regex_list_option
from cdc_sources.common.signal_options import signal_problems
from cdc_sources.mysql.options import (
    REMOVED_OPTIONS,
    SNAPSHOT_MODE_ALIASES,
    SSL_MODES,
    Flavor,
    options_for,
)
from cdc_sources.mysql.options import connector_name as _connector_name
from cdc_sources.mysql.policy import MySqlFilterPolicy
from cdc_sources.spi import ConfigError, ConfigProblem
from cdc_sources.spi.retry import RetryPolicy

__all__ = [
    "MySqlConnectionSettings",
    "MySqlSourceConfig",
    "build_mysql_config",
    "require_config",
    "split_statements",
]

_SERVER_ID_MAX = 2**32 - 1
_SKIPPABLE = frozenset({"c", "u", "d", "t", "none"})
_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_SSL_CANONICAL = {"disable": "disabled", "trust": "required", "verify-ca": "verify_ca",
                  "verify-full": "verify_identity"}
_CONFIG_BASED = "snapshot.mode.configuration.based."


@dataclass(frozen=True)
class MySqlConnectionSettings:
    """Where and how to connect. ``password`` is never printed (see ``__repr__``).

    Attributes:
        host / port / user / password: the server and account.
        database: the default database of SQL connections (optional for MySQL).
        ssl_mode: the TLS mode in MySQL's terms: ``disabled``, ``preferred``, ``required``,
            ``verify_ca`` or ``verify_identity`` (MariaDB's names are mapped as Debezium
            maps them: ``disable`` -> ``disabled``, ``trust`` -> ``required``, ``verify-ca``
            -> ``verify_ca``, ``verify-full`` -> ``verify_identity``).
        ssl_ca: PEM file of CA certificates (``database.ssl.truststore``).
        ssl_cert_key: PEM file with the client certificate and key (``database.ssl.keystore``).
        ssl_key_password: the password of that key (``database.ssl.keystore.password``).
        connect_timeout_s: ``connect.timeout.ms`` in seconds.
        query_timeout_s: ``database.query.timeout.ms`` in seconds (None for 0): the longest a
            SQL connection waits for the server's next answer.
        initial_statements: ``database.initial.statements``, split.
    """

    host: str
    port: int
    user: str
    password: str | None = field(default=None, repr=False)
    database: str | None = None
    ssl_mode: str = "preferred"
    ssl_ca: str | None = None
    ssl_cert_key: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    connect_timeout_s: float = 30.0
    query_timeout_s: float | None = None
    initial_statements: tuple[str, ...] = ()

    def describe(self) -> str:
        """``user@host:port``: safe to log."""
        return f"{self.user}@{self.host}:{self.port}"


@dataclass(frozen=True)
class MySqlSourceConfig:
    """Everything the connector needs: logical name, flavour, connection and options.

    Attributes:
        name: the logical server name, ``topic.prefix``.
        flavor: ``mysql`` or ``mariadb`` (the ``connector:`` of the pipeline source).
        connection: connection settings.
        server_id: ``database.server.id``, the replication client id.
        options: every Debezium option, validated, defaults filled in (deprecated values
            already replaced: ``schema_only`` reads ``no_data``, ``ignore`` reads ``skip``).
        policy: database/table/column filters and column transforms.
        gtid_filter: ``gtid.source.includes``/``excludes`` as a predicate over GTID sources
            (MySQL server UUIDs, MariaDB ``domain-server``); None when neither is set.
        converter_options: the ``<name>.<property>`` options of the custom ``converters``.
        warnings: things to log once at start-up (deprecated values, inert options).
        retry: how the capture retries after a retriable error (``errors.*`` options).
    """

    name: str
    flavor: Flavor
    connection: MySqlConnectionSettings
    server_id: int
    options: ParsedOptions
    policy: MySqlFilterPolicy
    gtid_filter: Callable[[str], bool] | None = None
    converter_options: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def opt(self, name: str) -> Any:
        """An option's value (typed, default filled in)."""
        return self.options.get(name)

    @property
    def connector_name(self) -> str:
        """``source.connector``: ``mysql`` or ``mariadb``."""
        return _connector_name(self.flavor)

    @property
    def snapshot_mode(self) -> str:
        """``snapshot.mode``, de-aliased."""
        return str(self.opt("snapshot.mode"))

    @property
    def locking_mode(self) -> str:
        return str(self.opt("snapshot.locking.mode"))

    @property
    def configuration_based(self) -> dict[str, bool]:
        """The ``snapshot.mode.configuration.based.*`` flags keyed by their suffix
        (``snapshot.data``, ``snapshot.schema``, ``start.stream``, ``snapshot.on.schema.error``,
        ``snapshot.on.data.error``)."""
        return {k.removeprefix(_CONFIG_BASED): bool(v) for k, v in self.options.values.items()
                if k.startswith(_CONFIG_BASED)}

    @property
    def skipped_operations(self) -> frozenset[str]:
        ops = _operations(self.opt("skipped.operations"))
        return frozenset() if ops <= {"none"} else frozenset(ops)

    @property
    def heartbeat_topic(self) -> str:
        """``<topic.heartbeat.prefix>.<topic.prefix>`` (Debezium's heartbeat topic)."""
        delimiter = str(self.opt("topic.delimiter"))
        return f"{self.opt('topic.heartbeat.prefix')}{delimiter}{self.name}"

    @property
    def transaction_topic(self) -> str:
        """``<topic.prefix>.<topic.transaction>``."""
        return f"{self.name}{self.opt('topic.delimiter')}{self.opt('topic.transaction')}"


def split_statements(text: str | None) -> tuple[str, ...]:
    """Split ``database.initial.statements`` on ``;`` (``;;`` is a literal semicolon)."""
    if not text:
        return ()
    parts = text.replace(";;", "\0").split(";")
    return tuple(p.replace("\0", ";").strip() for p in parts if p.strip())


def _operations(text: Any) -> set[str]:
    return {p.strip().lower() for p in str(text or "").split(",") if p.strip()}


def build_mysql_config(
    *, name: str, connection: Mapping[str, Any], options: Mapping[str, Any], path: str, flavor: Flavor
) -> tuple[MySqlSourceConfig | None, list[ConfigProblem]]:
    """Validate options and connection settings; return the config or every problem found.

    Args:
        name: the pipeline source name (the default ``topic.prefix``).
        connection: the YAML ``connection:`` map (``host``, ``port``, ``user``, ``password``
            (str or pydantic ``SecretStr``), ``database``, ``sslmode``).
        options: the YAML ``options:`` map of Debezium properties.
        path: the source's YAML path, prefixed to problem paths (``sources[0]``).
        flavor: ``mysql`` or ``mariadb``.
    """
    opath = f"{path}.options"
    option_set = options_for(flavor)
    converter_names = [c.strip() for c in str(options.get("converters") or "").split(",") if c.strip()]
    converter_options = {str(k): str(v) for k, v in options.items()
                         if any(str(k).startswith(f"{c}.") for c in converter_names) and not _known(option_set, str(k))}
    parsed, problems = option_set.parse(
        {k: v for k, v in options.items() if k not in converter_options}, path=opath)
    problems = [_explain(p, opath, parsed.raw) for p in problems]
    opts = parsed.values
    warnings = [f"option {n} has no effect when writing to bronze" for n in parsed.inert_used
                if not is_kafka_connect_option(n)]  # those are logged together, by the pipeline

    connection_settings = _connection_settings(connection, parsed, flavor, path, problems)
    server_id = opts.get("database.server.id")
    if "database.server.id" not in parsed.raw:
        problems.append(ConfigProblem(
            f"{opath}.database.server.id",
            "is required: a numeric replication client id, unique among all replicas of the server "
            "and different from the server's own server_id (e.g. a random number 5400..6400)"))
    elif server_id is not None and server_id > _SERVER_ID_MAX:
        problems.append(ConfigProblem(f"{opath}.database.server.id",
                                      f"must be at most {_SERVER_ID_MAX} (a 32-bit server id), got {server_id}"))
    prefix = str(opts.get("topic.prefix") or name)
    _check_prefix(prefix, opath, "topic.prefix" in parsed.raw, problems)
    warnings += _check_modes(parsed, opath, problems)
    _check_operations(opts.get("skipped.operations"), opath, problems)
    queue, batch = opts.get("max.queue.size"), opts.get("max.batch.size")
    if queue is not None and batch is not None and queue <= batch:
        problems.append(ConfigProblem(f"{opath}.max.queue.size", "must be greater than max.batch.size"))
    signal = parsed.raw.get("signal.data.collection")
    if signal is not None and len([p for p in signal.split(".") if p.strip()]) != 2:
        problems.append(ConfigProblem(f"{opath}.signal.data.collection",
                                      f"must be <database>.<table>, got {signal!r}"))
    problems.extend(p for p in signal_problems(parsed.raw, opath) if not p.path.endswith(".signal.data.collection"))
    gtid_filter = _gtid_filter(parsed.raw, opath, problems)
    retry, retry_problems = RetryPolicy.from_options(opts.get, opath)
    problems.extend(retry_problems)
    policy, policy_problems = MySqlFilterPolicy.from_options(parsed.raw)
    problems.extend(ConfigProblem(f"{opath}.{p.path}", p.message) for p in policy_problems)
    if problems or connection_settings is None:
        return None, problems
    config = MySqlSourceConfig(prefix, flavor, connection_settings, int(server_id or 0), parsed, policy, gtid_filter,
                               converter_options, tuple(warnings), retry)
    return config, []


def _connection_settings(connection: Mapping[str, Any], parsed: ParsedOptions, flavor: Flavor, path: str,
                         problems: list[ConfigProblem]) -> MySqlConnectionSettings | None:
    """The connection settings from ``connection:`` and the ``database.*`` options; None (with
    problems added) when they are incomplete or invalid."""
    opath, opts = f"{path}.options", parsed.values
    before = len(problems)

    def pick(conn_key: str, opt_key: str | None, default: Any = None) -> Any:
        in_conn = connection.get(conn_key)
        in_opts = parsed.raw.get(opt_key) if opt_key else None
        if in_conn is not None and in_opts is not None:
            problems.append(ConfigProblem(f"{opath}.{opt_key}", f"given twice: also as {path}.connection.{conn_key}"))
        if in_conn is not None:
            return in_conn
        return opts.get(opt_key) if opt_key and in_opts is not None else default

    host = str(pick("host", "database.hostname", "127.0.0.1"))
    port = pick("port", "database.port", 3306)
    if isinstance(port, str) and port.strip().isdigit():
        port = int(port)
    user = pick("user", "database.user")
    password = pick("password", "database.password")
    database = pick("database", None)
    ssl_mode = _ssl_mode(pick("sslmode", "database.ssl.mode", opts.get("database.ssl.mode")), flavor,
                         path, opath, connection, problems)
    if not user:
        problems.append(ConfigProblem(f"{path}.connection.user", "is required (or options.database.user)"))
    if not (isinstance(port, int) and 1 <= port <= 65535):
        problems.append(ConfigProblem(f"{path}.connection.port", f"must be a TCP port 1..65535, got {port!r}"))
    timeouts = (opts.get("connect.timeout.ms"), opts.get("database.query.timeout.ms"))
    if len(problems) > before or None in timeouts:
        return None
    return MySqlConnectionSettings(
        host=host, port=int(port), user=str(user), password=_secret(password),
        database=str(database) if database else None, ssl_mode=ssl_mode,
        ssl_ca=opts.get("database.ssl.truststore"), ssl_cert_key=opts.get("database.ssl.keystore"),
        ssl_key_password=opts.get("database.ssl.keystore.password"),
        connect_timeout_s=int(opts["connect.timeout.ms"]) / 1000.0,
        query_timeout_s=(int(opts["database.query.timeout.ms"]) / 1000.0) or None,
        initial_statements=split_statements(opts.get("database.initial.statements")))


def _known(option_set: OptionSet, name: str) -> bool:
    """Whether ``name`` is an option (or option family member) of the connector itself."""
    return name in option_set.specs or any(rx.fullmatch(name) for rx, _ in option_set.prefixes)


def require_config(config: MySqlSourceConfig | None, problems: list[ConfigProblem]) -> MySqlSourceConfig:
    """The config, or ConfigError with every problem."""
    if config is None:
        raise ConfigError(problems)
    return config


def _secret(value: Any) -> str | None:
    if value is None:
        return None
    return str(value.get_secret_value()) if hasattr(value, "get_secret_value") else str(value)


def _explain(problem: ConfigProblem, opath: str, raw: Mapping[str, str]) -> ConfigProblem:
    """Clearer messages for removed options and removed ``snapshot.mode`` values."""
    name = problem.path.removeprefix(f"{opath}.")
    if name in REMOVED_OPTIONS and problem.message.startswith("unknown option"):
        return ConfigProblem(problem.path, f"unknown option {name!r}: {REMOVED_OPTIONS[name]}", problem.line)
    if name == "time.precision.mode" and raw.get(name, "").strip().lower() == "adaptive":
        return ConfigProblem(problem.path, (
            "'adaptive' is no longer supported by Debezium's MySQL connector; use adaptive_time_microseconds "
            "(the default) or connect"), problem.line)
    return problem


def _ssl_mode(value: Any, flavor: Flavor, path: str, opath: str, connection: Mapping[str, Any],
              problems: list[ConfigProblem]) -> str:
    text = str(value).strip().lower()
    valid = SSL_MODES[flavor]
    if text not in valid:
        where = f"{path}.connection.sslmode" if connection.get("sslmode") is not None else f"{opath}.database.ssl.mode"
        if not any(p.path == where for p in problems):
            problems.append(ConfigProblem(where, f"invalid value {value!r} for connector {flavor}; valid values: "
                                                 f"{', '.join(valid)}"))
        return "disabled"
    return _SSL_CANONICAL.get(text, text)


def _check_prefix(prefix: str, opath: str, explicit: bool, problems: list[ConfigProblem]) -> None:
    bad = sorted(set(prefix) - _TOPIC_CHARS)
    if not prefix or bad:
        where = f"{opath}.topic.prefix" if explicit else f"{opath}.topic.prefix (defaults to the source name)"
        problems.append(ConfigProblem(where, f"{prefix!r} has invalid characters {bad}: only letters, digits, "
                                             "'_', '-' and '.' are allowed"))


def _mode_choices(option: str) -> tuple[str, ...]:
    spec = options_for("mysql").specs.get(option)
    return spec.choices if spec else ()


def _check_modes(parsed: ParsedOptions, opath: str, problems: list[ConfigProblem]) -> list[str]:
    """Values Debezium accepts but that need Java plug-ins, and deprecated values; returns warnings."""
    raw, warnings = parsed.raw, []
    problems.extend(custom_mode_problems(parsed, opath, {o: _mode_choices(o) for o in CUSTOM_MODES}))
    mode_text = raw.get("snapshot.mode", "").strip().lower()
    if mode_text == "never":
        warnings.append("snapshot.mode=never was removed in Debezium 3.0 (it read the binlog from its start "
                        "without recording table structures); it is read as no_data: the current structures are "
                        "recorded and changes are streamed from now on")
    elif mode_text in SNAPSHOT_MODE_ALIASES:
        warnings.append(f"snapshot.mode={mode_text} was removed in Debezium 3.0; "
                        f"it is read as {SNAPSHOT_MODE_ALIASES[mode_text]}")
    for option in ("event.processing.failure.handling.mode", "event.deserialization.failure.handling.mode",
                   "inconsistent.schema.handling.mode"):
        if raw.get(option, "").strip().lower() == "ignore":
            warnings.append(f"{option}=ignore is deprecated; it is read as skip")
    if "event.deserialization.failure.handling.mode" in raw:
        warnings.append("event.deserialization.failure.handling.mode is deprecated in Debezium; "
                        "use event.processing.failure.handling.mode")
    return warnings


def _check_operations(text: Any, opath: str, problems: list[ConfigProblem]) -> None:
    ops = _operations(text)
    if ops - _SKIPPABLE:
        problems.append(ConfigProblem(f"{opath}.skipped.operations",
                                      f"invalid operations {sorted(ops - _SKIPPABLE)}; valid: c, u, d, t, none"))
    elif "none" in ops and len(ops) > 1:
        problems.append(ConfigProblem(f"{opath}.skipped.operations",
                                      "'none' cannot be combined with other operations"))


def _gtid_filter(raw: Mapping[str, str], opath: str, problems: list[ConfigProblem]) -> Callable[[str], bool] | None:
    """``gtid.source.includes`` / ``excludes`` (case-insensitive anchored regexes; not both)."""
    local: list[ConfigProblem] = []
    includes = regex_list_option(raw, "gtid.source.includes", case_sensitive=False, problems=local)
    excludes = regex_list_option(raw, "gtid.source.excludes", case_sensitive=False, problems=local)
    problems.extend(ConfigProblem(f"{opath}.{p.path}", p.message) for p in local)
    if raw.get("gtid.source.includes") is not None and raw.get("gtid.source.excludes") is not None:
        problems.append(ConfigProblem(f"{opath}.gtid.source.excludes",
                                      "cannot be used together with gtid.source.includes; keep one of them"))
    if includes is not None:
        return includes.matches
    if excludes is not None:
        matches = excludes.matches
        return lambda source: not matches(source)
    return None
