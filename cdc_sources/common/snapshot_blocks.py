"""Assembles rendered snapshot columns into `ChangeBlock`s of ``r`` records, for every connector.

A connector renders a batch of one table's rows column by column (JSON fragments, see
`column_render`); this module joins the fragments into key and value texts and cuts the batch
into blocks of rows that share their ``source.snapshot`` marker and position (`segments`), so
rows at table boundaries get blocks of their own. The JSON around the field values is cut from
a real `envelope.envelope` call (`envelope_around`), so each block is byte for byte what
rendering its rows one by one gives. Positions are dictionary-encoded (one position text, an
index per row).

Each connector keeps its own marker precedence (`MarkerRule`): Debezium's connectors do not all
agree on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from cdc_sources.common.envelope import dumps, envelope
from cdc_sources.spi import ChangeBlock

_AFTER = "\ue000after\ue000"  # private-use characters: cannot clash with the envelope's own text


class MarkerRule(Protocol):
    """A connector's ``source.snapshot`` value for the ``n``-th snapshot record (from 1)."""

    def __call__(self, n: int, *, first_in_table: bool, last_in_table: bool, last: bool) -> str: ...


@dataclass(frozen=True)
class Segment:
    """Consecutive rows ``[start, stop)`` of a batch with one ``source.snapshot`` marker.

    ``last``: the segment holds the snapshot's very last record.
    """

    start: int
    stop: int
    marker: str
    last: bool


def segments(rows: int, *, table_row: int, first_n: int, table_end: bool, last_table: bool,
             marker: MarkerRule) -> list[Segment]:
    """Split a batch of ``rows`` rows into runs of equal marker.

    Args:
        rows: rows in the batch (at least one).
        table_row: index within its table of the batch's first row.
        first_n: snapshot record number (from 1) of the batch's first row.
        table_end: the batch ends its table.
        last_table: the table is the snapshot's last.
        marker: the connector's marker rule.
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
    if stop > start:  # rows neither first nor last of anything
        out.append(Segment(start, stop, marker(first_n + start, first_in_table=False, last_in_table=False,
                                               last=False), False))
    if stop < rows:
        out.append(one(rows - 1))
    return out


def envelope_around(source: dict[str, Any]) -> tuple[str, str]:
    """The value JSON of an ``r`` record before and after its ``after`` struct, for one
    ``source`` block (``ts_*`` are the processing time now)."""
    head, tail = envelope(None, _AFTER, source, "r", None).split(dumps(_AFTER), 1)
    return head, tail


@dataclass(frozen=True)
class BlockFrame:
    """What every block of one table version shares.

    Attributes:
        topic / schema_id / headers: as every record of the table reports them.
        order_prefix: every order key but its last element.
        value_names: the value fields' names, in order.
        key_names: the key fields' names, in key order (empty: null keys).
    """

    topic: str
    schema_id: str | None
    headers: Mapping[str, str] | None
    order_prefix: tuple[int, ...]
    value_names: Sequence[str]
    key_names: Sequence[str]

    def blocks(self, values: Sequence[Any], keys: Sequence[Any], rows: int, first_index: int,
               parts: Sequence[Segment], envelope_for: Callable[[str], tuple[str, str]],
               position_for: Callable[[bool], str]) -> Iterator[ChangeBlock]:
        """The blocks of one batch.

        Args:
            values / keys: the rendered fields (string arrays of ``rows`` JSON fragments), in
                the order of `value_names` / `key_names`.
            rows: rows in the batch.
            first_index: the last order-key element of the batch's row 0.
            parts: the batch's `segments`.
            envelope_for: a marker's value JSON before and after the ``after`` struct.
            position_for: the position text of a segment (argument: it holds the last record).
        """
        value_names = field_labels(self.value_names)
        key_texts = struct_texts(self.key_names, keys, rows) if self.key_names else None
        for part in parts:
            n = part.stop - part.start
            head, tail = envelope_for(part.marker)
            pieces = [head + "{", *interleave(value_names, [v.slice(part.start, n) for v in values]), "}" + tail]
            yield ChangeBlock(
                self.topic, None if key_texts is None else key_texts.slice(part.start, n), join_texts(pieces, n),
                "r", same_text(position_for(part.last), n), self.order_prefix, first_index + part.start,
                self.schema_id, self.headers)


def field_labels(names: Sequence[str]) -> list[str]:
    """``"name":`` for each field name, as a struct's JSON writes it before the value."""
    return [dumps(n) + ":" for n in names]


def struct_texts(names: Sequence[str], columns: Sequence[Any], rows: int) -> Any:
    """The JSON object of each row (a string array of ``rows`` rows) from its fields' rendered
    columns: byte for byte ``dumps`` of the row's dict of those fields, in ``names`` order."""
    return join_texts(["{", *interleave(field_labels(names), columns), "}"], rows)


def interleave(names: Sequence[str], columns: Sequence[Any]) -> list[Any]:
    """``"a":``, col_a, ``,"b":``, col_b... (the separators merged into the names)."""
    out: list[Any] = []
    for i, (name, column) in enumerate(zip(names, columns, strict=True)):
        out.extend((name if i == 0 else "," + name, column))
    return out


def join_texts(pieces: list[Any], rows: int) -> Any:
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


def same_text(text: str, rows: int) -> Any:
    """``rows`` times ``text``, dictionary-encoded: one copy of the text, four bytes a row."""
    return pa.DictionaryArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), rows), pa.array([text], pa.string()))
