"""SQL Server end to end through the CDC emulator: a seeded workload captured into bronze by
``cdc-lakehouse capture`` (a real child process, SIGKILLed mid-stream and restarted), silver
built on Sail, equal to the source table; bronze holds each change exactly once.

The oracles are independent of the connector: the source table read with psycopg, and the
change-table rows read with psycopg (not through the gateway), turned into the expected
``(op, id)`` sequence by SQL Server's rules (2 -> c, 1 -> d, 3+4 -> u, or d + c when the key
changed)."""

from __future__ import annotations

import os
import random
import signal
import threading
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import duplicates, event_diff, read_topic, seq_problems, snapshot_completed
from tests.support.capture_process import wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text
from tests.support.sqlserver_emulator.processes import capture_log_tail, customer_rows, start_capture

pytestmark = [pytest.mark.integration]

SEED = 20_261_127
COLUMNS = ("id", "name", "score", "active", "seen")


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40) NOT NULL, score numeric(9, 2), "
                "active boolean, seen timestamp(3))")
    emu.enable_db()
    emu.enable_table("dbo", "customers")
    yield emu


class Workload:
    """Seeded transactions of inserts, updates, key changes and deletes on dbo.customers."""

    def __init__(self, dsn: str, seed: int) -> None:
        self.dsn = dsn
        self.rng = random.Random(seed)
        self.ids: set[int] = set()
        self.next_id = 1

    def transactions(self, n: int) -> None:
        with psycopg.connect(self.dsn) as conn:
            for _ in range(n):
                for _ in range(self.rng.randint(1, 4)):
                    self._change(conn)
                conn.commit()

    def _change(self, conn: psycopg.Connection[Any]) -> None:
        rng = self.rng
        kind = rng.random()
        if kind < 0.5 or len(self.ids) < 5:
            row_id, self.next_id = self.next_id, self.next_id + 1
            conn.execute("INSERT INTO dbo.customers VALUES (%s, %s, %s, %s, %s)",
                         (row_id, f"n{row_id}'{rng.randint(0, 99)}", Decimal(rng.randint(-99999, 99999)) / 100,
                          rng.choice([True, False, None]),
                          datetime(2020, 1, 1, rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
                                   rng.randint(0, 999) * 1000)))
            self.ids.add(row_id)
            return
        row_id = rng.choice(sorted(self.ids))
        if kind < 0.8:
            conn.execute("UPDATE dbo.customers SET name = %s, score = %s WHERE id = %s",
                         (f"u{rng.randint(0, 999)}", None if rng.random() < 0.2 else Decimal(rng.randint(0, 999)),
                          row_id))
        elif kind < 0.9:
            new_id, self.next_id = self.next_id, self.next_id + 1
            conn.execute("UPDATE dbo.customers SET id = %s WHERE id = %s", (new_id, row_id))
            self.ids.discard(row_id)
            self.ids.add(new_id)
        else:
            conn.execute("DELETE FROM dbo.customers WHERE id = %s", (row_id,))
            self.ids.discard(row_id)


def _expected_stream(dsn: str, after_lsn: str) -> list[tuple[str, int]]:
    """The events SQL Server's change rows stand for, after the snapshot's LSN (tombstones left out)."""
    after = bytes.fromhex(after_lsn.replace(":", ""))
    with psycopg.connect(dsn) as conn:
        rows = conn.execute('SELECT "__$operation", id FROM cdc."dbo_customers_CT" WHERE "__$start_lsn" > %s '
                            'ORDER BY "__$start_lsn", "__$seqval", "__$operation"', (after,)).fetchall()
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(rows):
        operation, row_id = rows[i]
        if operation == 2:
            out.append(("c", row_id))
        elif operation == 1:
            out.append(("d", row_id))
        else:
            new_id = rows[i + 1][1]
            out.extend([("u", row_id)] if new_id == row_id else [("d", row_id), ("c", new_id)])
            i += 1
        i += 1
    return out


@SAIL_ONLY
def test_workload_through_the_emulator_sigkill_and_restart_silver_equals_source(
        emulator: SqlServerEmulator, tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "lake")
    database = emulator.dsn.split("dbname=")[1].split()[0]
    topic = f"{SOURCE}.{database}.dbo.customers"
    text = sqlserver_pipeline_text(root, emulator.dsn, capture={"commit_interval_ms": 100},
                                   silver=[{"table": "customers", "source": topic}],
                                   **{"decimal.handling.mode": "string", "data.query.mode": "function"})
    config_path = tmp_path / "pipeline.yaml"
    config_path.write_text(text)
    logs = tmp_path / "logs"
    logs.mkdir()
    work = Workload(emulator.dsn, SEED)
    work.transactions(30)  # snapshot material
    snapshot_size = len(work.ids)
    agent = emulator.agent()
    agent.sync()

    with agent.running(interval=0.05):
        capture = start_capture(config_path, logs, 1, until_idle=False)
        writer = threading.Thread(target=work.transactions, args=(120,))
        try:
            assert wait_until(lambda: snapshot_completed(root, SOURCE), 120), capture_log_tail(logs, 1)
            writer.start()
            streamed_some = wait_until(lambda: any(r["op"] in ("c", "u", "d") for r in read_topic(root, topic)), 120)
            assert streamed_some, capture_log_tail(logs, 1)
            os.kill(capture.pid, signal.SIGKILL)
            assert capture.wait(30) == -9, capture_log_tail(logs, 1)
        finally:
            if capture.poll() is None:
                capture.kill()
            if writer.is_alive():
                writer.join()
    agent.sync()
    done = start_capture(config_path, logs, 2, until_idle=True)
    assert done.wait(300) == 0, capture_log_tail(logs, 2)

    rows = read_topic(root, topic)
    assert seq_problems(rows) == []
    snapshot = [r for r in rows if r["op"] == "r"]
    snapshot_lsn = orjson.loads(snapshot[0]["value"])["source"]["commit_lsn"]
    streamed = [r for r in rows if r["op"] in ("c", "u", "d")]
    assert len(snapshot) == snapshot_size
    assert duplicates("snapshot ids", [orjson.loads(r["key"])["id"] for r in snapshot]) == []
    actual = [(r["op"], orjson.loads(r["key"])["id"]) for r in streamed]
    assert event_diff(actual, _expected_stream(emulator.dsn, snapshot_lsn)) == []
    assert len(actual) > 100

    config = parse_pipeline(text, env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=config.silver, options=config.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    silver = [tuple(r) for r in spark.read.format("delta").load(f"{root}/silver/customers")
              .select(*COLUMNS).orderBy("id").collect()]
    expected = [(i, n, None if s is None else str(s), a, t) for i, n, s, a, t in customer_rows(emulator.dsn, COLUMNS)]
    assert silver == expected
