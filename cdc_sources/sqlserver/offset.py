"""The SQL Server connector's stored offset, as Debezium 3.6.3's ``SqlServerOffsetContext`` keeps it.

Keys (the same map Debezium stores, so offsets move between the two both ways):

- ``commit_lsn``: commit LSN of the last emitted change, or the snapshot's maximum LSN;
- ``change_lsn``: its change LSN (``NULL`` for a snapshot offset);
- ``event_serial_no``: events emitted so far at that (commit, change, operation) position;
- ``snapshot`` (``INITIAL``/``BLOCKING``) and ``snapshot_completed`` while a snapshot runs
  (written only then); a Debezium 1.x offset's ``snapshot: true`` is read as Debezium reads it;
- ``transaction_id`` and the ``transaction_*`` counters when ``provide.transaction.metadata``
  is on (kept as they are).

`SqlServerOffset.load` reads such a map (typed), `SqlServerOffset.to_map` writes it. Checked
against Debezium's ``SqlServerOffsetContext.Loader`` and ``getOffset`` (test_offset.py). Two
deliberate differences: an LSN that is not ``xxxxxxxx:xxxxxxxx:xxxx`` is rejected (Debezium
reads garbage bytes from it), and ``event_serial_no`` may be any whole number (Debezium fails on
a 32-bit Integer; stored JSON does not tell the two apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from cdc_sources.sqlserver.lsn import Lsn, LsnError, TxLogPosition

__all__ = ["OffsetError", "SnapshotType", "SqlServerOffset"]

COMMIT_LSN = "commit_lsn"
CHANGE_LSN = "change_lsn"
EVENT_SERIAL_NO = "event_serial_no"
SNAPSHOT = "snapshot"
SNAPSHOT_COMPLETED = "snapshot_completed"
_TRANSACTION_PREFIX = "transaction_"


class OffsetError(ValueError):
    """A stored offset this connector cannot read (names the key and the value)."""


class SnapshotType(Enum):
    """``snapshot`` of an offset written while a snapshot runs."""

    INITIAL = "INITIAL"
    BLOCKING = "BLOCKING"
    INCREMENTAL = "INCREMENTAL"


@dataclass(frozen=True)
class SqlServerOffset:
    """A position in the change stream (or of a running snapshot).

    Attributes:
        commit_lsn / change_lsn: see the module doc.
        event_serial_no: events already emitted at ``position`` (a restart skips that many).
        snapshot: the running snapshot's type, None once it completed or when streaming.
        snapshot_completed: ``snapshot_completed`` as stored (False when absent, as Debezium
            reads it); with ``snapshot`` set and False, a snapshot was interrupted.
        transaction: the ``transaction_*`` keys of transaction metadata, as stored.
    """

    commit_lsn: Lsn
    change_lsn: Lsn = Lsn.NULL
    event_serial_no: int = 0
    snapshot: SnapshotType | None = None
    snapshot_completed: bool = False
    transaction: Mapping[str, Any] = field(default_factory=dict)

    @property
    def position(self) -> TxLogPosition:
        """The (commit, change) position; Debezium does not store the operation (it reads 0)."""
        return TxLogPosition(self.commit_lsn, self.change_lsn, 0)

    @property
    def snapshot_running(self) -> bool:
        """An initial snapshot was started and not completed: it must be redone from scratch."""
        return self.snapshot is SnapshotType.INITIAL and not self.snapshot_completed

    @classmethod
    def load(cls, stored: Mapping[str, Any]) -> SqlServerOffset:
        """Read a stored offset map (Debezium's or ours).

        Raises:
            OffsetError: a key holds a value of the wrong kind.
        """
        try:
            commit = Lsn.parse(_text(stored, COMMIT_LSN))
            change = Lsn.parse(_text(stored, CHANGE_LSN))
        except LsnError as exc:
            raise OffsetError(f"stored SQL Server offset: {exc}") from None
        serial = stored.get(EVENT_SERIAL_NO)
        if serial is not None and (isinstance(serial, bool) or not isinstance(serial, int)):
            raise OffsetError(f"stored SQL Server offset: {EVENT_SERIAL_NO} must be a whole number, got {serial!r}")
        snapshot, completed = _snapshot(stored)
        transaction = {k: v for k, v in stored.items() if k.startswith(_TRANSACTION_PREFIX)}
        return cls(commit, change, int(serial or 0), snapshot, completed, transaction)

    def to_map(self) -> dict[str, Any]:
        """The map Debezium stores for this offset (keys in Debezium's order)."""
        out: dict[str, Any] = {}
        if self.snapshot is not None:
            out[SNAPSHOT] = self.snapshot.value
            out[SNAPSHOT_COMPLETED] = self.snapshot_completed
        out[COMMIT_LSN] = str(self.commit_lsn)
        out[CHANGE_LSN] = str(self.change_lsn)
        out[EVENT_SERIAL_NO] = self.event_serial_no
        out.update(self.transaction)
        return out


def _text(stored: Mapping[str, Any], key: str) -> str | None:
    value = stored.get(key)
    if value is not None and not isinstance(value, str):
        raise OffsetError(f"stored SQL Server offset: {key} must be an LSN text, got {value!r}")
    return value


def _snapshot(stored: Mapping[str, Any]) -> tuple[SnapshotType | None, bool]:
    """``snapshot``/``snapshot_completed`` as Debezium's loader reads them: a snapshot type name,
    or a 1.x boolean (``true`` means an initial snapshot); a completed snapshot leaves none."""
    raw, completed_raw = stored.get(SNAPSHOT), stored.get(SNAPSHOT_COMPLETED)
    if completed_raw is not None and not isinstance(completed_raw, bool):
        raise OffsetError(f"stored SQL Server offset: {SNAPSHOT_COMPLETED} must be true or false, "
                          f"got {completed_raw!r}")
    completed = bool(completed_raw)
    if raw is None or raw is False:
        return None, completed
    if raw is True:
        kind = SnapshotType.INITIAL
    elif isinstance(raw, str) and raw in SnapshotType.__members__:
        kind = SnapshotType[raw]
    else:
        raise OffsetError(f"stored SQL Server offset: {SNAPSHOT} must be INITIAL or BLOCKING, got {raw!r}")
    return (None, True) if completed else (kind, False)
