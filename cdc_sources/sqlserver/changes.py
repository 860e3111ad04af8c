"""The change-stream core: change-table rows in, Debezium's events out. Pure: no I/O.

What Debezium 3.6.3's ``SqlServerStreamingChangeEventSource`` does with the rows of
``cdc.fn_cdc_get_all_changes_<instance>(from, to, N'all update old')`` (or the change tables
read directly), reproduced on typed values:

- **one stream over all capture instances**: each instance's rows come ordered by commit LSN
  (``__$start_lsn``), change LSN (``__$seqval``) and operation; `merge_rows` merges them into one
  stream in that order (ties between instances keep the instances' order);
- **updates**: an update is two rows at one position, operation 3 (before image) then 4 (after
  image); they become one ``u`` event. A 3 not followed by its 4 is an error
  (`ChangeStreamError`), as in Debezium;
- **key changes**: an update that changes the key becomes ``d`` (old key), a tombstone (old key,
  when ``tombstones.on.delete``) and ``c`` (new key), all at the update's position and serial;
  SQL Server may also write such an update as a delete (1) and an insert (2) at one position,
  which are simply a ``d`` (+ tombstone) and a ``c``;
- **event_serial_no**: Debezium counts events per position: an event at the same (commit, change)
  position as the previous one adds its row count (2 for an update pair, 1 otherwise) to the
  serial, an event at a new position starts again from its row count;
- **capture-instance switch**: a table may have two capture instances (after a schema change);
  the older one stops at the newer one's start LSN (`with_stop_lsns`): its rows at or after that
  LSN are dropped, and a `SchemaSwitch` is yielded just before the first event read from the
  newer instance;
- **restart**: streaming resumes from the stored commit LSN inclusive; events before the stored
  position, and at it with a serial not above the stored ``event_serial_no``, were emitted
  before the restart and are skipped (`ChangeStream` with ``resume``).

Events that share one position and serial (a key change's ``d``, tombstone, ``c``) must be
committed to bronze together: `ChangeEvent.closes_position` marks the last of them, and a
batch may end only there (the stored offset cannot tell them apart, as in Debezium).
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum, IntEnum
from typing import Any

from cdc_sources.sqlserver.lsn import Lsn, TxLogPosition
from cdc_sources.sqlserver.offset import SqlServerOffset

__all__ = [
    "CaptureInstance",
    "ChangeEvent",
    "ChangeRow",
    "ChangeStream",
    "ChangeStreamError",
    "EventKind",
    "Operation",
    "SchemaSwitch",
    "TableId",
    "merge_rows",
    "with_stop_lsns",
]

log = logging.getLogger(__name__)

MAX_INSTANCES_PER_TABLE = 2
"""SQL Server allows at most two capture instances per source table."""


class ChangeStreamError(RuntimeError):
    """The change rows break SQL Server's rules (names the instance and the position)."""


class Operation(IntEnum):
    """``__$operation``."""

    DELETE = 1
    INSERT = 2
    UPDATE_BEFORE = 3
    UPDATE_AFTER = 4


class EventKind(Enum):
    """What a `ChangeEvent` is: Debezium's ``op`` or a tombstone."""

    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    TOMBSTONE = "tombstone"


@dataclass(frozen=True, slots=True)
class TableId:
    """A source table: database, schema, table (as the server spells them)."""

    database: str
    schema: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.schema}.{self.table}"


@dataclass(frozen=True)
class CaptureInstance:
    """A capture instance of a source table (a row of ``sys.sp_cdc_help_change_data_capture``).

    Attributes:
        name: the capture instance (``dbo_customers``; change table ``cdc.<name>_CT``).
        table: the source table.
        start_lsn: the LSN from which it holds changes.
        columns: the captured columns, in change-table order (the values of a `ChangeRow`).
        key_columns: the event key's columns (the primary key, or ``message.key.columns``);
            empty for a table without a key (events have a null key).
        stop_lsn: where a newer instance of the same table takes over (NULL: none).
    """

    name: str
    table: TableId
    start_lsn: Lsn
    columns: tuple[str, ...]
    key_columns: tuple[str, ...] = ()
    stop_lsn: Lsn = Lsn.NULL

    def key_of(self, values: Sequence[Any]) -> tuple[Any, ...] | None:
        if not self.key_columns:
            return None
        return tuple(values[self.columns.index(c)] for c in self.key_columns)


