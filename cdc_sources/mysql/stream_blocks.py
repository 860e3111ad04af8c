"""The rows of one binlog write (or update) event as one `ChangeBlock` of ``c`` (``u``) records.

A rows event holds the rows of one table, changed by one statement; they share everything
but their values and row index. Handing them to the bronze writer one `ChangeRecord` each costs
an object per row and, downstream, a pass per column over those objects (buffer sizes, event
counts, the Arrow columns). `insert_block` and `update_block` render each row's key and value JSON as the
row-at-a-time path does (same structs, same envelope, ``source`` block and position templates)
and return them as Arrow columns at once, with the records' order keys. An update that changes
a row's key is a delete, a tombstone and a create: such events stay row by row. Deletes (a
delete and its tombstone alternate: two ops in one run) are records, made by `delete_records`
with the same templates.

The result is, row for row, the records `stream.MySqlStreamReader` would have emitted one by one
(``tests/cdc_sources/mysql/test_stream_blocks.py`` compares them), except the envelope's
``ts_ms``/``ts_us``/``ts_ns``: processing time, taken once per event.

Consecutive blocks of one table version (the events of one large statement) are joined
(`joined`) before they are handed over, so the bronze writer sees few large blocks.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cdc_sources.common.envelope import dumps
from cdc_sources.mysql.codec import TableCodec
from cdc_sources.mysql.converters.binlog_rows import restore_empty_sets
from cdc_sources.spi import ChangeBlock, ChangeRecord


def extends(block: ChangeBlock, following: ChangeBlock) -> bool:
    """Whether ``following`` can be joined to ``block``: same table version, op and headers."""
    return (following.topic == block.topic and following.schema_id == block.schema_id
            and following.op == block.op and following.headers is block.headers
            and (following.keys is None) == (block.keys is None))


def joined(blocks: Sequence[ChangeBlock]) -> ChangeBlock:
    """Consecutive blocks that each `extends` the one before, as one block."""
    first = blocks[0]
    if len(blocks) == 1:
        return first
    order_keys: list[tuple[int, ...]] = []
    for b in blocks:
        assert b.order_keys is not None
        order_keys.extend(b.order_keys)
    keys = None if first.keys is None else pa.concat_arrays([b.keys for b in blocks])
    return ChangeBlock(first.topic, keys, pa.concat_arrays([b.values for b in blocks]), first.op,
                       pa.concat_arrays([b.positions for b in blocks]), first.order_prefix, first.first_index,
                       first.schema_id, first.headers, order_keys=order_keys)


def processing_time() -> str:
    """The envelope's closing ``ts_ms``/``ts_us``/``ts_ns`` fields, as `envelope_text` writes them, for now."""
    now = time.time_ns()
    return f',"ts_ms":{now // 1_000_000},"ts_us":{now // 1000},"ts_ns":{now}}}'


@dataclass(frozen=True, slots=True)
class EventTemplates:
    """What every record of one rows event shares.

    Attributes:
        source: the ``source`` block's JSON before and after the row index.
        position: the position JSON before and after the row number (index + 1).
        order_prefix: ``(binlog file number, event position)``: a row's order key is
            ``(*order_prefix, row index, 0)``.
        headers: the records' headers (shared, read-only).
    """

    source: tuple[str, str]
    position: tuple[str, str]
    order_prefix: tuple[int, int]
    headers: Mapping[str, str] | None


def insert_block(codec: TableCodec, rows: Sequence[Mapping[str, Any] | None],
                 templates: EventTemplates) -> ChangeBlock | None:
    """The ``c`` records of a write event's ``rows`` (None: a row emitted before a restart,
    skipped; its index still counts), or None when every row is skipped."""
    row_struct, key_struct = codec.row_struct, codec.key_struct
    out = _Columns(templates, "c")
    add = out.add
    for i, row in enumerate(rows):
        if row is None:
            continue
        image = row["values"]
        nulls = row["none_sources"]
        if nulls:
            restore_empty_sets(image, nulls)
        after = dumps(row_struct(image))
        add(i, None if key_struct is None else dumps(key_struct(image)), "null", after)
    return out.block(codec, templates)


