"""The silver bench's latency scenario: source commit to silver row visible, streaming driver, classic Spark.

Pieces, each a process of its own:

1. a private PostgreSQL (`pipelines.local_postgres.LocalPostgres`), database ``bench_latency``
   with ``items(id bigint PRIMARY KEY, rev bigint, payload text, updated_at timestamptz)``,
   ``latency_keys`` rows loaded before the capture starts;
2. the capture, as a user runs it: ``python -m pipelines.cli capture -c FILE`` (snapshot, then
   streaming, ``commit_interval_ms`` small);
3. the streaming driver (`bench._stream_child`: `silver.streaming.start_stream`, classic
   session, processing-time trigger), started once the snapshot is in bronze;
4. the writer (`bench._latency_writer`): ``rate`` changes/s in small transactions, each change a
   new ``rev`` and its commit time recorded right after COMMIT returned;
5. the poller (this process, delta-rs): every 0.2 s it checks the silver table's version; for
   each new version it reads ``id, rev`` and keeps, per key, when each ``rev`` became visible
   (the version's commit timestamp from the Delta log).

A change (key k, rev r) is visible at the first silver version where row k has ``rev >= r`` (SCD1
keeps only the latest change per key, so a change superseded inside a micro-batch is visible
when its successor is). Changes committed in the warm-up are not counted; after the writer
stops, the bench waits for the last change to become visible, then stops the stream, the
capture and the server.
"""

from __future__ import annotations

import bisect
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from deltalake import DeltaTable

from bench.ours import REPO_ROOT, BenchRunError, child_env
from bronze.schema import topic_path
from pipelines.local_postgres import LocalPostgres

SOURCE, DB = "lat", "bench_latency"
TOPIC = f"{SOURCE}.public.items"
DDL = ("CREATE TABLE public.items (id bigint PRIMARY KEY, rev bigint NOT NULL, payload text, "
       "updated_at timestamptz)")


def _env() -> dict[str, str]:
    env = child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
        env.pop(key, None)
    return env


def _pipeline(root: Path, port: int, commit_interval_ms: int) -> str:
    return (f'pipeline: latency_bench\nlakehouse: {{root: "{root}"}}\n'
            f"sources:\n  - name: {SOURCE}\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {port}, database: {DB}, user: postgres}}\n"
            '    options: {slot.name: lat_slot, snapshot.mode: initial, table.include.list: public.items,\n'
            '              skipped.operations: none}\n'
            f"    capture: {{commit_interval_ms: {commit_interval_ms}}}\n"
            f"silver:\n  - table: items\n    source: {TOPIC}\n")


def _rows(path: str) -> int:
    try:
        return int(DeltaTable(path).to_pyarrow_dataset().count_rows())
    except Exception:
        return 0


def _wait(what: str, cond: Any, timeout: float, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        for p in procs:
            if p.poll() is not None:
                raise BenchRunError(f"waiting for {what}: {p.args!r} exited with {p.returncode}")
        if time.monotonic() > deadline:
            raise BenchRunError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.5)


