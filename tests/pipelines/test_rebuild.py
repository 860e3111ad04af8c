"""``rebuild``: one silver table dropped with its progress and built again from bronze equals the
source table; the other tables are untouched; no database secret is needed."""

from __future__ import annotations

import re

import psycopg
import pytest

from pipelines.capture import run_capture
from pipelines.cli import main
from pipelines.config import parse_pipeline
from pipelines.rebuild import rebuild
from pipelines.silver_runner import run_silver
from tests.pipelines.exactly_once_support import create_schema, pipeline_yaml
from tests.support.engines import SAIL_ONLY

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]

SILVER = "silver:\n  - {table: accounts, source: pg.public.accounts}\n  - {table: orders, source: pg.public.orders}\n"


def _silver_rows(spark, root: str, table: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in spark.read.format("delta").load(f"{root}/silver/{table}")
            .select("id", *(["balance", "note"] if table == "accounts" else ["qty", "status"])).orderBy("id").collect()]


@SAIL_ONLY
def test_rebuild_drops_one_table_and_builds_it_again_equal_to_the_source(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    create_schema(pg_db, big=3, accounts=20, orders=20)
    text = pipeline_yaml(root, pg_db, slot="c_" + pg_db.split("dbname=")[1].split()[0][-40:], interval_ms=100,
                         max_records=100) + SILVER
    cfg = parse_pipeline(text, env={})

    def step() -> None:
        run_capture(cfg, until_idle=True)
        result = run_silver(root=root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                            sources=cfg.topic_prefixes(), once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]

    with psycopg.connect(pg_db, autocommit=True) as conn:
        step()
        conn.execute("UPDATE accounts SET balance = balance + id, note = 'moved' WHERE id % 3 = 0")
        conn.execute("DELETE FROM accounts WHERE id % 5 = 0")
        conn.execute("INSERT INTO accounts SELECT g, g, 'late' FROM generate_series(100, 110) g")
        conn.execute("UPDATE orders SET qty = 9 WHERE id < 4")
        step()
        expected = [tuple(r) for r in conn.execute("SELECT id, balance, note FROM accounts ORDER BY id").fetchall()]
    assert _silver_rows(spark, root, "accounts") == expected
    # the silver table drifts from its source (lost files, a bad manual edit...)
    spark.sql(f"DELETE FROM delta.`{root}/silver/accounts` WHERE id < 10")
    spark.sql(f"UPDATE delta.`{root}/silver/accounts` SET note = 'wrong' WHERE id > 100")
    assert _silver_rows(spark, root, "accounts") != expected
    orders_before = _silver_rows(spark, root, "orders")
    said: list[str] = []
    assert rebuild(cfg, "accounts", yes=True, say=said.append, spark=spark)
    assert _silver_rows(spark, root, "accounts") == expected
    assert _silver_rows(spark, root, "orders") == orders_before
    assert any("accounts: dropped; rebuilding from bronze" in line for line in said), said


def test_rebuild_needs_no_secret_and_checks_its_arguments_before_touching_anything(pg_db, tmp_path, capsys):
    root = str(tmp_path / "lake")
    text = pipeline_yaml(root, pg_db, slot="unused", interval_ms=100, max_records=100) + SILVER
    config = tmp_path / "pipeline.yaml"
    config.write_text(re.sub(r"user: postgres}", "user: postgres, password: '${NOT_SET_ANYWHERE}'}", text))
    assert main(["rebuild", "-c", str(config), "--table", "nope", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "no silver table named 'nope'" in err and "declared: accounts, orders" in err and "Traceback" not in err
    assert main(["rebuild", "-c", str(config), "--table", "accounts"]) == 2
    assert "rebuild needs --yes when not run from a terminal" in capsys.readouterr().err
