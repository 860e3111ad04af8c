"""The Structured Streaming driver on classic Spark + Delta Lake, over bronze tables a real
PostgreSQL capture wrote with delta-rs; silver is held equal to the source table (psycopg).

* `test_stream_over_delta_rs_bronze`: delta-spark reads every bronze table delta-rs wrote (with
  a delta-rs checkpoint), streams wait for the initial snapshot, an available-now run builds
  silver equal to the source, and a commit that removes bronze files stops the stream with the
  rebuild hint (streaming_child.py, one JVM).
* `test_cli_processing_time_stream_follows_a_live_capture`: ``cdc-lakehouse silver --stream``
  (processing-time trigger, 1 s) while a workload writes and capture keeps committing; silver
  catches up with the source; Ctrl-C stops it cleanly.
* Sail refuses streaming: the API with `EngineCapabilityError`, the CLI with exit 2.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from pipelines.capture import run_capture
from pipelines.cli import EXIT_CONFIG, main
from pipelines.config import parse_pipeline
from silver.declarations import SilverOptions, SilverTable
from silver.errors import EngineCapabilityError, SilverTableError
from silver.streaming import CHANGE_COMMIT_HINT, StreamSettings, start_stream
from tests.pipelines.exactly_once_support import Workload, create_schema
from tests.support.capture_process import wait_until
from tests.support.silver_processes import SilverProcess, pipeline_with_silver, silver_problems

SIZES = {"accounts": 200, "big": 50, "orders": 200}


def _capture(text: str) -> None:
    run_capture(parse_pipeline(text, env={}), until_idle=True)


@pytest.mark.integration
@pytest.mark.postgres
@pytest.mark.classic_spark
def test_stream_over_delta_rs_bronze(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    create_schema(pg_db, **SIZES)
    text = pipeline_with_silver(root, pg_db, slot="st_bronze")
    _capture(text)
    work = Workload(pg_db, seed=7, sizes=SIZES, pause_s=0.0)
    work.start()  # streamed changes too: updates, deletes, key moves, churn
    time.sleep(2)
    work.stop()
    _capture(text)
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    report = tmp_path / "report.json"
    with SilverProcess(tmp_path, name="streaming-child") as child:  # its JVM ends with it, a timeout included
        child.start([sys.executable, "-m", "tests.silver.streaming_child", str(config), str(report)])
        assert child.wait(500) == 0, child.tail()
    out = json.loads(report.read_text())

    bronze = out["bronze"]
    assert {"pg.public.accounts", "pg.public.orders", "pg.public.big", "_cdc/pg/offsets",
            "_cdc/pg/schemas"} <= set(bronze), sorted(bronze)
    assert all(t["spark_reads_the_same"] for t in bronze.values()), bronze
    accounts = bronze["pg.public.accounts"]
    assert accounts["configuration"]["delta.dataSkippingStatsColumns"] == "op,seq,schema_id,ingested_at,batch"
    assert accounts["spark_types"]["ingested_at"] == "timestamp" and accounts["spark_types"]["seq"] == "bigint"
    assert accounts["protocol"][0] <= 3 and accounts["protocol"][1] <= 7, accounts["protocol"]

    assert out["incomplete_snapshot"] == {"started": [], "waiting": ["accounts", "orders"]}
    first = out["first"]
    assert first["errors"] == {} and first["started"] == ["accounts", "orders"], first
    assert any("micro-batch 0 applied" in line for line in first["lines"]), first["lines"]
    assert silver_problems(root, pg_db) == []
    after = out["after_remove"]
    assert after["last_commit"] == "DELETE"
    assert set(after["errors"]) == {"accounts"} and CHANGE_COMMIT_HINT in after["errors"]["accounts"], after


@pytest.mark.integration
@pytest.mark.postgres
@pytest.mark.classic_spark
def test_cli_processing_time_stream_follows_a_live_capture(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    create_schema(pg_db, **SIZES)
    text = pipeline_with_silver(root, pg_db, slot="st_live")
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    _capture(text)
    silver = SilverProcess(tmp_path).start_cli(config, "-v", "--stream", "--trigger", "processing-time",
                                               "--interval", "1")  # a failure before the Ctrl-C: see stop_all
    work = Workload(pg_db, seed=11, sizes=SIZES, pause_s=0.02).start()
    try:
        assert silver.wait_output("silver orders: micro-batch 0 applied", 240), silver.tail()
        for _ in range(3):  # capture commits while the stream runs
            _capture(text)
            time.sleep(1)
    finally:
        work.stop()
    _capture(text)
    try:
        assert wait_until(lambda: silver_problems(root, pg_db) == [], 180, 1.0), (
            silver_problems(root, pg_db), silver.tail())
        assert silver.running, silver.tail()
        assert silver.output().count("applied") >= 4  # several micro-batches per table
    finally:
        status = silver.interrupt()
    assert status == 0, silver.tail()
    assert (tmp_path / "lake" / "silver" / "_checkpoints" / "accounts" / "commits").is_dir()
    assert work.committed > 20


def test_cli_refuses_stream_on_sail_with_exit_2(tmp_path, capsys):
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(str(tmp_path / "lake"), "host=x port=5432 dbname=db user=u", slot="s",
                                           engine="sail"))
    assert main(["silver", "-c", str(config), "--stream"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "Sail" in err and "--stream" in err and "Traceback" not in err
    assert main(["silver", "-c", str(config), "--trigger", "available-now"]) == EXIT_CONFIG
    assert "only apply with --stream" in capsys.readouterr().err


@pytest.mark.spark
def test_a_stream_that_cannot_start_says_why_on_each_engine(spark, engine, tmp_path):
    """Sail has no Structured Streaming: it points at the incremental runner. Classic Spark
    streams; a missing bronze table is named as the cause, with no word about Sail."""
    decl = SilverTable(table="t", source="shop.public.t")
    expected = EngineCapabilityError if engine == "sail" else SilverTableError
    with pytest.raises(expected) as raised:
        start_stream(spark, root=str(tmp_path), decl=decl, source="shop", options=SilverOptions(),
                     settings=StreamSettings(checkpoint_location=str(tmp_path / "ckpt")))
    message = str(raised.value)
    assert "cannot start the Structured Streaming query on shop.public.t" in message
    assert ("incremental runner" in message) == (engine == "sail")
