"""Silver benchmark (not a test): silver --once vs a hand-written PySpark job per engine; streaming latency.

Run ``python -m bench.silver_bench`` (``--help`` lists the options, ``bench/README.md`` explains
every number; ``--quick`` is a small smoke run). Engines (``--engines sail,spark``): embedded
Sail and classic Spark + Delta Lake; every timing runs in a child process of its own
(`bench._silver_child`), since pyspark cannot hold both kinds of session in one process.

Scenarios (``--scenarios``):

* ``apply``: 1,000,000 bronze changes over 250,000 keys (inserts, then updates and deletes),
  applied by ``silver --once`` (`pipelines.silver_runner.run_silver`) and by a hand-written
  job (window dedupe by bronze key taking the latest seq, parse the survivors, one MERGE);
* ``increment``: a silver table of 5,000,000 rows, then an increment of 10,000 changes:
  time and bronze files read;
* ``latency`` (classic Spark only: Sail has no Structured Streaming): a private PostgreSQL, a
  running capture, a writer at 2,000 changes/s and the streaming driver with a 5 s trigger;
  the latency from source commit to the row visible in silver (`bench.silver_latency`).

The results table is printed as markdown and written, with every raw number, to
``bench/results/silver_bench-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cli import add_output_options, run_bench
from bench.measure import RunContext, Say
from bench.ours import REPO_ROOT, BenchRunError, child_env
from bench.silver_data import append_increment, register_schema, write_bronze

SCENARIOS = ("apply", "increment", "latency")
ENGINES = ("sail", "spark")
ENGINE_NAMES = {"sail": "Sail 0.7.2 (embedded, Spark Connect)", "spark": "classic Spark 4.2 + Delta 4.4"}
RATIO_TARGET = 2.0
LATENCY_TARGET_S = 15.0
BUSY_LOAD = 2.5
QUICK = {"changes": 20_000, "keys": 5_000, "big_rows": 50_000, "big_files": 2, "delta": 1_000, "repeat": 1,
         "runs": 1, "warmup": 5.0, "duration": 15.0, "latency_keys": 2_000, "catch_up": 60.0,
         "scenarios": "apply,increment"}
"""``--quick``: a smoke check (options given explicitly win; latency only when named)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.silver_bench", description=__doc__.split("\n", 1)[0])
    p.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of sail,spark")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated subset of {','.join(SCENARIOS)}")
    p.add_argument("--quick", action="store_true",
                   help="small sizes, one run each, apply and increment only unless --scenarios names latency")
    p.add_argument("--changes", type=int, default=1_000_000, help="apply: bronze changes")
    p.add_argument("--keys", type=int, default=250_000, help="apply: distinct keys")
    p.add_argument("--big-rows", type=int, default=5_000_000, help="increment: rows of the silver table")
    p.add_argument("--big-files", type=int, default=10, help="increment: bronze commits of the big table")
    p.add_argument("--delta", type=int, default=10_000, help="increment: changes in the increment")
    p.add_argument("--repeat", type=int, default=2,
                   help="apply: child processes per side (alternating hand-written and framework); best reported")
    p.add_argument("--runs", type=int, default=2,
                   help="apply: jobs per child (the first cold, the others warm, same session)")
    p.add_argument("--shuffle-partitions", type=int, default=4, help="spark.sql.shuffle.partitions, both sides")
    p.add_argument("--classic-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="an extra setting of the classic Spark sessions (repeatable), e.g. to try a Delta option")
    p.add_argument("--no-merge-variant", action="store_true",
                   help="apply: skip the framework run into an existing empty table")
    p.add_argument("--steps", action="store_true",
                   help="apply: also run silver --once once more per engine with its steps timed (profile)")
    p.add_argument("--rate", type=float, default=2000.0, help="latency: changes per second the writer commits")
    p.add_argument("--tx-changes", type=int, default=10, help="latency: changes per source transaction")
    p.add_argument("--latency-keys", type=int, default=20_000, help="latency: rows in the source table at start")
    p.add_argument("--warmup", type=float, default=20.0, help="latency: seconds of writing before measuring")
    p.add_argument("--duration", type=float, default=75.0, help="latency: seconds of steady state measured")
    p.add_argument("--trigger", type=float, default=5.0, help="latency: processing-time trigger, seconds")
    p.add_argument("--catch-up", type=float, default=180.0,
                   help="latency: seconds to wait after the writer for the last change to reach silver")
    p.add_argument("--commit-interval-ms", type=int, default=500, help="latency: capture commit_interval_ms")
    add_output_options(p, kept="bronze, silver, server, child logs")
    args = p.parse_args(argv)
    for name, valid in (("engines", ENGINES), ("scenarios", SCENARIOS)):
        bad = set(getattr(args, name).split(",")) - set(valid)
        if bad:
            p.error(f"unknown {name} {sorted(bad)}; valid: {', '.join(valid)}")
    if args.quick:
        given = {a.split("=", 1)[0] for a in (argv if argv is not None else sys.argv[1:])}
        for key, value in QUICK.items():
            if f"--{key.replace('_', '-')}" not in given:
                setattr(args, key, value)
        args.no_merge_variant = True
    return args


@dataclass
class SilverContext(RunContext):
    """The run's settings plus the PostgreSQL server the latency scenario uses (started lazily)."""

    args: argparse.Namespace = field(default_factory=argparse.Namespace)
    server: Any = None


def classic_conf(args: argparse.Namespace) -> dict[str, str]:
    """``--classic-conf KEY=VALUE`` settings as a dict."""
    return dict(kv.split("=", 1) for kv in args.classic_conf)


def load_avg() -> float:
    return os.getloadavg()[0]


def run_child(ctx: SilverContext, job: str, engine: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one `bench._silver_child` job; its result with the load average before and after."""
    log = ctx.workdir / "logs" / f"{job}-{engine}-{time.strftime('%H%M%S')}-{os.getpid()}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached: imports cost the same for every run
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
        env.pop(key, None)
    env.setdefault("RUST_LOG", "error")
    before = load_avg()
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.run([sys.executable, "-m", "bench._silver_child", job, engine,
                               json.dumps({"shuffle_partitions": ctx.args.shuffle_partitions,
                                           "classic_conf": classic_conf(ctx.args), **params})],
                              cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    text = log.read_text(errors="replace")
    lines = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise BenchRunError(f"{job} on {engine} failed (exit {proc.returncode}); log {log}:\n{text[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT "):])
    result.update(process_s=time.monotonic() - started, load_before=before, load_after=load_avg(), log=str(log))
    return result


def _fmt_runs(runs: list[float]) -> str:
    return ", ".join(f"{r:.2f}" for r in runs)


def _say_child(ctx: SilverContext, label: str, r: dict[str, Any]) -> None:
    ctx.say(f"    {label}: session start {r['session_start_s']:.1f}s, jobs [{_fmt_runs(r.get('runs_s', []))}] s "
            f"(load {r['load_before']:.1f} -> {r['load_after']:.1f})")


def scenario_apply(ctx: SilverContext, engines: list[str]) -> dict[str, Any]:
    a = ctx.args
    root = ctx.workdir / "s1"
    ctx.say(f"scenario apply: writing {a.changes:,} bronze changes over {a.keys:,} keys (delta-rs)")
    started = time.monotonic()
    write_bronze(str(root), a.changes, a.keys)
    load_s = time.monotonic() - started
    jobs = ["hand", "framework"] + ([] if a.no_merge_variant else ["framework_merge"])
    per_engine: dict[str, Any] = {}
    for engine in engines:
        ctx.say(f"  engine {engine}: {a.repeat} child process(es) per side, {a.runs} job(s) each")
        runs: dict[str, list[dict[str, Any]]] = {j: [] for j in jobs}
        for i in range(a.repeat):  # alternate, so machine noise hits every side
            for job in jobs:
                r = run_child(ctx, job, engine, {"root": str(root), "runs": a.runs})
                runs[job].append(r)
                _say_child(ctx, f"{i + 1}/{a.repeat} {job}", r)
        per_engine[engine] = summarize_apply(runs, a.changes)
        if a.steps:
            r = run_child(ctx, "framework_steps", engine, {"root": str(root), "runs": a.runs})
            _say_child(ctx, "framework, steps timed", r)
            per_engine[engine]["steps"] = r
    return {"key": "apply", "title": f"{a.changes:,} changes over {a.keys:,} keys", "changes": a.changes,
            "keys": a.keys, "load_s": load_s, "engines": per_engine}


def summarize_apply(runs: dict[str, list[dict[str, Any]]], changes: int) -> dict[str, Any]:
    """Best cold (first job of a process) and best warm (later jobs) time of every side."""
    out: dict[str, Any] = {"children": runs}
    for job, rs in runs.items():
        cold = [r["runs_s"][0] for r in rs]
        warm = [t for r in rs for t in r["runs_s"][1:]]
        out[job] = {"cold_s": min(cold), "warm_s": min(warm) if warm else None,
                    "session_start_s": min(r["session_start_s"] for r in rs),
                    "changes_per_s_cold": changes / min(cold),
                    "load_max": max(max(r["load_before"], r["load_after"]) for r in rs)}
    hand, fw = out["hand"], out["framework"]
    out["ratio_cold"] = hand["cold_s"] / fw["cold_s"]
    out["ratio_warm"] = hand["warm_s"] / fw["warm_s"] if hand["warm_s"] and fw["warm_s"] else None
    if "framework_merge" in out:
        m = out["framework_merge"]
        out["ratio_merge_cold"] = hand["cold_s"] / m["cold_s"]
        out["ratio_merge_warm"] = hand["warm_s"] / m["warm_s"] if hand["warm_s"] and m["warm_s"] else None
    return out


def scenario_increment(ctx: SilverContext, engines: list[str]) -> dict[str, Any]:
    a = ctx.args
    root = str(ctx.workdir / "s2")
    register_schema(root)
    ctx.say(f"scenario increment: {a.big_rows:,} bronze inserts in {a.big_files} commits (written by Sail)")
    gen = run_child(ctx, "big_bronze", "sail", {"root": root, "rows": a.big_rows, "files": a.big_files})
    per_engine: dict[str, Any] = {}
    for engine in engines:
        ctx.say(f"  engine {engine}: initial load of {a.big_rows:,} rows")
        load = run_child(ctx, "load", engine, {"root": root})
        _say_child(ctx, "load", load)
        per_engine[engine] = {"load": load}
    ctx.say(f"  appending an increment of {a.delta:,} changes (delta-rs)")
    append_increment(root, a.big_rows, a.delta)
    for engine in engines:
        ctx.say(f"  engine {engine}: increment of {a.delta:,} changes")
        inc = run_child(ctx, "increment", engine, {"root": root})
        _say_child(ctx, "increment", inc)
        per_engine[engine]["increment"] = inc
    return {"key": "increment", "title": f"{a.delta:,} changes into a {a.big_rows:,}-row table",
            "big_rows": a.big_rows, "delta": a.delta, "bronze_write_s": gen.get("cold_s"), "engines": per_engine}


def run_scenarios(ctx: SilverContext) -> list[dict[str, Any]]:
    a = ctx.args
    engines = a.engines.split(",")
    chosen = a.scenarios.split(",")
    ctx.say(f"cores {os.cpu_count()}, load average {load_avg():.2f}; engines {engines}; scenarios {chosen}")
    out = []
    if "apply" in chosen:
        out.append(scenario_apply(ctx, engines))
    if "increment" in chosen:
        out.append(scenario_increment(ctx, engines))
    if "latency" in chosen:
        from bench.silver_latency import scenario_latency

        out.append(scenario_latency(ctx))
    return out


def _f(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"


def _x(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:,.2f}x"


def _busy(load: float) -> str:
    return f"{load:.1f}" + (" ⚠" if load > BUSY_LOAD else "")


def render(scenarios: list[dict[str, Any]]) -> str:
    parts = ["## Silver benchmark\n"]
    for s in scenarios:
        if s["key"] == "apply":
            parts.append(_apply_table(s))
        elif s["key"] == "increment":
            parts.append(_increment_table(s))
        elif s["key"] == "latency":
            from bench.silver_latency import latency_table

            parts.append(latency_table(s))
    parts.append(f"⚠: 1-minute load average above {BUSY_LOAD} during the measurement (2 cores, shared): "
                 "numbers taken that busy are flagged, not trusted as absolute rates.\n")
    return "\n".join(parts)


def _apply_table(s: dict[str, Any]) -> str:
    head = (f"### Scenario 1: `silver --once` vs hand-written, {s['title']}\n\n"
            "| Engine | Hand-written s (cold / warm) | Framework s (cold / warm) | Hand ÷ framework (cold / warm) "
            "| Framework into existing empty table s (cold / warm) | Session start s (hand / framework) "
            f"| Framework changes/s (cold) | ≥ {RATIO_TARGET:g}x met | Load avg (max) |\n"
            "|---|---:|---:|---:|---:|---:|---:|---|---:|\n")
    rows = []
    for engine, e in s["engines"].items():
        h, f = e["hand"], e["framework"]
        m = e.get("framework_merge")
        merge = f"{_f(m['cold_s'])} / {_f(m['warm_s'])}" if m else "not run"
        met_cold = e["ratio_cold"] >= RATIO_TARGET
        met_warm = e["ratio_warm"] is not None and e["ratio_warm"] >= RATIO_TARGET
        met = "yes" if met_cold and (met_warm or e["ratio_warm"] is None) else (
            "cold only" if met_cold else "warm only" if met_warm else "no")
        load = max(h["load_max"], f["load_max"], m["load_max"] if m else 0.0)
        rows.append(f"| {ENGINE_NAMES[engine]} | {_f(h['cold_s'])} / {_f(h['warm_s'])} "
                    f"| {_f(f['cold_s'])} / {_f(f['warm_s'])} | {_x(e['ratio_cold'])} / {_x(e['ratio_warm'])} "
                    f"| {merge} | {_f(h['session_start_s'], 1)} / {_f(f['session_start_s'], 1)} "
                    f"| {f['changes_per_s_cold']:,.0f} | {met} | {_busy(load)} |")
    note = ("\nEach side runs in fresh child processes (best of the children): cold = the first job of the "
            "process (session already started, its start-up given apart), warm = the same job again in the "
            "same session. Classic Spark: local[2], driver memory 4g, UI off; spark.sql.shuffle.partitions "
            "the same on both sides and engines.\n")
    return head + "\n".join(rows) + "\n" + note + _steps_table(s)


def _steps_table(s: dict[str, Any]) -> str:
    """Where the framework's time goes (``--steps``): seconds per step, cold / warm, per engine."""
    timed = {e: v["steps"] for e, v in s["engines"].items() if "steps" in v}
    if not timed:
        return ""
    labels: list[str] = []
    for r in timed.values():
        for run in r["steps_s"]:
            labels += [k for k in run if k not in labels]
    head = ("\n#### Where `silver --once` spends its time (s, cold / warm; steps nest: the staging write "
            "runs the dedupe and the decoding)\n\n| Step | " + " | ".join(ENGINE_NAMES[e] for e in timed) + " |\n|---|"
            + "---:|" * len(timed) + "\n")
    rows = []
    for label in [*labels, "total"]:
        cells = []
        for r in timed.values():
            vals = [r["runs_s"][i] if label == "total" else run.get(label, 0.0)
                    for i, run in enumerate(r["steps_s"])]
            cells.append(" / ".join(f"{v:.2f}" for v in vals))
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    jobs = "; ".join(f"{ENGINE_NAMES[e]}: " + ", ".join(f"{c['jobs']} jobs / {c['stages']} stages / {c['tasks']} tasks"
                                                       for c in r.get("spark_jobs", []))
                     for e, r in timed.items() if r.get("spark_jobs"))
    return head + "\n".join(rows) + "\n" + (f"\nSpark jobs per run (classic): {jobs}.\n" if jobs else "")


def _increment_table(s: dict[str, Any]) -> str:
    head = (f"### Scenario 2: {s['title']}\n\n"
            "| Engine | Initial load s | Increment s | Bronze files read | Events | Session start s (load / increment) "
            "| Load avg (max) |\n|---|---:|---:|---:|---:|---:|---:|\n")
    rows = []
    for engine, e in s["engines"].items():
        load, inc = e["load"], e["increment"]
        busy = max(load["load_before"], load["load_after"], inc["load_before"], inc["load_after"])
        rows.append(f"| {ENGINE_NAMES[engine]} | {_f(load['runs_s'][0])} | {_f(inc['runs_s'][0])} "
                    f"| {inc['files_read']} of {inc['files_total']} | {inc['events']:,} "
                    f"| {_f(load['session_start_s'], 1)} / {_f(inc['session_start_s'], 1)} | {_busy(busy)} |")
    return head + "\n".join(rows) + "\n\nTimes exclude session start-up (given apart); one cold run each.\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def start(workdir: Path, say: Say) -> tuple[SilverContext, Callable[[], object], dict[str, Any]]:
        os.chmod(workdir, 0o755)
        ctx = SilverContext(workdir, args.results_dir, say, args=args)
        info: dict[str, Any] = {"cores": os.cpu_count(), "load_at_start": os.getloadavg()}

        def stop() -> None:
            if ctx.server is not None:
                ctx.server.stop()

        return ctx, stop, info

    return run_bench(args, name="silver_bench", start=start, scenarios=run_scenarios, render=render)


if __name__ == "__main__":
    sys.exit(main())
