"""Builds bronze tables for silver tests: hand-made Debezium envelopes written with delta-rs.

Example::

    b = BronzeBuilder(root, table="customers")
    b.register([int32("id", optional=False), string("name")], primary_key=["id"])
    b.insert({"id": 1, "name": "a"}).update({"id": 1, "name": "b"}).delete({"id": 1})
    b.commit()          # one Delta commit = one capture batch

Values are given in Debezium's JSON representation (``enc_decimal`` and friends encode).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake

from bronze.schema import (
    BRONZE_SCHEMA,
    META_BATCH,
    META_COMPLETE_SEQ,
    META_OFFSET,
    META_SNAPSHOT_COMPLETED,
    META_SOURCE,
    OFFSETS_SCHEMA,
    SCHEMAS_SCHEMA,
    offsets_path,
    schemas_path,
    topic_path,
)

PLACEHOLDER = "__debezium_unavailable_value"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


# ---- Kafka Connect field schemas -------------------------------------------------------------

def col(name: str, type_: str, *, optional: bool = True, logical: str | None = None,
        params: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_, "optional": optional}
    if logical:
        out["name"] = logical
        out["version"] = 1
    if params:
        out["parameters"] = params
    out.update(extra)
    out["field"] = name
    return out


def int32(name: str, optional: bool = True) -> dict[str, Any]:
    return col(name, "int32", optional=optional)


def int64(name: str, optional: bool = True) -> dict[str, Any]:
    return col(name, "int64", optional=optional)


def string(name: str, optional: bool = True, logical: str | None = None) -> dict[str, Any]:
    return col(name, "string", optional=optional, logical=logical)


def decimal(name: str, precision: int | None, scale: int) -> dict[str, Any]:
    params = {"scale": str(scale)}
    if precision is not None:
        params["connect.decimal.precision"] = str(precision)
    return col(name, "bytes", logical="org.apache.kafka.connect.data.Decimal", params=params)


def micro_timestamp(name: str) -> dict[str, Any]:
    return col(name, "int64", logical="io.debezium.time.MicroTimestamp")


# ---- value encoders (Debezium JSON forms) ----------------------------------------------------

def enc_decimal(value: Decimal | str | int, scale: int) -> str:
    with localcontext(prec=200):
        unscaled = int((Decimal(value) * (Decimal(10) ** scale)).to_integral_value())
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def enc_bytes(value: bytes) -> str:
    return base64.b64encode(value).decode()


def micros(ts: dt.datetime) -> int:
    return int((ts.replace(tzinfo=dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds() * 1_000_000)


@dataclass
class BronzeBuilder:
    """Writes one topic's bronze table and its source's schema history (not thread-safe)."""

    root: str
    table: str = "t"
    source: str = "shop"
    schema: str = "public"
    pending: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0
    batch: int = 0
    txid: int = 1000
    lsn: int = 10_000
    schema_id: str | None = None
    primary_key: list[str] = field(default_factory=list)
    fields: list[dict[str, Any]] = field(default_factory=list)
    ts_ms: int = 1_700_000_000_000

    @property
    def topic(self) -> str:
        return f"{self.source}.{self.schema}.{self.table}"

    @property
    def path(self) -> str:
        return topic_path(self.root, self.topic)

    # ---- schema history ----
    def register(self, fields: list[dict[str, Any]], primary_key: list[str], schema_id: str | None = None,
                 *, renamed: list[tuple[str, str]] | None = None) -> str:
        """Register a schema version (written at once) and use it for the next events;
        ``renamed``: the (old, new) column renames that led to it, as capture records them."""
        row = {"type": "struct", "fields": fields, "optional": True, "name": f"{self.topic}.Value"}
        envelope = {"type": "struct", "optional": False, "name": f"{self.topic}.Envelope", "version": 2, "fields": [
            {**row, "field": "before"}, {**row, "field": "after"},
            {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source", "field": "source",
             "fields": [{"type": "int64", "optional": False, "field": "ts_ms"},
                        {"type": "int64", "optional": True, "field": "txId"},
                        {"type": "int64", "optional": True, "field": "lsn"}]},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"}]}
        key_fields = [f for f in fields if f["field"] in primary_key]
        key = {"type": "struct", "fields": key_fields, "optional": False, "name": f"{self.topic}.Key"}
        value_text, key_text = _dumps(envelope), _dumps(key) if primary_key else "null"
        sid = schema_id or hashlib.sha1((key_text + value_text).encode()).hexdigest()[:16]
        self.schema_id, self.primary_key, self.fields = sid, list(primary_key), fields
        now = dt.datetime.now(dt.UTC) + dt.timedelta(microseconds=self.seq)
        tbl = pa.Table.from_pylist([{"topic": self.topic, "schema_id": sid, "table": f"{self.schema}.{self.table}",
                                     "primary_key": list(primary_key), "key_schema": key_text,
                                     "value_schema": value_text, "registered_at": now,
                                     "renamed_columns": [{"old": o, "new": n} for o, n in renamed or ()]}],
                                   schema=SCHEMAS_SCHEMA)
        write_deltalake(schemas_path(self.root, self.source), tbl, mode="append")
        return sid

    # ---- events ----
    def key_of(self, row: dict[str, Any]) -> str | None:
        return _dumps({k: row[k] for k in self.primary_key}) if self.primary_key else None

    def envelope(self, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
                 *, snapshot: str = "false", txid: int | None = None, ts_ms: int | None = None) -> str:
        self.lsn += 8
        tx = self.txid if txid is None else txid
        source = {"version": "3.3.1.Final", "connector": "postgresql", "name": self.source,
                  "ts_ms": self.ts_ms if ts_ms is None else ts_ms, "snapshot": snapshot, "db": "shop",
                  "schema": self.schema, "table": self.table, "txId": tx, "lsn": self.lsn}
        return _dumps({"before": before, "after": after, "source": source, "transaction": None, "op": op,
                       "ts_ms": self.ts_ms, "ts_us": self.ts_ms * 1000, "ts_ns": self.ts_ms * 1_000_000})

    def raw(self, *, key: str | None, value: str | None, op: str | None, headers: dict[str, str] | None = None,
            schema_id: str | None = "default", position: dict[str, Any] | None = None) -> BronzeBuilder:
        """Append one bronze row as given (bad events, hand-made shapes)."""
        self.seq += 1
        pos = position or {"lsn_proc": self.lsn, "lsn_commit": self.lsn, "lsn": self.lsn, "txId": self.txid}
        self.pending.append({"key": key, "value": value, "op": op, "seq": self.seq, "position": _dumps(pos),
                             "schema_id": self.schema_id if schema_id == "default" else schema_id,
                             "headers": list(headers.items()) if headers else None})
        return self

    def event(self, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
              *, key_row: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
              commit_lsn: int | None = None, **env: Any) -> BronzeBuilder:
        """One change event. ``commit_lsn`` sets the position's ``lsn_commit``, which silver reads
        only to find the changes streamed inside an incremental snapshot's window
        (`silver.resnapshot.find_incremental_snapshot`); without it, the row's own lsn."""
        key = self.key_of(key_row or after or before or {})
        value = self.envelope(op, before, after, **env)
        position = None if commit_lsn is None else {"lsn_proc": self.lsn, "lsn_commit": commit_lsn, "lsn": self.lsn,
                                                     "txId": self.txid}
        return self.raw(key=key, value=value, op=op, headers=headers, position=position)

    def insert(self, row: dict[str, Any], **env: Any) -> BronzeBuilder:
        return self.event("c", None, row, **env)

    def read(self, row: dict[str, Any], **env: Any) -> BronzeBuilder:
        return self.event("r", None, row, snapshot="true", **env)

    def update(self, row: dict[str, Any], before: dict[str, Any] | None = None, **env: Any) -> BronzeBuilder:
        return self.event("u", before, row, **env)

    def delete(self, key_row: dict[str, Any], before: dict[str, Any] | None = None, tombstone: bool = True,
               headers: dict[str, str] | None = None, **env: Any) -> BronzeBuilder:
        self.event("d", before if before is not None else key_row, None, key_row=key_row, headers=headers, **env)
        if tombstone:
            self.raw(key=self.key_of(key_row), value=None, op=None, schema_id=None)
        return self

    def truncate(self, **env: Any) -> BronzeBuilder:
        self.lsn += 8
        source = {"version": "3.3.1.Final", "connector": "postgresql", "name": self.source,
                  "ts_ms": env.get("ts_ms", self.ts_ms), "snapshot": "false", "db": "shop",
                  "schema": self.schema, "table": self.table, "txId": self.txid, "lsn": self.lsn}
        value = _dumps({"source": source, "op": "t", "ts_ms": self.ts_ms, "transaction": None})
        return self.raw(key=None, value=value, op="t")

    def change_key(self, old: dict[str, Any], new_row: dict[str, Any]) -> BronzeBuilder:
        """A primary-key update: delete(old, newkey header) + tombstone + create(new, oldkey header).

        Unchanged TOASTed columns arrive as placeholders in ``new_row``, as pgoutput sends them.
        """
        old_key, new_key = self.key_of(old), self.key_of(new_row)
        assert old_key and new_key
        self.delete(old, headers={"__debezium.newkey": new_key})
        return self.event("c", None, new_row, headers={"__debezium.oldkey": old_key})

    def next_tx(self, ts_ms: int | None = None) -> BronzeBuilder:
        self.txid += 1
        self.ts_ms = ts_ms if ts_ms is not None else self.ts_ms + 1000
        return self

    # ---- commit ----
    def commit(self, *, batch: int | None = None) -> int:
        """Write pending rows as one Delta commit (one capture batch); returns the batch number."""
        self.batch = self.batch + 1 if batch is None else batch
        now = dt.datetime.now(dt.UTC)
        rows = [{**r, "ingested_at": now, "batch": self.batch} for r in self.pending]
        if rows:
            write_deltalake(self.path, pa.Table.from_pylist(rows, schema=BRONZE_SCHEMA), mode="append")
        self.pending = []
        return self.batch

    def commit_offset(self, batch: int, offset: dict[str, Any], *, snapshot_completed: bool = True,
                      topics: list[str] | None = None, complete_seq: dict[str, int] | None = None) -> None:
        """Append a row to ``_cdc/<source>/offsets`` (a committed capture batch), with the commit
        metadata capture writes; ``complete_seq`` (per topic, the last seq of a complete transaction
        when rows of an open one follow) is left out when None, as bronze written before it."""
        row = {"batch": batch, "offset": _dumps(offset), "snapshot_completed": snapshot_completed,
               "topics": topics or [self.topic], "records": 0, "committed_at": dt.datetime.now(dt.UTC)}
        metadata = {META_SOURCE: self.source, META_BATCH: str(batch), META_OFFSET: _dumps(offset),
                    META_SNAPSHOT_COMPLETED: str(snapshot_completed).lower()}
        if complete_seq is not None:
            metadata[META_COMPLETE_SEQ] = _dumps(complete_seq)
        write_deltalake(offsets_path(self.root, self.source), pa.Table.from_pylist([row], schema=OFFSETS_SCHEMA),
                        mode="append", commit_properties=CommitProperties(custom_metadata=metadata))
