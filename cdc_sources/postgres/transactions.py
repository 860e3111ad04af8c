"""Transaction metadata (``provide.transaction.metadata``): BEGIN/END records and the
``transaction`` block of each event, as Debezium's PostgreSQL connector writes them.

Observed on Debezium 3.6 (``tests/cases/postgres/debezium_samples.jsonl``):

* BEGIN is emitted just before a transaction's first emitted event, END after its COMMIT;
  transactions with no captured events produce neither.
* ids are ``<xid>:<LSN>`` where the LSN is that of the message carrying it: the BEGIN's
  (the first change), each event's own, and the COMMIT's. So ids differ within one
  transaction; use ``source.txId`` to group events.
* END's ``data_collections`` lists tables in Java ``HashMap`` iteration order, reproduced
  by `java_hashmap_order`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import orjson

from cdc_sources.common.javacompat import string_hashmap_order as java_hashmap_order
from cdc_sources.spi import ChangeRecord


class TransactionTracker:
    """Counts the events of the current transaction. Not thread-safe."""

    def __init__(self, *, topic: str) -> None:
        self.topic = topic
        self._xid = 0
        self._begin_lsn = 0
        self._ts_ms = 0
        self._total = 0
        self._per_table: dict[str, int] = {}
        self._begun = False

    def begin(self, xid: int, begin_lsn: int, commit_ts_us: int) -> None:
        self._xid, self._begin_lsn, self._ts_ms = xid, begin_lsn, commit_ts_us // 1000
        self._total = 0
        self._per_table = {}
        self._begun = False

    def needs_begin(self) -> bool:
        return not self._begun

    def begin_records(self, order: tuple[int, ...], position: str) -> Iterator[ChangeRecord]:
        self._begun = True
        tx_id = f"{self._xid}:{self._begin_lsn}"
        value = {"status": "BEGIN", "id": tx_id, "event_count": None, "data_collections": None,
                 "ts_ms": self._ts_ms}
        yield self._record(tx_id, value, order, position)

    def block(self, table: str, lsn: int) -> dict[str, object]:
        """The ``transaction`` block of the next event of ``table`` at ``lsn``."""
        self._total += 1
        n = self._per_table.get(table, 0) + 1
        self._per_table[table] = n
        return {"id": f"{self._xid}:{lsn}", "total_order": self._total, "data_collection_order": n}

    def next_orders(self, table: str) -> tuple[int, int]:
        """``total_order`` and ``data_collection_order`` the next event of ``table`` will get."""
        return self._total + 1, self._per_table.get(table, 0) + 1

    def count(self, table: str, events: int) -> None:
        """Count ``events`` events of ``table`` whose blocks were rendered elsewhere (`next_orders`)."""
        self._total += events
        self._per_table[table] = self._per_table.get(table, 0) + events

    def end(self, commit_lsn: int, order: tuple[int, ...], position: str) -> Iterator[ChangeRecord]:
        if not self._begun:
            return
        self._begun = False
        tx_id = f"{self._xid}:{commit_lsn}"
        collections = [{"data_collection": t, "event_count": self._per_table[t]}
                       for t in java_hashmap_order(self._per_table)]
        value = {"status": "END", "id": tx_id, "event_count": self._total, "data_collections": collections,
                 "ts_ms": self._ts_ms}
        yield self._record(tx_id, value, order, position)

    def _record(self, tx_id: str, value: Mapping[str, object], order: tuple[int, ...],
                position: str) -> ChangeRecord:
        return ChangeRecord(self.topic, orjson.dumps({"id": tx_id}).decode(), orjson.dumps(value).decode(), None,
                            position, order, None)
