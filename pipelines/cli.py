"""The ``cdc-lakehouse`` command line: a thin shell over `pipelines`.

Exit codes: 0 success, 1 runtime failure, 2 invalid configuration or usage, or an optional
dependency missing for the command (the message names the extra to install), 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from bronze.delta_allocator import configure_delta_allocator
from cdc_sources.spi import CdcError, ConfigError, MissingDependencyError
from pipelines.bundles.command import add_bundle_parser
from pipelines.signal_command import add_signal_parser
from pipelines.stream_trigger import TRIGGER_CHOICES

EXIT_OK, EXIT_FAILURE, EXIT_CONFIG, EXIT_INTERRUPTED = 0, 1, 2, 130


def _version() -> str:
    import importlib.metadata  # here: only --version needs it, and importing it slows every start

    try:
        return importlib.metadata.version("cdc-lakehouse")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``: looks the version up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _add_metrics_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--metrics-port", type=_port, default=0, metavar="PORT",
                         help="serve Prometheus metrics at /metrics and a health check at /health on this port "
                              "(0: off)")
    command.add_argument("--metrics-host", default="", metavar="ADDRESS",
                         help="the address the metrics server listens on (default: every interface; 127.0.0.1: "
                              "this machine only)")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                        help="more log output (-vv for debug)")
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="only errors")
    common.add_argument("--log-format", choices=["text", "json"], default=argparse.SUPPRESS,
                        help="log lines as text (the default) or as one JSON object each")
    p = argparse.ArgumentParser(prog="cdc-lakehouse", parents=[common], description=(
        "Change data capture into Delta Lake: capture databases into bronze, build silver tables."))
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_config(name: str, help_: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_, description=help_, parents=[common])
        cmd.add_argument("-c", "--config", required=True, help="pipeline YAML file")
        return cmd

    with_config("validate", "check a pipeline file and its connector options; connect to nothing")
    cap = with_config("capture", "capture sources into bronze (snapshot, then stream; SIGTERM/Ctrl-C: stop "
                                 "cleanly, exit 0)")
    cap.add_argument("--until-idle", action="store_true", help="return once everything available is in bronze")
    cap.add_argument("--source", action="append", help="only this source (repeatable)")
    _add_metrics_options(cap)
    sil = with_config("silver", "build silver tables from bronze (SIGTERM/Ctrl-C: stop cleanly, exit 0)")
    sil.add_argument("--once", action="store_true", help="process everything new, then return")
    sil.add_argument("--stream", action="store_true",
                     help="run as Spark Structured Streaming queries (engine kind 'spark'; not Sail)")
    sil.add_argument("--trigger", choices=TRIGGER_CHOICES, default=None,
                     help="with --stream: available-now (everything available, then return; the default with "
                          "--once) or processing-time (a micro-batch every --interval seconds; the default)")
    sil.add_argument("--interval", type=float, default=None, metavar="S",
                     help="with --stream: the processing-time interval (default: silver_options.interval_seconds)")
    sil.add_argument("--checkpoints", default=None, metavar="DIR",
                     help="with --stream: checkpoint folder, one subfolder per table "
                          "(default: <root>/silver/_checkpoints)")
    ver = with_config("verify", "prove silver tables equal their source tables, while capture and silver run "
                                "(exit 0 equal, 1 different or not verified, 2 configuration)")
    ver.add_argument("--table", action="append", help="only this silver table (repeatable)")
    ver.add_argument("--json", action="store_true", help="print the result as JSON")
    ver.add_argument("--buckets", type=int, default=64, metavar="N", help="key ranges compared per table (default 64)")
    ver.add_argument("--timeout", type=float, default=120.0, metavar="S",
                     help="longest wait for capture and silver to reach the read point (default 120)")
    ver.add_argument("--reads", type=int, default=5, metavar="N",
                     help="source reads at most per table, for keys that change during the check (default 5)")
    run = with_config("run", "capture and build silver continuously (SIGTERM/Ctrl-C: stop cleanly, exit 0)")
    _add_metrics_options(run)
    reset = with_config("reset", "forget a source's stored offsets, or rewind its streaming to a position")
    reset.add_argument("--source", required=True, help="the source to reset")
    reset.add_argument("--to", metavar="POSITION", help="rewind to this position instead: a PostgreSQL LSN "
                       "(0/1A4AA58) or a MySQL/MariaDB binlog position (binlog.000003:4)")
    reset.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    dec = with_config("decommission", "drop a source's replication slot (PostgreSQL) and refuse further captures "
                      "of it until a reset; bronze data is kept")
    dec.add_argument("--source", required=True, help="the source to decommission")
    dec.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    reb = with_config("rebuild", "drop one silver table and its progress, then build it again from bronze")
    reb.add_argument("--table", required=True, help="the silver table to rebuild")
    reb.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_signal_parser(sub, common)
    _add_status(with_config("status", "show each source's state, position, bronze tables and silver lag"))
    _add_maintain(with_config("maintain", "compact and vacuum bronze and silver tables, apply bronze retention; "
                                          "safe while capture and silver run"))
    imp = sub.add_parser("import-debezium", parents=[common],
                         help="turn a Kafka Connect connector config (JSON) into a pipeline YAML file",
                         description="Turn a Debezium connector config, as posted to the Kafka Connect REST API, "
                                     "into a pipeline YAML file; every key not carried over is listed at its top.")
    imp.add_argument("connector", help="the connector JSON file ({\"name\": ..., \"config\": {...}} or the config)")
    imp.add_argument("-o", "--output", help="write the YAML here (default: standard output)")
    imp.add_argument("--root", default="./lakehouse", help="lakehouse root written to the file")
    add_bundle_parser(sub, common)
    demo = sub.add_parser("demo", parents=[common], help="capture a throwaway local PostgreSQL into a local lakehouse",
                          description="Start a private PostgreSQL with sample data, capture it into bronze "
                                      "and build silver, printing what happens.")
    demo.add_argument("--dir", default="demo-lakehouse", help="where the lakehouse and database go")
    demo.add_argument("--keep", action="store_true", help="keep the database directory afterwards")
    return p


def _add_maintain(mnt: argparse.ArgumentParser) -> None:
    mnt.add_argument("--dry-run", action="store_true", help="show what would be done; change nothing")
    mnt.add_argument("--table", action="append", help="only this bronze topic or silver table (repeatable)")
    mnt.add_argument("--source", action="append", help="only this source's tables (repeatable)")


def _add_status(st: argparse.ArgumentParser) -> None:
    st.add_argument("--json", action="store_true", help="print JSON instead of tables")
    st.add_argument("--source-lag", action="store_true",
                    help="also connect to each source (needs its password and driver) for the WAL or binlog "
                         "bytes it keeps for the capture")
    st.add_argument("--lag-warn-bytes", type=_size, default=None, metavar="SIZE",
                    help="with --source-lag: call retained WAL/binlog a risk above this (e.g. 5GB; default: 80%% of "
                         "PostgreSQL's max_slot_wal_keep_size when set, else 10GB)")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r} (0 to 65535; 0: off)")
    return port


def _size(text: str) -> int:
    from pipelines.sizes import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _setup_logging(verbose: int, quiet: bool, log_format: str = "text") -> None:
    from pipelines.log_format import configure_logging

    level = logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    configure_logging(level, json_lines=log_format == "json")
    # the embedded Sail server logs through Rust's env_logger (RUST_LOG), read when it starts:
    # -q means errors only, its INFO/WARN lines included; its INFO lines only with -v
    if quiet:
        os.environ["RUST_LOG"] = "error"
    elif log_format == "json":  # Rust's lines are not JSON: they would break a JSON log stream
        os.environ.setdefault("RUST_LOG", "off")
    else:
        os.environ.setdefault("RUST_LOG", "debug" if verbose > 1 else "info" if verbose else "warn")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    verbose, quiet = getattr(args, "verbose", 0), getattr(args, "quiet", False)
    _setup_logging(verbose, quiet, getattr(args, "log_format", "text"))
    say = (lambda _m: None) if quiet else (lambda m: print(m, flush=True))
    configure_delta_allocator()  # before any command loads delta-rs
    try:
        from pipelines import commands

        return commands.dispatch(args, say)
    except (ConfigError, MissingDependencyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except CdcError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as exc:  # e.g. an object store refused: credentials, permissions, endpoint, bucket
        from pipelines.lease import first_line

        print(f"error: {first_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except ModuleNotFoundError as exc:  # an optional dependency imported deeper than the commands check
        from pipelines.extras import missing_dependency

        missing = missing_dependency(exc)
        if missing is None:
            raise
        print(f"error: {missing}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def run() -> NoReturn:
    """The ``cdc-lakehouse`` console command: :func:`main`, then the process ends through
    :func:`pipelines.process_exit.exit_process` (no native teardown abort after success)."""
    from pipelines.process_exit import exit_process

    exit_process(main())


def task() -> NoReturn:
    """The entry point of Databricks wheel tasks (``cdc-lakehouse-task``): :func:`main` inside the
    driver's Python, ending in ``SystemExit`` with its exit code so a failure fails the task."""
    raise SystemExit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
