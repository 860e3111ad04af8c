"""``cdc-lakehouse signal`` for MySQL and MariaDB: insert the signal into the signal table, or append
it to the file channel when the signal table is not enabled."""

from __future__ import annotations

from pathlib import Path

import orjson

from cdc_sources.common.signal_options import signal_settings
from cdc_sources.mysql import connection
from cdc_sources.mysql.config import MySqlSourceConfig
from cdc_sources.mysql.errors import classify, error_code
from cdc_sources.spi.operations import OperationRefusedError

__all__ = ["send_signal"]


def send_signal(config: MySqlSourceConfig, signal_id: str, kind: str, data: str | None) -> str:
    """Deliver a signal through the ``source`` channel if enabled, else the ``file`` channel."""
    settings = signal_settings(config.options.values)
    if settings.source_enabled and settings.table is not None:
        database, table = settings.table.parts
        name = "`" + database.replace("`", "``") + "`.`" + table.replace("`", "``") + "`"
        conn = connection.connect(config.connection)
        try:
            with conn.cursor() as cur:
                cur.execute(f"INSERT INTO {name} VALUES (%s, %s, %s)", (signal_id, kind, data))
        except Exception as exc:
            if error_code(exc) is None and not isinstance(exc, OSError):
                raise
            raise classify(exc, where=f"inserting into signal table {settings.table.text}") from None
        finally:
            conn.close()
        return f"signal table {settings.table.text}"
    if settings.file_enabled:
        line = orjson.dumps({"id": signal_id, "type": kind, "data": None if data is None else orjson.loads(data)})
        with Path(settings.file).open("ab") as f:
            f.write(line + b"\n")
        return f"signal file {settings.file}"
    raise OperationRefusedError(
        "no signal channel to write to: set signal.data.collection (channel source) or add file to "
        "signal.enabled.channels")
