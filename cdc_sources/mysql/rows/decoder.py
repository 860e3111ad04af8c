"""`RowDecoder`: the rows of binlog row events, as python-mysql-replication's ``RowsEvent.rows``
returns them, from readers compiled per table map.

python-mysql-replication decodes a rows event lazily: when ``event.rows`` is first read, its
row images are still unread in ``event.packet``. `RowDecoder.rows` reads those bytes itself,
in place in the packet's buffer without moving the packet's read position (so the library can
still decode the event afterwards), with the `TableDecoder` of the event's table map, compiled
once per table map version. Anything it does not reproduce exactly (a column
type, a value the library would reject or read with leftover state, a packet already read)
makes it return None: the caller then uses ``event.rows``, so correctness never depends on
coverage.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from cdc_sources.mysql.rows.codegen import GenericReader, ImageReader, compile_generic, compile_pattern
from cdc_sources.mysql.rows.plans import ColumnPlan, Unsupported, plan_column

log = logging.getLogger(__name__)

Row = dict[str, Any]
"""One row as the library returns it: ``values``/``none_sources``, or ``before_values``,
``before_none_sources``, ``after_values``, ``after_none_sources`` for an update."""

_SINGLE: Final = frozenset({0x17, 0x1E, 0x19, 0x20})
"""WRITE_ROWS_EVENT and DELETE_ROWS_EVENT, v1 and v2: one image per row."""
_UPDATE: Final = frozenset({0x18, 0x1F})
"""UPDATE_ROWS_EVENT v1 and v2: a before and an after image per row (PARTIAL_UPDATE_ROWS_EVENT,
MySQL's partial JSON updates, is left to the library)."""

MAX_PATTERNS: Final = 64
"""Null patterns per image layout with a straight-line reader of their own; further patterns
use the layout's generic reader."""


class ImageDecoder:
    """The readers of one table's row images with one columns-present bitmap.

    Attributes:
        null_bytes: bytes of an image's null bitmap.
        mask: the bits of the null bitmap that belong to present columns (the server sets
            the unused high bits of the last byte).
        patterns: the compiled reader of each null pattern seen so far.
    """

    __slots__ = ("_generic", "_plans", "_present", "mask", "null_bytes", "patterns")

    def __init__(self, plans: Sequence[ColumnPlan], present: Sequence[bool], null_bytes: int) -> None:
        if not any(present):
            raise Unsupported("a row image without columns")
        self._plans, self._present = plans, present
        self.null_bytes = null_bytes
        self.mask = (1 << sum(present)) - 1
        self.patterns: dict[int, ImageReader] = {}
        self._generic: GenericReader | None = None

    def reader(self, nulls: int) -> ImageReader:
        """The reader of images with the null bitmap ``nulls``, compiled on first use."""
        found = self.patterns.get(nulls)
        if found is not None:
            return found
        if len(self.patterns) < MAX_PATTERNS:
            found = self.patterns[nulls] = compile_pattern(self._plans, self._present, nulls)
            return found
        if self._generic is None:
            self._generic = compile_generic(self._plans, self._present)
        return partial(self._generic, nulls)


class TableDecoder:
    """The compiled readers of one table map version (its columns and their metadata)."""

    __slots__ = ("_images", "_plans")

    def __init__(self, columns: Sequence[Any], ignore_errors: bool) -> None:
        """Plans every column.

        Raises:
            Unsupported: a column the library reads in a way the plans do not reproduce.
        """
        names = [c.name for c in columns]
        if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
            raise Unsupported("columns without (distinct) names in the table map")
        self._plans = [plan_column(c, f"c{i}", ignore_errors) for i, c in enumerate(columns)]
        self._images: dict[bytes, ImageDecoder] = {}

    def image(self, present_bitmap: bytes) -> ImageDecoder:
        """The image decoder for an event's columns-present bitmap."""
        found = self._images.get(present_bitmap)
        if found is None:
            count = len(self._plans)
            if len(present_bitmap) * 8 < count:
                raise Unsupported("a columns-present bitmap shorter than the table")
            present = [bool(present_bitmap[i >> 3] >> (i & 7) & 1) for i in range(count)]
            # The library sizes the null bitmap by every bit set in the present bitmap.
            null_bytes = (sum(bin(b).count("1") for b in present_bitmap) + 7) // 8
            found = self._images[present_bitmap] = ImageDecoder(self._plans, present, null_bytes)
        return found


def _nulls(data: bytes, p: int, size: int, mask: int) -> int:
    return (data[p] if size == 1 else int.from_bytes(data[p:p + size], "little")) & mask


def _read_single(image: ImageDecoder, data: bytes, p: int, end: int) -> tuple[list[Row], int]:
    """Rows of a WRITE or DELETE event: one image each."""
    rows: list[Row] = []
    append = rows.append
    patterns, reader, size, mask = image.patterns, image.reader, image.null_bytes, image.mask
    if size == 1:
        while p < end:
            nulls = data[p] & mask
            values, ns, p = (patterns.get(nulls) or reader(nulls))(data, p + 1)
            append({"values": values, "none_sources": ns})
    else:
        while p < end:
            nulls = _nulls(data, p, size, mask)
            values, ns, p = (patterns.get(nulls) or reader(nulls))(data, p + size)
            append({"values": values, "none_sources": ns})
    return rows, p


def _read_updates(before: ImageDecoder, after: ImageDecoder, data: bytes, p: int,
                  end: int) -> tuple[list[Row], int]:
    """Rows of an UPDATE event: a before and an after image each."""
    rows: list[Row] = []
    append = rows.append
    b_patterns, b_reader, b_size, b_mask = before.patterns, before.reader, before.null_bytes, before.mask
    a_patterns, a_reader, a_size, a_mask = after.patterns, after.reader, after.null_bytes, after.mask
    while p < end:
        nulls = _nulls(data, p, b_size, b_mask)
        old, old_ns, p = (b_patterns.get(nulls) or b_reader(nulls))(data, p + b_size)
        nulls = _nulls(data, p, a_size, a_mask)
        new, new_ns, p = (a_patterns.get(nulls) or a_reader(nulls))(data, p + a_size)
        append({"before_values": old, "before_none_sources": old_ns,
                "after_values": new, "after_none_sources": new_ns})
    return rows, p


@dataclass
class DecodeStats:
    """What a `RowDecoder` did: events decoded by it, and events left to the library."""

    decoded: int = 0
    fallbacks: int = 0


@dataclass
class _Cached:
    """A table id's last table map: the library's column list, a copy of its attributes, and
    the decoder compiled for it (None: the library decodes this table)."""

    columns: Any
    attributes: list[dict[str, Any]]
    ignore_errors: bool
    decoder: TableDecoder | None


def _signature(attributes: list[dict[str, Any]], ignore_errors: bool) -> tuple[Any, ...] | None:
    """A hashable form of a table map's column attributes (None if one is not hashable)."""
    out: list[Any] = [ignore_errors]
    for attrs in attributes:
        items = []
        for key, value in sorted(attrs.items()):
            frozen = tuple(value) if isinstance(value, list) else value
            try:
                hash(frozen)
            except TypeError:
                return None
            items.append((key, frozen))
        out.append(tuple(items))
    return tuple(out)


class RowDecoder:
    """Decodes the rows of WRITE/UPDATE/DELETE rows events like ``RowsEvent.rows``, faster.

    Keeps the compiled `TableDecoder` of the last table map of each table id (up to
    ``max_tables`` ids, and as many table map versions by content, so a table id that comes
    back, or a new id for the same table, does not recompile). Safe to share between
    threads under the GIL: a race at worst compiles a decoder twice.
    """

    def __init__(self, max_tables: int = 1024) -> None:
        self.max_tables = max_tables
        self.stats = DecodeStats()
        self._by_id: dict[int, _Cached] = {}
        self._by_signature: dict[tuple[Any, ...], TableDecoder | None] = {}

    def rows(self, event: Any) -> list[Row] | None:
        """The rows of ``event`` (a python-mysql-replication ``RowsEvent`` not yet decoded), or
        None when the library must decode it (``event.rows``).

        The event's packet is not consumed: ``event.rows`` still decodes the same rows after.
        """
        kind = event.event_type
        update = kind in _UPDATE
        if not update and kind not in _SINGLE:
            return None
        wrapper = event.packet
        if (getattr(event, "_RowsEvent__rows", None) is not None or not event.complete
                or getattr(wrapper, "_BinLogPacketWrapper__data_buffer", None)):
            return self._fallback()  # already decoded, or bytes pushed back into the packet
        table = self._table(event)
        raw = wrapper.packet
        data, start = raw._data, raw._position
        end = start + event.event_size - wrapper.read_bytes
        if table is None or not start <= end <= len(data):
            return self._fallback()
        try:
            if update:
                rows, stop = _read_updates(table.image(event.columns_present_bitmap),
                                           table.image(event.columns_present_bitmap2), data, start, end)
            else:
                rows, stop = _read_single(table.image(event.columns_present_bitmap), data, start, end)
        except Exception:  # the library decodes (and raises on) what the readers do not take
            log.debug("binlog rows of %s.%s left to python-mysql-replication", event.schema, event.table,
                      exc_info=True)
            return self._fallback()
        if stop != end:
            log.debug("binlog rows of %s.%s did not end at the event end (%d != %d)", event.schema, event.table,
                      stop, end)
            return self._fallback()
        self.stats.decoded += 1
        return rows

    def _fallback(self) -> list[Row] | None:
        """Count an event left to the library; None."""
        self.stats.fallbacks += 1
        return None

    def _table(self, event: Any) -> TableDecoder | None:
        """The decoder of the event's table map (compiled on first use), or None."""
        table_id, columns = event.table_id, event.columns
        current = event.table_map.get(table_id)
        if current is None:
            return None  # the library fails on this event
        if current.columns is not columns and _named(current.columns) != _named(columns):
            return None  # the library would take the names of a newer table map
        ignore_errors = bool(event._ignore_decode_errors)
        cached = self._by_id.get(table_id)
        if cached is not None and cached.columns is columns and cached.ignore_errors == ignore_errors:
            return cached.decoder
        if (cached is not None and cached.ignore_errors == ignore_errors
                and cached.attributes == [c.__dict__ for c in columns]):
            cached.columns = columns
            return cached.decoder
        attributes = [dict(c.__dict__) for c in columns]
        decoder = self._compile(columns, attributes, ignore_errors)
        _remember(self._by_id, table_id, _Cached(columns, attributes, ignore_errors, decoder), self.max_tables)
        return decoder

    def _compile(self, columns: Sequence[Any], attributes: list[dict[str, Any]],
                 ignore_errors: bool) -> TableDecoder | None:
        signature = _signature(attributes, ignore_errors)
        if signature is not None and signature in self._by_signature:
            return self._by_signature[signature]
        try:
            decoder: TableDecoder | None = TableDecoder(columns, ignore_errors)
        except Unsupported as why:
            log.debug("binlog rows left to python-mysql-replication: %s", why)
            decoder = None
        if signature is not None:
            _remember(self._by_signature, signature, decoder, self.max_tables)
        return decoder


def _named(columns: Sequence[Any]) -> list[tuple[Any, Any]]:
    """What the library takes from the table map current when it decodes: names and signedness."""
    return [(c.name, c.unsigned) for c in columns]


def _remember(cache: dict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Store ``key`` in ``cache``, dropping the oldest entry beyond ``limit``."""
    cache.pop(key, None)
    cache[key] = value
    if len(cache) > limit:
        cache.pop(next(iter(cache)))


_SHARED: Final = RowDecoder()
"""The process-wide decoder `decode_rows` uses."""


def decode_rows(event: Any, decoder: RowDecoder = _SHARED) -> list[Row]:
    """The rows of a rows event: decoded by ``decoder`` when it can, else by the library."""
    rows = decoder.rows(event)
    return list(event.rows) if rows is None else rows

