"""A SQL Server table whose change data capture was enabled while the capture was stopped,
end to end on the CDC emulator: the next start writes its CREATE schema change event, streams its
changes from its capture's start (no snapshot of it, as Debezium in ``initial`` mode), and the
silver table built on Sail equals the source table (read with psycopg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import read_topic
from tests.support.engines import SAIL_ONLY
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import emulated
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text

pytestmark = [pytest.mark.integration]


@SAIL_ONLY
def test_a_table_enabled_while_stopped_reaches_silver(pg_db: str, tmp_path: Path, spark: Any) -> None:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40) NOT NULL)")
    emu.execute("INSERT INTO dbo.customers VALUES (1, 'one')")
    emu.enable_db()
    emu.enable_table("dbo", "customers")
    db = str(conninfo_to_dict(emu.dsn)["dbname"])
    root = str(tmp_path / "lake")
    topic = f"{SOURCE}.{db}.dbo.orders"
    text = sqlserver_pipeline_text(root, emu.dsn, silver=[{"table": "orders", "source": topic}])
    with emulated():
        run_capture(parse_pipeline(text, env={}), until_idle=True)

    emu.execute("CREATE TABLE dbo.orders (id int PRIMARY KEY, item varchar(20), qty int)")
    emu.enable_table("dbo", "orders")
    emu.execute("INSERT INTO dbo.orders SELECT g, 'item ' || g, g FROM generate_series(1, 40) AS g")
    emu.execute("UPDATE dbo.orders SET qty = qty * 10 WHERE id % 3 = 0")
    emu.execute("DELETE FROM dbo.orders WHERE id % 7 = 0")
    emu.execute("UPDATE dbo.orders SET id = id + 100 WHERE id = 5")
    emu.agent().sync()
    with emulated():
        run_capture(parse_pipeline(text, env={}), until_idle=True)

    creates = [orjson.loads(r["value"])["tableChanges"][0]["id"] for r in read_topic(root, SOURCE)]
    assert creates == [f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"']
    config = parse_pipeline(text, env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=config.silver, options=config.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    silver = [tuple(r) for r in spark.read.format("delta").load(f"{root}/silver/orders")
              .select("id", "item", "qty").orderBy("id").collect()]
    with psycopg.connect(emu.dsn) as conn:
        source = [tuple(r) for r in conn.execute("SELECT id, item, qty FROM dbo.orders ORDER BY id")]
    assert len(source) == 35 and silver == source
