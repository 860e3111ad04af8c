"""Incremental snapshot chunks read column by column, as the initial snapshot reads its tables.

A chunk's ``SELECT`` (`incremental.MySqlChunkSource.read_chunk`) runs on a
`snapshot_process.SnapshotWorker` of its own: a reader process with the C extension, on an
autocommit connection (no read view of its own: each chunk reads what is committed when it
runs, as the row path's autocommit connection does). Its raw column batches are rendered by
`snapshot_blocks.TableColumns`, the initial snapshot's renderer, into each row's key and
``after`` JSON text: byte for byte what ``dumps(codec.key_tuple(row))`` and
``dumps(codec.row_tuple(row))`` give for the row pymysql returns with the snapshot's
conversions. The trailing ``CAST(<key> AS CHAR)`` columns come back as text. The texts stay
Arrow string arrays (`ChunkRows`): the chunk source keeps them so until the chunk's events are
built (`cdc_sources.common.chunk_columns`).

The statement is the row path's, its parameters inlined by pymysql exactly as pymysql would
send them (``cursor.mogrify``). The worker starts on the first chunk; when none can start (no
C extension, a TLS mode it does not handle) `ColumnarChunkReader.read` answers None and the
caller reads the chunk row by row. A worker that failed (it exits after reporting an error) is
dropped and a new one started for the next chunk.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cdc_sources.common.chunk_columns import PreparedRows, prepare
from cdc_sources.common.snapshot_blocks import struct_texts
from cdc_sources.mysql.codec import TableCodec
from cdc_sources.mysql.converters import MySqlConverterSettings
from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.raw_values import ResultColumn
from cdc_sources.mysql.snapshot_blocks import TableColumns
from cdc_sources.mysql.snapshot_process import RawBatch, SnapshotWorker

log = logging.getLogger(__name__)

__all__ = ["ChunkRows", "ColumnarChunkReader"]

_BLOCK_ROWS = 1 << 20
"""Rows per batch the worker sends for a chunk: a chunk is bounded by its size, one batch suffices."""


@dataclass(frozen=True)
class ChunkRows:
    """A chunk's rows in the order the server returned them: their chunking keys at once, their
    rendered texts when `prepared` is called (rendering runs on the reader's render thread meanwhile).

    Attributes:
        rows: the number of rows the query returned.
        chunk_key_columns: the chunking key's columns (the ``CAST(... AS CHAR)`` texts, binary arrays).
        rendered: the rendering of the first ``limit`` rows (`ColumnarChunkReader.read`) under way.
    """

    rows: int
    chunk_key_columns: Sequence[Any]
    rendered: Future[PreparedRows]

    def __len__(self) -> int:
        return self.rows

    def prepared(self) -> PreparedRows:
        """The rendered rows, waiting for them: each row's key JSON text (a string array; None for
        a table without a key) and ``after`` JSON text, and the keys' hash order (`prepare`).
        Raises what the converters raised on a value they reject."""
        return self.rendered.result()

    def chunk_key(self, i: int) -> tuple[str | None, ...]:
        """Row ``i``'s chunking key (text values)."""
        return tuple(_text(column[i].as_py()) for column in self.chunk_key_columns)

    def chunk_keys(self, n: int) -> list[tuple[str | None, ...]]:
        """The chunking keys of the first ``n`` rows."""
        texts = [[_text(v) for v in column.slice(0, n).to_pylist()] for column in self.chunk_key_columns]
        return list(zip(*texts, strict=True))


