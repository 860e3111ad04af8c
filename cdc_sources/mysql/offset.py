"""The MySQL/MariaDB connector's offset, in Debezium's offset keys, and binlog positions.

Debezium 3.6.3's binlog connectors (``BinlogOffsetContext.getOffset``) write:

- ``server_id``: the server id of the last event (left out when 0);
- ``gtids``: the GTID set of the transactions completely processed (left out without GTIDs);
- ``file`` and ``pos``: where to restart reading. Inside a transaction ``pos`` stays at the
  transaction's first event (``BEGIN``/GTID event);
- ``event``: events of that transaction already handled (left out when 0);
- ``row``: rows of the next event already emitted (left out when 0);
- ``ts_sec``: the event time, Unix seconds;
- ``snapshot``: ``"INITIAL"`` (``"BLOCKING"`` for a blocking snapshot) while a snapshot runs,
  absent otherwise. Debezium 1.x/2.x wrote ``true``; both load.

Like the PostgreSQL connector, snapshot offsets here also carry ``snapshot_completed`` (true
on the snapshot's last record), so a run stopped right after the snapshot does not redo it.
Streaming offsets may carry further keys (transaction metadata, incremental snapshot state):
they are kept as they are in `MySqlOffset.extra`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import total_ordering
from types import MappingProxyType
from typing import Any, Literal

from cdc_sources.mysql.gtid import MariaGtidPosition, MySqlGtidSet, SourcePredicate

__all__ = [
    "K_EVENT",
    "K_FILE",
    "K_GTIDS",
    "K_POS",
    "K_ROW",
    "K_SERVER_ID",
    "K_SNAPSHOT",
    "K_SNAPSHOT_COMPLETED",
    "K_TS_SEC",
    "BinlogPosition",
    "MySqlOffset",
    "binlog_file_number",
    "is_position_at_or_before",
]

K_SERVER_ID = "server_id"
K_GTIDS = "gtids"
K_FILE = "file"
K_POS = "pos"
K_EVENT = "event"
K_ROW = "row"
K_TS_SEC = "ts_sec"
K_SNAPSHOT = "snapshot"
K_SNAPSHOT_COMPLETED = "snapshot_completed"
_KNOWN = frozenset({K_SERVER_ID, K_GTIDS, K_FILE, K_POS, K_EVENT, K_ROW, K_TS_SEC, K_SNAPSHOT, K_SNAPSHOT_COMPLETED})
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def binlog_file_number(name: str) -> int:
    """The numeric extension of a binlog file name (``mysql-bin.000042`` -> 42).

    Raises:
        ValueError: the name has no numeric extension.
    """
    _, dot, ext = name.rpartition(".")
    if not dot or not ext.isdigit():
        raise ValueError(f"binlog file name {name!r} has no numeric extension (like mysql-bin.000042)")
    return int(ext)


@total_ordering
@dataclass(frozen=True, slots=True)
class BinlogPosition:
    """A point in the binlog of one server, ordered like Debezium orders offsets.

    Positions order by file number, then ``pos``, then ``event``, then ``row``. Comparing
    positions in binlogs with different base names raises ValueError (they are unrelated).

    Attributes:
        file: the binlog file name.
        pos: the byte position in it.
        event: events already handled after ``pos`` (a transaction's events).
        row: rows already emitted of the next event.
    """

    file: str
    pos: int
    event: int = 0
    row: int = 0

    @property
    def file_number(self) -> int:
        return binlog_file_number(self.file)

    @property
    def base_name(self) -> str:
        return self.file.rpartition(".")[0]

    def sort_key(self) -> tuple[int, int, int, int]:
        """A tuple that orders positions of one binlog (usable as a bronze order key)."""
        return (self.file_number, self.pos, self.event, self.row)

    def _check(self, other: BinlogPosition) -> None:
        if self.base_name != other.base_name:
            raise ValueError(f"cannot order binlog positions of different binlogs: {self.file!r} and {other.file!r}")

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, BinlogPosition):
            return NotImplemented
        self._check(other)
        return self.sort_key() < other.sort_key()

    def __str__(self) -> str:
        skips = f" (+{self.event} events, +{self.row} rows)" if self.event or self.row else ""
        return f"{self.file}:{self.pos}{skips}"


@dataclass(frozen=True)
class MySqlOffset:
    """A resumable position in a MySQL/MariaDB source (see the module doc for the keys).

    Attributes:
        file: the binlog file to restart from ("" means the start of the binlog).
        pos: the position in it.
        gtids: the GTID set (MySQL) or position (MariaDB) of completed transactions, as text.
        server_id: the server id of the last event, 0 when unknown.
        event: events of the transaction at ``pos`` already handled.
        row: rows of the next event already emitted.
        ts_sec: the last event's time, Unix seconds.
        snapshot: ``"INITIAL"``/``"BLOCKING"`` while a snapshot runs, None when streaming.
        snapshot_completed: the snapshot finished (set on its last record).
        extra: any other offset keys (transaction context, incremental snapshots), unchanged.
    """

    file: str
    pos: int
    gtids: str | None = None
    server_id: int = 0
    event: int = 0
    row: int = 0
    ts_sec: int | None = None
    snapshot: str | None = None
    snapshot_completed: bool = False
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @classmethod
    def for_snapshot(cls, file: str, pos: int, gtids: str | None, *, ts_sec: int | None,
                     completed: bool = False, server_id: int = 0) -> MySqlOffset:
        """The offset of snapshot records: the snapshot's binlog position, ``snapshot: INITIAL``,
        and ``snapshot_completed`` on the last record."""
        return cls(file, pos, gtids or None, server_id, ts_sec=ts_sec, snapshot="INITIAL",
                   snapshot_completed=completed)

    @property
    def in_snapshot(self) -> bool:
        """Whether an initial or blocking snapshot was running and did not finish."""
        return self.snapshot is not None and not self.snapshot_completed

    @property
    def position(self) -> BinlogPosition:
        return BinlogPosition(self.file, self.pos, self.event, self.row)

    def to_dict(self) -> dict[str, Any]:
        """The offset map, keys as Debezium writes them (plus ``snapshot_completed``)."""
        out: dict[str, Any] = {}
        if self.server_id:
            out[K_SERVER_ID] = self.server_id
        if self.gtids:
            out[K_GTIDS] = self.gtids
        out[K_FILE] = self.file
        out[K_POS] = self.pos
        if self.event:
            out[K_EVENT] = self.event
        if self.row:
            out[K_ROW] = self.row
        if self.ts_sec is not None:
            out[K_TS_SEC] = self.ts_sec
        if self.snapshot is not None:
            out[K_SNAPSHOT] = self.snapshot
            out[K_SNAPSHOT_COMPLETED] = self.snapshot_completed
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MySqlOffset:
        """Load an offset this connector or Debezium (1.x to 3.x) wrote.

        Numbers may be JSON numbers or numeric strings; ``snapshot`` may be ``true``/``"true"``
        (old Debezium, meaning an initial snapshot) or a snapshot type name. An offset whose
        snapshot completed loads as a streaming offset (``snapshot`` None), as Debezium loads it.

        Raises:
            ValueError: ``file`` is missing or a number does not parse.
        """
        file = data.get(K_FILE)
        if file is None:
            raise ValueError(f"the offset has no {K_FILE!r} key (keys: {sorted(data)})")
        snapshot = _snapshot_type(data.get(K_SNAPSHOT))
        if data.get(K_SNAPSHOT_COMPLETED) in (True, "true"):
            snapshot = None  # Debezium: a completed snapshot's offset is a streaming offset
        gtids = data.get(K_GTIDS)
        extra = {k: v for k, v in data.items() if k not in _KNOWN}
        return cls(str(file), _long(data, K_POS), None if gtids is None else str(gtids),
                   _long(data, K_SERVER_ID), _long(data, K_EVENT), _long(data, K_ROW),
                   None if data.get(K_TS_SEC) is None else _long(data, K_TS_SEC),
                   snapshot, False, MappingProxyType(extra) if extra else _EMPTY)


def _long(data: Mapping[str, Any], key: str) -> int:
    """Debezium's ``OffsetUtils.longOffsetValue``: missing is 0, numbers and numeric text parse."""
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"offset {key!r} value {value!r} is not a number")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"offset {key!r} value {value!r} could not be converted to a long") from None


