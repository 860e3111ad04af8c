"""Oracle's side of blocking snapshots (`cdc_sources.common.blocking_snapshot`).

Where streaming pauses, as Debezium 3.6.3's LogMiner source pauses: only at the end of a mining
window, never between two transactions of one (its loop checks for a requested blocking snapshot
after a window is processed). At a window's end every transaction committed at or below the
window's upper SCN H has been handed out and none above it, so:

- the pause key is ``(H, 2^63 - 1, 2^63 - 1)``: a streamed record's order key is ``(commit SCN,
  the commit's rank at that SCN, its index)``, so every record before the pause is below it
  (commit SCN at most H, rank and index below 2^63 - 1) and every record after it above it
  (commit SCN above H). Two commits sharing an SCN never straddle the pause, which is why their
  rank, which the offset does not record, is not needed;
- the tables are read ``AS OF SCN H`` (a flashback query): exactly the state the streamed events
  up to the pause left, nothing committed after it. Debezium reads ``AS OF SCN`` of the offset's
  ``scn``, which is below H while a transaction is open (it is where mining restarts), so its rows
  can be older than changes already streamed; H cannot be;
- the checkpoint at the pause carries the offset of the window's end (its ``commit_scn`` names
  what was handed out at each redo thread), so a restart from it skips exactly the transactions
  before the pause and hands out every one after it.

A blocking snapshot asked for in the middle of a window holds back the window's remaining
checkpoints until the pause (`BlockingSnapshotter`), so the signal's own transaction is never
stored as handled before the snapshot's state is: a crash in between mines the signal again.

A table is read with the initial snapshot's select (`gateway.snapshot_select`) at H, or, with the
signal's ``additional-conditions`` filter, ``SELECT <columns> FROM <table> AS OF SCN H WHERE
(<condition>)``; a filter that is a full ``SELECT`` is read as written (as Debezium does; it reads
the table now, not as of H: put ``AS OF SCN`` in it for the pause's state). Rows are rendered as
the initial snapshot renders them, ``source.scn`` H.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cdc_sources.common.blocking_snapshot import BlockingCollection, rows_block
from cdc_sources.common.envelope import dumps
from cdc_sources.common.incremental_snapshot import Chunk
from cdc_sources.oracle import gateway as gw
from cdc_sources.oracle.converters import OracleValueError
from cdc_sources.oracle.incremental import OracleChunkSource
from cdc_sources.oracle.snapshot_values import redo_value
from cdc_sources.oracle.source import OracleEvent
from cdc_sources.spi import StreamItem

__all__ = ["AFTER_ALL", "OracleBlockingSource", "blocking_select"]

AFTER_ALL = 2**63 - 1
"""Above every rank and every index in a transaction."""

_SELECT = re.compile(r"^\s*\(?\s*(select|with)\b", re.IGNORECASE)


def blocking_select(owner: str, table: str, columns: Sequence[str], scn: int, select: str | None) -> gw.Statement:
    """The statement reading a blocking snapshot's rows of a table at ``scn``: all of them, those
    matching a ``WHERE`` condition, or a full ``SELECT`` (its ``columns``, read as written)."""
    if not select:
        return gw.snapshot_select(owner, table, columns, scn)
    names = ", ".join(gw.quote(c) for c in columns)
    if _SELECT.match(select):
        inner = select.strip().rstrip(";")
        return gw.Statement(gw.StatementKind.BLOCKING_SELECT,
                            f"SELECT {', '.join('T.' + gw.quote(c) for c in columns)} FROM ({inner}) T")
    base = gw.snapshot_select(owner, table, columns, scn).sql
    assert base.startswith(f"SELECT {names} FROM ")
    return gw.Statement(gw.StatementKind.BLOCKING_SELECT, f"{base} WHERE ({select})")


def _database_errors() -> tuple[type[Exception], ...]:
    """python-oracledb's error for a statement the database refused (none without the driver)."""
    try:
        import oracledb
    except ImportError:
        return ()
    return (oracledb.DatabaseError,)


class OracleBlockingSource:
    """Implements `cdc_sources.common.blocking_snapshot.BlockingSource` over the incremental
    snapshot's chunk source (its connection, tables and event maker).

    Args:
        chunks: the incremental snapshot's chunk source.
        pause_scn: the capture session's pause point: the SCN up to which everything is handed out
            when the checkpoint being passed on ends a mining window (or is idle after one), else None.
        interrupted_scn: the SCN of the pause of a snapshot interrupted by a crash (read again at it).
    """

    def __init__(self, chunks: OracleChunkSource, pause_scn: Callable[[], int | None],
                 interrupted_scn: int | None = None) -> None:
        self.chunks = chunks
        self._pause_scn = pause_scn
        self.read_scn = interrupted_scn

    def pause_order_key(self, offset: Mapping[str, Any]) -> tuple[int, ...] | None:
        scn = self._pause_scn()
        if scn is None:
            return None
        self.read_scn = scn
        return (scn, AFTER_ALL, AFTER_ALL)

    def read_table(self, c: BlockingCollection) -> Chunk | str:
        table = self.chunks.maker.table(c.schema, c.table)
        if table is None:
            return "not a captured table"
        if not table.key:
            return "no primary key (blocking snapshots read tables with one)"
        assert self.read_scn is not None, "a blocking snapshot is read after streaming paused"
        names = [col.name for col in table.columns]
        statement = blocking_select(table.schema, table.name, names, self.read_scn, c.select)
        out: dict[str | None, str] = {}
        try:
            for row in self.chunks.gateway().rows(statement):
                values = tuple(redo_value(col, v) for col, v in zip(table.columns, row, strict=True))
                rec = self.chunks.maker.read_record(table, values, snapshot_scn=self.read_scn, ts_ms=0, marker="true")
                assert rec.key is not None and rec.value is not None
                out[dumps(rec.key)] = dumps(rec.value["after"])
        except OracleValueError as exc:
            return f"a value cannot be read: {exc}"
        except _database_errors() as exc:  # the signal's filter is the user's SQL
            if not c.select:
                raise
            return f"reading the rows of {c.id} through the signal's filter: {str(exc).splitlines()[0]}"
        return Chunk(table.topic(self.chunks.source.name), out, None, False)

    def snapshot_events(self, c: BlockingCollection, rows: Sequence[tuple[int, str | None, str]],
                        order_prefix: tuple[int, ...], position: str, markers: Sequence[str]) -> list[StreamItem]:
        table = self.chunks.maker.table(c.schema, c.table)
        assert table is not None
        version = self.chunks.maker.schema_version(table)
        out: list[StreamItem] = []
        if version.schema_id not in self.chunks.announced:
            out.append(version)
            self.chunks.announced.add(version.schema_id)
        if not rows:
            return out
        ts_ms = time.time_ns() // 1_000_000
        sources = {m: dumps(self.chunks.source.block(OracleEvent(schema=table.schema, table=table.name, ts_ms=ts_ms,
                                                                 scn=self.read_scn, snapshot=m)))
                   for m in set(markers)}
        out.append(rows_block(version.topic, rows, [sources[m] for m in markers], order_prefix, position,
                              version.schema_id, None))
        return out
