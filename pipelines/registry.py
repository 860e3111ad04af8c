"""Connector registry: the only place that imports `cdc_sources.<db>` packages.

A connector's package, and with it its database driver, is imported only when a pipeline uses
that connector (the imports are inside the builders), so an install with one connector's extra
runs without the other's. A missing driver raises `MissingDependencyError` naming the extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from cdc_sources.common.options import OptionSet
from cdc_sources.common.retention import Retention
from cdc_sources.spi import ConfigError, ConfigProblem, Connector
from pipelines.config import SourceSpec
from pipelines.extras import CONNECTOR_DRIVERS, missing_dependency, require

Builder = Callable[[SourceSpec, str], tuple[Connector | None, list[ConfigProblem]]]


def _postgres(spec: SourceSpec, path: str) -> tuple[Connector | None, list[ConfigProblem]]:
    from cdc_sources.postgres import PostgresConnector, build_postgres_config

    conn: dict[str, Any] = spec.connection.model_dump(exclude_none=True)
    config, problems = build_postgres_config(name=spec.name, connection=conn, options=spec.options, path=path)
    return (PostgresConnector(config) if config else None), problems


def _binlog(flavor: Literal["mysql", "mariadb"]) -> Builder:
    def build(spec: SourceSpec, path: str) -> tuple[Connector | None, list[ConfigProblem]]:
        from cdc_sources.mysql import MySqlConnector, build_mysql_config

        conn: dict[str, Any] = spec.connection.model_dump(exclude_none=True)
        config, problems = build_mysql_config(name=spec.name, connection=conn, options=spec.options, path=path,
                                              flavor=flavor)
        return (MySqlConnector(config) if config else None), problems

    return build


def _sqlserver(spec: SourceSpec, path: str) -> tuple[Connector | None, list[ConfigProblem]]:
    from cdc_sources.sqlserver.config import build_sqlserver_config
    from cdc_sources.sqlserver.connector import SqlServerConnector

    conn: dict[str, Any] = spec.connection.model_dump(exclude_none=True)
    config, problems = build_sqlserver_config(name=spec.name, connection=conn, options=spec.options, path=path)
    return (SqlServerConnector(config) if config else None), problems


def _oracle(spec: SourceSpec, path: str) -> tuple[Connector | None, list[ConfigProblem]]:
    from cdc_sources.oracle import OracleConnector, build_oracle_config

    conn: dict[str, Any] = spec.connection.model_dump(exclude_none=True)
    config, problems = build_oracle_config(name=spec.name, connection=conn, options=spec.options, path=path)
    return (OracleConnector(config) if config else None), problems


CONNECTORS: dict[str, Builder] = {"postgres": _postgres, "mysql": _binlog("mysql"), "mariadb": _binlog("mariadb"),
                                  "sqlserver": _sqlserver, "oracle": _oracle}

def declared_options(connector: str) -> OptionSet | None:
    """The option declarations of a connector (None: unknown connector). Pure modules: no driver."""
    if connector == "postgres":
        from cdc_sources.postgres.options import POSTGRES_OPTIONS
        return POSTGRES_OPTIONS
    if connector in ("mysql", "mariadb"):
        from cdc_sources.mysql.options import MARIADB_OPTIONS, MYSQL_OPTIONS
        return MYSQL_OPTIONS if connector == "mysql" else MARIADB_OPTIONS
    if connector == "sqlserver":
        from cdc_sources.sqlserver.options import SQLSERVER_OPTIONS
        return SQLSERVER_OPTIONS
    if connector == "oracle":
        from cdc_sources.oracle.options import ORACLE_OPTIONS
        return ORACLE_OPTIONS
    return None


def build_connector(spec: SourceSpec, path: str) -> tuple[Connector | None, list[ConfigProblem]]:
    """Validate a source's options and build its connector; returns every problem found.

    Raises:
        MissingDependencyError: the connector's driver is not installed (names the extra).
    """
    builder = CONNECTORS.get(spec.connector)
    if builder is None:
        return None, [ConfigProblem(f"{path}.connector",
                                    f"the {spec.connector!r} connector is not available yet; available: "
                                    f"{', '.join(sorted(CONNECTORS))}")]
    extra, drivers = CONNECTOR_DRIVERS[spec.connector]
    require(drivers, extra)
    try:
        return builder(spec, path)
    except ModuleNotFoundError as exc:  # a driver module below the checked ones
        missing = missing_dependency(exc)
        if missing is None:
            raise
        raise missing from exc


RetentionProbe = Callable[[dict[str, Any]], Retention]


def retention_probe(spec: SourceSpec, path: str) -> RetentionProbe:
    """A function of a stored offset that connects to the source and measures the log it keeps
    for the capture (`cdc_sources.common.retention.Retention`).

    Raises:
        ConfigError: the source's options are invalid.
        MissingDependencyError: the connector's driver is not installed (names the extra).
    """
    if spec.connector == "oracle":
        raise ConfigError([ConfigProblem(f"{path}.connector", "the 'oracle' connector does not measure the redo "
                                                              "and archive logs the database keeps")])
    extra, drivers = CONNECTOR_DRIVERS[spec.connector]
    require(drivers, extra)
    conn: dict[str, Any] = spec.connection.model_dump(exclude_none=True)
    if spec.connector == "postgres":
        from cdc_sources.postgres.config import build_postgres_config
        from cdc_sources.postgres.retention import slot_retention

        pg, problems = build_postgres_config(name=spec.name, connection=conn, options=spec.options, path=path)
        if pg is None:
            raise ConfigError(problems)
        return lambda offset: slot_retention(pg, offset)
    from cdc_sources.mysql.config import build_mysql_config
    from cdc_sources.mysql.retention import binlog_retention

    flavor: Literal["mysql", "mariadb"] = "mariadb" if spec.connector == "mariadb" else "mysql"
    my, problems = build_mysql_config(name=spec.name, connection=conn, options=spec.options, path=path, flavor=flavor)
    if my is None:
        raise ConfigError(problems)
    return lambda offset: binlog_retention(my, offset)
