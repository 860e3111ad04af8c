"""Runs of change records as Arrow columns, converted by the thread that hands them over.

Turning Python `ChangeRecord`s into Arrow arrays holds the GIL for the whole conversion. Done by
the bronze writer's thread, it competed with the capture thread, which holds the GIL too while
it decodes the source: on the bench's insert/update/delete stream the writer thread was busy
6.6 s for 1.7 s of work. `prepare` lets the capture thread convert its buffer when it hands it
over; what is left to the writer thread (Parquet encoding, Delta commits) mostly releases the
GIL. Blocks (`ChangeBlock`) are columnar already and pass through.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import pyarrow as pa

from bronze.schema import COL_HEADERS, COL_KEY, COL_OP, COL_POSITION, COL_SCHEMA_ID, COL_VALUE
from cdc_sources.spi import ChangeBlock, ChangeRecord

RECORD_COLUMNS = pa.schema([
    pa.field(COL_KEY, pa.large_string()),
    pa.field(COL_VALUE, pa.large_string()),
    pa.field(COL_OP, pa.string()),
    pa.field(COL_POSITION, pa.string(), nullable=False),
    pa.field(COL_SCHEMA_ID, pa.string()),
    pa.field(COL_HEADERS, pa.map_(pa.string(), pa.string())),
])
"""The bronze columns a record itself carries (the writer adds ``seq``, ``ingested_at``, ``batch``)."""

_MAP = RECORD_COLUMNS.field(COL_HEADERS).type
_TOPIC, _KEY, _VALUE, _OP, _POSITION, _SCHEMA_ID, _HEADERS, _ORDER_KEY = (
    attrgetter(name) for name in ("topic", "key", "value", "op", "position", "schema_id", "headers", "order_key"))
_TOPIC_LANE = attrgetter("topic", "lane")


@dataclass(frozen=True)
class RecordRun:
    """Consecutive records of one topic as Arrow columns, with their order keys.

    Attributes:
        topic: the records' topic.
        columns: their `RECORD_COLUMNS`, one row per record.
        order_keys: their order keys, increasing.
        lane: the records' `ChangeRecord.lane` (the order their keys belong to).
    """

    topic: str
    columns: pa.Table
    order_keys: list[tuple[int, ...]]
    lane: str | None = None

    def __len__(self) -> int:
        return len(self.order_keys)

    @property
    def last_order_key(self) -> tuple[int, ...]:
        return self.order_keys[-1]

    def after(self, mark: tuple[int, ...]) -> pa.Table | None:
        """The rows whose order key is above ``mark`` (a table's high-water mark; empty: all),
        or None if there are none. Keys increase, so only leading rows can be cut."""
        if not mark or self.order_keys[0] > mark:
            return self.columns
        cut = bisect.bisect_right(self.order_keys, mark)
        return self.columns.slice(cut) if cut < len(self.order_keys) else None


Prepared = ChangeBlock | RecordRun
"""What the bronze writer stages: blocks as they are, records as runs."""


def prepare(items: Sequence[ChangeRecord | ChangeBlock | RecordRun]) -> list[Prepared]:
    """Convert the records among ``items`` to runs (consecutive records of one topic and lane
    each); blocks and runs pass through. Order is kept."""
    out: list[Prepared] = []
    for prepared, group in itertools.groupby(items, key=lambda item: type(item) is not ChangeRecord):
        if prepared:
            out.extend(group)  # type: ignore[arg-type]
            continue
        for (topic, lane), same_topic in itertools.groupby(group, key=_TOPIC_LANE):
            records: list[ChangeRecord] = list(same_topic)  # type: ignore[arg-type]
            out.append(RecordRun(topic, record_columns(records), list(map(_ORDER_KEY, records)), lane))
    return out


def repeated_headers(headers: Mapping[str, str] | None, n: int) -> pa.Array:
    """``n`` copies of one headers map (null if it is empty), built by tiling its keys and
    values (no per-row work)."""
    if not headers:
        return pa.nulls(n, _MAP)
    k = len(headers)
    picks = pa.array(np.tile(np.arange(k, dtype=np.int32), n))
    keys = pa.array(list(headers.keys()), pa.string()).take(picks)
    items = pa.array(list(headers.values()), pa.string()).take(picks)
    offsets = pa.array(np.arange(0, k * n + 1, k, dtype=np.int32))
    return pa.MapArray.from_arrays(offsets, keys, items, type=_MAP)


def record_columns(records: list[ChangeRecord]) -> pa.Table:
    """The `RECORD_COLUMNS` of ``records``."""
    n = len(records)
    headers = list(map(_HEADERS, records))
    if headers.count(headers[0]) == n:  # usually one shared map (context headers) or none
        header_column = repeated_headers(headers[0], n)
    else:
        header_column = pa.array([list(h.items()) if h else None for h in headers], _MAP)
    schema_ids = list(map(_SCHEMA_ID, records))
    schema_column = (pa.repeat(pa.scalar(schema_ids[0], pa.string()), n) if schema_ids.count(schema_ids[0]) == n
                     else pa.array(schema_ids, pa.string()))
    return pa.Table.from_arrays(
        [
            pa.array(list(map(_KEY, records)), pa.large_string()),
            pa.array(list(map(_VALUE, records)), pa.large_string()),
            pa.array(list(map(_OP, records)), pa.string()),
            pa.array(list(map(_POSITION, records)), pa.string()),
            schema_column,
            header_column,
        ],
        schema=RECORD_COLUMNS,
    )
