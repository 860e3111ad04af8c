"""Turns Arrow batches of one table's snapshot rows into `ChangeBlock`s of ``r`` records.

Each block is byte for byte what rendering its rows one by one gives (``TableCodec.row`` /
``TableCodec.key`` inside `envelope`, the source block of `SourceInfo.block`, the offset of
`PostgresOffset`): the JSON around the field values is cut from a real `envelope` call, the field
values come from `column_render.render_column`, and the pieces are joined column-wise with
``pyarrow.compute.binary_join_element_wise``. A block holds rows that share their
``source.snapshot`` marker and position, so rows at table boundaries get blocks of their own;
its positions are a dictionary-encoded string array (one position text, an index per row).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_sources.postgres.column_render import encoder_for, render_column
from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.envelope import SourceInfo, dumps, envelope
from cdc_sources.postgres.offset import PostgresOffset
from cdc_sources.postgres.schema import FieldCodec, TableCodec
from cdc_sources.postgres.vector_encoders import VectorEncoder
from cdc_sources.spi import ChangeBlock

_AFTER = "\ue000after\ue000"  # private-use characters: cannot clash with the envelope's own text


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


@dataclass(frozen=True)
class Segment:
    """Consecutive rows ``[start, stop)`` of a batch with one ``source.snapshot`` marker."""

    start: int
    stop: int
    marker: str
    last: bool


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
    """Split a batch of ``rows`` rows into runs of equal marker.

    Args:
        rows: rows in the batch (at least one).
        table_row: index within its table of the batch's first row.
        first_n: snapshot record number (from 1) of the batch's first row.
        table_end: the batch ends its table.
        last_table: the table is the snapshot's last.
    """
    def one(i: int) -> Segment:
        end = table_end and i == rows - 1
        m = marker(first_n + i, first_in_table=table_row + i == 0, last_in_table=end, last=end and last_table)
        return Segment(i, i + 1, m, end and last_table)

    out: list[Segment] = []
    start = 0
    if table_row == 0 or first_n == 1:
        out.append(one(0))
        start = 1
    stop = rows - 1 if table_end and rows - 1 >= start else rows
    if stop > start:
        out.append(Segment(start, stop, "true", False))
    if stop < rows:
        out.append(one(rows - 1))
    return out


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
        self._value_names = [dumps(f.name) + ":" for f in codec.fields]
        self._key_names = [dumps(f.name) + ":" for f in codec.key_fields]
        self._positions = {last: dumps(PostgresOffset(run.lsn, None, run.tx_id, run.ts_us, snapshot=True,
                                                      last_snapshot_record=last, slot=run.slot).to_dict())
                           for last in (False, True)}

    def blocks(self, batch: Any, rows: int, first_n: int, parts: Sequence[Segment]) -> Iterator[ChangeBlock]:
        """The blocks of ``rows`` rows of ``batch`` (a pyarrow RecordBatch), numbered from ``first_n``."""
        cache: dict[tuple[int, int, str], Any] = {}
        values = [self._column(batch, f, cache) for f in self.codec.fields]
        keys = [self._column(batch, f, cache) for f in self.codec.key_fields]
        key_texts = _join(["{", *_interleave(self._key_names, keys), "}"], rows) if keys else None
        for part in parts:
            n = part.stop - part.start
            head, tail = self._envelope(part.marker)
            pieces = [head + "{", *_interleave(self._value_names, [v.slice(part.start, n) for v in values]), "}" + tail]
            yield ChangeBlock(
                self.codec.topic, None if key_texts is None else key_texts.slice(part.start, n), _join(pieces, n),
                "r", _same_text(self._positions[part.last], n),
                (self.run.lsn, 0), first_n + part.start, self.codec.schema_id, self.run.headers)

    def _column(self, batch: Any, f: FieldCodec, cache: dict[tuple[int, int, str], Any]) -> Any:
        key = (f.index, id(f.convert), dumps(f.fallback))
        if key not in cache:
            cache[key] = render_column(batch.column(f"c{f.index}"), f, self._encoders[id(f.convert)])
        return cache[key]

    def _envelope(self, snapshot: str) -> tuple[str, str]:
        """The value JSON before and after the ``after`` struct, for one marker (fresh ``ts_*``)."""
        codec, run = self.codec, self.run
        source = run.source.block(schema=codec.schema, table=codec.table, ts_us=run.ts_us, snapshot=snapshot,
                                  tx_id=run.tx_id, lsn=run.lsn, sequence=f'[null,"{run.lsn}"]')
        head, tail = envelope(None, _AFTER, source, "r", None).split(dumps(_AFTER), 1)
        return head, tail


def _interleave(names: Sequence[str], columns: Sequence[Any]) -> list[Any]:
    """``"a":``, col_a, ``,"b":``, col_b... (the separators merged into the names)."""
    out: list[Any] = []
    for i, (name, column) in enumerate(zip(names, columns, strict=True)):
        out.extend((name if i == 0 else "," + name, column))
    return out


def _join(pieces: list[Any], rows: int) -> Any:
    """Concatenate strings and string arrays row-wise into one string array of ``rows`` rows."""
    merged: list[Any] = []
    for p in pieces:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    if len(merged) == 1:
        return pa.repeat(pa.scalar(merged[0], pa.string()), rows)
    return pc.binary_join_element_wise(*merged, "")


def _same_text(text: str, rows: int) -> Any:
    """``rows`` times ``text``, dictionary-encoded: one copy of the text, four bytes a row."""
    return pa.DictionaryArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), rows), pa.array([text], pa.string()))
