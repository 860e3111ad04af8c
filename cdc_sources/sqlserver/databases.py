"""A SQL Server source capturing several databases of one instance (``database.names: a,b``).

As Debezium 3.6.3 does, each database is a partition of its own (`PartitionedOffset`): its own
LSN sequence, capture instances, snapshot and offset. `MultiDatabaseSession` drives one
`SqlServerCaptureSession` per database (each on a connection of its own to that database) and
presents them as one `cdc_sources.spi.CaptureSession`:

- **plan**: each database plans against its own stored offset; a database with a completed
  snapshot is not snapshotted again when another one is (a database added to the list, or one
  whose snapshot was interrupted);
- **snapshot**: the databases that need one, one after the other; one checkpoint at the end;
- **stream**: each poll interval, every database's changes up to its current maximum LSN, in
  ``database.names`` order; each database's checkpoints become checkpoints of the whole source
  with that database's offset replaced, so a bronze commit stores every database's offset and
  a restart resumes each database where its last commit left it.
- **signals**: each database with a signal table (``signal.data.collection`` lists one per
  database) runs its own signals and incremental snapshots over its own stream, and the
  snapshot's progress rides in that database's offset, so a restart resumes each; the ``file``
  channel is read here once and each signal handed to the databases it names
  (`cdc_sources.sqlserver.database_signals`). An ``--until-idle`` run polls on while any
  database's snapshot runs.

Topics are the per-database ones of one database (``<topic.prefix>.<database>.<schema>.<table>``,
``source.db`` naming the database). The source-wide topics (schema changes ``<topic.prefix>``,
the connector's history, transaction metadata, heartbeats) get records of every database, as in
Debezium. A record keeps
the order key its database's session gave it (from that database's LSNs, as with one database)
and takes the database as its lane (`cdc_sources.spi.ChangeRecord.lane`): two databases' LSNs do
not order their records against each other, so bronze keeps a high-water mark per database on
those topics. After a crash between bronze's data and offset commits, each database replays
from its own stored offset and the records of the lost commit are recognised as replays.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from cdc_sources.common.incremental_snapshot import FileSignals
from cdc_sources.common.signal_options import signal_settings
from cdc_sources.spi import (
    HISTORY_TOPIC,
    ChangeRecord,
    Checkpoint,
    OffsetWithExtras,
    SnapshotPlan,
    SourceOffset,
    StreamItem,
)
from cdc_sources.spi.snapshot_progress import SnapshotListener
from cdc_sources.sqlserver.config import SqlServerSourceConfig
from cdc_sources.sqlserver.database_signals import signal_databases
from cdc_sources.sqlserver.offset import SqlServerOffset
from cdc_sources.sqlserver.partitions import PartitionedOffset
from cdc_sources.sqlserver.session import OffsetCarrier, SqlServerCaptureSession

__all__ = ["MultiDatabaseSession"]

log = logging.getLogger(__name__)


class MultiDatabaseSession:
    """Implements `cdc_sources.spi.CaptureSession` over one session per database. Not thread-safe.

    Args:
        config: the source configuration.
        sessions: per database, in ``database.names`` order, its session (opened with that
            database's stored offset).
        stored: the source's stored offset.
    """

    def __init__(self, config: SqlServerSourceConfig, sessions: Mapping[str, SqlServerCaptureSession],
                 stored: PartitionedOffset, *, sleep: Callable[[float], bool] | None = None) -> None:
        self.config = config
        self.sessions = dict(sessions)
        self._order = tuple(self.sessions)
        self._offset = stored
        self._sleep = sleep or threading.Event().wait
        self._plans: dict[str, SnapshotPlan] = {}
        self._current = self._order[0]
        self._file = FileSignals(signal_settings(config.options.values))
        for session in self.sessions.values():
            session.file_signals = False  # read here, once for all databases
        d = str(config.opt("topic.delimiter"))
        self._shared = frozenset({config.name, HISTORY_TOPIC, f"{config.name}{d}{config.opt('topic.transaction')}",
                                  f"{config.opt('topic.heartbeat.prefix')}{d}{config.name}"})

    @property
    def offset(self) -> PartitionedOffset:
        """Every database's offset as emitted so far."""
        return self._offset

    # -- plan and snapshot -----------------------------------------------------------------
    def plan(self) -> SnapshotPlan:
        self._plans = {db: s.plan() for db, s in self.sessions.items()}
        snapshot = [db for db, p in self._plans.items() if p.snapshot_data]
        reasons = "; ".join(f"{db}: {p.reason}" for db, p in self._plans.items())
        return SnapshotPlan(bool(snapshot), all(p.stream for p in self._plans.values()), reasons)

    def snapshot(self) -> Iterator[StreamItem]:
        for db in self._order:
            if not self._plans.get(db, SnapshotPlan(True, True, "")).snapshot_data:
                continue
            log.info("source %s: snapshot of database %s", self.config.name, db)
            self._current = db
            for item in self.sessions[db].snapshot():
                if isinstance(item, Checkpoint):
                    self._offset = self._offset.with_offset(db, _own(item.offset)[0], self._order, {})
                    continue  # one checkpoint once every database is read (see the module doc)
                yield from self._lanes(db, item)
        yield Checkpoint(self._offset)

    # -- streaming -------------------------------------------------------------------------
    def stream(self, *, until_idle: bool) -> Iterator[StreamItem]:
        ends: dict[str, bool] = dict.fromkeys(self._order, False)

        def ender(db: str) -> Callable[[], None]:
            def end() -> None:
                ends[db] = True
            return end

        streams = {db: self.sessions[db].rounds(ender(db)) for db in self._order}
        poll_s = int(self.config.opt("poll.interval.ms")) / 1000
        first = True
        while True:
            for n, db in enumerate(self._order):
                self._current = db
                ends[db] = False
                yield from self._partition_items(db, self._round(streams[db], ends, db), idle=n == len(self._order) - 1)
            self._dispatch_file_signals(force=first)
            first = False
            if until_idle and not any(s.busy() for s in self.sessions.values()):
                return
            if self._sleep(poll_s):
                return

    @staticmethod
    def _round(stream: Iterator[StreamItem], ends: Mapping[str, bool], db: str) -> Iterator[StreamItem]:
        """``stream``'s items up to the checkpoint that ends its database's current poll."""
        for item in stream:
            yield item
            if ends[db] and isinstance(item, Checkpoint):
                return

    def _dispatch_file_signals(self, *, force: bool) -> None:
        """The ``file`` channel's new signals, each to the databases it is for (`database_signals`)."""
        signalled = [db for db in self._order if self.sessions[db].incremental is not None]
        if not signalled:
            return
        for signal in self._file.take(force=force):
            for db in signal_databases(signal, signalled):
                incremental = self.sessions[db].incremental
                if incremental is not None:
                    incremental.apply(signal, order_key=None, position=None)

    def report_snapshots(self, listener: SnapshotListener) -> None:
        """Send every database's signalled snapshots' progress to ``listener`` (`ReportsSnapshots`)."""
        for session in self.sessions.values():
            session.report_snapshots(listener)

    def _partition_items(self, db: str, items: Iterator[StreamItem], *, idle: bool) -> Iterator[StreamItem]:
        """A database's items, its checkpoints turned into the source's (idle only at the end of a round)."""
        for item in items:
            if isinstance(item, Checkpoint):
                own, extras = _own(item.offset)
                self._offset = self._offset.with_offset(db, own, self._order, extras)
                yield Checkpoint(self._offset, idle=item.idle and idle)
            else:
                yield from self._lanes(db, item)

    def _lanes(self, db: str, item: StreamItem) -> Iterator[StreamItem]:
        """``item`` with its records on source-wide topics in ``db``'s lane (see the module doc)."""
        records = item if type(item) is list else [item] if isinstance(item, ChangeRecord) else None
        if records is not None:
            for record in records:
                if record.topic in self._shared:
                    record.lane = db
        yield item

    # -- offsets ---------------------------------------------------------------------------
    def acknowledge(self, offset: SourceOffset) -> None:
        """Nothing to confirm: SQL Server's cleanup job keeps changes by its own retention."""

    def offset_of(self, position: str) -> PartitionedOffset:
        """The source's offset with the database being read at ``position`` (a snapshot record's)."""
        return self._offset.with_offset(self._current, SqlServerOffset.load(orjson.loads(position)), self._order)

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()


def _own(offset: SourceOffset) -> tuple[SqlServerOffset, Mapping[str, Any]]:
    """A database session's checkpoint offset: its position, and the keys stored beside it (a
    running signalled snapshot's progress)."""
    extras: dict[str, Any] = {}
    while isinstance(offset, OffsetWithExtras):
        extras = {**offset.extras, **extras}
        offset = offset.base
    if not isinstance(offset, OffsetCarrier):
        raise TypeError(f"not a SQL Server session's offset: {offset!r}")
    return offset.offset, extras


def open_sessions(config: SqlServerSourceConfig, stored: Mapping[str, Any] | None,
                  open_one: Callable[[str, Mapping[str, Any] | None], SqlServerCaptureSession],
                  databases: Sequence[str]) -> MultiDatabaseSession:
    """One session per database (``open_one(database, its stored offset)``), closed again if
    one fails to open."""
    offset = PartitionedOffset.load(stored, config.name, databases)
    sessions: dict[str, SqlServerCaptureSession] = {}
    try:
        for db in databases:
            sessions[db] = open_one(db, offset.offset_map(db))
    except BaseException:
        for session in sessions.values():
            session.close()
        raise
    return MultiDatabaseSession(config, sessions, offset)