class SilverPoller(threading.Thread):
    """Watches the silver table's versions; per key, the (commit time, rev) of every new value."""

    def __init__(self, path: str, interval: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.path, self.interval = path, interval
        self.stop_event = threading.Event()
        self.seen: dict[int, list[tuple[int, float]]] = {}  # id -> [(rev, visible time)]
        self.versions: list[dict[str, Any]] = []
        self.current: dict[int, int] = {}
        self.error: str | None = None

    def run(self) -> None:
        table: DeltaTable | None = None
        version = -1
        while not self.stop_event.wait(self.interval):
            try:
                if table is None:
                    table = DeltaTable(self.path)
                else:
                    table.update_incremental()
                if table.version() == version:
                    continue
                self._read(table)
                version = table.version()
            except Exception as exc:  # not created yet, or a commit in flight
                if table is not None:
                    self.error = f"{type(exc).__name__}: {exc}"
                table = None if table is None else table

    def _read(self, table: DeltaTable) -> None:
        observed = time.time()
        version = table.version()
        commit_ms = table.history(1)[0].get("timestamp")
        visible = commit_ms / 1000.0 if commit_ms else observed
        data = table.to_pyarrow_table(columns=["id", "rev"]).to_pydict()
        changed = 0
        for k, r in zip(data["id"], data["rev"], strict=True):
            if self.current.get(k) != r:
                self.current[k] = r
                self.seen.setdefault(k, []).append((r, visible))
                changed += 1
        self.versions.append({"version": version, "commit_time": visible, "observed": observed,
                              "rows": len(data["id"]), "changed": changed})


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def analyse(poller: SilverPoller, writes: list[dict[str, Any]], window: tuple[float, float],
            gave_up: float) -> dict[str, Any]:
    """Latency of every change committed inside ``window`` (wall times).

    A change never seen in silver (the bench stopped waiting at ``gave_up``) counts with
    ``gave_up - commit time``, a lower bound: the percentiles are then lower bounds too.
    """
    revs = {k: [r for r, _ in v] for k, v in poller.seen.items()}
    latencies: list[float] = []
    missing = 0
    for tx in writes:
        if not window[0] <= tx["t"] < window[1]:
            continue
        for i, k in enumerate(tx["ids"]):
            r = tx["rev"] + i
            idx = bisect.bisect_left(revs.get(k, []), r)
            if idx >= len(revs.get(k, [])):
                missing += 1
                latencies.append(gave_up - tx["t"])
                continue
            latencies.append(poller.seen[k][idx][1] - tx["t"])
    span = window[1] - window[0]
    if not latencies:
        return {"changes": 0, "missing": missing}
    return {"changes": len(latencies), "visible": len(latencies) - missing, "missing": missing,
            "lower_bound": missing > 0, "changes_per_s": len(latencies) / span, "p50_s": _percentile(latencies, 0.5),
            "p95_s": _percentile(latencies, 0.95), "p99_s": _percentile(latencies, 0.99), "max_s": max(latencies),
            "min_s": min(latencies), "window_s": span}


def _stop(proc: subprocess.Popen[bytes] | None, sig: int, timeout: float) -> int | None:
    if proc is None or proc.poll() is not None:
        return None if proc is None else proc.returncode
    proc.send_signal(sig)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(30)


def scenario_latency(ctx: Any) -> dict[str, Any]:
    a = ctx.args
    work = Path(ctx.workdir) / "latency"
    work.mkdir(parents=True, exist_ok=True)
    root, logs = work / "lake", work / "logs"
    logs.mkdir(exist_ok=True)
    ctx.say(f"scenario latency: {a.rate:,.0f} changes/s in transactions of {a.tx_changes}, "
            f"{a.trigger:g}s trigger, capture commit_interval_ms {a.commit_interval_ms}")
    if ctx.server is None:
        ctx.server = LocalPostgres(Path(ctx.workdir) / "pg")
        ctx.say(f"  starting a private PostgreSQL on port {ctx.server.port}")
        ctx.server.start()
    server = ctx.server
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB}")
        conn.execute(f"CREATE DATABASE {DB}")
    with psycopg.connect(server.dsn(DB), autocommit=True) as conn:
        conn.execute(DDL)
        conn.execute("INSERT INTO public.items SELECT g, 0, 'initial ' || g, now() "
                     "FROM generate_series(1, %s) g", (a.latency_keys,))
        conn.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES")
    config = work / "pipeline.yaml"
    config.write_text(_pipeline(root, server.port, a.commit_interval_ms))
    bronze = topic_path(str(root), TOPIC)
    silver = str(root / "silver" / "items")
    stop_file = work / "stop-stream"
    capture: subprocess.Popen[bytes] | None = None
    stream: subprocess.Popen[bytes] | None = None
    poller = SilverPoller(silver)
    out: dict[str, Any] = {"key": "latency", "engine": "spark", "classic_conf": a.classic_conf,
                           "rate": a.rate, "tx_changes": a.tx_changes,
                           "trigger_s": a.trigger, "commit_interval_ms": a.commit_interval_ms,
                           "warmup_s": a.warmup, "duration_s": a.duration, "keys": a.latency_keys,
                           "title": f"{a.rate:,.0f} changes/s, {a.trigger:g}s trigger"}
    capture_log, stream_log_file = open(logs / "capture.log", "wb"), open(logs / "stream.log", "wb")  # noqa: SIM115
    try:
        capture = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "capture", "-c", str(config)],
                                   cwd=REPO_ROOT, env=_env(), stdout=capture_log, stderr=subprocess.STDOUT)
        ctx.say("  capture started; waiting for the snapshot in bronze")
        _wait("the snapshot in bronze", lambda: _rows(bronze) >= a.latency_keys, 300, [capture])
        ctx.say(f"  starting the streaming driver (classic Spark, {a.trigger:g}s trigger)")
        params = {"root": str(root), "topic": TOPIC, "source": SOURCE, "table": "items",
                  "checkpoint": str(work / "checkpoint"), "trigger": a.trigger, "stop_file": str(stop_file),
                  "shuffle_partitions": a.shuffle_partitions,
                  "classic_conf": dict(kv.split("=", 1) for kv in a.classic_conf)}
        stream = subprocess.Popen([sys.executable, "-m", "bench._stream_child", json.dumps(params)], cwd=REPO_ROOT,
                                  env=_env(), stdout=stream_log_file, stderr=subprocess.STDOUT)
        poller.start()
        _wait("the snapshot in silver", lambda: len(poller.current) >= a.latency_keys, 600, [capture, stream])
        ctx.say(f"  silver holds the snapshot; writing for {a.warmup:g}s warm-up + {a.duration:g}s measured "
                f"(load average {os.getloadavg()[0]:.1f})")
        writes_path = work / "writes.jsonl"
        seconds = a.warmup + a.duration
        t0 = time.time()
        load_before = os.getloadavg()[0]
        writer = subprocess.run([sys.executable, "-m", "bench._latency_writer", server.dsn(DB),
                                 json.dumps({"rate": a.rate, "seconds": seconds, "tx_changes": a.tx_changes,
                                             "keys": a.latency_keys}), str(writes_path)],
                                cwd=REPO_ROOT, env=_env(), capture_output=True, text=True)
        load_after_writes = os.getloadavg()[0]
        if writer.returncode != 0:
            raise BenchRunError(f"the writer failed: {writer.stderr[-2000:]}")
        writes = [json.loads(line) for line in writes_path.read_text().splitlines()]
        last = writes[-1]
        last_rev, last_id = last["rev"] + len(last["ids"]) - 1, last["ids"][-1]
        ctx.say(f"  writer done ({len(writes):,} transactions); waiting for the last change in silver")
        deadline = time.monotonic() + a.catch_up
        while time.monotonic() < deadline and poller.current.get(last_id, -1) < last_rev:
            if stream.poll() is not None or capture.poll() is not None:
                break
            time.sleep(0.5)
        window = (t0 + a.warmup, t0 + seconds)
        out["window"] = window
        out.update(analyse(poller, writes, window, time.time()))
        out["writer"] = json.loads(writer.stdout.split("RESULT ", 1)[1])
        out["load_before"], out["load_after_writes"] = load_before, load_after_writes
        out["versions"] = poller.versions
    finally:
        stop_file.touch()
        poller.stop_event.set()
        if stream is not None:
            try:
                stream.wait(180)
            except subprocess.TimeoutExpired:
                _stop(stream, signal.SIGTERM, 30)
        _stop(capture, signal.SIGINT, 60)
        capture_log.close()
        stream_log_file.close()
    code = None if stream is None else stream.returncode
    stream_log = (logs / "stream.log").read_text(errors="replace")
    results = [ln for ln in stream_log.splitlines() if ln.startswith("RESULT ")]
    if results:
        out["stream"] = json.loads(results[-1][len("RESULT "):])
        out["batch_summary"] = _batch_summary(out["stream"]["batches"], out.get("window"))
        out["apply_steps"] = _apply_steps(out["stream"].get("apply_s", []), out.get("window"))
    out["stream_exit"] = code
    ctx.say(f"  latency p50 {out.get('p50_s', float('nan')):.2f}s p95 {out.get('p95_s', float('nan')):.2f}s "
            f"max {out.get('max_s', float('nan')):.2f}s at {out.get('changes_per_s', 0):,.0f} changes/s "
            f"({out.get('missing', 0)} changes not seen)")
    return out


