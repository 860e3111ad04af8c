"""``cdc-lakehouse signal`` for MySQL and MariaDB: the signal-table insert (channel choice:
`cdc_sources.common.signal_delivery`)."""

from __future__ import annotations

from cdc_sources.common.signal_delivery import deliver_signal
from cdc_sources.common.signals import CollectionName
from cdc_sources.mysql import connection
from cdc_sources.mysql.config import MySqlSourceConfig
from cdc_sources.mysql.errors import classify, error_code

__all__ = ["send_signal"]


def send_signal(config: MySqlSourceConfig, signal_id: str, kind: str, data: str | None) -> str:
    """Deliver a signal through the ``source`` channel if enabled, else the ``file`` channel."""

    def insert(table: CollectionName, row: tuple[str, str, str | None]) -> None:
        database, name = table.parts
        quoted = "`" + database.replace("`", "``") + "`.`" + name.replace("`", "``") + "`"
        conn = connection.connect(config.connection)
        try:
            with conn.cursor() as cur:
                cur.execute(f"INSERT INTO {quoted} VALUES (%s, %s, %s)", row)
        except Exception as exc:
            if error_code(exc) is None and not isinstance(exc, OSError):
                raise
            raise classify(exc, where=f"inserting into signal table {table.text}") from None
        finally:
            conn.close()

    return deliver_signal(config.options.values, signal_id, kind, data, insert)
