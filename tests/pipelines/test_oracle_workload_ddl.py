"""Oracle schema changes from real concurrent PostgreSQL transactions: ``ALTER TABLE .. ADD`` run
while writers are busy (they wait for its lock, as on Oracle), then values for the new column,
replayed as LogMiner rows with the DDL row at the statement's WAL position, captured through the
fake connection into bronze and built into silver on Sail: silver equals the PostgreSQL tables,
new column included. The oracle is PostgreSQL (its tables)."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from deltalake import DeltaTable

from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.engines import SAIL_ONLY
from tests.support.oracle_capture import SOURCE, capture_once
from tests.support.oracle_checks import database
from tests.support.oracle_fake import FakeColumn, FakeTable
from tests.support.oracle_workload import TABLES, OracleWorkload

pytestmark = [pytest.mark.integration]

SILVER = ("pipeline: ora_test\nlakehouse: {root: ROOT}\n"
          "sources:\n  - {name: ora, connector: oracle, connection: {host: fake, user: u, database: ORCLPDB1}}\n"
          "silver:\n"
          "  - {table: customers, source: ora.INVENTORY.CUSTOMERS}\n"
          "  - {table: orders, source: ora.INVENTORY.ORDERS}\n")
WITH_EMAIL = FakeTable("INVENTORY", "CUSTOMERS", (*TABLES["CUSTOMERS"].columns, FakeColumn("EMAIL", "VARCHAR2", 100)),
                       ("ID",))


def _value(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.replace(tzinfo=None)
    if isinstance(v, Decimal):
        return v.normalize()
    return v


@SAIL_ONLY
@pytest.mark.spark
def test_sail_silver_equals_postgres_after_a_column_added_under_load(pg_db: str, tmp_path: Path, spark: Any) -> None:
    w = OracleWorkload(pg_db, csf_limit=1000)
    w.run(writers=2, transactions=3)

    def alter() -> None:
        time.sleep(0.05)  # the writers are in their transactions: the ALTER waits for them
        w.alter("CUSTOMERS", 'ADD "EMAIL" varchar(100)',
                'ALTER TABLE "INVENTORY"."CUSTOMERS" ADD "EMAIL" VARCHAR2(100)', WITH_EMAIL)

    ddl = threading.Thread(target=alter)
    ddl.start()
    w.run(writers=2, transactions=3, base_id=10_000)
    ddl.join(60)
    assert w.ddl, "the ALTER did not run"
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute('UPDATE "INVENTORY"."CUSTOMERS" SET "EMAIL" = \'c\' || "ID" || \'@example.com\' '
                     'WHERE "ID" % 2 = 0')
    w.decode()
    scns = [int(r["SCN"]) for r in w.logminer_rows()]
    assert any(s < w.ddl[0][0] for s in scns) and any(s > w.ddl[0][0] for s in scns)

    root = str(tmp_path / "lake")
    capture_once(root, database(w, start=scns[0] - 1, end=scns[-1] + 1))
    cfg = parse_pipeline(SILVER.replace("ROOT", root), env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    for name in TABLES:
        columns = [c.name for c in w.table_at(name, 1 << 62).columns]
        rows = DeltaTable(f"{root}/silver/{name.lower()}").to_pyarrow_table().to_pylist()
        got = sorted(tuple(_value(r[c]) for c in columns) for r in rows)
        want = sorted(tuple(_value(v) for v in r) for r in w.source_rows(name))
        assert got == want, name
    assert any(r[-1] is not None for r in w.source_rows("CUSTOMERS"))
