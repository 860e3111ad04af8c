"""``cdc-lakehouse status`` shows the snapshot under way at the committed offset (real PostgreSQL for
the incremental one; hand-written offsets for the parsing and the lines)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import psycopg
import pytest

from cdc_sources.common.signals import SnapshotKind
from pipelines.cli import main
from pipelines.snapshot_status import RunningSnapshot, running_snapshots, snapshot_lines
from tests.support.incremental_pg import pipeline_text, setup_items, signal


def _status(capsys: pytest.CaptureFixture[str], config: Path) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["status", "-c", str(config), "--json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main(["status", "-c", str(config)]) == 0
    return as_json, capsys.readouterr().out


@pytest.mark.integration
@pytest.mark.postgres
def test_status_shows_a_paused_incremental_snapshot_until_it_completes(pg_db, tmp_path, capsys):
    setup_items(pg_db, 230)
    with psycopg.connect(pg_db) as conn:
        ids = [str(r[0]) for r in conn.execute("SELECT id FROM items ORDER BY id")]
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(tmp_path / "lake"), pg_db, **{"snapshot.mode": "no_data"}))
    assert main(["capture", "-c", str(config), "--until-idle", "-q"]) == 0
    signal(pg_db, "p-1", "execute-snapshot", {"data-collections": ["public.items"]})
    signal(pg_db, "p-2", "pause-snapshot", None)  # the first chunk (50 rows) is read before it takes effect
    assert main(["capture", "-c", str(config), "--until-idle", "-q"]) == 0

    as_json, text = _status(capsys, config)
    (snap,) = as_json["sources"][0]["snapshots"]
    assert snap["correlation_id"].startswith("p-1@")
    assert {k: v for k, v in snap.items() if k != "correlation_id"} == {
        "type": "incremental", "tables": ["public.items"], "paused": True, "after_key": [ids[49]],
        "up_to_key": [ids[-1]]}
    assert (f"  snapshot:      incremental snapshot {snap['correlation_id']}: paused, reading public.items "
            f"after key {orjson.dumps([ids[49]]).decode()} up to {orjson.dumps([ids[-1]]).decode()}\n") in text

    signal(pg_db, "p-3", "resume-snapshot", None)
    assert main(["capture", "-c", str(config), "--until-idle", "-q"]) == 0
    as_json, text = _status(capsys, config)
    assert as_json["sources"][0]["snapshots"] == []
    assert "snapshot:" not in text


def test_running_snapshots_read_from_an_offset():
    offset = {
        "lsn": 1234,
        "incremental_snapshot_collections": json.dumps([
            {"incremental_snapshot_collections_id": "public.a", "schema": "public", "table": "a"},
            {"incremental_snapshot_collections_id": "public.b", "schema": "public", "table": "b"}]),
        "incremental_snapshot_primary_key": '["7", "x"]',
        "incremental_snapshot_maximum_key": '["90", "z"]',
        "incremental_snapshot_correlation_id": "sig-1@55",
        "blocking_snapshot_id": "b-1@60",
        "blocking_snapshot_collections": json.dumps([{"schema": "public", "table": "c", "select": None}]),
        "blocking_snapshot_order_key": "[60, 1]",
        "blocking_snapshot_position": "{}",
    }
    assert running_snapshots(offset) == (
        RunningSnapshot(SnapshotKind.INCREMENTAL, "sig-1@55", ("public.a", "public.b"), False, ("7", "x"), ("90", "z")),
        RunningSnapshot(SnapshotKind.BLOCKING, "b-1@60", ("public.c",)))
    assert running_snapshots({"lsn": 1}) == () and running_snapshots(None) == ()
    # a SQL Server source capturing several databases: each database's offset holds its own
    several = {"partitions": [{"partition": {"server": "ms", "database": "a"}, "offset": {"commit_lsn": "NULL"}},
                              {"partition": {"server": "ms", "database": "b"}, "offset": offset}]}
    assert running_snapshots(several) == running_snapshots(offset)
    with pytest.raises(ValueError, match="snapshot progress cannot be read"):
        running_snapshots({"incremental_snapshot_collections": "[{"})


def test_snapshot_lines():
    assert snapshot_lines([
        RunningSnapshot(SnapshotKind.INCREMENTAL, "s", ("public.a", "public.b")),
        RunningSnapshot(SnapshotKind.INCREMENTAL, "t", ("public.a",), True, ("3",), ("9",)),
        RunningSnapshot(SnapshotKind.BLOCKING, "b", ("public.c", "public.d")),
    ]) == [
        "incremental snapshot s: running, reading public.a; then public.b",
        'incremental snapshot t: paused, reading public.a after key ["3"] up to ["9"]',
        "blocking snapshot b: reading public.c, public.d (streaming paused)",
    ]
