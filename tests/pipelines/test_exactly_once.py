"""Exactly-once into bronze when the capture process is SIGKILLed or the database restarts.

Every test ends with `check_exactly_once`: per table, bronze's ``seq`` is 1..N, no streamed
event is stored twice, the snapshot rows come from one completed snapshot only, replaying bronze
gives ``SELECT *`` of the source, the streamed events equal (in order) what an independent
``test_decoding`` slot saw committed after the snapshot point, and the capture slot's
``confirmed_flush_lsn`` is not ahead of bronze's last offset (a server without ``test_decoding``
fails the test).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from pipelines.local_postgres import LocalPostgres
from tests.pipelines.exactly_once_support import (
    ACK,
    GATE_OPTIONS,
    PREFIX,
    STREAM,
    CaptureProcess,
    SnapshotGate,
    Workload,
    apply_workload,
    check_exactly_once,
    create_oracle_slot,
    create_schema,
    offsets,
    oracle_commit_lsns,
    pipeline_yaml,
    slot_ahead,
    slot_confirmed,
    topic,
    torn_transactions,
    wait_until,
)
from tests.support.bronze_rows import holds_id, snapshot_completed
from tests.support.capture_process import (
    KillPoint,
    clean_run_points,
    kill_after,
    kill_at_each,
    kill_mid_snapshot,
    run_killed_child,
    trace_plan,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

SEED = 20_240_611

def _dbname(dsn: str) -> str:
    return dict(p.split("=", 1) for p in dsn.split())["dbname"]


# -- 1. SIGKILL at random moments while a workload writes ------------------------------------------


def _snapshot_completed(root: str, capture: CaptureProcess) -> bool:
    assert capture.running, f"capture ended:\n{capture.tail()}"
    return snapshot_completed(root, PREFIX)


def _discarded_rows(capture: CaptureProcess, runs: range) -> int:
    """Rows the runs reported removing as leftovers of interrupted snapshots."""
    total = 0
    for run in runs:
        for line in (capture.logs / f"capture-{run}.out").read_text().splitlines():
            if "rows of an interrupted snapshot" in line:
                total += int(line.split("removed ")[1].split()[0].replace(",", ""))
    return total


@pytest.mark.slow
def test_random_sigkills_during_snapshot_and_streaming_leave_bronze_exactly_once(pg_db, tmp_path):
    root, db = str(tmp_path / "lake"), _dbname(pg_db)
    slot, oracle = f"c_{db[-40:]}", f"o_{db[-40:]}"
    sizes = {"accounts": 500, "big": 50_000, "orders": 200}
    create_schema(pg_db, **sizes, pad=300)
    create_oracle_slot(pg_db, oracle)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=50, max_records=500, **GATE_OPTIONS))
    rng = random.Random(SEED)
    capture = CaptureProcess(config, tmp_path)
    gate = SnapshotGate(pg_db)
    workload = Workload(pg_db, SEED, sizes).start()
    kills, problems = 0, []
    marks: list = []
    try:
        for delay in (None, rng.uniform(0.0, 2.0), rng.uniform(0.0, 2.0), None):
            kill_mid_snapshot(capture, root, delay, source=PREFIX, big_topic=topic("big"), timeout=120, interval=0.1)
            kills += 1
        assert not offsets(root)[-1]["snapshot_completed"]
        gate.release()
        capture.start()
        assert wait_until(lambda: _snapshot_completed(root, capture), 300, 0.5), capture.tail()
        assert _discarded_rows(capture, range(2, capture.runs + 1)) > 0  # how many depends on timing
        workload.request_large()
        with psycopg.connect(pg_db, row_factory=dict_row, autocommit=True) as conn:
            for _ in range(22):
                kill_after(capture, rng.uniform(0.0, 1.2))
                kills += 1
                marks.append((slot_confirmed(conn, slot), offsets(root)))
    finally:
        workload.stop()
        gate.release()
        if capture.proc is not None:
            capture.kill()
    assert workload.committed > 500, workload
    final = capture.run_until_idle()
    assert "0 snapshot rows" in final.stdout.read_text(), final.tail()
    problems += check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    commits = oracle_commit_lsns(pg_db, oracle)
    for confirmed, rows in marks:
        problems += slot_ahead(confirmed, rows, slot, commits)
    assert not problems, f"after {kills} SIGKILLs (4 mid-snapshot)" + ":\n" + "\n".join(problems)


# -- 1b. a few SIGKILLs while a writer commits (cheap: small tables) --------------------------------

WRITER_SIZES = {"accounts": 40, "big": 80, "orders": 40}


def test_sigkills_while_a_writer_commits_leave_bronze_exactly_once(pg_db, tmp_path):
    """The capture is SIGKILLed four times and restarted while a writer keeps committing
    transactions (multi-row inserts, updates, deletes, key changes, multi-table ones, and one of
    300 rows, larger than a bronze batch of 20 records): bronze holds every committed change once,
    in commit order, and no transaction in part (`torn_transactions`: per transaction id, against
    the ``test_decoding`` oracle)."""
    root, db = str(tmp_path / "lake"), _dbname(pg_db)
    slot, oracle = f"c_{db[-40:]}", f"o_{db[-40:]}"
    create_schema(pg_db, **WRITER_SIZES)
    create_oracle_slot(pg_db, oracle)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=50, max_records=20))
    rng = random.Random(SEED + 1)
    capture = CaptureProcess(config, tmp_path)
    capture.run_until_idle(60)  # the snapshot; the writer then runs through every kill and restart
    workload = Workload(pg_db, SEED, WRITER_SIZES, pause_s=0.02, large_rows=150, large_at_steps=(15,)).start()
    while_down = 0
    try:
        for _ in range(4):
            kill_after(capture, rng.uniform(0.2, 1.2))
            before = workload.committed
            time.sleep(0.3)  # no capture running: the writer's commits wait in the slot
            while_down += workload.committed - before
    finally:
        workload.stop()
        if capture.proc is not None:
            capture.kill()
    assert workload.committed > 100 and workload.failed == 0 and while_down > 0, (workload, while_down)
    capture.run_until_idle(60)
    problems = check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    problems += torn_transactions(root, pg_db, oracle_slot=oracle)
    assert not problems, f"after 4 SIGKILLs, {workload.committed} transactions:\n" + "\n".join(problems)


# -- 2. SIGKILL at every protocol point of a small workload ----------------------------------------

TARGETED_SIZES = {"accounts": 3, "big": 6, "orders": 2}
TARGETED_WORKLOAD = (
    "INSERT INTO orders VALUES (10, 1, 1, 'a'), (11, 2, 2, 'b'); UPDATE accounts SET balance = 7 WHERE id = 1",
    "UPDATE big SET name = 'renamed' WHERE id = 2; DELETE FROM big WHERE id = 3",
    "UPDATE accounts SET id = 102 WHERE id = 2",
    "UPDATE big SET id = 104 WHERE id = 4",
    "INSERT INTO orders SELECT g, 3, g, 'bulk' FROM generate_series(100, 108) g",
    "INSERT INTO orders VALUES (20, 1, 1, 'x'); UPDATE orders SET qty = 2 WHERE id = 20; "
    "DELETE FROM orders WHERE id = 20",
    "DELETE FROM orders WHERE id = 1; UPDATE big SET grp = 7 WHERE id = 5; INSERT INTO accounts VALUES (4, 1, 'z')",
)
"""One transaction per item: multi-table, key changes (REPLICA IDENTITY FULL and DEFAULT), a
transaction larger than a batch (``commit_max_records: 4``; ``commit_max_bytes: 1024`` stages about
three records ahead of each commit), c/u/d of one row in one transaction."""


class KillHarness:
    """Runs the targeted workload in fresh databases (copies of a template) and child captures."""

    def __init__(self, server: LocalPostgres, workdir: Path) -> None:
        self.server, self.workdir, self.runs = server, workdir, 0
        self.template = f"eo_tmpl_{os.getpid()}"
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload(["tests.pipelines.exactly_once_support", "pipelines.capture", "pandas"])
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.template}"')
            conn.execute(f'CREATE DATABASE "{self.template}"')
        create_schema(server.dsn(self.template), **TARGETED_SIZES)

    def run(self, kind: str = "", n: int = 0) -> tuple[int | None, list[tuple[str, int, str]], list[str]]:
        """One scenario: a child capture killed at the ``n``-th ``kind`` point (none: not killed),
        then a normal run; returns the child's exit code, its trace and the problems found."""
        self.runs += 1
        db, dsn, root = self._fresh_db()
        oracle = create_oracle_slot(dsn, f"{db}_o")
        try:
            text = pipeline_yaml(root, dsn, slot=f"{db}_c", interval_ms=600_000, max_records=4, max_bytes=1024)
            workload = functools.partial(apply_workload, dsn, TARGETED_WORKLOAD)
            plan = trace_plan(str(self.workdir / f"{db}.trace"), kind, n, ack=ACK, stream=STREAM,
                              before_stream=workload)
            code, trace = run_killed_child(self.ctx, text, plan, applied=functools.partial(_applied, dsn),
                                           apply=workload)
            return code, trace, check_exactly_once(root, dsn, slot=f"{db}_c", oracle_slot=oracle)
        finally:
            _drop_database(self.server, db)

    def _fresh_db(self) -> tuple[str, str, str]:
        db = f"eo_k{os.getpid()}_{self.runs}"
        with psycopg.connect(self.server.dsn(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{db}" TEMPLATE "{self.template}"')
        return db, self.server.dsn(db), str(self.workdir / db)

    def close(self) -> None:
        _drop_database(self.server, self.template)


def _applied(dsn: str) -> bool:
    """Whether the targeted workload's last transaction is in the database."""
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT 1 FROM accounts WHERE id = 4").fetchone() is not None


def _drop_database(server: LocalPostgres, name: str) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        for (slot,) in conn.execute("SELECT slot_name FROM pg_replication_slots WHERE database = %s",
                                    (name,)).fetchall():
            conn.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                         "WHERE slot_name = %s AND active_pid IS NOT NULL", (slot,))
            wait_until(functools.partial(_slot_inactive, conn, slot), 10)
            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _slot_inactive(conn: psycopg.Connection[Any], slot: str) -> bool:
    row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    return row is None or row[0] is None


@pytest.fixture(scope="module")
def harness(pg_server: LocalPostgres,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KillHarness, list[KillPoint]]]:
    """The harness and the kill points of an uninterrupted run (which must itself be exactly once)."""
    h = KillHarness(pg_server, tmp_path_factory.mktemp("kills"))
    try:
        _, points = clean_run_points(h.run)
        yield h, points
    finally:
        h.close()