def delete_records(codec: TableCodec, rows: Sequence[Mapping[str, Any] | None], templates: EventTemplates, *,
                   tombstones: bool) -> list[ChangeRecord]:
    """The ``d`` records of a delete event's ``rows`` (None: skipped, as for `insert_block`), each
    followed by its tombstone when ``tombstones``: two ops alternate, so records, not a block, but
    made with the event's templates as the blocks are."""
    row_struct, key_struct = codec.row_struct, codec.key_struct
    out = _Columns(templates, "d")
    source_head, source_tail = out.source
    position_head, position_tail = out.position
    number, event_pos = out.number, out.event_pos
    topic, schema_id, headers = codec.topic, codec.schema_id, templates.headers
    records: list[ChangeRecord] = []
    append = records.append
    for i, row in enumerate(rows):
        if row is None:
            continue
        image = row["values"]
        nulls = row["none_sources"]
        if nulls:
            restore_empty_sets(image, nulls)
        key = None if key_struct is None else dumps(key_struct(image))
        value = f'{{"before":{dumps(row_struct(image))},"after":null{source_head}{i}{source_tail}'
        position = f"{position_head}{i + 1}{position_tail}"
        append(ChangeRecord(topic, key, value, "d", position, (number, event_pos, i, 0), schema_id, headers))
        if tombstones:
            append(ChangeRecord(topic, key, None, None, position, (number, event_pos, i, 1), schema_id, headers))
    return records


class KeyChangedError(Exception):
    """An update event changes a row's key (a delete and a create in Debezium's terms): render
    the event row by row."""


def update_block(codec: TableCodec, rows: Sequence[Mapping[str, Any] | None], templates: EventTemplates, *,
                 skip_unchanged: bool) -> ChangeBlock | None:
    """The ``u`` records of an update event's ``rows`` (None: skipped, as for `insert_block`),
    leaving out rows whose value did not change when ``skip_unchanged``; None when no row is left.

    Raises:
        KeyChangedError: a row's key changes; nothing was emitted.
    """
    row_struct, key_struct = codec.row_struct, codec.key_struct
    out = _Columns(templates, "u")
    for i, row in enumerate(rows):
        if row is None:
            continue
        old, new = row["before_values"], row["after_values"]
        if row["before_none_sources"]:
            restore_empty_sets(old, row["before_none_sources"])
        if row["after_none_sources"]:
            restore_empty_sets(new, row["after_none_sources"])
        before, after = row_struct(old), row_struct(new)
        key = None
        if key_struct is not None:
            key = key_struct(new)
            if key_struct(old) != key:
                raise KeyChangedError
        if skip_unchanged and before == after:
            continue
        out.add(i, None if key is None else dumps(key), dumps(before), dumps(after))
    return out.block(codec, templates)


class _Columns:
    """The per-row texts of a block being rendered."""

    __slots__ = ("event_pos", "keys", "number", "op", "order_keys", "position", "positions", "source", "values")

    def __init__(self, templates: EventTemplates, op: str) -> None:
        self.op = op
        self.number, self.event_pos = templates.order_prefix
        self.source = (',"source":' + templates.source[0],
                       templates.source[1] + f',"transaction":null,"op":"{op}"' + processing_time())
        self.position = templates.position
        self.keys: list[str | None] = []
        self.values: list[str] = []
        self.positions: list[str] = []
        self.order_keys: list[tuple[int, ...]] = []

    def add(self, i: int, key: str | None, before: str, after: str) -> None:
        """Row ``i`` of the event, its key JSON (None: keyless) and its structs' JSON."""
        self.keys.append(key)
        self.values.append(f'{{"before":{before},"after":{after}{self.source[0]}{i}{self.source[1]}')
        self.positions.append(f"{self.position[0]}{i + 1}{self.position[1]}")
        self.order_keys.append((self.number, self.event_pos, i, 0))

    def block(self, codec: TableCodec, templates: EventTemplates) -> ChangeBlock | None:
        if not self.values:
            return None
        order_keys = self.order_keys
        keys = None if codec.key_struct is None else pa.array(self.keys, pa.large_string())
        return ChangeBlock(codec.topic, keys, pa.array(self.values, pa.large_string()), self.op,
                           pa.array(self.positions, pa.string()), templates.order_prefix, order_keys[0][2],
                           codec.schema_id, templates.headers, order_keys=order_keys)
