"""The automatic compaction between silver passes, on bronze a real PostgreSQL capture wrote in
many small commits: it compacts a topic once it holds ``maintenance.auto_compact_min_files``
small files and not before; a looping silver run compacts while capture appends, bronze stays
exactly-once and silver equals the source."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest
from deltalake import DeltaTable

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.maintenance.auto import AutoCompactor, small_files
from pipelines.maintenance.run import MAINTENANCE_META
from pipelines.silver_runner import TableRunResult, run_silver
from tests.pipelines.exactly_once_support import (
    Workload,
    check_exactly_once,
    create_oracle_slot,
    create_schema,
    pipeline_yaml,
)
from tests.pipelines.maintenance.test_maintain import SILVER, SIZES, _config, _equal_to_source
from tests.support.engines import SAIL_ONLY

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]

ORDERS, ACCOUNTS = "pg.public.orders", "pg.public.accounts"
CHECKPOINT_EVERY = 5


def test_small_files_are_those_under_half_the_target():
    assert small_files([10, 49, 50, 51, 100, 200], 100) == 2
    assert small_files([], 100) == 0


def _order_changes(dsn: str, n: int) -> None:
    """``n`` transactions on ``orders`` only (``accounts`` keeps its few snapshot files)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for i in range(n):
            conn.execute("UPDATE orders SET qty = qty + 1, status = %s WHERE id = %s", (f"s{i}", 1 + i % 50))


def _with_threshold(cfg: PipelineConfig, files: int | None) -> PipelineConfig:
    return cfg.model_copy(update={"maintenance": cfg.maintenance.model_copy(update={"auto_compact_min_files": files})})


def _silver_once(cfg: PipelineConfig, spark) -> list[TableRunResult]:
    result = run_silver(root=cfg.lakehouse.root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                        sources=cfg.topic_prefixes(), once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    return result.tables


def _checkpoints(path: str) -> list[int]:
    return sorted(int(f.name.split(".")[0]) for f in Path(path, "_delta_log").glob("*.checkpoint.parquet"))


def _compactions(path: str) -> int:
    return sum(1 for c in DeltaTable(path).history() if c.get(MAINTENANCE_META) == "compact")


@SAIL_ONLY
def test_compacts_a_topic_when_its_small_files_reach_the_threshold_and_not_before(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    path = f"{root}/bronze/{ORDERS}"
    create_schema(pg_db, **SIZES)
    cfg = _config(root, pg_db, "")
    run_capture(cfg, until_idle=True)
    _order_changes(pg_db, 12)
    run_capture(cfg, until_idle=True)
    results = _silver_once(cfg, spark)
    topics = [f"{root}/bronze/{t}" for t in (ORDERS, ACCOUNTS)]
    files = len(DeltaTable(path).file_uris())
    assert files >= 4 and len(DeltaTable(topics[1]).file_uris()) < files
    lines: list[str] = []

    # one file short of the threshold: nothing is rewritten
    below = AutoCompactor(_with_threshold(cfg, files + 1), lines.append)
    versions = [DeltaTable(p).version() for p in topics]
    below(results)
    assert [DeltaTable(p).version() for p in topics] == versions and below.compactions == 0, lines

    # one more small commit crosses it: the topic is compacted into one file, its rows unchanged
    _order_changes(pg_db, 1)
    run_capture(cfg, until_idle=True)
    results = _silver_once(cfg, spark)
    assert len(DeltaTable(path).file_uris()) >= files + 1
    rows = DeltaTable(path).to_pyarrow_table(columns=["seq", "value"]).sort_by("seq")
    crossed = AutoCompactor(_with_threshold(cfg, files + 1), lines.append)
    crossed(results)
    assert _compactions(path) == 1, lines
    assert len(DeltaTable(path).file_uris()) == 1
    assert DeltaTable(path).to_pyarrow_table(columns=["seq", "value"]).sort_by("seq") == rows
    assert any(line.startswith(f"auto-compaction: bronze {ORDERS}: ") for line in lines), lines

    # turned off: never
    off = AutoCompactor(_with_threshold(cfg, None), lines.append)
    _order_changes(pg_db, 3)
    run_capture(cfg, until_idle=True)
    off(_silver_once(cfg, spark))
    assert _compactions(path) == 1 and off.compactions == 0


@SAIL_ONLY
def test_looping_silver_compacts_while_capture_appends_and_stays_exactly_once(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    db = pg_db.split("dbname=")[1].split(maxsplit=1)[0][-40:]
    create_schema(pg_db, **SIZES)
    oracle = create_oracle_slot(pg_db, f"o_{db}")
    text = pipeline_yaml(root, pg_db, slot=f"a_{db}", interval_ms=300, max_records=10_000) + SILVER
    cfg = _with_threshold(parse_pipeline(text + "silver_options: {interval_seconds: 0.2}\n", env={}), 5)
    slot = f"a_{db}"
    run_capture(cfg, until_idle=True)
    # a Delta checkpoint every few commits (capture's tables take Delta's default, 100), so that
    # silver increments planned before a checkpoint are read after it, as in a long run
    orders = f"{root}/bronze/{ORDERS}"
    DeltaTable(orders).alter.set_table_properties({"delta.checkpointInterval": str(CHECKPOINT_EVERY)})
    first = DeltaTable(orders).version()
    stop, outcome = threading.Event(), []

    def capture() -> None:
        try:
            outcome.append(run_capture(cfg, until_idle=False, stop=stop))
        except Exception as exc:  # the assertion below shows it
            outcome.append(exc)

    thread = threading.Thread(target=capture)
    work = Workload(pg_db, seed=5, sizes=SIZES, pause_s=0.01)
    compactor = AutoCompactor(cfg, lambda _line: None)
    thread.start()
    work.start()
    timer = threading.Timer(8.0, stop.set)
    timer.start()
    try:
        result = run_silver(root=root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                            sources=cfg.topic_prefixes(), once=False, spark=spark, stop=stop, after_pass=compactor)
    finally:
        stop.set()
        timer.cancel()
        work.stop()
        thread.join(60)
    assert not thread.is_alive() and len(outcome) == 1 and not isinstance(outcome[0], Exception), outcome
    assert result.ok, [t.error for t in result.errors]
    assert compactor.compactions >= 1 and _compactions(f"{root}/bronze/{ORDERS}") >= 1
    assert any(v > first for v in _checkpoints(orders)), _checkpoints(orders)

    run_capture(cfg, until_idle=True)
    _silver_once(cfg, spark)
    _equal_to_source(spark, root, pg_db)
    assert check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle) == []
