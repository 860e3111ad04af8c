"""Runs our connector (`pipelines.capture.run_capture`) in a child process per run.

A child per run gives every measurement a clean process: its peak RSS (``ru_maxrss``) is the
run's own, and imports happen before the clock starts. See `bench._capture_child`. Any
connector can be run: a `CaptureTarget` gives the pipeline, its bronze root, the topic to count
and the connector's session class; `OursTarget` is the PostgreSQL bench's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from bench.workload import TABLE, BenchDb
from cdc_sources.spi import CdcError

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCE = "bench"
TOPIC = f"{SOURCE}.public.{TABLE}"


class BenchRunError(CdcError):
    """A benchmark child process failed."""


class CaptureTarget(Protocol):
    """One capture pipeline of a benchmark run.

    Attributes:
        root: the pipeline's bronze root.
        topic: the topic whose records the run must commit (the others are not counted).
        session: the connector's session class as ``"module:Class"`` (its ``snapshot`` and
            ``stream`` are observed).
    """

    @property
    def root(self) -> Path: ...

    @property
    def topic(self) -> str: ...

    @property
    def session(self) -> str: ...

    def pipeline_text(self) -> str:
        """The pipeline YAML."""
        ...


@dataclass(frozen=True)
class OursTarget:
    """One PostgreSQL capture pipeline: a bronze root and a replication slot on a scenario database."""

    db: BenchDb
    root: Path
    slot: str
    snapshot_mode: str = "initial"
    topic: ClassVar[str] = TOPIC
    session: ClassVar[str] = "cdc_sources.postgres.session:PostgresCaptureSession"

    def pipeline_text(self) -> str:
        options = {"slot.name": self.slot, "snapshot.mode": self.snapshot_mode,
                   "table.include.list": f"public.{TABLE}"}
        opts = "".join(f'      {k}: "{v}"\n' for k, v in options.items())
        return (f"pipeline: capture_bench\nlakehouse: {{root: \"{self.root}\"}}\nsources:\n"
                f"  - name: {SOURCE}\n    connector: postgres\n"
                f"    connection: {{host: 127.0.0.1, port: {self.db.port}, database: {self.db.name}, "
                f"user: postgres}}\n    options:\n{opts}")


def child_env() -> dict[str, str]:
    """The environment for benchmark children: the repository importable, output unbuffered."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_ours(target: CaptureTarget, *, expected: int, profile: Path | None = None, source_only: bool = False,
             timeout_s: float = 3600.0, tree: Path | None = None) -> dict[str, Any]:
    """Run one capture until idle in a fresh child; return its measurements (see the child).

    ``source_only`` reads the source without writing bronze (records are only counted).
    ``tree``: run the connector's code of that checkout (this repository's child and probe, the
    tree's ``cdc_sources``, ``bronze`` and ``pipelines``), to compare code before and after a change.
    """
    with tempfile.TemporaryDirectory(prefix="cdc-bench-ours-") as tmp:
        config_path = Path(tmp) / "config.json"
        result_path = Path(tmp) / "result.json"
        config = {"pipeline": target.pipeline_text(), "root": str(target.root), "topic": target.topic,
                  "session": target.session, "expected": expected, "profile": str(profile) if profile else None,
                  "source_only": source_only}
        config_path.write_text(json.dumps(config))
        log_path = Path(tmp) / "child.log"
        with log_path.open("wb") as log:
            if tree is None:
                cmd, cwd, env = [sys.executable, "-m", "bench._capture_child"], REPO_ROOT, child_env()
            else:  # the probe from here, everything it imports from the tree (sys.path[0] is the cwd)
                child = REPO_ROOT / "bench" / "_capture_child.py"
                cmd = [sys.executable, "-c", f"import runpy; runpy.run_path({str(child)!r}, run_name='__main__')"]
                cwd, env = tree, {**child_env(), "PYTHONPATH": str(tree)}
            proc = subprocess.run([*cmd, str(config_path), str(result_path)], cwd=cwd, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=timeout_s)
        if not result_path.exists():
            raise BenchRunError(f"our capture child exited with {proc.returncode} and no result; "
                                f"log tail:\n{log_path.read_text(errors='replace')[-3000:]}")
        out: dict[str, Any] = json.loads(result_path.read_text())
    if "error" in out:
        raise BenchRunError(f"our capture failed in the child:\n{out['error']}")
    return out


def summarize_ours(raw: dict[str, Any], records: int) -> dict[str, Any]:
    """Durations and rates from a child's probe: start->last and first->last, both to bronze."""
    probe = raw["probe"]
    reached = probe["t_reached"]
    if reached is None:
        raise BenchRunError(f"our capture delivered {probe['written']} of {records} records")
    start_to_last = reached - probe["t_call"]
    first_to_last = reached - probe["t_first_record"]
    return {
        "records": records,
        "start_to_last_s": start_to_last,
        "first_to_last_s": first_to_last,
        "start_to_first_s": probe["t_first_record"] - probe["t_call"],
        "run_capture_s": probe["t_return"] - probe["t_call"],
        "events_per_s": records / start_to_last,
        "events_per_s_first_to_last": records / first_to_last,
        "cpu_s": None if probe.get("cpu_reached") is None else probe["cpu_reached"] - probe["cpu_call"],
        "bronze_rows": raw["bronze_rows"],
        "bronze_commits": len(probe["commits"]),
        "bronze_commit_busy_s": sum(c[2] for c in probe["commits"]) + probe.get("stage_busy_s", 0.0),
        "peak_rss_mb": raw["peak_rss_bytes"] / 2**20,
        "rss_before_run_mb": raw["rss_before_run_bytes"] / 2**20,
        "capture": raw["capture"],
        "log_warnings": raw.get("log_warnings", {}),
        "rss_timeline_mb": raw["rss_timeline_mb"],
        "commits": probe["commits"],
    }
