"""The statements of Oracle incremental snapshots, built as gateway `Statement` s with their bind values.

A chunk is read in key order with a keyset predicate written out column by column (Oracle
compares row values only for equality): rows above the last chunk's key,
``("K1" > ?) OR ("K1" = ? AND "K2" > ?)``, and not above the table's largest key at the start,
``("K1" < ?) OR ("K1" = ? AND "K2" < ?) OR ("K1" = ? AND "K2" = ?)``, with the signal's
``additional-conditions`` filter, ``ORDER BY`` the key and ``FETCH FIRST n ROWS ONLY`` (Oracle 12c
and later). Watermarks are inserted into the signal table as ``(id, type, data)`` and looked up by
its first column (Debezium reads the signal table's columns by position). Identifiers are
double-quoted; values are bound, never spliced; the ``additional-conditions`` text is the user's
SQL, spliced as Debezium does.
"""

from __future__ import annotations

from collections.abc import Sequence

from cdc_sources.oracle.gateway import Statement, StatementKind, quote

__all__ = ["chunk_select", "max_key_select", "signal_delete", "signal_insert", "signal_read"]


def _table(owner: str, table: str) -> str:
    return f"{quote(owner)}.{quote(table)}"


def _keyset(key: Sequence[str], values: Sequence[object], last: str, inclusive: bool) -> tuple[str, list[object]]:
    """``key`` compared lexicographically with ``values``: ``last`` (``>`` or ``<``) on the first
    differing column, or (``inclusive``) equal on every column."""
    terms: list[str] = []
    params: list[object] = []
    for i in range(len(key)):
        eq = [f"{quote(k)} = ?" for k in key[:i]]
        terms.append("(" + " AND ".join([*eq, f"{quote(key[i])} {last} ?"]) + ")")
        params.extend([*values[:i], values[i]])
    if inclusive:
        terms.append("(" + " AND ".join(f"{quote(k)} = ?" for k in key) + ")")
        params.extend(values)
    return "(" + " OR ".join(terms) + ")", params


def chunk_select(owner: str, table: str, columns: Sequence[str], key: Sequence[str], after: Sequence[object] | None,
                 upto: Sequence[object] | None, condition: str | None,
                 size: int | None) -> tuple[Statement, list[object]]:
    """Up to ``size`` rows (None: all) of ``columns`` with a key above ``after`` and at most ``upto``
    (None: no bound), in key order; the statement and its bind values."""
    if not columns or not key:
        raise ValueError(f"table {owner}.{table}: a chunk needs columns and a key")
    where: list[str] = []
    params: list[object] = []
    if after is not None:
        sql, p = _keyset(key, after, ">", inclusive=False)
        where.append(sql)
        params.extend(p)
    if upto is not None:
        sql, p = _keyset(key, upto, "<", inclusive=True)
        where.append(sql)
        params.extend(p)
    if condition:
        where.append(f"({condition})")
    text = (f"SELECT {', '.join(quote(c) for c in columns)} FROM {_table(owner, table)}"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY " + ", ".join(quote(k) for k in key)
            + ("" if size is None else f" FETCH FIRST {int(size)} ROWS ONLY"))
    return Statement(StatementKind.CHUNK_SELECT, text, len(params)), params


def max_key_select(owner: str, table: str, key: Sequence[str], condition: str | None) -> Statement:
    """The largest key of the rows matching ``condition``."""
    where = f" WHERE ({condition})" if condition else ""
    return Statement(StatementKind.MAX_KEY,
                     f"SELECT {', '.join(quote(k) for k in key)} FROM {_table(owner, table)}{where} ORDER BY "
                     + ", ".join(f"{quote(k)} DESC" for k in key) + " FETCH FIRST 1 ROWS ONLY")


def signal_insert(owner: str, table: str) -> Statement:
    """One signal-table row (bind: id, type, data)."""
    return Statement(StatementKind.SIGNAL_INSERT, f"INSERT INTO {_table(owner, table)} VALUES (?, ?, ?)", 3)


def signal_delete(owner: str, table: str, id_column: str) -> Statement:
    """The signal-table row of one id, deleted (bind: the id)."""
    return Statement(StatementKind.SIGNAL_DELETE, f"DELETE FROM {_table(owner, table)} WHERE {quote(id_column)} = ?", 1)


def signal_read(owner: str, table: str, id_column: str) -> Statement:
    """The signal-table rows of two ids (bind: both ids)."""
    return Statement(StatementKind.SIGNAL_READ,
                     f"SELECT * FROM {_table(owner, table)} WHERE {quote(id_column)} IN (?, ?)", 2)
