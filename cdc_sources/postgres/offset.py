"""The PostgreSQL connector's offset, in Debezium's offset keys.

Streaming offsets look like Debezium's (``lsn``, ``lsn_proc``, ``lsn_commit``, ``txId``,
``ts_usec``, ``messageType``); snapshot offsets carry ``snapshot: "INITIAL"``,
``last_snapshot_record`` and ``snapshot_completed``. ``lsn`` is where streaming resumes:
PostgreSQL re-sends every transaction that commits after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FORMAT_VERSION = 1

K_LSN = "lsn"
K_LSN_PROC = "lsn_proc"
K_LSN_COMMIT = "lsn_commit"
K_TXID = "txId"
K_TS_USEC = "ts_usec"
K_SNAPSHOT = "snapshot"
K_LAST_SNAPSHOT_RECORD = "last_snapshot_record"
K_SNAPSHOT_COMPLETED = "snapshot_completed"
K_SLOT = "slot"
K_FORMAT = "format_version"


@dataclass(frozen=True)
class PostgresOffset:
    """A resumable position in a PostgreSQL source.

    Attributes:
        lsn: resume streaming here.
        lsn_commit: the end LSN of the last transaction completely processed (Debezium's
            ``lsn_commit``; the first element of ``source.sequence``).
        tx_id: the xid of the last transaction processed, if any.
        ts_usec: its commit time, Unix µs.
        snapshot: True while the initial snapshot is running (its records carry this offset).
        last_snapshot_record: True on the snapshot's final record.
        slot: the replication slot the offset belongs to.
    """

    lsn: int
    lsn_commit: int | None = None
    tx_id: int | None = None
    ts_usec: int | None = None
    snapshot: bool = False
    last_snapshot_record: bool = False
    slot: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any]
        if self.snapshot:
            out = {K_LAST_SNAPSHOT_RECORD: self.last_snapshot_record, K_LSN: self.lsn, K_TXID: self.tx_id,
                   K_TS_USEC: self.ts_usec, K_SNAPSHOT: "INITIAL", K_SNAPSHOT_COMPLETED: self.last_snapshot_record}
        else:
            out = {K_LSN_PROC: self.lsn, K_LSN_COMMIT: self.lsn_commit, K_LSN: self.lsn, K_TXID: self.tx_id,
                   K_TS_USEC: self.ts_usec}
        out[K_FORMAT] = FORMAT_VERSION
        if self.slot:
            out[K_SLOT] = self.slot
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PostgresOffset:
        """Load any offset format this connector (or Debezium) has written.

        Debezium's own offsets have no ``format_version``, may lack ``lsn_commit`` and write
        ``snapshot`` as ``true`` (1.x/2.x) or ``"INITIAL"`` (3.x).
        """
        lsn = data.get(K_LSN, data.get(K_LSN_COMMIT, data.get(K_LSN_PROC)))
        if lsn is None:
            raise ValueError(f"offset has no {K_LSN!r}: {sorted(data)}")
        snapshot = data.get(K_SNAPSHOT, False)
        in_snapshot = snapshot not in (False, None, "false", "FALSE") and not data.get(K_SNAPSHOT_COMPLETED, False)
        return cls(int(lsn), _opt_int(data.get(K_LSN_COMMIT)), _opt_int(data.get(K_TXID)),
                   _opt_int(data.get(K_TS_USEC)), in_snapshot, bool(data.get(K_LAST_SNAPSHOT_RECORD, False)),
                   data.get(K_SLOT))


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
