"""When the batches of tables read at once leave, so that their ``source.snapshot`` markers are known.

Debezium's markers depend on what follows a row: ``last_in_data_collection`` needs the end of
its table, ``last`` the end of the whole snapshot. With tables read one after another a
one-batch look-ahead settles both; with tables read at once (``snapshot.max.threads`` > 1) a
table can end while others still copy, and whether its final row is the snapshot's ``last``
depends on whether any other table still has rows. `EmissionOrder` holds back:

* each open table's newest batch, until the table's next batch or its end arrives (is it the
  table's final batch?);
* the final batch of a finished table while no other table has a batch waiting, until a batch of
  another table arrives (then it is ``last_in_data_collection``) or every table has ended (then
  it is ``last``; Debezium also marks the very last row ``last`` when the tables after it are
  empty).

So at most one batch per open table plus one final batch are held. ``first`` and
``first_in_data_collection`` need no look-ahead: they follow from the order of emission.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Release:
    """A batch (or the end of an empty table) that may leave now.

    Attributes:
        table: the table's index.
        batch: the rows, or None for the end of a table that had none.
        table_end: this is the table's last batch: the table is done once it has left.
        last: these are the snapshot's last rows.
    """

    table: int
    batch: Any
    table_end: bool
    last: bool


class EmissionOrder:
    """Decides when each table's batches leave; see the module text. Not thread-safe.

    ``in_table_order``: tables are read one after another (one snapshot thread); the end of an
    empty table that comes while a final batch is held leaves after it, so tables end in order.
    """

    def __init__(self, *, in_table_order: bool = False) -> None:
        self._newest: dict[int, Any] = {}
        self._final: Release | None = None
        self._in_table_order = in_table_order
        self._after_final: list[Release] = []

    def batch(self, table: int, batch: Any) -> list[Release]:
        """A non-empty batch of ``table`` arrived; returns what may leave now."""
        out = self._release_final()  # rows follow it: the held final batch is not the snapshot's last
        previous = self._newest.get(table)
        if previous is not None:
            out.append(Release(table, previous, table_end=False, last=False))
        self._newest[table] = batch
        return out

    def end(self, table: int) -> list[Release]:
        """``table`` has no more rows; returns what may leave now."""
        final = self._newest.pop(table, None)
        if final is None:
            empty = Release(table, None, table_end=True, last=False)
            if self._in_table_order and self._final is not None:
                self._after_final.append(empty)
                return []
            return [empty]
        if self._newest:  # another table has rows waiting: this is not the snapshot's last batch
            return [Release(table, final, table_end=True, last=False)]
        self._final = Release(table, final, table_end=True, last=False)
        return []

    def finish(self) -> list[Release]:
        """Every table has ended; returns the rest (the snapshot's last batch)."""
        if self._newest:
            raise ValueError(f"tables {sorted(self._newest)} have not ended")
        return self._release_final(last=True)

    def _release_final(self, *, last: bool = False) -> list[Release]:
        final, self._final = self._final, None
        if final is None:
            return []
        after, self._after_final = self._after_final, []
        return [Release(final.table, final.batch, table_end=True, last=last), *after]
