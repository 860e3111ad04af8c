"""The SQL Server connector's signal table: ``signal.data.collection`` as ``<database>.<schema>.<table>``.

As in Debezium, the signal table is a table of the captured database with change data capture
enabled on it: signals (``execute-snapshot``, ``stop-snapshot``, ``pause-snapshot``, ...) and the
incremental snapshot's watermarks reach the connector as its change rows, through the capture
job, like any change. It is captured whatever ``table.include.list`` says.

Signals and incremental snapshots are built for a source capturing one database: the signal
table names that database. A source with several databases in ``database.names`` is refused
when it names a signal table (each database has its own LSN sequence and offset, and the
snapshot's progress would have to be kept per database): give each database a source of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.common.signals import parse_collection
from cdc_sources.spi import ConfigProblem

__all__ = ["SignalTable", "parse_signal_table"]

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


def parse_signal_table(raw: Mapping[str, Any], databases: Sequence[str],
                       path: str) -> tuple[SignalTable | None, list[ConfigProblem]]:
    """The signal table ``raw`` names (None when none), or the problems with it (``path``: the options' path)."""
    text = raw.get(OPTION)
    if text is None or not str(text).strip():
        return None, []
    where = f"{path}.{OPTION}"
    try:
        name = parse_collection(str(text).strip())
    except ValueError as exc:
        return None, [ConfigProblem(where, str(exc))]
    parts = name.parts if name.quoted else tuple(name.text.split("."))  # unquoted: every dot separates
    if len(parts) != 3 or not all(parts):
        return None, [ConfigProblem(where, f"must be <database>.<schema>.<table> (the table in one of "
                                           f"database.names, with change data capture enabled), got {text!r}")]
    database, schema, table = parts
    known = {d.lower(): d for d in databases}
    if databases and database.lower() not in known:
        return None, [ConfigProblem(where, f"names database {database!r}, which is not in database.names "
                                           f"({', '.join(databases)})")]
    if len(databases) > 1:
        return None, [ConfigProblem(where, "signals and incremental snapshots are built for a source capturing one "
                                           f"database, and database.names lists {len(databases)}: give the "
                                           f"database {database} a source of its own to signal it")]
    return SignalTable(known.get(database.lower(), database), schema, table), []
