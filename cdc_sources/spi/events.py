"""What a connector hands to the bronze writer.

A connector renders every Debezium record itself (key and value exactly as Debezium's JSON
converter writes them with ``schemas.enable=false``), so the writer never interprets values.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

HISTORY_TOPIC = "__cdc.history"
"""The reserved topic of a connector's private history (MySQL's database schema history).

Records sent to it are stored by the writer under ``_cdc/<source>/history`` with the same
exactly-once rules as data, and handed back to `Connector.open` on restart. ``value`` holds
the connector's record JSON, ``position`` the offset at which it applies.
"""

POSITION_INCREMENTAL_ID = "incremental_snapshot_correlation_id"
"""The key, in the ``position`` of a row an incremental snapshot emitted, of the snapshot's id."""
POSITION_INCREMENTAL_LAST = "incremental_snapshot_last_chunk"
"""The key, in the ``position`` of a row an incremental snapshot emitted, true on a table's last chunk
(silver settles the re-snapshot there)."""

POSITION_INCREMENTAL_START = "incremental_snapshot_table_start_commit"
"""The key, in the ``position`` of a row an incremental snapshot emitted, of the commit mark
(`commit_mark` of the checkpoint following it) of the watermark that opened the table's first
chunk: every event of the table whose position has a commit mark at least this belongs to the
snapshot's time span."""

BINLOG_FILE_FACTOR = 1 << 32
"""Binlog commit marks: ``file number * BINLOG_FILE_FACTOR + pos`` (a binlog file is under 4 GiB)."""

SQLSERVER_VLF_LIMIT = (1 << 31) - 1
"""SQL Server commit marks: ``min(VLF, SQLSERVER_VLF_LIMIT) * 2**32 + block`` of ``commit_lsn``
(``VVVVVVVV:BBBBBBBB:SSSS``, hex), under 2**63. The slot is left out: the mark orders commits by
log block, two commits in one block share it (a snapshot's start then counts one more commit in)."""

_HEX = frozenset("0123456789abcdefABCDEF")


def commit_mark(position: Mapping[str, Any]) -> int | None:
    """An integer that orders a position by the commit it follows, the same for a checkpoint's offset
    and for the records of the next transactions (silver reads it from bronze positions alike).

    PostgreSQL: ``lsn_commit``. SQL Server: ``commit_lsn`` (see `SQLSERVER_VLF_LIMIT`). Oracle:
    the highest commit SCN of ``commit_scn`` (``<scn>:<thread>:<xids>`` per redo thread;
    transactions are emitted in commit SCN order across threads). Binlog connectors (MySQL,
    MariaDB): ``file`` and ``pos``, as ``file number * BINLOG_FILE_FACTOR + pos``: a record's
    ``pos`` is its transaction's first event, a checkpoint's the end of the commit, so the
    transactions after a checkpoint have a mark at least its. None when the position has none of
    them.
    """
    lsn = position.get("lsn_commit")
    if lsn is not None:
        return int(lsn)
    mssql = position.get("commit_lsn")
    if isinstance(mssql, str) and len(mssql) == 22 and mssql[8] == mssql[17] == ":" \
            and set(mssql[:8] + mssql[9:17] + mssql[18:]) <= _HEX:
        return (min(int(mssql[:8], 16), SQLSERVER_VLF_LIMIT) << 32) | int(mssql[9:17], 16)
    commits = position.get("commit_scn")
    if isinstance(commits, str) and commits:  # Oracle: the highest commit SCN over the redo threads
        scns = [int(e.split(":", 1)[0]) for e in commits.split(",") if e.split(":", 1)[0].isdigit()]
        return max(scns) if scns else None
    file, pos = position.get("file"), position.get("pos")
    if not isinstance(file, str) or pos is None:
        return None
    _, dot, ext = file.rpartition(".")
    if not dot or not ext.isdigit():
        return None
    return int(ext) * BINLOG_FILE_FACTOR + int(pos)

HEADER_NEW_KEY = "__debezium.newkey"
HEADER_OLD_KEY = "__debezium.oldkey"


class Op(StrEnum):
    """Debezium's ``op`` codes."""

    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    READ = "r"
    TRUNCATE = "t"
    MESSAGE = "m"


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """One version of the schema a topic's records are written with.

    Attributes:
        topic: the topic (bronze table) the schema belongs to.
        schema_id: a stable fingerprint of ``key_schema`` + ``value_schema``.
        key_schema: the Kafka Connect schema of the key, as JSON text (``"null"`` if keyless).
        value_schema: the Kafka Connect schema of the value (the envelope), as JSON text.
        table: the source table (``schema.table`` or ``db.table``), ``""`` for non-table topics.
        primary_key: the key columns of the source table, in key order.
        renamed_columns: (old, new) names of the value columns the source renamed to reach
            this version from the one before (MySQL/MariaDB: from the DDL). Not part of
            ``schema_id``. Silver renames its columns by it.
        column_ids: the source's stable identity of each value column, in field order
            (PostgreSQL: ``pg_attribute.attnum``; 0 where unknown), or empty. A column with the
            same id under another name in the next version was renamed. Not part of ``schema_id``.
    """

    topic: str
    schema_id: str
    key_schema: str
    value_schema: str
    table: str
    primary_key: tuple[str, ...]
    renamed_columns: tuple[tuple[str, str], ...] = ()
    column_ids: tuple[int, ...] = ()


