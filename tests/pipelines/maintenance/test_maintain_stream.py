"""``cdc-lakehouse maintain`` while a Structured Streaming silver query (classic Spark +
delta-spark) follows a live capture: compaction commits change no data, so the stream goes on
over them; VACUUM keeps what the stream's checkpoint still reads; silver ends equal to the source."""

from __future__ import annotations

import time

import pytest
from deltalake import DeltaTable

from pipelines.capture import run_capture
from pipelines.cli import main
from pipelines.config import parse_pipeline
from tests.pipelines.exactly_once_support import Workload, create_schema
from tests.support.capture_process import wait_until
from tests.support.silver_processes import SilverProcess, pipeline_with_silver, silver_problems

SIZES = {"accounts": 60, "big": 3, "orders": 60}


@pytest.mark.integration
@pytest.mark.postgres
@pytest.mark.classic_spark
def test_stream_keeps_going_while_maintain_compacts_and_vacuums(pg_db, tmp_path, capsys):
    root = str(tmp_path / "lake")
    create_schema(pg_db, **SIZES)
    text = pipeline_with_silver(root, pg_db, slot="mt_stream", interval_ms=50, max_records=10)
    text += "maintenance: {vacuum_retention_hours: 0}\n"
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)

    def capture() -> None:
        run_capture(parse_pipeline(text, env={}), until_idle=True)

    capture()
    orders = f"{root}/bronze/pg.public.orders"
    silver = SilverProcess(tmp_path).start_cli(config, "-v", "--stream", "--trigger", "processing-time",
                                               "--interval", "1")
    outputs = []
    assert silver.wait_output("silver orders: micro-batch 0 applied", 240), silver.tail()
    work = Workload(pg_db, seed=5, sizes=SIZES, pause_s=0.1).start()
    try:
        for _ in range(2):  # capture commits and maintain compacts while the stream runs
            time.sleep(3)
            capture()
            files = len(DeltaTable(orders).file_uris())
            assert main(["maintain", "-c", str(config)]) == 0, capsys.readouterr().err
            outputs.append((files, capsys.readouterr().out))
            time.sleep(1)
    finally:
        work.stop()
    capture()
    try:
        assert wait_until(lambda: silver_problems(root, pg_db) == [], 240, 1.0), (
            silver_problems(root, pg_db), silver.tail())
        assert silver.running, silver.tail()
    finally:
        status = silver.interrupt()
    assert status == 0, silver.tail()
    first_files, first_out = outputs[0]
    # several small files to compact (how many depends on how fast capture reads the workload's transactions)
    assert first_files > 4 and f"bronze pg.public.orders: files {first_files} -> " in first_out, first_out
    line = next(x for x in first_out.splitlines() if x.startswith("bronze pg.public.orders:"))
    assert int(line.split(" -> ")[1].split(",")[0]) < first_files, line
    assert "keeping versions" in first_out or "needs version" in first_out, first_out
    assert all("FAILED" not in out for _, out in outputs)
    assert work.committed > 10
