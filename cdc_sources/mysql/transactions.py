"""Transaction metadata for MySQL/MariaDB (``provide.transaction.metadata``).

Debezium's binlog connectors use one id for the whole transaction: the GTID when the server
writes GTIDs (always on MariaDB), else ``file=<binlog file>,pos=<BEGIN position>``. BEGIN is
written before the transaction's first emitted event and END after its commit; transactions
with no captured event produce neither. END's ``data_collections`` follow Java ``HashMap`` order.
"""

from __future__ import annotations

from collections.abc import Iterator

from cdc_sources.common.envelope import dumps
from cdc_sources.common.javacompat import string_hashmap_order as java_hashmap_order
from cdc_sources.spi import ChangeRecord


def transaction_id(gtid: str | None, file: str, begin_pos: int) -> str:
    """The transaction id Debezium writes."""
    return gtid if gtid else f"file={file},pos={begin_pos}"


class TransactionTracker:
    """Counts the emitted events of the current transaction. Not thread-safe."""

    def __init__(self, *, topic: str) -> None:
        self.topic = topic
        self._id = ""
        self._ts_ms = 0
        self._total = 0
        self._per_table: dict[str, int] = {}
        self._begun = False

    def begin(self, tx_id: str, ts_ms: int) -> None:
        self._id, self._ts_ms = tx_id, ts_ms
        self._total = 0
        self._per_table = {}
        self._begun = False

    def begin_record(self, order: tuple[int, ...], position: str) -> ChangeRecord | None:
        """The BEGIN record, once, before the first event of the transaction."""
        if self._begun:
            return None
        self._begun = True
        value = {"status": "BEGIN", "id": self._id, "event_count": None, "data_collections": None,
                 "ts_ms": self._ts_ms}
        return ChangeRecord(self.topic, dumps({"id": self._id}), dumps(value), None, position, order)

    def block(self, data_collection: str) -> dict[str, object]:
        """The ``transaction`` block of the next event of ``data_collection`` (``db.table``)."""
        self._total += 1
        n = self._per_table.get(data_collection, 0) + 1
        self._per_table[data_collection] = n
        return {"id": self._id, "total_order": self._total, "data_collection_order": n}

    def end_records(self, order: tuple[int, ...], position: str) -> Iterator[ChangeRecord]:
        """The END record, if the transaction emitted anything."""
        if not self._begun:
            return
        self._begun = False
        collections = [{"data_collection": t, "event_count": self._per_table[t]}
                       for t in java_hashmap_order(self._per_table)]
        value = {"status": "END", "id": self._id, "event_count": self._total, "data_collections": collections,
                 "ts_ms": self._ts_ms}
        yield ChangeRecord(self.topic, dumps({"id": self._id}), dumps(value), None, position, order)
