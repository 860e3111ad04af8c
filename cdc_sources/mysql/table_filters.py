"""Filters that leave no table to capture, checked before the snapshot.

A ``table.include.list`` or ``database.include.list`` that names nothing on the server (a typo,
the wrong database) would otherwise snapshot nothing and stream nothing, silently. The check
runs when a snapshot starts (data or structure only) and the message names the filters, their
values and the tables that exist in the databases they name (the shared message of
`cdc_sources.common.filters.no_table_matches`).

A database filter alone that names an existing database without tables is no error: tables
created there later are captured, as in Debezium.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cdc_sources.common.filters import no_table_matches
from cdc_sources.mysql import connection
from cdc_sources.mysql.errors import NoTableMatchesError
from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.options import BUILTIN_DATABASES

__all__ = ["check_tables_match", "no_match_message"]

_DATABASE_FILTERS = ("database.include.list", "database.exclude.list")
_TABLE_FILTERS = ("table.include.list", "table.exclude.list")


def no_match_message(options: Mapping[str, str], databases: Sequence[str], tables: Sequence[TableId],
                     captures_database: Callable[[str], bool], captures: Callable[[TableId], bool]) -> str | None:
    """The error message when the filters leave no table to capture, else None.

    Args:
        options: the connector's raw options.
        databases: every non-system database on the server.
        tables: every base table of those databases.
        captures_database: the database filter.
        captures: the table filter (database and table lists).
    """
    given = [n for n in (*_DATABASE_FILTERS, *_TABLE_FILTERS) if str(options.get(n) or "").strip()]
    if not given or any(captures(t) for t in tables):
        return None
    table_filter = any(n in given for n in _TABLE_FILTERS)
    if not table_filter and any(captures_database(d) for d in databases):
        return None  # captured databases without tables yet: their new tables are captured
    return no_table_matches(options, [(t.database, t.table) for t in tables], container="database",
                            containers=databases)


def check_tables_match(conn: Any, options: Mapping[str, str], captures_database: Callable[[str], bool],
                       captures: Callable[[TableId], bool]) -> None:
    """Raise when the filters leave no table on the server to capture (see `no_match_message`).

    Raises:
        NoTableMatchesError: naming the filters and the tables there are.
    """
    databases = [str(d) for (d,) in connection.query_rows(conn, "SELECT schema_name FROM information_schema.schemata")
                 if str(d) not in BUILTIN_DATABASES]
    rows = connection.query_rows(
        conn, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'")
    tables = [TableId(str(d), str(t)) for d, t in rows if str(d) not in BUILTIN_DATABASES]
    message = no_match_message(options, databases, tables, captures_database, captures)
    if message is not None:
        raise NoTableMatchesError(message)
