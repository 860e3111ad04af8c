"""Signals and incremental snapshots over an Oracle capture session's stream.

`OracleSignals` puts the shared driver (`cdc_sources.common.incremental_snapshot`) over the mined
stream: signals are read from the signal table's inserts as they are mined (at their commit),
chunks are read by `cdc_sources.oracle.incremental.OracleChunkSource` on a connection of their own,
and the snapshot's progress rides in every checkpoint's offset. Data collections in signals are
named as Debezium's Oracle connector names them, ``<database>.<schema>.<table>`` (the PDB name for
a pluggable database); ``<schema>.<table>`` is read too. The signal table is mined even when the
table filters leave it out; its changes then reach no topic.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from cdc_sources.common.blocking_snapshot import BlockingSnapshotter, StoredBlocking
from cdc_sources.common.incremental_snapshot import IncrementalSnapshotter
from cdc_sources.common.incremental_state import IncrementalState
from cdc_sources.common.signal_options import SignalSettings
from cdc_sources.common.signals import (
    AdditionalCondition,
    CollectionName,
    ExecuteSnapshot,
    Signal,
    StopSnapshot,
    parse_collection,
)
from cdc_sources.oracle import gateway as gw
from cdc_sources.oracle.blocking import OracleBlockingSource
from cdc_sources.oracle.envelope import EventMaker, OracleTable
from cdc_sources.oracle.incremental import OracleChunkSource
from cdc_sources.oracle.source import OracleSourceInfo
from cdc_sources.oracle.tables import table_of
from cdc_sources.spi import ChangeBlock, ChangeRecord, SchemaVersion, StreamItem

__all__ = ["OracleIncrementalSnapshotter", "OracleSignals", "local_name"]

log = logging.getLogger(__name__)


def local_name(name: CollectionName, database: str) -> CollectionName:
    """``name`` without its database part (``<database>.<schema>.<table>`` -> ``<schema>.<table>``; an
    unquoted name is a regular expression, its dot possibly escaped)."""
    if name.quoted:
        if len(name.parts) == 3 and name.parts[0].upper() == database.upper():
            return CollectionName(".".join(name.parts[1:]), name.parts[1:], True)
        return name
    for sep in (".", "\\."):
        head = database + sep
        if name.text.upper().startswith(head.upper()):
            return parse_collection(name.text[len(head):])
    return name


class OracleIncrementalSnapshotter(IncrementalSnapshotter):
    """The shared driver, reading Oracle's three-part data-collection names in signals."""

    database: str = ""

    def apply(self, signal: Signal, *, order_key: tuple[int, ...] | None, position: str | None) -> None:
        a = signal.action
        db = self.database
        if isinstance(a, ExecuteSnapshot):
            a = replace(a, collections=tuple(local_name(c, db) for c in a.collections),
                        conditions=tuple(AdditionalCondition(local_name(c.collection, db), c.filter)
                                         for c in a.conditions))
        elif isinstance(a, StopSnapshot):
            a = replace(a, collections=tuple(local_name(c, db) for c in a.collections))
        super().apply(replace(signal, action=a), order_key=order_key, position=position)


class OracleSignals:
    """The signal table, the chunk source and the driver of one capture session.

    Args:
        gateway: the session's gateway (reads the signal table's structure).
        maker: the session's event maker (the signal table is added to it if the filters leave it out).
        source: the fixed parts of the ``source`` block.
        signals: the signal settings, the table as ``(schema, table)``.
        database: the database part of data-collection names.
        tables: the captured tables now, ``(owner, name)``.
        connect: opens the chunk source's connection (on first use).
        fetch_size: rows fetched at a time.
        chunk_size: ``incremental.snapshot.chunk.size``.
        state: the snapshot stored in the offset, if one was running.
        blocking: what the stored offset says of blocking snapshots.
        pause_scn: the session's pause point now (`cdc_sources.oracle.blocking.OracleBlockingSource`).
    """

    def __init__(self, *, gateway: gw.OracleGateway, maker: EventMaker, source: OracleSourceInfo,
                 signals: SignalSettings, database: str, tables: Callable[[], Sequence[tuple[str, str]]],
                 connect: Callable[[], gw.Connection] | None, fetch_size: int, chunk_size: int,
                 state: IncrementalState | None, blocking: StoredBlocking,
                 pause_scn: Callable[[], int | None]) -> None:
        self.hidden: set[str] = set()
        """Topics mined only for signals (the signal table, when the filters leave it out)."""
        table = signals.table
        signal_table = (table.parts[0], table.parts[1]) if table is not None else None
        id_column: str | None = None
        if signal_table is not None:
            known = maker.table(*signal_table) or _read_table(gateway, *signal_table)
            if known is None:
                log.warning("signal table %s.%s does not exist: signals through it are not read", *signal_table)
            else:
                id_column = known.columns[0].name
                if maker.table(*signal_table) is None:
                    maker.set_table(known.schema, known.name, known)
                    self.hidden.add(known.topic(source.name))
        self._connect = connect
        self._fetch_size = fetch_size
        self._chunk_gateway: gw.OracleGateway | None = None
        self.chunks = OracleChunkSource(gateway=self._open, maker=maker, source=source,
                                        signal_table=signal_table, signal_id_column=id_column)
        interrupted = blocking.interrupted
        self.blocking = BlockingSnapshotter(
            OracleBlockingSource(self.chunks, pause_scn, None if interrupted is None else interrupted.order_key[0]),
            blocking)
        self.driver = OracleIncrementalSnapshotter(source=self.chunks, signals=signals, tables=tables,
                                                   prefix=source.name, chunk_size=chunk_size, state=state,
                                                   blocking=self.blocking)
        self.driver.database = database

    def _open(self) -> gw.OracleGateway:
        if self._chunk_gateway is None:
            if self._connect is None:
                raise RuntimeError("incremental snapshots need a connection of their own (no connect function)")
            self._chunk_gateway = gw.OracleGateway(self._connect(), fetch_size=self._fetch_size)
        return self._chunk_gateway

    def busy(self) -> bool:
        """Whether a snapshot chunk awaits its watermarks, or a blocking snapshot its pause (an ``--until-idle``
        run keeps mining)."""
        return self.driver.busy() or self.blocking.requested is not None

    def wrap(self, items: Iterator[StreamItem]) -> Iterator[StreamItem]:
        """The stream with signals applied and snapshot rows added, the hidden topics left out."""
        for item in self.driver.wrap(items):
            if not self.hidden:
                yield item
            elif type(item) is list:
                kept = [r for r in item if not (isinstance(r, ChangeRecord | ChangeBlock) and r.topic in self.hidden)]
                if kept:
                    yield kept
            elif isinstance(item, ChangeRecord | ChangeBlock | SchemaVersion) and item.topic in self.hidden:
                continue
            else:
                yield item

    def close(self) -> None:
        if self._chunk_gateway is not None:
            self._chunk_gateway.close()
            self._chunk_gateway = None


def _read_table(gateway: gw.OracleGateway, owner: str, name: str) -> OracleTable | None:
    columns = gateway.columns(gw.TABLE_COLUMNS, (owner, name))[1]
    if not columns:
        return None
    key = [k for (k,) in gateway.columns(gw.PRIMARY_KEY, (owner, name))[1]]
    return table_of(owner, name, columns, key)
