"""The captured-table list kept in the offsets, and what a restart with other filters makes of it."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import orjson
import pytest

from cdc_sources.common.captured_tables import (
    K_CAPTURED_TOPICS,
    CapturedTables,
    NewTablesMode,
    stored_topics,
    table_changes,
)
from cdc_sources.spi import Checkpoint, OffsetWithExtras, connector_offset


class _Offset:
    def __init__(self, lsn: int) -> None:
        self.lsn = lsn

    def to_dict(self) -> dict[str, object]:
        return {"lsn": self.lsn}


def _tracker(stored: dict[str, object] | None, tables: list[tuple[str, str]], mode: NewTablesMode,
             snapshotted_now: bool = False) -> CapturedTables:
    return CapturedTables(stored_offset=stored, tables=lambda: tables, prefix="pg", delimiter=".", mode=mode,
                          snapshotted_now=snapshotted_now)


def _stored(*topics: str) -> dict[str, object]:
    return {"lsn": 7, K_CAPTURED_TOPICS: orjson.dumps(list(topics)).decode()}


def test_changes_name_added_tables_and_removed_topics() -> None:
    changes = table_changes(frozenset({"pg.public.a", "pg.public.gone"}), [("public", "a"), ("public", "new")],
                            lambda t: f"pg.{t[0]}.{t[1]}")
    assert changes.added == (("public", "new"),)
    assert changes.removed == ("pg.public.gone",)


def test_offsets_without_the_list_record_nothing() -> None:
    assert stored_topics(None) is None
    assert stored_topics({"lsn": 1}) is None
    assert stored_topics(_stored("pg.public.a")) == {"pg.public.a"}


def test_every_checkpoint_records_the_captured_topics_beside_the_connector_offset() -> None:
    tracker = _tracker(None, [("public", "b"), ("public", "a")], NewTablesMode.INCREMENTAL)
    base = _Offset(42)
    out = list(tracker.wrap(iter([Checkpoint(base, idle=True)])))
    assert len(out) == 1 and isinstance(out[0], Checkpoint) and out[0].idle
    assert connector_offset(out[0].offset) is base
    assert isinstance(out[0].offset, OffsetWithExtras)
    assert orjson.loads(out[0].offset.to_dict()[K_CAPTURED_TOPICS]) == ["pg.public.a", "pg.public.b"]


def _started(tracker: CapturedTables, unavailable: str | None = None) -> list[tuple[Sequence[tuple[str, str]], str]]:
    calls: list[tuple[Sequence[tuple[str, str]], str]] = []
    tracker.start(can_snapshot=unavailable, snapshot=lambda tables, cid: calls.append((tables, cid)))
    return calls


def test_an_added_table_is_snapshotted_alone_with_the_same_id_on_every_start_from_that_offset() -> None:
    stored = _stored("pg.public.a")
    first = _started(_tracker(stored, [("public", "a"), ("public", "n")], NewTablesMode.INCREMENTAL))
    again = _started(_tracker(stored, [("public", "a"), ("public", "n")], NewTablesMode.INCREMENTAL))
    assert [list(t) for t, _ in first] == [[("public", "n")]]
    assert first == again
    other = _started(_tracker(_stored("pg.public.a", "pg.public.x"), [("public", "a"), ("public", "n")],
                              NewTablesMode.INCREMENTAL))
    assert other[0][1] != first[0][1]


@pytest.mark.parametrize("case", ["fresh", "old offset", "snapshotted now", "off", "nothing added"])
def test_no_snapshot_when_nothing_is_new_or_the_mode_is_off(case: str) -> None:
    tables = [("public", "a"), ("public", "n")]
    stored: dict[str, object] | None = {
        "fresh": None, "old offset": {"lsn": 3}, "snapshotted now": _stored("pg.public.a"),
        "off": _stored("pg.public.a"), "nothing added": _stored("pg.public.a", "pg.public.n")}[case]
    mode = NewTablesMode.OFF if case == "off" else NewTablesMode.INCREMENTAL
    tracker = _tracker(stored, tables, mode, snapshotted_now=case == "snapshotted now")
    assert _started(tracker) == []
    assert orjson.loads(tracker.extras()[K_CAPTURED_TOPICS]) == ["pg.public.a", "pg.public.n"]


def test_a_table_that_cannot_be_snapshotted_is_not_recorded_so_the_next_start_tries_again(caplog) -> None:
    tracker = _tracker(_stored("pg.public.a"), [("public", "a"), ("public", "n")], NewTablesMode.INCREMENTAL)
    with caplog.at_level(logging.WARNING):
        assert _started(tracker, unavailable="no signal table") == []
    assert "public.n" in caplog.text and "no signal table" in caplog.text
    assert orjson.loads(tracker.extras()[K_CAPTURED_TOPICS]) == ["pg.public.a"]


def test_a_removed_table_is_logged_and_dropped_from_the_list(caplog) -> None:
    tracker = _tracker(_stored("pg.public.a", "pg.public.gone"), [("public", "a")], NewTablesMode.INCREMENTAL)
    with caplog.at_level(logging.INFO):
        assert _started(tracker) == []
    assert "pg.public.gone is no longer captured" in caplog.text
    assert orjson.loads(tracker.extras()[K_CAPTURED_TOPICS]) == ["pg.public.a"]


@pytest.mark.parametrize("connector", ["postgres", "mariadb"])
def test_a_bad_mode_is_refused_at_validation_with_its_file_line_and_key(connector: str, tmp_path, capsys) -> None:
    from pipelines.cli import main

    path = tmp_path / "p.yaml"
    server_id = "      database.server.id: 5\n" if connector == "mariadb" else "      slot.name: s\n"
    path.write_text(f"pipeline: x\nlakehouse: {{root: ./lake}}\nsources:\n  - name: a\n    connector: {connector}\n"
                    "    connection: {host: h, database: d, user: u}\n"
                    f"    options:\n{server_id}      snapshot.new.tables.mode: parallel\n")
    assert main(["validate", "-c", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:9: sources[0].options.snapshot.new.tables.mode: invalid value 'parallel'" in err
    assert "incremental" in err and "Traceback" not in err
