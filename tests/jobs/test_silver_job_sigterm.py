"""SIGTERM stops the ``spark-submit`` entry point (``jobs/silver_job.py``) as it stops ``cdc-lakehouse
silver``: the table in flight finishes, the rest of the pass is left for the next run (one log line
names them), exit 0; a second signal aborts (exit 130). The job runs in a subprocess on the file's
Sail engine (the handlers are the job's Python process's, whichever engine it drives); the signal
goes to its Python process alone. Silver is then held against ``SELECT`` from PostgreSQL (delta-rs
reads, independent of the job)."""

from __future__ import annotations

import os
import re
import signal
import sys
import time

import pytest

from tests.pipelines.exactly_once_support import create_schema
from tests.support.capture_process import CaptureProcess
from tests.support.silver_processes import SILVER_COLUMNS, SilverProcess, pipeline_with_silver, silver_problems

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

TABLES = ("big", "accounts", "orders")
LEFT = re.compile(r"silver: stop requested; (\d+) of 3 tables left for the next run: (.*)$", re.MULTILINE)


def _job(silver: SilverProcess, config: object, *args: str) -> SilverProcess:
    return silver.start([sys.executable, "jobs/silver_job.py", "-c", str(config), *args])


def _signal(silver: SilverProcess, *signals: signal.Signals) -> tuple[int, float]:
    assert silver.proc is not None
    started = time.monotonic()
    for sig in signals:
        os.kill(silver.proc.pid, sig)  # the job's Python process alone, not its group
    return silver.wait(60), time.monotonic() - started


def test_sigterm_stops_the_silver_job_after_the_table_in_flight(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    create_schema(pg_db, big=30, accounts=40, orders=50)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(root, pg_db, slot="job_sigterm", engine="sail", tables=TABLES))
    CaptureProcess(config, tmp_path).run_until_idle()
    with SilverProcess(tmp_path, name="job") as job:
        _job(job, config)  # looping: a line per table as it is applied (after its commit)
        assert job.wait_output("silver big: ", 180), job.tail()
        status, seconds = _signal(job, signal.SIGTERM)
        err = job.stderr.read_text(errors="replace")
        assert status == 0 and "Traceback" not in err, f"exit {status}\n{job.tail()}"
        assert "SIGTERM: stopping" in err, job.tail()
        left = LEFT.search(err)
        assert left is not None and int(left.group(1)) >= 1, job.tail()
        applied = [t for t in TABLES if f"silver {t}: " in job.output()]
        assert applied + left.group(2).split(", ") == list(TABLES), job.tail()
        assert seconds < 30, f"{seconds:.1f}s from SIGTERM to exit"
        # a second signal aborts without waiting for the table in flight
        _job(job, config)
        assert job.wait_output("silver big: ", 180), job.tail()
        status, seconds = _signal(job, signal.SIGTERM, signal.SIGINT)
        err = job.stderr.read_text(errors="replace")
        assert status == 130 and "again: aborting" in err and "Traceback" not in err, f"exit {status}\n{job.tail()}"
        _job(job, config, "--once")
        assert job.wait(180) == 0, job.tail()
    assert silver_problems(root, pg_db, {"big": ("id", "grp", "name"), **SILVER_COLUMNS}) == []
