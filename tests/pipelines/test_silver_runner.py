"""The incremental runner: passes, progress, files read, loop mode, per-table isolation."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from cdc_sources.spi import ConfigError
from pipelines import silver_runner
from pipelines.engine import EngineSpec
from pipelines.silver_runner import SilverRunResult, TableRunResult, run_silver, source_of_topic
from silver.bronze_reader import bronze_files, plan_range, read_range
from silver.declarations import SilverOptions, SilverTable
from tests.silver.bronze_builder import BronzeBuilder, int32, string


def test_source_of_topic_takes_the_longest_prefix():
    sources = {"shop": "shop", "shop_eu": "shop.eu"}
    assert source_of_topic("shop.public.t", sources) == "shop"
    assert source_of_topic("shop.eu.public.t", sources) == "shop_eu"
    with pytest.raises(ConfigError, match="does not start with the topic prefix of any source"):
        source_of_topic("other.public.t", sources)


def test_a_looping_run_keeps_its_last_results_and_counts_every_failure():
    result = SilverRunResult(kept=2)
    result.add([TableRunResult("a", "s.a", "failed", error="boom"), TableRunResult("b", "s.b", "applied")])
    for _ in range(5):
        result.add([TableRunResult("a", "s.a", "applied", events=1), TableRunResult("b", "s.b", "up_to_date")])
    assert result.passes == 6 and len(result.tables) == 2
    assert [t.status for t in result.tables] == ["applied", "up_to_date"]
    assert not result.ok and result.failures == 1 and result.errors == []
    everything = SilverRunResult()
    for _ in range(5):
        everything.add([TableRunResult("a", "s.a", "applied")])
    assert len(everything.tables) == 5 and everything.ok


def _builder(root: str, table: str = "t") -> BronzeBuilder:
    b = BronzeBuilder(root, table=table)
    b.register([int32("id", optional=False), string("v")], ["id"])
    return b


@pytest.mark.spark
def test_run_silver_starts_and_stops_its_own_engine(tmp_path):
    root = str(tmp_path)
    b = _builder(root)
    b.insert({"id": 1, "v": "a"}).commit()
    lines: list[str] = []
    result = run_silver(root=root, engine=EngineSpec(), tables=[SilverTable(table="t", source=b.topic)],
                        options=SilverOptions(), sources={"shop": "shop"}, once=True, progress=lines.append)
    assert result.ok and result.passes == 1 and result.tables[0].upserts == 1
    assert lines and lines[0].startswith("silver t: 1 events")


@pytest.mark.spark
def test_increments_read_only_new_bronze_files(tmp_path, capsys, spark, engine):
    root = str(tmp_path)
    b = _builder(root)
    for batch in range(5):
        b.insert({"id": batch, "v": "x"}).commit()
    decl = SilverTable(table="t", source=b.topic)
    first = run_silver(root=root, engine=EngineSpec(), tables=[decl], options=SilverOptions(),
                       sources={"shop": "shop"}, once=True, spark=spark).tables[0]
    assert (first.files_read, first.files_total) == (5, 5)
    b.update({"id": 0, "v": "y"}).commit()
    second = run_silver(root=root, engine=EngineSpec(), tables=[decl], options=SilverOptions(),
                        sources={"shop": "shop"}, once=True, spark=spark).tables[0]
    assert (second.seq_from, second.seq_to, second.files_read, second.files_total) == (5, 6, 1, 6)
    # and the engine really opens only that file (Delta file skipping on seq)
    files = bronze_files(b.path)
    assert files is not None
    rng = plan_range(files, 5)
    assert rng is not None
    increment = read_range(spark, b.path, rng)
    if engine == "spark":  # Delta on classic Spark skips files when the scan is prepared: it reads one
        assert len(increment.inputFiles()) == 1
        return
    capsys.readouterr()
    increment.explain()  # Sail's plan lists the files it scans
    plan = capsys.readouterr().out
    assert plan.count(".parquet") == 1


@pytest.mark.spark
def test_loop_mode_runs_passes_until_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(silver_runner, "LOOP_PASSES_KEPT", 1000)
    root = str(tmp_path)
    b = _builder(root)
    b.insert({"id": 1, "v": "a"}).commit()
    thread, stop, out = _looping_run(root, b.topic, interval=0.2)
    _wait_for_lines(out, thread, lambda lines: any("-> 1 upserts" in line for line in lines))
    b.insert({"id": 2, "v": "b"}).commit()
    _wait_for_lines(out, thread, lambda lines: sum("-> 1 upserts" in line for line in lines) == 2)
    stop.set()
    thread.join(60)
    result = out["r"]
    assert result.passes >= 2
    assert sum(t.upserts for t in result.tables) == 2
    assert {t.status for t in result.tables} <= {"applied", "up_to_date"}


@pytest.mark.spark
def test_a_looping_run_does_not_keep_every_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(silver_runner, "LOOP_PASSES_KEPT", 3)
    root = str(tmp_path)
    b = _builder(root)
    b.insert({"id": 1, "v": "a"}).commit()
    thread, stop, out = _looping_run(root, b.topic, interval=0.05)
    _wait_for_lines(out, thread, lambda lines: len(lines) > 5)  # one line per table and pass
    stop.set()
    thread.join(60)
    result = out["r"]
    assert result.passes > 3 and len(result.tables) == 3 and result.ok


@pytest.mark.spark
def test_capped_increments_and_missing_bronze(tmp_path):
    root = str(tmp_path)
    b = _builder(root)
    for i in range(3):
        for j in range(600):
            b.insert({"id": i * 1000 + j, "v": "x"})
        b.commit()
    decls = [SilverTable(table="t", source=b.topic), SilverTable(table="later", source="shop.public.later")]
    opts = SilverOptions(max_bronze_rows_per_run=1000)
    first = run_silver(root=root, engine=EngineSpec(), tables=decls, options=opts, sources={"shop": "shop"},
                       once=True)
    assert [(t.status, t.events) for t in first.tables] == [("applied", 1200), ("waiting", 0)]
    second = run_silver(root=root, engine=EngineSpec(), tables=decls[:1], options=opts, sources={"shop": "shop"},
                        once=True)
    assert second.tables[0].events == 600


@pytest.mark.spark
def test_spark_submit_job_entrypoint_runs_a_pipeline_file(tmp_path):
    from jobs.silver_job import main

    root = str(tmp_path / "lake")
    b = BronzeBuilder(root, table="customers", source="shop_pg")
    b.register([int32("id", optional=False), string("v")], ["id"])
    b.insert({"id": 1, "v": "a"}).commit()
    config = tmp_path / "pipeline.yaml"
    config.write_text(f"""
