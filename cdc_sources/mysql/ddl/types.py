"""MySQL/MariaDB column types, read and recorded the way Debezium 3.6.3's MySQL DDL parser does.

`parse_data_type` reads a type at a `Cursor` (``INT(11) UNSIGNED ZEROFILL``, ``VARCHAR(20)
CHARACTER SET latin1``, ``ENUM('a','b')``...) and returns a `DataType` holding what Debezium's
``ColumnDefinitionParserListener`` records:

* ``type_name``: the type keywords *as written*, upper-cased and joined by one space (``INTEGER``
  stays ``INTEGER``, ``DEC`` stays ``DEC``, ``DOUBLE PRECISION``, ``CHARACTER VARYING``), then
  `` UNSIGNED ZEROFILL`` when ZEROFILL is given (it implies UNSIGNED), else the last of ``SIGNED`` /
  ``UNSIGNED``, then `` BINARY`` for ``CHAR(10) BINARY``-style types. ``BOOL``/``BOOLEAN`` stay
  BOOLEAN types (JDBC BOOLEAN) while ``TINYINT(1)`` stays ``TINYINT``; ``SERIAL`` becomes
  ``BIGINT UNSIGNED``. Debezium's ``typeExpression`` is always equal to it.
* ``jdbc_type``: Debezium's ``java.sql.Types`` code per type keyword (TINYINT and SMALLINT ->
  SMALLINT, MEDIUMINT and INT -> INTEGER, TEXT types -> VARCHAR, ENUM/SET -> CHAR, BLOB types ->
  BLOB, TIMESTAMP -> TIMESTAMP_WITH_TIMEZONE, JSON/spatial -> OTHER...).
* ``length`` / ``scale``: from ``(M)``/``(M,D)``; DECIMAL/NUMERIC/FIXED default to (10, 0) and BIT
  to 1; an ENUM has length 1 and a SET ``2n-1``; NCHAR without a length has 1. A ``(0)`` length of
  the ``fieldLength`` kind becomes 10, as in Debezium (temporal fractional precision is exempt).
* ``charset``: from ``CHARACTER SET x``/``CHARSET x`` after the type (NCHAR/NVARCHAR: ``utf8``).
* ``enum_literals``: ENUM/SET members as Debezium keeps them: the literal text *with* its quotes;
  `enum_member` reads one back as Debezium's converters do.

MariaDB types Debezium's MySQL grammar rejects (``INET4``, ``INET6``, ``UUID``) are read as
JDBC OTHER types named as written; Debezium's MariaDB connector treats ``UUID`` the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto
from typing import Final

from sqlglot.tokenizer_core import TokenType

from cdc_sources.mysql import jdbc
from cdc_sources.mysql.ddl.lexer import Cursor

__all__ = ["CHARSET_TYPES", "DataType", "enum_literal", "enum_member", "parse_data_type", "parse_length"]


CHARSET_TYPES: Final = jdbc.CHARACTER_TYPES
"""JDBC types whose columns carry a character set (Debezium's ``Column.typeUsesCharset``)."""

_MAX_INT: Final = 2**31 - 1


class _Shape(Enum):
    """What may follow the type keywords (the alternatives of the grammar's ``dataType`` rule)."""

    INTEGER = auto()       # (M)? [SIGNED|UNSIGNED|ZEROFILL]*
    REAL = auto()          # (M,D)? options
    FLOAT = auto()         # (M) or (M,D), options
    LENGTH = auto()        # (M)?
    LENGTH_REQUIRED = auto()
    NONE = auto()
    CHAR = auto()          # (M)? charset?
    CHAR_REQUIRED = auto()  # (M) charset?
    NCHAR = auto()         # (M)? BINARY?
    NCHAR_REQUIRED = auto()
    TEXT = auto()          # charset?
    TEXT_LENGTH = auto()   # (M)? charset?
    TEMPORAL = auto()      # (fsp)?
    YEAR = auto()          # (M)? options
    COLLECTION = auto()    # ('a', ...) charset?
    SERIAL = auto()


@dataclass(frozen=True, slots=True)
class _Kind:
    jdbc: int
    shape: _Shape
    default_length: int | None = None
    default_scale: int | None = None
    national: bool = False


_INT_KINDS = {"TINYINT": jdbc.SMALLINT, "INT1": jdbc.SMALLINT, "SMALLINT": jdbc.SMALLINT, "INT2": jdbc.SMALLINT,
              "MEDIUMINT": jdbc.INTEGER, "MIDDLEINT": jdbc.INTEGER, "INT3": jdbc.INTEGER, "INT": jdbc.INTEGER,
              "INTEGER": jdbc.INTEGER, "INT4": jdbc.INTEGER, "BIGINT": jdbc.BIGINT, "INT8": jdbc.BIGINT}
_DECIMALS = {"DECIMAL": jdbc.DECIMAL, "DEC": jdbc.DECIMAL, "FIXED": jdbc.DECIMAL, "NUMERIC": jdbc.NUMERIC}
_SPATIAL = ("GEOMETRY", "GEOMETRYCOLLECTION", "GEOMCOLLECTION", "POINT", "MULTIPOINT", "LINESTRING",
            "MULTILINESTRING", "POLYGON", "MULTIPOLYGON")

_KINDS: Final[dict[tuple[str, ...], _Kind]] = {
    **{(w,): _Kind(j, _Shape.INTEGER) for w, j in _INT_KINDS.items()},
    ("REAL",): _Kind(jdbc.REAL, _Shape.REAL),
    ("DOUBLE",): _Kind(jdbc.DOUBLE, _Shape.REAL),
    ("DOUBLE", "PRECISION"): _Kind(jdbc.DOUBLE, _Shape.REAL),
    ("FLOAT8",): _Kind(jdbc.DOUBLE, _Shape.REAL),
    ("FLOAT",): _Kind(jdbc.FLOAT, _Shape.FLOAT),
    ("FLOAT4",): _Kind(jdbc.FLOAT, _Shape.FLOAT),
    **{(w,): _Kind(j, _Shape.FLOAT, 10, 0) for w, j in _DECIMALS.items()},
    ("BIT",): _Kind(jdbc.BIT, _Shape.LENGTH, 1),
    ("BOOL",): _Kind(jdbc.BOOLEAN, _Shape.NONE),
    ("BOOLEAN",): _Kind(jdbc.BOOLEAN, _Shape.NONE),
    ("CHAR",): _Kind(jdbc.CHAR, _Shape.CHAR),
    ("CHARACTER",): _Kind(jdbc.CHAR, _Shape.CHAR),
    ("CHAR", "VARYING"): _Kind(jdbc.VARCHAR, _Shape.CHAR_REQUIRED),
    ("CHARACTER", "VARYING"): _Kind(jdbc.VARCHAR, _Shape.CHAR_REQUIRED),
    ("VARCHAR",): _Kind(jdbc.VARCHAR, _Shape.CHAR_REQUIRED),
    ("VARCHARACTER",): _Kind(jdbc.VARCHAR, _Shape.CHAR_REQUIRED),
    ("NCHAR",): _Kind(jdbc.NCHAR, _Shape.NCHAR, national=True),
    ("NATIONAL", "CHAR"): _Kind(jdbc.NCHAR, _Shape.NCHAR, national=True),
    ("NATIONAL", "CHARACTER"): _Kind(jdbc.NCHAR, _Shape.NCHAR, national=True),
    ("NVARCHAR",): _Kind(jdbc.NVARCHAR, _Shape.NCHAR_REQUIRED, national=True),
    ("NATIONAL", "VARCHAR"): _Kind(jdbc.NVARCHAR, _Shape.NCHAR_REQUIRED, national=True),
    ("NCHAR", "VARCHAR"): _Kind(jdbc.NVARCHAR, _Shape.NCHAR_REQUIRED, national=True),
    ("NCHAR", "VARYING"): _Kind(jdbc.NVARCHAR, _Shape.NCHAR_REQUIRED, national=True),
    ("NATIONAL", "CHAR", "VARYING"): _Kind(jdbc.NVARCHAR, _Shape.NCHAR_REQUIRED, national=True),
    ("NATIONAL", "CHARACTER", "VARYING"): _Kind(jdbc.NVARCHAR, _Shape.NCHAR_REQUIRED, national=True),
    ("BINARY",): _Kind(jdbc.BINARY, _Shape.LENGTH),
    ("VARBINARY",): _Kind(jdbc.VARBINARY, _Shape.LENGTH_REQUIRED),
    ("YEAR",): _Kind(jdbc.INTEGER, _Shape.YEAR),
    ("DATE",): _Kind(jdbc.DATE, _Shape.NONE),
    ("TIME",): _Kind(jdbc.TIME, _Shape.TEMPORAL),
    ("TIMESTAMP",): _Kind(jdbc.TIMESTAMP_WITH_TIMEZONE, _Shape.TEMPORAL),
    ("DATETIME",): _Kind(jdbc.TIMESTAMP, _Shape.TEMPORAL),
    ("TINYBLOB",): _Kind(jdbc.BLOB, _Shape.NONE),
    ("BLOB",): _Kind(jdbc.BLOB, _Shape.LENGTH),
    ("MEDIUMBLOB",): _Kind(jdbc.BLOB, _Shape.NONE),
    ("LONGBLOB",): _Kind(jdbc.BLOB, _Shape.NONE),
    ("LONG", "VARBINARY"): _Kind(jdbc.BLOB, _Shape.NONE),
    ("LONG",): _Kind(jdbc.VARCHAR, _Shape.TEXT),
    ("LONG", "VARCHAR"): _Kind(jdbc.VARCHAR, _Shape.TEXT),
    ("LONG", "VARCHARACTER"): _Kind(jdbc.VARCHAR, _Shape.TEXT),
    ("LONG", "CHAR", "VARYING"): _Kind(jdbc.VARCHAR, _Shape.TEXT),
    ("LONG", "CHARACTER", "VARYING"): _Kind(jdbc.VARCHAR, _Shape.TEXT),
    ("TINYTEXT",): _Kind(jdbc.VARCHAR, _Shape.TEXT),
    ("TEXT",): _Kind(jdbc.VARCHAR, _Shape.TEXT_LENGTH),
    ("MEDIUMTEXT",): _Kind(jdbc.VARCHAR, _Shape.TEXT),
    ("LONGTEXT",): _Kind(jdbc.VARCHAR, _Shape.TEXT),
    ("ENUM",): _Kind(jdbc.CHAR, _Shape.COLLECTION),
    ("SET",): _Kind(jdbc.CHAR, _Shape.COLLECTION),
    ("SERIAL",): _Kind(jdbc.BIGINT, _Shape.SERIAL),
    ("JSON",): _Kind(jdbc.OTHER, _Shape.NONE),
    ("VECTOR",): _Kind(jdbc.OTHER, _Shape.LENGTH),
    **{(w,): _Kind(jdbc.OTHER, _Shape.NONE) for w in _SPATIAL},
    # MariaDB types (not in Debezium's MySQL grammar; see the module docstring).
    ("INET4",): _Kind(jdbc.OTHER, _Shape.NONE),
    ("INET6",): _Kind(jdbc.OTHER, _Shape.NONE),
    ("UUID",): _Kind(jdbc.OTHER, _Shape.NONE),
}
_LONGEST: Final = max(len(k) for k in _KINDS)
_NUMERIC_OPTIONS: Final = frozenset({"SIGNED", "UNSIGNED", "ZEROFILL"})


@dataclass(frozen=True, slots=True)
class DataType:
    """A column type as Debezium records it (see the module docstring).

    Attributes:
        type_name: Debezium's ``typeName`` (= ``typeExpression``).
        jdbc_type: Debezium's ``jdbcType``.
        length: the length/precision, or None.
        scale: the scale, or None.
        charset: the character set named after the type, as Debezium keeps it, or None.
        enum_literals: ENUM/SET members, each as its quoted literal text.
        serial: ``SERIAL`` (implies NOT NULL, AUTO_INCREMENT and UNIQUE).
        keywords: the type keywords as written (for messages).
    """

    type_name: str
    jdbc_type: int
    length: int | None = None
    scale: int | None = None
    charset: str | None = None
    enum_literals: tuple[str, ...] = ()
    serial: bool = False
    keywords: str = ""

    @property
    def uses_charset(self) -> bool:
        """Whether columns of this type carry a character set."""
        return self.jdbc_type in CHARSET_TYPES


def parse_length(text: str) -> int:
    """A ``(M)`` length as Debezium reads it: decimals are cut, 0 or less becomes 10, and values
    above ``Integer.MAX_VALUE`` are capped."""
    try:
        value = int(text)
    except ValueError:
        try:
            value = int(float(text))
        except ValueError:
            return 10
    if value <= 0:
        return 10
    return min(value, _MAX_INT)


def parse_data_type(cur: Cursor) -> DataType:
    """Read a data type at ``cur`` (the column name already consumed)."""
    head, kind = _match_head(cur)
    spelled = [cur.next().text.upper() for _ in head]
    state = _TypeState(kind)
    shape = kind.shape
    if shape in (_Shape.INTEGER, _Shape.YEAR):
        state.field_length(cur, required=False)
        state.numeric_options(cur)
    elif shape is _Shape.REAL:
        state.precision(cur)
        state.numeric_options(cur)
    elif shape is _Shape.FLOAT:
        state.float_options(cur)
        state.numeric_options(cur)
    elif shape in (_Shape.LENGTH, _Shape.LENGTH_REQUIRED):
        state.field_length(cur, required=shape is _Shape.LENGTH_REQUIRED)
    elif shape in (_Shape.CHAR, _Shape.CHAR_REQUIRED):
        state.field_length(cur, required=shape is _Shape.CHAR_REQUIRED)
        state.charset_clause(cur)
    elif shape in (_Shape.NCHAR, _Shape.NCHAR_REQUIRED):
        state.field_length(cur, required=shape is _Shape.NCHAR_REQUIRED)
        if cur.accept("BINARY"):
            state.binary = True
    elif shape is _Shape.TEXT_LENGTH:
        state.field_length(cur, required=False)
        state.charset_clause(cur)
    elif shape is _Shape.TEXT:
        state.charset_clause(cur)
    elif shape is _Shape.TEMPORAL:
        state.fractional_precision(cur)
    elif shape is _Shape.COLLECTION:
        state.members(cur, is_set=spelled == ["SET"])
        state.charset_clause(cur, raw_name=True)
    return state.build(" ".join(spelled))


def _match_head(cur: Cursor) -> tuple[tuple[str, ...], _Kind]:
    for size in range(_LONGEST, 0, -1):
        words = tuple(cur.word(k) or "" for k in range(size))
        kind = _KINDS.get(words)
        if kind is not None:
            return words, kind
    raise cur.error("expected a data type")


class _TypeState:
    """What the parts after the type keywords add (mirrors ``resolveColumnDataType``)."""

    def __init__(self, kind: _Kind) -> None:
        self.kind = kind
        self.length: int | None = None
        self.scale: int | None = None
        self.signedness: str | None = None
        self.zerofill = False
        self.binary = False
        self.charset: str | None = None
        self.members_raw: tuple[str, ...] = ()
        self.is_set = False

    def field_length(self, cur: Cursor, *, required: bool) -> None:
        if cur.kind() is not TokenType.L_PAREN:
            if required:
                raise cur.error("expected '(' and a length")
            return
        cur.next()
        number = cur.expect_kind(TokenType.NUMBER, "a length")
        cur.expect_kind(TokenType.R_PAREN, "')'")
        self.length = parse_length(number.text)

    def precision(self, cur: Cursor) -> None:
        """``(M,D)`` (both numbers required)."""
        if cur.kind() is not TokenType.L_PAREN:
            return
        cur.next()
        precision = cur.expect_kind(TokenType.NUMBER, "a precision")
        cur.expect_kind(TokenType.COMMA, "','")
        scale = cur.expect_kind(TokenType.NUMBER, "a scale")
        cur.expect_kind(TokenType.R_PAREN, "')'")
        self.length, self.scale = parse_length(precision.text), int(scale.text)

    def float_options(self, cur: Cursor) -> None:
        """``(M)`` or ``(M,D)``."""
        if cur.kind() is not TokenType.L_PAREN:
            return
        cur.next()
        precision = cur.expect_kind(TokenType.NUMBER, "a precision")
        if cur.accept_kind(TokenType.COMMA):
            scale = cur.expect_kind(TokenType.NUMBER, "a scale")
            self.scale = int(scale.text)
        cur.expect_kind(TokenType.R_PAREN, "')'")
        self.length = parse_length(precision.text)

    def fractional_precision(self, cur: Cursor) -> None:
        if cur.kind() is not TokenType.L_PAREN:
            return
        cur.next()
        self.length = int(cur.expect_kind(TokenType.NUMBER, "a fractional seconds precision").text)
        cur.expect_kind(TokenType.R_PAREN, "')'")

    def numeric_options(self, cur: Cursor) -> None:
        while (word := cur.accept_any(*_NUMERIC_OPTIONS)) is not None:
            if word == "ZEROFILL":
                self.zerofill = True
            else:
                self.signedness = word

    def charset_clause(self, cur: Cursor, *, raw_name: bool = False) -> None:
        """``charsetWithOptBinary``: ``[BINARY] CHARACTER SET x [BINARY]``, ``ASCII``, ``UNICODE``,
        ``BYTE``, ``BINARY``. Only ``CHARACTER SET`` names a charset and only a ``BINARY`` next to
        it (or alone) marks the type BINARY, as in Debezium."""
        if cur.accept_any("ASCII", "UNICODE"):
            cur.accept("BINARY")
            return
        if cur.accept("BYTE"):
            return
        if cur.at("BINARY") and cur.word(1) in ("ASCII", "UNICODE"):
            cur.pos += 2
            return
        leading_binary = cur.accept("BINARY")
        if _accept_charset_keyword(cur):
            self.charset = _charset_name(cur, raw=raw_name)
            self.binary = leading_binary or cur.accept("BINARY")
        elif leading_binary:
            self.binary = True

    def members(self, cur: Cursor, *, is_set: bool) -> None:
        cur.expect_kind(TokenType.L_PAREN, "'(' and the ENUM/SET members")
        raw: list[str] = []
        while True:
            tok = cur.next()
            if tok.kind not in (TokenType.STRING, TokenType.HEX_STRING, TokenType.BIT_STRING):
                cur.pos -= 1
                raise cur.error("expected a quoted ENUM/SET member")
            raw.append(cur.statement.source[tok.start : tok.end])
            if cur.accept_kind(TokenType.COMMA) is None:
                break
        cur.expect_kind(TokenType.R_PAREN, "')'")
        self.members_raw = tuple(raw)
        self.is_set = is_set

    def build(self, keywords: str) -> DataType:
        kind = self.kind
        name = keywords
        if kind.shape is _Shape.SERIAL:
            return DataType("BIGINT UNSIGNED", kind.jdbc, serial=True, keywords=keywords)
        if self.zerofill:
            name += " UNSIGNED ZEROFILL"
        elif self.signedness is not None:
            name += " " + self.signedness
        if self.binary and not name.endswith(" BINARY"):
            name += " BINARY"
        length, scale = self.length, self.scale
        if kind.shape is _Shape.COLLECTION:
            length = max(0, 2 * len(self.members_raw) - 1) if self.is_set else 1
        if length is None:
            length = kind.default_length
        if scale is None:
            scale = kind.default_scale
        charset = self.charset
        if kind.national:
            charset = "utf8"
            if kind.jdbc == jdbc.NCHAR and length is None:
                length = 1
        return DataType(name, kind.jdbc, length, scale, charset, self.members_raw, keywords=keywords)


def enum_member(literal: str) -> str:
    """An ENUM/SET member's value from its literal, as Debezium's ``extractEnumAndSetOptions`` reads
    it (without its comma escaping): outer quotes removed, ``\\'`` and ``''`` read as ``'``."""
    if len(literal) >= 2 and literal[0] == literal[-1] and literal[0] in "'\"`":
        literal = literal[1:-1]
    return literal.replace("\\'", "'").replace("''", "'")


def enum_literal(member: str) -> str:
    """A quoted literal for a member value (for members whose literal is unknown)."""
    return "'" + member.replace("'", "''") + "'"


def _accept_charset_keyword(cur: Cursor) -> bool:
    return cur.accept("CHARACTER", "SET") or cur.accept("CHAR", "SET") or cur.accept("CHARSET")


def _charset_name(cur: Cursor, *, raw: bool) -> str:
    """A charset name after ``CHARACTER SET``: unquoted as Debezium's ``extractCharset`` does,
    or (for ENUM/SET, where Debezium takes the token text) as written."""
    tok = cur.peek()
    if tok is None or not (tok.is_identifier or tok.kind is TokenType.STRING):
        raise cur.error("expected a character set name")
    cur.pos += 1
    if raw:
        return cur.statement.source[tok.start : tok.end]
    return tok.text
