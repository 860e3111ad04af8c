"""The Spark work of a `silver --once` pass on classic Spark, where every action is a job with a
fixed cost: the increment's first look is read with delta-rs (no job), no re-snapshot lookup runs
for an increment without snapshot rows, and the table is created with its rows in one commit.
The oracle for the rows is what the test wrote to bronze."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from silver.declarations import SilverTable
from tests.silver.bronze_builder import int32, string
from tests.silver.conftest import rows


def _stage_names(spark: SparkSession, group: str) -> list[str]:
    tracker = spark.sparkContext.statusTracker()
    infos = [info for j in tracker.getJobIdsForGroup(group) if (info := tracker.getJobInfo(j)) is not None]
    return [stage.name for info in infos for s in info.stageIds if (stage := tracker.getStageInfo(s)) is not None]


@pytest.mark.parametrize("engine", ["spark"], indirect=True)
def test_a_first_pass_runs_no_scan_or_resnapshot_job_and_creates_the_table_in_one_commit(builder, run, silver, spark,
                                                                                         root):
    b = builder("jobs")
    b.register([int32("id", optional=False), string("name")], ["id"])
    for i in range(1, 41):
        b.insert({"id": i, "name": f"n{i}"})
    b.commit()
    b.update({"id": 1, "name": "u1"}).delete({"id": 2}).commit()
    sc = spark.sparkContext
    sc.setJobGroup("first-pass", "silver --once, first pass")
    try:
        (res,) = run(SilverTable(table="jobs", source=b.topic)).tables
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert res.status == "applied", res.error
    stages = _stage_names(spark, "first-pass")
    assert stages  # the pass did run jobs (decoding, writing): the tracker saw them
    assert not [n for n in stages if "silver/scan.py" in n or "silver/resnapshot.py" in n], stages
    assert DeltaTable(f"{root}/silver/jobs").version() == 0
    expected = sorted([(1, "u1")] + [(i, f"n{i}") for i in range(3, 41)])
    assert sorted(rows(silver("jobs"), "id", "name")) == expected