@dataclass(slots=True)
class ChangeRecord:
    """One Debezium record bound for one bronze table.

    Attributes:
        topic: Debezium's topic name; also the bronze table name.
        key: the key JSON text, or None (keyless tables, truncates).
        value: the value JSON text, or None for a tombstone.
        op: the envelope ``op``; None for a tombstone or a non-envelope record (heartbeat,
            transaction metadata).
        position: the source offset after this record, as JSON text, as Debezium would record it.
        order_key: a tuple of ints totally ordering the source's records; identical for the
            same record when the source replays it. The writer uses it to drop replays.
        schema_id: the `SchemaVersion.schema_id` that decodes ``value``; None if schemaless.
        headers: Debezium headers (``__debezium.newkey`` / ``__debezium.oldkey``, context headers);
            may be shared between records, so never mutate it.
        lane: None: ``order_key`` orders the record among every record of its topic. A name: the
            record's topic gets records of several independent positions (a SQL Server source's
            databases writing to its schema change, transaction and heartbeat topics), and
            ``order_key`` orders it only among the records of the same lane; bronze keeps a
            high-water mark per lane for such a topic.
    """

    topic: str
    key: str | None
    value: str | None
    op: str | None
    position: str
    order_key: tuple[int, ...]
    schema_id: str | None = None
    headers: Mapping[str, str] | None = None
    lane: str | None = None


@dataclass(frozen=True, slots=True)
class ChangeBlock:
    """Many records of one topic in columnar form: the fast path for snapshots and runs of inserts.

    Row ``i`` is the record ``(topic, keys[i], values[i], op, positions[i])`` with order key
    ``order_keys[i]`` when given, else ``order_prefix + (first_index + i,)`` (consecutive keys).

    Attributes:
        topic: the topic (bronze table).
        keys: key JSON texts (a pyarrow string array), or None when every key is null.
        values: value JSON texts (a pyarrow string array).
        op: the ``op`` of every row.
        positions: source offsets as JSON texts (a pyarrow string array, possibly dictionary-encoded).
        order_prefix: the order key of every row but its last element.
        first_index: the last order-key element of row 0.
        schema_id: the schema version of every row.
        headers: headers of every row (shared, read-only).
        order_keys: the order key of every row, ascending, when they are not consecutive (a
            streamed run's keys hold each row's LSN); None: derived from the prefix.
    """

    topic: str
    keys: Any
    values: Any
    op: str
    positions: Any
    order_prefix: tuple[int, ...]
    first_index: int
    schema_id: str | None = None
    headers: Mapping[str, str] | None = None
    order_keys: Sequence[tuple[int, ...]] | None = None

    def __len__(self) -> int:
        return len(self.values)

    def order_key(self, i: int) -> tuple[int, ...]:
        """The order key of row ``i``."""
        if self.order_keys is not None:
            return self.order_keys[i]
        return (*self.order_prefix, self.first_index + i)

    @property
    def last_order_key(self) -> tuple[int, ...]:
        return self.order_key(len(self) - 1)

    def after(self, mark: tuple[int, ...]) -> ChangeBlock | None:
        """The rows whose order key is above ``mark`` (a high-water mark), as a block; None if none."""
        if not mark or self.order_key(0) > mark:
            return self
        if self.last_order_key <= mark:
            return None
        if self.order_keys is not None:
            skip = bisect.bisect_right(self.order_keys, mark)
        else:  # consecutive keys with the same prefix: the mark falls inside the block
            skip = mark[-1] - self.first_index + 1
        return ChangeBlock(self.topic, None if self.keys is None else self.keys.slice(skip),
                           self.values.slice(skip), self.op, self.positions.slice(skip), self.order_prefix,
                           self.first_index + skip, self.schema_id, self.headers,
                           None if self.order_keys is None else self.order_keys[skip:])


@runtime_checkable
class SourceOffset(Protocol):
    """A connector's typed offset (``PostgresOffset``, ``MySqlOffset``): a resumable position."""

    def to_dict(self) -> dict[str, Any]:
        """The offset map as bronze stores it (Debezium's offset keys), loadable by the connector."""
        ...


@dataclass(frozen=True, slots=True)
class OffsetWithExtras:
    """A connector's offset plus keys that shared stream stages keep beside it (an incremental
    snapshot's ``incremental_snapshot_*`` progress, as in Debezium's offsets).

    Stored as one map (the connector's keys, then ``extras``); the connector's own session is
    acknowledged with ``base`` (see `connector_offset`).
    """

    base: SourceOffset
    extras: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {**self.base.to_dict(), **self.extras}


def connector_offset(offset: SourceOffset) -> SourceOffset:
    """The connector's own offset inside ``offset`` (what its session acknowledges)."""
    while isinstance(offset, OffsetWithExtras):
        offset = offset.base
    return offset


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A point in the source stream where everything before it has been emitted.

    Emitted by stream readers at transaction ends and keepalives, never inside a transaction
    (the bronze writer relies on it: the records before a checkpoint are of complete
    transactions). Committing bronze up to a checkpoint and storing ``offset`` makes it safe to
    resume from there and to acknowledge the source (slot flush, binlog purge) with it.

    Attributes:
        offset: the connector's typed offset.
        idle: True when the source had nothing more to send at this point (used by
            ``--until-idle``).
        transactions: how many source transactions with change events end here, when change
            events came since the previous checkpoint: more than one when a reader folds the
            checkpoints of consecutive transactions read together into the last one's (one-row
            transactions would otherwise cost a checkpoint per row downstream).
    """

    offset: SourceOffset
    idle: bool = False
    transactions: int = 1


@dataclass(frozen=True, slots=True)
class SnapshotProgress:
    """Progress of a running snapshot, for progress output."""

    table: str
    rows: int
    tables_done: int
    tables_total: int
    table_done: bool = False


StreamItem = ChangeRecord | list[ChangeRecord] | ChangeBlock | Checkpoint | SchemaVersion | SnapshotProgress
"""What readers yield: records (one by one, or as a list: a run of records in order),
checkpoints, schemas (before the records that use them) and snapshot progress."""

