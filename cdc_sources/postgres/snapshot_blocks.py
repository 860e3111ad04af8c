"""Turns Arrow batches of one table's snapshot rows into `ChangeBlock`s of ``r`` records.

Each block is byte for byte what rendering its rows one by one gives (``TableCodec.row`` /
``TableCodec.key`` inside `envelope`, the source block of `SourceInfo.block`, the offset of
`PostgresOffset`): the JSON around the field values is cut from a real `envelope` call, the field
values come from `column_render.render_column`, and the pieces are joined column-wise with
``pyarrow.compute.binary_join_element_wise`` (`cdc_sources.common.snapshot_blocks`, with
PostgreSQL's `marker` precedence). A block holds rows that share their
``source.snapshot`` marker and position, so rows at table boundaries get blocks of their own;
its positions are a dictionary-encoded string array (one position text, an index per row).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.common.snapshot_blocks import BlockFrame, Segment, envelope_around
from cdc_sources.common.snapshot_blocks import segments as common_segments
from cdc_sources.common.vector_encoders import VectorEncoder
from cdc_sources.postgres.column_render import encoder_for, render_column
from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.envelope import SourceInfo, dumps
from cdc_sources.postgres.offset import PostgresOffset
from cdc_sources.postgres.schema import FieldCodec, TableCodec
from cdc_sources.spi import ChangeBlock


@dataclass(frozen=True)
class SnapshotRun:
    """What every record of one snapshot shares.

    Attributes:
        source: the fixed part of the ``source`` block.
        lsn: the slot's consistent point (``source.lsn``, the offset's ``lsn``).
        tx_id: the snapshot transaction's xid.
        ts_us: the snapshot's time stamp (Debezium stamps every snapshot row with one time).
        slot: the replication slot (recorded in the offset).
        headers: the records' headers, if any.
    """

    source: SourceInfo
    lsn: int
    tx_id: int | None
    ts_us: int
    slot: str
    headers: Mapping[str, str] | None = None


def marker(n: int, *, first_in_table: bool, last_in_table: bool, last: bool) -> str:
    """Debezium's ``source.snapshot`` value for the ``n``-th snapshot record (from 1).

    The snapshot's very first record is ``first`` (unless it is also the last), its very last
    ``last``; a table's last record is ``last_in_data_collection``, its first
    ``first_in_data_collection``; every other record ``true``.
    """
    if n == 1 and not last:
        return "first"
    if last:
        return "last"
    if last_in_table:
        return "last_in_data_collection"
    if first_in_table:
        return "first_in_data_collection"
    return "true"


def segments(rows: int, *, table_row: int, first_n: int, table_end: bool, last_table: bool) -> list[Segment]:
    """`cdc_sources.common.snapshot_blocks.segments` with PostgreSQL's `marker` precedence."""
    return common_segments(rows, table_row=table_row, first_n=first_n, table_end=table_end, last_table=last_table,
                           marker=marker)


class TableBlocks:
    """Renders the snapshot rows of one table version. Not thread-safe.

    Args:
        codec: the table's codec; batches hold its columns by name ``c<index>``.
        settings: the converter settings (they decide which fields are vectorised).
        run: what every record of the snapshot shares.
    """

    def __init__(self, codec: TableCodec, settings: ConverterSettings, run: SnapshotRun) -> None:
        self.codec = codec
        self.run = run
        self._encoders: dict[int, VectorEncoder | None] = {}
        for f in (*codec.fields, *codec.key_fields):
            if id(f.convert) not in self._encoders:
                self._encoders[id(f.convert)] = encoder_for(codec.columns[f.index], f.convert, settings)
        self._frame = BlockFrame(codec.topic, codec.schema_id, run.headers, (run.lsn, 0),
                                 [f.name for f in codec.fields], [f.name for f in codec.key_fields])
        self._positions = {last: dumps(PostgresOffset(run.lsn, None, run.tx_id, run.ts_us, snapshot=True,
                                                      last_snapshot_record=last, slot=run.slot).to_dict())
                           for last in (False, True)}

    def blocks(self, batch: Any, rows: int, first_n: int, parts: Sequence[Segment]) -> Iterator[ChangeBlock]:
        """The blocks of ``rows`` rows of ``batch`` (a pyarrow RecordBatch), numbered from ``first_n``."""
        cache: dict[tuple[int, int, str], Any] = {}
        values = [self._column(batch, f, cache) for f in self.codec.fields]
        keys = [self._column(batch, f, cache) for f in self.codec.key_fields]
        yield from self._frame.blocks(values, keys, rows, first_n, parts, self._envelope, self._positions.__getitem__)

    def _column(self, batch: Any, f: FieldCodec, cache: dict[tuple[int, int, str], Any]) -> Any:
        key = (f.index, id(f.convert), dumps(f.fallback))
        if key not in cache:
            cache[key] = render_column(batch.column(f"c{f.index}"), f, self._encoders[id(f.convert)])
        return cache[key]

    def _envelope(self, snapshot: str) -> tuple[str, str]:
        """The value JSON before and after the ``after`` struct, for one marker (fresh ``ts_*``)."""
        codec, run = self.codec, self.run
        return envelope_around(run.source.block(schema=codec.schema, table=codec.table, ts_us=run.ts_us,
                                                snapshot=snapshot, tx_id=run.tx_id, lsn=run.lsn,
                                                sequence=f'[null,"{run.lsn}"]'))
