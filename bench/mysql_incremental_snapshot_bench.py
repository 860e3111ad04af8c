"""Incremental snapshot rate against the initial snapshot rate of the same MySQL/MariaDB table.

Run ``python -m bench.mysql_incremental_snapshot_bench`` (``--help`` lists the options). It starts a
private MariaDB, and for each table size (``--rows``, several allowed: one table per size) and
scenario fills ``items`` in a fresh database and measures, each into a fresh lakehouse:

* ``initial``: ``capture --until-idle`` with ``snapshot.mode: initial`` (the global-read-lock
  snapshot, read column by column);
* ``incremental``: after a ``no_data`` start, an ``execute-snapshot`` signal and one
  ``capture --until-idle`` run, which reads every chunk (``--chunk-size``) and returns once the
  snapshot is done;
* ``incremental+load``: the same while a writer updates random rows of the table
  (``--load-tps`` single-row transactions per second), the in-window de-duplication at work.

Each time is the wall time of the capture run (process start-up excluded, capture start-up
included; an untimed ``initial`` and ``incremental`` run of a small table come first, so that
no measured run pays the process's first imports), rows/s is the table's rows over it. The
ratio column is against ``initial`` of the same size (its best run). The machine's load
average is printed before and after. Wall times on a shared machine swing with its load, so
each run also reports the CPU time it used: the capture's (this process, all its threads, and
the reader processes it ended) and the server's (``mariadbd``), both far steadier than the
wall time when other work competes for the cores. The PostgreSQL counterpart is `bench.incremental_snapshot_bench`.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymysql

from bench.incremental_snapshot_bench import Result
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.local_mariadb import LocalMariaDB

SCENARIOS = ("initial", "incremental", "incremental+load")
WARM_UP_ROWS = 2_000
"""Rows of the untimed warm-up runs before the measured ones."""


@dataclass(frozen=True)
class Run(Result):
    """A measured run, with the CPU seconds the capture and the server used during it."""

    capture_cpu: float = 0.0
    server_cpu: float = 0.0


def _own_cpu() -> float:
    """CPU seconds of this process (every thread) and of its ended child processes."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _server_cpu(server: LocalMariaDB) -> float:
    """CPU seconds the server process has used so far (``/proc``)."""
    if server.proc is None:
        return 0.0
    fields = Path(f"/proc/{server.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _pipeline(root: Path, port: int, db: str, server_id: int, mode: str, chunk: int) -> str:
    options = {"database.include.list": db, "table.include.list": f"{db}.items,{db}.dbz_signal",
               "database.server.id": str(server_id), "snapshot.mode": mode,
               "signal.data.collection": f"{db}.dbz_signal", "incremental.snapshot.chunk.size": str(chunk)}
    opts = "".join(f'      {k}: "{v}"\n' for k, v in options.items())
    return (f"pipeline: bench\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: my\n    connector: mariadb\n"
            f"    connection: {{host: 127.0.0.1, port: {port}, user: root}}\n    options:\n{opts}")


def _execute(args: dict[str, Any], *statements: str, params: tuple[Any, ...] | None = None) -> None:
    conn = pymysql.connect(**args, autocommit=True)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql, params)
    finally:
        conn.close()


def _fill(args: dict[str, Any], rows: int) -> None:
    _execute(args,
             "CREATE TABLE dbz_signal (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
             "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL, qty INT, price DECIMAL(10,2), "
             "note VARCHAR(100), at DATETIME(6))",
             f"INSERT INTO items SELECT seq, CONCAT('item ', seq), seq MOD 97, seq / 7.0, REPEAT('x', 40), "
             f"TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_{int(rows)}",
             "ANALYZE TABLE items")


class _Load(threading.Thread):
    def __init__(self, args: dict[str, Any], rows: int, tps: int) -> None:
        super().__init__(daemon=True)
        self.args, self.rows, self.tps = args, rows, tps
        self.stop = threading.Event()
        self.writes = 0

    def run(self) -> None:
        rng = random.Random(1)
        conn = pymysql.connect(**self.args, autocommit=True)
        try:
            with conn.cursor() as cur:
                start = time.monotonic()
                while not self.stop.is_set():
                    cur.execute("UPDATE items SET qty = qty + 1 WHERE id = %s", (rng.randint(1, self.rows),))
                    self.writes += 1
                    ahead = self.writes / self.tps - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(ahead)
        finally:
            conn.close()