class ColumnarChunkReader:
    """Reads chunks through a reader process and renders them on a thread of its own. Not
    thread-safe; `close` it.

    Args:
        start: starts a connected reader process, or returns None when none can serve the
            connection (`SnapshotWorker.start`).
        settings: the converter settings.
    """

    def __init__(self, start: Callable[[], SnapshotWorker | None], settings: MySqlConverterSettings) -> None:
        self._start = start
        self.settings = settings
        self._worker: SnapshotWorker | None = None
        self.available = True
        """False once a reader process could not start: chunks are then read row by row."""
        self._renderers: dict[TableId, tuple[TableCodec, tuple[ResultColumn, ...], TableColumns]] = {}
        self._render_thread: ThreadPoolExecutor | None = None

    def read(self, codec: TableCodec, sql: str, key_count: int, *, limit: int | None = None,
             where: str) -> ChunkRows | None:
        """The rows of ``sql`` (the table's columns in order, then ``key_count`` chunking-key texts),
        the first ``limit`` of them rendered (None: all), or None when no reader process can run.
        Errors are the connector's (`MySqlError`, naming ``where``); the converters' are raised by
        `ChunkRows.prepared`. Renderings run one at a time, in the order their chunks were read."""
        worker = self._worker_or_none()
        if worker is None:
            return None
        try:
            batches = [b for b in worker.read(str(codec.table.id), sql, block_rows=_BLOCK_ROWS, where=where) if b.rows]
        except BaseException:
            self._drop()
            raise
        width = len(codec.table.columns)
        parts: list[RawBatch] = []
        left = sum(b.rows for b in batches) if limit is None else limit
        for b in batches:
            n = min(b.rows, left)
            if n > 0:
                parts.append(RawBatch(b.columns[:width], [a.slice(0, n) for a in b.arrays[:width]], n))
            left -= n
        jobs = [(self._renderer(codec, part), part) for part in parts]  # the cache is this thread's
        if self._render_thread is None:
            self._render_thread = ThreadPoolExecutor(1, thread_name_prefix="incremental-render")
        rendered = self._render_thread.submit(_render, codec, jobs)
        return ChunkRows(sum(b.rows for b in batches),
                         [_joined([b.arrays[width + i] for b in batches], pa.binary()) for i in range(key_count)],
                         rendered)

    def close(self) -> None:
        """End the reader process, if one runs, and the render thread (after its rendering)."""
        self._drop()
        thread, self._render_thread = self._render_thread, None
        if thread is not None:
            thread.shutdown(wait=True, cancel_futures=True)

    def _worker_or_none(self) -> SnapshotWorker | None:
        if self._worker is None and self.available:
            self._worker = self._start()
            if self._worker is None:
                self.available = False
                log.info("incremental snapshot: chunks are read row by row (no columnar reader process)")
        return self._worker

    def _drop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()

    def _renderer(self, codec: TableCodec, batch: RawBatch) -> TableColumns:
        """The renderer of a codec's rows, for a result described as ``batch`` is (kept per table
        while its codec and the result's description stay the same)."""
        described = tuple(batch.columns)
        cached = self._renderers.get(codec.table.id)
        if cached is not None and cached[0] is codec and cached[1] == described:
            return cached[2]
        renderer = TableColumns(codec, batch.columns, self.settings)
        self._renderers[codec.table.id] = (codec, described, renderer)
        return renderer


def _render(codec: TableCodec, jobs: Sequence[tuple[TableColumns, RawBatch]]) -> PreparedRows:
    """Each row's key JSON text (None for a table without a key) and ``after`` JSON text, the
    batches' rows one after another, with the keys' hash order (`prepare`)."""
    value_names = [f.name for f in codec.fields]
    key_names = [f.name for f in codec.key_fields]
    keys: list[Any] = []
    afters: list[Any] = []
    for renderer, part in jobs:
        values, key_fields = renderer.render(part)
        afters.append(struct_texts(value_names, values, part.rows))
        if key_names:
            keys.append(struct_texts(key_names, key_fields, part.rows))
    if not key_names:
        return PreparedRows(None, _joined(afters, pa.string()), None)
    return prepare(_joined(keys, pa.string()), _joined(afters, pa.string()))


def _joined(parts: list[Any], kind: pa.DataType) -> Any:
    """One array of the batches' arrays (an empty one of ``kind`` when there are none)."""
    if not parts:
        return pa.array([], kind)
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)


def _text(value: bytes | None) -> str | None:
    """A raw ``CAST(... AS CHAR)`` value as text (the server sends it as UTF-8)."""
    return None if value is None else value.decode("utf-8")
