"""Start-up cost of ``cdc-lakehouse capture --until-idle`` with nothing to capture.

Run ``python -m bench.startup_bench`` (``--help`` lists the options; ``bench/README.md`` explains
the numbers). It starts a private PostgreSQL and a private MariaDB, captures a small database of
each once (so that both sources are caught up), then starts ``capture --until-idle`` as a new
process ``--runs`` times per connector, and reports the wall time and the CPU time (user + system)
of each process: min, median and max. With several ``--tree`` checkouts (for example the code
before and after a change), the runs of the trees are interleaved, so that every tree sees the
same load on a shared machine. The load average before and after is printed with the table.
``--snapshot-rows N`` adds a PostgreSQL snapshot of an N-row table timed from a cold process
start (``--snapshot-runs`` runs per tree, each into a fresh bronze root and slot).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cli import RESULTS_DIR, progress
from bench.measure import Say
from bench.workload import TABLE, BenchDb, create_database, insert_rows, settle
from pipelines.local_mariadb import LocalMariaDB
from pipelines.local_postgres import LocalPostgres

REPO = Path(__file__).resolve().parents[1]
CONNECTORS = ("postgres", "mariadb")


@dataclass(frozen=True)
class Source:
    """One caught-up source: its connector, pipeline file and offsets table's log directory."""

    connector: str
    pipeline: Path
    offsets_log: Path


