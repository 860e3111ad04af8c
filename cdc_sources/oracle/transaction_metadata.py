"""Transaction metadata for Oracle (``provide.transaction.metadata``), through the shared tracker
(`cdc_sources.common.transactions`), with what Debezium 3.6.3's Oracle connector puts in it:

- the id is the transaction's ``XID``, 16 lower-case hex digits (``source.txId``: Oracle's
  ``EventMetadataProvider`` reads it from there);
- BEGIN goes before the transaction's first emitted event, with that event's ``source.ts_ms``
  (Debezium's transaction monitor takes BEGIN's time from the event that opens it);
- END goes after its last event, at the commit, with the time of the transaction's first row (its
  ``START``; Debezium's buffered adapter passes its transaction's change time, not the commit's);
- each data collection is ``<database>.<OWNER>.<TABLE>`` (the ``TableId`` identifier, the database
  being ``database.pdb.name`` when set, else ``database.dbname``);
- each emitted event but a tombstone carries the ``transaction`` block and is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from cdc_sources.common.transactions import TransactionBlock, TransactionTracker
from cdc_sources.oracle.envelope import EventKind, OracleRecord, utc_ms
from cdc_sources.oracle.transactions import CommittedTransaction
from cdc_sources.spi import ChangeRecord

__all__ = ["OracleTransactionMetadata", "TransactionRecords"]


@dataclass(frozen=True, slots=True)
class TransactionRecords:
    """A transaction's BEGIN and END records (None when it emitted no event) and each record's block."""

    begin: ChangeRecord | None
    blocks: tuple[TransactionBlock | None, ...]
    end: ChangeRecord | None


class OracleTransactionMetadata:
    """Writes BEGIN/END on ``topic`` (``<topic.prefix><topic.delimiter><topic.transaction>``)."""

    def __init__(self, *, topic: str, database: str) -> None:
        self._tracker = TransactionTracker(topic=topic)
        self._database = database

    def records(self, tx: CommittedTransaction, made: Sequence[OracleRecord], *, position: str,
                order: tuple[int, int]) -> TransactionRecords:
        """The metadata of one committed transaction's records ``made`` (in their order).

        ``order`` is the transaction's place in the stream (commit SCN, rank at that SCN): BEGIN
        and END are ordered ``(*order, 0)`` and ``(*order, 1)`` on the transaction topic."""
        tracker = self._tracker
        begin: ChangeRecord | None = None
        blocks: list[TransactionBlock | None] = []
        for rec in made:
            if rec.kind is EventKind.TOMBSTONE or rec.value is None:
                blocks.append(None)
                continue
            if begin is None:
                tracker.begin(tx.xid, int(rec.value["source"]["ts_ms"]))
                begin = tracker.begin_record((*order, 0), position)
            blocks.append(tracker.block(f"{self._database}.{rec.table.schema}.{rec.table.name}"))
        end = None
        if begin is not None:
            start = tx.start_time if tx.start_time is not None else tx.commit_time
            # Debezium passes the transaction's change time as read (no database offset applied)
            end = tracker.end_record((*order, 1), position, ts_ms=utc_ms(start, timedelta(0)))
        return TransactionRecords(begin, tuple(blocks), end)