@dataclass(frozen=True, slots=True)
class ChangeRow:
    """One change-table row: ``__$start_lsn``, ``__$seqval``, ``__$operation`` and the captured
    columns' values (already converted or raw: the core only compares key values)."""

    instance: str
    commit: Lsn
    seqval: Lsn
    operation: int
    values: tuple[Any, ...]

    @property
    def position(self) -> TxLogPosition:
        return TxLogPosition(self.commit, self.seqval, self.operation)


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One event for bronze.

    Attributes:
        kind: ``c``, ``u``, ``d`` or a tombstone.
        instance: the capture instance the rows came from (its columns name the values).
        position: (commit LSN, change LSN, operation of the first row).
        serial: ``event_serial_no``.
        key: the key values (None for a keyless table).
        before / after: the row images (None where Debezium has null).
        closes_position: the last event of its position and serial (a batch may end here).
    """

    kind: EventKind
    instance: CaptureInstance
    position: TxLogPosition
    serial: int
    key: tuple[Any, ...] | None
    before: tuple[Any, ...] | None
    after: tuple[Any, ...] | None
    closes_position: bool = True

    def offset(self) -> SqlServerOffset:
        """The stored offset once this event is in bronze."""
        return SqlServerOffset(self.position.commit, self.position.change, self.serial)


@dataclass(frozen=True, slots=True)
class SchemaSwitch:
    """The table's events now come from ``new`` (Debezium emits an ``ALTER`` schema change with
    ``ddl: null`` and the new instance's columns here)."""

    table: TableId
    old: CaptureInstance
    new: CaptureInstance
    position: TxLogPosition


StreamItem = ChangeEvent | SchemaSwitch


def with_stop_lsns(instances: Iterable[CaptureInstance]) -> tuple[CaptureInstance, ...]:
    """The instances with ``stop_lsn`` set: for a table with two instances the older one stops
    at the newer one's start LSN.

    Raises:
        ChangeStreamError: more than two instances for one table (SQL Server allows two).
    """
    by_table: dict[TableId, list[CaptureInstance]] = defaultdict(list)
    for instance in instances:
        by_table[instance.table].append(instance)
    out: list[CaptureInstance] = []
    for table, group in by_table.items():
        if len(group) > MAX_INSTANCES_PER_TABLE:
            raise ChangeStreamError(f"table {table} has {len(group)} capture instances "
                                    f"({', '.join(i.name for i in group)}); SQL Server allows two")
        group.sort(key=lambda i: i.start_lsn.sort_key())
        for older, newer in itertools.pairwise(group):
            out.append(replace(older, stop_lsn=newer.start_lsn))
        out.append(group[-1])
    return tuple(out)


def _row_key(row: ChangeRow) -> tuple[tuple[int, bytes], tuple[int, bytes], int]:
    return row.commit.sort_key(), row.seqval.sort_key(), row.operation


def merge_rows(per_instance: Mapping[str, Iterable[ChangeRow]]) -> Iterator[ChangeRow]:
    """One stream ordered by (commit LSN, change LSN, operation) from each instance's ordered rows.

    Rows without a commit or change LSN are skipped with an error in the log, as in Debezium.

    Raises:
        ChangeStreamError: an instance's rows are not in order.
    """
    def checked(name: str, rows: Iterable[ChangeRow]) -> Iterator[ChangeRow]:
        previous: ChangeRow | None = None
        for row in rows:
            if not row.commit.available or not row.seqval.available:
                log.error("capture instance %s: a change row without a commit or change LSN was skipped "
                          "(commit %s, change %s, operation %s)", name, row.commit, row.seqval, row.operation)
                continue
            if previous is not None and _row_key(row) < _row_key(previous):
                raise ChangeStreamError(f"capture instance {name}: rows out of order at {row.commit}/{row.seqval} "
                                        f"(after {previous.commit}/{previous.seqval})")
            previous = row
            yield row
    return heapq.merge(*(checked(n, rows) for n, rows in per_instance.items()), key=_row_key)


