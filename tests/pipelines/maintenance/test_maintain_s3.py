"""``maintain`` on a lakehouse on S3 (the tests' SeaweedFS server): compaction of bronze a real
PostgreSQL capture wrote in many small commits keeps the same rows in fewer files, and capture
resumes after it without a second snapshot or a reused ``seq``."""

from __future__ import annotations

import psycopg
import pytest
from deltalake import DeltaTable

from pipelines.cli import main
from tests.pipelines.exactly_once_support import create_schema, pipeline_yaml

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ORDERS = "pg.public.orders"


def _rows(path: str) -> list[tuple[object, ...]]:
    t = DeltaTable(path).to_pyarrow_table(columns=["seq", "key", "value"]).sort_by("seq")
    return list(zip(*(t.column(c).to_pylist() for c in ("seq", "key", "value")), strict=True))


def test_maintain_compacts_bronze_on_s3_and_capture_resumes(pg_db, tmp_path, s3_root, s3_server, monkeypatch, capsys):
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    create_schema(pg_db, big=3, accounts=20, orders=20)
    slot = "m_" + pg_db.split("dbname=")[1].split(maxsplit=1)[0][-40:]
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(s3_root, pg_db, slot=slot, interval_ms=50, max_records=5))
    assert main(["-q", "capture", "-c", str(config), "--until-idle"]) == 0  # the snapshot
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for i in range(30):
            conn.execute("UPDATE orders SET qty = qty + 1 WHERE id = %s", (1 + i % 20,))
    assert main(["-q", "capture", "-c", str(config), "--until-idle"]) == 0
    path = f"{s3_root}/bronze/{ORDERS}"
    before, files_before = _rows(path), len(DeltaTable(path).file_uris())
    assert len(before) == 50 and files_before > 5

    assert main(["maintain", "-c", str(config), "--table", ORDERS]) == 0, capsys.readouterr().err
    assert _rows(path) == before
    assert len(DeltaTable(path).file_uris()) < files_before

    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("UPDATE orders SET status = 'after' WHERE id = 1")
    assert main(["-q", "capture", "-c", str(config), "--until-idle"]) == 0
    seqs = [s for s, *_ in _rows(path)]
    assert len(seqs) == len(set(seqs)) == 51
    assert sum(1 for *_, v in _rows(path) if '"op":"r"' in str(v)) == 20  # no second snapshot