def _run(server: LocalMariaDB, work: Path, n: int, scenario: str, rows: int, chunk: int, tps: int) -> Run:
    db = f"bench_{n}"
    _execute(server.connect_args(), f"CREATE DATABASE {db}")
    args = server.connect_args(db)
    _fill(args, rows)
    root = work / f"lake_{n}"
    mode = "initial" if scenario == "initial" else "no_data"
    cfg = parse_pipeline(_pipeline(root, server.port, db, 6400 + n, mode, chunk), env={})
    if scenario != "initial":
        run_capture(cfg, until_idle=True)  # the binlog position stored, nothing read
        _execute(args, "INSERT INTO dbz_signal VALUES ('b', 'execute-snapshot', %s)",
                 params=('{"data-collections": ["' + db + '.items"]}',))
    load = _Load(args, rows, tps) if scenario == "incremental+load" else None
    if load:
        load.start()
    cpu, server_cpu = _own_cpu(), _server_cpu(server)
    start = time.monotonic()
    result = run_capture(cfg, until_idle=True)["my"]
    seconds = time.monotonic() - start
    cpu, server_cpu = _own_cpu() - cpu, _server_cpu(server) - server_cpu
    written = result.per_topic.get(f"my.{db}.items", 0)
    if written < rows:  # the run must have read the whole table, or its time means nothing
        raise SystemExit(f"{scenario}: only {written} of {rows} rows reached bronze")
    if load:
        load.stop.set()
        load.join()
    _execute(server.connect_args(), f"DROP DATABASE {db}")
    shutil.rmtree(root, ignore_errors=True)
    return Run(scenario, rows, seconds, load.writes if load else 0, cpu, server_cpu)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.mysql_incremental_snapshot_bench",
                                description=(__doc__ or "").split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[100_000, 200_000],
                   help="rows in the table, one or more sizes (default 100000 200000)")
    p.add_argument("--chunk-size", type=int, default=1024, help="incremental.snapshot.chunk.size (default 1024)")
    p.add_argument("--load-tps", type=int, default=300, help="updates per second of the load (default 300)")
    p.add_argument("--runs", type=int, default=1, help="runs of each scenario (default 1)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help=f"comma-separated scenarios (default {','.join(SCENARIOS)}; initial always runs)")
    args = p.parse_args(argv)
    chosen = {s.strip() for s in args.scenarios.split(",") if s.strip()}
    unknown = chosen - set(SCENARIOS)
    if unknown:
        p.error(f"--scenarios: unknown {', '.join(sorted(unknown))} (known: {', '.join(SCENARIOS)})")
    scenarios = [s for s in SCENARIOS if s == "initial" or s in chosen]
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="myincbench-"))
    server = LocalMariaDB(work / "mariadb")
    server.start()
    results: list[Run] = []
    try:
        n = 0
        for scenario in ("initial", "incremental"):  # untimed: the first capture of a process pays its imports
            n += 1
            _run(server, work, n, scenario, WARM_UP_ROWS, args.chunk_size, args.load_tps)
        for rows in args.rows:
            for _ in range(args.runs):
                for scenario in scenarios:
                    n += 1
                    r = _run(server, work, n, scenario, rows, args.chunk_size, args.load_tps)
                    print(f"  {rows} rows, {scenario}: {r.seconds:.2f} s", file=sys.stderr, flush=True)
                    results.append(r)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    print(f"\nMariaDB chunk={args.chunk_size} load={args.load_tps} updates/s; load average (1, 5, 15 min) "
          f"before {_load(load_before)}, after {_load(load_after)}")
    print(f"| {'rows':>9} | {'scenario':<17} | {'seconds':>8} | {'rows/s':>9} | {'vs initial':>10} | {'writes':>7} "
          f"| {'capture CPU s':>13} | {'server CPU s':>12} |")
    print(f"|{'-' * 11}|{'-' * 19}|{'-' * 10}|{'-' * 11}|{'-' * 12}|{'-' * 9}|{'-' * 15}|{'-' * 14}|")
    for r in results:
        base = min(b.seconds for b in results if b.scenario == "initial" and b.rows == r.rows)
        print(f"| {r.rows:>9,} | {r.scenario:<17} | {r.seconds:>8.2f} | {r.rate:>9,.0f} | {base / r.seconds:>10.2f} "
              f"| {r.writes:>7} | {r.capture_cpu:>13.2f} | {r.server_cpu:>12.2f} |")
    if args.runs > 1:
        print(f"\nBest of {args.runs} runs (CPU: the least of the runs)")
        print(f"| {'rows':>9} | {'scenario':<17} | {'seconds':>8} | {'rows/s':>9} | {'vs initial':>10} "
              f"| {'capture CPU s':>13} | {'server CPU s':>12} |")
        print(f"|{'-' * 11}|{'-' * 19}|{'-' * 10}|{'-' * 11}|{'-' * 12}|{'-' * 15}|{'-' * 14}|")
        for rows in args.rows:
            base = min(b.seconds for b in results if b.scenario == "initial" and b.rows == rows)
            for scenario in scenarios:
                runs = [r for r in results if r.rows == rows and r.scenario == scenario]
                best = min(runs, key=lambda r: r.seconds)
                print(f"| {rows:>9,} | {scenario:<17} | {best.seconds:>8.2f} | {best.rate:>9,.0f} "
                      f"| {base / best.seconds:>10.2f} | {min(r.capture_cpu for r in runs):>13.2f} "
                      f"| {min(r.server_cpu for r in runs):>12.2f} |")
    return 0


def _load(values: tuple[float, float, float]) -> str:
    return "/".join(f"{v:.1f}" for v in values)


if __name__ == "__main__":
    raise SystemExit(main())
