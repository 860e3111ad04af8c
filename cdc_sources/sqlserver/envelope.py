"""Key and value payloads of SQL Server change events from the core's `ChangeEvent` s.

The row images become ``{column: value}`` structs through each column's converter
(`cdc_sources.sqlserver.converters`), the ``source`` block is `SqlServerSource.payload`, and
the envelope's processing-time fields come from `cdc_sources.common.envelope` when the record
is written. A tombstone has the key and a null value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cdc_sources.sqlserver.changes import CaptureInstance, ChangeEvent, EventKind
from cdc_sources.sqlserver.converters import ColumnConverter
from cdc_sources.sqlserver.source_info import SqlServerSource

__all__ = ["key_payload", "row_payload", "value_payload"]


def row_payload(instance: CaptureInstance, values: Sequence[Any] | None,
                converters: Mapping[str, ColumnConverter | None]) -> dict[str, Any] | None:
    """A row image as the ``before``/``after`` struct: captured columns with a converter, in order
    (columns Debezium cannot convert are left out)."""
    if values is None:
        return None
    out: dict[str, Any] = {}
    for name, value in zip(instance.columns, values, strict=True):
        converter = converters.get(name)
        if converter is not None:
            out[name] = converter.convert(value)
    return out


def key_payload(event: ChangeEvent, converters: Mapping[str, ColumnConverter | None]) -> dict[str, Any] | None:
    """The key struct (None for a keyless table)."""
    if event.key is None:
        return None
    out: dict[str, Any] = {}
    for name, value in zip(event.instance.key_columns, event.key, strict=True):
        converter = converters.get(name)
        out[name] = converter.convert(value) if converter is not None else value
    return out


def value_payload(event: ChangeEvent, source: SqlServerSource, converters: Mapping[str, ColumnConverter | None],
                  transaction: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The value payload without the processing-time ``ts_*`` fields (None for a tombstone)."""
    if event.kind is EventKind.TOMBSTONE:
        return None
    return {
        "before": row_payload(event.instance, event.before, converters),
        "after": row_payload(event.instance, event.after, converters),
        "source": source.payload(),
        "transaction": dict(transaction) if transaction is not None else None,
        "op": event.kind.value,
    }
