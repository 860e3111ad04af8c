"""LOB operations merged at commit (``lob.enabled``) against Debezium 3.6.3's own
``TransactionCommitConsumer``, fed by its own parsers (``LogMinerDmlParser``, ``SelectLobParser``,
``LobWriteParser``) through the Java probe ``LobMergeProbe.java``: the same changes come out, in the
same order, with the same before and after values, on the corpus of `lob_corpus`."""

from __future__ import annotations

import functools
from datetime import datetime

import pytest

from cdc_sources.oracle.converters import OracleColumn, OracleType
from cdc_sources.oracle.envelope import OracleTable
from cdc_sources.oracle.lob_merge import LobMergeError, MergedChange, MergedValue, merge_lobs
from cdc_sources.oracle.redo import UNAVAILABLE
from cdc_sources.oracle.transactions import BufferedChange, ChangeKind, LogMinerRow
from tests.cdc_sources.oracle.java_probe import run_probe
from tests.cdc_sources.oracle.lob_corpus import CASES, INS, R1, SEL, STD, WRITE, LobCase, lob_write, locator

_TYPES = {2005: OracleType.CLOB, 2011: OracleType.NCLOB, 2004: OracleType.BLOB, 2: OracleType.NUMBER,
          12: OracleType.VARCHAR2}
_KINDS = {1: ChangeKind.INSERT, 2: ChangeKind.DELETE, 3: ChangeKind.UPDATE, 9: ChangeKind.SELECT_LOB_LOCATOR,
          10: ChangeKind.LOB_WRITE, 29: ChangeKind.LOB_ERASE}


def table_of(case: LobCase) -> OracleTable:
    return OracleTable("DEBEZIUM", "T", tuple(OracleColumn(n, _TYPES[t], length) for n, t, length in case.columns),
                       case.key)


def changes_of(case: LobCase) -> list[BufferedChange]:
    return [BufferedChange(_KINDS[op], LogMinerRow(100 + i, op, "tx", sql, datetime(2026, 1, 1), table_name="T",
                                                   seg_owner="DEBEZIUM", row_id=row_id))
            for i, (op, row_id, sql) in enumerate(case.rows)]


def ours(case: LobCase) -> list[str]:
    table = table_of(case)
    merged = merge_lobs(changes_of(case), lambda owner, name: table if (owner, name) == ("DEBEZIUM", "T") else None)
    return [_render(m) for m in merged]


def _text(v: MergedValue) -> str:
    if v is None:
        return "\0N"
    if v is UNAVAILABLE:
        return "\0U"
    if isinstance(v, bytes):
        return "\0B" + v.hex()
    return str(v)


def _render(m: MergedChange) -> str:
    kind = {ChangeKind.INSERT: "INSERT", ChangeKind.UPDATE: "UPDATE", ChangeKind.DELETE: "DELETE"}[m.kind]
    return "\x1f".join([kind, *(_text(v) for v in m.before), "|", *(_text(v) for v in m.after)])


REPLACED = LobCase("a write after the locator's value was replaced", STD, ("ID",), (
    (INS, R1, "insert into \"DEBEZIUM\".\"T\"(\"ID\",\"NAME\",\"DOC\",\"PIC\") values ('1','a',EMPTY_CLOB(),"
              "EMPTY_BLOB());"),
    (SEL, R1, locator("DOC", "\"ID\" = '1' and \"NAME\" = 'a'")),
    (3, R1, "update \"DEBEZIUM\".\"T\" set \"DOC\" = 'x' where \"ID\" = '1' and \"NAME\" = 'a';"),
    (WRITE, R1, lob_write("'y'", 1, 1)),
))


@functools.cache
def answers() -> dict[str, list[str]]:
    """Debezium's answers for the corpus and `REPLACED`, from one run of the probe."""
    cases = (*CASES, REPLACED)
    return {c.name: a for c, a in zip(cases, debeziums(cases), strict=True)}


def debeziums(cases: tuple[LobCase, ...]) -> list[list[str]]:
    lines = [("\n".join(f"{n}:{t}:{length}" for n, t, length in c.columns), ",".join(c.key),
              "\x1e".join(f"{op}\x1f{row_id}\x1f{sql}" for op, row_id, sql in c.rows)) for c in cases]
    answers = run_probe("LobMergeProbe.java", lines)
    # Debezium's emitter makes a SELECT_LOB_LOCATOR event an update (LogMinerChangeRecordEmitter)
    return [[] if a == [""] else [e.replace("SELECT_LOB_LOCATOR", "UPDATE", 1) if e.startswith("SELECT_LOB_LOCATOR")
                                  else e for e in a] for a in answers]


def test_lob_operations_merge_as_debeziums_commit_consumer_merges_them() -> None:
    expected = answers()
    assert not [a for c, a in expected.items() if c != REPLACED.name and a and a[0].startswith("ERR:")], expected
    for case in CASES:
        assert ours(case) == expected[case.name], case.name


def test_the_corpus_shows_what_it_claims() -> None:
    """The oracle's answers on a few cases, spelled out (so the comparison above is not vacuous)."""
    by_name = answers()
    assert by_name["insert with a CLOB and a BLOB written"] == ["INSERT\x1f|\x1f1\x1fa\x1fhello world\x1f\0B0102ff"]
    assert by_name["update of the CLOB only, through the locator"] == [
        "UPDATE\x1f4\x1fd\x1f\0U\x1f\0U\x1f|\x1f4\x1fd\x1fnew text\x1f\0U"]
    assert by_name["update of a non-LOB column: LOBs unavailable"] == [
        "UPDATE\x1f5\x1fe\x1f\0U\x1f\0U\x1f|\x1f5\x1fe2\x1f\0U\x1f\0U"]
    assert len(by_name["two non-LOB updates of one row stay two events"]) == 2
    # the locator's LOB starts from UNAVAILABLE, which is no value: null, unlike the before image
    assert by_name["a lone locator is an update with a null LOB"][-1] == (
        "UPDATE\x1f21\x1fu\x1f\0U\x1f\0U\x1f|\x1f21\x1fu\x1f\0N\x1f\0U")


def test_a_write_after_the_locators_value_was_replaced_is_an_error() -> None:
    """Debezium fails with a ClassCastException; the connector names the row."""
    assert answers()[REPLACED.name][0].startswith("ERR:ClassCastException")
    with pytest.raises(LobMergeError, match="replaced after its SELECT_LOB_LOCATOR"):
        ours(REPLACED)
