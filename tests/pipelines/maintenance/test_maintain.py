"""``maintain`` on bronze a real PostgreSQL capture wrote in many small commits, with the
incremental silver runner: compaction leaves the same rows in fewer files while capture keeps
appending; VACUUM keeps every file of the version a silver table still reads; retention deletes
only rows every silver table applied; silver keeps applying afterwards and equals the source."""

from __future__ import annotations

import os
import threading
import time

import psycopg
import pytest
from deltalake import DeltaTable

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.maintenance.run import TableReport, maintain, targets
from pipelines.silver_runner import run_silver
from tests.pipelines.exactly_once_support import Workload, create_schema, pipeline_yaml
from tests.support.engines import SAIL_ONLY

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]

SIZES = {"big": 3, "accounts": 60, "orders": 60}
SILVER = "silver:\n  - {table: accounts, source: pg.public.accounts}\n  - {table: orders, source: pg.public.orders}\n"
ORDERS = "pg.public.orders"


def _config(root: str, dsn: str, maintenance: str) -> PipelineConfig:
    slot = "m_" + dsn.split("dbname=")[1].split(maxsplit=1)[0][-40:]
    text = pipeline_yaml(root, dsn, slot=slot, interval_ms=50, max_records=5) + SILVER + maintenance
    return parse_pipeline(text, env={})


def _silver(cfg: PipelineConfig, spark) -> None:
    result = run_silver(root=cfg.lakehouse.root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                        sources=cfg.topic_prefixes(), once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]


