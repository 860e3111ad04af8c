"""Connector registry: the only place that imports `cdc_sources.<db>` packages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from cdc_sources.mysql import MySqlConnector, build_mysql_config
from cdc_sources.postgres import PostgresConnector, build_postgres_config
from cdc_sources.spi import ConfigProblem, Connector
from pipelines.config import SourceSpec

Builder = Callable[[SourceSpec, str], tuple[Connector | None, list[ConfigProblem]]]


def _postgres(spec: SourceSpec, path: str) -> tuple[Connector | None, list[ConfigProblem]]:
    conn: dict[str, Any] = spec.connection.model_dump(exclude_none=True)
    config, problems = build_postgres_config(name=spec.name, connection=conn, options=spec.options, path=path)
    return (PostgresConnector(config) if config else None), problems


def _binlog(flavor: Literal["mysql", "mariadb"]) -> Builder:
    def build(spec: SourceSpec, path: str) -> tuple[Connector | None, list[ConfigProblem]]:
        conn: dict[str, Any] = spec.connection.model_dump(exclude_none=True)
        config, problems = build_mysql_config(name=spec.name, connection=conn, options=spec.options, path=path,
                                              flavor=flavor)
        return (MySqlConnector(config) if config else None), problems

    return build


CONNECTORS: dict[str, Builder] = {"postgres": _postgres, "mysql": _binlog("mysql"), "mariadb": _binlog("mariadb")}


def build_connector(spec: SourceSpec, path: str) -> tuple[Connector | None, list[ConfigProblem]]:
    """Validate a source's options and build its connector; returns every problem found."""
    builder = CONNECTORS.get(spec.connector)
    if builder is None:
        return None, [ConfigProblem(f"{path}.connector",
                                    f"the {spec.connector!r} connector is not available yet; available: "
                                    f"{', '.join(sorted(CONNECTORS))}")]
    return builder(spec, path)
