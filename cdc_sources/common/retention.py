"""What the source keeps for the capture: WAL held by a PostgreSQL slot, binlogs a MySQL capture still needs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Retention:
    """The source-side log the capture's position holds back.

    Attributes:
        retained_bytes: log bytes between the capture's position and the server's current
            position (PostgreSQL: WAL kept for the slot, from its restart LSN; MySQL: binlog
            bytes after the stored ``file:pos``); None when unknown.
        limit_bytes: the server's own cap on it (PostgreSQL's ``max_slot_wal_keep_size``), if any.
        lost: the log the capture needs is gone (the slot is missing or invalidated, the binlog
            file was purged): resuming needs a new snapshot.
        at_risk: the server may soon drop it (PostgreSQL ``wal_status`` ``unreserved``; MySQL:
            the capture's binlog is the oldest the server keeps).
        server_position: the server's current position in its own notation.
        detail: one line for people (slot and its ``wal_status``, the binlog file).
    """

    retained_bytes: int | None
    limit_bytes: int | None
    lost: bool
    at_risk: bool
    server_position: str
    detail: str
