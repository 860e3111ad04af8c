"""One engine's silver timings, in a fresh interpreter (see `bench.silver_bench`).

pyspark cannot hold a classic and a Spark Connect session in one process, so every engine's
timings run in a child of their own: ``python -m bench._silver_child JOB ENGINE ARGS_JSON``.
The child builds its session first (timed apart: ``session_start_s``), then runs the job once
cold (the first job of the process: class loading, JIT, Sail's first plans) and, where the job
can run again, once warm in the same session. It prints one JSON line (``RESULT {...}``).

Jobs: ``hand`` (the hand-written PySpark job), ``framework`` (``silver --once``, creating the
table), ``framework_merge`` (``silver --once`` into an existing empty table), ``big_bronze``
(write the scenario-2 bronze table), ``load`` / ``increment`` (``silver --once`` on the
scenario-2 table: its initial load, then the increment; run once each).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Any

from pyspark.sql import SparkSession

from bronze.schema import topic_path
from pipelines.engine import EngineSpec, create_session, stop_session
from pipelines.silver_runner import TableRunResult, run_silver
from silver.declarations import SilverOptions, SilverTable

SOURCE, TOPIC = "bench", "bench.public.items"
HAND_SCHEMA = ("struct<before:struct<id:bigint>,"
               "after:struct<id:bigint,name:string,price:string,updated_at:bigint,qty:int>,"
               "op:string,source:struct<ts_ms:bigint>>")
CLASSIC_CONF = {"spark.master": "local[2]", "spark.driver.memory": "4g", "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false",
                # Delta's snapshot state reconstruction defaults to 50 partitions: 50 tasks per
                # table version read, on 2 cores
                "spark.databricks.delta.snapshotPartitions": "2"}
"""Classic Spark sized for this 2-core machine (both sides alike); shuffle partitions come from the bench."""


def engine_spec(engine: str, shuffle_partitions: int, extra: dict[str, str] | None = None) -> EngineSpec:
    """The session of ``engine`` (``sail`` or ``spark``) with the bench's settings; ``extra``
    (``--classic-conf``) applies to classic Spark only."""
    conf = {"spark.sql.shuffle.partitions": str(shuffle_partitions)}
    if engine == "spark":
        return EngineSpec(kind="spark", conf={**CLASSIC_CONF, **conf, **(extra or {})})
    return EngineSpec(kind="sail", conf=conf)


def hand_written(spark: SparkSession, root: str, silver: str) -> None:
    """The peer: window dedupe by bronze key taking the latest seq, parse the survivors, one MERGE.

    The same code on both engines (DataFrame API + SQL ``MERGE``, which classic Delta and Sail
    both run). It creates its (empty) target first, as a hand-written job must.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    spark.createDataFrame([], "id bigint, name string, price string, updated_at bigint, qty int, seq bigint") \
        .write.format("delta").mode("overwrite").save(silver)
    bronze = spark.read.format("delta").load(topic_path(root, TOPIC))
    w = Window.partitionBy("key").orderBy(sf.col("seq").desc())
    latest = bronze.withColumn("rn", sf.row_number().over(w)).where("rn = 1")
    parsed = latest.select("seq", sf.from_json("value", HAND_SCHEMA).alias("v"))
    parsed.select("seq", sf.col("v.op").alias("op"), "v.after.*", sf.col("v.before.id").alias("bid")) \
        .withColumn("id", sf.coalesce("id", "bid")).drop("bid").createOrReplaceTempView("changes")
    spark.sql(f"""MERGE INTO delta.`{silver}` t USING changes s ON t.id = s.id
        WHEN MATCHED AND s.op = 'd' THEN DELETE
        WHEN MATCHED THEN UPDATE SET name = s.name, price = s.price, updated_at = s.updated_at, qty = s.qty,
                                     seq = s.seq
        WHEN NOT MATCHED AND s.op <> 'd' THEN INSERT (id, name, price, updated_at, qty, seq)
             VALUES (s.id, s.name, s.price, s.updated_at, s.qty, s.seq)""").collect()
    spark.catalog.dropTempView("changes")


