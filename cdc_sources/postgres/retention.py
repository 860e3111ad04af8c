"""The WAL a replication slot makes PostgreSQL keep (`pg_replication_slots`)."""

from __future__ import annotations

from typing import Any

from cdc_sources.common.retention import Retention
from cdc_sources.postgres.config import PostgresSourceConfig
from cdc_sources.postgres.connection import connect_sql

_SLOT_SQL = (
    "SELECT s.wal_status, pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn)::bigint, "
    "pg_current_wal_lsn()::text, s.active "
    "FROM pg_replication_slots s WHERE s.slot_name = %s"
)
_KEEP_SQL = "SELECT setting::bigint FROM pg_settings WHERE name = 'max_slot_wal_keep_size'"  # in MB


def slot_retention(config: PostgresSourceConfig, _offset: dict[str, Any]) -> Retention:
    """How much WAL the source's slot holds, and whether PostgreSQL may drop (or has dropped) it.

    Raises:
        PostgresError: the server cannot be reached (classified as the connector does).
    """
    slot = str(config.opt("slot.name"))
    conn = connect_sql(config.connection)
    try:
        keep = conn.execute(_KEEP_SQL).fetchone()
        row = conn.execute(_SLOT_SQL, (slot,)).fetchone()
        current = str(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
    finally:
        conn.close()
    limit = int(keep[0]) << 20 if keep is not None and int(keep[0]) >= 0 else None
    if row is None:
        return Retention(None, limit, True, False, current,
                         f"slot {slot} does not exist: the next capture starts from a new snapshot")
    wal_status, retained, current, active = row[0], row[1], str(row[2]), bool(row[3])
    lost = wal_status == "lost"
    detail = f"slot {slot} ({'active' if active else 'inactive'}), wal_status {wal_status}"
    if lost:
        detail += ": PostgreSQL removed WAL the slot needed; the capture needs a new snapshot"
    return Retention(None if retained is None else int(retained), limit, lost,
                     wal_status in ("unreserved",), current, detail)