@dataclass(frozen=True)
class Run:
    """One cold process start: wall and CPU seconds, exit code, bronze commits it added."""

    tree: str
    connector: str
    wall_s: float
    cpu_s: float
    exit_code: int
    commits_added: int


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.startup_bench", description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--runs", type=int, default=10, help="process starts per connector and tree (default 10)")
    p.add_argument("--tables", type=int, default=5, help="tables in each captured database (default 5)")
    p.add_argument("--connectors", default=",".join(CONNECTORS), help="comma-separated subset of postgres, mariadb")
    p.add_argument("--tree", type=Path, action="append", default=None,
                   help="a checkout whose code is run (repeat to compare trees; default: this repository)")
    p.add_argument("--snapshot-rows", type=int, default=0,
                   help="also time a snapshot of a table of this many rows (the capture bench's shape) from a "
                        "cold process start, PostgreSQL only (default 0: no)")
    p.add_argument("--snapshot-runs", type=int, default=3, help="cold snapshot runs per tree (default 3)")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (servers' data, bronze)")
    args = p.parse_args(argv)
    unknown = set(args.connectors.split(",")) - set(CONNECTORS)
    if unknown:
        p.error(f"unknown connectors {sorted(unknown)}; valid: {', '.join(CONNECTORS)}")
    args.tree = [t.resolve() for t in (args.tree or [REPO])]
    for tree in args.tree:
        if not (tree / "pipelines" / "cli.py").is_file():
            p.error(f"--tree {tree}: no pipelines/cli.py there")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    return args


def postgres_source(workdir: Path, tables: int, say: Say, servers: list[LocalPostgres | LocalMariaDB]) -> Source:
    import psycopg

    server = LocalPostgres(workdir / "pg")
    say(f"starting a private PostgreSQL {server.server_version()} on port {server.port}")
    server.start()
    servers.append(server)  # stopped by the caller, even if what follows fails
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE app")
    with psycopg.connect(server.dsn("app"), autocommit=True) as conn:
        for t in range(tables):
            conn.execute(f"CREATE TABLE t{t} (id int PRIMARY KEY, name text)")
            conn.execute(f"INSERT INTO t{t} SELECT g, 'row ' || g FROM generate_series(1, 100) g")
    lake = workdir / "lake-pg"
    pipeline = workdir / "pg.yaml"
    pipeline.write_text(
        f'pipeline: startup\nlakehouse: {{root: "{lake}"}}\nsources:\n  - name: pg\n    connector: postgres\n'
        f"    connection: {{host: 127.0.0.1, port: {server.port}, database: app, user: postgres}}\n"
        "    options:\n      slot.name: startup_bench\n")
    return Source("postgres", pipeline, lake / "bronze" / "_cdc" / "pg" / "offsets" / "_delta_log")


def mariadb_source(workdir: Path, tables: int, say: Say, servers: list[LocalPostgres | LocalMariaDB]) -> Source:
    import pymysql

    server = LocalMariaDB(workdir / "mariadb" / "data")
    say(f"starting a private MariaDB on port {server.port}")
    server.start()
    servers.append(server)  # stopped by the caller, even if what follows fails
    conn = pymysql.connect(**server.connect_args(), autocommit=True)  # type: ignore[arg-type]
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE app")
            for t in range(tables):
                cur.execute(f"CREATE TABLE app.t{t} (id INT PRIMARY KEY, name VARCHAR(20))")
                cur.execute(f"INSERT INTO app.t{t} VALUES " + ", ".join(f"({i}, 'row {i}')" for i in range(1, 101)))
    finally:
        conn.close()
    lake = workdir / "lake-mariadb"
    pipeline = workdir / "mariadb.yaml"
    pipeline.write_text(
        f'pipeline: startup\nlakehouse: {{root: "{lake}"}}\nsources:\n  - name: my\n    connector: mariadb\n'
        f"    connection: {{host: 127.0.0.1, port: {server.port}, user: root}}\n"
        '    options:\n      database.include.list: app\n      database.server.id: "5460"\n')
    return Source("mariadb", pipeline, lake / "bronze" / "_cdc" / "my" / "offsets" / "_delta_log")


@dataclass(frozen=True)
class SnapshotRun:
    """One snapshot from a cold process start into a fresh bronze root and slot."""

    tree: str
    rows: int
    wall_s: float
    cpu_s: float


def snapshot_cold(tree: Path, db: BenchDb, run: int, workdir: Path, env: dict[str, str]) -> SnapshotRun:
    """Snapshot ``db``'s bench table with ``tree``'s code from process start to exit; check bronze."""
    from deltalake import DeltaTable

    from bronze.schema import topic_path

    lake = workdir / f"lake-snapshot-{run}"
    slot = f"startup_snapshot_{run}"
    pipeline = workdir / f"snapshot-{run}.yaml"
    pipeline.write_text(
        f'pipeline: startup\nlakehouse: {{root: "{lake}"}}\nsources:\n  - name: bench\n    connector: postgres\n'
        f"    connection: {{host: 127.0.0.1, port: {db.port}, database: {db.name}, user: postgres}}\n"
        f"    options:\n      slot.name: {slot}\n")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "capture", "-c", str(pipeline), "--until-idle", "-q"],
        cwd=tree, env={**env, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"snapshot with {tree} failed:\n{err[-2000:]}")
    rows = DeltaTable(topic_path(str(lake), f"bench.public.{TABLE}")).count()
    drop_slot(db, slot)
    shutil.rmtree(lake, ignore_errors=True)
    return SnapshotRun(str(tree), rows, wall, usage.ru_utime + usage.ru_stime)


def drop_slot(db: BenchDb, slot: str) -> None:
    import psycopg

    with psycopg.connect(db.server.dsn(), autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))


def snapshot_table(runs: list[SnapshotRun], trees: list[Path], rows: int) -> str:
    lines = [f"| Tree | {rows:,}-row snapshot runs | Wall min s | Wall median s | Wall max s | CPU median s "
             "| Rows/s (median wall) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for tree in trees:
        mine = [r for r in runs if r.tree == str(tree)]
        wall = [r.wall_s for r in mine]
        median = statistics.median(wall)
        lines.append(f"| {_label(tree)} | {len(mine)} | {min(wall):.2f} | {median:.2f} | {max(wall):.2f} | "
                     f"{statistics.median(r.cpu_s for r in mine):.2f} | {rows / median:,.0f} |")
    return "\n".join(lines) + "\n"


def child_env() -> dict[str, str]:
    """The environment of the measured processes: bytecode written and read (cached)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    return env


def cold_start(tree: Path, source: Source, env: dict[str, str]) -> Run:
    """Start ``capture --until-idle`` of ``tree``'s code as a new process; measure it."""
    before = _commits(source.offsets_log)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "capture", "-c", str(source.pipeline), "--until-idle", "-q"],
        cwd=tree, env={**env, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"capture of {source.connector} with {tree} failed ({proc.returncode}):\n{err[-2000:]}")
    return Run(str(tree), source.connector, wall, usage.ru_utime + usage.ru_stime, proc.returncode,
               _commits(source.offsets_log) - before)


