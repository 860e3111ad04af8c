"""MySQL's and MariaDB's side of incremental snapshots (`cdc_sources.common.incremental_snapshot`).

Chunks are read with ``SELECT <every column>, CAST(<key> AS CHAR)... FROM db.table WHERE (key) >
(last) AND (key) <= (max) AND (condition) ORDER BY key LIMIT n + 1`` (a row-value comparison
for a compound key) on an autocommit connection that returns values as the snapshot's
connection does, and rendered with a snapshot codec of the table's structure at the stream's
position, so the rows are exactly what the initial snapshot emits, with ``op = r`` and
``source.snapshot = "incremental"``. With a `incremental_columnar.ColumnarChunkReader` the chunk
query runs in the initial snapshot's reader process and is rendered column by column (the same
texts); without one, or when no reader process can start, it runs on that connection and is
rendered row by row. A chunk read column by column stays Arrow arrays until its events are built,
column-wise (`cdc_sources.common.chunk_columns`). A chunk's events leave as one `ChangeBlock`
(order keys ``(*close watermark, h)``, see `emission_order`). Keys are kept as text (``CAST(... AS CHAR)``): the server
converts them back when comparing, so key columns whose text does not order and compare like
their values (binary strings, BIT, ENUM, SET, JSON, spatial types) cannot chunk; a
``surrogate-key`` of another type can. Watermarks are inserted into the signal table as ``(id,
type, data)``, each in its own transaction, and recognised when the binlog brings them back; the
open one by a statement that inserts it only when neither of its window's watermarks is there, so
a new chunk costs no separate look-up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import rows_block
from cdc_sources.common.chunk_columns import ArrowChunkRows, arrow_rows_block
from cdc_sources.common.envelope import dumps
from cdc_sources.common.incremental_snapshot import (
    Chunk,
    Key,
    chunk_where,
    emission_order,
    keyless_id,
)
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.mysql.codec import TableCodec
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.errors import classify, error_code
from cdc_sources.mysql.incremental_columnar import ColumnarChunkReader
from cdc_sources.mysql.model import TableDef, TableId
from cdc_sources.spi import StreamItem

__all__ = ["UNCHUNKABLE_TYPES", "MySqlChunkSource"]

UNCHUNKABLE_TYPES = frozenset({
    "BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB", "BIT", "ENUM", "SET", "JSON",
    "GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
    "GEOMETRYCOLLECTION", "GEOMCOLLECTION", "VECTOR",
})
"""Column types whose ``CAST(... AS CHAR)`` text does not order and compare like the values."""


class MySqlChunkSource:
    """Implements `cdc_sources.common.incremental_snapshot.ChunkSource` for MySQL and MariaDB.

    Args:
        connect: opens an autocommit pymysql connection with the snapshot's conversions (on first
            use: a capture that never snapshots incrementally opens none).
        table_def: the structure of a table at the stream's position (None: unknown).
        codec_for: a snapshot codec of a table structure.
        source: the fixed parts of the ``source`` block.
        signal_table: the signal table's ``(database, table)``.
        headers: the records' Debezium headers.
        columnar: reads chunks column by column (None: row by row, on the connection).
    """

    def __init__(self, *, connect: Callable[[], Any], table_def: Callable[[TableId], TableDef | None],
                 codec_for: Callable[[TableDef], TableCodec], source: SourceInfo,
                 signal_table: tuple[str, str] | None, headers: dict[str, str] | None = None,
                 columnar: ColumnarChunkReader | None = None) -> None:
        self._connect = connect
        self.columnar = columnar
        self._conn: Any = None
        self.table_def = table_def
        self.codec_for = codec_for
        self.source = source
        self.headers = headers
        self.signal_table = signal_table
        self._codecs: dict[TableId, tuple[TableDef, TableCodec]] = {}
        self.announced: set[str] = set()
        """Topics whose `SchemaVersion` was emitted (shared with the blocking snapshot's source)."""
        self._signal_id_column: str | None = None

    @property
    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def close(self) -> None:
        """Close the connection, if one was opened, and the columnar reader's process."""
        if self.columnar is not None:
            self.columnar.close()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- helpers ----------------------------------------------------------------------------------

    def table(self, c: SnapshotCollection) -> TableDef:
        """A captured table's structure at the stream's position (LookupError: unknown)."""
        definition = self.table_def(TableId(c.schema, c.table))
        if definition is None:
            raise LookupError(f"table {c.id}: its structure is unknown")
        return definition

    def codec(self, definition: TableDef) -> TableCodec:
        """The snapshot codec of a table structure (made once per structure)."""
        cached = self._codecs.get(definition.id)
        if cached is not None and cached[0] is definition:
            return cached[1]
        codec = self.codec_for(definition)
        self._codecs[definition.id] = (definition, codec)
        return codec

    def query(self, sql: str, args: Sequence[Any] = (), *, where: str) -> list[tuple[Any, ...]]:
        """The rows of a statement; a server error is raised as the connector's error, ``where`` naming the step."""
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, tuple(args) if args else None)  # None: a `%` in the text is not a placeholder
                return list(cur.fetchall())
        except Exception as exc:
            if error_code(exc) is None and not isinstance(exc, OSError):
                raise
            raise classify(exc, where=where) from None

    def execute(self, sql: str, args: Sequence[Any], *, where: str) -> int:
        """Run a statement that returns no rows; its affected rows. Errors as `query`'s."""
        try:
            with self.conn.cursor() as cur:
                return int(cur.execute(sql, tuple(args)))
        except Exception as exc:
            if error_code(exc) is None and not isinstance(exc, OSError):
                raise
            raise classify(exc, where=where) from None

    # -- ChunkSource ------------------------------------------------------------------------------

    def chunk_key(self, c: SnapshotCollection) -> tuple[str, ...] | str:
        definition = self.table_def(TableId(c.schema, c.table))
        if definition is None:
            return "its structure is unknown (no DDL for it in the schema history)"
        if c.surrogate_key:
            names = [c.surrogate_key]
            if definition.column(c.surrogate_key) is None:
                return f"no column {c.surrogate_key!r} (surrogate-key)"
        elif definition.primary_key:
            names = list(definition.primary_key)
        else:
            return "no primary key (give a surrogate-key)"
        for name in names:
            column = definition.column(name)
            if column is not None and column.type_name.upper() in UNCHUNKABLE_TYPES:
                return (f"key column {name!r} is {column.type_name}, which cannot order chunks (give a "
                        "surrogate-key of another type)")
        return tuple(names)

    def max_key(self, c: SnapshotCollection, key: Sequence[str]) -> Key | None:
        definition = self.table(c)
        cols = ", ".join(f"CAST({_q(k)} AS CHAR)" for k in key)
        where = f" WHERE ({c.condition})" if c.condition else ""
        order = ", ".join(f"{_q(k)} DESC" for k in key)
        rows = self.query(f"SELECT {cols} FROM {_qualified(definition.id)}{where} ORDER BY {order} LIMIT 1",
                           where=f"reading the largest key of {c.id}")
        return None if not rows else tuple(_text(v) for v in rows[0])

    def read_chunk(self, c: SnapshotCollection, key: Sequence[str], after: Key | None, upto: Key | None,
                   size: int | None) -> Chunk:
        definition = self.table(c)
        row_sql = "(" + ", ".join(_q(k) for k in key) + ")"
        params_sql = "(" + ", ".join("%s" for _ in key) + ")"
        where, params = chunk_where(row_sql, params_sql, after, upto, c.condition)
        width = len(definition.columns)
        cols = ", ".join([_q(col.name) for col in definition.columns] + [f"CAST({_q(k)} AS CHAR)" for k in key])
        sql = (f"SELECT {cols} FROM {_qualified(definition.id)}{where}"
               + " ORDER BY " + ", ".join(_q(k) for k in key)
               + ("" if size is None else f" LIMIT {size + 1}"))
        codec = self.codec(definition)
        if self.columnar is not None:
            chunk = self._read_columnar(c, codec, sql, params, len(key), size)
            if chunk is not None:
                return chunk
        rows = self.query(sql, params, where=f"reading a chunk of {c.id}")
        more = size is not None and len(rows) > size
        rows = rows[:size]
        out: dict[str | None, str] = {}
        for row in rows:
            k = codec.key_tuple(row)
            out[keyless_id([_text(v) for v in row[width:]]) if k is None else dumps(k)] = dumps(codec.row_tuple(row))
        last = tuple(_text(v) for v in rows[-1][width:]) if rows else None
        return Chunk(codec.topic, out, last, more)

    def _read_columnar(self, c: SnapshotCollection, codec: TableCodec, sql: str, params: Sequence[Any],
                       key_count: int, size: int | None) -> Chunk | None:
        """A chunk read by the columnar reader (None: it cannot run; read the chunk row by row)."""
        assert self.columnar is not None
        if not self.columnar.available:
            return None
        where = f"reading a chunk of {c.id}"
        try:
            with self.conn.cursor() as cur:
                text = cur.mogrify(sql, tuple(params))  # the statement as pymysql would send it
        except Exception as exc:
            if error_code(exc) is None and not isinstance(exc, OSError):
                raise
            raise classify(exc, where=where) from None
        got = self.columnar.read(codec, text, key_count, limit=size, where=where)
        if got is None:
            return None
        n = len(got) if size is None else min(size, len(got))
        more = size is not None and len(got) > size
        out: dict[str | None, str] | ArrowChunkRows
        if codec.key_fields:  # the texts are waited for at the close watermark (or a streamed event of the table)
            out = ArrowChunkRows.later(got.prepared, n)
        else:
            afters = got.prepared().afters
            out = {keyless_id(list(k)): after for k, after in zip(got.chunk_keys(n), afters.to_pylist(), strict=True)}
        return Chunk(codec.topic, out, got.chunk_key(n - 1) if n else None, more)

    def read_events(self, c: SnapshotCollection, chunk: Chunk, order_key: tuple[int, ...],
                    position: str) -> list[StreamItem]:
        codec = self.codec(self.table(c))
        out: list[StreamItem] = []
        if codec.topic not in self.announced:
            out.append(codec.version)
            self.announced.add(codec.topic)
        if not chunk.rows:
            return out
        where = orjson.loads(position)
        source = self.source.block(
            db=c.schema, table=c.table, ts_ms=time.time_ns() // 1_000_000, snapshot="incremental",
            server_id=int(where.get("server_id") or 0), gtid=None, file=str(where.get("file") or ""),
            pos=int(where.get("pos") or 0), row=0)
        if isinstance(chunk.rows, ArrowChunkRows):
            block = arrow_rows_block(codec.topic, chunk.rows, source, order_key, position, codec.schema_id,
                                     self.headers)
            if block is not None:
                out.append(block)
            return out
        rows = emission_order(chunk.rows)
        source_text = dumps(source)
        out.append(rows_block(codec.topic, rows, [source_text] * len(rows), order_key, position, codec.schema_id,
                              self.headers))
        return out

    def insert_watermark(self, window_id: str, *, opens: bool, data: str | None = None) -> None:
        kind = "snapshot-window-open" if opens else "snapshot-window-close"
        self.query(f"INSERT INTO {self._signal_sql()} VALUES (%s, %s, %s)",
                    (f"{window_id}-{'open' if opens else 'close'}", kind, data),
                    where=f"inserting a watermark into signal table {self._signal_name()}")

    def open_watermark(self, window_id: str) -> dict[str, str | None]:
        """One statement for a new window: the open watermark is inserted only when neither of the
        window's watermarks is there (the ``SELECT`` reads the signal table through a derived
        table, which MySQL allows in an ``INSERT ... SELECT`` into the same table); when one is (a
        chunk read again), the watermarks are looked up as they stand."""
        signal = self._signal_sql()
        id_column = _q(self._id_column())
        inserted = self.execute(
            f"INSERT INTO {signal} SELECT %s, %s, NULL FROM (SELECT COUNT(*) AS n FROM {signal} "
            f"WHERE {id_column} IN (%s, %s)) AS present WHERE present.n = 0",
            (f"{window_id}-open", "snapshot-window-open", f"{window_id}-open", f"{window_id}-close"),
            where=f"inserting a watermark into signal table {self._signal_name()}")
        if inserted:
            return {}
        present = self.watermarks_present(window_id)
        if f"{window_id}-open" not in present:
            self.insert_watermark(window_id, opens=True)
        return present

    def delete_watermark(self, window_id: str) -> None:
        self.execute(f"DELETE FROM {self._signal_sql()} WHERE {_q(self._id_column())} = %s", (f"{window_id}-open",),
                     where=f"deleting a watermark from signal table {self._signal_name()}")

    def watermarks_present(self, window_id: str) -> dict[str, str | None]:
        """The window's watermarks in the signal table: id -> data."""
        id_column = self._id_column()
        rows = self.query(f"SELECT * FROM {self._signal_sql()} WHERE {_q(id_column)} IN (%s, %s)",
                           (f"{window_id}-open", f"{window_id}-close"),
                           where=f"reading watermarks from signal table {self._signal_name()}")
        return {_text(r[0]) or "": None if r[2] is None else _text(r[2]) for r in rows}

    # -- the signal table -------------------------------------------------------------------------

    def _signal_name(self) -> str:
        return ".".join(self.signal_table) if self.signal_table else "-"

    def _signal_sql(self) -> str:
        if self.signal_table is None:
            raise LookupError("no signal table (signal.data.collection)")
        return _qualified(TableId(*self.signal_table))

    def _id_column(self) -> str:
        """The signal table's first column (``id``: Debezium reads the columns by position)."""
        if self._signal_id_column is None:
            try:
                with self.conn.cursor() as cur:
                    cur.execute(f"SELECT * FROM {self._signal_sql()} LIMIT 0")
                    self._signal_id_column = str(cur.description[0][0])
            except Exception as exc:
                if error_code(exc) is None and not isinstance(exc, OSError):
                    raise
                raise classify(exc, where=f"reading signal table {self._signal_name()}") from None
        return self._signal_id_column


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _qualified(table: TableId) -> str:
    return f"{_q(table.database)}.{_q(table.table)}"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8")
    return str(value)
