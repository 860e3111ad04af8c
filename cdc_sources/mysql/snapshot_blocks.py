"""Turns raw batches of one table's snapshot rows into `ChangeBlock`s of ``r`` records.

Each block is byte for byte what `snapshot.SnapshotRowReader` renders row by row
(``TableCodec.row_tuple`` / ``key_tuple`` inside the envelope, its ``source`` block and
position): every field of a batch is rendered column-wise (`column_render.encoder_for`, else value
by value from the value pymysql would have returned, see `raw_values`), then the pieces are
joined and cut into blocks by `cdc_sources.common.snapshot_blocks`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from cdc_sources.common.column_render import render_column
from cdc_sources.common.envelope import dumps
from cdc_sources.common.snapshot_blocks import BlockFrame, Segment, envelope_around
from cdc_sources.common.vector_encoders import VectorEncoder
from cdc_sources.mysql.codec import FieldCodec, TableCodec
from cdc_sources.mysql.column_render import encoder_for
from cdc_sources.mysql.converters import MySqlConverterSettings
from cdc_sources.mysql.raw_values import ResultColumn, ValueDecoding, decoding
from cdc_sources.mysql.snapshot import SnapshotRowReader
from cdc_sources.mysql.snapshot_process import RawBatch
from cdc_sources.spi import ChangeBlock, SourceError


class TableColumns:
    """Renders the fields of one table version's rows column by column, as one result set
    delivers them: each field a string array of JSON fragments, byte for byte what
    ``TableCodec.row_tuple`` / ``key_tuple`` give once dumped. Not thread-safe.

    Used by the columnar snapshot (`TableBlocks`) and by incremental snapshot chunks
    (`cdc_sources.mysql.incremental_columnar`).

    Args:
        codec: the table's codec; the result's columns are the table's, in order.
        columns: the result's columns, as the server describes them.
        settings: the converter settings (they decide which fields are vectorised).
    """

    def __init__(self, codec: TableCodec, columns: Sequence[ResultColumn], settings: MySqlConverterSettings) -> None:
        if len(columns) != len(codec.table.columns):
            raise SourceError(f"snapshotting table {codec.table.id}: the SELECT returned {len(columns)} columns, "
                              f"the table has {len(codec.table.columns)}")
        self.codec = codec
        self._decodings = [decoding(c) for c in columns]
        self._encoders: dict[tuple[int, int], VectorEncoder | None] = {}
        for f in (*codec.fields, *codec.key_fields):
            if (f.index, id(f.convert)) not in self._encoders:
                self._encoders[(f.index, id(f.convert))] = encoder_for(codec.table.columns[f.index], f.convert,
                                                                        settings, columns[f.index])

    def render(self, batch: RawBatch) -> tuple[list[Any], list[Any]]:
        """The rendered value fields and key fields of ``batch`` (in `TableCodec.fields` /
        ``key_fields`` order); raises what the converters raise on a value they reject."""
        inputs: dict[int, Any] = {}
        cache: dict[tuple[int, int, str], Any] = {}
        values = [self._column(batch, f, inputs, cache) for f in self.codec.fields]
        keys = [self._column(batch, f, inputs, cache) for f in self.codec.key_fields]
        return values, keys

    def _column(self, batch: RawBatch, f: FieldCodec, inputs: dict[int, Any],
                cache: dict[tuple[int, int, str], Any]) -> Any:
        key = (f.index, id(f.convert), repr(f.fallback))
        if key not in cache:
            coding = self._decodings[f.index]
            values = self._input(batch, f.index, coding, inputs)
            if values is None:  # not valid text: per value from the bytes, failing as pymysql would
                cache[key] = render_column(batch.arrays[f.index], coding.raw_converter(f.convert), f.fallback, None)
            else:
                cache[key] = render_column(values, coding.converter(f.convert), f.fallback,
                                           self._encoders[(f.index, id(f.convert))])
        return cache[key]

    @staticmethod
    def _input(batch: RawBatch, index: int, coding: ValueDecoding, inputs: dict[int, Any]) -> Any:
        """The column as its converter's input (None: its bytes are not valid UTF-8 text)."""
        if index not in inputs:
            try:
                inputs[index] = coding.array(batch.arrays[index])
            except pa.ArrowInvalid:
                inputs[index] = None
        return inputs[index]


class TableBlocks:
    """Renders the snapshot rows of one table version, as one result set delivers them. Not thread-safe.

    Args:
        codec: the table's codec; the result's columns are the table's, in order.
        columns: the result's columns, as the server describes them.
        settings: the converter settings (they decide which fields are vectorised).
        shared: the snapshot's row reader, for what every record shares with its records (the
            ``source`` block, position, order-key prefix and headers).
    """

    def __init__(self, codec: TableCodec, columns: Sequence[ResultColumn], settings: MySqlConverterSettings,
                 shared: SnapshotRowReader) -> None:
        self.codec = codec
        self._columns = TableColumns(codec, columns, settings)
        self._frame = BlockFrame(codec.topic, codec.schema_id, shared.headers, shared.order_prefix,
                                 [f.name for f in codec.fields], [f.name for f in codec.key_fields])
        self._shared = shared
        self._position = dumps(shared.offset)

    def blocks(self, batch: RawBatch, first_index: int, parts: Sequence[Segment]) -> Iterator[ChangeBlock]:
        """The blocks of ``batch``; its row 0 is snapshot record ``first_index`` (from 0)."""
        values, keys = self._columns.render(batch)
        yield from self._frame.blocks(values, keys, batch.rows, first_index, parts, self._envelope, self._positions)

    def _envelope(self, marker: str) -> tuple[str, str]:
        """The value JSON before and after the ``after`` struct, for one marker (fresh ``ts_*``)."""
        return envelope_around(self._shared.source_block(self.codec, marker))

    def _positions(self, last: bool) -> str:
        """Every snapshot record's position is the snapshot's (the last one's too)."""
        return self._position
