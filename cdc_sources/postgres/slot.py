"""Start-up checks, the publication and the replication slot.

Each check fails with a `PostgresSetupError` that says what is wrong and how to fix it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.postgres.catalog import TableInfo
from cdc_sources.postgres.errors import PostgresAuthError, PostgresSetupError, SlotInUseError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SlotState:
    """A replication slot as ``pg_replication_slots`` shows it."""

    name: str
    plugin: str
    database: str
    active_pid: int | None
    confirmed_flush_lsn: int | None
    wal_status: str | None


@dataclass(frozen=True)
class CreatedSlot:
    """A slot just created: where streaming starts and the snapshot consistent with it."""

    consistent_point: int
    snapshot_name: str | None


def check_server(conn: Any, user: str) -> None:
    """wal_level must be logical; the user needs REPLICATION (or superuser)."""
    wal_level = conn.execute("SHOW wal_level").fetchone()[0]
    if wal_level != "logical":
        raise PostgresSetupError(
            f"wal_level is {wal_level!r} but must be 'logical' for change data capture: set "
            "wal_level = logical in postgresql.conf and restart the server")
    row = conn.execute("SELECT rolreplication, rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if row is None or not (row[0] or row[1]):
        raise PostgresAuthError(
            f"user {user!r} lacks the REPLICATION privilege: ALTER ROLE {user} WITH REPLICATION")


def check_identities(tables: Sequence[TableInfo]) -> None:
    """A table without a primary key under REPLICA IDENTITY DEFAULT cannot publish updates/deletes."""
    bad = [t.qualified for t in tables if not t.primary_key and t.replica_identity == "d"]
    if bad:
        raise PostgresSetupError(
            f"tables without a primary key under REPLICA IDENTITY DEFAULT: {', '.join(bad)}. PostgreSQL "
            "rejects their UPDATE/DELETE once published. Add a primary key, run ALTER TABLE ... REPLICA "
            "IDENTITY FULL, or exclude them with table.exclude.list")


def ensure_publication(conn: Any, *, name: str, mode: str, tables: Sequence[TableInfo],
                       via_root: bool, no_match: Callable[[], str] | None = None) -> None:
    """Create or sync the publication per ``publication.autocreate.mode``.

    ``no_match``: the message when ``filtered`` leaves no table (names the filters and tables)."""
    exists = conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (name,)).fetchone()
    ident = _quote(name)
    with_root = " WITH (publish_via_partition_root = true)" if via_root else ""
    table_list = ", ".join(f"{_quote(t.schema)}.{_quote(t.name)}" for t in tables)
    try:
        if mode == "disabled":
            if not exists:
                raise PostgresSetupError(
                    f"publication {name!r} does not exist and publication.autocreate.mode=disabled: "
                    f"CREATE PUBLICATION {ident} FOR TABLE ... or change the mode")
        elif mode == "all_tables" and not exists:
            conn.execute(f"CREATE PUBLICATION {ident} FOR ALL TABLES{with_root}")
        elif mode == "no_tables" and not exists:
            conn.execute(f"CREATE PUBLICATION {ident}")
        elif mode == "filtered":
            if not tables:
                detail = no_match() if no_match else "no table matches the filters"
                raise PostgresSetupError(f"publication.autocreate.mode=filtered but {detail}")
            if exists:
                conn.execute(f"ALTER PUBLICATION {ident} SET TABLE {table_list}")
            else:
                conn.execute(f"CREATE PUBLICATION {ident} FOR TABLE {table_list}{with_root}")
    except Exception as exc:
        if getattr(exc, "sqlstate", None) == "42501":
            raise PostgresAuthError(
                f"not allowed to create or alter publication {name!r}: {str(exc).splitlines()[0]}. "
                "Grant CREATE on the database and table ownership, or pre-create the publication "
                "and set publication.autocreate.mode=disabled") from None
        raise


def slot_state(conn: Any, slot: str) -> SlotState | None:
    row = conn.execute(
        "SELECT slot_name, plugin, database, active_pid, confirmed_flush_lsn::text, wal_status "
        "FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    if row is None:
        return None
    return SlotState(row[0], row[1] or "", row[2] or "", row[3], _lsn(row[4]), row[5])


def check_slot(state: SlotState, *, dbname: str) -> None:
    if state.database != dbname or state.plugin != "pgoutput":
        raise PostgresSetupError(
            f"replication slot {state.name!r} belongs to database {state.database!r} with plugin "
            f"{state.plugin!r}, not {dbname!r}/pgoutput: set a different slot.name")
    if state.active_pid is not None:
        raise SlotInUseError(f"replication slot {state.name!r} is in use by PID {state.active_pid}: "
                             "stop that consumer or set a different slot.name")


def create_slot(repl_cursor: Any, slot: str, *, export_snapshot: bool) -> CreatedSlot:
    """Create a logical slot on the replication connection; optionally export its snapshot.

    The exported snapshot stays usable until the replication connection runs its next command.
    """
    mode = "EXPORT_SNAPSHOT" if export_snapshot else "NOEXPORT_SNAPSHOT"
    repl_cursor.execute(f"CREATE_REPLICATION_SLOT {_quote(slot)} LOGICAL pgoutput {mode}")
    row = repl_cursor.fetchone()
    return CreatedSlot(_lsn(row[1]) or 0, row[2] if export_snapshot else None)


def drop_slot(conn: Any, slot: str) -> None:
    conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                 "WHERE slot_name = %s AND active_pid IS NULL", (slot,))


def _lsn(text: str | None) -> int | None:
    if not text:
        return None
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def quote(ident: str) -> str:
    """An SQL identifier, quoted."""
    return _quote(ident)


def _quote(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'
