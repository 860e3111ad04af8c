"""Incremental and blocking snapshot rates against the initial snapshot rate of the same PostgreSQL table.

Run ``python -m bench.incremental_snapshot_bench`` (``--help`` lists the options). It starts a
private PostgreSQL, fills ``items`` with ``--rows`` rows, and measures, each into a fresh
lakehouse and slot:

* ``initial``: ``capture --until-idle`` with ``snapshot.mode: initial`` (the COPY-based snapshot);
* ``incremental``: after a ``no_data`` start, an ``execute-snapshot`` signal and one
  ``capture --until-idle`` run, which reads every chunk (``--chunk-size``) and returns once
  the snapshot is done;
* ``incremental+load``: the same while a writer updates random rows of the table
  (``--load-tps`` single-row transactions per second), the in-window de-duplication at work;
* ``blocking``: after a ``no_data`` start, an ``execute-snapshot`` signal with ``"type":
  "blocking"`` and one ``capture --until-idle`` run (streaming paused, the table read whole).

Each time is the wall time of the capture run (process start-up excluded, capture start-up
included), rows/s is the table's rows over it. The ratio column is against ``initial``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.local_postgres import LocalPostgres

SCENARIOS = ("initial", "incremental", "incremental+load", "blocking")


@dataclass(frozen=True)
class Result:
    scenario: str
    rows: int
    seconds: float
    writes: int = 0

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


def _pipeline(root: Path, port: int, db: str, slot: str, mode: str, chunk: int) -> str:
    return (f"pipeline: bench\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {port}, database: {db}, user: postgres}}\n"
            f"    options: {{slot.name: {slot}, snapshot.mode: {mode}, signal.data.collection: public.dbz_signal, "
            f"incremental.snapshot.chunk.size: {chunk}}}\n")


def _fill(dsn: str, rows: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, "
                     "data varchar(2048))")
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2), "
                     "note text, at timestamptz)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g, mod(g, 97), g / 7.0, repeat('x', 40), "
                     "'2024-01-01'::timestamptz + g * interval '1 second' FROM generate_series(1, %s) g", (rows,))
        conn.execute("VACUUM ANALYZE items")


class _Load(threading.Thread):
    def __init__(self, dsn: str, rows: int, tps: int) -> None:
        super().__init__(daemon=True)
        self.dsn, self.rows, self.tps = dsn, rows, tps
        self.stop = threading.Event()
        self.writes = 0

    def run(self) -> None:
        rng = random.Random(1)
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            start = time.monotonic()
            while not self.stop.is_set():
                conn.execute("UPDATE items SET qty = qty + 1 WHERE id = %s", (rng.randint(1, self.rows),))
                self.writes += 1
                ahead = self.writes / self.tps - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)


def _run(server: LocalPostgres, work: Path, n: int, scenario: str, rows: int, chunk: int, tps: int) -> Result:
    db = f"bench_{n}"
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    dsn = server.dsn(db)
    _fill(dsn, rows)
    root = work / f"lake_{n}"
    mode = "initial" if scenario == "initial" else "no_data"
    cfg = parse_pipeline(_pipeline(root, server.port, db, f"bench_{n}", mode, chunk), env={})
    if scenario != "initial":
        run_capture(cfg, until_idle=True)  # slot and publication in place, nothing read
        kind = ', \"type\": \"blocking\"' if scenario == "blocking" else ""
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO dbz_signal VALUES ('b', 'execute-snapshot', "
                         f"'{{\"data-collections\": [\"public.items\"]{kind}}}')")
    load = _Load(dsn, rows, tps) if scenario == "incremental+load" else None
    if load:
        load.start()
    start = time.monotonic()
    run_capture(cfg, until_idle=True)
    seconds = time.monotonic() - start
    if load:
        load.stop.set()
        load.join()
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"SELECT pg_drop_replication_slot('bench_{n}')")
    shutil.rmtree(root, ignore_errors=True)
    return Result(scenario, rows, seconds, load.writes if load else 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.incremental_snapshot_bench", description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=200_000, help="rows in the table (default 200000)")
    p.add_argument("--chunk-size", type=int, default=1024, help="incremental.snapshot.chunk.size (default 1024)")
    p.add_argument("--load-tps", type=int, default=300, help="updates per second of the load (default 300)")
    p.add_argument("--runs", type=int, default=1, help="runs of each scenario (default 1)")
    p.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS),
                   help="the scenarios to run (default all; initial is always run, as the baseline)")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="incbench-"))
    server = LocalPostgres(work / "data").start()
    results: list[Result] = []
    try:
        n = 0
        for _ in range(args.runs):
            for scenario in [s for s in SCENARIOS if s == "initial" or s in args.scenarios]:
                n += 1
                r = _run(server, work, n, scenario, args.rows, args.chunk_size, args.load_tps)
                print(f"  {scenario}: {r.seconds:.2f} s", file=sys.stderr, flush=True)
                results.append(r)
    finally:
        server.stop("immediate")
        shutil.rmtree(work, ignore_errors=True)
    base = min(r.seconds for r in results if r.scenario == "initial")
    print(f"\nrows={args.rows} chunk={args.chunk_size} load={args.load_tps} updates/s")
    print(f"| {'scenario':<17} | {'seconds':>8} | {'rows/s':>9} | {'vs initial':>10} | {'writes':>7} |")
    print(f"|{'-' * 19}|{'-' * 10}|{'-' * 11}|{'-' * 12}|{'-' * 9}|")
    for r in results:
        print(f"| {r.scenario:<17} | {r.seconds:>8.2f} | {r.rate:>9,.0f} | {base / r.seconds:>10.2f} | {r.writes:>7} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
