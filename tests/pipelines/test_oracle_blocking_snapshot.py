"""Oracle blocking snapshot end to end on the live fake (PostgreSQL tables, their decoding as
LogMiner rows): the signal is sent with the connector's ``send_signal`` (what ``cdc-lakehouse
signal`` runs) while a writer changes both tables; the capture is killed with SIGKILL in the middle
of the snapshot and restarted.

The oracle is PostgreSQL, never the connector: the snapshot's rows are the tables as of the pause's
SCN rebuilt from PostgreSQL's own decoding (each key once, with its value then); every streamed
change committed at or below that SCN is before the snapshot in bronze, every later one after it;
silver (Sail) equals the PostgreSQL tables."""

from __future__ import annotations

import json
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
from tests.support.oracle_capture import SOURCE, connector
from tests.support.oracle_live import SIGNAL, capture, create_signal_table, live_database
from tests.support.oracle_workload import OWNER, TABLES, OracleWorkload

pytestmark = [pytest.mark.integration]

ROWS = {"CUSTOMERS": 240, "ORDERS": 200}
OPTIONS = {"snapshot.mode": "no_data",
           "table.include.list": f"INVENTORY\\.CUSTOMERS,INVENTORY\\.ORDERS,INVENTORY\\.{SIGNAL}",
           "signal.data.collection": f"ORCLPDB1.INVENTORY.{SIGNAL}", "query.fetch.size": 20, "poll.interval.ms": 50}
SILVER = ("pipeline: ora_test\nlakehouse: {root: ROOT}\n"
          "sources:\n  - {name: ora, connector: oracle, connection: {host: fake, user: u, database: ORCLPDB1}}\n"
          "silver:\n  - {table: customers, source: ora.INVENTORY.CUSTOMERS}\n"
          "  - {table: orders, source: ora.INVENTORY.ORDERS}\n")


def _topic(table: str) -> str:
    return f"{SOURCE}.{OWNER}.{table}"


def _populate(dsn: str) -> None:
    with psycopg.connect(dsn) as conn, conn.transaction():
        for i in range(1, ROWS["CUSTOMERS"] + 1):
            conn.execute(f'INSERT INTO "{OWNER}"."CUSTOMERS" VALUES (%s, %s, %s, %s, %s)',
                         (i, f"c{i}", Decimal(i) / 4, datetime(2024, 5, 6, 7, 8, 9, i), None if i % 2 else "n"))
        for i in range(1, ROWS["ORDERS"] + 1):
            conn.execute(f'INSERT INTO "{OWNER}"."ORDERS" VALUES (%s, %s, %s, %s)', (i, i % 50, i % 7, "new"))