@pytest.mark.slow
@pytest.mark.parametrize("phase, kind", [
    pytest.param("snapshot", "write"),
    ("snapshot", "stage"),
    ("stream", "write"),
    ("stream", "stage"),
    ("stream", "ack"),
])
def test_sigkill_at_every_protocol_point_leaves_bronze_exactly_once(harness, phase, kind):
    h, points = harness
    kill_at_each(h.run, points, phase, kind)


# -- 3. the database restarts under a running capture ---------------------------------------------


@dataclass
class Supervisor:
    """Keeps one continuous capture running like a process supervisor would, noting every death."""

    capture: CaptureProcess
    events: list[str]

    def ensure_running(self, context: str) -> None:
        assert self.capture.proc is not None
        code = self.capture.proc.poll()
        if code is not None:
            last = (self.capture.stderr.read_text().strip().splitlines() or ["<no output>"])[-1]
            self.events.append(f"capture process exited with {code} {context}: {last}")
            self.capture.start()


def _marker_captured(root: str, dsn: str, marker: int, supervisor: Supervisor, context: str) -> None:
    """Commit a marker row and wait until bronze has it (restarting a dead capture meanwhile)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO accounts VALUES (%s, 0, 'marker')", (marker,))

    def captured() -> bool:
        supervisor.ensure_running(context)
        return holds_id(root, topic("accounts"), marker)

    assert wait_until(captured, 90, 0.5), f"marker {marker} not in bronze {context}:\n{supervisor.capture.tail()}"


def _restart_server(server: LocalPostgres, mode: str, events: list[str]) -> None:
    """``pg_ctl restart -m mode``; a shutdown still running after 20 s is noted and forced."""
    stopper = threading.Thread(target=server.stop, args=(mode,))
    stopper.start()
    if not wait_until(lambda: not (server.data_dir / "postmaster.pid").exists(), 20, 0.1):
        events.append(f"a '{mode}' shutdown did not finish within 20 s; forced an immediate one")
        server.stop("immediate")
    stopper.join(120)
    server.start()


@pytest.mark.slow
def test_capture_survives_database_restarts_exactly_once(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="cdc-eo-pg-"))
    os.chmod(base, 0o755)
    server = LocalPostgres(base / "data", settings={"synchronous_commit": "on"}).start()
    try:
        _restart_scenario(server, tmp_path)
    finally:
        server.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


def _restart_scenario(server: LocalPostgres, tmp_path: Path) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE shop")
    dsn, root = server.dsn("shop"), str(tmp_path / "lake")
    events: list[str] = []
    sizes: dict[str, Any] = {"accounts": 200, "big": 5_000, "orders": 200}
    create_schema(dsn, **sizes)
    oracle = create_oracle_slot(dsn, "oracle")
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, dsn, slot="capture", interval_ms=50, max_records=500))
    supervisor = Supervisor(CaptureProcess(config, tmp_path).start(), events)
    workload = Workload(dsn, SEED, sizes, large_rows=2_000, large_at_steps=(100,)).start()
    try:
        _marker_captured(root, dsn, -1, supervisor, "before any restart")
        for i, mode in enumerate(("immediate", "fast", "immediate", "fast"), start=2):
            time.sleep(1.5)
            _restart_server(server, mode, events)
            _marker_captured(root, dsn, -i, supervisor, f"after restart {i - 1} ({mode})")
        workload.stop()
        _marker_captured(root, dsn, -100, supervisor, "after the workload stopped")
    finally:
        workload.stop()
        supervisor.capture.kill()
    supervisor.capture.run_until_idle()
    problems = check_exactly_once(root, dsn, slot="capture", oracle_slot=oracle)
    assert problems == [], f"{workload.committed} transactions, {workload.failed} failed:\n" + "\n".join(problems)
    assert workload.failed > 0, "the workload never saw the server go away"
    if events:
        raise AssertionError("bronze is exactly once, but:\n" + "\n".join(events))


def test_the_oracle_fails_the_test_when_its_decoding_plugin_is_missing(pg_db):
    """A server without the oracle's plugin fails an exactly-once test; it never passes unchecked."""
    with pytest.raises(pytest.fail.Exception, match="needs PostgreSQL's no_such_decoder plugin"):
        create_oracle_slot(pg_db, "oracle_missing", plugin="no_such_decoder")
