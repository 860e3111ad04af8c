"""Oracle DDL on captured tables, applied to the connector's table model (pure).

`apply_ddl` reads one DDL statement as LogMiner shows it in ``SQL_REDO`` and returns what it does
to a table: the table's new structure (`OracleTable`), None when it drops the table, and the
columns it renames. The statements read are the ones Debezium's Oracle DDL parser turns into
table changes:

- ``CREATE TABLE t (column definitions, [CONSTRAINT c] PRIMARY KEY (..), other constraints)``;
- ``ALTER TABLE t ADD c type ... | ADD (c type ..., ...)``, ``ADD [CONSTRAINT c] PRIMARY KEY (..)``;
- ``ALTER TABLE t DROP COLUMN c | DROP (c, ...)``, ``DROP PRIMARY KEY``, ``DROP CONSTRAINT c``;
- ``ALTER TABLE t MODIFY c [type] [DEFAULT x] [NULL | NOT NULL] | MODIFY (..., ...)``;
- ``ALTER TABLE t RENAME COLUMN a TO b``;
- ``DROP TABLE t [CASCADE CONSTRAINTS] [PURGE]``.

Unquoted identifiers are upper-cased and quoted ones kept, as Oracle does; a name without an
owner is the DDL row's owner. Statements that change no column (``CREATE INDEX``, ``GRANT``,
``COMMENT``, ``ALTER TABLE .. ADD CONSTRAINT .. CHECK``) are `DdlKind.OTHER`: no table change.
A statement of one of the kinds above that cannot be read raises `OracleDdlError` naming the
token where reading stopped.

Types are read as ``ALL_TAB_COLUMNS`` shows them (`cdc_sources.oracle.tables.column_of`):
``NUMBER(P,S)``, ``NUMBER(P)`` (scale 0), ``NUMBER``, ``INTEGER``/``INT``/``SMALLINT``
(``NUMBER(38)``), ``FLOAT(P)``, ``VARCHAR2(N [BYTE|CHAR])``, ``CHAR(N)``, ``TIMESTAMP(P) [WITH
[LOCAL] TIME ZONE]``, ``INTERVAL DAY(P) TO SECOND(S)``, ...
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from cdc_sources.oracle.converters import OracleColumn
from cdc_sources.oracle.envelope import OracleTable
from cdc_sources.oracle.tables import UnsupportedColumnError, column_of

__all__ = ["DdlKind", "DdlOutcome", "OracleDdlError", "apply_ddl", "ddl_target"]


class OracleDdlError(ValueError):
    """A DDL statement on a captured table that cannot be read (names where reading stopped)."""


class DdlKind(enum.Enum):
    CREATE_TABLE = "CREATE"
    ALTER_TABLE = "ALTER"
    DROP_TABLE = "DROP"
    OTHER = "OTHER"


@dataclass(frozen=True, slots=True)
class DdlOutcome:
    """What one statement does to one table.

    Attributes:
        kind: the statement's kind (`DdlKind.OTHER`: no table change).
        owner, name: the table the statement names.
        table: the table after the statement (None after ``DROP TABLE`` or for `DdlKind.OTHER`).
        renamed: (old, new) names of the columns the statement renamed.
    """

    kind: DdlKind
    owner: str
    name: str
    table: OracleTable | None = None
    renamed: tuple[tuple[str, str], ...] = ()


_TOKEN = re.compile(r"""\s*(?:("(?:[^"]|"")*")|('(?:[^']|'')*')|(\d+(?:\.\d+)?)|([A-Za-z_][\w$#]*)|(\S))""")
_INTEGER_TYPES = {"INTEGER", "INT", "SMALLINT"}
_SIZED = {"VARCHAR2", "NVARCHAR2", "CHAR", "NCHAR", "RAW", "VARCHAR", "CHARACTER"}
_ALIASES = {"VARCHAR": "VARCHAR2", "CHARACTER": "CHAR", "DOUBLE PRECISION": "FLOAT"}
_CONSTRAINT_WORDS = {"CONSTRAINT", "PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "REFERENCES"}


@dataclass(frozen=True, slots=True)
class _Tok:
    text: str
    quoted: bool = False
    literal: bool = False

    @property
    def word(self) -> str:
        """The token upper-cased unless quoted (keywords and identifiers compare by this)."""
        return self.text if self.quoted or self.literal else self.text.upper()


def _tokens(sql: str) -> list[_Tok]:
    out: list[_Tok] = []
    text = sql.strip().rstrip(";").strip()
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        quoted, string, number, word, punct = m.groups()
        if quoted is not None:
            out.append(_Tok(quoted[1:-1].replace('""', '"'), quoted=True))
        elif string is not None:
            out.append(_Tok(string, literal=True))
        else:
            out.append(_Tok(number or word or punct or ""))
    return out


class _Reader:
    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.toks = _tokens(sql)
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j].word if j < len(self.toks) else ""

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def take(self) -> _Tok:
        if self.at_end():
            raise self.error("unexpected end of statement")
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, *words: str) -> bool:
        if all(self.peek(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)}")

    def ident(self) -> str:
        t = self.take()
        if not t.quoted and not re.fullmatch(r"[A-Za-z_][\w$#]*", t.text):
            self.i -= 1
            raise self.error("expected a name")
        return t.word

    def number(self) -> int:
        sign = -1 if self.accept("-") else 1
        t = self.take()
        if not t.text.isdigit():
            self.i -= 1
            raise self.error("expected a number")
        return sign * int(t.text)

    def skip_balanced(self) -> None:
        """Skip one ``(...)`` group, nested groups included."""
        self.expect("(")
        depth = 1
        while depth:
            w = self.take().word
            depth += (w == "(") - (w == ")")

    def skip_until_comma_or_close(self) -> None:
        """Skip to the next ``,`` or ``)`` of this nesting level (left unread)."""
        while not self.at_end() and self.peek() not in (",", ")"):
            if self.peek() == "(":
                self.skip_balanced()
            else:
                self.i += 1

    def error(self, what: str) -> OracleDdlError:
        near = " ".join(t.text for t in self.toks[self.i:self.i + 4]) or "the end"
        return OracleDdlError(f"{what} at token {self.i + 1} (near {near!r}) in {self.sql.strip()!r}")


