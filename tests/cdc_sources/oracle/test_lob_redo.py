"""The LOB statement parsers on what they must refuse (what they read is compared with Debezium's
own parsers through its commit consumer in test_lob_merge.py)."""

from __future__ import annotations

import pytest

from cdc_sources.oracle.lob_redo import LobWrite, parse_lob_write, parse_select_lob_locator
from cdc_sources.oracle.redo import UNAVAILABLE, RedoColumn, RedoExpr, RedoParseError, RedoTable
from tests.cdc_sources.oracle.lob_corpus import lob_write, locator

TABLE = RedoTable((RedoColumn("ID"), RedoColumn("NAME"), RedoColumn("DOC", True), RedoColumn("D")))


def test_a_locator_keeps_doubled_quotes_reads_null_and_marks_missing_lobs_unavailable() -> None:
    found = parse_select_lob_locator(locator("DOC", "\"ID\" = '1' and \"NAME\" = 'o''k' and \"D\" = "
                                                    "TO_DATE('2020-01-01', 'YYYY-MM-DD')"), TABLE)
    assert (found.column, found.binary) == ("DOC", False)
    assert found.values == ("1", "o''k", UNAVAILABLE, RedoExpr("TO_DATE('2020-01-01', 'YYYY-MM-DD')"))
    assert parse_select_lob_locator(locator("DOC", "\"ID\" = 'NULL' and \"NAME\" IS NULL", into="loc_b"),
                                    TABLE).values == (None, None, UNAVAILABLE, None)


@pytest.mark.parametrize("sql", [
    "select \"DOC\" into loc_c from \"S\".\"T\" where \"ID\" = '1' for update;",  # no PL/SQL block
    locator("NOPE", "\"ID\" = '1'"),  # no such column
    locator("DOC", "\"ID\" = '1' \"NAME\" = 'x'"),  # no and/or between items
    locator("DOC", "\"ID\" = '1'").replace(" for update;", ";"),
])
def test_a_locator_not_in_logminers_shape_is_an_error(sql: str) -> None:
    with pytest.raises(RedoParseError):
        parse_select_lob_locator(sql, TABLE)


def test_lob_write_reads_offset_length_and_data() -> None:
    assert parse_lob_write(lob_write("'it''s'", 4, 3)) == LobWrite(2, 4, "it's")
    assert parse_lob_write(lob_write("HEXTORAW('0aff')", 2, 1)) == LobWrite(0, 2, "HEXTORAW('0aff')")
    assert parse_lob_write("") is None and parse_lob_write(None) is None
    with pytest.raises(RedoParseError, match="not a LogMiner LOB_WRITE"):
        parse_lob_write("DECLARE BEGIN dbms_lob.trim(loc_c, 3); END;")
