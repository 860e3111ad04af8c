"""The CLI's commands: each parses nothing, loads the config and calls one pipelines function.

Each command imports what it runs when it runs, so that an install with only some extras
(`pipelines.extras`) runs the commands it has: ``validate`` and ``capture`` need the
connectors' extras and never import Spark; ``status`` needs no extra; ``silver`` needs the
engine's extra only; ``run`` needs both; ``demo`` the ``demo`` extra. A missing one is
reported as `MissingDependencyError` (exit 2), naming the extra.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import orjson

from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.config import PipelineConfig
from pipelines.extras import require, require_engine, require_quality
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
    from pipelines.capture import run_capture, summarize
    from pipelines.metrics import CaptureMetrics, serving
    from pipelines.shutdown import stop_on_signals

    loaded = load_validated(args.config)
    mask_secrets(loaded.config)
    # a capture-only process needs no pandas; not in `run`, whose Spark session needs it, and only
    # here, before any thread starts (the probe briefly hides pandas from every thread's imports)
    from pipelines.arrow_pandas import skip_pandas_probe

    skip_pandas_probe()
    metrics = CaptureMetrics()
    with serving(metrics, args.metrics_port, say, args.metrics_host), stop_on_signals() as stop:
        results = run_capture(loaded.config, until_idle=args.until_idle, sources=args.source, progress=say,
                              file=str(loaded.path), stop=stop, metrics=metrics)
    for name, result in results.items():
        say(summarize(name, result))
    return 0


def _silver(args: argparse.Namespace, say: Say) -> int:
    # silver reads bronze: no connector (nor its driver, nor its secrets) is needed
    loaded = load_validated(args.config, secrets=False, connectors=False)
    require_quality(loaded.config.silver)
    if args.stream:
        return _silver_stream(args, loaded.config, say)
    stream_only = [f"--{name}" for name in ("trigger", "interval", "checkpoints") if getattr(args, name) is not None]
    if stream_only:
        raise ConfigError([ConfigProblem("silver", f"{', '.join(stream_only)} only apply with --stream")])
    require_engine(loaded.config.engine)
    from pipelines.shutdown import stop_on_signals
    from pipelines.silver_commands import build_silver, silver_summary

    # --once: one summary line per table; looping: one line per table and pass as it goes
    with stop_on_signals() as stop:  # SIGTERM/Ctrl-C: the pass in flight ends, then the engine stops
        result = build_silver(loaded.config, once=args.once, progress=None if args.once else say, stop=stop)
    if args.once:
        for line in silver_summary(result):
            if " FAILED: " in line:
                print(line, file=sys.stderr, flush=True)  # an error: shown under -q too
            else:
                say(line)
    else:
        for failed in result.errors:
            print(f"silver {failed.table} FAILED: {failed.error}", file=sys.stderr, flush=True)
    return 0 if result.ok else 1


def _silver_stream(args: argparse.Namespace, config: PipelineConfig, say: Say) -> int:
    from pipelines.shutdown import stop_on_signals
    from pipelines.silver_commands import stream_silver

    with stop_on_signals() as stop:  # SIGTERM/Ctrl-C: the micro-batches in flight end, then the queries stop
        result = stream_silver(config, trigger=args.trigger, once=args.once, interval_seconds=args.interval,
                               checkpoint_root=args.checkpoints, progress=say, stop=stop)
    for table, error in result.errors.items():
        print(f"silver {table} FAILED: {error}", file=sys.stderr, flush=True)  # an error: shown under -q too
    return 0 if result.ok else 1


def _run(args: argparse.Namespace, say: Say) -> int:
    loaded = load_validated(args.config)
    mask_secrets(loaded.config)
    require_engine(loaded.config.engine)
    require_quality(loaded.config.silver)
    from pipelines.metrics import CaptureMetrics, serving
    from pipelines.shutdown import stop_on_signals
    from pipelines.silver_commands import run_continuously

    metrics = CaptureMetrics()
    with serving(metrics, args.metrics_port, say, args.metrics_host), stop_on_signals() as stop:
        return run_continuously(loaded.config, progress=say, stop=stop, metrics=metrics)


def _status(args: argparse.Namespace, say: Say) -> int:
    from pipelines.status import pipeline_status, render

    if args.lag_warn_bytes is not None and not args.source_lag:
        raise ConfigError([ConfigProblem("status", "--lag-warn-bytes only applies with --source-lag")])
    # bronze, the status files and silver progress need no password nor driver; --source-lag does
    loaded = load_validated(args.config, secrets=args.source_lag, connectors=args.source_lag)
    mask_secrets(loaded.config)
    status = pipeline_status(loaded.config, source_lag=args.source_lag, lag_warn_bytes=args.lag_warn_bytes)
    if args.json:
        print(orjson.dumps(status.to_json(), option=orjson.OPT_INDENT_2).decode(), flush=True)
    else:
        for line in render(status):
            say(line)
    return 0


def _maintain(args: argparse.Namespace, say: Say) -> int:
    from pipelines.maintenance.command import maintain_command

    loaded = load_validated(args.config, secrets=False, connectors=False)  # Delta tables only
    return maintain_command(loaded.config, args, say, file=str(loaded.path))


def mask_secrets(config: PipelineConfig) -> None:
    """Mask the sources' passwords in every log line (`pipelines.log_format`)."""
    from pipelines.log_format import register_secret

    for spec in config.sources:
        if spec.connection.password is not None:
            register_secret(spec.connection.password.get_secret_value())
        for key, value in spec.options.items():
            if "password" in key.lower() and isinstance(value, str):
                register_secret(value)


