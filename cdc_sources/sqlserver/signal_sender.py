"""``cdc-lakehouse signal`` for SQL Server: the signal-table insert (channel choice:
`cdc_sources.common.signal_delivery`), through the connector's gateway in the signal table's database."""

from __future__ import annotations

from collections.abc import Callable

from cdc_sources.common.signal_delivery import deliver_signal
from cdc_sources.common.signals import CollectionName
from cdc_sources.spi import SourceError
from cdc_sources.sqlserver.config import SqlServerConnectionSettings, SqlServerSourceConfig
from cdc_sources.sqlserver.gateway import Gateway

__all__ = ["send_signal"]


def send_signal(config: SqlServerSourceConfig, open_gateway: Callable[[SqlServerConnectionSettings], Gateway],
                signal_id: str, kind: str, data: str | None) -> str:
    """Deliver a signal through the ``source`` channel if enabled, else the ``file`` channel."""

    def insert(_: CollectionName, row: tuple[str, str, str | None]) -> None:
        import pyodbc

        table = config.signal_table
        assert table is not None  # the source channel is used only with a signal table
        gateway = open_gateway(config.connection)
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

    return deliver_signal(config.options.values, signal_id, kind, data, insert)
