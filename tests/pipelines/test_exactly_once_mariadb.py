"""Exactly-once into bronze for MariaDB when the capture process is SIGKILLed or the server restarts.

Every test ends with `tests.support.mariadb_checks.check_exactly_once`: per table, bronze's
``seq`` is 1..N, no streamed event is stored twice, the snapshot rows come from one completed
snapshot only, replaying bronze gives ``SELECT *`` of the source, the streamed events equal (in
order) what an independent binlog reader derives from the binlog after the snapshot position;
the schema change topic and the private schema history hold each DDL record once (the
snapshot's from the completed snapshot only), and the history replays to the tables' current
structure.

1. Random SIGKILLs of a CLI capture: three during a 150k-row snapshot, fourteen while a
   background workload streams (multi-row inserts, updates, deletes, key changes, multi-table
   transactions, a 20k-row ``INSERT ... SELECT`` committed to bronze in many batches, two
   ``ADD COLUMN`` followed by rows using them).
1b. Four SIGKILLs of a CLI capture while a writer commits transactions into small tables (the
   cheap pass of 1, run in every suite), and a check that no transaction is torn (per GTID).
2. A SIGKILL at every bronze commit and source acknowledgement of a small workload (a traced
   child capture kills itself there), then a normal restart; the snapshot's many batches repeat
   a few steps, so one snapshot point per kind of step is killed.
3. The server restarts (clean and SIGKILL) under a running capture, which must retry by itself.
"""

from __future__ import annotations

import functools
import multiprocessing
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.local_mariadb import LocalMariaDB
from tests.support.bronze_rows import holds_id, snapshot_completed
from tests.support.capture_process import (
    CaptureProcess,
    KillPoint,
    clean_run_points,
    kill_after,
    kill_at_each,
    kill_mid_snapshot,
    run_killed_child,
    trace_plan,
    wait_until,
)
from tests.support.mariadb_checks import check_exactly_once, torn_transactions
from tests.support.mariadb_pipeline import SOURCE, mariadb_pipeline_text
from tests.support.mariadb_workload import TABLES, Workload, apply_transactions, connect, create_schema

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]

SEED = 20_261_122


def _topic(args: dict[str, Any], table: str) -> str:
    return f"{SOURCE}.{args['database']}.{table}"


# -- 1. SIGKILL at random moments while a workload writes ------------------------------------------


@pytest.mark.slow
def test_random_sigkills_during_snapshot_and_streaming_leave_bronze_exactly_once(mariadb_db, tmp_path):
    root = str(tmp_path / "lake")
    sizes = {"accounts": 300, "big": 150_000, "orders": 300}
    create_schema(mariadb_db, **sizes, pad=200)
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(root, mariadb_db, server_id=5601,
                                            capture={"commit_interval_ms": 50, "commit_max_records": 500},
                                            **{"snapshot.fetch.size": "2000"}))  # many snapshot commits
    rng = random.Random(SEED)
    capture = CaptureProcess(config, tmp_path)
    workload = Workload(mariadb_db, SEED, sizes, large_rows=20_000).start()
    kills = 0
    try:
        for delay in (None, rng.uniform(0.0, 1.0), None):
            kill_mid_snapshot(capture, root, delay, source=SOURCE, big_topic=_topic(mariadb_db, "big"), timeout=60,
                              interval=0.05)
            assert not snapshot_completed(root, SOURCE), \
                "the snapshot completed before the kill: make the big table bigger"
            kills += 1
        capture.start()
        assert wait_until(lambda: capture.running and snapshot_completed(root, SOURCE), 120, 0.2), capture.tail()
        for i in range(14):
            if i == 2:
                workload.request_large()
            if i in (5, 9):
                workload.request_ddl()
            kill_after(capture, rng.uniform(0.0, 1.2))
            kills += 1
    finally:
        workload.stop()
        if capture.proc is not None:
            capture.kill()
    assert workload.committed > 300 and workload.ddl_done == 2 and workload.failed == 0, workload
    final = capture.run_until_idle()
    assert "0 snapshot rows" in final.stdout.read_text(), final.tail()
    problems = check_exactly_once(root, mariadb_db, source=SOURCE, tables=TABLES)
    assert not problems, f"after {kills} SIGKILLs (3 mid-snapshot):\n" + "\n".join(problems)


# -- 1b. a few SIGKILLs while a writer commits (cheap: small tables) --------------------------------

WRITER_SIZES = {"accounts": 40, "big": 80, "orders": 40}


