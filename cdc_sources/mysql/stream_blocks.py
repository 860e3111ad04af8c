"""The rows of binlog rows events as `ChangeBlock`s: ``c`` records of write events, ``u`` of updates.

A rows event holds the rows of one table, changed by one statement; they share everything
but their values and row index. Handing them to the bronze writer one `ChangeRecord` each costs
an object per row and, downstream, a pass per column over those objects (buffer sizes, event
counts, the Arrow columns). `insert_block` and `update_block` render each row's key and value
JSON as the row-at-a-time path does (same structs, same envelope, ``source`` block and position
templates) into `RowTexts`; the stream reader gathers those of consecutive events of one table
version and `joined` turns them into one block, its Arrow columns built once. An update that
changes a row's key is a delete, a tombstone and a create: such events stay row by row. Deletes
(a delete and its tombstone alternate: two ops in one run) are records, made by
`delete_records` with the same templates.

The result is, row for row, the records `stream.MySqlStreamReader` would have emitted one by one
(``tests/cdc_sources/mysql/test_stream_blocks.py`` compares them), except the envelope's
``ts_ms``/``ts_us``/``ts_ns``: processing time, taken once per event.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from cdc_sources.mysql.codec import TableCodec
from cdc_sources.mysql.converters.binlog_rows import restore_empty_sets
from cdc_sources.spi import ChangeBlock, ChangeRecord


@dataclass(slots=True)
class RowTexts:
    """The rendered records of one rows event (or of consecutive ones), before they become Arrow
    columns: `joined` makes one `ChangeBlock` of a run of them, so that the columns are built
    once per block, not once per event.

    Attributes:
        topic / schema_id / op / headers: what every record shares.
        keyed: whether the records have keys (False: every key is null).
        keys / values / positions / order_keys: per record, in order.
    """

    topic: str
    schema_id: str
    op: str
    headers: Mapping[str, str] | None
    keyed: bool
    keys: list[str | None]
    values: list[str]
    positions: list[str]
    order_keys: list[tuple[int, ...]]

    def __len__(self) -> int:
        return len(self.values)


def extends(rows: RowTexts, following: RowTexts) -> bool:
    """Whether ``following`` can be joined to ``rows``: same table version, op and headers."""
    return (following.topic == rows.topic and following.schema_id == rows.schema_id
            and following.op == rows.op and following.headers is rows.headers and following.keyed == rows.keyed)


def joined(runs: Sequence[RowTexts]) -> ChangeBlock:
    """Consecutive `RowTexts` that each `extends` the one before, as one block."""
    first = runs[0]
    keys, values, positions, order_keys = first.keys, first.values, first.positions, first.order_keys
    if len(runs) > 1:
        keys = [k for r in runs for k in r.keys] if first.keyed else []
        values = [v for r in runs for v in r.values]
        positions = [p for r in runs for p in r.positions]
        order_keys = [o for r in runs for o in r.order_keys]
    number, event_pos, index, _ = order_keys[0]
    return ChangeBlock(first.topic, pa.array(keys, pa.large_string()) if first.keyed else None,
                       pa.array(values, pa.large_string()), first.op, pa.array(positions, pa.string()),
                       (number, event_pos), index, first.schema_id, first.headers, order_keys=order_keys)


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
                 templates: EventTemplates) -> RowTexts | None:
    """The ``c`` records of a write event's ``rows`` (None: a row emitted before a restart,
    skipped; its index still counts), or None when every row is skipped."""
    row_struct, key_text, json = codec.row_struct, codec.key_text, orjson.dumps
    out = _texts(codec, templates, "c")
    source_head, source_tail = _source(templates, "c")
    position_head, position_tail = templates.position
    number, event_pos = templates.order_prefix
    keys, values, positions, order_keys = out.keys, out.values, out.positions, out.order_keys
    for i, row in enumerate(rows):
        if row is None:
            continue
        image = row["values"]
        nulls = row["none_sources"]
        if nulls:
            restore_empty_sets(image, nulls)
        after = json(row_struct(image)).decode()
        if key_text is not None:
            keys.append(key_text(image))
        values.append(f'{{"before":null,"after":{after}{source_head}{i}{source_tail}')
        positions.append(f"{position_head}{i + 1}{position_tail}")
        order_keys.append((number, event_pos, i, 0))
    return out if values else None


def delete_records(codec: TableCodec, rows: Sequence[Mapping[str, Any] | None], templates: EventTemplates, *,
                   tombstones: bool) -> list[ChangeRecord]:
    """The ``d`` records of a delete event's ``rows`` (None: skipped, as for `insert_block`), each
    followed by its tombstone when ``tombstones``: two ops alternate, so records, not a block, but
    made with the event's templates as the blocks are."""
    row_struct, key_text, json = codec.row_struct, codec.key_text, orjson.dumps
    source_head, source_tail = _source(templates, "d")
    position_head, position_tail = templates.position
    number, event_pos = templates.order_prefix
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
        key = None if key_text is None else key_text(image)
        value = f'{{"before":{json(row_struct(image)).decode()},"after":null{source_head}{i}{source_tail}'
        position = f"{position_head}{i + 1}{position_tail}"
        append(ChangeRecord(topic, key, value, "d", position, (number, event_pos, i, 0), schema_id, headers))
        if tombstones:
            append(ChangeRecord(topic, key, None, None, position, (number, event_pos, i, 1), schema_id, headers))
    return records


class KeyChangedError(Exception):
    """An update event changes a row's key (a delete and a create in Debezium's terms): render
    the event row by row."""


def update_block(codec: TableCodec, rows: Sequence[Mapping[str, Any] | None], templates: EventTemplates, *,
                 skip_unchanged: bool) -> RowTexts | None:
    """The ``u`` records of an update event's ``rows`` (None: skipped, as for `insert_block`),
    leaving out rows whose value did not change when ``skip_unchanged``; None when no row is left.

    Raises:
        KeyChangedError: a row's key changes; nothing was emitted.
    """
    row_struct, key_struct, json = codec.row_struct, codec.key_struct, orjson.dumps
    out = _texts(codec, templates, "u")
    source_head, source_tail = _source(templates, "u")
    position_head, position_tail = templates.position
    number, event_pos = templates.order_prefix
    for i, row in enumerate(rows):
        if row is None:
            continue
        old, new = row["before_values"], row["after_values"]
        if row["before_none_sources"]:
            restore_empty_sets(old, row["before_none_sources"])
        if row["after_none_sources"]:
            restore_empty_sets(new, row["after_none_sources"])
        before, after = row_struct(old), row_struct(new)
        if key_struct is not None:
            key = key_struct(new)
            if key_struct(old) != key:
                raise KeyChangedError
        if skip_unchanged and before == after:
            continue
        if key_struct is not None:
            out.keys.append(json(key).decode())
        out.values.append(f'{{"before":{json(before).decode()},"after":{json(after).decode()}{source_head}{i}'
                          f'{source_tail}')
        out.positions.append(f"{position_head}{i + 1}{position_tail}")
        out.order_keys.append((number, event_pos, i, 0))
    return out if out.values else None


def _texts(codec: TableCodec, templates: EventTemplates, op: str) -> RowTexts:
    return RowTexts(codec.topic, codec.schema_id, op, templates.headers, codec.key_struct is not None, [], [], [], [])


def _source(templates: EventTemplates, op: str) -> tuple[str, str]:
    """The value JSON between the ``after`` struct and the row index, and after the row index."""
    return (',"source":' + templates.source[0],
            templates.source[1] + f',"transaction":null,"op":"{op}"' + processing_time())
