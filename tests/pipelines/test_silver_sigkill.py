"""SIGKILL the silver Spark driver (Python and its JVM, one process group) at random points while
PostgreSQL keeps changing and a capture keeps committing to bronze; restart it each time; at
the end silver must equal the source table exactly: nothing lost, duplicated or resurrected.

Two drivers on classic Spark + Delta Lake:

* the Structured Streaming driver (``cdc-lakehouse silver --stream``, processing-time trigger
  every 0.5 s), drained at the end with an available-now run;
* the incremental runner (``cdc-lakehouse silver`` looping every 0.5 s), drained with ``--once``.

One silver table (``orders``: inserts, updates, deletes, key moves, rows created and deleted in
one transaction) keeps a cycle short: a restart costs a JVM start and a cold first apply.
Kills are of four kinds, in a seeded order: ``batch`` (a random 0-1 s after an apply started:
the streaming driver says so; the runner's passes start 0.5 s after it reports one), ``merge``
(the moment the MERGE has written its data files into the silver table and not committed them:
a new Parquet file in the table folder while the table's ``_delta_log`` has not grown; the kill
lands before the commit), ``commit`` (0-1.5 s after the
driver said a micro-batch or pass was applied: progress written, checkpoint commit and the
next batch's planning) and ``random`` (1-8 s after the start: start-up).
Every kill is classified afterwards from what the driver printed and left on disk, and the test
asserts that some landed inside an apply and some inside a MERGE, so the proof does not
depend on luck. The oracle is ``SELECT`` from the source (psycopg) against silver read with
delta-rs.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pipelines.exactly_once_support import Workload, create_schema
from tests.support.capture_process import CaptureProcess
from tests.support.silver_processes import SILVER_COLUMNS, SilverProcess, pipeline_with_silver, silver_problems

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.classic_spark, pytest.mark.slow]

SIZES = {"accounts": 100, "big": 50, "orders": 300}
TABLES = {"orders": SILVER_COLUMNS["orders"]}


@dataclass
class Lake:
    """What the kill loop watches in the lakehouse."""

    root: Path

    def data_files(self, table: str) -> set[str]:
        folder = self.root / "silver" / table
        return {p.name for p in folder.glob("*.parquet")} if folder.exists() else set()

    def commits(self, table: str) -> int:
        log = self.root / "silver" / table / "_delta_log"
        return len(list(log.glob("*.json"))) if log.exists() else 0


def _wait_for_apply(driver: SilverProcess, mark: str, timeout: float) -> bool:
    """Until the driver prints ``mark`` once more: the line it prints as an apply starts (the streaming
    driver), or as a pass ends (the runner, whose next pass starts 0.5 s later). Classic Spark stages
    an apply's rows in its cache, so there is no staging file to watch."""
    seen = driver.output().count(mark)
    return driver.wait_output(mark, timeout, count=seen + 1)


def _kill_in_merge(driver: SilverProcess, lake: Lake, timeout: float) -> str:
    """Kill when a MERGE has written data files it has not committed yet; returns the kill's class."""
    files = {t: lake.data_files(t) for t in TABLES}
    commits = {t: lake.commits(t) for t in TABLES}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and driver.running:
        for table in TABLES:
            now = lake.commits(table)
            if now != commits[table]:  # a commit landed: its files are no longer the ones to catch
                files[table], commits[table] = lake.data_files(table), now
            elif lake.data_files(table) - files[table]:
                driver.kill()
                return "merge" if lake.commits(table) == commits[table] else "after-merge-commit"
        time.sleep(0.005)
    driver.kill()
    return "no-merge-seen"


def _classify(driver: SilverProcess, started_mark: str, ended_mark: str) -> str:
    """``apply`` if the driver was killed inside an apply it had announced, else ``outside``."""
    out = driver.output()
    return "apply" if out.count(started_mark) > out.count(ended_mark) else "outside"