def test_sigkills_while_a_writer_commits_leave_bronze_exactly_once(mariadb_db, tmp_path):
    """The capture is SIGKILLed four times and restarted while a writer keeps committing
    transactions (multi-row inserts, updates, deletes, key changes, multi-table ones, and one of
    300 rows, larger than a bronze batch of 20 records): bronze holds every committed change once,
    in commit order, and no transaction in part (`torn_transactions`: per GTID, against the
    ``mariadb-binlog`` oracle)."""
    root = str(tmp_path / "lake")
    create_schema(mariadb_db, **WRITER_SIZES)
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(root, mariadb_db, server_id=5603,
                                            capture={"commit_interval_ms": 50, "commit_max_records": 20}))
    rng = random.Random(SEED + 1)
    capture = CaptureProcess(config, tmp_path)
    capture.run_until_idle(60)  # the snapshot; the writer then runs through every kill and restart
    workload = Workload(mariadb_db, SEED, WRITER_SIZES, pause_s=0.02, large_rows=150, large_at_steps=(15,)).start()
    while_down = 0
    try:
        for _ in range(4):
            kill_after(capture, rng.uniform(0.2, 1.2))
            before = workload.committed
            time.sleep(0.3)  # no capture running: the writer's commits wait in the binlog
            while_down += workload.committed - before
    finally:
        workload.stop()
        if capture.proc is not None:
            capture.kill()
    assert workload.committed > 100 and workload.failed == 0 and while_down > 0, (workload, while_down)
    capture.run_until_idle(60)
    problems = check_exactly_once(root, mariadb_db, source=SOURCE, tables=TABLES)
    problems += torn_transactions(root, mariadb_db, source=SOURCE, tables=TABLES)
    assert not problems, f"after 4 SIGKILLs, {workload.committed} transactions:\n" + "\n".join(problems)


# -- 2. SIGKILL at every protocol point of a small workload ----------------------------------------

TARGETED_SIZES = {"accounts": 3, "big": 6, "orders": 2}
TARGETED_WORKLOAD: tuple[tuple[str, ...], ...] = (
    ("INSERT INTO orders (id, account_id, qty, status) VALUES (10, 1, 1, 'a'), (11, 2, 2, 'b')",
     "UPDATE accounts SET balance = 7 WHERE id = 1"),
    ("UPDATE big SET name = 'renamed' WHERE id = 2", "DELETE FROM big WHERE id = 3"),
    ("UPDATE accounts SET id = 102 WHERE id = 2",),
    ("INSERT INTO orders (id, account_id, qty, status) SELECT seq, 3, seq, 'bulk' FROM seq_100_to_799",),
    ("ALTER TABLE orders ADD COLUMN extra INT",),
    ("INSERT INTO orders VALUES (20, 1, 1, 'x', 5)", "UPDATE orders SET qty = 2, extra = 6 WHERE id = 20",
     "DELETE FROM orders WHERE id = 20"),
    ("UPDATE orders SET extra = id WHERE id >= 100", "UPDATE big SET id = 104 WHERE id = 4"),
    ("DELETE FROM orders WHERE id = 1", "UPDATE big SET grp = 7 WHERE id = 5",
     "INSERT INTO accounts VALUES (4, 1, 'z')"),
)
"""One transaction per item: multi-table, key changes, DDL then rows using the new column, c/u/d
of one row, and two transactions of 700 rows (several row events each): the stream hands rows
over in runs of up to 512, so bronze commits (``commit_max_records: 4``) fall inside them."""

ACKNOWLEDGED = "offsets acknowledged to the session, a no-op for MariaDB, before the next batch"


class KillHarness:
    """Runs the targeted workload in fresh databases and traced child captures."""

    def __init__(self, server: LocalMariaDB, workdir: Path) -> None:
        self.server, self.workdir, self.runs = server, workdir, 0
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload(["tests.support.capture_process", "pipelines.capture",
                                         "cdc_sources.mysql.session", "pandas"])

    def run(self, kind: str = "", n: int = 0) -> tuple[int | None, list[tuple[str, int, str]], list[str]]:
        """One scenario: a child capture killed at the ``n``-th ``kind`` point (none: not killed),
        then a normal run; returns the child's exit code, its trace and the problems found."""
        self.runs += 1
        args = self._fresh_db()
        try:
            root = str(self.workdir / str(args["database"]))
            text = mariadb_pipeline_text(root, args, server_id=5701,
                                         capture={"commit_interval_ms": 600_000, "commit_max_records": 4,
                                                  "commit_max_bytes": 1024})
            workload = functools.partial(apply_transactions, args, TARGETED_WORKLOAD)
            plan = trace_plan(str(self.workdir / f"{args['database']}.trace"), kind, n,
                              ack="cdc_sources.mysql.session:MySqlCaptureSession.acknowledge",
                              stream="cdc_sources.mysql.session:MySqlCaptureSession.stream", before_stream=workload)
            code, trace = run_killed_child(self.ctx, text, plan, applied=functools.partial(self._applied, args),
                                           apply=workload)
            return code, trace, check_exactly_once(root, args, source=SOURCE, tables=TABLES)
        finally:
            self._drop(args)

    def _fresh_db(self) -> dict[str, Any]:
        name = f"eo_k{self.runs}"
        conn = connect(self.server.connect_args())
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS {name}")
                cur.execute(f"CREATE DATABASE {name}")
        finally:
            conn.close()
        args = self.server.connect_args(name)
        create_schema(args, **TARGETED_SIZES)
        return args

    @staticmethod
    def _applied(args: dict[str, Any]) -> bool:
        conn = connect(args)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM accounts WHERE id = 4")
                return cur.fetchone() is not None
        finally:
            conn.close()

    def _drop(self, args: dict[str, Any]) -> None:
        conn = connect(self.server.connect_args())
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS {args['database']}")
        finally:
            conn.close()