def _snapshot_type(value: Any) -> str | None:
    if value is None or value is False or value == "false":
        return None
    if value is True or value == "true":
        return "INITIAL"
    text = str(value).upper()
    if text not in ("INITIAL", "BLOCKING", "INCREMENTAL"):
        raise ValueError(f"offset 'snapshot' value {value!r} is not INITIAL, BLOCKING or INCREMENTAL")
    return text


def is_position_at_or_before(recorded: Mapping[str, Any], desired: Mapping[str, Any], *,
                             flavor: Literal["mysql", "mariadb"],
                             gtid_filter: SourcePredicate | None = None) -> bool:
    """Whether the ``recorded`` offset (of a schema history record) is at or before ``desired``
    (the offset to restart from): Debezium's ``BinlogHistoryRecordComparator``.

    With GTIDs on both sides the GTID sets decide (filtered by ``gtid.source.*``; equal sets
    then compare the ``event`` counters, and a streaming record is after a snapshot desired
    position). A GTID on one side only means GTIDs were turned on in between. Without GTIDs,
    offsets of different servers compare by ``ts_sec``, else by file, pos, event and row.
    """
    recorded_gtids, desired_gtids = recorded.get(K_GTIDS), desired.get(K_GTIDS)
    if desired_gtids is not None:
        if recorded_gtids is None:
            return True
        parse: Callable[[str], MySqlGtidSet | MariaGtidPosition] = (
            MariaGtidPosition.parse if flavor == "mariadb" else MySqlGtidSet.parse)
        mine = parse(str(recorded_gtids)).retain(gtid_filter)
        theirs = parse(str(desired_gtids)).retain(gtid_filter)
        if mine == theirs:
            if K_SNAPSHOT not in recorded and K_SNAPSHOT in desired:
                return False
            return _long(recorded, K_EVENT) <= _long(desired, K_EVENT)
        return _contained(mine, theirs)
    if recorded_gtids is not None:
        return False
    if _long(recorded, K_SERVER_ID) != _long(desired, K_SERVER_ID):
        return _long(recorded, K_TS_SEC) <= _long(desired, K_TS_SEC)
    mine_pos = BinlogPosition(str(recorded.get(K_FILE)), _long(recorded, K_POS), _long(recorded, K_EVENT),
                              int(recorded.get(K_ROW, -1)))
    their_pos = BinlogPosition(str(desired.get(K_FILE)), _long(desired, K_POS), _long(desired, K_EVENT),
                               int(desired.get(K_ROW, -1)))
    return mine_pos <= their_pos


def _contained(mine: MySqlGtidSet | MariaGtidPosition, theirs: MySqlGtidSet | MariaGtidPosition) -> bool:
    if isinstance(mine, MySqlGtidSet) and isinstance(theirs, MySqlGtidSet):
        return mine.is_contained_within(theirs)
    if isinstance(mine, MariaGtidPosition) and isinstance(theirs, MariaGtidPosition):
        return mine.is_contained_within(theirs)
    raise TypeError("GTID values of different dialects")
