"""Snapshot throughput of the PostgreSQL connector: one table, ``run_capture`` until idle.

Run ``python -m bench.snapshot_columnar`` (``--help`` for options). It starts a private
PostgreSQL (`pipelines.local_postgres.LocalPostgres`), loads ``public.bench_rows`` (the shape of
`bench.workload`: bigint PK, integers, text, numeric(12,2), timestamptz, boolean) with
``--rows`` rows, then runs, ``--repeat`` times, a fresh child process that captures the database
into a fresh bronze root with ``snapshot.mode=initial`` (``run_capture(until_idle=True)``: snapshot
committed to bronze, then an idle stream). Reported per run:

* wall seconds of ``run_capture`` and rows/s (rows committed to bronze / wall);
* CPU seconds of the capture process, of its copy workers (reaped children), and of the
  server's backends (the postmaster's reaped children) during the run: on a loaded machine CPU
  time is steadier than wall time;
* peak RSS of the capture process (``ru_maxrss``) and of its largest copy worker (sampled).

``--setup FILE`` executes a Python file in each child before the run (e.g. to swap in another
snapshot reader for a before/after comparison); ``--capture`` and ``--option`` change the
source's capture settings (commit sizes) and connector options.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO_ROOT = Path(__file__).resolve().parents[1]
TABLE = "bench_rows"


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def _sample_children(peak: list[int], stop: threading.Event) -> None:
    """Largest RSS of any child process (the copy workers), sampled every 50 ms.

    (``ru_maxrss`` of reaped children would report the parent's size at fork time.)
    """
    import psutil

    me = psutil.Process()
    while not stop.wait(0.05):
        for kid in me.children():
            try:
                peak[0] = max(peak[0], kid.memory_info().rss)
            except psutil.Error:
                continue


def child(config_path: str, result_path: str) -> int:
    """Run one capture (in this fresh process) and write its measurements as JSON."""
    from deltalake import DeltaTable

    from bronze.schema import topic_path
    from pipelines.capture import run_capture
    from pipelines.config import parse_pipeline

    config = json.loads(Path(config_path).read_text())
    if config.get("setup"):
        exec(compile(Path(config["setup"]).read_text(), config["setup"], "exec"), {"__name__": "__setup__"})
    pipeline = parse_pipeline(config["pipeline"], file="<bench>", env={})
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_rss = [0]
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_children, args=(worker_rss, stop), daemon=True)
    sampler.start()
    started = time.monotonic()
    results = run_capture(pipeline, until_idle=True)
    wall = time.monotonic() - started
    stop.set()
    sampler.join()
    own_after, kids_after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    (result,) = results.values()
    rows = int(DeltaTable(topic_path(config["root"], config["topic"])).to_pyarrow_dataset().count_rows())
    out = {"wall_s": wall, "rows": rows, "snapshot_rows": result.snapshot_rows, "commits": result.batches,
           "cpu_s": _cpu(own_after) - _cpu(own), "worker_cpu_s": _cpu(kids_after) - _cpu(kids),
           "peak_rss_mb": own_after.ru_maxrss / 1024, "worker_peak_rss_mb": worker_rss[0] / 2**20}
    Path(result_path).write_text(json.dumps(out))
    return 0


def _server_cpu(pid: int) -> float:
    """CPU seconds of the postmaster and its reaped children (backends that have exited)."""
    import psutil

    t = psutil.Process(pid).cpu_times()
    return float(t.user + t.system + t.children_user + t.children_system)


def _load(dsn: str, rows: int) -> None:
    import psycopg

    from bench.workload import _INSERT, TABLE_DDL

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(TABLE_DDL)
        for start in range(1, rows + 1, 250_000):
            conn.execute(_INSERT, (start, min(start + 249_999, rows)))
        conn.execute("VACUUM ANALYZE")


def _pipeline(root: Path, port: int, db: str, slot: str, args: argparse.Namespace) -> str:
    options = {"slot.name": slot, "snapshot.mode": "initial", "table.include.list": f"public.{TABLE}",
               "slot.drop.on.stop": "true", **dict(o.split("=", 1) for o in args.option)}
    settings = ", ".join(f"{k}: {v}" for k, v in (o.split("=", 1) for o in args.capture))
    capture = f"    capture: {{{settings}}}\n" if settings else ""
    return (f"pipeline: snapshot_bench\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: bench\n"
            f"    connector: postgres\n    connection: {{host: 127.0.0.1, port: {port}, database: {db}, "
            f"user: postgres}}\n{capture}    options:\n" + "".join(f'      {k}: "{v}"\n' for k, v in options.items()))


def _run_once(workdir: Path, port: int, db: str, postmaster: int, i: int, args: argparse.Namespace) -> dict[str, Any]:
    root = workdir / f"lake{i}"
    config = {"pipeline": _pipeline(root, port, db, f"bench_{i}", args), "root": str(root),
              "topic": f"bench.public.{TABLE}", "setup": args.setup}
    cfg, res = workdir / f"run{i}.json", workdir / f"result{i}.json"
    cfg.write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO_ROOT), os.environ.get("PYTHONPATH"))))}
    server_before = _server_cpu(postmaster)
    proc = subprocess.run([sys.executable, "-m", "bench.snapshot_columnar", "--child", str(cfg), str(res)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not res.exists():
        raise SystemExit(f"capture child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out: dict[str, Any] = json.loads(res.read_text())
    out["server_cpu_s"] = _server_cpu(postmaster) - server_before
    out["rows_per_s"] = out["rows"] / out["wall_s"]
    shutil.rmtree(root, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.snapshot_columnar", description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows in the snapshotted table")
    p.add_argument("--repeat", type=int, default=3, help="capture runs (each in a fresh child)")
    p.add_argument("--setup", default=None, help="Python file executed in each child before the run")
    p.add_argument("--capture", action="append", default=[], metavar="KEY=VALUE",
                   help="a capture setting of the source, e.g. commit_max_bytes=8388608 (repeatable)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a connector option, e.g. extended.headers.enabled=false (repeatable)")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(*args.child)
    from pipelines.local_postgres import LocalPostgres

    workdir = Path(tempfile.mkdtemp(prefix="cdc-snapshot-bench-"))
    os.chmod(workdir, 0o755)
    server = LocalPostgres(workdir / "pg")
    server.start()
    try:
        import psycopg

        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE snapbench")
            postmaster = int(conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
                             .fetchone()[0])
        import psutil

        postmaster = psutil.Process(postmaster).ppid()
        t = time.monotonic()
        _load(server.dsn("snapbench"), args.rows)
        print(f"loaded {args.rows:,} rows in {time.monotonic() - t:.1f}s", flush=True)
        runs = []
        for i in range(args.repeat):
            r = _run_once(workdir, server.port, "snapbench", postmaster, i, args)
            runs.append(r)
            print(f"run {i + 1}: {r['rows']:,} rows in {r['wall_s']:.2f}s = {r['rows_per_s']:,.0f} rows/s; "
                  f"CPU capture {r['cpu_s']:.2f}s + workers {r['worker_cpu_s']:.2f}s + server "
                  f"{r['server_cpu_s']:.2f}s; peak RSS {r['peak_rss_mb']:.0f} MB (worker "
                  f"{r['worker_peak_rss_mb']:.0f} MB); {r['commits']} commits", flush=True)
        best = max(runs, key=lambda r: r["rows_per_s"])
        print(json.dumps({"rows": args.rows, "best": best, "runs": runs, "load_avg": os.getloadavg()}, indent=1))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
