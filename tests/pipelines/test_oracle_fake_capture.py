"""Oracle end to end through the fake connection: concurrent PostgreSQL transactions, replayed as
LogMiner rows, captured into bronze and built into silver on Sail, equal the PostgreSQL tables;
a capture killed with SIGKILL mid-stream and restarted leaves every change in bronze exactly
once. Small data; the oracle is PostgreSQL (tables and its own decoding)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import read_offsets
from tests.support.engines import SAIL_ONLY
from tests.support.oracle_capture import SOURCE, capture_once, save_database
from tests.support.oracle_checks import bronze_events, database, expected_events, snapshot_scn
from tests.support.oracle_workload import TABLES, OracleWorkload

pytestmark = [pytest.mark.integration]

SILVER = ("pipeline: ora_test\nlakehouse: {root: ROOT}\n"
          "sources:\n  - {name: ora, connector: oracle, connection: {host: fake, user: u, database: ORCLPDB1}}\n"
          "silver:\n"
          "  - {table: customers, source: ora.INVENTORY.CUSTOMERS}\n"
          "  - {table: orders, source: ora.INVENTORY.ORDERS}\n")


@pytest.fixture
def workload(pg_db: str) -> OracleWorkload:
    w = OracleWorkload(pg_db, csf_limit=1000)
    w.run(writers=3, transactions=5)
    w.decode()
    return w


def _silver_rows(root: str, name: str) -> list[tuple[Any, ...]]:
    rows = DeltaTable(f"{root}/silver/{name}").to_pyarrow_table().to_pylist()
    cols = [c.name for c in TABLES[name.upper()].columns]
    return sorted(tuple(_value(r[c]) for c in cols) for r in rows)


def _value(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.replace(tzinfo=None)
    if isinstance(v, Decimal):
        return v.normalize()
    return v


@SAIL_ONLY
@pytest.mark.spark
def test_sail_silver_equals_the_postgres_tables(workload: OracleWorkload, tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "lake")
    scns = [int(r["SCN"]) for r in workload.logminer_rows()]
    capture_once(root, database(workload, start=scns[len(scns) // 3], end=scns[-1] + 1))
    cfg = parse_pipeline(SILVER.replace("ROOT", root), env={})
    for _ in range(10):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={SOURCE: SOURCE}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            break
    for name in TABLES:
        want = sorted(tuple(_value(v) for v in r) for r in workload.source_rows(name))
        assert _silver_rows(root, name.lower()) == want, name


def test_sigkill_mid_stream_then_restart_is_exactly_once(workload: OracleWorkload, tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    scns = [int(r["SCN"]) for r in workload.logminer_rows()]
    start, end = scns[len(scns) // 4], scns[-1] + 1
    db = database(workload, start=start, end=end, windows=40)
    db.window_delay_s = 0.15  # forty windows of a slow database: the child is mid-stream for seconds
    first_scn = min(end, start + db.scn_step)  # the snapshot's SCN: the first CURRENT_SCN answer
    fixture = tmp_path / "db.pickle"
    save_database(db, fixture, {(t.owner, t.name, first_scn): workload.rows_as_of(t.owner, t.name, first_scn)
                                for t in TABLES.values()})
    repo = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-m", "tests.support.oracle_capture", str(fixture), root, "5"],
                             cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            streamed = [r for r in read_offsets(root, SOURCE) if r["snapshot_completed"]]
            if len(streamed) >= 3:  # a few streamed batches committed: kill it mid-stream
                break
            time.sleep(0.05)
        assert child.poll() is None, f"the capture ended before it was killed: {child.communicate()}"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    scn = snapshot_scn(root)
    killed = {name: bronze_events(root, name) for name in TABLES}
    full = {name: expected_events(workload.transactions, scn, name) for name in TABLES}
    assert any(len(killed[n]) < len(full[n]) for n in TABLES), "the kill came after the capture had everything"
    for name in TABLES:  # what the killed run committed is a prefix of the true sequence
        assert killed[name] == full[name][:len(killed[name])], name

    # restart on the same (now fully available) database, from the stored offset
    again = database(workload, start=end, end=end)
    capture_once(root, again)
    for name in TABLES:
        assert bronze_events(root, name) == full[name], name