class _Writer(threading.Thread):
    """Updates, deletes and inserts rows of both tables, one transaction at a time, until stopped."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.count = 0

    def run(self) -> None:
        rnd = random.Random(5)
        try:
            with psycopg.connect(self.dsn, autocommit=True, options="-c synchronous_commit=on") as conn:
                n = 0
                while not self.stop.is_set() and n < 400:
                    n += 1
                    key = rnd.randint(1, 200)
                    if n % 9 == 4:
                        conn.execute(f'DELETE FROM "{OWNER}"."ORDERS" WHERE "ID" = %s', (key,))
                    elif n % 7 == 3:
                        conn.execute(f'DELETE FROM "{OWNER}"."CUSTOMERS" WHERE "ID" = %s', (key,))
                    elif n % 5 == 1:
                        conn.execute(f'INSERT INTO "{OWNER}"."CUSTOMERS" VALUES (%s, %s, NULL, NULL, NULL)',
                                     (10_000 + n, f"new {n}"))
                    elif n % 2:
                        conn.execute(f'UPDATE "{OWNER}"."ORDERS" SET "QTY" = %s, "STATUS" = %s WHERE "ID" = %s',
                                     (n, f"s{n}", key))
                    else:
                        conn.execute(f'UPDATE "{OWNER}"."CUSTOMERS" SET "NAME" = %s, "BALANCE" = %s WHERE "ID" = %s',
                                     (f"u{n}", Decimal(n), key))
                    self.count = n
                    time.sleep(0.02)
        except BaseException as exc:  # reported by the test
            self.error = exc


def _reads(root: str, table: str) -> list[dict[str, Any]]:
    return [r for r in read_topic(root, _topic(table)) if r["op"] == "r"]


def _value(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.replace(tzinfo=None)
    if isinstance(v, Decimal):
        return v.normalize()
    return v


def _silver(root: str, name: str, table: str) -> list[tuple[Any, ...]]:
    cols = [c.name for c in TABLES[table].columns]
    return sorted(tuple(_value(r[c]) for c in cols)
                  for r in DeltaTable(f"{root}/silver/{name}").to_pyarrow_table().to_pylist())


@SAIL_ONLY
@pytest.mark.spark
def test_blocking_snapshot_under_a_writer_killed_and_restarted(pg_db: str, tmp_path: Path, spark: Any) -> None:
    workload = OracleWorkload(pg_db)
    create_signal_table(pg_db)
    _populate(pg_db)
    root = str(tmp_path / "lake")
    repo = Path(__file__).resolve().parents[2]
    # each flashback fetch of 20 rows takes 0.1 s: the snapshot's second table is read for about a second
    child = subprocess.Popen([sys.executable, "-m", "tests.support.oracle_live", pg_db, root, json.dumps(OPTIONS),
                              "0.05", "0.1"], cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    writer = _Writer(pg_db)
    sender = live_database(OracleWorkload(pg_db, create=False))
    try:
        deadline = time.monotonic() + 60
        while not read_offsets(root, SOURCE) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # streaming has started
        writer.start()
        time.sleep(0.5)
        where = connector(sender, OPTIONS).send_signal("blk-1", "execute-snapshot", orjson.dumps(
            {"data-collections": ["ORCLPDB1.INVENTORY.CUSTOMERS", "ORCLPDB1.INVENTORY.ORDERS"],
             "type": "blocking"}).decode())
        assert where == f"signal table ORCLPDB1.INVENTORY.{SIGNAL}"
        while child.poll() is None and time.monotonic() < deadline and not _reads(root, "CUSTOMERS"):
            time.sleep(0.02)
        assert child.poll() is None, f"the capture ended before it was killed: {child.communicate()}"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
        assert sender.live is not None
        sender.live.close()
    read_before = {t: len(_reads(root, t)) for t in ROWS}
    assert read_before["CUSTOMERS"] > 0 and read_before["ORDERS"] == 0, (
        f"the kill did not land in the snapshot ({read_before}): {child.communicate()[1].decode()[-5000:]}")

    capture(root, live_database(OracleWorkload(pg_db, create=False)), OPTIONS, until_idle=True)  # reads it again
    time.sleep(0.5)
    writer.stop.set()
    writer.join(60)
    assert writer.error is None, writer.error
    capture(root, live_database(OracleWorkload(pg_db, create=False)), OPTIONS, until_idle=True)  # the writer's tail

    oracle = OracleWorkload(pg_db, create=False)
    oracle.transactions = oracle.decode(peek_upto=1 << 62)  # PostgreSQL's own decoding of every commit
    cols = {t: [c.name for c in TABLES[t].columns] for t in ROWS}
    pause: set[int] = set()
    for table in ROWS:
        rows = _reads(root, table)
        keys = Counter(orjson.loads(r["key"])["ID"] for r in rows)
        assert keys and max(keys.values()) == 1, [k for k, n in keys.items() if n > 1]  # each key read once
        scns = {int(orjson.loads(r["value"])["source"]["scn"]) for r in rows}
        assert len(scns) == 1, scns
        pause |= scns
        (scn,) = scns
        want = {row[0]: dict(zip(cols[table], row, strict=True)) for row in oracle.rows_as_of(OWNER, table, scn)}
        assert set(keys) == set(want), (sorted(set(keys) ^ set(want))[:10])  # the table as of the pause
        for r in rows:
            after = orjson.loads(r["value"])["after"]
            assert after["ID"] == (w := want[after["ID"]])["ID"] and after[cols[table][1]] == w[cols[table][1]], after
        # the pause is a cut of the stream: changes committed at or below its SCN before it, the others after
        first = min(r["seq"] for r in rows)
        streamed = [r for r in read_topic(root, _topic(table)) if r["op"] in ("c", "u", "d")]
        assert any(int(orjson.loads(r["value"])["source"]["commit_scn"]) > scn for r in streamed), "nothing after"
        assert any(int(orjson.loads(r["value"])["source"]["commit_scn"]) <= scn for r in streamed), "nothing before"
        misplaced = [r["seq"] for r in streamed
                     if (int(orjson.loads(r["value"])["source"]["commit_scn"]) <= scn) != (r["seq"] < first)]
        assert not misplaced, misplaced
    assert len(pause) == 1, pause  # both tables at one pause

    cfg = parse_pipeline(SILVER.replace("ROOT", root), env={})
    done = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                      sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert done.ok, [t.error for t in done.errors]
    for name, table in (("customers", "CUSTOMERS"), ("orders", "ORDERS")):
        want_rows = sorted(tuple(_value(v) for v in r) for r in workload.source_rows(table))
        got = _silver(root, name, table)
        assert got == want_rows, (name, sorted(set(got) - set(want_rows))[:5], sorted(set(want_rows) - set(got))[:5])
