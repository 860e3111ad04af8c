"""``cdc-lakehouse signal`` for SQL Server: the signal-table insert (channel choice:
`cdc_sources.common.signal_delivery`), through the connector's gateway in the signal table's database.

With several databases, the row goes into the signal table of each database the signal is for
(`cdc_sources.sqlserver.database_signals`): the databases its ``data-collections`` name, or every
database with a signal table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from cdc_sources.common.signal_delivery import deliver_signal
from cdc_sources.common.signals import CollectionName, SignalError, parse_signal
from cdc_sources.spi import SourceError
from cdc_sources.sqlserver.config import SqlServerConnectionSettings, SqlServerSourceConfig
from cdc_sources.sqlserver.database_signals import signal_databases
from cdc_sources.sqlserver.gateway import Gateway
from cdc_sources.sqlserver.signal_table import SignalTable

__all__ = ["send_signal", "signal_targets"]


def signal_targets(config: SqlServerSourceConfig, row: tuple[str, str, str | None]) -> list[SignalTable]:
    """The signal tables a ``(id, type, data)`` row goes into."""
    tables = list(config.signal_tables)
    if len(tables) <= 1:
        return tables
    try:
        signal = parse_signal(row[0], row[1], row[2], where="the signal")
    except SignalError:
        return tables  # each database logs why it ignores it, as for a row inserted by hand
    wanted = signal_databases(signal, [t.database for t in tables])
    return [t for t in tables if t.database in wanted]


def send_signal(config: SqlServerSourceConfig, open_gateway: Callable[[SqlServerConnectionSettings], Gateway],
                signal_id: str, kind: str, data: str | None) -> str:
    """Deliver a signal through the ``source`` channel if enabled, else the ``file`` channel."""

    sent: list[SignalTable] = []

    def insert(_: CollectionName, row: tuple[str, str, str | None]) -> None:
        import pyodbc

        targets = signal_targets(config, row)
        assert targets  # the source channel is used only with a signal table
        for table in targets:
            gateway = open_gateway(replace(config.connection, databases=(table.database,)))
            try:
                gateway.use_database(table.database)
                gateway.insert_signal(table.schema, table.table, row)
            except pyodbc.Error as exc:
                text = " ".join(str(a) for a in exc.args)
                if config.connection.password:
                    text = text.replace(config.connection.password, "***")
                raise SourceError(f"inserting into signal table {table.text}: {text}") from None
            finally:
                gateway.connection.close()
            sent.append(table)

    where = deliver_signal(config.options.values, signal_id, kind, data, insert)
    return f"signal table {', '.join(t.text for t in sent)}" if sent else where
