"""Transaction metadata of the SQL Server connector (``provide.transaction.metadata``).

As Debezium's SQL Server connector writes it:

- a transaction's id is its commit LSN (``__$start_lsn``) as text, ``00000025:00000d08:0025``,
  the same in BEGIN, END and the ``transaction`` block of each of its events;
- BEGIN goes before the transaction's first emitted event, END after its last one, on the
  topic ``<topic.prefix>.<topic.transaction>``, keyed ``{"id": ...}``; a transaction with no
  emitted event (every change filtered or skipped) has neither;
- each event's block is ``{"id", "total_order", "data_collection_order"}``: its position among
  the transaction's events and among those of its table, from 1 (tombstones are not counted);
- END's ``data_collections`` are ``<database>.<schema>.<table>`` with their event counts, in
  the iteration order of Java's ``HashMap`` (`string_hashmap_order`);
- BEGIN and END carry the transaction's commit time as ``ts_ms``.
"""

from __future__ import annotations

from cdc_sources.common.envelope import dumps
from cdc_sources.common.javacompat import string_hashmap_order
from cdc_sources.spi import ChangeRecord

__all__ = ["TransactionTracker"]


class TransactionTracker:
    """Counts the emitted events of the current transaction. Not thread-safe."""

    def __init__(self, *, topic: str) -> None:
        self.topic = topic
        self.id = ""
        self._ts_ms = 0
        self._total = 0
        self._per_table: dict[str, int] = {}
        self._begun = False

    def begin(self, tx_id: str, ts_ms: int) -> None:
        """A new transaction (nothing is written until its first event)."""
        self.id, self._ts_ms, self._total, self._per_table, self._begun = tx_id, ts_ms, 0, {}, False

    def begin_record(self, order: tuple[int, ...], position: str) -> ChangeRecord | None:
        """The BEGIN record, once, before the transaction's first event."""
        if self._begun:
            return None
        self._begun = True
        value = {"status": "BEGIN", "id": self.id, "event_count": None, "data_collections": None,
                 "ts_ms": self._ts_ms}
        return ChangeRecord(self.topic, dumps({"id": self.id}), dumps(value), None, position, order)

    def block(self, data_collection: str) -> dict[str, object]:
        """The ``transaction`` block of the next event of ``data_collection``."""
        self._total += 1
        n = self._per_table[data_collection] = self._per_table.get(data_collection, 0) + 1
        return {"id": self.id, "total_order": self._total, "data_collection_order": n}

    def end_record(self, order: tuple[int, ...], position: str) -> ChangeRecord | None:
        """The END record, if the transaction emitted anything."""
        if not self._begun:
            return None
        self._begun = False
        collections = [{"data_collection": t, "event_count": self._per_table[t]}
                       for t in string_hashmap_order(self._per_table)]
        value = {"status": "END", "id": self.id, "event_count": self._total, "data_collections": collections,
                 "ts_ms": self._ts_ms}
        return ChangeRecord(self.topic, dumps({"id": self.id}), dumps(value), None, position, order)
