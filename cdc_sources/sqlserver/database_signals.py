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

from collections.abc import Sequence

from cdc_sources.common.signals import CollectionName, ExecuteSnapshot, Signal, StopSnapshot

__all__ = ["signal_databases"]


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


