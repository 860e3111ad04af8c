"""Sessions that fold the checkpoints of consecutive source transactions, bounded by the batch size.

A stream reader may hand several consecutive transactions over with one checkpoint after the
last (`Checkpoint.transactions` counts them): one-row transactions then do not cost a
checkpoint per row downstream. The coordinator cuts a batch once it holds ``commit_max_records``
records, and only a checkpoint inside the batch lets it store and acknowledge a transaction end;
a session that folds is a `FoldsTransactions` and is told that size, so that it folds far fewer
records than a batch holds (small batches then keep a checkpoint per transaction).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["FoldsTransactions"]


@runtime_checkable
class FoldsTransactions(Protocol):
    """A capture session whose stream folds the checkpoints of consecutive transactions."""

    def fold_transactions(self, batch_records: int) -> None:
        """Fold at most about half of ``batch_records`` records (the coordinator's batch size) under one checkpoint."""
        ...
