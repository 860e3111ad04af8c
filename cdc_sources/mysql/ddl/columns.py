"""Column definitions and key definitions, read from tokens.

``name type [attributes]`` is read with `cdc_sources.mysql.ddl.types.parse_data_type` for the
type, then attribute by attribute, keeping the order (Debezium's column editor reacts to it:
``NOT NULL`` before or after ``DEFAULT NULL`` gives different results). Clauses without an
effect on the recorded column (``CHECK``, ``REFERENCES``, ``COLUMN_FORMAT``, ``STORAGE``,
``SRID``, ``VISIBLE``/``INVISIBLE``, engine attributes, MariaDB's ``COMPRESSED`` and system
versioning clauses) are read and dropped.

Default values keep the text Debezium records as ``defaultValueExpression``: the literal as
written minus its outer quotes (escapes are *not* undone: ``'it''s'`` gives ``it''s``), numbers
with their sign, ``CURRENT_TIMESTAMP``/``NOW()`` as ``1970-01-01 00:00:00``, hex and bit
literals cut as Debezium cuts them (``X'1F'`` -> ``1F``, ``b'101'`` -> ``101``, ``0x1F`` ->
``1``), ``DATE '2020-01-01'`` as ``DATE'2020-01-01'``; an expression default ``DEFAULT (expr)``
(and MariaDB's ``DEFAULT uuid()`` form, which Debezium's MySQL grammar rejects) has no
expression text.
"""

from __future__ import annotations

from typing import Final

from sqlglot.tokenizer_core import TokenType

from cdc_sources.mysql.ddl.lexer import Cursor, Token
from cdc_sources.mysql.ddl.statements import (
    AttributeKind,
    ColumnAttribute,
    ColumnDefinition,
    DefaultKind,
    DefaultValue,
    KeyDefinition,
    KeyKind,
    TableElement,
)
from cdc_sources.mysql.ddl.types import parse_data_type

__all__ = ["parse_column", "parse_default", "parse_key", "parse_key_parts", "parse_table_element",
           "parse_text_literal", "starts_key"]

NOW_WORDS: Final = frozenset({"CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP"})
_KEY_STARTS: Final = frozenset({"PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK",
                                "CONSTRAINT", "PERIOD"})
_STRINGS: Final = (TokenType.STRING, TokenType.NATIONAL_STRING)
_BINARY_LITERALS: Final = (TokenType.HEX_STRING, TokenType.BIT_STRING)


def starts_key(cur: Cursor) -> bool:
    """Whether a table element at ``cur`` is a key/constraint rather than a column."""
    tok = cur.peek()
    return tok is not None and tok.word in _KEY_STARTS


def parse_table_element(cur: Cursor, *, in_alter: bool = False) -> TableElement | None:
    """A column or key definition inside ``CREATE TABLE (...)`` / ``ALTER TABLE ... ADD (...)``;
    None for a MariaDB ``PERIOD FOR`` clause (no effect on columns). Column names keep doubled
    backquotes in ``ALTER TABLE`` (``in_alter``), as Debezium's ALTER listener leaves them."""
    if cur.accept("PERIOD", "FOR"):
        cur.skip_to_comma_or_close()
        return None
    if starts_key(cur):
        return parse_key(cur)
    return parse_column(cur, cur.identifier("a column name", keep_doubled_quotes=in_alter))


def _column_ends(cur: Cursor) -> bool:
    """Whether the column definition ends here: a top-level ``,``/``)``, the end, a ``FIRST``/
    ``AFTER`` placement or an ``ALTER TABLE`` partition clause."""
    return (cur.done or cur.kind() in (TokenType.COMMA, TokenType.R_PAREN) or cur.at_any("FIRST", "AFTER")
            or cur.at("PARTITION", "BY") or cur.at("REMOVE", "PARTITIONING"))


