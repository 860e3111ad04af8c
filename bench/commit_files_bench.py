"""What the capture commit settings cost in files: bronze files written per table, idle and busy.

Starts a private PostgreSQL and a private MariaDB, runs ``cdc-lakehouse capture`` against each
(a subprocess, stopped with SIGINT at the end) and, after the snapshot, counts what lands in
the lakehouse during two phases of ``--seconds`` each:

* ``idle``: no change on the source;
* ``busy``: one row inserted into table ``t`` every ``--every-ms`` milliseconds.

Counted per phase: Delta commits (``_delta_log/*.json``), Parquet data files and checkpoints of
the bronze table ``t``, and commits of the source's offsets table ``_cdc/<source>/offsets``;
then the same extrapolated to one day. Prints a markdown table.

    .venv/bin/python -m bench.commit_files_bench --seconds 30 --interval-ms 1000
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pymysql

from pipelines.local_mariadb import LocalMariaDB
from pipelines.local_postgres import LocalPostgres


@dataclass(frozen=True)
class Counts:
    commits: int
    data_files: int
    checkpoints: int
    offsets_commits: int

    def minus(self, other: Counts) -> Counts:
        return Counts(self.commits - other.commits, self.data_files - other.data_files,
                      self.checkpoints - other.checkpoints, self.offsets_commits - other.offsets_commits)


def _log_files(table: Path) -> list[str]:
    log = table / "_delta_log"
    return os.listdir(log) if log.is_dir() else []


def count(root: Path, source: str, topic: str) -> Counts:
    table = root / "bronze" / topic
    log = _log_files(table)
    data = [p for p in table.rglob("*.parquet") if "_delta_log" not in p.parts] if table.is_dir() else []
    offsets = _log_files(root / "bronze" / "_cdc" / source / "offsets")
    return Counts(sum(f.endswith(".json") for f in log), len(data), sum(".checkpoint." in f for f in log),
                  sum(f.endswith(".json") for f in offsets))


def pipeline_text(root: Path, connector: str, connection: str, options: str, interval_ms: int) -> str:
    return (f"pipeline: bench\nlakehouse: {{root: {root}}}\nsources:\n  - name: src\n    connector: {connector}\n"
            f"    connection: {connection}\n    options: {options}\n"
            f"    capture: {{commit_interval_ms: {interval_ms}}}\n")


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}")


def measure(name: str, workdir: Path, text: str, insert: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    root = workdir / f"lake-{name}"
    path = workdir / f"{name}.yaml"
    path.write_text(text.replace("ROOT", str(root)))
    topic = args.topics[name]
    log = (workdir / f"{name}.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "-q", "capture", "-c", str(path)],
                            stdout=log, stderr=subprocess.STDOUT)
    rows: list[dict[str, Any]] = []
    try:
        wait_for(lambda: count(root, "src", topic).commits > 0, 120, f"{name}: the snapshot of t")
        time.sleep(2)
        print(f"{name}: snapshot committed; idle phase, {args.seconds} s", flush=True)
        before = count(root, "src", topic)
        time.sleep(args.seconds)
        idle = count(root, "src", topic)
        rows.append(_row(name, "idle", idle.minus(before), args))
        print(f"{name}: busy phase, a row every {args.every_ms} ms for {args.seconds} s", flush=True)
        end = time.monotonic() + args.seconds
        n = 0
        while time.monotonic() < end:
            n += 1
            insert(n)
            time.sleep(args.every_ms / 1000)
        time.sleep(args.interval_ms / 1000 + 1)  # the last batch
        busy = count(root, "src", topic)
        rows.append(_row(name, "busy", busy.minus(idle), args))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    return rows


def _row(name: str, phase: str, c: Counts, args: argparse.Namespace) -> dict[str, Any]:
    per_day = 86_400 / args.seconds
    return {"source": name, "phase": phase, "seconds": args.seconds, "commits": c.commits,
            "data_files": c.data_files, "checkpoints": c.checkpoints, "offsets_commits": c.offsets_commits,
            "day_data_files": round(c.data_files * per_day), "day_commits": round(c.commits * per_day),
            "day_offsets_commits": round(c.offsets_commits * per_day)}


def print_table(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\ncommit_interval_ms={args.interval_ms}, busy = one insert every {args.every_ms} ms\n")
    head = ["source", "phase", "seconds", "commits", "data_files", "checkpoints", "offsets_commits",
            "day_commits", "day_data_files", "day_offsets_commits"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(f"{r[h]:,}" if isinstance(r[h], int) else str(r[h]) for h in head) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=30, help="length of each phase (default 30)")
    parser.add_argument("--interval-ms", type=int, default=1000, help="capture.commit_interval_ms (default 1000)")
    parser.add_argument("--every-ms", type=int, default=100, help="busy phase: one insert every N ms (default 100)")
    parser.add_argument("--only", choices=["postgres", "mariadb"], help="one source kind only")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="commit-files-bench-"))
    os.chmod(workdir, 0o755)
    rows: list[dict[str, Any]] = []
    try:
        if args.only in (None, "postgres"):
            rows += _postgres(workdir, args)
        if args.only in (None, "mariadb"):
            rows += _mariadb(workdir, args)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(rows, args)
    return 0


def _postgres(workdir: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    server = LocalPostgres(workdir / "pg").start()
    try:
        dsn = server.dsn()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
            conn.execute("INSERT INTO t VALUES (0, 'x')")
        conn = psycopg.connect(dsn, autocommit=True)
        args.topics = {"postgres": "src.public.t"}
        text = pipeline_text(Path("ROOT"), "postgres",
                             f"{{host: 127.0.0.1, port: {server.port}, database: postgres, user: {server.superuser}}}",
                             "{table.include.list: public.t}", args.interval_ms)
        try:
            return measure("postgres", workdir, text,
                           lambda n: conn.execute("INSERT INTO t VALUES (%s, 'x')", (n,)), args)
        finally:
            conn.close()
    finally:
        server.stop()


def _mariadb(workdir: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    server = LocalMariaDB(workdir / "mariadb").start()
    try:
        conn = pymysql.connect(**server.connect_args(), autocommit=True)  # type: ignore[arg-type]
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE shop")
            cur.execute("CREATE TABLE shop.t (id int PRIMARY KEY, v text)")
            cur.execute("INSERT INTO shop.t VALUES (0, 'x')")
        args.topics = {"mariadb": "src.shop.t"}
        text = pipeline_text(Path("ROOT"), "mariadb", f"{{host: 127.0.0.1, port: {server.port}, user: root}}",
                             '{database.include.list: shop, database.server.id: "5999"}', args.interval_ms)

        def insert(n: int) -> None:
            with conn.cursor() as cur:
                cur.execute("INSERT INTO shop.t VALUES (%s, 'x')", (n,))

        try:
            return measure("mariadb", workdir, text, insert, args)
        finally:
            conn.close()
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