def _commits(log: Path) -> int:
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


def summary_table(runs: list[Run], trees: list[Path], connectors: list[str]) -> str:
    lines = ["| Tree | Connector | Runs | Wall min s | Wall median s | Wall max s | CPU min s | CPU median s "
             "| CPU max s | Bronze commits added |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for tree in trees:
        for connector in connectors:
            mine = [r for r in runs if r.tree == str(tree) and r.connector == connector]
            wall = [r.wall_s for r in mine]
            cpu = [r.cpu_s for r in mine]
            lines.append(f"| {_label(tree)} | {connector} | {len(mine)} | {min(wall):.3f} | "
                         f"{statistics.median(wall):.3f} | {max(wall):.3f} | {min(cpu):.3f} | "
                         f"{statistics.median(cpu):.3f} | {max(cpu):.3f} | {sum(r.commits_added for r in mine)} |")
    return "\n".join(lines) + "\n"


def _label(tree: Path) -> str:
    try:
        head = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head = "?"
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return f"`{tree.name}` ({head}{' + uncommitted changes' if dirty else ''})"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    say = progress()
    connectors = args.connectors.split(",")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cdc-startup-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chmod(workdir, 0o755)
    servers: list[LocalPostgres | LocalMariaDB] = []
    env = child_env()
    try:
        sources: list[Source] = []
        for connector in connectors:
            make = postgres_source if connector == "postgres" else mariadb_source
            sources.append(make(workdir, args.tables, say, servers))
        for tree in args.tree:  # the first run snapshots; the second writes bytecode and warms the caches
            for source in sources:
                say(f"priming {source.connector} with {tree}")
                cold_start(tree, source, env)
                cold_start(tree, source, env)
        load_before = _load()
        say(f"measuring {args.runs} cold starts per connector and tree; load average {load_before}")
        runs: list[Run] = []
        for i in range(args.runs):
            for tree in args.tree:
                for source in sources:
                    runs.append(cold_start(tree, source, env))
            say(f"round {i + 1}/{args.runs} done")
        load_after = _load()
        snapshots: list[SnapshotRun] = []
        if args.snapshot_rows > 0:
            pg = next((srv for srv in servers if isinstance(srv, LocalPostgres)), None)
            if pg is None:
                raise SystemExit("--snapshot-rows needs the postgres connector")
            db = create_database(pg, "snapshot")
            say(f"loading {args.snapshot_rows:,} rows for the cold snapshot runs")
            insert_rows(db, args.snapshot_rows, tx_rows=args.snapshot_rows)
            settle(db)
            for i in range(args.snapshot_runs):
                for tree in args.tree:
                    snapshots.append(snapshot_cold(tree, db, len(snapshots), workdir, env))
                    if snapshots[-1].rows != args.snapshot_rows:
                        raise SystemExit(f"the snapshot with {tree} committed {snapshots[-1].rows} rows, "
                                         f"not {args.snapshot_rows}")
                say(f"snapshot round {i + 1}/{args.snapshot_runs} done; load average {_load()}")
            load_after = _load()
    finally:
        for server in servers:
            server.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    markdown = ("## Start-up: `capture --until-idle` with nothing to capture, cold process starts\n\n"
                + summary_table(runs, args.tree, connectors)
                + f"\nLoad average (1, 5, 15 min) before: {load_before}; after: {load_after}. Wall: process start "
                "to exit; CPU: the process's user + system time.\n")
    if snapshots:
        markdown += ("\n## Snapshot from a cold process start (`capture --until-idle`, fresh slot and bronze)\n\n"
                     + snapshot_table(snapshots, args.tree, args.snapshot_rows)
                     + f"\nLoad average after: {load_after}.\n")
    print("\n" + markdown)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"startup_bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "load_before": load_before,
                                "load_after": load_after, "runs": [asdict(r) for r in runs],
                                "snapshots": [asdict(r) for r in snapshots],
                                "markdown": markdown}, indent=1))
    say(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
