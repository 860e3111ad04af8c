"""Oracle incremental snapshot through the signal table, end to end on the live fake (PostgreSQL
tables, their decoding as LogMiner rows): 300 rows snapshotted in chunks of 20 while a writer
updates, deletes and inserts rows of the table; the capture is killed with SIGKILL mid-snapshot and
restarted; a malformed signal is logged and ignored. Each key is read by the snapshot at most
once in bronze, every row the writer never touched exactly once, and silver (Sail) equals the
PostgreSQL table (the oracle: PostgreSQL itself, not the connector)."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from deltalake import DeltaTable

from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import read_offsets, read_topic
from tests.support.engines import SAIL_ONLY
from tests.support.oracle_capture import SOURCE
from tests.support.oracle_live import SIGNAL, capture, create_signal_table, live_database
from tests.support.oracle_workload import OWNER, TABLES, OracleWorkload

pytestmark = [pytest.mark.integration]

ROWS = 300
TOPIC = "ora.INVENTORY.CUSTOMERS"
OPTIONS = {"snapshot.mode": "no_data", "table.include.list": f"INVENTORY\\.CUSTOMERS,INVENTORY\\.{SIGNAL}",
           "signal.data.collection": f"ORCLPDB1.INVENTORY.{SIGNAL}", "incremental.snapshot.chunk.size": 20,
           "poll.interval.ms": 50}
SILVER = ("pipeline: ora_test\nlakehouse: {root: ROOT}\n"
          "sources:\n  - {name: ora, connector: oracle, connection: {host: fake, user: u, database: ORCLPDB1}}\n"
          "silver:\n  - {table: customers, source: ora.INVENTORY.CUSTOMERS}\n")


def _populate(dsn: str) -> None:
    with psycopg.connect(dsn) as conn, conn.transaction():
        for i in range(1, ROWS + 1):
            conn.execute(f'INSERT INTO "{OWNER}"."CUSTOMERS" VALUES (%s, %s, %s, %s, %s)',
                         (i, f"c{i}", Decimal(i) / 4, datetime(2024, 5, 6, 7, 8, 9, i), None if i % 2 else "n"))


def _signal(dsn: str, sig_id: str, kind: str, data: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{OWNER}"."{SIGNAL}" VALUES (%s, %s, %s)', (sig_id, kind, data))


class _Writer(threading.Thread):
    """Updates, deletes and inserts rows of the snapshotted table, one transaction at a time."""

    def __init__(self, dsn: str, count: int) -> None:
        super().__init__(daemon=True)
        self.dsn, self.count = dsn, count
        self.touched: set[int] = set()
        self.error: BaseException | None = None

    def run(self) -> None:
        rnd = random.Random(11)
        try:
            with psycopg.connect(self.dsn, autocommit=True, options="-c synchronous_commit=on") as conn:
                for n in range(self.count):
                    key = rnd.randint(1, 30 if n < 60 else ROWS)  # the first chunks' keys, in their windows
                    self.touched.add(key)
                    if n % 7 == 3:
                        conn.execute(f'DELETE FROM "{OWNER}"."CUSTOMERS" WHERE "ID" = %s', (key,))
                    elif n % 5 == 1:
                        conn.execute(f'INSERT INTO "{OWNER}"."CUSTOMERS" VALUES (%s, %s, NULL, NULL, NULL)',
                                     (10_000 + n, f"new {n}"))
                    else:
                        conn.execute(f'UPDATE "{OWNER}"."CUSTOMERS" SET "NAME" = %s, "BALANCE" = %s WHERE "ID" = %s',
                                     (f"u{n}", Decimal(n), key))
                    time.sleep(0.02)
        except BaseException as exc:  # reported by the test
            self.error = exc


def _reads(root: str) -> list[int]:
    return [orjson.loads(r["key"])["ID"] for r in read_topic(root, TOPIC) if r["op"] == "r"]


def _value(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.replace(tzinfo=None)
    if isinstance(v, Decimal):
        return v.normalize()
    return v


@SAIL_ONLY
@pytest.mark.spark
def test_incremental_snapshot_with_a_writer_killed_and_restarted(pg_db: str, tmp_path: Path, spark: Any,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    workload = OracleWorkload(pg_db)
    create_signal_table(pg_db)
    _populate(pg_db)
    root = str(tmp_path / "lake")
    repo = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-m", "tests.support.oracle_live", pg_db, root, json.dumps(OPTIONS),
                              "0.05"], cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    writer = _Writer(pg_db, 150)
    try:
        deadline = time.monotonic() + 30
        while not read_offsets(root, SOURCE) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # streaming has started
        writer.start()  # streamed changes precede the snapshot: silver settles it as a re-snapshot
        time.sleep(0.3)
        _signal(pg_db, "snap-1", "execute-snapshot",
                '{"data-collections": ["ORCLPDB1.INVENTORY.CUSTOMERS"], "type": "incremental"}')
        while child.poll() is None and time.monotonic() < deadline and len(_reads(root)) < 3 * 20:
            time.sleep(0.02)
        assert child.poll() is None, f"the capture ended before it was killed: {child.communicate()}"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    read_before = len(_reads(root))
    assert 0 < read_before < ROWS - 40, (f"the kill did not land in the snapshot ({read_before} rows read): "
                                         f"{child.communicate()[1].decode()[-5000:]}")

    _signal(pg_db, "bad-1", "execute-snapshot", "{not json")
    with caplog.at_level(logging.WARNING, logger="cdc_sources.common.incremental_snapshot"):
        capture(root, live_database(OracleWorkload(pg_db, create=False)), OPTIONS, until_idle=True)
    assert any("bad-1" in r.getMessage() and "ignored" in r.getMessage() for r in caplog.records), caplog.text
    writer.join(60)
    assert writer.error is None, writer.error
    capture(root, live_database(OracleWorkload(pg_db, create=False)), OPTIONS, until_idle=True)  # the writer's tail

    reads = Counter(_reads(root))
    assert max(reads.values()) == 1, [k for k, n in reads.items() if n > 1]  # each key read once
    untouched = set(range(1, ROWS + 1)) - writer.touched
    assert untouched <= set(reads), sorted(untouched - set(reads))  # every row nobody changed was read

    cfg = parse_pipeline(SILVER.replace("ROOT", root), env={})
    done = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                      sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert done.ok, [t.error for t in done.errors]
    cols = [c.name for c in TABLES["CUSTOMERS"].columns]
    silver = sorted(tuple(_value(r[c]) for c in cols)
                    for r in DeltaTable(f"{root}/silver/customers").to_pyarrow_table().to_pylist())
    want = sorted(tuple(_value(v) for v in r) for r in workload.source_rows("CUSTOMERS"))
    in_bronze = {orjson.loads(r["key"])["ID"] for r in read_topic(root, TOPIC) if r["key"]}
    assert silver == want, (sorted(set(silver) - set(want))[:5], sorted(set(want) - set(silver))[:5],
                            sorted({w[0] for w in want} - in_bronze)[:10])


def test_insert_delete_closes_each_chunk_with_the_open_rows_delete(pg_db: str, tmp_path: Path) -> None:
    """``incremental.snapshot.watermarking.strategy: insert_delete`` on the live fake: the LogMiner
    DELETE of each chunk's open row closes its window while a writer changes rows; each key is read at
    most once, every untouched row exactly once, and the signal table (read with psycopg) ends
    without a watermark row. Engine-free, in-process."""
    OracleWorkload(pg_db)
    create_signal_table(pg_db)
    _populate(pg_db)
    root = str(tmp_path / "lake")
    options = {**OPTIONS, "incremental.snapshot.watermarking.strategy": "insert_delete"}
    capture(root, live_database(OracleWorkload(pg_db, create=False)), options, until_idle=True)  # streaming from here
    _signal(pg_db, "idel-1", "execute-snapshot",
            '{"data-collections": ["ORCLPDB1.INVENTORY.CUSTOMERS"], "type": "incremental"}')
    writer = _Writer(pg_db, 60)
    writer.start()
    capture(root, live_database(OracleWorkload(pg_db, create=False)), options, until_idle=True)
    writer.join(60)
    assert writer.error is None, writer.error
    capture(root, live_database(OracleWorkload(pg_db, create=False)), options, until_idle=True)

    offsets = read_offsets(root, SOURCE)
    assert "incremental_snapshot_collections" not in orjson.loads(offsets[-1]["offset"])
    reads = Counter(_reads(root))
    assert reads and max(reads.values()) == 1, [k for k, n in reads.items() if n > 1]
    untouched = set(range(1, ROWS + 1)) - writer.touched
    assert untouched and untouched <= set(reads), sorted(untouched - set(reads))
    ops: Counter[tuple[str, str]] = Counter()
    for r in read_topic(root, f"ora.INVENTORY.{SIGNAL}"):
        v = orjson.loads(r["value"]) if r["value"] else None
        if v is not None and v["op"] in ("c", "d"):
            image = v["after"] if v["op"] == "c" else v["before"]
            ops[v["op"], image["TYPE"]] += 1
    assert ops["c", "snapshot-window-open"] >= ROWS // 20 - 3, ops
    assert ops["d", "snapshot-window-open"] == ops["c", "snapshot-window-open"], ops
    assert ops["c", "snapshot-window-close"] == 0, ops
    with psycopg.connect(pg_db) as conn:  # the oracle: the signal table itself
        left = [tuple(r) for r in conn.execute(f'SELECT "ID", "TYPE" FROM "{OWNER}"."{SIGNAL}"')]
    assert left == [("idel-1", "execute-snapshot")], left
