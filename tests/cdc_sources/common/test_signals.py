"""The signal parser, item by item against Debezium's documented signal formats (reference §4)."""

from __future__ import annotations

import pytest

from cdc_sources.common.signal_options import SignalChannel, WatermarkStrategy, signal_problems, signal_settings
from cdc_sources.common.signals import (
    AdditionalCondition,
    ExecuteSnapshot,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalError,
    SignalKind,
    SnapshotKind,
    StopSnapshot,
    Watermark,
    parse_collection,
    parse_signal,
    parse_signal_line,
    signal_line,
)

W = "signal table public.dbz_signal"


def test_execute_snapshot_the_documented_example():
    data = ('{"data-collections": ["schema1.table1", "schema1.table2"], "type":"incremental", '
            '"additional-conditions":[{"data-collection": "schema1.table1" ,"filter":"color=\'blue\'"}]}')
    s = parse_signal("ad-hoc-1", "execute-snapshot", data, where=W)
    a = s.action
    assert isinstance(a, ExecuteSnapshot) and s.kind is SignalKind.EXECUTE_SNAPSHOT
    assert [c.parts for c in a.collections] == [("schema1", "table1"), ("schema1", "table2")]
    assert a.kind is SnapshotKind.INCREMENTAL and a.surrogate_key is None
    assert a.condition_for("schema1", "table1") == "color='blue'" and a.condition_for("schema1", "table2") is None


def test_execute_snapshot_type_defaults_to_incremental_and_is_case_insensitive():
    assert parse_signal("1", "execute-snapshot", '{"data-collections": ["a.b"]}', where=W).action.kind \
        is SnapshotKind.INCREMENTAL  # type: ignore[union-attr]
    assert parse_signal("1", "execute-snapshot", '{"data-collections": ["a.b"], "type": "BLOCKING"}',
                        where=W).action.kind is SnapshotKind.BLOCKING  # type: ignore[union-attr]


def test_execute_snapshot_surrogate_key_and_empty_collections():
    a = parse_signal("1", "execute-snapshot", {"data-collections": ["a.b"], "surrogate-key": "ord"}, where=W).action
    assert isinstance(a, ExecuteSnapshot) and a.surrogate_key == "ord"
    empty = parse_signal("1", "execute-snapshot", {"data-collections": []}, where=W).action
    assert isinstance(empty, ExecuteSnapshot) and empty.collections == ()  # Debezium: no action


@pytest.mark.parametrize(("data", "message"), [
    ({}, "data-collections is required"),
    ({"data-collections": "a.b", "type": "sideways"}, "type must be incremental or blocking"),
    ({"data-collections": [1]}, "data-collections must be a list"),
    ({"data-collections": ["a.b"], "additional-conditions": [{"filter": "x"}]}, "additional-conditions[0]"),
    ('{"data-collections": ', "data is not JSON"),
    ("[1]", "data must be a JSON object"),
])
def test_execute_snapshot_errors_name_the_signal_and_the_field(data, message):
    with pytest.raises(SignalError, match="signal 'x' \\(execute-snapshot\\) from signal table") as info:
        parse_signal("x", "execute-snapshot", data, where=W)
    assert message in str(info.value)


def test_stop_snapshot_needs_its_type():
    with pytest.raises(SignalError, match=r"data\.type is required"):
        parse_signal("1", "stop-snapshot", '{"data-collections": ["a.b"]}', where=W)
    a = parse_signal("1", "stop-snapshot", '{"type": "incremental"}', where=W).action
    assert a == StopSnapshot(SnapshotKind.INCREMENTAL, ())
    named = parse_signal("1", "stop-snapshot", '{"type": "incremental", "data-collections": ["s.t"]}', where=W)
    assert [c.parts for c in named.action.collections] == [("s", "t")]  # type: ignore[union-attr]


def test_pause_resume_log_and_watermarks():
    assert parse_signal("1", "pause-snapshot", None, where=W).action == PauseSnapshot()
    assert parse_signal("1", "resume-snapshot", "", where=W).action == ResumeSnapshot()
    assert parse_signal("1", "log", '{"message": "hi"}', where=W).action == LogMessage("hi")
    with pytest.raises(SignalError, match=r"data\.message"):
        parse_signal("1", "log", "{}", where=W)
    assert parse_signal("c1-open", "snapshot-window-open", None, where=W).action == Watermark(True, "c1")
    assert parse_signal("c1-close", "snapshot-window-close", None, where=W).action == Watermark(False, "c1")
    with pytest.raises(SignalError, match="unknown signal type 'schema-changes'"):
        parse_signal("1", "schema-changes", None, where=W)