def _verify(args: argparse.Namespace, say: Say) -> int:
    from pipelines.verify.entry import verify_command

    return verify_command(args, say)


def _reset(args: argparse.Namespace, say: Say) -> int:
    from pipelines.operations import reset

    # without --to only bronze is touched: no connection, no secrets, no driver
    loaded = load_validated(args.config, secrets=args.to is not None, connectors=args.to is not None)
    reset(loaded.config, args.source, to=args.to, yes=args.yes, say=say, connectors=loaded.connectors,
          file=str(loaded.path))
    return 0


def _decommission(args: argparse.Namespace, say: Say) -> int:
    from pipelines.operations import decommission

    loaded = load_validated(args.config)
    decommission(loaded.config, args.source, yes=args.yes, say=say, connectors=loaded.connectors,
                 file=str(loaded.path))
    return 0


def _signal(args: argparse.Namespace, say: Say) -> int:
    from pipelines.signal_command import build_signal, send

    signal = build_signal(args)
    loaded = load_validated(args.config)
    return send(signal, args.source, loaded.connectors, say)


def _rebuild(args: argparse.Namespace, say: Say) -> int:
    loaded = load_validated(args.config, secrets=False, connectors=False)  # reads bronze only
    require_engine(loaded.config.engine)
    require_quality(loaded.config.silver)
    from pipelines.rebuild import rebuild

    return 0 if rebuild(loaded.config, args.table, yes=args.yes, say=say, file=str(loaded.path)) else 1


def _import_debezium(args: argparse.Namespace, say: Say) -> int:
    from pipelines.debezium_import import import_debezium

    try:
        text = Path(args.connector).read_text()
    except OSError as exc:
        raise ConfigError([ConfigProblem("", f"cannot read the file: {exc.strerror}")], file=args.connector) from None
    imported = import_debezium(text, file=args.connector, root=args.root)
    if args.output is None:
        print(imported.text, end="", flush=True)
        return 0
    Path(args.output).write_text(imported.text)
    say(f"wrote {args.output}: {len(imported.dropped)} key(s) dropped, {len(imported.notes)} to check "
        "(listed at the top of the file)")
    return 0


def _demo(args: argparse.Namespace, say: Say) -> int:
    require(("psycopg", "psycopg2", "pyspark", "pysail"), "demo")  # PostgreSQL into bronze, silver on Sail
    from pipelines.demo import run_demo

    return run_demo(args.dir, keep=args.keep, say=say)


def _bundle(args: argparse.Namespace, say: Say) -> int:
    from pipelines.bundles.command import run_bundle

    return run_bundle(args, say)


_COMMANDS: dict[str, Callable[[argparse.Namespace, Say], int]] = {
    "validate": _validate, "capture": _capture, "silver": _silver, "run": _run, "status": _status,
    "demo": _demo, "import-debezium": _import_debezium, "bundle": _bundle, "reset": _reset, "signal": _signal,
    "decommission": _decommission, "rebuild": _rebuild, "verify": _verify,
    "maintain": _maintain,
}