def _kill_loop(driver: SilverProcess, lake: Lake, start: Callable[[], object], *, kills: int, seed: int,
               started_mark: str, ended_mark: str, apply_mark: str) -> Counter[str]:
    rng = random.Random(seed)
    modes = (["merge", "batch", "commit", "merge", "random"] * kills)[:kills]
    rng.shuffle(modes)
    seen: Counter[str] = Counter()
    for mode in modes:
        start()
        if mode == "random":
            time.sleep(rng.uniform(1, 8))
            status = driver.kill()
            seen[f"random/{_classify(driver, started_mark, ended_mark)}"] += 1
        elif mode == "batch":
            assert _wait_for_apply(driver, apply_mark, 90), driver.tail()
            time.sleep(rng.uniform(0, 1))
            status = driver.kill()
            seen[f"batch/{_classify(driver, started_mark, ended_mark)}"] += 1
        elif mode == "commit":
            assert driver.wait_output(ended_mark, 120), driver.tail()
            time.sleep(rng.uniform(0, 1.5))
            status = driver.kill()
            seen[f"commit/{_classify(driver, started_mark, ended_mark)}"] += 1
        else:
            seen[f"merge/{_kill_in_merge(driver, lake, 90)}"] += 1
            status = driver.proc.returncode if driver.proc else None
        assert status == -9 or status is None, f"the driver ended by itself ({status}):\n{driver.tail()}"
    return seen


def _setup(pg_db: str, tmp_path: Path, slot: str) -> tuple[Path, Path, CaptureProcess, Workload]:
    root = tmp_path / "lake"
    create_schema(pg_db, **SIZES)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(str(root), pg_db, slot=slot, silver_interval_s=0.5, tables=list(TABLES),
                                           interval_ms=1000))
    capture = CaptureProcess(config, tmp_path)
    capture.run_until_idle()  # the initial snapshot: streams start once it is complete
    capture.start()
    work = Workload(pg_db, seed=20261127, sizes=SIZES, pause_s=0.05).start()
    return root, config, capture, work


def _drain(capture: CaptureProcess, work: Workload) -> None:
    work.stop()
    capture.kill()
    capture.run_until_idle()
    assert work.committed > 100, (work.committed, work.failed)


def test_streaming_driver_killed_at_random_points_converges_to_the_source(pg_db, tmp_path):
    root, config, capture, work = _setup(pg_db, tmp_path, "kill_stream")
    driver = SilverProcess(tmp_path, name="stream")
    lake = Lake(root)
    try:
        seen = _kill_loop(driver, lake, lambda: driver.start_cli(
            config, "--stream", "--trigger", "processing-time", "--interval", "0.5"),
            kills=6, seed=1, started_mark=" applying", ended_mark=" applied:", apply_mark=" applying")
    finally:
        driver.kill()
        _drain(capture, work)
    print("kills:", dict(seen))
    assert sum(seen.values()) >= 6
    assert seen["batch/apply"] + seen["merge/merge"] >= 2, seen
    assert seen["merge/merge"] >= 1, seen
    driver.start_cli(config, "--stream", "--trigger", "available-now")
    assert driver.wait(300) == 0, driver.tail()
    assert silver_problems(str(root), pg_db, TABLES) == [], driver.tail()


def test_incremental_runner_killed_at_random_points_converges_to_the_source(pg_db, tmp_path):
    root, config, capture, work = _setup(pg_db, tmp_path, "kill_runner")
    driver = SilverProcess(tmp_path, name="runner")
    lake = Lake(root)
    try:
        seen = _kill_loop(driver, lake, lambda: driver.start_cli(config), kills=5, seed=2,
                          started_mark="\x00never", ended_mark="silver orders: ", apply_mark="silver orders: ")
    finally:
        driver.kill()
        _drain(capture, work)
    print("kills:", dict(seen))
    assert seen["merge/merge"] >= 1, seen
    driver.start_cli(config, "--once")
    assert driver.wait(300) == 0, driver.tail()
    assert silver_problems(str(root), pg_db, TABLES) == [], driver.tail()
