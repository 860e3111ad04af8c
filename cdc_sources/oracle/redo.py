"""Parses LogMiner ``SQL_REDO`` DML (insert, update, delete) into per-column values.

LogMiner writes each row change as one SQL statement in a fixed shape (with the session NLS
formats the connector sets, see `cdc_sources.oracle.session`)::

    insert into "S"."T"("C1","C2") values ('1',TO_DATE('2020-02-01 00:00:00', 'YYYY-MM-DD HH24:MI:SS'));
    update "S"."T" set "C2" = NULL where "C1" = '1' and "C2" = 'x';
    delete from "S"."T" where "C1" = '1' and "C2" IS NULL;

`parse_redo` returns, for every column of the table in table order, the value LogMiner gave:

- a quoted literal as `str`, with doubled quotes undone (``'Bob''s'`` -> ``Bob's``);
- any other value (``TO_DATE(..)``, ``TO_TIMESTAMP(..)``, ``TO_TIMESTAMP_TZ(..)``,
  ``HEXTORAW(..)``, ``EMPTY_CLOB()``, ``UNISTR(..) || UNISTR(..)``, ...) as `RedoExpr`, a `str`
  holding the expression's text, left for the value converters to evaluate;
- ``NULL``, ``IS NULL`` and ``Unsupported Type`` as ``None``;
- `UNAVAILABLE` for a LOB, XML, JSON or extended-string column that the statement leaves out
  of a before image (LogMiner does not log unchanged LOBs; Debezium emits its placeholder).

An update's after image is its ``set`` values over its before image (the ``where`` values).
This is what Debezium 3.6.3's ``LogMinerDmlParser`` yields, column by column (proved on a
corpus by ``tests/cdc_sources/oracle/test_redo_debezium.py``), with these differences, all
stricter: a statement whose text is not in LogMiner's shape is an error here (Debezium skips
characters it does not expect), and ``'a' || 'b'`` (two quoted literals joined) is kept whole
as an expression where Debezium keeps only ``b``.

Rows of tables missing from LogMiner's dictionary (``"UNKNOWN"."OBJ# 74858"("COL 1",...)``)
parse like any other when the table is given with LogMiner's ``COL n`` column names.

The parser is a handful of compiled regular expressions (no per-character Python loop); see
``bench/oracle_redo_bench.py`` for its speed next to Debezium's.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "UNAVAILABLE",
    "VALUE_PATTERN",
    "DmlKind",
    "RedoColumn",
    "RedoDml",
    "RedoExpr",
    "RedoParseError",
    "RedoTable",
    "RedoValue",
    "Unavailable",
    "parse_redo",
]


class RedoParseError(ValueError):
    """A SQL_REDO statement is not a LogMiner insert, update or delete of the given table."""


class RedoExpr(str):
    """A value LogMiner wrote as an expression (``TO_DATE(..)``, ``HEXTORAW(..)``, ...), as its text."""

    __slots__ = ()


class Unavailable(enum.Enum):
    """The value of a LOB-like column that LogMiner did not log (Debezium's placeholder)."""

    UNAVAILABLE = "__debezium_unavailable_value"


UNAVAILABLE = Unavailable.UNAVAILABLE

RedoValue = str | None | Unavailable
"""One column's value: `str` (a literal) or `RedoExpr` (an expression), None, or `UNAVAILABLE`."""


class DmlKind(enum.Enum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class RedoColumn:
    """A column as the parser needs it: its name and whether a missing value is unavailable."""

    name: str
    unavailable_when_missing: bool = False
    """True for CLOB, NCLOB, BLOB, XMLTYPE, JSON and extended VARCHAR2/NVARCHAR2 columns."""

    @classmethod
    def of_type(cls, name: str, data_type: str, length: int = 0) -> RedoColumn:
        """The column of Oracle type ``data_type`` (``ALL_TAB_COLUMNS.DATA_TYPE``) and byte/char length."""
        kind = data_type.upper()
        unavailable = (kind in _LOB_LIKE or (kind == "VARCHAR2" and length > 4000)
                       or (kind == "NVARCHAR2" and length > 2000))
        return cls(name, unavailable)


@dataclass(frozen=True, slots=True)
class RedoTable:
    """The columns of one table in table order (Debezium's column positions)."""

    columns: tuple[RedoColumn, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)
    _unavailable: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _identity: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _positions: dict[tuple[str, ...], tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _insert_positions: dict[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, int] = {}
        for i, column in enumerate(self.columns):
            index.setdefault(column.name.lower(), i)
        for i, column in enumerate(self.columns):
            index[column.name] = i
        index[_ROW_ARCHIVAL] = -1  # LogMiner writes it, Debezium drops it
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_identity", tuple(range(len(self.columns))))
        object.__setattr__(self, "_positions", {})
        object.__setattr__(self, "_insert_positions", {})
        object.__setattr__(self, "_unavailable",
                           tuple(i for i, c in enumerate(self.columns) if c.unavailable_when_missing))

    @classmethod
    def of(cls, *names: str, unavailable: Sequence[str] = ()) -> RedoTable:
        return cls(tuple(RedoColumn(n, n in unavailable) for n in names))

    def position(self, name: str) -> int:
        """The column's index (-1 for Oracle's hidden row-archival column, which is dropped).

        Names match case-insensitively, as in Debezium's table model."""
        found = self._index.get(name)
        if found is None:
            found = self._index.get(name.lower())
            if found is None:
                raise RedoParseError(f"no column {name!r} in the table")
        return found


class RedoDml(NamedTuple):
    """One parsed row change: `before` for update/delete, `after` for insert/update (else ())."""

    kind: DmlKind
    before: tuple[RedoValue, ...]
    after: tuple[RedoValue, ...]


# Oracle's hidden row-archival column: LogMiner writes it, Debezium drops it.
_ROW_ARCHIVAL = "ORA_ARCHIVE_STATE"

# Types whose unchanged values LogMiner leaves out of a row change.
_LOB_LIKE = frozenset({"CLOB", "NCLOB", "BLOB", "XMLTYPE", "SYS.XMLTYPE", "JSON"})


_Q = r"'[^']*(?:''[^']*)*'"
_P3 = rf"\([^'()]*(?:{_Q}[^'()]*)*\)"
_P2 = rf"\([^'()]*(?:(?:{_Q}|{_P3})[^'()]*)*\)"
_P1 = rf"\([^'()]*(?:(?:{_Q}|{_P2})[^'()]*)*\)"
# One operand: a quoted literal, a function call (up to three nested parentheses), NULL, a number,
# or Oracle's "Unsupported Type" marker; a value is operands joined by ||.
_ATOM = rf"(?:{_Q}|[A-Za-z_][A-Za-z0-9_$#.]*{_P1}|Unsupported Type|[^\s'(),;|]+)"
_EXPR = rf"{_ATOM}(?: *\|\| *{_ATOM})*"
# A value: one quoted literal (first group, quotes included) or an expression (second group).
_VALUE = rf"(?:({_Q})(?! *\|\|)|({_EXPR}))"
VALUE_PATTERN = _VALUE
"""The pattern of one value in LogMiner's statements (two groups: a quoted literal, quotes included,
or an expression), for the parsers of LogMiner's other statement kinds."""
_NAME = r'"[^"]*"'
_TABLE = rf'{_NAME}(?:\.{_NAME})?'
_ALIAS = r"(?: [A-Za-z_][A-Za-z0-9_$#]*)?"

# Each statement is its head (a regular expression) and then its items, read in one pass by
# findall; anything an item does not match lands, one character at a time, in the last group
# ("junk"), which makes the statement an error.
_INSERT_HEAD = re.compile(rf'insert into {_TABLE}\(({_NAME}(?:,{_NAME})*)\) values \(')
_UPDATE_HEAD = re.compile(rf'update {_TABLE}{_ALIAS} set ')
_DELETE_HEAD = re.compile(rf'delete from {_TABLE}{_ALIAS}(?: where |;?\Z)')
_COLS = re.compile(r'"([^"]*)"')
# An insert value and what follows it: "," or the closing ")" (second-to-last group).
_INSERT_ITEM = re.compile(rf"{_VALUE}(?:,|(\));?\Z)|(.)", re.S)
# A set or where item with the separator before it (first group).
_ITEM = re.compile(
    rf'(, | where | and | or |)(?:[A-Za-z_][A-Za-z0-9_$#]*\.)?"([^"]*)" (?:= {_VALUE}|IS NULL)|(.)', re.S)
_NULLS = frozenset({"", "NULL", "Unsupported Type"})


def _positions(table: RedoTable, names: Sequence[str]) -> tuple[int, ...]:
    """Each named column's index in ``table`` (-1: dropped), cached per column list."""
    key = tuple(names)
    found = table._positions.get(key)
    if found is None:
        found = table._positions[key] = tuple(table.position(n) for n in names)
    return found


def _bad(kind: str, sql: str) -> RedoParseError:
    return RedoParseError(f"not a LogMiner {kind}: {sql[:200]!r}")


def _insert(sql: str, table: RedoTable) -> RedoDml:
    m = _INSERT_HEAD.match(sql)
    if m is None:
        raise _bad("insert", sql)
    columns = m.group(1)
    positions = table._insert_positions.get(columns)
    if positions is None:  # the column list of a table's inserts rarely changes: parse it once
        positions = table._insert_positions[columns] = _positions(table, _COLS.findall(columns))
    items = _INSERT_ITEM.findall(sql, m.end())
    if len(items) != len(positions) or not items[-1][2] or any(i[3] or i[2] for i in items[:-1]):
        raise _bad("insert", sql)
    # NULL and "Unsupported Type" are None.
    values: list[RedoValue] = [
        q[1:-1].replace("''", "'") if q else None if e in _NULLS else RedoExpr(e) for q, e, _, _ in items]
    if positions != table._identity:
        row: list[RedoValue] = [None] * len(table.columns)
        for i, v in zip(positions, values, strict=True):
            if i >= 0:
                row[i] = v
        values = row
    return RedoDml(DmlKind.INSERT, (), tuple(values))


def _items(sql: str, start: int, table: RedoTable, kind: str,
           ) -> tuple[list[RedoValue], list[tuple[int, RedoValue]]]:
    """The where-clause row and the set-clause (position, value) pairs from ``sql[start:]``."""
    end = len(sql) - 1 if sql.endswith(";") else len(sql)
    items = _ITEM.findall(sql, start, end)
    before: list[RedoValue] = [None] * len(table.columns)
    sets: list[tuple[int, RedoValue]] = []
    index = table._index
    in_where = kind == "delete"
    first = True
    for sep, name, q, e, junk in items:
        if junk:
            raise _bad(kind, sql)
        if not sep:
            if not first:
                raise _bad(kind, sql)
            first = False
        elif first:
            raise _bad(kind, sql)
        elif sep in {", ", " where "}:
            if in_where:
                raise _bad(kind, sql)
            in_where = sep == " where "
        elif not in_where:  # " and "/" or " in a set clause
            raise _bad(kind, sql)
        i = index.get(name)
        if i is None:
            i = table.position(name)
        if i < 0:
            continue
        # A quoted literal is a str, an expression a RedoExpr; NULL, IS NULL (both empty) and
        # "Unsupported Type" are None, except that "Unsupported Type" in a set clause leaves the
        # before value in place (as Debezium does).
        value = q[1:-1].replace("''", "'") if q else None if e in _NULLS else RedoExpr(e)
        if in_where:
            before[i] = value
        elif e != "Unsupported Type":
            sets.append((i, value))
    if first and kind == "update":
        raise _bad(kind, sql)
    for i in table._unavailable:
        if before[i] is None:
            before[i] = UNAVAILABLE
    return before, sets


def parse_redo(sql: str, table: RedoTable) -> RedoDml:
    """Parse one LogMiner insert, update or delete of ``table``; `RedoParseError` if it is not one."""
    head = sql[:1]
    if head == "i":
        return _insert(sql, table)
    if head == "u":
        m = _UPDATE_HEAD.match(sql)
        if m is None:
            raise _bad("update", sql)
        before, sets = _items(sql, m.end(), table, "update")
        after = list(before)
        for i, value in sets:
            after[i] = value
        return RedoDml(DmlKind.UPDATE, tuple(before), tuple(after))
    if head == "d":
        m = _DELETE_HEAD.match(sql)
        if m is None:
            raise _bad("delete", sql)
        before, _ = _items(sql, m.end(), table, "delete")
        return RedoDml(DmlKind.DELETE, tuple(before), ())
    raise RedoParseError(f"not a LogMiner insert, update or delete: {sql[:200]!r}")
