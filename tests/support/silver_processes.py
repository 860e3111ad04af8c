"""Silver on classic Spark in subprocesses, and the oracle that holds silver against the source.

* `pipeline_with_silver`: the exactly-once tests' PostgreSQL pipeline file plus ``silver:`` for
  ``accounts`` and ``orders`` and a small classic Spark engine (``local[2]``, two shuffle
  partitions, no UI).
* `child_env`: the environment of a Spark driver subprocess: no Spark Connect markers left by
  this process, and a JVM tuned for short runs (C1 JIT only, serial GC, a code cache that does
  not fill up: a cold increment of a few hundred rows took 46 s with the default JIT on this
  2-core machine under load, 14 s so).
* `SilverProcess`: ``cdc-lakehouse silver`` (or any argv) in a subprocess with numbered logs, in
  a process group of its own with its engine (the JVM of classic Spark, the Sail server process).
  Use it as a context manager, or call `SilverProcess.stop`: the group ends on every path out of
  the test, a failed assertion or a timeout included; `stop_all` (an autouse fixture in
  tests/conftest.py) ends what a test left running. A driver stopped alone (SIGINT or SIGKILL to
  its Python process) can leave its engine behind in the group (a classic-Spark JVM held 3 GB
  after a test run); only the group's end is sure.
* `silver_problems`: silver (read with delta-rs) against ``SELECT`` from the source (psycopg);
  independent of the code under test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from deltalake import DeltaTable

from tests.pipelines.exactly_once_support import pipeline_yaml

SPARK_CONF = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
              "spark.ui.showConsoleProgress": "false", "spark.databricks.delta.snapshotPartitions": "2"}
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"
SILVER_COLUMNS = {"accounts": ("id", "balance", "note"), "orders": ("id", "account_id", "qty", "status")}
"""The silver tables the pipeline declares (over the exactly-once tests' schema) and their source columns."""
ROOT = Path(__file__).resolve().parents[2]


def engine_yaml(kind: str = "spark") -> str:
    conf = ", ".join(f'"{k}": "{v}"' for k, v in SPARK_CONF.items())
    return f"engine: {{kind: {kind}, conf: {{{conf}}}}}\n" if kind == "spark" else f"engine: {{kind: {kind}}}\n"


def pipeline_with_silver(root: str, dsn: str, *, slot: str, engine: str = "spark", interval_ms: int = 200,
                         max_records: int = 5000, silver_interval_s: float = 10,
                         tables: Sequence[str] = tuple(SILVER_COLUMNS)) -> str:
    """The pipeline file: capture of the exactly-once schema, silver ``tables`` (``accounts`` and
    ``orders`` by default)."""
    silver = "silver:\n" + "".join(f"  - {{table: {t}, source: pg.public.{t}}}\n" for t in tables)
    silver += f"silver_options: {{interval_seconds: {silver_interval_s}}}\n"
    return pipeline_yaml(root, dsn, slot=slot, interval_ms=interval_ms, max_records=max_records) + silver + \
        engine_yaml(engine)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    env["JAVA_TOOL_OPTIONS"] = JVM_OPTIONS
    env["PYTHONPATH"] = str(ROOT)
    return env


def silver_rows(root: str, table: str, columns: Sequence[str]) -> set[tuple[Any, ...]] | None:
    """A silver table's rows (only ``columns``) via delta-rs; None if the table does not exist."""
    try:
        data = DeltaTable(f"{root}/silver/{table}").to_pyarrow_table(columns=list(columns))
    except Exception:  # TableNotFoundError: not created yet
        return None
    return {tuple(r[c] for c in columns) for r in data.to_pylist()}


def source_rows(dsn: str, table: str, columns: Sequence[str]) -> set[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return {tuple(r) for r in conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()}


def silver_problems(root: str, dsn: str, tables: dict[str, tuple[str, ...]] = SILVER_COLUMNS) -> list[str]:
    """How each silver table differs from its source table (empty: equal, row for row, value for value)."""
    problems = []
    for table, columns in tables.items():
        got, want = silver_rows(root, table, columns), source_rows(dsn, table, columns)
        if got is None:
            problems.append(f"{table}: no silver table")
            continue
        rows = DeltaTable(f"{root}/silver/{table}").to_pyarrow_table(columns=[columns[0]]).num_rows
        if rows != len(got):
            problems.append(f"{table}: {rows - len(got)} duplicated rows")
        missing, extra = want - got, got - want
        if missing or extra:
            problems.append(f"{table}: {len(missing)} rows missing or stale (e.g. {sorted(missing)[:3]}), "
                            f"{len(extra)} unexpected (e.g. {sorted(extra)[:3]}); source has {len(want)}")
    return problems


_STARTED: list[SilverProcess] = []
"""Every `SilverProcess` started in this test process, for `stop_all`."""


def stop_all() -> list[int]:
    """End the process group of every `SilverProcess` started so far (see `SilverProcess.stop`);
    returns the pids of the drivers that were still running."""
    running = [p.proc.pid for p in _STARTED if p.proc is not None and p.proc.poll() is None]
    while _STARTED:
        _STARTED.pop().stop(timeout=0)
    return running


@dataclass
class SilverProcess:
    """A Spark driver (``cdc-lakehouse silver ...`` by default) in a subprocess; logs under ``logs``.
    Its process group ends with `stop` (also on leaving a ``with`` block)."""

    logs: Path
    name: str = "silver"
    runs: int = 0
    proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> SilverProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, timeout: float = 60) -> int | None:
        """End the driver's whole process group: SIGINT (Ctrl-C) while the driver runs, up to
        ``timeout`` seconds for it to stop, then SIGKILL to the group in every case, which also
        ends an engine whose driver died before it. Returns the driver's exit status (None if
        never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None and timeout > 0:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        with contextlib.suppress(ProcessLookupError):  # the group is gone once its last member is
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait(30)

    def start(self, argv: Sequence[str], env: dict[str, str] | None = None) -> SilverProcess:
        self.stop(timeout=0)  # what is left of the previous run's group (an engine its driver left)
        self.runs += 1
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            # its own process group: a kill takes the Python driver and its JVM down at the same instant
            self.proc = subprocess.Popen(list(argv), stdout=out, stderr=err, cwd=ROOT,
                                         env={**child_env(), **(env or {})}, start_new_session=True)
        if not any(p is self for p in _STARTED):
            _STARTED.append(self)
        return self

    def start_cli(self, config: Path, *args: str) -> SilverProcess:
        return self.start([sys.executable, "-m", "pipelines.cli", "silver", "-c", str(config), *args])

    @property
    def stdout(self) -> Path:
        return self.logs / f"{self.name}-{self.runs}.out"

    @property
    def stderr(self) -> Path:
        return self.logs / f"{self.name}-{self.runs}.err"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        return self.stdout.read_text(errors="replace") if self.stdout.exists() else ""

    def wait_output(self, text: str, timeout: float, *, count: int = 1) -> bool:
        """Wait until stdout holds ``text`` ``count`` times; False on timeout or if the process ended."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.output().count(text) >= count:
                return True
            if not self.running:
                return self.output().count(text) >= count
            time.sleep(0.02)
        return False

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def kill(self) -> int:
        """SIGKILL the driver's process group (Python and JVM); returns the Python driver's exit
        status (-9 if the kill ended it)."""
        assert self.proc is not None
        status = self.proc.poll()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait(30) if status is None else status

    def interrupt(self, timeout: float = 60) -> int:
        """SIGINT to the group, as Ctrl-C in a terminal (the engine ignores it; the driver stops it),
        then wait for the exit status; on a timeout the group is killed and the timeout raised."""
        assert self.proc is not None
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop(timeout=0)
            raise

    def tail(self) -> str:
        err = self.stderr.read_text(errors="replace") if self.stderr.exists() else ""
        return f"stdout: {self.output()[-2500:]}\nstderr: {err[-4000:]}"