def _role(path: str) -> str:
    """What a bronze write wrote: ``offsets``, ``schemas``, ``history``, ``schema changes`` or ``data``."""
    if path.startswith("_cdc/"):
        return path.rsplit("/", 1)[-1]
    return "schema changes" if path == SOURCE else "data" if path else "nothing"


def _distinct(trace: list[tuple[str, int, str]], points: list[KillPoint]) -> list[KillPoint]:
    """One snapshot write point per (what was written, what is written next): the snapshot's many
    batches repeat the same few steps. Every streaming point is kept."""
    writes = [d for k, _, d in trace if k == "write"]
    seen: set[tuple[str, str]] = set()
    out = []
    for p in points:
        if p.phase == "snapshot" and p.kind == "write":
            signature = (_role(writes[p.n - 1]), _role(writes[p.n] if p.n < len(writes) else ""))
            if signature in seen:
                continue
            seen.add(signature)
        out.append(p)
    return out


@pytest.fixture(scope="module")
def harness(mariadb_server: LocalMariaDB,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KillHarness, list[KillPoint]]]:
    """The harness and the kill points of an uninterrupted run (which must itself be exactly once)."""
    h = KillHarness(mariadb_server, tmp_path_factory.mktemp("kills"))
    trace, points = clean_run_points(h.run, acknowledged=ACKNOWLEDGED)
    yield h, _distinct(trace, points)


@pytest.mark.slow
@pytest.mark.parametrize("phase, kind", [("snapshot", "write"), ("snapshot", "stage"), ("stream", "write"),
                                         ("stream", "stage"), ("stream", "ack")])
def test_sigkill_at_every_protocol_point_leaves_bronze_exactly_once(harness, phase, kind):
    h, points = harness
    kill_at_each(h.run, points, phase, kind)


# -- 3. the server restarts under a running capture -----------------------------------------------


def _marker_captured(root: str, args: dict[str, Any], marker: int, capture: CaptureProcess, context: str) -> None:
    """Commit a marker row and wait until bronze has it; the capture must stay up meanwhile."""
    conn = connect(args)
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO accounts VALUES (%s, 0, 'marker')", (marker,))
    finally:
        conn.close()

    def captured() -> bool:
        assert capture.running, f"the capture process died {context}:\n{capture.tail()}"
        return holds_id(root, _topic(args, "accounts"), marker)

    assert wait_until(captured, 90, 0.3), f"marker {marker} not in bronze {context}:\n{capture.tail()}"


@pytest.mark.slow
def test_capture_survives_server_restarts_exactly_once(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="cdc-eo-maria-"))
    server = LocalMariaDB(base / "data").start()
    try:
        _restart_scenario(server, tmp_path)
    finally:
        server.stop(kill=True)
        shutil.rmtree(base, ignore_errors=True)


def _restart_scenario(server: LocalMariaDB, tmp_path: Path) -> None:
    conn = connect(server.connect_args())
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE shop")
    conn.close()
    args, root = server.connect_args("shop"), str(tmp_path / "lake")
    sizes = {"accounts": 200, "big": 5_000, "orders": 200}
    create_schema(args, **sizes)
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(root, args, server_id=5801,
                                            capture={"commit_interval_ms": 50, "commit_max_records": 500}))
    capture = CaptureProcess(config, tmp_path).start()
    workload = Workload(args, SEED, sizes, large_rows=3_000).start()
    try:
        _marker_captured(root, args, -1, capture, "before any restart")
        for i, kill in enumerate((False, True, False, True), start=2):
            if i == 3:
                workload.request_large()
            time.sleep(1.0)
            server.restart(kill=kill)
            _marker_captured(root, args, -i, capture, f"after restart {i - 1} ({'SIGKILL' if kill else 'clean'})")
        workload.stop()
        _marker_captured(root, args, -100, capture, "after the workload stopped")
    finally:
        workload.stop()
        capture.kill()
    capture.run_until_idle()
    problems = check_exactly_once(root, args, source=SOURCE, tables=TABLES)
    assert problems == [], f"{workload.committed} transactions, {workload.failed} failed:\n" + "\n".join(problems)
    assert workload.failed > 0, "the workload never saw the server go away"
    retries = sum(capture.logs.joinpath(f"capture-{r}.err").read_text().count("retrying in")
                  for r in range(1, capture.runs + 1))
    assert retries >= 4, f"the capture retried {retries} times for 4 restarts"
