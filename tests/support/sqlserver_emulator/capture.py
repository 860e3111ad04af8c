"""``cdc-lakehouse`` with its SQL Server connector pointed at the CDC emulator (test infrastructure).

The pipeline's ``connector: sqlserver`` source names the PostgreSQL server that holds the
emulator (``connection.host``/``port``/``user``, ``options.database.names``); `emulated` swaps
the connector's gateway factory for one that reaches the emulator through the PostgreSQL ODBC
driver, with the emulator's T-SQL translation. Everything else (registry, coordinator, bronze
writer) is the real code. ``python -m tests.support.sqlserver_emulator.capture ARGS`` runs the
CLI that way (a capture to SIGKILL).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from cdc_sources.sqlserver.config import SqlServerConnectionSettings
from cdc_sources.sqlserver.gateway import Gateway
from pipelines import registry
from tests.support.capture_process import TracePlan, traced_capture
from tests.support.sqlserver_emulator import SqlServerEmulator

__all__ = ["emulated", "emulator_gateway", "traced_emulated_capture"]


def emulator_gateway(settings: SqlServerConnectionSettings) -> Gateway:
    """The connector's gateway on the emulator that ``settings`` name."""
    dsn = f"host={settings.host} port={settings.port} user={settings.user} dbname={settings.databases[0]}"
    return SqlServerEmulator(dsn).gateway()


@contextmanager
def emulated() -> Iterator[None]:
    """Builds ``connector: sqlserver`` sources with `emulator_gateway` while the block runs."""
    original = registry.CONNECTORS["sqlserver"]

    def build(spec: Any, path: str) -> Any:
        connector, problems = original(spec, path)
        return (replace(connector, gateway_factory=emulator_gateway) if connector is not None else None), problems

    registry.CONNECTORS["sqlserver"] = build
    try:
        yield
    finally:
        registry.CONNECTORS["sqlserver"] = original


def traced_emulated_capture(pipeline_text: str, plan: TracePlan) -> None:
    """Child-process entry: `tests.support.capture_process.traced_capture` (its kill points) on
    the emulator."""
    with emulated():
        traced_capture(pipeline_text, plan)


def main(argv: list[str]) -> int:
    from pipelines.cli import main as cli

    with emulated():
        return cli(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
