"""The ``source`` block of Debezium 3.6.3's Oracle connector (``io.debezium.connector.oracle.Source``).

Field order and types are those of ``OracleSourceInfoStructMaker`` (checked against it by
``tests/cdc_sources/oracle/test_offset.py``). Differences from the 2.x documentation: ``ssn`` is
INT64 (it was INT32, written as -1 above 2^31), and ``ts_us``, ``ts_ns``, ``redo_sql``,
``row_id``, ``commit_ts_ms``, ``start_scn``, ``start_ts_ms`` and ``txSeq`` are new (optional).
``scn`` and ``commit_scn`` are text, ``txId`` the LogMiner XID as 16 lower-case hex digits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SNAPSHOT_ENUM", "OracleEvent", "OracleSourceInfo", "source_schema"]

SNAPSHOT_ENUM = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"


def _f(kind: str, name: str, optional: bool = True) -> dict[str, Any]:
    return {"type": kind, "optional": optional, "field": name}


def source_schema() -> dict[str, Any]:
    """The ``source`` struct schema as JsonConverter writes it (``schemas.enable=true``)."""
    return {
        "type": "struct",
        "fields": [
            _f("string", "version", False), _f("string", "connector", False), _f("string", "name", False),
            _f("int64", "ts_ms", False),
            {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
             "parameters": {"allowed": SNAPSHOT_ENUM}, "default": "false", "field": "snapshot"},
            _f("string", "db", False), _f("string", "sequence"), _f("int64", "ts_us"), _f("int64", "ts_ns"),
            _f("string", "schema", False), _f("string", "table", False), _f("string", "txId"),
            _f("string", "scn"), _f("string", "commit_scn"), _f("string", "lcr_position"), _f("string", "rs_id"),
            _f("int64", "ssn"), _f("int32", "redo_thread"), _f("string", "user_name"), _f("string", "redo_sql"),
            _f("string", "row_id"), _f("int64", "commit_ts_ms"), _f("string", "start_scn"),
            _f("int64", "start_ts_ms"), _f("int64", "txSeq"),
        ],
        "optional": False,
        "name": "io.debezium.connector.oracle.Source",
        "version": 1,
    }


@dataclass(frozen=True, slots=True)
class OracleEvent:
    """What one change contributes to its ``source`` block (from its LogMiner row)."""

    schema: str
    table: str
    ts_ms: int
    """The change's time in the database (LogMiner ``TIMESTAMP``, whole seconds)."""
    scn: int | None = None
    commit_scn: int | None = None
    xid: str | None = None
    tx_sequence: int | None = None
    user_name: str | None = None
    rs_id: str | None = None
    ssn: int = 0
    redo_thread: int | None = None
    commit_ts_ms: int | None = None
    start_scn: int | None = None
    start_ts_ms: int | None = None
    snapshot: str = "false"
    redo_sql: str | None = None
    row_id: str | None = None


@dataclass(frozen=True, slots=True)
class OracleSourceInfo:
    """The parts of a ``source`` block fixed for a connector run."""

    name: str
    """``topic.prefix``."""
    db: str
    """``database.pdb.name`` when set, else ``database.dbname``."""
    version: str = "3.6.3.Final"

    def block(self, e: OracleEvent) -> dict[str, Any]:
        """One ``source`` block, in `source_schema` order."""
        return {
            "version": self.version, "connector": "oracle", "name": self.name, "ts_ms": e.ts_ms,
            "snapshot": e.snapshot, "db": self.db, "sequence": None,
            "ts_us": e.ts_ms * 1000, "ts_ns": e.ts_ms * 1_000_000,
            "schema": e.schema, "table": e.table, "txId": e.xid,
            "scn": None if e.scn is None else str(e.scn),
            "commit_scn": str(e.commit_scn) if e.commit_scn else None,
            "lcr_position": None, "rs_id": e.rs_id, "ssn": e.ssn, "redo_thread": e.redo_thread,
            "user_name": e.user_name, "redo_sql": e.redo_sql or None, "row_id": e.row_id or None,
            "commit_ts_ms": e.commit_ts_ms, "start_scn": str(e.start_scn) if e.start_scn else None,
            "start_ts_ms": e.start_ts_ms, "txSeq": e.tx_sequence,
        }
