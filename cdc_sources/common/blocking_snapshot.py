"""Blocking snapshots (``execute-snapshot`` with ``type: blocking``), run inside the stream.

What Debezium does, and what is done here:

1. The signal (signal table, file channel, or ``cdc-lakehouse signal --type blocking``) is acted
   on at the next transaction boundary: streaming pauses at a `Checkpoint` (the pause point P; a
   connector may take only some checkpoints as pause points, `BlockingSource.pause_order_key`).
2. The named captured tables are read whole, one after the other, with the snapshot codecs
   (rows rendered exactly as the initial snapshot renders them), ``op = r``, ``source.snapshot``
   ``first`` / ``first_in_data_collection`` / ``true`` / ``last_in_data_collection`` / ``last``.
   ``additional-conditions[].filter`` is, for a blocking snapshot, a full ``SELECT`` statement
   (Debezium's rule) read as the table's rows; a bare condition is taken as its ``WHERE``.
3. Streaming resumes from P. The tables are read after P, so changes committed between P and
   the read are in the snapshot and streamed again after it: Debezium's documented duplicates;
   silver applies them in bronze order and ends at the source's state.

Exactly-once and restarts: the checkpoint at P is committed (with its records) with the
snapshot's state in the offset (`BlockingState`: ``blocking_snapshot_*`` keys) before any row
is emitted, and committed again without it once every table is read. Debezium records a
blocking snapshot's progress only at its end, so an interrupted one starts again from the
beginning; so it does here: a restart finds the state in the offset, resumes the stream at P
and reads every table again before streaming. Each row's order key is ``(*pause key, generation,
table number, h)`` (the generation counts snapshots paused at the same position, the last
pause key staying in the offsets) with ``h`` a hash of its key (`emission_order`), rows emitted in ``h`` order: a
row written before the crash has the same order key when read again, so the bronze writer's
replay guard drops exactly the rows bronze has (their newer values, if any, are streamed
after P anyway) and writes the others.

Silver: the rows carry in their ``position`` the snapshot's id under the incremental
snapshot's keys (`POSITION_ID`, and `POSITION_LAST` true on every row of a table read whole),
so silver settles a blocking snapshot like an incremental one (`silver.resnapshot`): rows
whose last change precedes the snapshot's first row in bronze, and that it did not read, are
deleted. A table read through a filter is only part of the table: its rows carry
`POSITION_LAST` false, and silver removes nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from cdc_sources.common.envelope import envelope_text
from cdc_sources.common.incremental_snapshot import Chunk, emission_order, event_key
from cdc_sources.common.incremental_state import POSITION_ID, POSITION_LAST
from cdc_sources.common.signals import ExecuteSnapshot, matching
from cdc_sources.common.snapshot_blocks import same_text
from cdc_sources.spi import ChangeBlock, Checkpoint, OffsetWithExtras, StreamItem, connector_offset
from cdc_sources.spi.snapshot_progress import BlockingProgress, SnapshotListener

log = logging.getLogger(__name__)

__all__ = [
    "K_COLLECTIONS",
    "K_ID",
    "K_LAST",
    "K_ORDER_KEY",
    "K_POSITION",
    "BlockingCollection",
    "BlockingSnapshotter",
    "BlockingSource",
    "BlockingState",
    "StoredBlocking",
    "row_source",
    "rows_block",
    "snapshot_markers",
]

K_ID = "blocking_snapshot_id"
K_COLLECTIONS = "blocking_snapshot_collections"
K_ORDER_KEY = "blocking_snapshot_order_key"
K_POSITION = "blocking_snapshot_position"
K_LAST = "blocking_snapshot_last_order_key"

_SELECT = re.compile(r"^\s*\(?\s*(select|with)\b", re.IGNORECASE)


@dataclass(frozen=True)
class BlockingCollection:
    """One table of a blocking snapshot.

    Attributes:
        schema: the schema (PostgreSQL) or database (MySQL) of the table.
        table: the table's name.
        select: the signal's filter for it: a full ``SELECT`` statement, or a ``WHERE`` condition.
    """

    schema: str
    table: str
    select: str | None = None

    @property
    def id(self) -> str:
        return f"{self.schema}.{self.table}"


def row_source(c: BlockingCollection, table_sql: str) -> str:
    """The ``FROM`` clause reading a blocking snapshot's rows of a table, aliased ``t``: the table
    (``table_sql``, quoted), its rows matching a condition, or a full ``SELECT`` as a derived table."""
    if not c.select:
        return f"{table_sql} AS t"
    if _SELECT.match(c.select):
        return f"({c.select.strip().rstrip(';')}) AS t"
    return f"(SELECT * FROM {table_sql} WHERE ({c.select})) AS t"


def rows_block(topic: str, rows: Sequence[tuple[int, str | None, str]], sources: Sequence[str],
               order_prefix: tuple[int, ...], position: str, schema_id: str | None,
               headers: Mapping[str, str] | None) -> ChangeBlock:
    """A table's snapshot rows (`emission_order`) as one ``r`` block: row ``i`` with ``source`` block
    ``sources[i]`` (JSON text) and order key ``(*order_prefix, h)``."""
    import pyarrow as pa

    keys = [event_key(k) for _, k, _ in rows]
    values = [envelope_text("null", after, src, "r", "null") for (_, _, after), src in zip(rows, sources, strict=True)]
    return ChangeBlock(topic, None if all(k is None for k in keys) else pa.array(keys, pa.string()),
                       pa.array(values, pa.string()), "r", same_text(position, len(rows)), order_prefix, 0,
                       schema_id, headers, [(*order_prefix, h) for h, _, _ in rows])


@dataclass(frozen=True)
class BlockingState:
    """A blocking snapshot under way, kept in the offset while it runs.

    Attributes:
        correlation_id: the snapshot's id (the signal's id and where it was read).
        collections: every table of the snapshot.
        order_key: the pause key: after every record before the pause point, before every one after.
        position: the connector offset at the pause point (JSON text): the rows' position.
    """

    correlation_id: str
    collections: tuple[BlockingCollection, ...]
    order_key: tuple[int, ...]
    position: str

    def to_offset(self) -> dict[str, Any]:
        return {
            K_ID: self.correlation_id,
            K_COLLECTIONS: orjson.dumps([{"schema": c.schema, "table": c.table, "select": c.select}
                                         for c in self.collections]).decode(),
            K_ORDER_KEY: _json(self.order_key),
            K_POSITION: self.position,
        }

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any] | None) -> BlockingState | None:
        """The blocking snapshot an offset says was running; None if none was."""
        if not offset or not offset.get(K_ID):
            return None
        items = orjson.loads(offset[K_COLLECTIONS])
        return cls(str(offset[K_ID]),
                   tuple(BlockingCollection(i["schema"], i["table"], i.get("select")) for i in items),
                   tuple(int(v) for v in orjson.loads(offset[K_ORDER_KEY])), str(offset[K_POSITION]))


def snapshot_markers(table_number: int, tables_total: int, rows: int) -> list[str]:
    """``source.snapshot`` of each of a table's ``rows`` (Debezium's initial and blocking snapshot
    rule): ``first`` on the first row of the first table, ``last`` on the last row of the last,
    ``first_in_data_collection``/``last_in_data_collection`` on the first/last row of the others
    (the last-row marker wins on a one-row table), ``true`` elsewhere."""
    out = ["true"] * rows
    if rows == 0:
        return out
    out[0] = "first" if table_number == 0 else "first_in_data_collection"
    out[-1] = "last" if table_number == tables_total - 1 else "last_in_data_collection"
    return out


@dataclass(frozen=True)
class StoredBlocking:
    """What a stored offset says about blocking snapshots.

    Attributes:
        interrupted: the snapshot that was running, if any.
        last_order_key: the pause key of the last snapshot, if any (kept in every checkpoint's offset
            after it: a snapshot paused at the same stream position takes the next generation).
    """

    interrupted: BlockingState | None = None
    last_order_key: tuple[int, ...] | None = None

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any] | None) -> StoredBlocking:
        last = (offset or {}).get(K_LAST)
        return cls(BlockingState.from_offset(offset), None if not last else tuple(int(v) for v in orjson.loads(last)))


class BlockingSource(Protocol):
    """What a blocking snapshot needs from a connector (its incremental snapshot's chunk source)."""

    def read_table(self, c: BlockingCollection) -> Chunk | str:
        """Every row of the table (``c.select`` applied), rendered as the snapshot renders them, keyed
        by their key JSON text; or why the table cannot be snapshotted."""
        ...

    def snapshot_events(self, c: BlockingCollection, rows: Sequence[tuple[int, str | None, str]],
                        order_prefix: tuple[int, ...], position: str, markers: Sequence[str]) -> list[StreamItem]:
        """``rows`` (`emission_order`) as ``r`` events with order keys ``(*order_prefix, h)``,
        ``source.snapshot`` from ``markers``, ``position`` their position; a `SchemaVersion` first if needed."""
        ...

    def pause_order_key(self, offset: Mapping[str, Any]) -> tuple[int, ...] | None:
        """An order key above every record before the checkpoint at ``offset`` and below every record after it;
        None if streaming does not pause at this checkpoint (the snapshot waits for the next one: Oracle
        pauses only at the end of a mining window, as Debezium's LogMiner source does)."""
        ...


class BlockingSnapshotter:
    """Runs blocking snapshots at transaction boundaries of one session's stream. Not thread-safe.

    Args:
        source: the connector's side.
        stored: what the stored offset holds (an interrupted snapshot is run again first); None:
            nothing (a snapshot taken by this run read every table anew).
        qualifier: what signals' collection names start with before ``<schema>.<table>`` (SQL
            Server's database), or None.
    """

    def __init__(self, source: BlockingSource, stored: StoredBlocking | None, qualifier: str | None = None) -> None:
        self.source = source
        self.qualifier = qualifier
        self.interrupted = stored.interrupted if stored else None
        self.last = stored.last_order_key if stored else None
        self.requested: tuple[str, tuple[BlockingCollection, ...]] | None = None
        self._held = 0  # transactions of checkpoints held back while a request waits for a pause point
        self.listener: SnapshotListener | None = None
        """Told of each snapshot's progress (`cdc_sources.spi.snapshot_progress`)."""

    def execute(self, signal_id: str, correlation_id: str, a: ExecuteSnapshot,
                tables: Sequence[tuple[str, str]]) -> None:
        """Act on ``execute-snapshot`` with ``type: blocking``: its captured ``tables`` (the signal
        table left out) are snapshotted at the next transaction boundary."""
        names = matching(a.collections, tables, self.qualifier)
        if not names:
            log.warning("signal %s: no captured table matches %s: nothing to snapshot", signal_id,
                        [c.text for c in a.collections])
            return
        collections = [BlockingCollection(s, t, a.condition_for(s, t, self.qualifier)) for s, t in names]
        log.info("signal %s: blocking snapshot of %s at the next transaction end", signal_id,
                 ", ".join(c.id for c in collections))
        self.request(correlation_id, collections)

    def request(self, correlation_id: str, collections: Sequence[BlockingCollection]) -> None:
        """Snapshot ``collections`` at the next transaction boundary (added to a pending request)."""
        if self.requested is None:
            self.requested = (correlation_id, tuple(collections))
        else:
            known = set(self.requested[1])
            self.requested = (self.requested[0], self.requested[1] + tuple(c for c in collections if c not in known))

    def resume(self) -> Iterator[StreamItem]:
        """Read again every table of an interrupted snapshot (before anything is streamed after its pause point)."""
        st, self.interrupted = self.interrupted, None
        if st is None:
            return
        self.last = st.order_key
        log.info("blocking snapshot %s was interrupted: reading %s again", st.correlation_id,
                 ", ".join(c.id for c in st.collections))
        yield from self._read(st)

    def at_checkpoint(self, cp: Checkpoint) -> Iterator[StreamItem]:
        """``cp``, or, if a snapshot was asked for: ``cp`` with the snapshot's state, its rows, then ``cp``.

        Both checkpoints are yielded as idle so that the coordinator commits at once: the state
        must be stored before any row (a size-cut commit of rows stores the last committed offset).
        """
        if self.requested is None:
            yield self._with_last(cp)
            return
        base = connector_offset(cp.offset)
        where = base.to_dict()
        at = self.source.pause_order_key(where)
        if at is None:
            # not a pause point of this connector: the request waits for the next checkpoint, and this one
            # is held back, so that no offset past the signal is stored before the snapshot's state is (a
            # crash in between reads the signal again); its transactions count at the pause
            self._held += cp.transactions
            return
        (cid, collections), self.requested = self.requested, None
        held, self._held = self._held, 0
        # a snapshot paused at the same position as the last one (no change streamed in between) comes after it
        generation = self.last[-1] + 1 if self.last is not None and self.last[:-1] == at else 0
        st = BlockingState(cid, collections, (*at, generation), orjson.dumps(where).decode())
        self.last = st.order_key
        extras = dict(cp.offset.extras) if isinstance(cp.offset, OffsetWithExtras) else {}
        log.info("blocking snapshot %s: streaming paused to snapshot %s", cid, ", ".join(c.id for c in collections))
        yield Checkpoint(OffsetWithExtras(base, {**extras, **st.to_offset(), K_LAST: _json(st.order_key)}), idle=True,
                         transactions=cp.transactions + held)
        yield from self._read(st)
        yield Checkpoint(self._with_last(cp).offset, idle=True)
        log.info("blocking snapshot %s completed: streaming resumes", cid)

    def _with_last(self, cp: Checkpoint) -> Checkpoint:
        """``cp`` with the last pause key in its offset (if there was a blocking snapshot)."""
        if self.last is None:
            return cp
        extras = dict(cp.offset.extras) if isinstance(cp.offset, OffsetWithExtras) else {}
        return Checkpoint(OffsetWithExtras(connector_offset(cp.offset), {**extras, K_LAST: _json(self.last)}),
                          idle=cp.idle, transactions=cp.transactions)

    def _read(self, st: BlockingState) -> Iterator[StreamItem]:
        where = orjson.loads(st.position)
        total = len(st.collections)
        scanned: dict[str, int] = {}
        self._report(st, True, 0, scanned)
        for n, c in enumerate(st.collections):
            # a filtered table's snapshot is not all of it: silver must not settle it as a re-snapshot
            position = orjson.dumps({**where, POSITION_ID: st.correlation_id, POSITION_LAST: not c.select}).decode()
            chunk = self.source.read_table(c)
            if isinstance(chunk, str):
                log.error("blocking snapshot %s: table %s: %s: skipped", st.correlation_id, c.id, chunk)
                continue
            rows = emission_order(chunk.rows)
            yield from self.source.snapshot_events(c, rows, (*st.order_key, n), position,
                                                   snapshot_markers(n, total, len(rows)))
            log.info("blocking snapshot %s: %s: %d rows", st.correlation_id, c.id, len(rows))
            scanned[c.id] = len(rows)
            self._report(st, True, n + 1, scanned)
        self._report(st, False, total, scanned)

    def _report(self, st: BlockingState, running: bool, done: int, scanned: Mapping[str, int]) -> None:
        if self.listener is not None:
            self.listener.blocking_snapshot(BlockingProgress(st.correlation_id, running, done, len(st.collections),
                                                             tuple(scanned.items())))


def _json(key: tuple[int, ...]) -> str:
    return orjson.dumps(list(key)).decode()
