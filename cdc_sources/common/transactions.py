"""Transaction metadata (``provide.transaction.metadata``), the same for every connector that
writes it (PostgreSQL, MySQL/MariaDB, SQL Server).

As Debezium writes it:

- BEGIN goes before a transaction's first emitted event and END after its last one, on the
  topic ``<topic.prefix>.<topic.transaction>``, keyed ``{"id": ...}``; a transaction with no
  emitted event (every change filtered or skipped) has neither;
- their value is ``{"status", "id", "event_count", "data_collections", "ts_ms"}`` in that
  order; ``event_count`` and ``data_collections`` are null in BEGIN; END's ``data_collections``
  list each data collection with its event count, in the iteration order of Java's ``HashMap``
  (`string_hashmap_order`); ``ts_ms`` is the transaction's commit time;
- each emitted event carries a ``transaction`` block ``{"id", "total_order",
  "data_collection_order"}``: its position among the transaction's events and among those of
  its data collection, from 1.

What differs between connectors is the id, always text, which each connector builds:

- MySQL/MariaDB: the GTID, else ``file=<binlog file>,pos=<BEGIN position>``
  (`cdc_sources.mysql.transactions.transaction_id`);
- SQL Server: the commit LSN, ``00000025:00000d08:0025``;
- PostgreSQL: ``<xid>:<LSN>`` with the LSN of the message carrying the id: BEGIN's, each
  event's own, COMMIT's. Its ids differ within one transaction, so it passes ``tx_id`` to
  `TransactionTracker.block` and `TransactionTracker.end_record`.

Columnar paths that render a run of events' blocks themselves take the run's first counters
from `TransactionTracker.next_orders` and report the run with `TransactionTracker.count`.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from cdc_sources.common.envelope import dumps
from cdc_sources.common.javacompat import string_hashmap_order
from cdc_sources.spi import ChangeRecord

__all__ = ["DataCollectionCount", "TransactionBlock", "TransactionEvent", "TransactionTracker"]

# The three shapes below are typed dicts: one is made per event and serialised at once, and a
# dict is made and serialised by orjson several times faster than a dataclass. Their key order
# is the order of the fields on the wire.


class TransactionBlock(TypedDict):
    """The ``transaction`` block of one event."""

    id: str
    total_order: int
    data_collection_order: int


class DataCollectionCount(TypedDict):
    """One entry of END's ``data_collections``."""

    data_collection: str
    event_count: int


class TransactionEvent(TypedDict):
    """The value of a BEGIN or END record, in Debezium's field order."""

    status: Literal["BEGIN", "END"]
    id: str
    event_count: int | None
    data_collections: list[DataCollectionCount] | None
    ts_ms: int


class TransactionTracker:
    """Counts the emitted events of the current transaction and writes its BEGIN and END.

    Not thread-safe. ``id`` is the current transaction's id (as given to `begin`).
    """

    def __init__(self, *, topic: str) -> None:
        self.topic = topic
        self.id = ""
        self._ts_ms = 0
        self._total = 0
        self._per_collection: dict[str, int] = {}
        self._begun = False

    def begin(self, tx_id: str, ts_ms: int) -> None:
        """A new transaction, committed at ``ts_ms`` (nothing is written until its first event)."""
        self.id, self._ts_ms, self._total, self._per_collection, self._begun = tx_id, ts_ms, 0, {}, False

    def needs_begin(self) -> bool:
        """Whether the transaction's BEGIN record is still to be written (before its first event)."""
        return not self._begun

    def begin_record(self, order: tuple[int, ...], position: str) -> ChangeRecord:
        """The BEGIN record; call it once, when `needs_begin`."""
        if self._begun:
            raise RuntimeError(f"the BEGIN record of transaction {self.id} was already written")
        self._begun = True
        event: TransactionEvent = {"status": "BEGIN", "id": self.id, "event_count": None, "data_collections": None,
                                   "ts_ms": self._ts_ms}
        return self._record(event, order, position)

    def block(self, data_collection: str, *, tx_id: str | None = None) -> TransactionBlock:
        """The ``transaction`` block of the next event of ``data_collection``, which counts it.

        ``tx_id``: the id this event carries, when it is not the transaction's (PostgreSQL).
        """
        self._total = total = self._total + 1
        self._per_collection[data_collection] = in_collection = self._per_collection.get(data_collection, 0) + 1
        return {"id": self.id if tx_id is None else tx_id, "total_order": total, "data_collection_order": in_collection}

    def next_orders(self, data_collection: str) -> tuple[int, int]:
        """``total_order`` and ``data_collection_order`` the next event of ``data_collection`` gets."""
        return self._total + 1, self._per_collection.get(data_collection, 0) + 1

    def count(self, data_collection: str, events: int) -> None:
        """Count ``events`` events of ``data_collection`` whose blocks were rendered elsewhere
        (numbered from `next_orders`)."""
        self._total += events
        self._per_collection[data_collection] = self._per_collection.get(data_collection, 0) + events

    def end_record(self, order: tuple[int, ...], position: str, *, tx_id: str | None = None,
                   ts_ms: int | None = None) -> ChangeRecord | None:
        """The END record, or None when the transaction emitted nothing (no BEGIN was written).

        ``tx_id``: the id END carries, when it is not the transaction's (PostgreSQL).
        ``ts_ms``: END's time, when it is not BEGIN's (Oracle: the transaction's start).
        """
        if not self._begun:
            return None
        self._begun = False
        collections: list[DataCollectionCount] = [
            {"data_collection": name, "event_count": self._per_collection[name]}
            for name in string_hashmap_order(self._per_collection)]
        event: TransactionEvent = {"status": "END", "id": self.id if tx_id is None else tx_id,
                                   "event_count": self._total, "data_collections": collections,
                                   "ts_ms": self._ts_ms if ts_ms is None else ts_ms}
        return self._record(event, order, position)

    def _record(self, event: TransactionEvent, order: tuple[int, ...], position: str) -> ChangeRecord:
        return ChangeRecord(self.topic, dumps({"id": event["id"]}), dumps(event), None, position, order)
