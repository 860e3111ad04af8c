"""Soak benchmark (not a test): ``cdc-lakehouse run`` under a steady load; memory must stay flat.

Run ``python -m bench.soak_bench`` (``--help`` lists the options, ``bench/README.md`` explains
every number). Pieces, each a process of its own:

1. a private PostgreSQL (`pipelines.local_postgres.LocalPostgres`), database ``soak`` with
   ``--tables`` tables ``t1..tN (id bigint PRIMARY KEY, rev bigint, payload text, updated_at
   timestamptz)``, ``--keys`` rows each before the capture starts;
2. ``cdc-lakehouse run -c FILE`` (capture and silver on embedded Sail in one process), as a
   user runs it;
3. the writer (`bench._soak_writer`): ``--rate`` changes/s for ``--minutes`` (20% inserts, 70%
   updates, 10% deletes) in transactions of ``--tx-changes``, round robin over the tables;
4. the sampler (this process): every ``--sample-seconds`` the RSS of the ``run`` process tree
   (psutil) and, per table, the bronze-to-silver lag read with delta-rs: events (bronze's
   highest ``seq`` minus the silver progress ``last_seq``) and seconds (age of the oldest bronze
   data file holding rows silver has not applied; 0 when caught up).

After the writer stops, the bench waits for silver to catch up and checks that every silver
table equals its source table (``id, rev, payload``, read from PostgreSQL). The results table
(RSS after warm-up: min/max/growth, lag percentiles, achieved rate) and a verdict are printed as
markdown and written, with every sample, to ``bench/results/soak_bench-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil
import psycopg
import pyarrow as pa
from deltalake import DeltaTable

from bench.cli import RESULTS_DIR, progress
from bench.measure import Say
from bench.ours import REPO_ROOT, BenchRunError, child_env
from bronze.schema import topic_path
from pipelines.local_postgres import LocalPostgres

SOURCE, DB = "soak", "soak"
GROWTH_TARGET = 0.10
BUSY_LOAD = 2.5
DDL = "CREATE TABLE public.{t} (id bigint PRIMARY KEY, rev bigint NOT NULL, payload text, updated_at timestamptz)"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.soak_bench", description=__doc__.split("\n", 1)[0])
    p.add_argument("--minutes", type=float, default=30.0, help="how long the writer writes (warm-up included)")
    p.add_argument("--rate", type=float, default=1000.0, help="changes per second the writer commits")
    p.add_argument("--tables", type=int, default=4, help="source tables (one silver table each)")
    p.add_argument("--warmup-minutes", type=float, default=None,
                   help="samples before this are warm-up, not judged (default: a sixth of --minutes, at most 5)")
    p.add_argument("--keys", type=int, default=10_000, help="rows per source table before the capture starts")
    p.add_argument("--tx-changes", type=int, default=10, help="changes per source transaction")
    p.add_argument("--sample-seconds", type=float, default=5.0, help="how often RSS and lag are sampled")
    p.add_argument("--silver-interval", type=float, default=10.0, help="silver_options.interval_seconds")
    p.add_argument("--commit-interval-ms", type=int, default=1000, help="the capture's commit_interval_ms")
    p.add_argument("--catch-up", type=float, default=300.0,
                   help="seconds to wait for silver to equal the source after the writer stops")
    p.add_argument("--command", choices=("run", "capture"), default="run",
                   help="what to soak: `cdc-lakehouse run` (capture and silver) or `capture` alone (no silver: "
                        "no lag, no final check)")
    p.add_argument("--sail-server", choices=("auto", "process", "embedded"), default=None,
                   help="engine.server: where the Sail server runs (default: the pipeline default, auto)")
    p.add_argument("--server-memory-mb", type=int, default=None,
                   help="engine.server_memory_mb: restart the Sail server process between passes above this")
    p.add_argument("--auto-compact-min-files", default=None,
                   help="maintenance.auto_compact_min_files: a number, or `null` for no automatic compaction "
                        "(default: the pipeline default)")
    p.add_argument("--label", default="", help="a note stored with the results (e.g. the commit measured)")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (server, lakehouse, logs)")
    args = p.parse_args(argv)
    if args.warmup_minutes is None:
        args.warmup_minutes = min(5.0, args.minutes / 6)
    if args.tables < 1 or args.rate <= 0 or args.minutes <= 0 or args.warmup_minutes >= args.minutes:
        p.error("--tables, --rate and --minutes must be positive and --warmup-minutes below --minutes")
    return args


def _pipeline(root: Path, port: int, tables: list[str], a: argparse.Namespace) -> str:
    include = ",".join(f"public.{t}" for t in tables)
    silver = "".join(f"  - table: {t}\n    source: {SOURCE}.public.{t}\n" for t in tables)
    return (f'pipeline: soak_bench\nlakehouse: {{root: "{root}"}}\n'
            f"sources:\n  - name: {SOURCE}\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {port}, database: {DB}, user: postgres}}\n"
            f"    options: {{slot.name: soak_slot, snapshot.mode: initial, table.include.list: '{include}'}}\n"
            f"    capture: {{commit_interval_ms: {a.commit_interval_ms}}}\n"
            f"silver_options: {{interval_seconds: {a.silver_interval:g}}}\n"
            f"{_maintenance(a)}{_engine(a)}silver:\n{silver}")


def _maintenance(a: argparse.Namespace) -> str:
    given = a.auto_compact_min_files
    return "" if given is None else f"maintenance: {{auto_compact_min_files: {given}}}\n"


def _engine(a: argparse.Namespace) -> str:
    keys = {"server": a.sail_server, "server_memory_mb": a.server_memory_mb}
    given = ", ".join(f"{k}: {v}" for k, v in keys.items() if v is not None)
    return f"engine: {{kind: sail, {given}}}\n" if given else ""


def tree_rss(pid: int) -> tuple[int, int, int]:
    """RSS in bytes of process ``pid`` and all its descendants, how many processes that is, and the
    RSS of ``pid`` alone (the rest is the Sail server's process when it runs in a child)."""
    root = psutil.Process(pid)
    procs = [root, *root.children(recursive=True)]
    total = own = 0
    for proc in procs:
        try:
            rss = proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
        total += rss
        own = rss if proc is root else own
    return total, len(procs), own


@dataclass
class TableLag:
    """How far one silver table is behind its bronze table (read with delta-rs)."""

    bronze_path: str
    progress_path: str
    bronze: DeltaTable | None = None

    def measure(self, now: float) -> tuple[int, float] | None:
        """(events behind, seconds behind), or None before both tables exist."""
        try:
            if self.bronze is None:
                self.bronze = DeltaTable(self.bronze_path)
            else:
                self.bronze.update_incremental()
            done = DeltaTable(self.progress_path).to_pyarrow_table(columns=["last_seq"]).column(0).to_pylist()
        except Exception:  # not created yet
            return None
        if not done:
            return None
        last_seq = max(done)
        adds = pa.table(self.bronze.get_add_actions(flatten=True))
        mtime = adds.column("modification_time")
        if pa.types.is_timestamp(mtime.type):  # milliseconds since the epoch either way
            mtime = mtime.cast(pa.timestamp("ms")).cast(pa.int64())
        top, oldest = last_seq, None
        for mx, ms in zip(adds.column("max.seq").to_pylist(), mtime.to_pylist(), strict=True):
            if mx is None or mx <= last_seq:
                continue
            top = max(top, int(mx))
            oldest = ms / 1000 if oldest is None else min(oldest, ms / 1000)
        return top - last_seq, 0.0 if oldest is None else max(0.0, now - oldest)


@dataclass(eq=False)
class Sampler(threading.Thread):
    """Samples the run's RSS and every table's lag every ``interval`` seconds."""

    pid: int
    lags: dict[str, TableLag]
    interval: float
    say: Say
    samples: list[dict[str, Any]] = field(default_factory=list)
    stop_event: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, daemon=True)

    def run(self) -> None:
        started = time.monotonic()
        last_say = 0.0
        while not self.stop_event.wait(self.interval):
            try:
                rss, procs, own = tree_rss(self.pid)
            except psutil.NoSuchProcess:
                return
            now = time.time()
            per_table = {t: lag.measure(now) for t, lag in self.lags.items()}
            known = [v for v in per_table.values() if v is not None]
            elapsed, load = time.monotonic() - started, os.getloadavg()[0]
            events = sum(v[0] for v in known) if known else None
            lag_s = max(v[1] for v in known) if known else None
            self.samples.append({"t": now, "elapsed_s": elapsed, "rss_mb": rss / 2**20, "procs": procs,
                                 "rss_run_mb": own / 2**20,
                                 "lag_events": events, "lag_s": lag_s, "tables_known": len(known), "load": load})
            if elapsed - last_say >= 60:
                last_say = elapsed
                lag = "n/a" if lag_s is None else f"{events:,} events / {lag_s:.1f}s"
                self.say(f"  RSS {rss / 2**20:,.0f} MB ({procs} processes), lag {lag}, load average {load:.1f}")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _slope_per_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) points, per minute."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    den = sum((p[0] - mx) ** 2 for p in points)
    return 0.0 if den == 0 else 60 * sum((p[0] - mx) * (p[1] - my) for p in points) / den


