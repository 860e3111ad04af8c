"""Reading a planned bronze increment (`silver.bronze_reader`) after bronze has moved on.

Silver plans an increment from one bronze version (its ``seq`` range and the files holding it),
then reads it. Capture keeps committing meanwhile, writes a Delta checkpoint every
``delta.checkpointInterval`` commits, and compaction rewrites files; the read must still return
exactly the planned rows. The oracle is the records the test handed to the bronze writer.
Sail only: classic Spark's read of the range is the same call, covered on both engines by
tests/pipelines/test_silver_runner.py.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from bronze.schema import topic_path
from bronze.writer import BronzeWriter
from cdc_sources.spi import ChangeRecord, SchemaVersion
from silver.bronze_reader import bronze_files, plan_range, read_range
from tests.support.engines import SAIL_ONLY

pytestmark = pytest.mark.spark

TOPIC = "p.public.t"
SCHEMA = SchemaVersion(TOPIC, "s1", '{"type":"struct"}', '{"type":"struct"}', "public.t", ("id",))
ROWS = 5
CHECKPOINT_INTERVAL = 10


def _batch(first: int) -> list[ChangeRecord]:
    return [ChangeRecord(TOPIC, orjson.dumps({"id": n}).decode(), orjson.dumps({"after": {"id": n}}).decode(), "c",
                         orjson.dumps({"lsn": n}).decode(), (n, 0, 0), "s1") for n in range(first, first + ROWS)]


def _checkpoints(path: str) -> list[int]:
    return sorted(int(f.name.split(".")[0]) for f in Path(path, "_delta_log").glob("*.checkpoint.parquet"))


@SAIL_ONLY
def test_planned_increment_reads_the_same_rows_after_a_newer_checkpoint_and_a_compaction(
        tmp_path: Path, spark: SparkSession) -> None:
    root = str(tmp_path)
    path = topic_path(root, TOPIC)
    writer = BronzeWriter(root, "p")
    writer.recover()
    batches = 0

    def commit() -> None:
        nonlocal batches
        writer.commit(_batch(batches * ROWS + 1), [SCHEMA], {"lsn": (batches + 1) * ROWS}, snapshot_completed=True)
        batches += 1

    commit()  # creates the table
    DeltaTable(path).alter.set_table_properties({"delta.checkpointInterval": str(CHECKPOINT_INTERVAL)})
    for _ in range(4):
        commit()
    files = bronze_files(path)
    assert files is not None
    rng = plan_range(files, ROWS)  # everything after the first batch
    assert rng is not None and rng.version is not None
    planned = (ROWS + 1, batches * ROWS)
    assert (rng.after_seq, rng.upto_seq) == (ROWS, planned[1])
    assert not _checkpoints(path), "the plan is made before the table's first checkpoint"

    # capture goes on past a checkpoint, then compaction rewrites every small file
    while not any(v > rng.version for v in _checkpoints(path)):
        commit()
    commit()
    writer.close()
    DeltaTable(path).optimize.compact()
    assert len(DeltaTable(path).file_uris()) == 1

    got = read_range(spark, path, rng).select("seq", "key", "op").collect()
    assert sorted((r["seq"], r["key"], r["op"]) for r in got) == [
        (n, orjson.dumps({"id": n}).decode(), "c") for n in range(planned[0], planned[1] + 1)]
