"""The bronze table contract: layout on storage and column schemas.

This module is the only part of ``bronze`` that ``silver`` may import.

Layout under ``<root>``::

    bronze/<topic>/                   one Delta table per Debezium topic (data, transaction
                                      metadata ``<prefix>.transaction``, heartbeats, messages)
    bronze/_cdc/<source>/offsets      one row per committed capture batch: the source offset
                                      (its commit metadata also says where the source
                                      transactions complete at the batch's end stop)
    bronze/_cdc/<source>/schemas      every key/value schema a source has used (schema history)
    bronze/_cdc/<source>/history      the connector's private history (MySQL: every DDL with its
                                      binlog position, replayed on restart); data-table columns

Every data table commit carries, in its Delta commit metadata:

* an application transaction ``appId=<source>``, ``version=<batch>`` (idempotent retries),
* ``cdc.source``, ``cdc.writer`` (``cdc-lakehouse <version>``), ``cdc.batch``,
  ``cdc.last_seq`` and ``cdc.order_key`` (JSON list of ints: the source order key of the
  table's newest record, used to drop replays after a crash); a table that gets records of
  several independent positions (`cdc_sources.spi.ChangeRecord.lane`) also carries
  ``cdc.lane_order_keys`` (JSON object: per lane, the order key of its newest record).
"""

from __future__ import annotations

import pyarrow as pa

BRONZE_DIR = "bronze"
CDC_DIR = "_cdc"
OFFSETS_TABLE = "offsets"
SCHEMAS_TABLE = "schemas"
HISTORY_TABLE = "history"

# Commit-metadata keys written on every bronze data commit.
META_SOURCE = "cdc.source"
META_BATCH = "cdc.batch"
META_LAST_SEQ = "cdc.last_seq"
META_ORDER_KEY = "cdc.order_key"
META_LANE_ORDER_KEYS = "cdc.lane_order_keys"
"""Per lane (`cdc_sources.spi.ChangeRecord.lane`), the order key of the table's newest record of
that lane, as a JSON object ``{lane: [ints]}``; absent on tables written without lanes."""
META_OFFSET = "cdc.offset"
META_WRITER = "cdc.writer"
META_CONTROL = "cdc.control"
"""On an offsets commit written by an operation (`bronze.offset_control`), not by capture."""
META_SNAPSHOT_COMPLETED = "cdc.snapshot_completed"  # on offsets commits: "true" / "false"
META_COMPLETE_SEQ = "cdc.complete_seq"
"""On capture's offsets commits: where the source transactions complete at the batch's end stop,
as a JSON object ``{topic: N}``: rows of ``topic`` above seq N (up to this batch) belong to the
source transaction still open at the batch's end; every row of a topic not named, up to this
batch, belongs to a complete transaction. Connector-neutral: it comes from where the connector's
checkpoints (transaction ends) fell among the batch's records. Absent on commits written before
it existed (then only whole batches are known to be complete)."""

# Data table columns.
COL_KEY = "key"
COL_VALUE = "value"
COL_OP = "op"
COL_SEQ = "seq"
COL_POSITION = "position"
COL_SCHEMA_ID = "schema_id"
COL_HEADERS = "headers"
COL_INGESTED_AT = "ingested_at"
COL_BATCH = "batch"

