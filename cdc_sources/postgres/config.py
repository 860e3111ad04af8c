"""The PostgreSQL connector's typed configuration, built from validated options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_sources.common.options import CUSTOM_MODES, ParsedOptions, custom_mode_problems
from cdc_sources.common.signal_options import signal_problems
from cdc_sources.postgres.options import POSTGRES_OPTIONS
from cdc_sources.postgres.policy import FilterPolicy
from cdc_sources.spi import ConfigError, ConfigProblem
from cdc_sources.spi.retry import RetryPolicy


@dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to connect. ``password`` is never printed (see ``__repr__``)."""

    host: str
    port: int
    dbname: str
    user: str
    password: str | None = field(default=None, repr=False)
    sslmode: str = "prefer"
    extra: Mapping[str, str] = field(default_factory=dict)

    def libpq_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"host": self.host, "port": self.port, "dbname": self.dbname,
                              "user": self.user, "sslmode": self.sslmode, **self.extra}
        if self.password:
            kw["password"] = self.password
        return kw

    def describe(self) -> str:
        """``user@host:port/dbname``: safe to log."""
        return f"{self.user}@{self.host}:{self.port}/{self.dbname}"


@dataclass(frozen=True)
class PostgresSourceConfig:
    """Everything the connector needs: logical name, connection and options.

    Attributes:
        name: the logical server name, ``topic.prefix``.
        connection: connection settings.
        options: the validated Debezium options (every option, defaults filled in).
        policy: the table/column/message filters and column transforms.
        retry: how the capture retries after a retriable error (``errors.*`` options).
    """

    name: str
    connection: ConnectionSettings
    options: ParsedOptions
    policy: FilterPolicy
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def opt(self, name: str) -> Any:
        return self.options.get(name)

    @property
    def skipped_operations(self) -> frozenset[str]:
        text = (self.options.text("skipped.operations") or "").strip().lower()
        ops = {p.strip() for p in text.split(",") if p.strip()}
        return frozenset() if ops <= {"none"} else frozenset(ops)


_SKIPPABLE = {"c", "u", "d", "t", "none"}


def build_postgres_config(
    *, name: str, connection: Mapping[str, Any], options: Mapping[str, Any], path: str
) -> tuple[PostgresSourceConfig | None, list[ConfigProblem]]:
    """Validate options and connection settings; return the config or every problem found."""
    parsed, problems = POSTGRES_OPTIONS.parse(options, path=f"{path}.options")
    opts = parsed.values

    def pick(conn_key: str, opt_key: str, default: Any = None) -> Any:
        in_conn, in_opts = connection.get(conn_key), parsed.raw.get(opt_key)
        if in_conn is not None and in_opts is not None:
            problems.append(ConfigProblem(f"{path}.options.{opt_key}",
                                          f"given twice: also as {path}.connection.{conn_key}"))
        return in_conn if in_conn is not None else (opts.get(opt_key) if in_opts is not None else default)

    host = pick("host", "database.hostname", "127.0.0.1")
    port = pick("port", "database.port", 5432)
    dbname = pick("database", "database.dbname")
    user = pick("user", "database.user")
    password = pick("password", "database.password")
    sslmode = pick("sslmode", "database.sslmode", "prefer")
    for key, value in (("database", dbname), ("user", user)):
        if not value:
            problems.append(ConfigProblem(f"{path}.connection.{key}", "is required"))
    skipped = {p.strip().lower() for p in str(opts.get("skipped.operations") or "").split(",") if p.strip()}
    if skipped - _SKIPPABLE:
        problems.append(ConfigProblem(
            f"{path}.options.skipped.operations",
            f"invalid operations {sorted(skipped - _SKIPPABLE)}; valid: c, u, d, t, none"))
    slot = str(opts.get("slot.name") or "")
    if not slot or not all(ch.islower() or ch.isdigit() or ch == "_" for ch in slot):
        problems.append(ConfigProblem(f"{path}.options.slot.name",
                                      f"{slot!r} is not a valid slot name: use lower-case letters, digits, _"))
    problems.extend(custom_mode_problems(parsed, f"{path}.options",
                                         {o: POSTGRES_OPTIONS.specs[o].choices for o in CUSTOM_MODES}))
    problems.extend(signal_problems(parsed.raw, f"{path}.options"))
    policy, policy_problems = FilterPolicy.from_options(parsed.raw)
    problems.extend(ConfigProblem(f"{path}.options.{p.path}", p.message) for p in policy_problems)
    if opts.get("max.queue.size") is not None and opts["max.queue.size"] <= opts["max.batch.size"]:
        problems.append(ConfigProblem(f"{path}.options.max.queue.size", "must be greater than max.batch.size"))
    retry, retry_problems = RetryPolicy.from_options(opts.get, f"{path}.options")
    problems.extend(retry_problems)
    if problems:
        return None, problems
    extra = {k.removeprefix("driver."): v for k, v in parsed.items_with_prefix("driver.").items()}
    secret = password.get_secret_value() if hasattr(password, "get_secret_value") else password
    conn = ConnectionSettings(str(host), int(port), str(dbname), str(user), secret, str(sslmode), extra)
    prefix = str(opts.get("topic.prefix") or name)
    return PostgresSourceConfig(prefix, conn, parsed, policy, retry), []


def require_config(config: PostgresSourceConfig | None, problems: list[ConfigProblem]) -> PostgresSourceConfig:
    if config is None:
        raise ConfigError(problems)
    return config