def _equal_to_source(spark, root: str, dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        for table, cols in (("accounts", "id, balance, note"), ("orders", "id, qty, status")):
            expected = [tuple(r) for r in conn.execute(f"SELECT {cols} FROM {table} ORDER BY id").fetchall()]
            got = [tuple(r) for r in spark.read.format("delta").load(f"{root}/silver/{table}")
                   .selectExpr(*cols.split(", ")).orderBy("id").collect()]
            assert got == expected, table


def _rows(path: str, version: int | None = None) -> list[tuple[object, ...]]:
    t = DeltaTable(path, version=version).to_pyarrow_table(columns=["seq", "key", "value"]).sort_by("seq")
    return list(zip(*(t.column(c).to_pylist() for c in ("seq", "key", "value")), strict=True))


def _on_disk(path: str, version: int) -> bool:
    return all(os.path.exists(os.path.join(path, f)) for f in DeltaTable(path, version=version).file_uris())


def _changes(dsn: str, n: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for i in range(n):
            conn.execute("UPDATE orders SET qty = qty + 1, status = %s WHERE id = %s", (f"s{i}", 1 + i % 50))
            conn.execute("UPDATE accounts SET balance = balance + 1 WHERE id = %s", (1 + i % 50,))


class _Capturing:
    """``run_capture`` in a thread until stopped; keeps what it returned or raised."""

    def __init__(self, cfg: PipelineConfig) -> None:
        self.stop = threading.Event()
        self.outcome: list[object] = []
        self.thread = threading.Thread(target=self._run, args=(cfg,))

    def _run(self, cfg: PipelineConfig) -> None:
        try:
            self.outcome.append(run_capture(cfg, until_idle=False, stop=self.stop))
        except Exception as exc:  # the assertion below shows it
            self.outcome.append(exc)

    def __enter__(self) -> _Capturing:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive()
        assert len(self.outcome) == 1 and not isinstance(self.outcome[0], Exception), self.outcome


def _report(reports: list[TableReport], name: str) -> TableReport:
    return next(r for r in reports if r.target.name == name)


def test_compaction_and_vacuum_while_capture_appends_keep_silver_applying(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    create_schema(pg_db, **SIZES)
    cfg = _config(root, pg_db, "maintenance: {vacuum_retention_hours: 0}\n")
    run_capture(cfg, until_idle=True)
    _changes(pg_db, 40)
    run_capture(cfg, until_idle=True)
    _silver(cfg, spark)  # silver now holds the bronze version it read
    pinned = DeltaTable(f"{root}/bronze/{ORDERS}").version()
    _changes(pg_db, 40)  # more small commits silver has not read
    run_capture(cfg, until_idle=True)
    path = f"{root}/bronze/{ORDERS}"
    before_rows, before_files = _rows(path), len(DeltaTable(path).file_uris())
    assert before_files > 20

    # capture keeps appending (a workload writes) while maintain compacts and vacuums
    work = Workload(pg_db, seed=3, sizes=SIZES, pause_s=0.01)
    with _Capturing(cfg):
        work.start()
        time.sleep(1.5)
        reports = maintain(cfg, targets(cfg))
        time.sleep(1.0)
        work.stop()
    assert all(r.failed is None for r in reports), [r.line(False) for r in reports]
    orders = _report(reports, ORDERS)
    assert orders.compacted[0] > 20 and orders.files[1] < orders.files[0], orders.line(False)
    # same rows as before maintenance (plus whatever capture appended meanwhile, all newer)
    after = _rows(path)
    assert after[: len(before_rows)] == before_rows
    # the version silver read last is intact on disk: its files were kept by VACUUM
    assert orders.vacuumed == 0, orders.line(False)
    assert _on_disk(path, pinned)
    assert _rows(path, pinned) == [r for r in before_rows if r[0] <= max(s for s, *_ in _rows(path, pinned))]

    run_capture(cfg, until_idle=True)
    _silver(cfg, spark)
    _equal_to_source(spark, root, pg_db)

    # silver has read past the compaction: the compacted-away files go now
    again = _report(maintain(cfg, targets(cfg, tables=[ORDERS])), ORDERS)
    assert again.failed is None and again.vacuumed >= orders.compacted[0], again.line(False)
    assert _on_disk(path, DeltaTable(path).version())
    _changes(pg_db, 20)
    run_capture(cfg, until_idle=True)
    _silver(cfg, spark)
    _equal_to_source(spark, root, pg_db)


@SAIL_ONLY
def test_retention_deletes_only_rows_every_silver_table_applied(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    create_schema(pg_db, **SIZES)
    cfg = _config(root, pg_db, "maintenance: {bronze_retention_days: 0.00001}\n")  # under a second
    path = f"{root}/bronze/{ORDERS}"
    run_capture(cfg, until_idle=True)
    time.sleep(1.0)
    untouched = _report(maintain(cfg, targets(cfg, tables=[ORDERS])), ORDERS)
    assert untouched.deleted_rows == 0 and "has applied nothing yet" in untouched.line(False)
    _silver(cfg, spark)
    applied = max(s for s, *_ in _rows(path))
    _changes(pg_db, 30)
    run_capture(cfg, until_idle=True)  # rows silver has not applied
    pending = [r for r in _rows(path) if r[0] > applied]
    assert pending
    time.sleep(1.0)
    work = Workload(pg_db, seed=4, sizes=SIZES, pause_s=0.01)
    with _Capturing(cfg):  # capture appends while retention deletes
        work.start()
        time.sleep(1.0)
        report = _report(maintain(cfg, targets(cfg, tables=[ORDERS])), ORDERS)
        time.sleep(1.0)
        work.stop()
    assert report.failed is None, report.line(False)
    assert report.deleted_rows == applied == SIZES["orders"]
    left = _rows(path)
    assert left[: len(pending)] == pending  # every applied row went, every pending row stayed
    assert all(r[0] > applied for r in left)
    run_capture(cfg, until_idle=True)
    _silver(cfg, spark)
    _equal_to_source(spark, root, pg_db)


def test_capture_resumes_after_many_maintenance_commits(pg_db, tmp_path):
    """An idle table, maintained often, gets many commits after its last capture commit: the
    writer still finds its high-water mark and the source's offset behind them."""
    from bronze.schema import offsets_path
    from bronze.writer import BronzeWriter

    root = str(tmp_path / "lake")
    create_schema(pg_db, **SIZES)
    cfg = _config(root, pg_db, "")
    run_capture(cfg, until_idle=True)
    writer = BronzeWriter(root, "pg")
    stored, state = writer.recover(), writer.table_state(ORDERS)
    writer.close()
    assert stored is not None and state.last_seq == SIZES["orders"]
    for path in (f"{root}/bronze/{ORDERS}", offsets_path(root, "pg")):
        table = DeltaTable(path)
        for i in range(30):  # commits without capture metadata, as VACUUM and compaction write
            table.alter.set_table_properties({"delta.appendOnly": "false", "cdc.test": str(i)},
                                             raise_if_not_exists=False)
    writer = BronzeWriter(root, "pg")
    assert writer.recover() == stored
    assert writer.table_state(ORDERS) == state
    writer.close()
    _changes(pg_db, 5)
    run_capture(cfg, until_idle=True)  # resumes: no second snapshot, no seq reused
    seqs = [s for s, *_ in _rows(f"{root}/bronze/{ORDERS}")]
    assert len(seqs) == len(set(seqs)) == SIZES["orders"] + 5


def test_capture_keeps_committing_while_maintain_runs_again_and_again(pg_db, tmp_path):
    """Each maintain run commits compactions (and VACUUMs) between the capture's own commits: the
    capture's next append, on its older snapshot, must still go through."""
    root = str(tmp_path / "lake")
    create_schema(pg_db, **SIZES)
    cfg = _config(root, pg_db, "maintenance: {vacuum_retention_hours: 0}\n")
    run_capture(cfg, until_idle=True)
    work = Workload(pg_db, seed=6, sizes=SIZES, pause_s=0.01)
    compacted = 0
    with _Capturing(cfg):
        work.start()
        for _ in range(6):
            time.sleep(0.7)
            for report in maintain(cfg, targets(cfg, tables=[ORDERS, "pg.public.accounts", "_cdc/pg/offsets"])):
                assert report.failed is None, report.line(False)
                compacted += report.compacted[0]
        work.stop()
    assert compacted > 0
    run_capture(cfg, until_idle=True)
    seqs = [s for s, *_ in _rows(f"{root}/bronze/{ORDERS}")]
    assert seqs == sorted(set(seqs)) and seqs == list(range(1, len(seqs) + 1))  # nothing lost, nothing twice
