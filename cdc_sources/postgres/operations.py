"""Operations on a PostgreSQL source: rewind streaming to an LSN, decommission (drop the slot).

A logical slot never sends again what it has confirmed: PostgreSQL starts a stream at the
slot's ``confirmed_flush_lsn`` when asked for an earlier LSN. So a rewind is possible only to
an LSN at or after it (and after ``restart_lsn``, the oldest WAL the slot keeps); an earlier
one is refused rather than silently streaming from elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_sources.postgres import slot as slots
from cdc_sources.postgres.config import PostgresSourceConfig
from cdc_sources.postgres.connection import connect_sql
from cdc_sources.postgres.lsn import Lsn, LsnFormatError
from cdc_sources.postgres.offset import PostgresOffset
from cdc_sources.spi.operations import OperationRefusedError, PositionFormatError, Rewind, RewindRefusedError


def parse_position(text: str) -> Lsn:
    """An LSN in PostgreSQL's notation (``0/1A4AA58``).

    Raises:
        PositionFormatError: it is not one.
    """
    try:
        return Lsn.parse(text.strip())
    except LsnFormatError as exc:
        raise PositionFormatError(f"{exc}; a PostgreSQL source is rewound to an LSN") from None


def rewind(config: PostgresSourceConfig, position: str, stored: Mapping[str, Any] | None) -> Rewind:
    """Check the slot can stream from ``position`` and return the offset that resumes there."""
    lsn = parse_position(position)
    slot = str(config.opt("slot.name"))
    conn = connect_sql(config.connection)
    try:
        row = conn.execute("SELECT confirmed_flush_lsn::text, restart_lsn::text, wal_status, active_pid "
                           "FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    finally:
        conn.close()
    if row is None:
        raise RewindRefusedError(f"replication slot {slot!r} does not exist: there is nothing to stream from; "
                                 "reset the source (without --to) for a new snapshot")
    confirmed, restart, wal_status, active = (Lsn.parse(row[0]) if row[0] else None,
                                              Lsn.parse(row[1]) if row[1] else None, row[2], row[3])
    if active is not None:
        raise RewindRefusedError(f"replication slot {slot!r} is in use by PID {active}: stop that consumer first")
    if wal_status == "lost":
        raise RewindRefusedError(f"replication slot {slot!r} has lost the WAL it needs (wal_status lost); reset "
                                 "the source (without --to) for a new snapshot")
    if confirmed is not None and lsn < confirmed:
        raise RewindRefusedError(
            f"replication slot {slot!r} has confirmed everything up to {confirmed}: PostgreSQL never sends "
            f"changes before a slot's confirmed_flush_lsn again, so {lsn} cannot be served (the earliest "
            f"position is {confirmed}); reset the source (without --to) for a new snapshot instead")
    if restart is not None and lsn < restart:
        raise RewindRefusedError(f"replication slot {slot!r} keeps WAL only from {restart}: {lsn} is gone")
    current = PostgresOffset.from_dict(stored) if stored else None
    offset = PostgresOffset(lsn.value, lsn_commit=lsn.value, ts_usec=current.ts_usec if current else None,
                            slot=slot).to_dict()
    return Rewind(offset, f"LSN {lsn}")


def decommission(config: PostgresSourceConfig) -> list[str]:
    """Drop the replication slot, and the publication if capture creates it (autocreate mode)."""
    slot = str(config.opt("slot.name"))
    publication = str(config.opt("publication.name"))
    mode = str(config.opt("publication.autocreate.mode"))
    done: list[str] = []
    conn = connect_sql(config.connection)
    try:
        state = slots.slot_state(conn, slot)
        if state is None:
            done.append(f"replication slot {slot!r} does not exist (already dropped)")
        elif state.active_pid is not None:
            raise OperationRefusedError(f"replication slot {slot!r} is in use by PID {state.active_pid}: stop that "
                                     "consumer first")
        else:
            slots.drop_slot(conn, slot)
            done.append(f"dropped replication slot {slot!r}")
        if mode == "disabled":
            done.append(f"kept publication {publication!r} (publication.autocreate.mode=disabled: not created "
                        "by capture)")
        elif conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)).fetchone():
            conn.execute(f"DROP PUBLICATION {slots.quote(publication)}")
            done.append(f"dropped publication {publication!r} (created by capture, publication.autocreate.mode="
                        f"{mode})")
        else:
            done.append(f"publication {publication!r} does not exist")
    finally:
        conn.close()
    return done
