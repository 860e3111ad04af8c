"""``cdc-lakehouse signal`` for Oracle: the signal-table insert (channel choice:
`cdc_sources.common.signal_delivery`).

``signal.data.collection`` is ``<database>.<schema>.<table>`` (`cdc_sources.oracle.signal_table`);
the row ``(id, type, data)`` is inserted with the incremental snapshot's watermark statement
(``INSERT INTO "<schema>"."<table>" VALUES (:b1, :b2, :b3)``, values bound) through the gateway,
and committed: capture reads it when LogMiner mines that commit.
"""

from __future__ import annotations

from collections.abc import Callable

from cdc_sources.common.signal_delivery import deliver_signal
from cdc_sources.common.signals import CollectionName
from cdc_sources.oracle import gateway as gw
from cdc_sources.oracle.chunk_statements import signal_insert
from cdc_sources.oracle.config import OracleSourceConfig
from cdc_sources.oracle.signal_table import oracle_signal_settings
from cdc_sources.spi import SourceError

__all__ = ["send_signal"]


def _database_errors() -> tuple[type[Exception], ...]:
    try:
        import oracledb
    except ImportError:
        return ()
    return (oracledb.Error,)


def send_signal(config: OracleSourceConfig, connect: Callable[[], gw.Connection], signal_id: str, kind: str,
                data: str | None) -> str:
    """Deliver a signal through the ``source`` channel if enabled, else the ``file`` channel."""
    values = config.options.values
    database = str(values.get("database.pdb.name") or config.connection.service)

    def insert(_: CollectionName, row: tuple[str, str, str | None]) -> None:
        table = oracle_signal_settings(values, database).table
        assert table is not None  # the source channel is used only with a signal table
        owner, name = table.parts
        gateway = gw.OracleGateway(connect(), fetch_size=1)
        try:
            gateway.run(signal_insert(owner, name), row)
            gateway.commit()
        except _database_errors() as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if config.connection.password:
                text = text.replace(config.connection.password, "***")
            raise SourceError(f"source {config.name}: inserting into signal table {owner}.{name}: {text}") from None
        finally:
            gateway.close()

    return deliver_signal(values, signal_id, kind, data, insert)