def parse_column(cur: Cursor, name: str) -> ColumnDefinition:
    """The type and attributes of column ``name`` (read up to where `_column_ends`)."""
    data_type = parse_data_type(cur)
    attributes: list[ColumnAttribute] = []
    generated = False
    while not _column_ends(cur):
        row_period = cur.at("GENERATED", "ALWAYS", "AS", "ROW")
        if _generated_clause(cur):
            generated = True
            if row_period:  # MariaDB's system-versioning columns are NOT NULL
                attributes.append(ColumnAttribute(AttributeKind.NOT_NULL))
            continue
        attribute = _attribute(cur)
        if attribute is not None:
            attributes.append(attribute)
    return ColumnDefinition(name, data_type, tuple(attributes), generated)


def _generated_clause(cur: Cursor) -> bool:
    """``[GENERATED ALWAYS] AS (expr) [VIRTUAL|STORED|PERSISTENT]`` or MariaDB's
    ``GENERATED ALWAYS AS ROW START|END``."""
    if cur.at("GENERATED", "ALWAYS"):
        cur.pos += 2
    elif not cur.at("AS"):
        return False
    cur.expect("AS")
    if cur.accept("ROW"):
        if cur.accept_any("START", "END") is None:
            raise cur.error("expected START or END")
        return True
    cur.skip_parenthesized()
    cur.accept_any("VIRTUAL", "STORED", "PERSISTENT")
    return True


def _attribute(cur: Cursor) -> ColumnAttribute | None:
    """One column attribute; None for one without effect on the recorded column."""
    if cur.accept("NOT", "NULL"):
        return ColumnAttribute(AttributeKind.NOT_NULL)
    if cur.accept("NULL"):
        return ColumnAttribute(AttributeKind.NULL)
    if cur.accept("DEFAULT"):
        return ColumnAttribute(AttributeKind.DEFAULT, default=parse_default(cur))
    if cur.accept("ON", "UPDATE"):
        _now(cur)
        return ColumnAttribute(AttributeKind.ON_UPDATE)
    if cur.accept("AUTO_INCREMENT"):
        return ColumnAttribute(AttributeKind.AUTO_INCREMENT)
    if cur.accept("SERIAL", "DEFAULT", "VALUE"):
        return ColumnAttribute(AttributeKind.SERIAL_DEFAULT_VALUE)
    if cur.accept("PRIMARY", "KEY") or cur.accept("KEY"):
        return ColumnAttribute(AttributeKind.PRIMARY_KEY)
    if cur.accept("UNIQUE"):
        cur.accept("KEY")
        return ColumnAttribute(AttributeKind.UNIQUE)
    if cur.accept("COMMENT"):
        return ColumnAttribute(AttributeKind.COMMENT, text=parse_text_literal(cur))
    if cur.accept("COLLATE"):
        tok = cur.next()
        if not (tok.is_identifier or tok.kind is TokenType.STRING):
            cur.pos -= 1
            raise cur.error("expected a collation name")
        return ColumnAttribute(AttributeKind.COLLATE, text=cur.statement.source[tok.start : tok.end])
    _ignored_attribute(cur)
    return None