def _batch_summary(batches: list[dict[str, Any]], window: tuple[float, float] | None) -> dict[str, Any]:
    """Micro-batches of the measured window: how many, rows, trigger/addBatch durations."""
    import datetime as dt

    chosen = []
    for b in batches:
        when = dt.datetime.fromisoformat(b["timestamp"].replace("Z", "+00:00")).timestamp()
        if window is None or window[0] <= when < window[1]:
            chosen.append(b)
    if not chosen:
        return {"batches": 0}
    trig = [b["duration_ms"].get("triggerExecution", 0) / 1000 for b in chosen]
    add = [b["duration_ms"].get("addBatch", 0) / 1000 for b in chosen]
    rows = [b["rows"] for b in chosen]
    return {"batches": len(chosen), "rows_mean": sum(rows) / len(rows),
            "trigger_execution_mean_s": sum(trig) / len(trig), "trigger_execution_max_s": max(trig),
            "add_batch_mean_s": sum(add) / len(add), "add_batch_max_s": max(add)}


def _apply_steps(applies: list[dict[str, Any]], window: tuple[float, float] | None) -> dict[str, Any]:
    """Mean seconds per step of the applies that ended inside the window (`bench._stream_child`)."""
    chosen = [a for a in applies if isinstance(a, dict) and (window is None or window[0] <= a["at"] < window[1])]
    if not chosen:
        return {}
    steps: dict[str, float] = {}
    for a in chosen:
        for k, v in a["steps_s"].items():
            steps[k] = steps.get(k, 0.0) + v / len(chosen)
    return {"applies": len(chosen), "apply_mean_s": sum(a["apply_s"] for a in chosen) / len(chosen),
            "steps_mean_s": dict(sorted(steps.items(), key=lambda kv: -kv[1]))}


