"""``cdc-lakehouse maintain`` from the command line: options in the pipeline YAML, a dry run
that changes nothing, usage errors with exit 2; no database is needed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from pipelines.cli import EXIT_CONFIG, main
from pipelines.config import parse_pipeline

PIPELINE = """pipeline: p
lakehouse: {{root: "{root}"}}
sources:
  - {{name: pg, connector: postgres, connection: {{database: d, user: u}}}}
{extra}"""


def _write(tmp_path, extra: str = "") -> str:
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE.format(root=tmp_path / "lake", extra=extra))
    return str(path)


def test_maintenance_options_are_validated_with_file_line_and_key(tmp_path, capsys):
    path = _write(tmp_path, "maintenance:\n  vacuum_retention_hours: -1\n  compact: yes\n")
    assert main(["validate", "-c", path]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "p.yaml:6: maintenance.vacuum_retention_hours" in err
    assert "p.yaml:7: maintenance.compact: unknown key" in err
    cfg = parse_pipeline(PIPELINE.format(root="/l", extra="maintenance: {bronze_retention_days: 30}\n"), env={})
    assert cfg.maintenance.bronze_retention_days == 30 and cfg.maintenance.vacuum_retention_hours == 168


def test_dry_run_reports_and_changes_nothing(tmp_path, capsys):
    path = _write(tmp_path, "maintenance: {vacuum_retention_hours: 0}\n")
    table = str(tmp_path / "lake" / "bronze" / "pg.public.t")
    for i in range(5):
        write_deltalake(table, pa.table({"seq": pa.array([i], pa.int64())}), mode="append")
    assert main(["maintain", "-c", path, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "bronze pg.public.t: 5 files" in out and "would compact 5 small files" in out
    assert "_cdc/pg/offsets" in out and "no table yet" in out
    assert DeltaTable(table).version() == 4 and len(DeltaTable(table).file_uris()) == 5
    assert main(["maintain", "-c", path, "--table", "pg.public.t"]) == 0
    out = capsys.readouterr().out
    assert "files 5 -> 1" in out and "compacted 5 into 1, vacuumed 0 files" in out
    assert "vacuum: retention 1 h" in out  # nothing tracks its readers: kept an hour at least
    assert sorted(DeltaTable(table).to_pyarrow_table().column("seq").to_pylist()) == [0, 1, 2, 3, 4]
    # the compaction commit changes no data: a Delta stream skips it
    log = Path(table) / "_delta_log" / f"{5:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    files = [a.get("add") or a.get("remove") for a in actions if "add" in a or "remove" in a]
    assert len(files) == 6 and all(f["dataChange"] is False for f in files)
    assert next(a["commitInfo"] for a in actions if "commitInfo" in a)["cdc.maintenance"] == "compact"


def test_unknown_source_or_table_is_a_usage_error(tmp_path, capsys):
    path = _write(tmp_path)
    assert main(["maintain", "-c", path, "--source", "nope"]) == EXIT_CONFIG
    assert "no source named 'nope'" in capsys.readouterr().err
    assert main(["maintain", "-c", path, "--table", "pg.public.missing"]) == EXIT_CONFIG
    assert "pg.public.missing" in capsys.readouterr().err


def test_an_unreadable_progress_record_keeps_everything(tmp_path, capsys):
    path = _write(tmp_path, "silver:\n  - {table: t, source: pg.public.t}\n"
                            "maintenance: {vacuum_retention_hours: 0, bronze_retention_days: 1}\n")
    write_deltalake(str(tmp_path / "lake" / "bronze" / "pg.public.t"), pa.table({"seq": pa.array([1], pa.int64())}))
    log = tmp_path / "lake" / "silver" / "_cdc" / "progress" / "t" / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text("not a delta log\n")
    assert main(["maintain", "-c", path, "--dry-run", "--table", "pg.public.t"]) == 0
    out = capsys.readouterr().out
    assert "vacuum: silver t has not read it yet: 168 h kept" in out, out
    assert "retention: kept: silver t has applied nothing yet" in out, out


def test_quality_results_older_than_the_retention_are_deleted_and_status_keeps_the_newest(tmp_path, capsys):
    from pipelines.status import pipeline_status

    path = _write(tmp_path, "maintenance: {quality_retention_days: 7}\nsilver:\n  - table: t\n    source: pg.public.t\n"
                            "    keys: [id]\n    expectations:\n      - {type: not_null, column: id, action: warn}\n")
    results = tmp_path / "lake" / "silver" / "_cdc" / "quality"
    now = dt.datetime.now(dt.UTC)
    ages_days = [40, 10, 8, 1, 0]  # one row per checked increment
    rows = pa.table({
        "run_id": [f"r{i}" for i in range(len(ages_days))],
        "silver_table": ["t"] * len(ages_days),
        "expectation": ["not_null_id"] * len(ages_days),
        "type": ["not_null"] * len(ages_days),
        "action": ["warn"] * len(ages_days),
        "passed": [True, True, False, True, False],
        "failing_rows": pa.array([0, 0, 3, 0, 2], pa.int64()),
        "checked_at": pa.array([now - dt.timedelta(days=d) for d in ages_days], pa.timestamp("us", tz="UTC")),
    })
    write_deltalake(str(results), rows)
    assert main(["maintain", "-c", path, "--table", "_cdc/quality"]) == 0
    out = capsys.readouterr().out
    assert "silver quality results _cdc/quality" in out and "retention deleted 3 rows" in out, out
    left = DeltaTable(str(results)).to_pyarrow_table(columns=["run_id"]).column("run_id").to_pylist()
    assert sorted(left) == ["r3", "r4"]
    config = parse_pipeline(Path(path).read_text(), env={})
    (run,) = pipeline_status(config).quality
    assert run.run_id == "r4" and [f.failing_rows for f in run.failed] == [2]
    # off: nothing deleted
    off = _write(tmp_path, "maintenance: {quality_retention_days: null}\nsilver:\n  - table: t\n"
                           "    source: pg.public.t\n    keys: [id]\n    expectations:\n"
                           "      - {type: not_null, column: id, action: warn}\n")
    assert main(["maintain", "-c", off, "--table", "_cdc/quality"]) == 0
    assert "quality results retention is off" in capsys.readouterr().out
    assert len(DeltaTable(str(results)).to_pyarrow_table(columns=["run_id"])) == 2
