"""A capture of the fake Oracle database killed with SIGKILL in the middle of its snapshot, then
restarted: the interrupted snapshot's rows are gone, the new snapshot and the changes streamed
after it are in bronze exactly once, and silver (Sail) equals the source. The source is written
here by hand: two tables of 1,500 rows, then three changes committed after the snapshot SCN."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from deltalake import DeltaTable

from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import read_offsets, read_topic
from tests.support.engines import SAIL_ONLY
from tests.support.oracle_capture import SOURCE, capture_once, save_database
from tests.support.oracle_fake import LOGMNR_COLUMNS, FakeColumn, FakeOracleDatabase, FakeTable

pytestmark = [pytest.mark.integration]

ROWS = 1500
NAMES = ("ITEMS_A", "ITEMS_B")
TABLES = {n: FakeTable("INVENTORY", n, (FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False),
                                        FakeColumn("NAME", "VARCHAR2", 50)), ("ID",)) for n in NAMES}
SNAPSHOT_SCN = 2050  # the first CURRENT_SCN answer: 2000 + one step
OPTIONS = {"table.include.list": "INVENTORY\\.ITEMS_.*", "query.fetch.size": 100}


def _row(scn: int, code: int, op: str, xid: str, redo: str | None = None, table: str | None = None,
         row_id: str | None = None) -> dict[str, Any]:
    return {**dict.fromkeys(LOGMNR_COLUMNS), "SCN": scn, "OPERATION_CODE": code, "OPERATION": op, "XID": xid,
            "SQL_REDO": redo, "TABLE_NAME": table, "SEG_OWNER": "INVENTORY" if table else None, "ROW_ID": row_id,
            "CSF": 0, "ROLLBACK": 0, "STATUS": 0, "SSN": 0, "THREAD#": 1, "USERNAME": "APP"}


def _contents() -> list[dict[str, Any]]:
    a, b, x = '"INVENTORY"."ITEMS_A"', '"INVENTORY"."ITEMS_B"', "0a000b000c000000"
    return [
        _row(3000, 6, "START", x),
        _row(3001, 1, "INSERT", x, f"insert into {a}(\"ID\",\"NAME\") values ('5001','new');", "ITEMS_A", "R1"),
        _row(3002, 3, "UPDATE", x, f"update {b} set \"NAME\" = 'b1!' where \"ID\" = '1' and \"NAME\" = 'b1';",
             "ITEMS_B", "R2"),
        _row(3003, 2, "DELETE", x, f"delete from {a} where \"ID\" = '2' and \"NAME\" = 'a2';", "ITEMS_A", "R3"),
        _row(3004, 7, "COMMIT", x),
    ]


def _as_of(owner: str, table: str, scn: int) -> list[tuple[Any, ...]]:
    assert scn < 3000, scn
    prefix = table[-1].lower()
    return [(Decimal(i), f"{prefix}{i}") for i in range(1, ROWS + 1)]


def _database() -> FakeOracleDatabase:
    return FakeOracleDatabase({("INVENTORY", n): t for n, t in TABLES.items()}, _contents(), _as_of, 2000,
                              mining_query(MiningQuerySettings()), final_scn=3100, scn_step=50)


def _keys(root: str, table: str) -> list[tuple[str | None, int]]:
    return [(r["op"], orjson.loads(r["key"])["ID"]) for r in read_topic(root, f"ora.INVENTORY.{table}")]


SILVER = ("pipeline: ora_test\nlakehouse: {root: ROOT}\n"
          "sources:\n  - {name: ora, connector: oracle, connection: {host: fake, user: u, database: ORCLPDB1}}\n"
          "silver:\n  - {table: items_a, source: ora.INVENTORY.ITEMS_A}\n"
          "  - {table: items_b, source: ora.INVENTORY.ITEMS_B}\n")


@SAIL_ONLY
@pytest.mark.spark
def test_sigkill_during_the_snapshot_then_restart(tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "lake")
    slow = _database()
    slow.snapshot_fetch_delay_s = 0.05  # 30 fetches of 100 rows: the snapshot takes 1.5 s or more
    fixture = tmp_path / "db.pickle"
    save_database(slow, fixture, {("INVENTORY", n, SNAPSHOT_SCN): _as_of("INVENTORY", n, SNAPSHOT_SCN)
                                  for n in NAMES})
    repo = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-m", "tests.support.oracle_capture", str(fixture), root, "5",
                              json.dumps(OPTIONS)], cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if read_offsets(root, SOURCE):  # a first snapshot batch committed: kill it mid-snapshot
                break
            time.sleep(0.02)
        assert child.poll() is None, f"the capture ended before it was killed: {child.communicate()}"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    offsets = read_offsets(root, SOURCE)
    assert offsets and not any(o["snapshot_completed"] for o in offsets), "the kill did not land in the snapshot"
    assert 0 < len(_keys(root, "ITEMS_A")) + len(_keys(root, "ITEMS_B")) < 2 * ROWS

    result = capture_once(root, _database(), options=OPTIONS)  # the restart, on the same database
    assert result.plan_reason.startswith("the previous snapshot did not finish")
    reads = [("r", i) for i in range(1, ROWS + 1)]
    assert _keys(root, "ITEMS_A") == [*reads, ("c", 5001), ("d", 2), (None, 2)]
    assert _keys(root, "ITEMS_B") == [*reads, ("u", 1)]

    cfg = parse_pipeline(SILVER.replace("ROOT", root), env={})
    done = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                      sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert done.ok, [t.error for t in done.errors]
    source = {"items_a": sorted([(i, f"a{i}") for i in range(1, ROWS + 1) if i != 2] + [(5001, "new")]),
              "items_b": sorted([(1, "b1!")] + [(i, f"b{i}") for i in range(2, ROWS + 1)])}
    for name, want in source.items():
        rows = DeltaTable(f"{root}/silver/{name}").to_pyarrow_table().to_pylist()
        assert sorted((r["ID"], r["NAME"]) for r in rows) == want, name
