"""Capture into a lakehouse on Google Cloud Storage (the tests' own GCS server): exactly-once
under SIGKILL, during the snapshot and while streaming.

The service-account key and the server's URL reach the captures through the environment only
(the pipeline file names just ``gs://bucket/prefix``), as they would from a deployment's
secrets; the test reads bronze back the same way.
"""

from __future__ import annotations

import json
import random

import psycopg
import pytest
from psycopg.rows import dict_row

from pipelines.local_gcs import LocalGCS
from tests.pipelines.exactly_once_support import (
    PREFIX,
    CaptureProcess,
    Workload,
    check_exactly_once,
    create_oracle_slot,
    create_schema,
    offsets,
    oracle_commit_lsns,
    pipeline_yaml,
    slot_ahead,
    slot_confirmed,
    topic,
    wait_until,
)
from tests.support.bronze_rows import snapshot_completed
from tests.support.capture_process import kill_after, kill_mid_snapshot

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

SEED = 20_261_130
SIZES = {"accounts": 100, "big": 2_000, "orders": 50}


def _dbname(dsn: str) -> str:
    return dict(p.split("=", 1) for p in dsn.split())["dbname"]


@pytest.fixture
def gcs_env(gcs_server: LocalGCS, monkeypatch: pytest.MonkeyPatch) -> LocalGCS:
    """The local GCS server's service-account key and URL as GOOGLE_* variables of this process and
    of the captures it starts."""
    for key, value in gcs_server.storage_options().items():
        monkeypatch.setenv(key, value)
    return gcs_server


def test_sigkills_during_snapshot_and_streaming_on_gcs_leave_bronze_exactly_once(pg_db, tmp_path, gcs_root,
                                                                                   gcs_env):
    root, db = gcs_root, _dbname(pg_db)
    slot, oracle = f"c_{db[-40:]}", f"o_{db[-40:]}"
    create_schema(pg_db, **SIZES)
    assert create_oracle_slot(pg_db, oracle), "the test_decoding oracle slot is needed"
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=50, max_records=400))
    rng = random.Random(SEED)
    capture = CaptureProcess(config, tmp_path)
    workload = Workload(pg_db, SEED, SIZES).start()
    marks: list = []
    try:
        kill_mid_snapshot(capture, root, None, source=PREFIX, big_topic=topic("big"), timeout=120, interval=0.1)
        capture.start()
        assert wait_until(lambda: capture.running and snapshot_completed(root, PREFIX), 180, 0.5), capture.tail()
        with psycopg.connect(pg_db, row_factory=dict_row, autocommit=True) as conn:
            for _ in range(3):
                kill_after(capture, rng.uniform(0.3, 1.5))
                marks.append((slot_confirmed(conn, slot), offsets(root)))
    finally:
        workload.stop()
        if capture.proc is not None:
            capture.kill()
    assert workload.committed > 50, workload
    final = capture.run_until_idle()
    assert "0 snapshot rows" in final.stdout.read_text(), final.tail()
    problems = check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    commits = oracle_commit_lsns(pg_db, oracle)
    for confirmed, rows in marks:
        problems += slot_ahead(confirmed, rows, slot, commits)
    assert not problems, "after 4 SIGKILLs on GCS:\n" + "\n".join(problems)
    logs = "".join(p.read_text(errors="replace") for p in sorted(capture.logs.glob("capture-*.*")))
    assert "PRIVATE KEY" not in logs and json.loads(gcs_env.service_account_key)["private_key"][40:100] not in logs
