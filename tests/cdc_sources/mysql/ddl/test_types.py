"""Column types as Debezium records them (the conformance test checks many more against Debezium)."""

from __future__ import annotations

import pytest

from cdc_sources.mysql import jdbc
from cdc_sources.mysql.ddl.errors import DdlParseError
from cdc_sources.mysql.ddl.lexer import Cursor, split_statements, tokenize
from cdc_sources.mysql.ddl.types import DataType, enum_literal, enum_member, parse_data_type, parse_length


def _type(text: str) -> DataType:
    statement = split_statements(tokenize(text), text)[0]
    cur = Cursor(statement, None)
    data_type = parse_data_type(cur)
    assert cur.done, f"left over: {text[cur.peek().start:]}"  # type: ignore[union-attr]
    return data_type


@pytest.mark.parametrize(("text", "name", "jdbc", "length", "scale"), [
    ("TINYINT(1)", "TINYINT", jdbc.SMALLINT, 1, None),
    ("BOOL", "BOOL", jdbc.BOOLEAN, None, None),
    ("integer(11) unsigned", "INTEGER UNSIGNED", jdbc.INTEGER, 11, None),
    ("INT ZEROFILL SIGNED", "INT UNSIGNED ZEROFILL", jdbc.INTEGER, None, None),
    ("INT UNSIGNED SIGNED", "INT SIGNED", jdbc.INTEGER, None, None),
    ("BIGINT UNSIGNED", "BIGINT UNSIGNED", jdbc.BIGINT, None, None),
    ("SERIAL", "BIGINT UNSIGNED", jdbc.BIGINT, None, None),
    ("DECIMAL", "DECIMAL", jdbc.DECIMAL, 10, 0),
    ("NUMERIC(7)", "NUMERIC", jdbc.NUMERIC, 7, 0),
    ("double precision(10,2) unsigned", "DOUBLE PRECISION UNSIGNED", jdbc.DOUBLE, 10, 2),
    ("FLOAT(7,3)", "FLOAT", jdbc.FLOAT, 7, 3),
    ("BIT", "BIT", jdbc.BIT, 1, None),
    ("VARCHAR(0)", "VARCHAR", jdbc.VARCHAR, 10, None),
    ("CHAR(10) BINARY", "CHAR BINARY", jdbc.CHAR, 10, None),
    ("NCHAR", "NCHAR", jdbc.NCHAR, 1, None),
    ("TIMESTAMP(0)", "TIMESTAMP", jdbc.TIMESTAMP_WITH_TIMEZONE, 0, None),
    ("DATETIME(6)", "DATETIME", jdbc.TIMESTAMP, 6, None),
    ("LONG VARBINARY", "LONG VARBINARY", jdbc.BLOB, None, None),
    ("JSON", "JSON", jdbc.OTHER, None, None),
    ("GEOMCOLLECTION", "GEOMCOLLECTION", jdbc.OTHER, None, None),
    ("INET6", "INET6", jdbc.OTHER, None, None),
    ("uuid", "UUID", jdbc.OTHER, None, None),
])
def test_type_names_lengths_and_jdbc_types(text: str, name: str, jdbc: int, length: int | None,
                                           scale: int | None) -> None:
    data_type = _type(text)
    assert (data_type.type_name, data_type.jdbc_type, data_type.length, data_type.scale) == (name, jdbc, length, scale)


def test_charsets_after_the_type() -> None:
    assert _type("VARCHAR(3) CHARACTER SET latin1").charset == "latin1"
    assert _type("TEXT CHARSET `utf8mb4`").charset == "utf8mb4"
    assert _type("VARCHAR(3) BINARY CHARSET ascii").type_name == "VARCHAR BINARY"
    assert _type("CHAR(2) ASCII").charset is None
    assert _type("NATIONAL VARCHAR(4)").charset == "utf8"
    assert _type("ENUM('a') CHARACTER SET 'latin1'").charset == "'latin1'"


def test_enum_and_set_members_keep_their_quotes() -> None:
    enum = _type("ENUM('a', 'b,c', 'it''s', \"dq\")")
    assert (enum.length, enum.enum_literals) == (1, ("'a'", "'b,c'", "'it''s'", '"dq"'))
    assert _type("SET('x', 'y', 'z')").length == 5
    assert _type("ENUM('x') BINARY").type_name == "ENUM BINARY"


@pytest.mark.parametrize(("text", "value"), [("12", 12), ("19.5", 19), ("0", 10), ("-3", 10), ("9" * 12, 2**31 - 1),
                                             ("x", 10)])
def test_lengths_are_read_like_debezium(text: str, value: int) -> None:
    assert parse_length(text) == value


@pytest.mark.parametrize("text", ["VARCHAR", "VARBINARY", "FOO(3)", "DECIMAL(10,)", "ENUM()", "ENUM(a)"])
def test_bad_types_are_errors(text: str) -> None:
    with pytest.raises(DdlParseError):
        _type(text)


@pytest.mark.parametrize(("literal", "member"), [("'a'", "a"), ("'it''s'", "it's"), ("'back\\'s'", "back's"),
                                                 ("'a,b'", "a,b"), ("'x\\\\y'", "x\\\\y"), ("''", "")])
def test_enum_members_are_read_like_debeziums_converters(literal: str, member: str) -> None:
    assert enum_member(literal) == member
    assert enum_member(enum_literal(member)) == member
