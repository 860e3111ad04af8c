"""Parses the ``SQL_REDO`` of LogMiner's LOB operations (mined with ``lob.enabled``).

A ``SELECT_LOB_LOCATOR`` row (``OPERATION_CODE`` 9) names the LOB column about to be written and
the row it belongs to, as an anonymous PL/SQL block::

    DECLARE
     loc_c CLOB;
     buf_c VARCHAR2(6174);
     loc_b BLOB;
     ...
    BEGIN
     select "DATA" into loc_c from "S"."T" where "ID" = '2' and "NAME" = 'x' for update;

`parse_select_lob_locator` returns the column, whether it is binary (selected into ``loc_b`` or
``buf_b``) and the row's values from the ``where`` clause, as Debezium 3.6.3's ``SelectLobParser``
reads them: a quoted literal keeps its doubled quotes (``'Bob''s'`` is ``Bob''s``), a literal or
expression spelled ``null`` (any case) is None, any other expression is kept as its text, and a
LOB-like column with no value is `UNAVAILABLE`.

A ``LOB_WRITE`` row (10) writes a piece of the LOB selected last::

     buf_c := 'some text';
      dbms_lob.write(loc_c, 9, 1, buf_c);

`parse_lob_write` returns its offset (0-based), length and data (a ``HEXTORAW('..')`` text for a
BLOB), as Debezium's ``LobWriteParser`` does (checked against both classes by
``tests/cdc_sources/oracle/test_lob_redo.py``).

Stricter than Debezium: a statement not in these shapes is an error naming it (Debezium's
scanner skips what it does not expect).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cdc_sources.oracle.redo import UNAVAILABLE, VALUE_PATTERN, RedoExpr, RedoParseError, RedoTable, RedoValue

__all__ = ["LobLocator", "LobWrite", "parse_lob_write", "parse_select_lob_locator"]


@dataclass(frozen=True, slots=True)
class LobLocator:
    """A parsed ``SELECT_LOB_LOCATOR``: the LOB column, whether it is a BLOB, the row's values."""

    column: str
    binary: bool
    values: tuple[RedoValue, ...]


@dataclass(frozen=True, slots=True)
class LobWrite:
    """A parsed ``LOB_WRITE``: ``data`` written at ``offset`` (0-based), at most ``length`` long."""

    offset: int
    length: int
    data: str


_SELECT = re.compile(
    r'.*?BEGIN\s+select "([^"]*)" into ([A-Za-z_][A-Za-z0-9_]*) from "([^"]*)"\."([^"]*)" where (.*?) for update;'
    r'\s*(?:END;\s*)?', re.S)
_WHERE_ITEM = re.compile(rf'(| and | or )"([^"]*)" (?:= {VALUE_PATTERN}|IS NULL)|(.)', re.S)
# Debezium's LobWriteParser pattern (the same groups: data, length, 1-based offset).
_WRITE = re.compile(r".* := ((?:HEXTORAW\()?'.*'(?:\))?);\s*dbms_lob.write\([^,]+,\s*(\d+)\s*,\s*(\d+)\s*,[^,]+\);.*",
                    re.S | re.ASCII)


def _java_trim(text: str) -> str:
    """``String.trim()``: strips characters up to U+0020 at both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def parse_select_lob_locator(sql: str, table: RedoTable) -> LobLocator:
    """The column, binary flag and row values of a ``SELECT_LOB_LOCATOR`` row of ``table``."""
    m = _SELECT.fullmatch(sql)
    if m is None:
        raise RedoParseError(f"not a LogMiner SELECT_LOB_LOCATOR statement: {sql[:300]!r}")
    column, into, _, _, where = m.groups()
    table.position(column)  # an unknown column is an error
    values: list[RedoValue] = [None] * len(table.columns)
    first = True
    for sep, name, quoted, expr, junk in _WHERE_ITEM.findall(where):
        if junk or (first and sep) or (not first and not sep):
            raise RedoParseError(f"not a LogMiner SELECT_LOB_LOCATOR where clause: {sql[:300]!r}")
        first = False
        i = table.position(name)
        if i < 0:
            continue
        text = quoted[1:-1] if quoted else expr
        if text and text.lower() != "null":
            values[i] = text if quoted else RedoExpr(text)
    for i, c in enumerate(table.columns):
        if c.unavailable_when_missing and values[i] is None:
            values[i] = UNAVAILABLE
    return LobLocator(column, into.startswith(("loc_b", "buf_b")), tuple(values))


def parse_lob_write(sql: str | None) -> LobWrite | None:
    """The offset, length and data of a ``LOB_WRITE`` row (None for an empty ``SQL_REDO``)."""
    if not sql:
        return None
    m = _WRITE.fullmatch(_java_trim(sql))
    if m is None:
        raise RedoParseError(f"not a LogMiner LOB_WRITE statement: {sql[:300]!r}")
    data = m.group(1)
    if data.startswith("'"):
        data = data[1:-1]
    return LobWrite(int(m.group(3)) - 1, int(m.group(2)), data.replace("''", "'"))
