"""Renders a run of streamed inserts (or updates) of one table as one `ChangeBlock`.

A transaction inserting many rows into one table sends a run of Insert messages; one updating
many rows of a table whose replica identity sends no old tuple (DEFAULT, key unchanged) sends
a run of Update messages with a new tuple only. Rendering
them one by one (decode, convert every value, build the envelope text) is the streaming hot
path; this module renders the whole run column-wise instead: `tuple_columns` decodes every
message's values at once, `column_render` converts each column (vectorised where proven equal
to the converter), and the envelope, ``source`` block, ``transaction`` block and position of every
row are joined around the per-row parts (the field values, the LSN, the transaction counters)
with ``pyarrow.compute``.

Both message kinds carry their TupleData at the same place (``I``/``U``, Int32 relation oid,
``N``), and both render as ``{"before":null,"after":<row>,...}`` with op ``c`` or ``u``.

The result is byte for byte the records `stream.PostgresStreamReader` renders one at a time
(``tests/cdc_sources/postgres/test_stream_blocks.py`` compares them), except the envelope's
``ts_ms``/``ts_us``/``ts_ns``: processing time, taken once per block.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import pyarrow as pa
import pyarrow.compute as pc

from cdc_sources.common.snapshot_blocks import interleave, join_texts
from cdc_sources.common.vector_encoders import VectorEncoder
from cdc_sources.postgres.column_render import encoder_for, render_column
from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.envelope import dumps
from cdc_sources.postgres.pgoutput import ColumnarUnsupportedError, tuple_columns
from cdc_sources.postgres.schema import TableCodec
from cdc_sources.spi import ChangeBlock

__all__ = ["RUN_TUPLE_START", "LsnOrderKeys", "RowRun", "RowRunRenderer"]

RUN_TUPLE_START = 6
"""Where the TupleData of an Insert message, or of an Update message without an old tuple,
starts: ``I``/``U``, Int32 relation oid, ``N``."""


@dataclass(frozen=True)
class RowRun:
    """What the rows of one run share, as the row-at-a-time path would render them.

    Attributes:
        op: ``c`` (a run of inserts) or ``u`` (a run of updates without old tuples).
        source: the ``source`` block's text around its two per-row parts:
            ``source[0] + <sequence JSON string> + source[1] + <lsn> + source[2]``.
        last_commit_lsn: the first element of ``source.sequence`` (None: null).
        position: the position text around the row's LSN:
            ``position[0] + <lsn> + position[1] + <lsn> + position[2]``.
        xid: the transaction id (``transaction.id``'s first part).
        total_order / collection_order: the ``transaction`` block's counters of the run's first
            row (they count up by one per row); None when transaction metadata is off.
        commit_lsn / first_n: every row's order key is ``(commit_lsn, lsn, first_n + i)``.
        headers: the records' headers.
    """

    op: str
    source: tuple[str, str, str]
    last_commit_lsn: int | None
    position: tuple[str, str, str]
    xid: int | None
    total_order: int | None
    collection_order: int | None
    commit_lsn: int
    first_n: int
    headers: Mapping[str, str] | None = None


class RowRunRenderer:
    """Renders runs of rows of one table version. Not thread-safe.

    Args:
        codec: the table version's codec.
        settings: the converter settings (they decide which fields are vectorised).
    """

    def __init__(self, codec: TableCodec, settings: ConverterSettings) -> None:
        self.codec = codec
        self._encoders: dict[int, VectorEncoder | None] = {}
        for f in (*codec.fields, *codec.key_fields):
            if id(f.convert) not in self._encoders:
                self._encoders[id(f.convert)] = encoder_for(codec.columns[f.index], f.convert, settings,
                                                            origin="stream")
        self._value_names = [dumps(f.name) + ":" for f in codec.fields]
        self._key_names = [dumps(f.name) + ":" for f in codec.key_fields]

    def render(self, payloads: Sequence[bytes], lsns: Sequence[int], run: RowRun) -> ChangeBlock:
        """The block of the messages ``payloads`` (all Insert, or all Update without old tuple)
        sent at ``lsns``.

        Raises:
            pgoutput.ColumnarUnsupportedError: a message this path does not decode (render the
                run message by message instead).
            What a converter raises on a value it rejects.
        """
        rows = len(payloads)
        texts = tuple_columns(payloads, RUN_TUPLE_START)
        if len(texts) != len(self.codec.columns):
            raise ColumnarUnsupportedError(
                f"{len(texts)} columns in the messages, {len(self.codec.columns)} in the relation")
        cache: dict[tuple[int, int, str], Any] = {}
        values = [self._column(texts, f, cache) for f in self.codec.fields]
        keys = [self._column(texts, f, cache) for f in self.codec.key_fields]
        lsn = pa.array(lsns, pa.int64()).cast(pa.string())
        head, mid, tail = run.source
        sequence = '"[null,\\"' if run.last_commit_lsn is None else f'"[\\"{run.last_commit_lsn}\\",\\"'
        now = time.time_ns()
        pieces: list[Any] = ['{"before":null,"after":{', *interleave(self._value_names, values),
                             "},\"source\":" + head + sequence, lsn, '\\"]"' + mid, lsn, tail + ',"transaction":']
        if run.total_order is None or run.collection_order is None:
            pieces.append("null")
        else:
            pieces += [f'{{"id":"{run.xid}:', lsn, '","total_order":', _counting(run.total_order, rows),
                       ',"data_collection_order":', _counting(run.collection_order, rows), "}"]
        pieces.append(f',"op":"{run.op}","ts_ms":{now // 1_000_000},"ts_us":{now // 1000},"ts_ns":{now}}}')
        key_texts = join_texts(["{", *interleave(self._key_names, keys), "}"], rows) if keys else None
        p0, p1, p2 = run.position
        positions = join_texts([p0, lsn, p1, lsn, p2], rows)
        order = LsnOrderKeys(run.commit_lsn, tuple(lsns), run.first_n)
        return ChangeBlock(self.codec.topic, key_texts, join_texts(pieces, rows), run.op, positions,
                           (run.commit_lsn, lsns[0]), run.first_n, self.codec.schema_id, run.headers,
                           order_keys=order)

    def _column(self, texts: Sequence[Any], f: Any, cache: dict[tuple[int, int, str], Any]) -> Any:
        key = (f.index, id(f.convert), dumps(f.fallback))
        if key not in cache:
            cache[key] = render_column(texts[f.index], f, self._encoders[id(f.convert)])
        return cache[key]


class LsnOrderKeys(Sequence[tuple[int, int, int]]):
    """The order keys ``(commit_lsn, lsns[i], first_n + i)`` of a run's rows, made on demand."""

    __slots__ = ("commit_lsn", "first_n", "lsns")

    def __init__(self, commit_lsn: int, lsns: Sequence[int], first_n: int) -> None:
        self.commit_lsn, self.lsns, self.first_n = commit_lsn, lsns, first_n

    def __len__(self) -> int:
        return len(self.lsns)

    @overload
    def __getitem__(self, i: int) -> tuple[int, int, int]: ...

    @overload
    def __getitem__(self, i: slice) -> LsnOrderKeys: ...

    def __getitem__(self, i: int | slice) -> tuple[int, int, int] | LsnOrderKeys:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self.lsns))
            if step != 1:
                raise ValueError("order keys slice with a step")
            return LsnOrderKeys(self.commit_lsn, self.lsns[start:stop], self.first_n + start)
        if i < 0:
            i += len(self.lsns)
        return (self.commit_lsn, self.lsns[i], self.first_n + i)


def _counting(first: int, rows: int) -> Any:
    """``first``, ``first + 1``... as a string array of ``rows`` decimal texts."""
    return pc.add(pa.arange(0, rows), first).cast(pa.string())
