"""The SQL Server connector's signal tables: ``signal.data.collection`` as ``<database>.<schema>.<table>``.

As in Debezium, a signal table is a table of a captured database with change data capture
enabled on it: signals (``execute-snapshot``, ``stop-snapshot``, ``pause-snapshot``, ...) and the
incremental snapshot's watermarks reach the connector as its change rows, through the capture
job, like any change. It is captured whatever ``table.include.list`` says.

With several databases in ``database.names`` the option is a comma-separated list with at most
one signal table per database, as Debezium 3.6 reads it for its multi-partition connectors: each
database is signalled through its own table, its incremental snapshots write their watermarks
there and keep their progress in that database's offset. A database without a signal table
takes no signals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.common.signals import parse_collection
from cdc_sources.spi import ConfigProblem

__all__ = ["SignalTable", "parse_signal_tables", "signal_table_for"]

OPTION = "signal.data.collection"


@dataclass(frozen=True)
class SignalTable:
    """The signal table: its database (as ``database.names`` spells it), schema and table."""

    database: str
    schema: str
    table: str

    @property
    def text(self) -> str:
        return f"{self.database}.{self.schema}.{self.table}"


def signal_table_for(tables: Sequence[SignalTable], database: str | None) -> SignalTable | None:
    """The signal table of ``database`` (case-insensitive, as SQL Server's names); with one
    database (``database`` None) the only one."""
    if database is None:
        return tables[0] if len(tables) == 1 else None
    return next((t for t in tables if t.database.lower() == database.lower()), None)


def parse_signal_tables(raw: Mapping[str, Any], databases: Sequence[str],
                        path: str) -> tuple[tuple[SignalTable, ...], list[ConfigProblem]]:
    """The signal tables ``raw`` names (none when unset), or the problems with them (``path``: the options' path)."""
    text = raw.get(OPTION)
    if text is None or not str(text).strip():
        return (), []
    where = f"{path}.{OPTION}"
    known = {d.lower(): d for d in databases}
    out: list[SignalTable] = []
    problems: list[ConfigProblem] = []
    for item in (i.strip() for i in str(text).split(",")):
        if not item:
            continue
        try:
            name = parse_collection(item)
        except ValueError as exc:
            problems.append(ConfigProblem(where, str(exc)))
            continue
        parts = name.parts if name.quoted else tuple(name.text.split("."))  # unquoted: every dot separates
        if len(parts) != 3 or not all(parts):
            problems.append(ConfigProblem(where, f"must be <database>.<schema>.<table> (the table in one of "
                                                 f"database.names, with change data capture enabled), got {item!r}"))
            continue
        database, schema, table = parts
        if databases and database.lower() not in known:
            problems.append(ConfigProblem(where, f"names database {database!r}, which is not in database.names "
                                                 f"({', '.join(databases)})"))
            continue
        if any(t.database.lower() == database.lower() for t in out):
            problems.append(ConfigProblem(where, f"names two signal tables of database {database!r}: give each "
                                                 "database at most one"))
            continue
        out.append(SignalTable(known.get(database.lower(), database), schema, table))
    if len(out) > 1 and len(databases) <= 1:
        problems.append(ConfigProblem(where, "names several signal tables, but the source captures one database"))
    return (tuple(out), []) if not problems else ((), problems)