def silver_locations(root: str, engine: str) -> tuple[SilverTable, SilverOptions]:
    """The silver table and state of ``engine`` under ``root`` (engines share bronze, not silver)."""
    base = f"{root}/silver-{engine}"
    table = SilverTable(table="items", source=TOPIC, location=f"{base}/items")
    options = SilverOptions.model_validate({"state_location": f"{base}/_cdc",
                                            "quarantine": {"location": f"{base}/_quarantine"}})
    return table, options


def framework(spark: SparkSession, root: str, engine: str) -> TableRunResult:
    """``silver --once`` over the bronze table (the runner's own code path, this session)."""
    table, options = silver_locations(root, engine)
    result = run_silver(root=root, engine=EngineSpec(), tables=[table], options=options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, result.errors
    return result.tables[-1]


def reset_silver(root: str, engine: str) -> None:
    shutil.rmtree(f"{root}/silver-{engine}", ignore_errors=True)


def precreate_empty(spark: SparkSession, root: str, engine: str) -> None:
    """The silver table as the framework creates it, empty: the next run MERGEs."""
    table, _ = silver_locations(root, engine)
    assert table.location is not None
    spark.createDataFrame([], "id bigint, name string, price decimal(12,2), updated_at timestamp, qty int, "
                              "_cdc_seq bigint, _cdc_op string, _cdc_ts timestamp") \
        .write.format("delta").save(table.location)


def big_bronze(spark: SparkSession, root: str, rows: int, files: int) -> None:
    """``rows`` snapshot inserts (keys 0..rows-1) in ``files`` commits, generated by the engine."""
    from pyspark.sql import functions as sf

    per = rows // files
    for f in range(files):
        ids = spark.range(f * per, (f + 1) * per).withColumnRenamed("id", "k")
        source = sf.format_string('{"version":"3.3.1.Final","connector":"postgresql","name":"bench",'
                                  '"ts_ms":%d,"snapshot":"true","db":"b","schema":"public","table":"items",'
                                  '"txId":1,"lsn":%d}', sf.col("k") + 1_700_000_000_000, sf.col("k"))
        after = sf.format_string('{"id":%d,"name":"item-%d","price":"AQI=","updated_at":%d,"qty":%d}',
                                 "k", "k", sf.col("k") + 1_700_000_000_000_000, sf.col("k") % 100)
        value = sf.format_string('{"before":null,"after":%s,"source":%s,"transaction":null,"op":"r","ts_ms":1}',
                                 after, source)
        ids.select(sf.format_string('{"id":%d}', "k").alias("key"), value.alias("value"),
                   sf.lit("r").alias("op"), (sf.col("k") + 1).alias("seq"), sf.lit("{}").alias("position"),
                   sf.lit("v1").alias("schema_id"),
                   sf.lit(None).cast("map<string,string>").alias("headers"),
                   sf.current_timestamp().alias("ingested_at"), sf.lit(f + 1).cast("bigint").alias("batch")) \
            .write.format("delta").mode("append").save(topic_path(root, TOPIC))


def _table_facts(res: TableRunResult) -> dict[str, Any]:
    return {"events": res.events, "upserts": res.upserts, "deletes": res.deletes, "files_read": res.files_read,
            "files_total": res.files_total}


def _timed(fn: Any) -> tuple[Any, float]:
    started = time.monotonic()
    out = fn()
    return out, time.monotonic() - started


class JobCounter:
    """Spark jobs, stages and tasks a classic session ran for one timed job (job groups; None on Connect)."""

    def __init__(self, spark: SparkSession) -> None:
        self.sc = None if type(spark).__module__.startswith("pyspark.sql.connect") else spark.sparkContext
        self.n = 0
        self.counts: list[dict[str, Any]] = []

    def __enter__(self) -> JobCounter:
        if self.sc is not None:
            self.n += 1
            self.sc.setJobGroup(f"bench-{self.n}", "bench job")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sc is None:
            return
        tracker = self.sc.statusTracker()
        jobs = tracker.getJobIdsForGroup(f"bench-{self.n}")
        infos = [info for j in jobs if (info := tracker.getJobInfo(j)) is not None]
        stages = [s for info in infos for s in info.stageIds]
        named = [(info.name, info.numTasks) for s in stages if (info := tracker.getStageInfo(s)) is not None]
        self.counts.append({"jobs": len(jobs), "stages": len(stages), "tasks": sum(n for _, n in named),
                            "stage_names": [f"{name} ({n} tasks)" for name, n in named]})
        self.sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]


