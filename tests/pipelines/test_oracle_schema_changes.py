"""Oracle schema changes through the fake connection: DDL rows (``ALTER TABLE`` add, rename, drop
column, ``CREATE TABLE``) from the fixture corpus ``logminer_schema_changes.jsonl`` change the
tables' columns at their SCN, are recorded in the schema history and as schema change events, and
survive a restart after which the dictionary shows a later structure. The expected images are
written by hand from the corpus; silver's from the documented silver rules (a dropped column stays,
null from then on; a renamed one keeps its values)."""

from __future__ import annotations

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

from bronze.schema import history_path
from cdc_sources.oracle.session import OracleStreamError
from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import read_table, read_topic
from tests.support.engines import SAIL_ONLY
from tests.support.oracle_capture import SOURCE, capture_once, save_database
from tests.support.oracle_ddl_corpus import EXPECTED_PRODUCTS, database, decimal, events

pytestmark = [pytest.mark.integration]



def test_ddl_changes_the_columns_at_its_scn_and_is_recorded(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(995, 1100))
    assert events(root, "PRODUCTS") == EXPECTED_PRODUCTS
    assert events(root, "TAGS") == [("c", {"ID": 1, "LABEL": "red"})]

    history = [orjson.loads(r["value"]) for r in read_table(history_path(root, SOURCE))]
    assert [(h["schemaName"], h["tableChanges"][0]["type"], h["tableChanges"][0]["id"]) for h in history] == [
        ("INVENTORY", "CREATE", '"ORCLPDB1"."INVENTORY"."PRODUCTS"'),
        *[("INVENTORY", "ALTER", '"ORCLPDB1"."INVENTORY"."PRODUCTS"')] * 3,
        ("INVENTORY", "CREATE", '"ORCLPDB1"."INVENTORY"."TAGS"')]
    assert [h["ddl"] for h in history[1:]] == [
        'ALTER TABLE "INVENTORY"."PRODUCTS" ADD "PRICE" NUMBER(10,2)',
        "alter table inventory.products rename column name to title",
        'ALTER TABLE "INVENTORY"."PRODUCTS" DROP COLUMN "PRICE"',
        'CREATE TABLE "INVENTORY"."TAGS" ("ID" NUMBER(10) NOT NULL, "LABEL" VARCHAR2(20), '
        'CONSTRAINT "TAGS_PK" PRIMARY KEY ("ID"))']
    columns = [[c["name"] for c in h["tableChanges"][0]["table"]["columns"]] for h in history]
    assert columns == [["ID", "NAME"], ["ID", "NAME", "PRICE"], ["ID", "TITLE", "PRICE"], ["ID", "TITLE"],
                       ["ID", "LABEL"]]

    changes = read_topic(root, "ora")  # include.schema.changes: the same five, keyed by database
    assert [orjson.loads(r["key"]) for r in changes] == [{"databaseName": "ORCLPDB1"}] * 5
    values = [orjson.loads(r["value"]) for r in changes]
    assert [v["ddl"] for v in values] == [h["ddl"] for h in history]
    assert [(v["source"]["snapshot"], v["source"]["scn"]) for v in values] == [
        ("true", "1000"), ("false", "1020"), ("false", "1040"), ("false", "1060"), ("false", "1080")]


def test_without_schema_change_events_only_the_history_is_written(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(995, 1100), options={"include.schema.changes": False})
    assert read_topic(root, "ora") == []
    assert len(read_table(history_path(root, SOURCE))) == 5
    assert events(root, "PRODUCTS") == EXPECTED_PRODUCTS


def test_a_restart_decodes_with_the_recorded_columns_not_the_current_dictionary(tmp_path: Path) -> None:
    """The first run stops after the rename (SCN 1045); when the second starts, the dictionary has
    the column PRICE dropped already, but the insert at SCN 1051 still carries it."""
    root = str(tmp_path / "lake")
    capture_once(root, database(995, 1045))
    assert len(events(root, "PRODUCTS")) == 5
    capture_once(root, database(1100, 1100))
    assert events(root, "PRODUCTS") == EXPECTED_PRODUCTS
    assert events(root, "TAGS") == [("c", {"ID": 1, "LABEL": "red"})]


