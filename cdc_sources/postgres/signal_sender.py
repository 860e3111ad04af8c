"""``cdc-lakehouse signal`` for PostgreSQL: insert the signal into the signal table, or append it
to the file channel when the signal table is not enabled."""

from __future__ import annotations

from pathlib import Path

import orjson

from cdc_sources.common.signal_options import signal_settings
from cdc_sources.postgres.config import PostgresSourceConfig
from cdc_sources.postgres.connection import connect_sql
from cdc_sources.postgres.errors import classify
from cdc_sources.spi.operations import OperationRefusedError


def send_signal(config: PostgresSourceConfig, signal_id: str, kind: str, data: str | None) -> str:
    """Deliver a signal through the ``source`` channel if enabled, else the ``file`` channel."""
    settings = signal_settings(config.options.values)
    if settings.source_enabled and settings.table is not None:
        schema, table = settings.table.parts
        name = '"' + schema.replace('"', '""') + '"."' + table.replace('"', '""') + '"'
        import psycopg

        with connect_sql(config.connection) as conn:
            try:
                conn.execute(f"INSERT INTO {name} VALUES (%s, %s, %s)", (signal_id, kind, data))
            except psycopg.Error as exc:
                raise classify(exc, where=f"inserting into signal table {settings.table.text}") from None
        return f"signal table {settings.table.text}"
    if settings.file_enabled:
        line = orjson.dumps({"id": signal_id, "type": kind, "data": None if data is None else orjson.loads(data)})
        with Path(settings.file).open("ab") as f:
            f.write(line + b"\n")
        return f"signal file {settings.file}"
    raise OperationRefusedError(
        "no signal channel to write to: set signal.data.collection (channel source) or add file to "
        "signal.enabled.channels")