pipeline: shop
lakehouse: {{root: {root}}}
sources:
  - {{name: shop_pg, connector: postgres, connection: {{host: 127.0.0.1, database: shop}}}}
silver:
  - {{table: customers, source: shop_pg.public.customers}}
""")
    assert main(["-c", str(config), "--once"]) == 0
    assert (tmp_path / "lake" / "silver" / "customers" / "_delta_log").is_dir()


E2E_TABLE = """
CREATE TABLE things (
  id int PRIMARY KEY, big bigint, small smallint, price numeric(10,2), anynum numeric, ratio double precision,
  flag boolean, name varchar(40), body text, born date, at timestamp(6), at_tz timestamptz, tod time,
  uid uuid, doc jsonb, raw bytea, nums int[], tags text[]
);
ALTER TABLE things ALTER COLUMN body SET STORAGE EXTERNAL;
"""


@pytest.mark.integration
@pytest.mark.postgres
@pytest.mark.spark
def test_end_to_end_real_connector_silver_equals_the_source_table(pg_db, tmp_path, spark):
    """The real PostgreSQL connector into bronze, then silver: silver equals the source table."""
    import psycopg

    from pipelines.capture import run_capture
    from pipelines.config import parse_pipeline

    root = str(tmp_path / "lake")
    parts = dict(p.split("=", 1) for p in pg_db.split())
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(E2E_TABLE)
        conn.execute("""INSERT INTO things SELECT g, g * 10000000000, g, g + 0.25, g / 3.0, g / 7.0, g % 2 = 0,
            'n' || g, repeat('x', 9000) || g, DATE '2024-01-01' + g,
            TIMESTAMP '2024-01-01 10:00:00.123456' + g * interval '1 hour',
            TIMESTAMPTZ '2024-01-01 10:00:00+02' + g * interval '1 minute', TIME '12:34:56.789' , gen_random_uuid(),
            jsonb_build_object('g', g), decode('0102', 'hex'), ARRAY[g, g + 1], ARRAY['a', 'b' || g]
            FROM generate_series(1, 20) g""")
    text = (f"pipeline: t\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: postgres}}\n"
            f"    options: {{slot.name: s_{parts['dbname'][-20:]}, skipped.operations: none}}\n"
            "silver:\n  - {table: things, source: pg.public.things}\n"
            "  - {table: things_history, source: pg.public.things, history: scd2}\n"
            "silver_options: {variable_scale_decimal: 'decimal(38,20)'}\n")  # numeric: 20 digits here
    cfg = parse_pipeline(text, env={})
    run_capture(cfg, until_idle=True)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("UPDATE things SET name = 'renamed' WHERE id = 1")  # body is TOASTed and unchanged
        conn.execute("DELETE FROM things WHERE id = 2")
        conn.execute("UPDATE things SET id = 100 WHERE id = 3")
        conn.execute("INSERT INTO things (id, name) VALUES (21, 'sparse')")
    run_capture(cfg, until_idle=True)
    result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                        sources={"pg": "pg"}, once=True, spark=spark)
    assert result.ok, result.errors
    assert result.tables[0].quarantined == 0
    cols = ["id", "big", "small", "price", "anynum", "ratio", "flag", "name", "body", "born", "at", "at_tz", "uid",
            "doc", "raw", "nums", "tags"]
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        source = conn.execute(f"SELECT {', '.join(cols)}, to_char(tod, 'HH24:MI:SS.US') FROM things ORDER BY id")
        expected = [_normalize(r) for r in source.fetchall()]
    got = [_normalize(tuple(r)) for r in spark.read.format("delta").load(f"{root}/silver/things")
           .select(*cols, "tod").orderBy("id").collect()]
    history = spark.read.format("delta").load(f"{root}/silver/things_history")
    current = [_normalize(tuple(r)) for r in history.where("_cdc_is_current").select(*cols, "tod")
               .orderBy("id").collect()]
    closed = {(r["id"], r["_cdc_deleted"]) for r in history.where("NOT _cdc_is_current").collect()}
    assert current == expected
    assert closed == {(1, False), (2, True), (3, True)}  # 1 updated, 2 deleted, 3 moved to 100
    assert len(got) == len(expected)
    diffs = [(g[0], name, gv, ev) for g, e in zip(got, expected, strict=True)
             for name, gv, ev in zip([*cols, "tod"], g, e, strict=True) if gv != ev]
    assert [(i, n, str(g)[-12:], str(e)[-12:]) for i, n, g, e in diffs] == []


def _normalize(row: tuple) -> tuple:
    import datetime as dt
    import json
    from decimal import Decimal

    out = []
    for value in row:
        v = value
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        elif isinstance(v, (bytes, bytearray, memoryview)):
            v = bytes(v)
        elif isinstance(v, Decimal):
            v = v.normalize()
        elif isinstance(v, dict):
            v = json.dumps(v, sort_keys=True)
        elif isinstance(v, str) and v.startswith("{"):
            v = json.dumps(json.loads(v), sort_keys=True)
        elif v is not None and type(v).__name__ == "UUID":
            v = str(v)
        out.append(v)
    return tuple(out)


def _looping_run(root: str, topic: str, *, interval: float) -> tuple[threading.Thread, threading.Event, dict]:
    """Start a looping run of silver table ``t`` over ``topic`` in a thread; set the event to stop it,
    its result is then ``out["r"]``; ``out["lines"]`` collects its progress lines as they come."""
    stop = threading.Event()
    out: dict = {"lines": []}

    def go():
        out["r"] = run_silver(root=root, engine=EngineSpec(), tables=[SilverTable(table="t", source=topic)],
                              options=SilverOptions(interval_seconds=interval), sources={"shop": "shop"}, once=False,
                              stop=stop, progress=out["lines"].append)

    thread = threading.Thread(target=go)
    thread.start()
    return thread, stop, out


def _wait_for_lines(out: dict, thread: threading.Thread, done: Callable[[list[str]], bool],
                    timeout: float = 120) -> None:
    """Wait (bounded) until the looping run's progress lines satisfy ``done``."""
    deadline = time.monotonic() + timeout
    while not done(list(out["lines"])):
        assert thread.is_alive(), f"the looping run ended early: {out['lines'][-5:]}"
        assert time.monotonic() < deadline, f"not reached in {timeout}s: {out['lines'][-5:]}"
        time.sleep(0.05)
