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

__all__ = [
    "UNAVAILABLE",
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

    def __post_init__(self) -> None:
        index: dict[str, int] = {}
        for i, column in enumerate(self.columns):
            index.setdefault(column.name.lower(), i)
        for i, column in enumerate(self.columns):
            index[column.name] = i
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_unavailable",
                           tuple(i for i, c in enumerate(self.columns) if c.unavailable_when_missing))

    @classmethod
    def of(cls, *names: str, unavailable: Sequence[str] = ()) -> RedoTable:
        return cls(tuple(RedoColumn(n, n in unavailable) for n in names))

    def position(self, name: str) -> int:
        """The column's index; names match case-insensitively, as in Debezium's table model."""
        found = self._index.get(name)
        if found is None:
            found = self._index.get(name.lower())
            if found is None:
                raise RedoParseError(f"no column {name!r} in the table")
        return found


@dataclass(frozen=True, slots=True)
class RedoDml:
    """One parsed row change: `before` for update/delete, `after` for insert/update (else ())."""

    kind: DmlKind
    before: tuple[RedoValue, ...]
    after: tuple[RedoValue, ...]


# Types whose unchanged values LogMiner leaves out of a row change.
_LOB_LIKE = frozenset({"CLOB", "NCLOB", "BLOB", "XMLTYPE", "SYS.XMLTYPE", "JSON"})

# Oracle's hidden row-archival column: LogMiner writes it, Debezium drops it.
_ROW_ARCHIVAL = "ORA_ARCHIVE_STATE"

_Q = r"'(?:[^']|'')*'"
_P3 = rf"\((?:[^'()]|{_Q})*\)"
_P2 = rf"\((?:[^'()]|{_Q}|{_P3})*\)"
_P1 = rf"\((?:[^'()]|{_Q}|{_P2})*\)"
# One operand: a quoted literal, a function call (up to three nested parentheses), NULL, a number,
# or Oracle's "Unsupported Type" marker; a value is operands joined by ||.
_ATOM = rf"(?:{_Q}|[A-Za-z_][A-Za-z0-9_$#.]*{_P1}|Unsupported Type|[^\s'(),;|]+)"
_EXPR = rf"{_ATOM}(?: *\|\| *{_ATOM})*"
_NAME = r'"[^"]*"'
_TABLE = rf'{_NAME}(?:\.{_NAME})?'
_COLREF = rf'(?:[A-Za-z_][A-Za-z0-9_$#]*\.)?{_NAME}'
_SET_ITEM = rf"{_COLREF} = {_EXPR}"
_WHERE_ITEM = rf"{_COLREF} (?:= {_EXPR}|IS NULL)"
_INS_VALUE = rf"{_EXPR}"

_INSERT = re.compile(
    rf'insert into {_TABLE}\((?P<cols>{_NAME}(?:,{_NAME})*)\) values '
    rf'\((?P<vals>{_INS_VALUE}(?:,{_INS_VALUE})*)\);?', re.S)
_UPDATE = re.compile(
    rf'update {_TABLE}(?: [A-Za-z_][A-Za-z0-9_$#]*)? set (?P<set>{_SET_ITEM}(?:, {_SET_ITEM})*)'
    rf'(?: where (?P<where>{_WHERE_ITEM}(?: (?:and|or) {_WHERE_ITEM})*))?;?', re.S)
_DELETE = re.compile(
    rf'delete from {_TABLE}(?: [A-Za-z_][A-Za-z0-9_$#]*)?'
    rf'(?: where (?P<where>{_WHERE_ITEM}(?: (?:and|or) {_WHERE_ITEM})*))?;?', re.S)

# Extractors run on text the patterns above have validated, so they need no anchoring.
_COLS = re.compile(r'"([^"]*)"')
_VALS = re.compile(rf"(?:^|,)({_EXPR})", re.S)
_PAIRS = re.compile(rf'(?:^|, | and | or )(?:[A-Za-z_][A-Za-z0-9_$#]*\.)?"([^"]*)" (?:= ({_EXPR})|IS NULL)', re.S)
_SINGLE_QUOTED = re.compile(_Q, re.S)


def _value(text: str) -> str | None:
    """The value of one validated operand sequence."""
    if text[0] == "'" and text[-1] == "'" and _SINGLE_QUOTED.fullmatch(text):
        inner = text[1:-1]
        return inner.replace("''", "'") if "''" in inner else inner
    if text in {"NULL", "Unsupported Type"}:
        return None
    return RedoExpr(text)


def _where(table: RedoTable, text: str | None) -> list[RedoValue]:
    values: list[RedoValue] = [None] * len(table.columns)
    if text is not None:
        for name, raw in _PAIRS.findall(text):
            if name != _ROW_ARCHIVAL:
                values[table.position(name)] = _value(raw) if raw else None
    for i in table._unavailable:
        if values[i] is None:
            values[i] = UNAVAILABLE
    return values


def parse_redo(sql: str, table: RedoTable) -> RedoDml:
    """Parse one LogMiner insert, update or delete of ``table``; `RedoParseError` if it is not one."""
    head = sql[:1]
    if head == "i":
        m = _INSERT.fullmatch(sql)
        if m is None:
            raise RedoParseError(f"not a LogMiner insert: {sql[:200]!r}")
        names = _COLS.findall(m.group("cols"))
        raws = _VALS.findall(m.group("vals"))
        if len(names) != len(raws):
            raise RedoParseError(f"{len(names)} columns but {len(raws)} values: {sql[:200]!r}")
        after: list[RedoValue] = [None] * len(table.columns)
        for name, raw in zip(names, raws, strict=True):
            if name != _ROW_ARCHIVAL:
                after[table.position(name)] = _value(raw)
        return RedoDml(DmlKind.INSERT, (), tuple(after))
    if head == "u":
        m = _UPDATE.fullmatch(sql)
        if m is None:
            raise RedoParseError(f"not a LogMiner update: {sql[:200]!r}")
        before = _where(table, m.group("where"))
        after = list(before)
        for name, raw in _PAIRS.findall(m.group("set")):
            # "Unsupported Type" in a set clause leaves the before value in place (as Debezium).
            if name != _ROW_ARCHIVAL and raw != "Unsupported Type":
                after[table.position(name)] = _value(raw)
        return RedoDml(DmlKind.UPDATE, tuple(before), tuple(after))
    if head == "d":
        m = _DELETE.fullmatch(sql)
        if m is None:
            raise RedoParseError(f"not a LogMiner delete: {sql[:200]!r}")
        return RedoDml(DmlKind.DELETE, tuple(_where(table, m.group("where"))), ())
    raise RedoParseError(f"not a LogMiner insert, update or delete: {sql[:200]!r}")
