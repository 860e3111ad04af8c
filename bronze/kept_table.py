"""A Delta table kept open between a writer's commits, opened afresh every so many commits.

Committing through an open `DeltaTable` costs the new version's conditional put and a read of
that one version, where a commit by path reloads the log from its last checkpoint (on an object
store, a GET per commit file since then). But the open table's in-memory state grows with every
commit it makes, and its commits slow down with it (`bench/offsets_commit_memory_bench.py`,
`bench/bronze_commit_memory_bench.py`): opened afresh every `REOPEN_EVERY` commits, it stays small.

The table is only ever opened afresh in `KeptTable.get`, which a writer calls before a commit,
never during one: what a commit wrote is in the log by then, so the fresh table starts from it.

A writer that commits without the table (`bronze.log_append`) says so with `KeptTable.behind`:
the next `get` reads the versions it missed first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

__all__ = ["REOPEN_EVERY", "KeptTable"]

REOPEN_EVERY = 100
"""Commits through one open `DeltaTable` before it is opened afresh."""


@dataclass
class KeptTable:
    """One Delta table, kept open between commits (see module doc).

    Attributes:
        path: the table's path or URI.
        storage_options: passed to delta-rs for object stores.
        reopen_every: commits (`committed` calls) before the next `get` opens the table afresh;
            None: never.
    """

    path: str
    storage_options: dict[str, str] | None = None
    reopen_every: int | None = REOPEN_EVERY
    _table: DeltaTable | None = field(default=None, init=False)
    _commits: int = field(default=0, init=False)
    _behind: bool = field(default=False, init=False)

    def get(self) -> DeltaTable | None:
        """The open table, opened afresh when due, up to date with the commits made without it
        (`behind`); None if it does not exist (yet)."""
        if self._table is not None and (self.reopen_every is None or self._commits < self.reopen_every):
            if self._behind:
                self._table.update_incremental()
                self._behind = False
            return self._table
        self.forget()
        try:
            self._table = DeltaTable(self.path, storage_options=self.storage_options)
        except TableNotFoundError:
            return None
        return self._table

    def committed(self) -> None:
        """Count a commit made through the table `get` returned."""
        self._commits += 1

    def behind(self) -> None:
        """Count a commit made without the table: the next `get` reads the log up to it."""
        self._commits += 1
        self._behind = True

    def forget(self) -> None:
        """Drop the open table: the next `get` opens it afresh."""
        self._table, self._commits, self._behind = None, 0, False
