"""Debezium's change event envelope, shared by every connector: value JSON and Connect schemas.

Connectors render their own ``source`` block; the envelope around it (``before``, ``after``,
``source``, ``transaction``, ``op``, processing-time ``ts_*``) and its Kafka Connect schema are
the same for all of them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from cdc_sources.spi import SchemaVersion

if TYPE_CHECKING:
    from cdc_sources.common.transactions import TransactionBlock

VERSION = "3.6.3.Final"
"""The Debezium version whose behaviour the connectors reproduce and are tested against."""

TRANSACTION_BLOCK_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": False, "field": "total_order"},
        {"type": "int64", "optional": False, "field": "data_collection_order"},
    ],
    "optional": True,
    "name": "event.block",
    "version": 1,
    "field": "transaction",
}


def dumps(obj: Any) -> str:
    """Compact JSON text, as Kafka Connect's JsonConverter writes it."""
    return orjson.dumps(obj).decode()


def envelope_text(before: str, after: str, source: str, op: str, transaction: str) -> str:
    """The value JSON of a data change event from already-rendered JSON parts."""
    now = time.time_ns()
    return (f'{{"before":{before},"after":{after},"source":{source},"transaction":{transaction},'
            f'"op":"{op}","ts_ms":{now // 1_000_000},"ts_us":{now // 1000},"ts_ns":{now}}}')


def envelope(before: Any, after: Any, source: dict[str, Any], op: str,
             transaction: TransactionBlock | None) -> str:
    """The value JSON of a data change event; ``ts_*`` are processing time."""
    now = time.time_ns()
    return dumps({
        "before": before,
        "after": after,
        "source": source,
        "transaction": transaction,
        "op": op,
        "ts_ms": now // 1_000_000,
        "ts_us": now // 1000,
        "ts_ns": now,
    })


def truncate_envelope(source: dict[str, Any], transaction: TransactionBlock | None) -> str:
    """The value JSON of a truncate event (``op: t``): no ``before``/``after``."""
    return envelope(None, None, source, "t", transaction)


def envelope_schema_version(*, topic: str, table: str, fields: Sequence[dict[str, Any]],
                            key_fields: Sequence[dict[str, Any]], key_names: tuple[str, ...],
                            source_schema: dict[str, Any]) -> SchemaVersion:
    """The key and envelope schemas of one table version, fingerprinted.

    ``fields`` / ``key_fields``: the value and key field schemas (with ``field`` names) in order;
    ``source_schema``: the connector's ``source`` struct schema (with ``"field": "source"``).
    """
    row_schema = {"type": "struct", "fields": list(fields), "optional": True, "name": f"{topic}.Value"}
    value_schema = {
        "type": "struct",
        "fields": [
            {**row_schema, "field": "before"},
            {**row_schema, "field": "after"},
            source_schema,
            TRANSACTION_BLOCK_SCHEMA,
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
            {"type": "int64", "optional": True, "field": "ts_us"},
            {"type": "int64", "optional": True, "field": "ts_ns"},
        ],
        "optional": False,
        "name": f"{topic}.Envelope",
        "version": 2,
    }
    key_schema: dict[str, Any] | None = (
        {"type": "struct", "fields": list(key_fields), "optional": False, "name": f"{topic}.Key"}
        if key_fields else None
    )
    value_text = dumps(value_schema)
    key_text = dumps(key_schema)
    digest = hashlib.sha256((key_text + "\n" + value_text).encode()).hexdigest()[:16]
    return SchemaVersion(topic, digest, key_text, value_text, table, key_names)
