"""The Oracle connector's offset, in Debezium 3.6.3's format (``OracleOffsetContext``).

An offset is the SCN mining resumes from (``scn``), the last commit SCN handled on each redo
thread with the transactions already emitted at that SCN (``commit_scn``:
``<scn>:<thread>:<xid>-<xid>,...``), and the snapshot state (``snapshot``,
``snapshot_completed``, ``snapshot_scn`` and the transactions in flight at the snapshot,
``snapshot_pending_tx``: ``<xid>:<start scn>,...``). `OracleOffset.from_dict` reads what
Debezium writes, including its older forms (a numeric ``scn``/``commit_scn``, a bare-SCN or
four-part ``commit_scn`` entry, ``snapshot: true``); `OracleOffset.to_dict` writes what
Debezium's loader reads back to the same state (both proved against Debezium's classes by
``tests/cdc_sources/oracle/test_offset.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["OffsetError", "OracleOffset", "RedoThreadCommit"]


class OffsetError(ValueError):
    """A stored offset that is not in any form Debezium writes (names the key)."""


@dataclass(frozen=True, slots=True, order=True)
class RedoThreadCommit:
    """The last commit SCN handled on one redo thread, with the transactions emitted at it."""

    thread: int
    scn: int
    xids: frozenset[str] = frozenset()

    def text(self) -> str:
        return f"{self.scn}:{self.thread}:{'-'.join(sorted(self.xids))}"

    @classmethod
    def parse(cls, text: str) -> RedoThreadCommit:
        parts = text.split(":")
        if len(parts) == 1:  # before Debezium 1.9.6: the SCN only, thread 1
            return cls(1, _scn(parts[0], "commit_scn"))
        if len(parts) == 3:
            return cls(int(parts[1]), _scn(parts[0], "commit_scn"), frozenset(x for x in parts[2].split("-") if x))
        if len(parts) == 4:  # Debezium 1.9.5: <scn>:<unused>:<unused>:<thread>
            return cls(int(parts[3]), _scn(parts[0], "commit_scn"))
        raise OffsetError(f"commit_scn: unexpected redo thread entry {text!r}")


def _scn(value: Any, key: str) -> int:
    try:
        scn = int(value)
    except (TypeError, ValueError):
        raise OffsetError(f"{key}: not an SCN: {value!r}") from None
    if scn < 0:
        raise OffsetError(f"{key}: not an SCN: {value!r}")
    return scn


_SNAPSHOT_TYPES = ("INITIAL", "BLOCKING", "INCREMENTAL")


@dataclass(frozen=True, slots=True)
class OracleOffset:
    """Where the connector stands (see the module doc for each field's stored form)."""

    scn: int | None = None
    commit_scn: tuple[RedoThreadCommit, ...] = ()
    snapshot: str | None = None
    """``INITIAL`` while a snapshot runs or ran (``snapshot_completed`` tells which), else None."""
    snapshot_completed: bool = False
    snapshot_scn: int | None = None
    snapshot_pending_tx: Mapping[str, int] = field(default_factory=dict)
    transaction_id: str | None = None
    transaction_sequence: int | None = None
    window_advance_enabled: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "commit_scn", tuple(sorted(self.commit_scn)))  # one order per state

    def handled(self, thread: int, commit_scn: int, xid: str) -> bool:
        """Whether the transaction ``xid`` committing at ``commit_scn`` on redo ``thread`` was
        already emitted (Debezium's ``CommitScn.hasBeenHandled``): on restart, mining re-reads
        from ``scn`` and such transactions are skipped."""
        for c in self.commit_scn:
            if c.thread == thread:
                return c.scn > commit_scn or (c.scn == commit_scn and xid in c.xids)
        return False

    def with_commit(self, thread: int, commit_scn: int, xid: str) -> OracleOffset:
        """The offset after emitting transaction ``xid`` committed at ``commit_scn`` on ``thread``
        (Debezium's ``CommitScn.recordCommit``): the thread's entry moves to that SCN, or gains the
        XID when already there."""
        entries = {c.thread: c for c in self.commit_scn}
        now = entries.get(thread)
        if now is not None and now.scn == commit_scn:
            entries[thread] = RedoThreadCommit(thread, commit_scn, now.xids | {xid})
        else:
            entries[thread] = RedoThreadCommit(thread, commit_scn, frozenset({xid}))
        return replace(self, commit_scn=tuple(entries.values()))

    def to_dict(self) -> dict[str, Any]:
        """The offset as Debezium stores it (``OracleOffsetContext.getOffset``)."""
        out: dict[str, Any] = {}
        if self.snapshot is not None:
            out["snapshot"] = self.snapshot
            out["snapshot_completed"] = self.snapshot_completed
            if self.snapshot_pending_tx:
                out["snapshot_pending_tx"] = ",".join(f"{x}:{s}" for x, s in self.snapshot_pending_tx.items())
        if self.scn is not None:
            out["scn"] = str(self.scn)
        if self.snapshot_scn is not None:
            out["snapshot_scn"] = str(self.snapshot_scn)
        out["commit_scn"] = ",".join(c.text() for c in self.commit_scn) or None
        if self.transaction_id is not None:
            out["txId"] = self.transaction_id
            if self.transaction_sequence is not None:
                out["txSeq"] = self.transaction_sequence
        if self.window_advance_enabled:
            out["window_advance_enabled"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OracleOffset:
        """Read an offset Debezium (or `to_dict`) wrote; `OffsetError` names a malformed key."""
        scn = data.get("scn")
        commit = data.get("commit_scn")
        commits: tuple[RedoThreadCommit, ...] = ()
        if isinstance(commit, str):
            commits = tuple(RedoThreadCommit.parse(p) for p in commit.split(","))
        elif commit is not None:
            commits = (RedoThreadCommit(1, _scn(commit, "commit_scn")),)
        snapshot = data.get("snapshot")
        kind: str | None
        if snapshot is None or snapshot is False or str(snapshot).lower() == "false":
            kind = None
        elif snapshot is True or str(snapshot).lower() == "true":
            kind = "INITIAL"
        elif str(snapshot).upper() in _SNAPSHOT_TYPES:
            kind = str(snapshot).upper()
        else:
            raise OffsetError(f"snapshot: unexpected value {snapshot!r}")
        completed = bool(data.get("snapshot_completed", False))
        if completed:  # Debezium forgets a finished snapshot: it streams from scn
            kind, completed = None, False
        pending: dict[str, int] = {}
        for entry in str(data.get("snapshot_pending_tx") or "").split(","):
            if entry.strip():
                xid, _, start = entry.strip().partition(":")
                pending[xid] = _scn(start, "snapshot_pending_tx")
        snapshot_scn = data.get("snapshot_scn")
        seq = data.get("txSeq")
        return cls(
            scn=None if scn is None else _scn(scn, "scn"),
            commit_scn=commits,
            snapshot=kind,
            snapshot_completed=completed,
            snapshot_scn=None if snapshot_scn is None else _scn(snapshot_scn, "snapshot_scn"),
            snapshot_pending_tx=pending,
            transaction_id=data.get("txId"),
            transaction_sequence=None if seq is None else int(seq),
            window_advance_enabled=str(data.get("window_advance_enabled", False)).lower() == "true",
        )
