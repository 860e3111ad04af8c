"""Reads the schema history (``_cdc/<source>/schemas``) that decodes a topic's bronze rows."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from bronze.schema import schemas_path
from silver.connect_schema import ConnectSchema, envelope_row, parse_connect_schema
from silver.errors import SchemaHistoryError

__all__ = ["TopicSchema", "load_topic_schemas"]


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
            version from the one before.
    """

    schema_id: str
    primary_key: tuple[str, ...]
    key: ConnectSchema | None
    row: ConnectSchema
    registered_at: dt.datetime
    renamed_columns: tuple[tuple[str, str], ...] = ()


def load_topic_schemas(spark: SparkSession, root: str, source: str, topic: str) -> list[TopicSchema]:
    """Every schema version of ``topic``, oldest first.

    Raises:
        SchemaHistoryError: the schema history of ``source`` cannot be read.
    """
    path = schemas_path(root, source)
    try:
        table = spark.read.format("delta").load(path)
        renames = (sf.col("renamed_columns") if "renamed_columns" in table.columns  # absent in older histories
                   else sf.lit(None)).alias("renamed_columns")
        rows = (table.where(sf.col("topic") == topic)
                .select("schema_id", "primary_key", "key_schema", "value_schema", "registered_at", renames).collect())
    except Exception as exc:  # engines raise different classes for a missing table
        raise SchemaHistoryError(
            f"cannot read the schema history of source {source!r} at {path}: "
            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; has capture run?",
            source=source, path=path,
        ) from exc
    out = []
    seen: set[str] = set()
    for r in sorted(rows, key=lambda r: (r["registered_at"], r["schema_id"])):
        if r["schema_id"] in seen:
            continue
        seen.add(r["schema_id"])
        key = None if r["key_schema"] in (None, "", "null") else parse_connect_schema(r["key_schema"])
        renamed = tuple((str(x["old"]), str(x["new"])) for x in r["renamed_columns"] or ())
        out.append(TopicSchema(r["schema_id"], tuple(r["primary_key"] or ()), key,
                               envelope_row(parse_connect_schema(r["value_schema"])), r["registered_at"], renamed))
    return out
