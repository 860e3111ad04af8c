"""Reads the schema history (``_cdc/<source>/schemas``) that decodes a topic's bronze rows.

With delta-rs (the capture writes the history with it; no Spark job, which on classic Spark costs
a Delta snapshot and a scan, seconds on a first run); through Spark when delta-rs cannot read
the store or the table.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from bronze.schema import schemas_path
from silver.connect_schema import ConnectSchema, envelope_row, parse_connect_schema
from silver.delta_io import DELTA_RS_FAILURES
from silver.errors import SchemaHistoryError

__all__ = ["TopicSchema", "load_topic_schemas"]

log = logging.getLogger(__name__)

_COLUMNS = ("schema_id", "primary_key", "key_schema", "value_schema", "registered_at")
_OPTIONAL = ("renamed_columns", "column_ids")
"""Columns older histories lack (read as null)."""


@dataclass(frozen=True)
class TopicSchema:
    """One version of a topic's schema.

    Attributes:
        schema_id: the id bronze rows point at.
        primary_key: the source table's key columns, in key order.
        key: the key struct schema (None for keyless tables).
        row: the row struct (``after``/``before``) of the envelope.
        registered_at: when the capture first used it (orders versions).
        renamed_columns: (old, new) names of the columns the source renamed to reach this
            version from the one before: as recorded (MySQL/MariaDB DDL), or found from the
            column ids (PostgreSQL attnums: same id, another name, the old name gone).
        column_ids: the source's id of each row field, in field order (empty when unknown).
    """

    schema_id: str
    primary_key: tuple[str, ...]
    key: ConnectSchema | None
    row: ConnectSchema
    registered_at: dt.datetime
    renamed_columns: tuple[tuple[str, str], ...] = ()
    column_ids: tuple[int, ...] = ()


def load_topic_schemas(spark: SparkSession, root: str, source: str, topic: str,
                       storage_options: Mapping[str, str] | None = None) -> list[TopicSchema]:
    """Every schema version of ``topic``, oldest first.

    Raises:
        SchemaHistoryError: the schema history of ``source`` cannot be read.
    """
    path = schemas_path(root, source)
    try:
        rows = _rows_delta_rs(path, topic, storage_options)
    except DELTA_RS_FAILURES as exc:  # a store or table delta-rs cannot read (or no table: Spark says so below)
        log.info("delta-rs cannot read %s (%s); reading the schema history with Spark", path, exc)
        rows = _rows_spark(spark, path, source, topic)
    out: list[TopicSchema] = []
    seen: set[str] = set()
    for r in sorted(rows, key=lambda r: (_utc(r["registered_at"]), r["schema_id"])):
        if r["schema_id"] in seen:
            continue
        seen.add(r["schema_id"])
        key = None if r["key_schema"] in (None, "", "null") else parse_connect_schema(r["key_schema"])
        renamed = tuple((str(x["old"]), str(x["new"])) for x in r["renamed_columns"] or ())
        row = envelope_row(parse_connect_schema(r["value_schema"]))
        ids = tuple(int(i) for i in r["column_ids"] or ())
        version = TopicSchema(r["schema_id"], tuple(r["primary_key"] or ()), key, row, _utc(r["registered_at"]),
                              renamed, ids if len(ids) == len(row.fields) else ())
        if out and not renamed:
            version = replace(version, renamed_columns=renames_by_id(out[-1], version))
        out.append(version)
    return out


def _rows_delta_rs(path: str, topic: str, storage_options: Mapping[str, str] | None) -> list[Mapping[str, Any]]:
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    table = DeltaTable(path, storage_options=dict(storage_options) if storage_options else None)
    names = {f.name for f in table.schema().fields}
    data = table.to_pyarrow_table(columns=[*_COLUMNS, "topic", *(c for c in _OPTIONAL if c in names)])
    data = data.filter(pc.equal(data.column("topic"), topic))
    return [{**dict.fromkeys(_OPTIONAL), **r} for r in data.to_pylist()]


def _rows_spark(spark: SparkSession, path: str, source: str, topic: str) -> list[Mapping[str, Any]]:
    try:
        table = spark.read.format("delta").load(path)
        optional = [(sf.col(c) if c in table.columns else sf.lit(None)).alias(c) for c in _OPTIONAL]
        return [r.asDict(recursive=True) for r in
                table.where(sf.col("topic") == topic).select(*_COLUMNS, *optional).collect()]
    except Exception as exc:  # engines raise different classes for a missing table
        raise SchemaHistoryError(
            f"cannot read the schema history of source {source!r} at {path}: "
            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; has capture run?",
            source=source, path=path,
        ) from exc


def renames_by_id(before: TopicSchema, after: TopicSchema) -> tuple[tuple[str, str], ...]:
    """Columns of ``after`` whose id ``before`` has under another name (ids 0 are unknown)."""
    if not before.column_ids or not after.column_ids:
        return ()
    old = {i: f.name for i, f in zip(before.column_ids, before.row.fields, strict=True) if i > 0}
    return tuple((old[i], f.name) for i, f in zip(after.column_ids, after.row.fields, strict=True)
                 if i in old and old[i] != f.name)


def _utc(t: dt.datetime) -> dt.datetime:
    """An aware UTC time (delta-rs gives one; pyspark gives the process's local time, naive)."""
    return t.astimezone(dt.UTC)