def ddl_target(sql: str, owner: str) -> tuple[DdlKind, str, str] | None:
    """The kind and table (owner, name) of a ``CREATE``/``ALTER``/``DROP TABLE`` statement, else None."""
    r = _Reader(sql)
    if r.accept("CREATE", "GLOBAL", "TEMPORARY", "TABLE") or r.accept("CREATE", "TABLE"):
        kind = DdlKind.CREATE_TABLE
    elif r.accept("ALTER", "TABLE"):
        kind = DdlKind.ALTER_TABLE
    elif r.accept("DROP", "TABLE"):
        kind = DdlKind.DROP_TABLE
    else:
        return None
    try:
        table_owner, name = _table_name(r, owner)
    except OracleDdlError:
        return None
    return kind, table_owner, name


def _table_name(r: _Reader, owner: str) -> tuple[str, str]:
    first = r.ident()
    if r.accept("."):
        return first, r.ident()
    return owner, first


def apply_ddl(sql: str, owner: str, table: OracleTable | None) -> DdlOutcome:
    """Apply one statement (run with ``owner`` as its default schema) to ``table`` (None: not known)."""
    r = _Reader(sql)
    target = ddl_target(sql, owner)
    if target is None:
        return DdlOutcome(DdlKind.OTHER, owner, "")
    kind, t_owner, name = target
    r.i = 2 if kind is not DdlKind.CREATE_TABLE or r.peek(1) == "TABLE" else 4
    _table_name(r, owner)
    label = f"{t_owner}.{name}"
    if kind is DdlKind.DROP_TABLE:
        return DdlOutcome(kind, t_owner, name)
    if kind is DdlKind.CREATE_TABLE:
        columns, key = _create_body(r, label)
        return DdlOutcome(kind, t_owner, name, OracleTable(t_owner, name, tuple(columns), tuple(key)))
    if table is None:
        raise OracleDdlError(f"ALTER TABLE of {label}, which the connector does not know: {sql.strip()!r}")
    return _alter(r, table, label)


def _column(r: _Reader, label: str, *, modify_of: OracleColumn | None = None) -> tuple[OracleColumn, bool]:
    """One column definition (``MODIFY`` may leave the type out); returns it and whether it is
    declared ``PRIMARY KEY`` inline."""
    name = r.ident()
    column: OracleColumn | None = None
    if modify_of is not None and r.peek() in ("DEFAULT", "NULL", "NOT", "CONSTRAINT", ")", ",", ""):
        column = replace(modify_of, name=name)
    else:
        data_type, length, precision, scale = _type(r)
        try:
            column = column_of(label, name, data_type, length, precision, scale, True)
        except UnsupportedColumnError as exc:
            raise OracleDdlError(str(exc)) from None
    optional: bool | None = None
    primary = False
    while not r.at_end() and r.peek() not in (",", ")"):
        if r.accept("NOT", "NULL"):
            optional = False
        elif r.accept("NULL"):
            optional = True
        elif r.accept("PRIMARY", "KEY"):
            primary, optional = True, False
        elif r.accept("DEFAULT"):
            r.accept("ON", "NULL")
            _skip_expression(r)
        elif r.accept("CONSTRAINT"):
            r.ident()
        elif r.peek() == "(":
            r.skip_balanced()
        else:
            r.take()  # ENABLE, VISIBLE, UNIQUE, CHECK (..), REFERENCES t (..), ENCRYPT, ...
    if optional is not None:
        column = replace(column, optional=optional)
    elif modify_of is not None:
        column = replace(column, optional=modify_of.optional)
    return column, primary


