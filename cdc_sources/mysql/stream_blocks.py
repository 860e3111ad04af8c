"""The rows of one binlog write event as one `ChangeBlock` of ``c`` records.

A write event holds the rows of one table, inserted by one statement; they share everything
but their values and row index. Handing them to the bronze writer one `ChangeRecord` each costs
an object per row and, downstream, a pass per column over those objects (buffer sizes, event
counts, the Arrow columns). `insert_block` renders each row's key and value JSON as the
row-at-a-time path does (same structs, same envelope, ``source`` block and position templates)
and returns them as Arrow columns at once, with the records' order keys.

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
from cdc_sources.spi import ChangeBlock


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
    source_tail = templates.source[1] + ',"transaction":null,"op":"c"' + processing_time()
    source_head = ',"source":' + templates.source[0]
    position_head, position_tail = templates.position
    number, event_pos = templates.order_prefix
    keys: list[str] = []
    values: list[str] = []
    positions: list[str] = []
    order_keys: list[tuple[int, int, int, int]] = []
    for i, row in enumerate(rows):
        if row is None:
            continue
        image = row["values"]
        nulls = row["none_sources"]
        if nulls:
            restore_empty_sets(image, nulls)
        after = dumps(row_struct(image))
        if key_struct is not None:
            keys.append(dumps(key_struct(image)))
        values.append(f'{{"before":null,"after":{after}{source_head}{i}{source_tail}')
        positions.append(f"{position_head}{i + 1}{position_tail}")
        order_keys.append((number, event_pos, i, 0))
    if not values:
        return None
    return ChangeBlock(codec.topic, pa.array(keys, pa.large_string()) if key_struct is not None else None,
                       pa.array(values, pa.large_string()), "c", pa.array(positions, pa.string()),
                       templates.order_prefix, order_keys[0][2], codec.schema_id, templates.headers,
                       order_keys=order_keys)
