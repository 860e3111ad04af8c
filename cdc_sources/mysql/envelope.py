"""The ``source`` block of Debezium's MySQL and MariaDB connectors (``io.debezium.connector.<c>.Source``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SNAPSHOT_ENUM = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"


def source_schema(connector: str) -> dict[str, Any]:
    """The ``source`` field schema, in Debezium 3.6.3's field order (common fields, then binlog ones)."""
    return {
        "type": "struct",
        "fields": [
            {"type": "string", "optional": False, "field": "version"},
            {"type": "string", "optional": False, "field": "connector"},
            {"type": "string", "optional": False, "field": "name"},
            {"type": "int64", "optional": False, "field": "ts_ms"},
            {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
             "parameters": {"allowed": SNAPSHOT_ENUM}, "default": "false", "field": "snapshot"},
            {"type": "string", "optional": False, "field": "db"},
            {"type": "string", "optional": True, "field": "sequence"},
            {"type": "int64", "optional": True, "field": "ts_us"},
            {"type": "int64", "optional": True, "field": "ts_ns"},
            {"type": "string", "optional": True, "field": "table"},
            {"type": "int64", "optional": False, "field": "server_id"},
            {"type": "string", "optional": True, "field": "gtid"},
            {"type": "string", "optional": False, "field": "file"},
            {"type": "int64", "optional": False, "field": "pos"},
            {"type": "int32", "optional": False, "field": "row"},
            {"type": "int64", "optional": True, "field": "thread"},
            {"type": "string", "optional": True, "field": "query"},
        ],
        "optional": False,
        "name": f"io.debezium.connector.{connector}.Source",
        "version": 1,
        "field": "source",
    }


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """The parts of a ``source`` block fixed for a connector run.

    Attributes:
        connector: ``mysql`` or ``mariadb`` (``source.connector``).
        name: ``topic.prefix``.
        version: the Debezium version reproduced.
    """

    connector: str
    name: str
    version: str

    def block(self, *, db: str, table: str | None, ts_ms: int, snapshot: str, server_id: int, gtid: str | None,
              file: str, pos: int, row: int, thread: int | None = None, query: str | None = None) -> dict[str, Any]:
        """One ``source`` block; ``ts_ms`` is the binlog event time (1 s resolution) or the snapshot time."""
        return {
            "version": self.version,
            "connector": self.connector,
            "name": self.name,
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": db,
            "sequence": None,
            "ts_us": ts_ms * 1000,
            "ts_ns": ts_ms * 1_000_000,
            "table": table,
            "server_id": server_id,
            "gtid": gtid,
            "file": file,
            "pos": pos,
            "row": row,
            "thread": thread,
            "query": query,
        }
