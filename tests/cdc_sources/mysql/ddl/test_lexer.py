"""The lexing steps: Debezium's normalisation, version comments, tokens and statement splitting."""

from __future__ import annotations

import pytest

from cdc_sources.mysql.ddl.errors import DdlParseError
from cdc_sources.mysql.ddl.lexer import normalize, open_version_comments, split_statements, tokenize


def _statements(text: str) -> list[str]:
    display = normalize(text)
    source = open_version_comments(display)
    return [s.text for s in split_statements(tokenize(source), source, display)]


@pytest.mark.parametrize(("text", "expected"), [
    ("DEFAULT \"it's\"", "DEFAULT 'it''s'"),
    ("COMMENT \"a\"\"b\"", "COMMENT 'a\"\"b'"),
    ("DEFAULT 'keep \"this\"'", "DEFAULT 'keep \"this\"'"),
    ("`col \"x\"` INT", "`col \"x\"` INT"),
    ("-- \"comment\"\nx", "-- \"comment\"\nx"),
    ("CREATE TABLE rank (a INT)", "CREATE TABLE `rank` (a INT)"),
    ("CREATE TABLE t (lead INT, x INT)", "CREATE TABLE t (`lead` INT, x INT)"),
])
def test_normalize_like_debezium(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_ansi_quotes_keep_double_quotes() -> None:
    assert normalize('CREATE TABLE "t" (a INT)', ansi_quotes=True) == 'CREATE TABLE "t" (a INT)'
    assert [t.text for t in tokenize('"t"', ansi_quotes=True)] == ["t"]


def test_version_comments_are_opened_in_place() -> None:
    text = "CREATE TABLE t (a INT) /*!50100 PARTITION BY KEY (a) */ /*M!100301 COMPRESSED*/ '/*!x */'"
    opened = open_version_comments(text)
    assert len(opened) == len(text)
    assert "PARTITION BY KEY (a)" in opened and "/*!" not in opened.split("'")[0]
    assert "/*M!100301 COMPRESSED*/" in opened
    assert opened.endswith("'/*!x */'")


def test_statements_split_at_top_level_semicolons() -> None:
    text = "CREATE TABLE a (x VARCHAR(3) DEFAULT ';'); /* ; */ DROP TABLE b -- ;\n; ;"
    assert _statements(text) == ["CREATE TABLE a (x VARCHAR(3) DEFAULT ';')", "DROP TABLE b"]


@pytest.mark.parametrize("text", [
    "CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END",
    "CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN DECLARE x INT; SET x = 1; END",
    "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; SET NEW.b = 2; END",
    "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO BEGIN DELETE FROM t; DELETE FROM u; END",
    "BEGIN NOT ATOMIC SELECT 1; SELECT 2; END",
])
def test_routine_bodies_stay_whole(text: str) -> None:
    assert _statements(text) == [text]


def test_a_table_named_like_a_routine_kind_is_still_split() -> None:
    assert _statements("CREATE TABLE event (a INT); CREATE TABLE b (c INT)") == [
        "CREATE TABLE event (a INT)", "CREATE TABLE b (c INT)"]


def test_tokens_keep_offsets_and_split_keyword_pairs() -> None:
    tokens = tokenize("PRIMARY   KEY DOUBLE PRECISION")
    assert [(t.word, t.start, t.end) for t in tokens] == [
        ("PRIMARY", 0, 7), ("KEY", 10, 13), ("DOUBLE", 14, 20), ("PRECISION", 21, 30)]


def test_tokens_mysql_numbers_and_names() -> None:
    tokens = tokenize("DEFAULT .5 1st t.c RENAME TABLE a")
    assert [t.text for t in tokens] == ["DEFAULT", ".5", "1st", "t", ".", "c", "RENAME", "TABLE", "a"]
    assert tokens[1].word is None and tokens[2].word == "1ST"


def test_unterminated_string_is_reported_where_it_starts() -> None:
    with pytest.raises(DdlParseError) as info:
        tokenize("CREATE TABLE t (a VARCHAR(3) DEFAULT 'x)")
    assert info.value.position == 37
    assert "unterminated" in info.value.reason