_STEPS = (("silver.increment", "scan_increment", "scan (one aggregate)"),
          ("silver.increment", "_decode_plan", "decode plan"),
          # classic Spark stages in its cache: staging is lazy there, the counts run the dedupe and decoding
          ("silver.increment", "stage", "dedupe + decode + staging write (classic: lazy)"),
          ("silver.increment", "count_changes", "counts (one aggregate; classic: + dedupe + decode)"),
          ("silver.increment", "_create", "create table (2 commits)"),
          ("silver.increment", "_merge", "MERGE"),
          ("silver.increment", "apply_evolution", "schema evolution"),
          ("pipelines.silver_runner", "load_topic_schemas", "schema history read"),
          ("pipelines.silver_runner", "bronze_files", "bronze files (delta-rs)"),
          ("pipelines.silver_runner", "read_range", "bronze read (lazy)"))
_METHODS = (("silver.target", "SilverTarget", "read", "silver table read"),
            ("silver.progress", "ProgressStore", "read", "progress read"),
            ("silver.progress", "ProgressStore", "write", "progress write"))


def install_step_timers() -> dict[str, float]:
    """Wrap the framework's steps with timers (seconds summed per step); returns the totals dict."""
    import functools
    import importlib

    totals: dict[str, float] = {}

    def wrap(fn: Any, label: str) -> Any:
        @functools.wraps(fn)
        def timed(*a: Any, **k: Any) -> Any:
            started = time.monotonic()
            try:
                return fn(*a, **k)
            finally:
                totals[label] = totals.get(label, 0.0) + time.monotonic() - started
        return timed

    for module, name, label in _STEPS:
        mod = importlib.import_module(module)
        setattr(mod, name, wrap(getattr(mod, name), label))
    for module, cls_name, name, label in _METHODS:
        cls = getattr(importlib.import_module(module), cls_name)
        setattr(cls, name, wrap(getattr(cls, name), label))
    return totals


def run_job(job: str, engine: str, args: dict[str, Any]) -> dict[str, Any]:
    root = args["root"]
    out: dict[str, Any] = {"job": job, "engine": engine, "pid": os.getpid()}
    spark, out["session_start_s"] = _timed(lambda: create_session(
        engine_spec(engine, args["shuffle_partitions"], args.get("classic_conf"))))
    counter = JobCounter(spark)
    try:
        if job == "big_bronze":
            _, out["cold_s"] = _timed(lambda: big_bronze(spark, root, args["rows"], args["files"]))
        elif job == "hand":
            runs = []
            for i in range(args.get("runs", 2)):
                silver = f"{root}/hand-{engine}-{os.getpid()}-{i}"
                with counter:
                    _, t = _timed(lambda s=silver: hand_written(spark, root, s))  # type: ignore[misc]
                runs.append(t)
                shutil.rmtree(silver, ignore_errors=True)
            out["runs_s"] = runs
        elif job in ("framework", "framework_merge", "framework_steps"):
            totals = install_step_timers() if job == "framework_steps" else None
            steps = []
            runs = []
            for _ in range(args.get("runs", 2)):
                reset_silver(root, engine)
                if job == "framework_merge":
                    precreate_empty(spark, root, engine)
                if totals is not None:
                    totals.clear()
                with counter:
                    res, t = _timed(lambda: framework(spark, root, engine))
                runs.append(t)
                out.update(_table_facts(res))
                if totals is not None:
                    steps.append(dict(totals))
            reset_silver(root, engine)
            if steps:
                out["steps_s"] = steps
            out["runs_s"] = runs
        elif job in ("load", "increment"):
            with counter:
                res, t = _timed(lambda: framework(spark, root, engine))
            out["runs_s"] = [t]
            out.update(_table_facts(res))
        else:
            raise SystemExit(f"unknown job {job!r}")
        if counter.counts:
            out["spark_jobs"] = counter.counts
    finally:
        _, out["session_stop_s"] = _timed(lambda: stop_session(spark))
    return out


def main() -> None:
    job, engine, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    result = run_job(job, engine, args)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