BRONZE_SCHEMA = pa.schema(
    [
        pa.field(COL_KEY, pa.large_string(), nullable=True),
        pa.field(COL_VALUE, pa.large_string(), nullable=True),
        pa.field(COL_OP, pa.string(), nullable=True),
        pa.field(COL_SEQ, pa.int64(), nullable=False),
        pa.field(COL_POSITION, pa.string(), nullable=False),
        pa.field(COL_SCHEMA_ID, pa.string(), nullable=True),
        pa.field(COL_HEADERS, pa.map_(pa.string(), pa.string()), nullable=True),
        pa.field(COL_INGESTED_AT, pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field(COL_BATCH, pa.int64(), nullable=False),
    ]
)
"""Columns of every bronze data table.

* ``key`` / ``value``: Debezium JSON (``schemas.enable=false``); ``value`` null = tombstone.
* ``op``: ``c u d r t m``; null for tombstones and non-envelope records (transaction
  metadata, heartbeats).
* ``seq``: strictly increasing per table in source commit order; silver applies by it.
* ``position``: the source offset after the record, JSON, as the connector records offsets.
* ``schema_id``: key into ``_cdc/<source>/schemas`` for the schema that decodes ``value``.
* ``headers``: ``__debezium.newkey`` / ``__debezium.oldkey`` on primary-key changes.
* ``ingested_at``: when the batch's first rows were written (its commit follows within the
  capture's ``commit_interval_ms``); ``batch``: the capture batch number.
"""

OFFSETS_SCHEMA = pa.schema(
    [
        pa.field("batch", pa.int64(), nullable=False),
        pa.field("offset", pa.string(), nullable=False),
        pa.field("snapshot_completed", pa.bool_(), nullable=False),
        pa.field("topics", pa.list_(pa.string()), nullable=False),
        pa.field("records", pa.int64(), nullable=False),
        pa.field("committed_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)
"""One row per committed batch: ``offset`` is the connector's offset map (JSON) to resume
from; ``snapshot_completed`` tells whether the initial snapshot had finished by then."""

OFFSETS_CONFIGURATION = {"delta.checkpointInterval": "10"}
"""Table properties the offsets table is created with. It gets a commit per batch and is read by
path (its log replayed from the last checkpoint) at every commit: a checkpoint every 10 commits
instead of Delta's 100 bounds that replay, which costs a GET per commit file on object stores
(`bench/object_store_bench.py`)."""

SCHEMAS_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("schema_id", pa.string(), nullable=False),
        pa.field("table", pa.string(), nullable=False),
        pa.field("primary_key", pa.list_(pa.string()), nullable=False),
        pa.field("key_schema", pa.large_string(), nullable=False),
        pa.field("value_schema", pa.large_string(), nullable=False),
        pa.field("registered_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("renamed_columns", pa.list_(pa.struct([pa.field("old", pa.string()), pa.field("new", pa.string())])),
                 nullable=True),
        pa.field("column_ids", pa.list_(pa.int32()), nullable=True),
    ]
)
"""Schema history: the Kafka Connect schemas (JSON, as Debezium's JSON converter writes them
with ``schemas.enable=true``) of each topic's key and value, so silver can decode logical
types (``io.debezium.time.MicroTimestamp``, ``org.apache.kafka.connect.data.Decimal``, ...).
``renamed_columns`` lists the value columns the source renamed to reach a version from the one
before (``{old, new}``), ``column_ids`` the source's stable id of each value column (PostgreSQL
``attnum``, 0 when unknown; empty when the source has none); both are absent from histories
written before they existed."""


def bronze_root(root: str) -> str:
    """The bronze folder under a lakehouse root (path or URI)."""
    return f"{root.rstrip('/')}/{BRONZE_DIR}"


def topic_path(root: str, topic: str) -> str:
    """Where the bronze table of ``topic`` lives."""
    return f"{bronze_root(root)}/{topic}"


def history_path(root: str, source: str) -> str:
    """Where a source's private connector history lives (records sent to ``HISTORY_TOPIC``)."""
    return f"{bronze_root(root)}/{CDC_DIR}/{source}/{HISTORY_TABLE}"


def offsets_path(root: str, source: str) -> str:
    """Where a source's committed offsets live."""
    return f"{bronze_root(root)}/{CDC_DIR}/{source}/{OFFSETS_TABLE}"


def schemas_path(root: str, source: str) -> str:
    """Where a source's schema history lives."""
    return f"{bronze_root(root)}/{CDC_DIR}/{source}/{SCHEMAS_TABLE}"
