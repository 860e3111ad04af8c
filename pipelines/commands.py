"""The CLI's commands: each parses nothing, loads the config and calls one pipelines function."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bronze.writer import BronzeWriter
from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.capture import run_capture, summarize
from pipelines.config import PipelineConfig
from pipelines.demo import run_demo
from pipelines.silver_commands import build_silver, run_continuously, silver_summary, stream_silver
from pipelines.validation import load_validated

Say = Callable[[str], None]


def dispatch(args: argparse.Namespace, say: Say) -> int:
    handler = _COMMANDS[args.command]
    return handler(args, say)


def _validate(args: argparse.Namespace, say: Say) -> int:
    loaded = load_validated(args.config)
    cfg = loaded.config
    say(f"{loaded.path}: valid: {len(cfg.sources)} source(s), {len(cfg.silver)} silver table(s)")
    return 0


def _capture(args: argparse.Namespace, say: Say) -> int:
    loaded = load_validated(args.config)
    results = run_capture(loaded.config, until_idle=args.until_idle, sources=args.source, progress=say,
                          file=str(loaded.path))
    for name, result in results.items():
        say(summarize(name, result))
    return 0


def _silver(args: argparse.Namespace, say: Say) -> int:
    loaded = load_validated(args.config)
    if args.stream:
        return _silver_stream(args, loaded.config, say)
    stream_only = [f"--{name}" for name in ("trigger", "interval", "checkpoints") if getattr(args, name) is not None]
    if stream_only:
        raise ConfigError([ConfigProblem("silver", f"{', '.join(stream_only)} only apply with --stream")])
    result = build_silver(loaded.config, once=args.once, progress=say)
    for line in silver_summary(result):
        say(line)
    return 0 if result.ok else 1


def _silver_stream(args: argparse.Namespace, config: PipelineConfig, say: Say) -> int:
    trigger = args.trigger or ("available-now" if args.once else "processing-time")
    if args.once and trigger != "available-now":
        raise ConfigError([ConfigProblem("silver", "--once with --stream means --trigger available-now")])
    result = stream_silver(config, trigger="available_now" if trigger == "available-now" else "processing_time",
                           interval_seconds=args.interval, checkpoint_root=args.checkpoints, progress=say)
    for table, error in result.errors.items():
        say(f"silver {table} FAILED: {error}")
    return 0 if result.ok else 1


def _run(args: argparse.Namespace, say: Say) -> int:
    loaded = load_validated(args.config)
    return run_continuously(loaded.config, progress=say)


def _status(args: argparse.Namespace, say: Say) -> int:
    loaded = load_validated(args.config)
    for spec in loaded.config.sources:
        writer = BronzeWriter(loaded.config.lakehouse.root, spec.name, loaded.config.lakehouse.storage_options or None)
        stored = writer.recover()
        writer.close()
        if stored is None:
            say(f"source {spec.name}: nothing committed to bronze yet")
        else:
            state = "snapshot completed" if stored.snapshot_completed else "snapshot in progress"
            say(f"source {spec.name}: batch {stored.batch}, {state}, offset {stored.offset}")
    return 0


def _demo(args: argparse.Namespace, say: Say) -> int:
    return run_demo(args.dir, keep=args.keep, say=say)


_COMMANDS: dict[str, Callable[[argparse.Namespace, Say], int]] = {
    "validate": _validate, "capture": _capture, "silver": _silver, "run": _run, "status": _status,
    "demo": _demo,
}