def latency_table(s: dict[str, Any]) -> str:
    """The latency scenario's markdown table."""
    target = 15.0
    load = max(s.get("load_before", 0.0), s.get("load_after_writes", 0.0))
    busy = f"{load:.1f}" + (" ⚠" if load > 2.5 else "")
    b = s.get("batch_summary", {})
    met = "no"
    if s.get("p95_s") is not None and s["p95_s"] < target:
        met = "unknown (lower bound)" if s.get("lower_bound") else "yes"

    def f(key: str) -> str:
        bound = "≥ " if s.get("lower_bound") else ""
        return "n/a" if s.get(key) is None else f"{bound}{s[key]:.2f}"

    return (f"### Streaming latency: source commit to silver row visible ({s['title']})\n\n"
            "| Engine | Changes/s achieved | Changes measured | p50 s | p95 s | max s | p95 < 15 s met "
            "| Micro-batches (mean / max trigger execution s) | Load avg (max) |\n"
            "|---|---:|---:|---:|---:|---:|---|---|---:|\n"
            f"| classic Spark 4.2 + Delta 4.4, `start_stream` | {s.get('changes_per_s', 0):,.0f} "
            f"| {s.get('changes', 0):,} ({s.get('missing', 0)} not seen) | {f('p50_s')} | {f('p95_s')} "
            f"| {f('max_s')} | {met} | {b.get('batches', 0)} ({b.get('trigger_execution_mean_s', 0):.1f} / "
            f"{b.get('trigger_execution_max_s', 0):.1f}) | {busy} |\n\n"
            f"Writer: transactions of {s['tx_changes']} changes (20% inserts, 80% updates), "
            f"{s['warmup_s']:g}s warm-up then {s['duration_s']:g}s measured; capture `commit_interval_ms` "
            f"{s['commit_interval_ms']}; visible = the commit time of the first silver version holding the change "
            "(or a later change of the same key); ≥: some changes were not visible when the bench stopped waiting, "
            "counted with the time waited (lower bounds). Sail: not run (no Structured Streaming).\n"
            + _steps_line(s.get("apply_steps") or {}))


def _steps_line(a: dict[str, Any]) -> str:
    if not a:
        return ""
    steps = ", ".join(f"{k} {v:.2f}" for k, v in a["steps_mean_s"].items())
    return (f"\nPer micro-batch in the window ({a['applies']} applies): `apply_increment` {a['apply_mean_s']:.2f} s "
            f"on average; its steps (s, nested steps overlap): {steps}.\n")