def test_dotted_names_need_double_quotes():
    c = parse_collection('public."My.Table"')
    assert c.parts == ("public", "My.Table") and c.quoted
    assert c.matches("public", "My.Table") and not c.matches("public", "MyxTable")
    assert c.identifier == 'public."My.Table"'
    assert parse_collection('"a""b".t').parts == ('a"b', "t")
    regex = parse_collection("public.item.*")  # unquoted: a regular expression over schema.table
    assert regex.matches("public", "items") and regex.matches("public", "item") and not regex.matches("other", "items")
    with pytest.raises(ValueError, match="unbalanced double quote"):
        parse_collection('public."oops')


def test_names_with_a_qualifier_name_the_database_first():
    # SQL Server's data collections are <database>.<schema>.<table>
    exact = parse_collection('shop."dbo".items')
    assert exact.matches("dbo", "items", "shop") and not exact.matches("dbo", "items", "other")
    assert not exact.matches("dbo", "items")
    regex = parse_collection("shop.dbo.item.*")
    assert regex.matches("dbo", "items", "shop") and not regex.matches("dbo", "items", "shop2")
    assert not parse_collection("dbo.items").matches("dbo", "items", "shop")
    a = ExecuteSnapshot((regex,), conditions=(AdditionalCondition(parse_collection("shop.dbo.items"), "qty > 1"),))
    assert a.condition_for("dbo", "items", "shop") == "qty > 1" and a.condition_for("dbo", "items") is None


def test_file_channel_lines_round_trip():
    sig = Signal("f-1", ExecuteSnapshot((parse_collection("public.items"),), SnapshotKind.INCREMENTAL,
                                        (AdditionalCondition(parse_collection("public.items"), "id > 5"),), "ord"))
    line = signal_line(sig)
    assert parse_signal_line(line, where="f:1") == sig
    with pytest.raises(SignalError, match="f:2: not a JSON object"):
        parse_signal_line("nope", where="f:2")
    with pytest.raises(SignalError, match='f:3: the signal has no "type"'):
        parse_signal_line('{"id": "x"}', where="f:3")


def test_signal_options_defaults_and_problems():
    s = signal_settings({"signal.enabled.channels": ("source",), "signal.data.collection": "public.dbz_signal"})
    assert s.source_enabled and not s.file_enabled and s.file == "file-signals.txt" and s.poll_interval_s == 5.0
    assert s.channels == {SignalChannel.SOURCE}
    assert s.watermarking is WatermarkStrategy.INSERT_INSERT
    problems = signal_problems({"signal.enabled.channels": "source,kafka", "signal.data.collection": "nodot",
                                "incremental.snapshot.watermarking.strategy": "insert_delete"}, "p")
    assert [(p.path, p.message) for p in problems] == [
        ("p.signal.enabled.channels", "unsupported channel 'kafka'; supported: source, file"),
        ("p.signal.data.collection", "must be <schema>.<table>, got 'nodot'")]
    assert signal_settings({"incremental.snapshot.watermarking.strategy": "insert_delete"}).watermarking \
        is WatermarkStrategy.INSERT_DELETE


def test_insert_delete_with_deletes_skipped_is_a_problem():
    """insert_delete closes windows with deletes: skipping deletes would leave every window open."""
    problems = signal_problems({"incremental.snapshot.watermarking.strategy": "insert_delete",
                                "skipped.operations": "t, d"}, "p")
    assert [p.path for p in problems] == ["p.incremental.snapshot.watermarking.strategy"]
    assert "skipped.operations drops deletes" in problems[0].message
    assert signal_problems({"incremental.snapshot.watermarking.strategy": "insert_insert",
                            "skipped.operations": "d"}, "p") == []
    assert signal_problems({"incremental.snapshot.watermarking.strategy": "insert_delete",
                            "skipped.operations": "t"}, "p") == []
