"""``cdc-lakehouse signal`` for PostgreSQL: the signal-table insert (channel choice:
`cdc_sources.common.signal_delivery`)."""

from __future__ import annotations

from cdc_sources.common.signal_delivery import deliver_signal
from cdc_sources.common.signals import CollectionName
from cdc_sources.postgres.config import PostgresSourceConfig
from cdc_sources.postgres.connection import connect_sql
from cdc_sources.postgres.errors import classify

__all__ = ["send_signal"]


def send_signal(config: PostgresSourceConfig, signal_id: str, kind: str, data: str | None) -> str:
    """Deliver a signal through the ``source`` channel if enabled, else the ``file`` channel."""

    def insert(table: CollectionName, row: tuple[str, str, str | None]) -> None:
        import psycopg

        schema, name = table.parts
        quoted = '"' + schema.replace('"', '""') + '"."' + name.replace('"', '""') + '"'
        with connect_sql(config.connection) as conn:
            try:
                conn.execute(f"INSERT INTO {quoted} VALUES (%s, %s, %s)", row)
            except psycopg.Error as exc:
                raise classify(exc, where=f"inserting into signal table {table.text}") from None

    return deliver_signal(config.options.values, signal_id, kind, data, insert)
