"""cdc_sources.oracle.redo against Debezium 3.6.3's LogMinerDmlParser, column by column."""

from __future__ import annotations

import pytest

from cdc_sources.oracle.redo import UNAVAILABLE, RedoColumn, RedoParseError, RedoTable, RedoValue, parse_redo
from tests.cdc_sources.oracle.java_probe import run_probe
from tests.cdc_sources.oracle.redo_corpus import HAND, JDBC_TYPES, REJECTED, REJECTED_HERE_ONLY, RedoCase, corpus


def probe_columns(case: RedoCase) -> str:
    return "\n".join(f"{c.name}:{JDBC_TYPES[c.type]}:{c.length}" for c in case.columns)


def ours(case: RedoCase) -> list[str]:
    table = RedoTable(tuple(RedoColumn.of_type(c.name, c.type, c.length) for c in case.columns))
    try:
        dml = parse_redo(case.sql, table)
    except RedoParseError:
        return ["ERR"]
    width = len(case.columns)

    def cell(v: RedoValue) -> str:
        return "\0N" if v is None else "\0U" if v is UNAVAILABLE else str(v)

    before = dml.before or (None,) * width
    after = dml.after or (None,) * width
    return [dml.kind.name, *(cell(v) for v in before), *(cell(v) for v in after)]


def debezium(cases: list[RedoCase]) -> list[list[str]]:
    answers = run_probe("RedoParserProbe.java", [(probe_columns(c), c.sql) for c in cases])
    assert len(answers) == len(cases)
    return [["ERR"] if a[0].startswith("ERR:") else a for a in answers]


@pytest.fixture(scope="module")
def answers() -> dict[RedoCase, list[str]]:
    """Debezium's answer for every case of the module, from one JVM run (each start costs seconds)."""
    cases = corpus() + REJECTED + REJECTED_HERE_ONLY
    return dict(zip(cases, debezium(cases), strict=True))


def test_corpus_is_large_and_covers_every_literal_form() -> None:
    cases = corpus()
    assert len(cases) >= 300
    text = "\n".join(c.sql for c in cases)
    for form in ("''", "TO_DATE(", "TO_TIMESTAMP(", "TO_TIMESTAMP_TZ(", ") || UNISTR(", "HEXTORAW(",
                 "EMPTY_CLOB()", "EMPTY_BLOB()", "IS NULL", "Unsupported Type", '"OBJ# ', "= NULL"):
        assert form in text, form
    assert {c.sql.split(" ")[0] for c in cases} == {"insert", "update", "delete"}


def test_every_statement_parses_as_debezium_parses_it(answers: dict[RedoCase, list[str]]) -> None:
    cases = corpus() + REJECTED
    theirs = [answers[c] for c in cases]
    differ = [(c.sql, o, t) for c, o, t in zip(cases, map(ours, cases), theirs, strict=True) if o != t]
    assert not differ, "\n\n".join(f"{sql}\n ours:     {o}\n debezium: {t}" for sql, o, t in differ[:5])
    assert sum(a == ["ERR"] for a in theirs) == len(REJECTED)
    assert HAND[0].sql.startswith("insert")


def test_malformed_statements_are_errors_here(answers: dict[RedoCase, list[str]]) -> None:
    """Debezium's character scanner passes over these; a LogMiner statement never looks like them."""
    theirs = [answers[c] for c in REJECTED_HERE_ONLY]
    assert all(t != ["ERR"] for t in theirs)
    assert [ours(c) for c in REJECTED_HERE_ONLY] == [["ERR"]] * len(REJECTED_HERE_ONLY)
