"""Tables added to or removed from a running pipeline's filters.

Every checkpoint offset records the topics of the tables the pipeline captures at that point
(`K_CAPTURED_TOPICS`, a key of ours beside Debezium's). When capture restarts with different
filters, the stored list says what changed:

* a table captured now but not in the list was added (``table.include.list`` gained it, or an
  exclusion was lifted): with ``snapshot.new.tables.mode: incremental`` (the default) it is
  snapshotted incrementally, alone, as if an ``execute-snapshot`` signal had named it; with
  ``off`` only its changes from now on are captured;
* a table in the list but no longer captured was removed: its capture stops and its bronze
  tables stay as they are (``status`` shows them as no longer captured).

A table is recorded only once its rows are covered: by the initial snapshot, by the
incremental snapshot started for it (its progress rides in the same offset), by streaming from
its creation, or by ``off``. One that could not be snapshotted (no signal table; ``read.only`` on MySQL, not MariaDB)
stays unrecorded, so the next start tries again. An offset written before this key existed
records nothing: the tables captured then are taken as covered.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from cdc_sources.common.options import OptionSpec
from cdc_sources.spi import Checkpoint, OffsetWithExtras, StreamItem

log = logging.getLogger(__name__)

__all__ = ["K_CAPTURED_TOPICS", "NEW_TABLES_OPTION", "NEW_TABLES_SPEC", "CapturedTables", "NewTablesMode",
           "TableChanges", "stored_topics", "table_changes", "table_topic"]

K_CAPTURED_TOPICS = "captured_topics"
"""Offset key: the JSON list of the captured tables' topics at that checkpoint."""

NEW_TABLES_OPTION = "snapshot.new.tables.mode"

REFRESH_SECONDS = 1.0
"""How often the recorded list is rebuilt from the captured tables (tables created while capture runs)."""

Table = tuple[str, str]


class NewTablesMode(StrEnum):
    """``snapshot.new.tables.mode``: what a restart does with tables added to the filters."""

    INCREMENTAL = "incremental"
    OFF = "off"


NEW_TABLES_SPEC = OptionSpec(
    NEW_TABLES_OPTION, NewTablesMode.INCREMENTAL.value, "enum", tuple(m.value for m in NewTablesMode),
    doc="not a Debezium option: what a restart does with tables added to the filters (incremental: snapshot "
        "them incrementally, alone; off: capture only their changes from then on)")


@dataclass(frozen=True)
class TableChanges:
    """The difference between the stored table list and the tables captured now.

    Attributes:
        added: tables captured now whose topic the stored list lacks, in the order given.
        removed: topics of the stored list no table captured now has, sorted.
    """

    added: tuple[Table, ...]
    removed: tuple[str, ...]


def table_topic(prefix: str, delimiter: str, table: Table) -> str:
    """A table's bronze topic: ``<prefix><d><schema or database><d><table>``."""
    return f"{prefix}{delimiter}{table[0]}{delimiter}{table[1]}"


def stored_topics(offset: Mapping[str, Any] | None) -> frozenset[str] | None:
    """The topics an offset records as captured; None when it records none (no offset, or an older one)."""
    text = offset.get(K_CAPTURED_TOPICS) if offset else None
    if not isinstance(text, str):
        return None
    try:
        items = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return frozenset(str(t) for t in items) if isinstance(items, list) else None


def table_changes(stored: frozenset[str], current: Sequence[Table], topic: Callable[[Table], str]) -> TableChanges:
    """What was added to and removed from the captured tables since ``stored`` was recorded (pure)."""
    now = {topic(t): t for t in current}
    return TableChanges(tuple(t for name, t in now.items() if name not in stored),
                        tuple(sorted(set(stored) - set(now))))


class CapturedTables:
    """Records the captured tables in every checkpoint and finds the tables added since the stored offset.

    Args:
        stored_offset: the offset the session resumes from (None: a fresh start).
        tables: the captured tables as they stand (called again as capture runs).
        prefix / delimiter: ``topic.prefix`` and ``topic.delimiter``.
        mode: ``snapshot.new.tables.mode``.
        snapshotted_now: this run took a snapshot of every table (nothing is new).
    """

    def __init__(self, *, stored_offset: Mapping[str, Any] | None, tables: Callable[[], Sequence[Table]],
                 prefix: str, delimiter: str, mode: NewTablesMode, snapshotted_now: bool) -> None:
        self._tables = tables
        self._prefix, self._delimiter = prefix, delimiter
        self.mode = mode
        self._stored = None if snapshotted_now else stored_topics(stored_offset)
        self._origin = orjson.dumps(dict(stored_offset or {}), option=orjson.OPT_SORT_KEYS).decode()
        self._pending: frozenset[str] = frozenset()  # added tables left unsnapshotted: not recorded
        self._extras: dict[str, Any] | None = None
        self._built = 0.0

    def topic(self, table: Table) -> str:
        return table_topic(self._prefix, self._delimiter, table)

    def changes(self) -> TableChanges:
        """Tables added and removed since the stored offset (none when it records no list)."""
        if self._stored is None:
            return TableChanges((), ())
        return table_changes(self._stored, self._tables(), self.topic)

    def snapshot_id(self, added: Sequence[Table]) -> str:
        """The correlation id of the incremental snapshot of ``added``: the same on every start from the
        same stored offset, so a restart before its progress was stored finds its watermarks again."""
        digest = hashlib.sha256(f"{self._origin}|{sorted(added)}".encode()).hexdigest()
        return f"new-tables-{uuid.UUID(digest[:32])}"

    def start(self, *, can_snapshot: str | None, snapshot: Callable[[Sequence[Table], str], None]) -> None:
        """Log the removed tables and act on the added ones per ``mode``: ``snapshot(tables, correlation_id)``
        starts their incremental snapshot; ``can_snapshot``: why one cannot run (None: it can)."""
        changes = self.changes()
        for name in changes.removed:
            log.info("%s is no longer captured (removed from the filters): its capture stops, its bronze table "
                     "is kept", name)
        if not changes.added:
            return
        names = ", ".join(f"{s}.{t}" for s, t in changes.added)
        if self.mode is NewTablesMode.OFF:
            log.info("tables added to the filters: %s; snapshot.new.tables.mode=off: only their changes from now "
                     "on are captured", names)
            return
        if can_snapshot is not None:
            self._pending = frozenset(self.topic(t) for t in changes.added)
            log.warning("tables added to the filters: %s; they cannot be snapshotted (%s), so only their changes "
                        "from now on are captured, and the next start tries again. Fix that, or set "
                        "snapshot.new.tables.mode=off to accept it", names, can_snapshot)
            return
        log.info("tables added to the filters: %s: incremental snapshot of these tables only", names)
        snapshot(changes.added, self.snapshot_id(changes.added))

    def extras(self) -> dict[str, Any]:
        """The offset keys recording the captured tables now (rebuilt at most every `REFRESH_SECONDS`)."""
        now = time.monotonic()
        if self._extras is None or now - self._built >= REFRESH_SECONDS:
            topics = sorted({self.topic(t) for t in self._tables()} - self._pending)
            self._extras = {K_CAPTURED_TOPICS: orjson.dumps(topics).decode()}
            self._built = now
        return self._extras

    def wrap(self, items: Iterator[StreamItem]) -> Iterator[StreamItem]:
        """The stream with the captured tables recorded in every checkpoint's offset."""
        for item in items:
            if isinstance(item, Checkpoint):
                yield Checkpoint(OffsetWithExtras(item.offset, self.extras()), item.idle, item.transactions)
            else:
                yield item
