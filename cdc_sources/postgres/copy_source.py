"""A table's snapshot rows as Arrow batches of PostgreSQL texts, from ``COPY ... (FORMAT csv)``.

The CSV stream is parsed in large blocks with ``pyarrow.csv``, every column as a string: NULL is
an unquoted empty field, the empty string ``""``. The batches carry column ``c<i>`` for the i-th
selected column (only the wanted ones are converted). This module copies in-process, over the
snapshot connection (small tables); `copy_process` runs the COPY in a worker process (large
tables).
"""

from __future__ import annotations

import io
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv

from cdc_sources.postgres.errors import PostgresError, classify

BLOCK_BYTES = 2 << 20
"""CSV bytes parsed per batch (tens of thousands of rows of a typical table)."""


@dataclass(frozen=True)
class CopyRequest:
    """One table to copy.

    Attributes:
        table: ``schema.table``, for messages.
        select: the SELECT whose rows to copy.
        columns: how many columns it selects.
        wanted: the indices of the columns to parse (the others are skipped).
    """

    table: str
    select: str
    columns: int
    wanted: Sequence[int]

    @property
    def sql(self) -> str:
        return f"COPY ({self.select}) TO STDOUT (FORMAT csv)"


def _csv_reader(stream: Any, request: CopyRequest) -> Any:
    names = [f"c{i}" for i in range(request.columns)]
    wanted = [names[i] for i in request.wanted]
    return pcsv.open_csv(
        stream,
        read_options=pcsv.ReadOptions(column_names=names, block_size=BLOCK_BYTES),
        parse_options=pcsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
        convert_options=pcsv.ConvertOptions(
            column_types={n: pa.string() for n in wanted}, include_columns=wanted, null_values=[""],
            quoted_strings_can_be_null=False, strings_can_be_null=True),
    )


def batches(stream: Any, request: CopyRequest) -> Iterator[Any]:
    """The batches of a CSV byte stream (a readable file object) of ``request``'s rows."""
    try:
        reader = _csv_reader(stream, request)
    except pa.ArrowInvalid as exc:
        if "Empty CSV file" in str(exc):
            return  # no rows
        raise
    yield from reader


class _CopyStream(io.RawIOBase):
    """A psycopg 3 ``Copy`` as a readable byte stream."""

    def __init__(self, copy: Any) -> None:
        self._chunks = iter(copy)
        self._rest = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        n = 0
        while n < len(view):
            if not self._rest:
                chunk = next(self._chunks, None)
                if chunk is None:
                    break
                self._rest = memoryview(bytes(chunk))
            k = min(len(view) - n, len(self._rest))
            view[n:n + k] = self._rest[:k]
            self._rest = self._rest[k:]
            n += k
        return n


def copy_in_process(conn: Any, request: CopyRequest) -> Generator[Any, None, None]:
    """The table's batches, copied over ``conn`` (psycopg 3, inside the snapshot transaction)."""
    import psycopg

    try:
        with conn.cursor() as cur, cur.copy(request.sql) as copy:
            stream = io.BufferedReader(_CopyStream(copy), BLOCK_BYTES)
            if not request.columns:
                yield _row_count(stream)
                return
            yield from batches(stream, request)
    except pa.ArrowInvalid as exc:
        raise PostgresError(f"snapshotting table {request.table}: unreadable COPY output: {exc}") from None
    except psycopg.Error as exc:
        raise classify(exc, where=f"snapshotting table {request.table}") from None


def _row_count(stream: Any) -> Any:
    """A batch without columns holding one row per line (tables without columns)."""
    lines = sum(chunk.count(b"\n") for chunk in iter(lambda: stream.read(1 << 20), b""))
    return pa.RecordBatch.from_struct_array(pa.array([{}] * lines, pa.struct([])))
