"""``cdc-lakehouse signal``: send a Debezium signal to a source (its signal table, or its signal file).

The signal is built as a typed value (`cdc_sources.common.signals`) and checked by the same
parser capture uses before it is written, so a signal the command accepts is one capture acts on.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Callable, Mapping

import orjson

from cdc_sources.common.signals import (
    AdditionalCondition,
    ExecuteSnapshot,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalAction,
    SignalError,
    SnapshotKind,
    StopSnapshot,
    parse_collection,
    parse_signal,
    signal_data,
)
from cdc_sources.spi import ConfigError, ConfigProblem, Connector
from cdc_sources.spi.operations import SignalSender

__all__ = ["ACTIONS", "add_signal_parser", "build_signal", "send"]

ACTIONS = ("execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log")


def add_signal_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                      common: argparse.ArgumentParser) -> None:
    """Add ``signal`` to the CLI's subcommands."""
    text = ("send a signal to a source: start a blocking snapshot, start, stop, pause or resume an incremental "
            "snapshot, or log a message")
    cmd = sub.add_parser("signal", parents=[common], help=text, description=text + (
        ". Written to the source's signal table (signal.data.collection) when its source channel is enabled, "
        "else appended to its signal.file."))
    cmd.add_argument("-c", "--config", required=True, help="pipeline YAML file")
    cmd.add_argument("--source", required=True, help="the source to signal")
    cmd.add_argument("action", choices=ACTIONS, help="what to ask for")
    cmd.add_argument("--tables", nargs="+", metavar="TABLE",
                     help="schema.table names (SQL Server and Oracle: database.schema.table; a part with a dot or "
                          "space in double quotes); execute-snapshot, stop-snapshot")
    cmd.add_argument("--type", choices=[k.value for k in SnapshotKind], default="incremental",
                     help="the snapshot kind (default incremental)")
    cmd.add_argument("--filter", metavar="CONDITION",
                     help="execute-snapshot: a WHERE condition limiting the rows of every table given (a blocking "
                          "snapshot also takes a full SELECT)")
    cmd.add_argument("--surrogate-key", metavar="COLUMN",
                     help="execute-snapshot: chunk by this column instead of the primary key")
    cmd.add_argument("--message", help="log: the message to log")
    cmd.add_argument("--id", dest="signal_id", help="the signal id (default: a new UUID)")


def _problem(key: str, message: str) -> ConfigError:
    return ConfigError([ConfigProblem(key, message)])


def build_signal(args: argparse.Namespace) -> Signal:
    """The signal the arguments ask for.

    Raises:
        ConfigError: arguments that do not fit the action (exit 2).
    """
    try:
        tables = tuple(parse_collection(t) for t in args.tables or ())
    except ValueError as exc:
        raise _problem("--tables", str(exc)) from None
    kind = SnapshotKind(args.type)
    action: SignalAction
    if args.action == "execute-snapshot":
        if not tables:
            raise _problem("--tables", "execute-snapshot needs at least one table")
        conditions = tuple(AdditionalCondition(t, args.filter) for t in tables) if args.filter else ()
        action = ExecuteSnapshot(tables, kind, conditions, args.surrogate_key)
    elif args.action == "stop-snapshot":
        action = StopSnapshot(kind, tables)
    elif args.action == "log":
        if not args.message:
            raise _problem("--message", "log needs a message")
        action = LogMessage(args.message)
    else:
        action = PauseSnapshot() if args.action == "pause-snapshot" else ResumeSnapshot()
    for name in ("filter", "surrogate_key"):
        if getattr(args, name) and args.action != "execute-snapshot":
            raise _problem(f"--{name.replace('_', '-')}", "only applies to execute-snapshot")
    return Signal(args.signal_id or str(uuid.uuid4()), action)


def send(signal: Signal, source: str, connectors: Mapping[str, Connector], say: Callable[[str], None]) -> int:
    """Write ``signal`` through the source's channel; 0 once written."""
    connector = connectors.get(source)
    if connector is None:
        raise _problem("--source", f"no source named {source!r} in the pipeline")
    if not isinstance(connector, SignalSender):
        raise _problem("--source", f"source {source!r}: its connector takes no signals yet")
    data = signal_data(signal.action)
    text = None if data is None else orjson.dumps(data).decode()
    try:
        parse_signal(signal.id, signal.kind.value, text, where="the command line")  # what capture will read
    except SignalError as exc:
        raise _problem(signal.kind.value, str(exc)) from None
    where = connector.send_signal(signal.id, signal.kind.value, text)
    say(f"signal {signal.id} ({signal.kind.value}) written to {where} of source {source}")
    return 0
