"""Which databases a signal is for, when a SQL Server source captures several.

Each database of ``database.names`` with a signal table runs its own signals and incremental
snapshots (`cdc_sources.sqlserver.signal_table`): a signal inserted into a database's signal
table reaches that database only, as in Debezium. A signal that arrives another way, through the
``file`` channel or from ``cdc-lakehouse signal``, goes to the databases it names: the first part
of each ``<database>.<schema>.<table>`` in its ``data-collections``. A signal that names no table
(``pause-snapshot``, ``resume-snapshot``, ``log``, a ``stop-snapshot`` of everything), or a name
that is a regular expression not spelling a database, goes to every database with a signal
table; each database acts only on its own tables.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from cdc_sources.common.incremental_snapshot import read_signal_file
from cdc_sources.common.signal_options import SignalSettings
from cdc_sources.common.signals import (
    CollectionName,
    ExecuteSnapshot,
    Signal,
    SignalError,
    StopSnapshot,
    Watermark,
    parse_signal_line,
)

__all__ = ["FileSignals", "signal_databases"]

log = logging.getLogger(__name__)


def _database_of(name: CollectionName, databases: Sequence[str]) -> str | None:
    """The database a ``data-collections`` entry names, when it spells one of ``databases``."""
    parts = name.parts if name.quoted else tuple(name.text.split("."))
    if len(parts) != 3:
        return None
    return next((d for d in databases if d.lower() == parts[0].lower()), None)


def signal_databases(signal: Signal, databases: Sequence[str]) -> list[str]:
    """The databases (of ``databases``, those with a signal table, in their order) ``signal`` is for."""
    action = signal.action
    names = action.collections if isinstance(action, ExecuteSnapshot | StopSnapshot) else ()
    if not names:
        return list(databases)
    named = [_database_of(n, databases) for n in names]
    if any(d is None for d in named):
        return list(databases)
    return [d for d in databases if d in named]


@dataclass
class FileSignals:
    """The ``file`` channel of a several-database source: read once for all databases, at most
    every ``signal.poll.interval.ms`` (each database's own reader would take the lines from the others)."""

    settings: SignalSettings
    _last: float = field(default=float("-inf"))

    def take(self, *, force: bool = False) -> list[Signal]:
        """The signals appended since the last read (none when the channel is off or not due)."""
        if not self.settings.file_enabled:
            return []
        now = time.monotonic()
        if not force and now - self._last < self.settings.poll_interval_s:
            return []
        self._last = now
        out = []
        for n, line in read_signal_file(self.settings.file):
            try:
                signal = parse_signal_line(line, where=f"{self.settings.file}:{n}")
            except SignalError as exc:
                log.warning("%s: ignored", exc)
                continue
            if isinstance(signal.action, Watermark):
                log.warning("%s:%d: watermarks come only from the signal table: ignored", self.settings.file, n)
                continue
            out.append(signal)
        return out