def test_an_unreadable_ddl_stops_the_capture_naming_it(tmp_path: Path) -> None:
    db = database(995, 1100)
    for row in db.contents:
        if row["SCN"] == 1020:
            row["SQL_REDO"] = 'ALTER TABLE "INVENTORY"."PRODUCTS" ADD "PRICE" NUMBER(10,'
    with pytest.raises(OracleStreamError, match=r"DDL at SCN 1020 .* to INVENTORY\.PRODUCTS: unexpected end .*"
                                                r"schema\.history\.internal\.skip\.unparseable\.ddl"):
        capture_once(str(tmp_path / "a"), db)
    assert ("c", {"ID": 4, "NAME": "fig", "PRICE": decimal("2.50")}) not in events(str(tmp_path / "a"), "PRODUCTS")


SILVER = ("pipeline: ora_test\nlakehouse: {root: ROOT}\n"
          "sources:\n  - {name: ora, connector: oracle, connection: {host: fake, user: u, database: ORCLPDB1}}\n"
          "silver:\n  - {table: products, source: ora.INVENTORY.PRODUCTS}\n")


@SAIL_ONLY
@pytest.mark.spark
def test_sail_silver_follows_the_schema_changes(tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(995, 1100))
    cfg = parse_pipeline(SILVER.replace("ROOT", root), env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    rows = DeltaTable(f"{root}/silver/products").to_pyarrow_table().to_pylist()
    got = sorted((r["ID"], r["TITLE"], r["PRICE"]) for r in rows)
    assert got == [(1, "apple", Decimal("1.25")), (2, "pear!", None), (3, "plum", None),
                   (4, "fig", Decimal("2.50")), (5, "kiwi", Decimal("3.00")), (6, "lime", None)]
    assert "NAME" not in rows[0]


def test_sigkill_amid_the_schema_changes_then_restart_is_exactly_once(tmp_path: Path) -> None:
    """A capture killed after some of the DDL, restarted (the dictionary final by then): each
    event and each history record once."""
    root = str(tmp_path / "lake")
    slow = database(995, 1100)
    slow.window_delay_s = 0.15  # 21 windows of a slow database: the child is mid-stream for seconds
    fixture = tmp_path / "db.pickle"
    save_database(slow, fixture, {("INVENTORY", "PRODUCTS", 1000): slow.rows_as_of("INVENTORY", "PRODUCTS", 1000)})
    repo = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-m", "tests.support.oracle_capture", str(fixture), root, "1"],
                             cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if len(read_table(history_path(root, SOURCE))) >= 2:  # past the first ALTER: kill it
                break
            time.sleep(0.02)
        assert child.poll() is None, f"the capture ended before it was killed: {child.communicate()}"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    killed = events(root, "PRODUCTS")
    assert killed == EXPECTED_PRODUCTS[:len(killed)] and len(killed) < len(EXPECTED_PRODUCTS)
    capture_once(root, database(1100, 1100))
    assert events(root, "PRODUCTS") == EXPECTED_PRODUCTS
    assert events(root, "TAGS") == [("c", {"ID": 1, "LABEL": "red"})]
    history = [orjson.loads(r["value"])["ddl"] for r in read_table(history_path(root, SOURCE))]
    assert len(history) == 5 and len(set(history)) == 5
    assert len(read_topic(root, "ora")) == 5


def test_a_ddl_between_reading_the_dictionary_and_the_snapshot_scn_is_not_missed(tmp_path: Path) -> None:
    """The session reads the dictionary at SCN 1015; the snapshot's first SCN is 1025, after the
    column PRICE was added (1020, below the snapshot: never mined). The snapshot starts again
    with the dictionary's columns, at SCN 1035."""
    root = str(tmp_path / "lake")
    db = database(1015, 1100)
    db.scn_step = 10
    capture_once(root, db)
    assert events(root, "PRODUCTS") == [
        ("r", {"ID": 1, "NAME": "apple", "PRICE": decimal("1.25")}), ("r", {"ID": 2, "NAME": "pear", "PRICE": None}),
        ("r", {"ID": 3, "NAME": "plum", "PRICE": None}), ("r", {"ID": 4, "NAME": "fig", "PRICE": decimal("2.50")}),
        *EXPECTED_PRODUCTS[5:]]
