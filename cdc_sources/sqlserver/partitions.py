"""The offsets of a SQL Server source that captures several databases: one per database.

Debezium 3.6.3 keeps one source partition per database of ``database.names``,
``{"server": <topic.prefix>, "database": <database>}`` (``SqlServerPartition``), each with its own
``SqlServerOffsetContext`` offset (`SqlServerOffset`). Bronze keeps one offset map per commit,
so a source with several databases stores them all in one map::

    {"partitions": [{"partition": {"server": "ms", "database": "db1"},
                     "offset": {"commit_lsn": "...", "change_lsn": "...", "event_serial_no": 1}},
                    ...]}

each ``partition``/``offset`` pair being exactly what Debezium stores under that partition
(with a signalled snapshot running in that database, its ``incremental_snapshot_*`` progress
too, as Debezium keeps the incremental snapshot context in each partition's offset). A source
with one database keeps storing the bare offset map, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_sources.sqlserver.offset import OffsetError, SqlServerOffset

__all__ = ["PARTITIONS", "PartitionedOffset", "SqlServerPartition"]

PARTITIONS = "partitions"
"""The key of the partition list in a several-database offset map."""
_POSITION_KEYS = frozenset({"commit_lsn", "change_lsn", "event_serial_no", "snapshot", "snapshot_completed"})


@dataclass(frozen=True)
class SqlServerPartition:
    """One database of the source, as Debezium names its source partition."""

    server: str
    database: str

    def to_map(self) -> dict[str, str]:
        return {"server": self.server, "database": self.database}


@dataclass(frozen=True)
class PartitionedOffset:
    """The offsets of a source's databases (a `cdc_sources.spi.SourceOffset`).

    Attributes:
        server: ``topic.prefix``.
        offsets: per database (in ``database.names`` order), its offset; a database with no
            offset yet (nothing captured from it) is absent.
        extras: per database, the keys its offset map holds beside the position (a running
            signalled snapshot's progress, `cdc_sources.common.incremental_state`); absent when none.
    """

    server: str
    offsets: Mapping[str, SqlServerOffset]
    extras: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def partition(self, database: str) -> SqlServerPartition:
        return SqlServerPartition(self.server, database)

    def with_offset(self, database: str, offset: SqlServerOffset, order: Sequence[str],
                    extras: Mapping[str, Any] | None = None) -> PartitionedOffset:
        """This offset with ``database``'s replaced (databases kept in ``order``), and its extras
        when given (None keeps them)."""
        merged = {**self.offsets, database: offset}
        kept = dict(self.extras)
        if extras is not None:
            kept.pop(database, None)
            if extras:
                kept[database] = dict(extras)
        return PartitionedOffset(self.server, {d: merged[d] for d in order if d in merged},
                                 {d: kept[d] for d in order if d in kept})

    def offset_map(self, database: str) -> dict[str, Any] | None:
        """The map stored for ``database`` (position and extras), None when it has none."""
        offset = self.offsets.get(database)
        return None if offset is None else {**offset.to_map(), **self.extras.get(database, {})}

    def to_dict(self) -> dict[str, Any]:
        return {PARTITIONS: [{"partition": self.partition(d).to_map(), "offset": self.offset_map(d)}
                             for d in self.offsets]}

    @classmethod
    def load(cls, stored: Mapping[str, Any] | None, server: str, databases: Sequence[str]) -> PartitionedOffset:
        """Read a stored several-database offset map; partitions of databases no longer listed,
        or of another ``topic.prefix``, are left out.

        Raises:
            OffsetError: the map is a one-database offset (a source that listed one database
                before), or a partition is malformed (names which).
        """
        if not stored:
            return cls(server, {})
        entries = stored.get(PARTITIONS)
        if entries is None:
            raise OffsetError(
                "the stored SQL Server offset is of a source capturing one database, but database.names now "
                f"lists {len(databases)}: capture the added databases with a source of their own, or reset the "
                "source's offsets to start over")
        if not isinstance(entries, list):
            raise OffsetError(f"stored SQL Server offset: {PARTITIONS} must be a list, got {entries!r}")
        found: dict[str, SqlServerOffset] = {}
        extras: dict[str, dict[str, Any]] = {}
        for n, entry in enumerate(entries):
            partition = entry.get("partition") if isinstance(entry, Mapping) else None
            offset = entry.get("offset") if isinstance(entry, Mapping) else None
            if not isinstance(partition, Mapping) or not isinstance(offset, Mapping) \
                    or not isinstance(partition.get("database"), str):
                raise OffsetError(f"stored SQL Server offset: {PARTITIONS}[{n}] must hold a partition with a "
                                  f"database and an offset, got {entry!r}")
            if partition.get("server") != server:
                continue
            try:
                found[partition["database"]] = position = SqlServerOffset.load(offset)
            except OffsetError as exc:
                raise OffsetError(f"{PARTITIONS}[{n}] (database {partition['database']}): {exc}") from None
            rest = {k: v for k, v in offset.items() if k not in position.to_map() and k not in _POSITION_KEYS}
            if rest:
                extras[partition["database"]] = rest
        return cls(server, {d: found[d] for d in databases if d in found},
                   {d: extras[d] for d in databases if d in extras})
