"""What a streaming query reads besides its micro-batches: the progress record once per query.

A classic Spark query over a parquet folder, one file per micro-batch (``maxFilesPerTrigger``),
with a recording apply function and a real progress store (Delta) that counts its reads.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from bronze.schema import topic_path
from silver.context import ApplyContext, ApplyResult
from silver.declarations import SilverOptions, SilverTable
from silver.progress import Progress, ProgressStore
from silver.streaming import StreamSettings, start_stream
from silver.target import SilverTarget

_BRONZE = "key string, value string, op string, seq bigint, schema_id string"


class CountingStore(ProgressStore):
    reads = 0

    def read(self, table: str) -> Progress | None:
        self.reads += 1
        return super().read(table)


@pytest.mark.parametrize("engine", ["spark"], indirect=True)
def test_progress_is_read_once_per_query_and_replayed_rows_are_skipped(spark: SparkSession, tmp_path: Path):
    root = str(tmp_path / "lake")
    decl = SilverTable(table="t", source="shop.public.t")
    folder = topic_path(root, decl.source)
    # three files, one micro-batch each; the third repeats seq 2-3 (already applied) before seq 6
    for n, seqs in enumerate([[1, 2, 3], [4, 5], [2, 3, 6]]):
        rows = [(f'{{"id":{s}}}', "{}", "c", s, "v1") for s in seqs]
        spark.createDataFrame(rows, _BRONZE).coalesce(1).write.parquet(f"{folder}/part={n}")
    seen: list[list[int]] = []

    def apply(ctx: ApplyContext, d: SilverTable, target: SilverTarget, batch: DataFrame, *,
              expected_keys: tuple[str, ...] | None = None) -> ApplyResult:
        seqs = sorted(int(r["seq"]) for r in batch.select("seq").collect())
        seen.append(seqs)
        return ApplyResult(events=len(seqs), keys=("id",), max_seq=max(seqs, default=None))

    state = str(tmp_path / "state")
    store = CountingStore(spark, state)
    settings = StreamSettings(str(tmp_path / "checkpoint"), "available_now", source_format="parquet",
                              read_options={"maxFilesPerTrigger": "1"})
    schema = spark.createDataFrame([], _BRONZE).withColumn("part", sf.lit(0)).schema
    query = start_stream(spark, root=root, decl=decl, source="shop",
                         options=SilverOptions.model_validate({"state_location": state}), settings=settings,
                         apply_fn=apply, bronze_schema=schema, progress_store=store)
    query.awaitTermination(300)
    assert query.exception() is None
    assert seen == [[1, 2, 3], [4, 5], [6]]  # seq 2 and 3 again: filtered by the progress held
    assert store.reads == 1
    last = ProgressStore(spark, state).read("t")
    assert last is not None and last.last_seq == 6 and last.keys == ("id",)
