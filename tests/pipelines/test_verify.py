"""``cdc-lakehouse verify`` against real servers: capture and silver (Sail) run in subprocesses
while a writer changes the source; verify must find silver equal (exit 0). Then silver is broken
on purpose with delta-rs (a row deleted, a value changed, a row added) and verify must exit 1
naming exactly those keys. The oracle is the list of keys the test broke, not the code under test.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pymysql
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.support.capture_process import CaptureProcess
from tests.support.mariadb_pipeline import mariadb_pipeline_text
from tests.support.pipeline_yaml import pipeline_text
from tests.support.silver_processes import ROOT, SilverProcess

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PG_TABLE = """CREATE TABLE items (
    id int PRIMARY KEY, name text, amount numeric(12,2), big bigint, small smallint, ok boolean,
    born date, seen timestamp, at timestamptz, raw bytea, doc jsonb, u uuid, f8 float8, f4 real,
    tags text[], loose numeric, secret text)"""
PG_ROW = ("INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
BROKEN_ID_EXTRA = 999_999


def pg_values(rng: random.Random, i: int) -> tuple[Any, ...]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.1 else value
    import datetime as dt
    import uuid
    base = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    return (i, maybe(rng.choice(["plain", "ünïcødé 😀", "comma,colon:", "", "-", "3:abc"]) + str(rng.randint(0, 99))),
            maybe(f"{rng.randint(-10**9, 10**9) / 100:.2f}"), maybe(rng.randint(-2**62, 2**62)),
            maybe(rng.randint(-30000, 30000)), maybe(rng.random() < 0.5),
            maybe(dt.date(1990, 1, 1) + dt.timedelta(days=rng.randint(0, 15000))),
            maybe((base + dt.timedelta(microseconds=rng.randint(0, 10**14))).replace(tzinfo=None)),
            maybe(base + dt.timedelta(microseconds=rng.randint(-10**14, 10**14))),
            maybe(rng.randbytes(rng.randint(0, 12))), maybe(json.dumps({"k": rng.randint(0, 9), "a": [1, "x"]})),
            maybe(str(uuid.UUID(int=rng.getrandbits(128)))), maybe(rng.uniform(-1e6, 1e6)),
            maybe(rng.uniform(-1e3, 1e3)), maybe(["a", str(i)]),
            maybe(rng.choice([f"{rng.random():.7f}", f"-{rng.randint(0, 10**30)}.{rng.randint(0, 99):02d}", "0.00",
                              "-0.5", "12345678901234567890123456789012345678901234.5", "7"])), f"secret {i}")


class Writer:
    """Changes the source in its own thread, one transaction per step, for at most ``seconds``:
    updates of ids 50.., inserts of new ids, deletes of ids it inserted; never ids below 50."""

    def __init__(self, step: Callable[[random.Random, int], None], seconds: float = 20) -> None:
        self.step, self.steps, self.seconds = step, 0, seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        rng = random.Random(7)
        until = time.monotonic() + self.seconds
        try:
            while not self._stop.is_set() and time.monotonic() < until:
                self.step(rng, self.steps)
                self.steps += 1
                time.sleep(0.01)
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def wait_steps(self, n: int, timeout: float = 60) -> None:
        """Wait (bounded) until ``n`` steps are committed: the source is changing under the test."""
        deadline = time.monotonic() + timeout
        while self.steps < n:
            assert self.error is None, self.error
            assert time.monotonic() < deadline and self._thread.is_alive(), f"{self.steps} steps in {timeout}s"
            time.sleep(0.01)

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        assert self.error is None, self.error


def verify(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", "verify", "-c", str(config), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=400)


def verify_json(config: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = verify(config, "--json", *args)
    assert "Traceback" not in done.stderr, done.stderr
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"not JSON:\n{done.stdout}\n{done.stderr}") from None


def differences(result: dict[str, Any]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    return {(t["table"], d["key"], d["kind"], tuple(d["columns"])) for t in result["tables"]
            for d in t["differences"]}


def break_silver(location: str) -> None:
    """Delete id 5, change id 7's name, add an extra row (a copy of id 9 as 999999) and a second
    row of id 11."""
    table = DeltaTable(location)
    table.delete("id = 5")
    table.update(updates={"name": "'broken on purpose'"}, predicate="id = 7")
    rows = table.to_pyarrow_table()
    rows = rows.filter(pc.equal(rows.column("id"), 9))
    assert rows.num_rows == 1
    ids = pa.array([BROKEN_ID_EXTRA], rows.schema.field("id").type)
    extra = rows.set_column(rows.column_names.index("id"), rows.schema.field("id"), ids)
    write_deltalake(location, extra, mode="append")
    rows = table.to_pyarrow_table()
    write_deltalake(location, rows.filter(pc.equal(rows.column("id"), 11)), mode="append")


EXPECTED_BROKEN = {("items", "id=5", "missing", ()), ("items", "id=7", "different", ("name",)),
                   ("items", f"id={BROKEN_ID_EXTRA}", "extra", ()), ("items", "id=11", "duplicate", ())}


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Callable[[Path], tuple[CaptureProcess, SilverProcess]]]:
    """Starts capture and silver (looping, on Sail) for a pipeline file; stops them after the test."""
    started: list[tuple[CaptureProcess, SilverProcess]] = []

    def start(config: Path) -> tuple[CaptureProcess, SilverProcess]:
        capture = CaptureProcess(config, tmp_path).start_planned()
        silver = SilverProcess(tmp_path).start_cli(config)
        started.append((capture, silver))
        return capture, silver

    yield start
    for capture, silver in started:
        if capture.running:
            capture.kill()
        if silver.running:
            stop_silver(silver)


def stop_silver(silver: SilverProcess) -> None:
    """SIGKILL the silver process group (driver and engine), which must still be running."""
    assert silver.proc is not None and silver.proc.poll() is None, silver.output()
    os.killpg(silver.proc.pid, signal.SIGKILL)
    silver.proc.wait(30)


SILVER_OPTIONS = "silver_options: {interval_seconds: 1}\nengine: {kind: sail}\n"


def silver_yaml(topic: str) -> str:
    return f"silver:\n  - {{table: items, source: {topic}}}\n" + SILVER_OPTIONS


PG_SILVER_YAML = ("silver:\n  - {table: items, source: pg.public.items}\n"
                  "  - {table: items_hist, source: pg.public.items, history: scd2, rename: {name: title},"
                  " exclude_columns: [big]}\n"
                  "  - {table: items_soft, source: pg.public.items, deletes: soft, casts: {small: bigint}}\n"
                  + SILVER_OPTIONS)


@pytest.mark.postgres
def test_postgres_silver_equal_under_a_writer_then_broken_on_purpose(pg_db: str, tmp_path: Path, running: Any) -> None:
    rng = random.Random(11)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(PG_TABLE)
        with conn.cursor() as cur:
            cur.executemany(PG_ROW, [pg_values(rng, i) for i in range(1, 301)])
    config = tmp_path / "pipeline.yaml"
    root = str(tmp_path / "lake")
    mask = {"column.mask.with.5.chars": "public.items.secret"}
    config.write_text(pipeline_text(root, pg_db, capture={"commit_interval_ms": 200}, **mask) + PG_SILVER_YAML)
    _capture, silver = running(config)

    def step(rng: random.Random, n: int) -> None:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            kind = rng.random()
            if kind < 0.5:
                conn.execute("UPDATE items SET name = %s, amount = %s WHERE id = %s",
                             (f"w{n}", f"{rng.randint(-999, 999)}.5", rng.randint(50, 300)))
            elif kind < 0.8:
                conn.execute(PG_ROW, pg_values(rng, 10_000 + n))
            else:
                conn.execute("DELETE FROM items WHERE id = (SELECT max(id) FROM items WHERE id >= 10000)")

    with Writer(step) as writer:
        writer.wait_steps(11)
        status, result = verify_json(config, "--timeout", "300")
    assert writer.steps > 10
    assert status == 0, json.dumps([t.get("differences") for t in result["tables"]])[:3000]
    tables = {t["table"]: t for t in result["tables"]}
    assert all(t["equal"] and t["source_rows"] > 0 and t["silver_rows"] > 0 for t in tables.values()), result
    every = {"id", "name", "amount", "big", "small", "ok", "born", "seen", "at", "raw", "doc", "u", "f8", "f4",
             "loose"}
    assert set(tables["items"]["compared_columns"]) == every
    assert set(tables["items_hist"]["compared_columns"]) == every - {"big"}  # excluded by the declaration
    assert set(tables["items_soft"]["compared_columns"]) == every - {"small"}
    not_compared = {t: {c["column"]: c["reason"] for c in tables[t]["not_compared"]} for t in tables}
    assert set(not_compared["items"]) == set(not_compared["items_hist"]) == {"tags", "secret"}
    assert not_compared["items"]["secret"] == "masked by the source option column.mask.with.5.chars"
    assert set(not_compared["items_soft"]) == {"tags", "secret", "small"}
    assert not_compared["items_soft"]["small"] == "cast to bigint by the declaration"

    status, result = verify_json(config, "--timeout", "300")  # the writer has stopped: silver catches up
    assert status == 0, json.dumps([t.get("differences") for t in result["tables"]])[:3000]
    for table in result["tables"]:
        assert table["source_rows"] == table["silver_rows"] and table["silver_rows_changed_after_read_point"] == 0
    stop_silver(silver)
    break_silver(f"{root}/silver/items")
    status, result = verify_json(config, "--timeout", "120")
    assert status == 1, result
    assert differences(result) == EXPECTED_BROKEN
    assert [t["equal"] for t in result["tables"]] == [False, True, True]

    done = verify(config, "--timeout", "120", "--table", "items")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("verify items: DIFFERENT at LSN "), done.stdout
    assert any(line.split() == ["id=5", "missing", "in", "silver"] for line in lines), done.stdout
    assert any(line.split() == ["id=7", "different", "values:", "name"] for line in lines), done.stdout
    assert any(line.split() == [f"id={BROKEN_ID_EXTRA}", "extra", "in", "silver"] for line in lines), done.stdout
    assert any(line.split() == ["id=11", "more", "than", "one", "current", "row", "in", "silver"]
               for line in lines), done.stdout
    assert "not compared: tags (no canonical text proven" in done.stdout


@pytest.mark.postgres
def test_postgres_verify_says_capture_is_not_running(pg_db: str, tmp_path: Path) -> None:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items SELECT g, 'n' || g FROM generate_series(1, 20) g")
    config = tmp_path / "pipeline.yaml"
    root = str(tmp_path / "lake")
    config.write_text(pipeline_text(root, pg_db, password="s3cret-pw") + silver_yaml("pg.public.items"))
    CaptureProcess(config, tmp_path).run_until_idle()
    ran = SilverProcess(tmp_path).start_cli(config, "--once")
    assert ran.proc is not None and ran.proc.wait(300) == 0, ran.output()
    status, result = verify_json(config)
    assert status == 0 and result["tables"][0]["source_rows"] == 20, result

    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("INSERT INTO items VALUES (21, 'late')")  # capture is not running: bronze stays behind
    done = verify(config, "--timeout", "2")
    assert done.returncode == 1
    assert "capture of source 'pg' has not reached the read point" in done.stdout
    assert "is 'cdc-lakehouse capture' (or 'run') running for it?" in done.stdout
    assert "s3cret-pw" not in done.stdout + done.stderr and "Traceback" not in done.stderr

    done = verify(config, "--table", "nope")
    assert done.returncode == 2 and "no silver table 'nope' in the pipeline" in done.stderr, done.stderr


@pytest.mark.mariadb
def test_mariadb_silver_equal_under_a_writer_then_broken_on_purpose(mariadb_db: dict[str, Any], tmp_path: Path,
                                                                    running: Any) -> None:
    import datetime as dt
    rng = random.Random(5)

    def values(i: int) -> tuple[Any, ...]:
        stamp = dt.datetime(2001, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**15))
        return (i, rng.choice(["x", "ünï 😀", "a,b:c", ""]) + str(i), f"{rng.randint(-10**8, 10**8) / 1000:.3f}",
                rng.randint(-100, 100), stamp, stamp if rng.random() < 0.5 else None, rng.randbytes(5),
                rng.random(), dt.date(2000, 1, 1) + dt.timedelta(days=rng.randint(0, 9000)))

    insert = "INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
    conn = pymysql.connect(**mariadb_db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(50), amount DECIMAL(14,3), t TINYINT, "
                    "dt6 DATETIME(6), ts TIMESTAMP(6) NULL, raw VARBINARY(20), d DOUBLE, born DATE)")
        cur.executemany(insert, [values(i) for i in range(1, 201)])
    conn.close()
    config = tmp_path / "pipeline.yaml"
    root = str(tmp_path / "lake")
    config.write_text(mariadb_pipeline_text(root, mariadb_db, server_id=9301, capture={"commit_interval_ms": 200})
                      + silver_yaml(f"my.{mariadb_db['database']}.items"))
    _capture, silver = running(config)
    writer_conn = pymysql.connect(**mariadb_db, autocommit=True)

    def step(rng: random.Random, n: int) -> None:
        with writer_conn.cursor() as cur:
            kind = rng.random()
            if kind < 0.5:
                cur.execute("UPDATE items SET name = %s WHERE id = %s", (f"w{n}", rng.randint(50, 200)))
            elif kind < 0.8:
                cur.execute(insert, values(10_000 + n))
            else:
                cur.execute("DELETE FROM items WHERE id >= 10000 ORDER BY id DESC LIMIT 1")

    try:
        with Writer(step) as writer:
            writer.wait_steps(11)
            status, result = verify_json(config, "--timeout", "300")
    finally:
        writer_conn.close()
    assert writer.steps > 10
    assert status == 0, json.dumps([t.get("differences") for t in result["tables"]])[:3000]
    (table,) = result["tables"]
    assert table["equal"] and table["source_rows"] > 0 and table["silver_rows"] > 0
    assert set(table["compared_columns"]) == {"id", "name", "amount", "t", "dt6", "ts", "raw", "born"}
    assert [c["column"] for c in table["not_compared"]] == ["d"]
    assert table["read_point"].startswith("binlog ")

    status, result = verify_json(config, "--timeout", "300")
    assert status == 0, json.dumps([t.get("differences") for t in result["tables"]])[:3000]
    for table in result["tables"]:
        assert table["source_rows"] == table["silver_rows"] and table["silver_rows_changed_after_read_point"] == 0
    stop_silver(silver)
    break_silver(f"{root}/silver/items")
    status, result = verify_json(config, "--timeout", "120")
    assert status == 1, result
    assert differences(result) == EXPECTED_BROKEN


def test_usage_and_configuration_errors_exit_2_before_connecting(tmp_path: Path) -> None:
    config = tmp_path / "pipeline.yaml"
    text = pipeline_text(str(tmp_path / "lake"), "host=127.0.0.1 port=1 dbname=nowhere user=u", password="s3cret-pw")
    config.write_text(text + "silver:\n  - {table: items, source: pg.public.items, catalog_table: main.sales.items}\n"
                      + SILVER_OPTIONS)
    done = verify(config, "--buckets", "0")
    assert done.returncode == 2 and "--buckets: must be at least 1" in done.stderr, done.stderr
    done = verify(config, "--json")  # port 1: nothing listens, and nothing needs to
    assert done.returncode == 2, done.stdout + done.stderr
    (table,) = json.loads(done.stdout)["tables"]
    assert "addressed only by its catalog name 'main.sales.items'" in table["error"]
    assert "s3cret-pw" not in done.stdout + done.stderr and "Traceback" not in done.stderr
