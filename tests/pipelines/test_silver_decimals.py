"""Decimals reach silver exactly, from real PostgreSQL and MariaDB capture: unconstrained NUMERIC
with more than 18 fraction digits or more than 38 digits, NUMERIC(60,25), MySQL DECIMAL(65,30),
and PostgreSQL's NaN and infinities (``decimal.handling.mode: string``; ``precise`` cannot carry
them: capture stops, as Debezium does). The oracle is the source read back with psycopg/pymysql
as Python `Decimal`; silver is read with delta-rs (no Spark in the oracle)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import psycopg
import pymysql
import pytest
from deltalake import DeltaTable

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.mariadb_pipeline import SOURCE, mariadb_pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.spark,
              pytest.mark.parametrize("engine", ["sail"], indirect=True)]

PG_VALUES = ["3.14159265358979323846", "-2.718281828459045235360287471352662497757",
             "123456789012345678901234567890123456789012345678901234567890.5",
             "0.00000000000000000000000000000000000000000001",
             "-99999999999999999999999999999999999999999", "0", "1.50", "-7"]
MY_VALUES = ["99999999999999999999999999999999999.999999999999999999999999999999",
             "-12345678901234567890.123456789012345678901234567890", "0.000000000000000000000000000001", "0", "-1"]


def _wide(v: str) -> str:
    """``v`` when it fits NUMERIC(60,25) (35 integer digits), else a value that needs all of them."""
    return v if len(v.split(".", maxsplit=1)[0].lstrip("-")) <= 35 else "-" + "9" * 35 + "." + "1" * 25


def _silver_rows(root: str, table: str, cols: str) -> dict[int, tuple[Any, ...]]:
    data = DeltaTable(f"{root}/silver/{table}").to_pyarrow_table().to_pylist()
    return {r["id"]: tuple(r[c] for c in cols.split(", ")) for r in data}


def _run_silver(spark: Any, cfg: Any, root: str, source: str) -> None:
    result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                        sources={source: source}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    assert all(t.quarantined == 0 for t in result.tables), result.tables


def _pg_config(root: str, dsn: str, slot: str, table: str, mode: str) -> Any:
    parts = dict(p.split("=", 1) for p in dsn.split())
    return parse_pipeline(
        f"pipeline: t\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
        f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: postgres}}\n"
        f"    options: {{slot.name: {slot}, table.include.list: public.{table}, decimal.handling.mode: {mode}}}\n"
        f"silver:\n  - {{table: {table}, source: pg.public.{table}}}\n", env={})


@pytest.mark.postgres
def test_postgres_unconstrained_and_wide_numerics_are_exact_in_silver(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE nums (id int PRIMARY KEY, n numeric, w numeric(60,25))")
        for i, v in enumerate(PG_VALUES[:4]):  # snapshot
            conn.execute("INSERT INTO nums VALUES (%s, %s::numeric, %s::numeric(60,25))",
                         (i, v, _wide(v)))
    cfg = _pg_config(root, pg_db, f"s_{tmp_path.name[-20:]}", "nums", "precise")
    run_capture(cfg, until_idle=True)
    _run_silver(spark, cfg, root, "pg")
    with psycopg.connect(pg_db, autocommit=True) as conn:  # streamed: inserts, updates, a null
        for i, v in enumerate(PG_VALUES[4:], start=4):
            conn.execute("INSERT INTO nums VALUES (%s, %s::numeric, %s::numeric(60,25))", (i, v, _wide(v)))
        conn.execute("UPDATE nums SET n = n * 10 + 0.000000000000000000000000001, w = -w WHERE id = 0")
        conn.execute("INSERT INTO nums VALUES (100, NULL, NULL)")
    run_capture(cfg, until_idle=True)
    _run_silver(spark, cfg, root, "pg")
    with psycopg.connect(pg_db) as conn:
        source = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, n, w FROM nums").fetchall()}
    got = _silver_rows(root, "nums", "n, w")
    assert {k: tuple(None if x is None else Decimal(x) for x in v) for k, v in got.items()} == source
    assert got[0][0] == "31.415926535897932384600000001", "fraction digits beyond 18 are kept"
    assert all(isinstance(x, str) or x is None for v in got.values() for x in v)  # STRING columns


@pytest.mark.postgres
def test_postgres_nan_and_infinities_with_string_decimals(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE specials (id int PRIMARY KEY, n numeric, p numeric(10,3))")
        conn.execute("INSERT INTO specials VALUES (1, 'NaN', 'NaN'), (2, 'Infinity', -0.5), "
                     "(3, '-Infinity', 2.25), (4, 3.14159265358979323846, 1.5)")
    cfg = _pg_config(root, pg_db, f"s_{tmp_path.name[-20:]}", "specials", "string")
    run_capture(cfg, until_idle=True)
    _run_silver(spark, cfg, root, "pg")
    with psycopg.connect(pg_db) as conn:
        source = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, n, p FROM specials").fetchall()}
    debezium_names = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}

    def as_debezium(d: Decimal) -> str:  # Debezium's string mode: the Java enum names for the specials
        return debezium_names.get(str(d), format(d, "f"))

    expected = {k: tuple(as_debezium(x) for x in v) for k, v in source.items()}
    assert _silver_rows(root, "specials", "n, p") == expected


@pytest.mark.mariadb
def test_mariadb_decimal_65_30_is_exact_in_silver(mariadb_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    conn = pymysql.connect(**mariadb_db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE wide (id INT PRIMARY KEY, d DECIMAL(65,30), s DECIMAL(38,10))")
        cur.execute("INSERT INTO wide VALUES (0, %s, 1.5)", (MY_VALUES[0],))
    text = mariadb_pipeline_text(root, mariadb_db, server_id=5461,
                                 silver=[{"table": "wide", "source": f"{SOURCE}.{mariadb_db['database']}.wide"}])
    cfg = parse_pipeline(text, env={})
    run_capture(cfg, until_idle=True)
    with conn.cursor() as cur:
        for i, v in enumerate(MY_VALUES[1:], start=1):
            cur.execute("INSERT INTO wide VALUES (%s, %s, %s)", (i, v, "-1234567890123456789012345678.0123456789"))
        cur.execute("UPDATE wide SET d = -d WHERE id = 0")
    run_capture(cfg, until_idle=True)
    _run_silver(spark, cfg, root, SOURCE)
    with conn.cursor() as cur:
        cur.execute("SELECT id, d, s FROM wide")
        source = {r[0]: (r[1], r[2]) for r in cur.fetchall()}
    conn.close()
    got = _silver_rows(root, "wide", "d, s")
    assert {k: (Decimal(v[0]), v[1]) for k, v in got.items()} == source
    assert got[0][0] == "-" + MY_VALUES[0]  # DECIMAL(65,30): an exact STRING column