def _skip_expression(r: _Reader) -> None:
    """A ``DEFAULT`` expression: up to a constraint keyword, ``,`` or ``)`` of this level."""
    while not r.at_end() and r.peek() not in (",", ")", "NOT", "NULL", "CONSTRAINT", "PRIMARY", "UNIQUE",
                                                "CHECK", "REFERENCES", "ENABLE", "DISABLE"):
        if r.peek() == "(":
            r.skip_balanced()
        else:
            r.take()


def _type(r: _Reader) -> tuple[str, int | None, int | None, int | None]:
    """``(DATA_TYPE, DATA_LENGTH, DATA_PRECISION, DATA_SCALE)`` as ``ALL_TAB_COLUMNS`` would show them."""
    base = r.ident()
    if base == "DOUBLE" and r.accept("PRECISION"):
        base = "DOUBLE PRECISION"
    if base in ("LONG",) and r.accept("RAW"):
        base = "LONG RAW"
    if base == "CHARACTER" and r.accept("VARYING"):
        base = "VARCHAR2"
    if base == "NATIONAL":
        r.accept("CHARACTER") or r.accept("CHAR")
        base = "NVARCHAR2" if r.accept("VARYING") else "NCHAR"
    args: list[int | None] = []
    if r.peek() == "(":
        r.take()
        while True:
            if r.accept("*"):
                args.append(None)
            else:
                args.append(r.number())
            r.accept("BYTE") or r.accept("CHAR")
            if r.accept(")"):
                break
            r.expect(",")
    if base == "TIMESTAMP":
        fraction = args[0] if args else 6
        if r.accept("WITH", "LOCAL", "TIME", "ZONE"):
            return f"TIMESTAMP({fraction}) WITH LOCAL TIME ZONE", 11, None, fraction
        if r.accept("WITH", "TIME", "ZONE"):
            return f"TIMESTAMP({fraction}) WITH TIME ZONE", 13, None, fraction
        return f"TIMESTAMP({fraction})", 11, None, fraction
    if base == "INTERVAL":
        if r.accept("YEAR"):
            year = _optional_arg(r, 2)
            r.expect("TO", "MONTH")
            return f"INTERVAL YEAR({year}) TO MONTH", 5, year, 0
        r.expect("DAY")
        day = _optional_arg(r, 2)
        r.expect("TO", "SECOND")
        second = _optional_arg(r, 6)
        return f"INTERVAL DAY({day}) TO SECOND({second})", 11, day, second
    base = _ALIASES.get(base, base)
    if base in _INTEGER_TYPES:
        return "NUMBER", 22, None, 0
    if base in ("NUMBER", "NUMERIC", "DECIMAL", "DEC"):
        if not args:  # the ANSI names are fixed-point: scale 0 (NUMBER(38))
            return "NUMBER", 22, None, None if base == "NUMBER" else 0
        return "NUMBER", 22, args[0], (args[1] if len(args) > 1 else 0)
    if base == "FLOAT":
        return "FLOAT", 22, args[0] if args else 126, None
    if base == "REAL":
        return "FLOAT", 22, 63, None
    if base in _SIZED:
        return base, args[0] if args else 1, None, None
    return base, args[0] if args else None, None, None


def _optional_arg(r: _Reader, default: int) -> int:
    if r.accept("("):
        value = r.number()
        r.expect(")")
        return value
    return default


def _key_columns(r: _Reader) -> list[str]:
    r.expect("(")
    names = [r.ident()]
    while r.accept(","):
        names.append(r.ident())
    r.expect(")")
    return names


def _out_of_line_constraint(r: _Reader) -> list[str] | None:
    """A table constraint; its columns if it is the primary key, else None (skipped)."""
    if r.accept("CONSTRAINT"):
        r.ident()
    if r.accept("PRIMARY", "KEY"):
        key = _key_columns(r)
        r.skip_until_comma_or_close()
        return key
    r.skip_until_comma_or_close()
    return None