class ChangeStream:
    """Turns the merged rows of successive streaming iterations into events.

    Keeps what spans iterations: the last position and serial (serials go on counting), the
    capture instance each table's events come from, and the restart position until passed.

    Args:
        instances: the capture instances (stop LSNs are set here).
        tombstones_on_delete: ``tombstones.on.delete``.
        skipped: ``skipped.operations`` (``c``, ``u``, ``d``).
        skip_unchanged: ``skip.messages.without.change``: no ``u`` whose images are equal.
        resume: the stored offset to resume from (None: a fresh start).
        current: per table, the instance whose schema was last emitted (default: the oldest).
    """

    def __init__(self, instances: Iterable[CaptureInstance], *, tombstones_on_delete: bool = True,
                 skipped: frozenset[str] = frozenset(), skip_unchanged: bool = False,
                 resume: SqlServerOffset | None = None, current: Mapping[TableId, str] | None = None) -> None:
        self.instances = {i.name: i for i in with_stop_lsns(instances)}
        self.tombstones = tombstones_on_delete
        self.skipped = skipped
        self.skip_unchanged = skip_unchanged
        self._resume = resume if resume is not None and resume.change_lsn.available else None
        self._position: TxLogPosition | None = None
        self._serial = 0
        self._current: dict[TableId, str] = dict(current or {})
        oldest: dict[TableId, CaptureInstance] = {}
        for instance in self.instances.values():
            if instance.table not in oldest or instance.start_lsn < oldest[instance.table].start_lsn:
                oldest[instance.table] = instance
        for table, instance in oldest.items():
            self._current.setdefault(table, instance.name)

    def set_instances(self, instances: Iterable[CaptureInstance]) -> None:
        """Capture instances appeared or were dropped while streaming: stop LSNs are set again
        (a new table's events follow its oldest instance, a known table's stay where they are)."""
        self.instances = {i.name: i for i in with_stop_lsns(replace(i, stop_lsn=Lsn.NULL) for i in instances)}
        oldest: dict[TableId, CaptureInstance] = {}
        for instance in self.instances.values():
            if instance.table not in oldest or instance.start_lsn < oldest[instance.table].start_lsn:
                oldest[instance.table] = instance
        for table, instance in oldest.items():
            if self._current.get(table) not in self.instances:
                self._current[table] = instance.name

    def current_instance(self, table: TableId) -> str | None:
        """The instance whose schema the table's events follow now."""
        return self._current.get(table)

    def events(self, rows: Iterable[ChangeRow]) -> Iterator[StreamItem]:
        """The events of one iteration's merged rows (see `merge_rows`)."""
        it = self._live(rows)
        for row, instance in it:
            count, after_row = 1, None
            if row.operation == Operation.UPDATE_BEFORE:
                after_row = next(it, (None, None))[0]
                if (after_row is None or after_row.operation != Operation.UPDATE_AFTER
                        or after_row.instance != row.instance):
                    raise ChangeStreamError(
                        f"the update before image at {row.commit}/{row.seqval} of capture instance {row.instance} "
                        "was not followed by its after image (operation 4); read the change table with "
                        "N'all update old'")
                count = 2
            elif row.operation not in (Operation.DELETE, Operation.INSERT):
                raise ChangeStreamError(f"capture instance {row.instance}: unexpected __$operation {row.operation} "
                                        f"at {row.commit}/{row.seqval}")
            position = row.position
            serial = self._count(position, count)
            if self._already_emitted(position, serial):
                continue
            switch = self._switch(instance, position)
            if switch is not None:
                yield switch
            yield from self._emit(instance, row, after_row, position, serial)

    def _live(self, rows: Iterable[ChangeRow]) -> Iterator[tuple[ChangeRow, CaptureInstance]]:
        """The rows with their instance, without those an older instance holds at or after its stop
        LSN (the newer instance has them too: both images of an update, at the same position,
        which the merge interleaves with the newer instance's)."""
        for row in rows:
            instance = self.instances.get(row.instance)
            if instance is None:
                raise ChangeStreamError(f"a change row names capture instance {row.instance!r}, which is not captured")
            if not (instance.stop_lsn.available and row.commit >= instance.stop_lsn):
                yield row, instance

    def _count(self, position: TxLogPosition, count: int) -> int:
        same = self._position is not None and self._position == position
        self._serial = self._serial + count if same else count
        self._position = position
        return self._serial

    def _already_emitted(self, position: TxLogPosition, serial: int) -> bool:
        resume = self._resume
        if resume is None:
            return False
        stored = resume.position
        if position < stored or (position.key() == stored.key() and serial <= resume.event_serial_no):
            return True
        self._resume = None  # past the restart position: nothing more to skip
        return False

    def _switch(self, instance: CaptureInstance, position: TxLogPosition) -> SchemaSwitch | None:
        current = self._current.get(instance.table)
        if current == instance.name:
            return None
        self._current[instance.table] = instance.name
        if current is None:
            return None
        return SchemaSwitch(instance.table, self.instances[current], instance, position)

    def _emit(self, instance: CaptureInstance, row: ChangeRow, after_row: ChangeRow | None,
              position: TxLogPosition, serial: int) -> Iterator[ChangeEvent]:
        def event(kind: EventKind, key: tuple[Any, ...] | None, before: tuple[Any, ...] | None,
                  after: tuple[Any, ...] | None, closes: bool = True) -> ChangeEvent:
            return ChangeEvent(kind, instance, position, serial, key, before, after, closes)

        if row.operation == Operation.INSERT:
            if "c" not in self.skipped:
                yield event(EventKind.CREATE, instance.key_of(row.values), None, row.values)
            return
        if row.operation == Operation.DELETE:
            yield from self._delete(event, instance.key_of(row.values), row.values, closes=True)
            return
        assert after_row is not None
        before, after = row.values, after_row.values
        old_key, new_key = instance.key_of(before), instance.key_of(after)
        if old_key == new_key:
            if "u" not in self.skipped and not (self.skip_unchanged and before == after):
                yield event(EventKind.UPDATE, new_key, before, after)
            return
        create = "c" not in self.skipped
        yield from self._delete(event, old_key, before, closes=not create)
        if create:
            yield event(EventKind.CREATE, new_key, None, after)

    def _delete(self, event: Any, key: tuple[Any, ...] | None, before: tuple[Any, ...],
                closes: bool) -> Iterator[ChangeEvent]:
        if "d" in self.skipped:
            return
        yield event(EventKind.DELETE, key, before, None, closes and not self.tombstones)
        if self.tombstones:
            yield event(EventKind.TOMBSTONE, key, None, None, closes)