def analyse(samples: list[dict[str, Any]], start: float, warmup_s: float, end: float) -> dict[str, Any]:
    """RSS after warm-up and lag over the writing window ``[start + warmup_s, end]`` (wall times)."""
    window = [s for s in samples if start + warmup_s <= s["t"] <= end]
    if not window:
        return {"samples": 0}
    rss = [s["rss_mb"] for s in window]
    lags = [s["lag_s"] for s in window if s["lag_s"] is not None]
    events = [s["lag_events"] for s in window if s["lag_events"] is not None]
    third = max(1, len(window) // 3)
    first = [s["lag_s"] for s in window[:third] if s["lag_s"] is not None]
    last = [s["lag_s"] for s in window[-third:] if s["lag_s"] is not None]
    out: dict[str, Any] = {
        "samples": len(window), "rss_first_mb": rss[0], "rss_last_mb": rss[-1], "rss_min_mb": min(rss),
        "rss_max_mb": max(rss), "rss_growth": (max(rss) - min(rss)) / min(rss),
        "rss_first_to_last": (rss[-1] - rss[0]) / rss[0],
        "rss_slope_mb_per_min": _slope_per_min([(s["t"] - start, s["rss_mb"]) for s in window]),
        "rss_run_slope_mb_per_min": _slope_per_min([(s["t"] - start, s["rss_run_mb"]) for s in window]),
        "rss_run_first_mb": window[0]["rss_run_mb"], "rss_run_last_mb": window[-1]["rss_run_mb"],
        "load_max": max(s["load"] for s in window), "load_mean": sum(s["load"] for s in window) / len(window),
    }
    if lags:
        out.update({"lag_p50_s": _percentile(lags, 0.5), "lag_p95_s": _percentile(lags, 0.95), "lag_max_s": max(lags),
                    "lag_events_p50": _percentile(events, 0.5), "lag_events_p95": _percentile(events, 0.95),
                    "lag_events_max": max(events), "lag_first_third_max_s": max(first or [0.0]),
                    "lag_last_third_max_s": max(last or [0.0])})
    return out


def lag_bounded(r: dict[str, Any], silver_interval: float) -> bool:
    """Lag is bounded when the last third of the window's worst lag is no more than 1.5x the first
    third's, or within two silver intervals plus 10 s (a run that kept up all along)."""
    if "lag_max_s" not in r:
        return False
    floor = 2 * silver_interval + 10
    return bool(r["lag_last_third_max_s"] <= max(1.5 * r["lag_first_third_max_s"], floor))


RESTART_LINE = re.compile(r"silver: the Sail server process restarted in ([0-9.]+)s")
PASS_LINE = re.compile(r"silver (\S+): (\d+) events .* in ([0-9.]+)s$")


def silver_passes(log_text: str) -> list[dict[str, Any]]:
    """The applied increments the run logged: table, events and seconds, in order."""
    out = []
    for line in log_text.splitlines():
        m = PASS_LINE.search(line)
        if m:
            out.append({"table": m.group(1), "events": int(m.group(2)), "seconds": float(m.group(3))})
    return out


def compare(server: LocalPostgres, root: Path, tables: list[str]) -> dict[str, Any]:
    """Per table: source rows, silver rows, and rows that differ (``id, rev, payload``)."""
    out: dict[str, Any] = {}
    with psycopg.connect(server.dsn(DB)) as conn:
        for t in tables:
            source = {tuple(r) for r in conn.execute(f"SELECT id, rev, payload FROM public.{t}")}
            try:
                cols = DeltaTable(str(root / "silver" / t)).to_pyarrow_table(columns=["id", "rev", "payload"])
                silver = set(zip(*(cols.column(c).to_pylist() for c in ("id", "rev", "payload")), strict=True))
            except Exception as exc:
                out[t] = {"source_rows": len(source), "error": f"{type(exc).__name__}: {exc}"}
                continue
            out[t] = {"source_rows": len(source), "silver_rows": len(silver), "differ": len(source ^ silver)}
    return out


def _equal(check: dict[str, Any]) -> bool:
    return all(v.get("differ") == 0 for v in check.values())


def _wait(what: str, cond: Any, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            raise BenchRunError(f"waiting for {what}: cdc-lakehouse run exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise BenchRunError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(1)


def run_soak(a: argparse.Namespace, workdir: Path, say: Say) -> dict[str, Any]:
    tables = [f"t{i}" for i in range(1, a.tables + 1)]
    root, logs = workdir / "lake", workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    server = LocalPostgres(workdir / "pg")
    say(f"starting a private PostgreSQL on port {server.port}")
    server.start()
    run: subprocess.Popen[bytes] | None = None
    sampler: Sampler | None = None
    out: dict[str, Any] = {"command": a.command, "label": a.label, "rate": a.rate, "tables": a.tables,
                           "minutes": a.minutes, "warmup_minutes": a.warmup_minutes, "keys": a.keys,
                           "tx_changes": a.tx_changes,
                           "silver_interval_s": a.silver_interval, "commit_interval_ms": a.commit_interval_ms}
    run_log = open(logs / "run.log", "wb")  # noqa: SIM115 - closed in finally
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB}")
        with psycopg.connect(server.dsn(DB), autocommit=True) as conn:
            for t in tables:
                conn.execute(DDL.format(t=t))
                conn.execute(f"INSERT INTO public.{t} SELECT g, 0, 'initial ' || g, now() "
                             "FROM generate_series(1, %s) g", (a.keys,))
            conn.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES")
        config = workdir / "pipeline.yaml"
        config.write_text(_pipeline(root, server.port, tables, a))
        env = child_env()
        run = subprocess.Popen([sys.executable, "-m", "pipelines.cli", a.command, "-c", str(config)], cwd=REPO_ROOT,
                               env=env, stdout=run_log, stderr=subprocess.STDOUT)
        where = "silver" if a.command == "run" else "bronze"
        say(f"cdc-lakehouse {a.command} started (pid {run.pid}); waiting for the snapshot of {a.tables} table(s) "
            f"in {where}")
        initial = row_counts([root / "silver" / t if a.command == "run" else
                              Path(topic_path(str(root), f"{SOURCE}.public.{t}")) for t in tables])
        _wait(f"the snapshot in {where}", lambda: all(n >= a.keys for n in initial()), 900, run)
        progress_dir = root / "silver" / "_cdc" / "progress"
        lags = {t: TableLag(topic_path(str(root), f"{SOURCE}.public.{t}"), str(progress_dir / t))
                for t in tables} if a.command == "run" else {}
        sampler = Sampler(run.pid, lags, a.sample_seconds, say)
        sampler.start()
        seconds = a.minutes * 60
        say(f"{where} holds the snapshot; writing {a.rate:,.0f} changes/s over {a.tables} table(s) for "
            f"{a.minutes:g} min ({a.warmup_minutes:g} min warm-up; load average {os.getloadavg()[0]:.1f})")
        t0 = time.time()
        writer = subprocess.Popen([sys.executable, "-m", "bench._soak_writer", server.dsn(DB),
                                   json.dumps({"rate": a.rate, "seconds": seconds, "tx_changes": a.tx_changes,
                                               "tables": tables, "keys": a.keys})],
                                  cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        result_line = ""
        for line in writer.stdout:
            if line.startswith("PROGRESS "):
                p = json.loads(line[len("PROGRESS "):])
                if int(p["seconds"]) % 60 < 10:
                    say(f"  writer: {p['changes']:,} changes in {p['seconds']:.0f}s ({p['rate']:,.0f}/s)")
            elif line.startswith("RESULT "):
                result_line = line[len("RESULT "):]
            if run.poll() is not None:
                writer.kill()
                raise BenchRunError(f"cdc-lakehouse run exited with {run.returncode} while the writer ran")
        t_end = time.time()
        if writer.wait() != 0 or not result_line:
            raise BenchRunError(f"the writer failed: {writer.stderr.read()[-2000:] if writer.stderr else ''}")
        out["writer"] = json.loads(result_line)
        say(f"writer done: {out['writer']['changes']:,} changes at {out['writer']['rate']:,.0f}/s")
        if a.command == "run":
            _check(out, server, root, tables, a.catch_up, run, t_end, say)
        sampler.stop_event.set()
        sampler.join()
        out["samples"] = sampler.samples
        out["results"] = analyse(sampler.samples, t0, a.warmup_minutes * 60, t_end)
    finally:
        if sampler is not None:
            sampler.stop_event.set()
        if run is not None and run.poll() is None:
            run.send_signal(signal.SIGINT)
            try:
                run.wait(90)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait(30)
        run_log.close()
        server.stop()
    text = (logs / "run.log").read_text(errors="replace")
    out["passes"] = silver_passes(text)
    out["auto_compactions"] = sum(1 for line in text.splitlines() if "auto-compaction: " in line)
    out["server_restarts_s"] = [float(m.group(1)) for m in RESTART_LINE.finditer(text)]
    return out


def _check(out: dict[str, Any], server: LocalPostgres, root: Path, tables: list[str], catch_up: float,
           run: subprocess.Popen[bytes], t_end: float, say: Say) -> None:
    """Wait for silver to equal the source (at most ``catch_up`` seconds); record the outcome in ``out``."""
    say("waiting for silver to equal the source")
    deadline = time.monotonic() + catch_up
    check = compare(server, root, tables)
    while not _equal(check) and time.monotonic() < deadline and run.poll() is None:
        time.sleep(5)
        check = compare(server, root, tables)
    out["caught_up_after_s"] = time.time() - t_end
    out["check"], out["silver_equals_source"] = check, _equal(check)
    say(f"silver {'equals' if out['silver_equals_source'] else 'DOES NOT equal'} the source "
        f"{out['caught_up_after_s']:.0f}s after the last write: {check}")



def row_counts(paths: list[Path]) -> Any:
    """A function giving every Delta table's row count (0 while it does not exist)."""
    def counts() -> list[int]:
        out = []
        for path in paths:
            try:
                out.append(int(DeltaTable(str(path)).to_pyarrow_dataset().count_rows()))
            except Exception:
                out.append(0)
        return out
    return counts


def _pass_trend(passes: list[dict[str, Any]]) -> str:
    """Mean seconds per applied increment in the first and last fifth of the run."""
    if len(passes) < 10:
        return "n/a"
    k = max(1, len(passes) // 5)
    head = sum(p["seconds"] for p in passes[:k]) / k
    tail = sum(p["seconds"] for p in passes[-k:]) / k
    return f"{head:.2f} -> {tail:.2f}"


def render(s: dict[str, Any]) -> str:
    r = s.get("results", {})
    if not r.get("samples"):
        return "### Soak: no samples after warm-up\n"
    growth_ok = r["rss_growth"] <= GROWTH_TARGET
    silver = s.get("command", "run") == "run"
    bounded = lag_bounded(r, s["silver_interval_s"]) if silver else True
    busy = f"{r['load_max']:.1f}" + (" ⚠" if r["load_max"] > BUSY_LOAD else "")
    w = s.get("writer", {})
    verdict = ("PASS" if growth_ok and bounded and (s.get("silver_equals_source") or not silver) else "FAIL")
    label = f" — {s['label']}" if s.get("label") else ""
    lag = (f"{r['lag_p50_s']:.1f} / {r['lag_p95_s']:.1f} / {r['lag_max_s']:.1f}"
           if "lag_max_s" in r else "n/a")
    events = (f"{r['lag_events_p50']:,.0f} / {r['lag_events_p95']:,.0f} / {r['lag_events_max']:,.0f}"
              if "lag_events_max" in r else "n/a")
    equal = ((f"{'yes' if s.get('silver_equals_source') else 'NO'} ({s.get('caught_up_after_s', 0):.0f}s after the "
              "last write)") if silver else "n/a")
    tail = ((f"lag {'bounded' if bounded else 'GROWING'} (worst in the last third of the window "
             f"{r.get('lag_last_third_max_s', float('nan')):.1f}s, first third "
             f"{r.get('lag_first_third_max_s', float('nan')):.1f}s); silver "
             f"{'equals' if s.get('silver_equals_source') else 'does NOT equal'} the source.")
            if silver else "`capture` alone: no silver, no lag.")
    restarts = s.get("server_restarts_s", [])
    restart = (f"{len(restarts)} ({sum(restarts) / len(restarts):.1f}s each)" if restarts else "0")
    split = (f"| {r.get('rss_run_first_mb', 0):,.0f} -> {r.get('rss_run_last_mb', 0):,.0f} "
             f"| {r.get('rss_run_slope_mb_per_min', 0):+.2f} | {restart} ")
    return (f"### Soak of `cdc-lakehouse {s.get('command', 'run')}`: {s['tables']} tables, "
            f"{s['rate']:,.0f} changes/s asked, {s['minutes']:g} min "
            f"({s['warmup_minutes']:g} min warm-up){label}\n\n"
            "| Changes/s achieved | RSS after warm-up min / max MB | growth (max-min)/min | first -> last MB "
            "| slope MB/min | lag p50 / p95 / max s | lag events p50 / p95 / max "
            "| s per increment (first -> last fifth) "
            "| silver = source | Load avg (mean / max) | run process alone first -> last MB | its slope MB/min "
            "| Sail server restarts |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n"
            f"| {w.get('rate', 0):,.0f} | {r['rss_min_mb']:,.0f} / {r['rss_max_mb']:,.0f} "
            f"| {100 * r['rss_growth']:.1f}% "
            f"| {r['rss_first_mb']:,.0f} -> {r['rss_last_mb']:,.0f} | {r['rss_slope_mb_per_min']:+.2f} | {lag} "
            f"| {events} | {_pass_trend(s.get('passes', []))} "
            f"| {equal} | {r['load_mean']:.1f} / {busy} {split}|\n\n"
            f"Verdict: **{verdict}**: RSS growth after warm-up {100 * r['rss_growth']:.1f}% "
            f"({'<=' if growth_ok else '>'} {100 * GROWTH_TARGET:.0f}%); {tail}\n")


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    say = progress()
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="cdc-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chmod(workdir, 0o755)  # the server may run as another user
    a.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        result = run_soak(a, workdir, say)
    except BenchRunError as exc:
        print(f"soak_bench: {exc} (logs: {workdir / 'logs'})", file=sys.stderr)
        a.keep = True  # the logs say why
        return 1
    finally:
        if not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    markdown = render(result)
    print("\n" + markdown)
    path = a.results_dir / f"soak_bench-{stamp}.json"
    path.write_text(json.dumps({"args": {k: str(v) for k, v in vars(a).items()}, "result": result,
                                "markdown": markdown, "cpus": os.cpu_count()}, indent=1, default=str))
    say(f"results written to {path}")
    r = result.get("results", {})
    silver = a.command == "run"
    ok = r.get("samples") and r["rss_growth"] <= GROWTH_TARGET and (
        not silver or (lag_bounded(r, a.silver_interval) and result.get("silver_equals_source")))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