def _create_body(r: _Reader, label: str) -> tuple[list[OracleColumn], list[str]]:
    if r.peek() != "(":
        raise r.error("expected the column list (CREATE TABLE .. AS SELECT is not read)")
    r.take()
    columns: list[OracleColumn] = []
    key: list[str] = []
    while True:
        if r.peek() in _CONSTRAINT_WORDS:
            found = _out_of_line_constraint(r)
            key = found if found is not None else key
        else:
            column, primary = _column(r, label)
            columns.append(column)
            if primary:
                key = [column.name]
        if r.accept(")"):
            break
        r.expect(",")
    return _keyed(columns, key), key


def _keyed(columns: list[OracleColumn], key: list[str]) -> list[OracleColumn]:
    return [replace(c, optional=False) if c.name in key else c for c in columns]


class _Alter:
    """The column list and key of one ``ALTER TABLE``, changed action by action."""

    def __init__(self, r: _Reader, table: OracleTable, label: str) -> None:
        self.r, self.label = r, label
        self.columns = list(table.columns)
        self.key = list(table.key)
        self.renamed: list[tuple[str, str]] = []

    def index(self, name: str) -> int:
        for i, c in enumerate(self.columns):
            if c.name == name:
                return i
        raise self.r.error(f"table {self.label} has no column {name}")

    def listed(self, one: Callable[[], None]) -> None:
        """``one`` item, or a parenthesised list of them."""
        if self.r.accept("("):
            while True:
                one()
                if self.r.accept(")"):
                    return
                self.r.expect(",")
        else:
            one()

    def add(self) -> None:
        r = self.r
        if r.peek() in _CONSTRAINT_WORDS:
            found = _out_of_line_constraint(r)
            if found is not None:
                self.key = found
            return
        column, primary = _column(r, self.label)
        if any(c.name == column.name for c in self.columns):
            raise r.error(f"table {self.label} already has a column {column.name}")
        self.columns.append(column)
        if primary:
            self.key = [column.name]

    def modify(self) -> None:
        if self.r.peek() in _CONSTRAINT_WORDS:
            self.r.skip_until_comma_or_close()
            return
        i = self.index(self.r.peek())
        self.columns[i], _ = _column(self.r, self.label, modify_of=self.columns[i])

    def drop(self, name: str) -> None:
        i = self.index(name)
        if name in self.key:
            raise self.r.error(f"dropping key column {name} of {self.label}")
        del self.columns[i]

    def rename(self) -> None:
        old = self.r.ident()
        self.r.expect("TO")
        new = self.r.ident()
        i = self.index(old)
        self.columns[i] = replace(self.columns[i], name=new)
        self.key = [new if k == old else k for k in self.key]
        self.renamed.append((old, new))


_NOT_COLUMNS = {"PARTITION", "SUBPARTITION", "PARTITIONS", "SUPPLEMENTAL", "UNUSED", "PERIOD", "OVERFLOW",
                "LOGGING", "NOLOGGING", "LOB", "DEFAULT", "CONSTRAINTS"}
"""Words after ``ADD``/``MODIFY``/``DROP`` that start no column clause (partitions, supplemental
logging, storage): such statements change no column."""


def _alter(r: _Reader, table: OracleTable, label: str) -> DdlOutcome:
    a = _Alter(r, table, label)
    if r.peek() in ("ADD", "MODIFY", "DROP") and r.peek(1) in _NOT_COLUMNS:
        return DdlOutcome(DdlKind.OTHER, table.schema, table.name)
    if r.accept("ADD"):
        a.listed(a.add)
    elif r.accept("MODIFY"):
        a.listed(a.modify)
    elif r.accept("DROP", "COLUMN") or r.accept("SET", "UNUSED", "COLUMN"):
        a.drop(r.ident())
    elif r.accept("DROP", "PRIMARY", "KEY"):
        a.key = []
    elif (r.accept("DROP") or r.accept("SET", "UNUSED")) and r.peek() == "(":
        for name in _key_columns(r):
            a.drop(name)
    elif r.accept("RENAME", "COLUMN"):
        a.rename()
    elif r.accept("RENAME", "TO"):
        raise r.error(f"renaming table {label} (capture it under its new name from a new snapshot)")
    else:
        return DdlOutcome(DdlKind.OTHER, table.schema, table.name)  # constraints, storage, ...
    return DdlOutcome(DdlKind.ALTER_TABLE, table.schema, table.name,
                      OracleTable(table.schema, table.name, tuple(_keyed(a.columns, a.key)), tuple(a.key)),
                      tuple(a.renamed))