def _ignored_attribute(cur: Cursor) -> None:
    """Read an attribute that does not change the recorded column, or fail."""
    if cur.accept_any("COLUMN_FORMAT", "STORAGE"):
        cur.next()
    elif cur.accept("SRID"):
        cur.expect_kind(TokenType.NUMBER, "an SRID number")
    elif cur.accept("CONSTRAINT"):
        if not cur.at("CHECK"):
            cur.identifier("a constraint name")
        _check(cur)
    elif cur.at("CHECK"):
        _check(cur)
    elif cur.accept("NOT", "ENFORCED") or cur.accept("ENFORCED") or cur.accept("NOT", "SECONDARY"):
        pass
    elif cur.accept_any("ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
        cur.accept_equals()
        cur.expect_kind(TokenType.STRING, "a JSON attribute string")
    elif cur.accept_any("VISIBLE", "INVISIBLE"):
        pass
    elif cur.at("REFERENCES"):
        skip_references(cur)
    elif cur.accept("COMPRESSED"):
        if cur.accept_kind(TokenType.EQ):
            cur.next()
    elif cur.accept("WITH", "SYSTEM", "VERSIONING") or cur.accept("WITHOUT", "SYSTEM", "VERSIONING"):
        pass
    elif cur.accept("REF_SYSTEM_ID"):
        cur.accept_equals()
        cur.expect_kind(TokenType.NUMBER, "a number")
    else:
        raise cur.error("expected a column attribute")


def _check(cur: Cursor) -> None:
    cur.expect("CHECK")
    cur.skip_parenthesized()
    if not cur.accept("NOT", "ENFORCED"):
        cur.accept("ENFORCED")


def skip_references(cur: Cursor) -> None:
    """``REFERENCES table [(cols)] [MATCH x] [ON DELETE|UPDATE action]...``."""
    cur.expect("REFERENCES")
    cur.qualified_name("a referenced table")
    if cur.kind() is TokenType.L_PAREN:
        cur.skip_parenthesized()
    if cur.accept("MATCH"):
        cur.next()
    while cur.accept("ON"):
        if cur.accept_any("DELETE", "UPDATE") is None:
            raise cur.error("expected DELETE or UPDATE")
        if not (cur.accept("SET", "NULL") or cur.accept("SET", "DEFAULT") or cur.accept("NO", "ACTION")
                or cur.accept_any("RESTRICT", "CASCADE")):
            raise cur.error("expected a referential action")


def _now(cur: Cursor) -> None:
    """``CURRENT_TIMESTAMP``/``NOW``/``LOCALTIME``/``LOCALTIMESTAMP`` with an optional ``(n)``/``()``."""
    if cur.accept_any(*NOW_WORDS) is None:
        raise cur.error("expected CURRENT_TIMESTAMP or NOW()")
    if cur.accept_kind(TokenType.L_PAREN):
        cur.accept_kind(TokenType.NUMBER)
        cur.expect_kind(TokenType.R_PAREN, "')'")


def parse_default(cur: Cursor) -> DefaultValue:
    """The value after ``DEFAULT`` (see the module docstring for the recorded text)."""
    tok = cur.peek()
    if tok is None:
        raise cur.error("expected a default value")
    if tok.kind is TokenType.L_PAREN:
        cur.skip_parenthesized()
        return DefaultValue(DefaultKind.EXPRESSION)
    if tok.word == "NULL":
        cur.pos += 1
        return DefaultValue(DefaultKind.NULL)
    if tok.word in NOW_WORDS:
        _now(cur)
        return DefaultValue(DefaultKind.NOW)
    literal = _literal(cur)
    if literal is not None:
        return DefaultValue(DefaultKind.LITERAL, literal)
    if tok.is_identifier and cur.kind(1) is TokenType.L_PAREN:
        cur.pos += 1
        cur.skip_parenthesized()
        return DefaultValue(DefaultKind.EXPRESSION)
    raise cur.error("expected a default value")


def _literal(cur: Cursor) -> str | None:
    """A signed literal's recorded text (see module docstring), or None if none is here."""
    tok = cur.peek()
    assert tok is not None
    source = cur.statement.source
    if tok.kind in (TokenType.PLUS, TokenType.DASH):
        number = cur.peek(1)
        if number is None or number.kind is not TokenType.NUMBER:
            return None
        cur.pos += 2
        return source[tok.start : tok.end] + source[number.start : number.end]
    if tok.kind is TokenType.NUMBER:
        cur.pos += 1
        return source[tok.start : tok.end]
    if tok.word in ("TRUE", "FALSE"):
        cur.pos += 1
        return source[tok.start : tok.end]
    if tok.word in ("DATE", "TIME", "TIMESTAMP") and cur.kind(1) is TokenType.STRING:
        string = cur.peek(1)
        assert string is not None
        cur.pos += 2
        return source[tok.start : tok.end] + source[string.start : string.end]
    introducer = tok.kind is TokenType.INTRODUCER
    first = cur.peek(1) if introducer else tok
    if first is not None and first.kind in _BINARY_LITERALS:
        cur.pos += 2 if introducer else 1
        raw = source[first.start : first.end]
        return raw[2:-1] if len(raw) > 2 else raw
    if first is not None and first.kind in _STRINGS:
        if introducer:
            cur.pos += 1
        return _strip_quotes(_string_run(cur))
    return None


def _string_run(cur: Cursor) -> str:
    """Adjacent string literals (``'a' 'b'``, ``N'a' 'b'``), their raw texts joined without the
    spaces between (ANTLR's ``getText``)."""
    source = cur.statement.source
    parts: list[str] = []
    while (tok := cur.peek()) is not None and (tok.kind is TokenType.STRING
                                                or (not parts and tok.kind is TokenType.NATIONAL_STRING)):
        parts.append(source[tok.start : tok.end])
        cur.pos += 1
    return "".join(parts)


def _strip_quotes(text: str) -> str:
    """Debezium's ``withoutQuotes``/``unquote``: drop one pair of outer quotes, nothing else."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        return text[1:-1]
    return text


def parse_text_literal(cur: Cursor) -> str:
    """A comment text as Debezium records it: the raw literal(s) minus the outer quotes."""
    tok: Token | None = cur.peek()
    if tok is None or tok.kind not in _STRINGS:
        raise cur.error("expected a quoted string")
    return _strip_quotes(_string_run(cur))


def parse_key(cur: Cursor) -> KeyDefinition:
    """A key, index or constraint definition (the options after the key parts are skipped)."""
    name: str | None = None
    if cur.accept("CONSTRAINT") and not cur.at_any("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
        name = cur.identifier("a constraint name")
    if cur.at("CHECK"):
        _check(cur)
        return KeyDefinition(KeyKind.CHECK, name, ())
    if cur.accept("PRIMARY", "KEY"):
        kind = KeyKind.PRIMARY
    elif cur.accept("UNIQUE"):
        cur.accept_any("KEY", "INDEX")
        kind = KeyKind.UNIQUE
    elif cur.accept("FOREIGN", "KEY"):
        cur.accept("IF", "NOT", "EXISTS")
        if cur.kind() is not TokenType.L_PAREN:
            name = cur.identifier("an index name")
        columns = parse_key_parts(cur)
        skip_references(cur)
        return KeyDefinition(KeyKind.FOREIGN, name, columns)
    elif cur.accept_any("FULLTEXT", "SPATIAL") is not None:
        kind = KeyKind.FULLTEXT if cur.tokens[cur.pos - 1].word == "FULLTEXT" else KeyKind.SPATIAL
        cur.accept_any("KEY", "INDEX")
    elif cur.accept_any("KEY", "INDEX") is not None:
        kind = KeyKind.INDEX
    else:
        raise cur.error("expected PRIMARY KEY, UNIQUE, KEY, INDEX, FULLTEXT, SPATIAL, FOREIGN KEY or CHECK")
    cur.accept("IF", "NOT", "EXISTS")
    if cur.kind() is not TokenType.L_PAREN and not cur.at_any("USING", "TYPE"):
        index_name = cur.identifier("an index name")
        name = name if kind is KeyKind.PRIMARY else index_name
    if cur.accept_any("USING", "TYPE"):
        cur.next()
    columns = parse_key_parts(cur)
    cur.skip_to_comma_or_close()
    return KeyDefinition(kind, name, columns)


def parse_key_parts(cur: Cursor) -> tuple[str | None, ...]:
    """``(col [(n)] [ASC|DESC], (expr) [ASC|DESC], ...)``: column names, None for expressions (and
    for MariaDB's ``period WITHOUT OVERLAPS``)."""
    cur.expect_kind(TokenType.L_PAREN, "'(' and the key columns")
    parts: list[str | None] = []
    while True:
        if cur.kind() is TokenType.L_PAREN:
            cur.skip_parenthesized()
            parts.append(None)
        else:
            parts.append(cur.identifier("a key column"))
            if cur.kind() is TokenType.L_PAREN:
                cur.skip_parenthesized()
            if cur.accept("WITHOUT", "OVERLAPS"):  # MariaDB: the part is an application-time period
                parts[-1] = None
        cur.accept_any("ASC", "DESC")
        if cur.accept_kind(TokenType.COMMA) is None:
            break
    cur.expect_kind(TokenType.R_PAREN, "')'")
    return tuple(parts)
