"""The source operations commands: ``reset`` (forget or rewind a source's offsets) and
``decommission`` (``rebuild`` is `pipelines.rebuild`).

Each asks for confirmation first (`confirm`) and changes a source's offsets only while holding
the source's writer lease (`pipelines.lease`), so it is refused while a capture runs.

Exactly-once across a rewind: bronze keeps, per table, the order key of its newest record (its
high-water mark); the writer drops every record at or below it. A rewind therefore re-reads
changes but stores only those a table does not have yet: no duplicates in bronze. Tables with
no mark, or a mark before the position (e.g. a table added to the include list), receive the
re-read changes. A rewind past bronze's offset skips the changes in between: they are never
captured. A reset (no position) starts over per ``snapshot.mode``: with an initial snapshot,
every key gets a new ``r`` event at the new snapshot point, later than everything before it,
so silver (which keeps the newest event per key by source position) ends equal to the source.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TextIO

from bronze.offset_control import Control, write_control
from bronze.view import BronzeView, StoredOffset
from cdc_sources.spi import CdcError, ConfigError, ConfigProblem, Connector, Fatal
from cdc_sources.spi.operations import RewindRefusedError, SourceOperations
from pipelines import lease as leases
from pipelines.config import PipelineConfig, SourceSpec

log = logging.getLogger(__name__)

Say = Callable[[str], None]


class CancelledError(CdcError, Fatal):
    """The user did not confirm; nothing was changed."""


@dataclass(frozen=True)
class Prompt:
    """Where confirmation is asked (a terminal), and how answers are read."""

    stream: TextIO
    ask: Callable[[str], str]

    @staticmethod
    def terminal() -> Prompt:
        return Prompt(sys.stdin, input)


def confirm(what: str, name: str, action: str, *, yes: bool, command: str, prompt: Prompt | None = None) -> None:
    """Ask the user to type ``name`` unless ``yes``.

    Raises:
        ConfigError: not on a terminal and no ``--yes`` (exit 2).
        CancelledError: the answer was not ``name``.
    """
    if yes:
        return
    prompt = prompt or Prompt.terminal()
    if not prompt.stream.isatty():
        raise ConfigError([ConfigProblem(command, f"{command} needs --yes when not run from a terminal")])
    try:
        answer = prompt.ask(f"{action}\nType the {what} name ({name}) to go on: ")
    except EOFError:
        answer = ""
    if answer.strip() != name:
        raise CancelledError(f"{command}: not confirmed (the answer was not {name!r}); nothing was changed")


def find_source(config: PipelineConfig, name: str, file: str | None = None) -> SourceSpec:
    """The declared source ``name``, or a ConfigError listing the declared ones."""
    for spec in config.sources:
        if spec.name == name:
            return spec
    declared = ", ".join(s.name for s in config.sources)
    raise ConfigError([ConfigProblem("sources", f"no source named {name!r} (--source); declared: {declared}")],
                      file=file)


def stored_offset(config: PipelineConfig, source: str) -> StoredOffset | None:
    """The offset the next capture of ``source`` resumes from (None: plans from scratch)."""
    return BronzeView(config.lakehouse.root, source, config.lakehouse.storage_options or None).stored_offset()


def _operations(connector: Connector | None, source: str) -> SourceOperations:
    if not isinstance(connector, SourceOperations):
        raise ConfigError([ConfigProblem("sources", f"the connector of source {source!r} has no operations")])
    return connector


def reset(config: PipelineConfig, source: str, *, to: str | None, yes: bool, say: Say,
          connectors: Mapping[str, Connector] | None = None, file: str | None = None,
          prompt: Prompt | None = None) -> None:
    """Forget the source's offsets (``to`` None) or rewind its streaming to ``to``.

    Raises:
        ConfigError: unknown source; no ``--yes`` off a terminal; a position not in the
            source's notation.
        RewindRefusedError: the source cannot serve the position, or has nothing to rewind.
        LeaseHeldError: a capture of the source is running.
    """
    spec = find_source(config, source, file)
    root, storage = config.lakehouse.root, config.lakehouse.storage_options or None
    lease = leases.acquire(root, spec.name, purpose="reset", storage_options=storage)
    try:
        stored = stored_offset(config, spec.name)
        if to is None:
            was = f"offset {stored.offset}" if stored else "no offset"
            confirm("source", spec.name, f"reset source {spec.name}: forget its stored offsets ({was}); the next "
                    "capture plans from scratch per snapshot.mode (e.g. a new initial snapshot).",
                    yes=yes, command="reset", prompt=prompt)
            batch = write_control(root, spec.name, Control.RESET, offset=None, snapshot_completed=False,
                                  storage_options=storage)
            say(f"source {spec.name}: offsets reset (batch {batch}); the next capture plans from scratch")
            return
        if stored is None or not stored.snapshot_completed:
            raise RewindRefusedError(f"source {spec.name} has not completed its initial snapshot: there is no "
                                     "streaming position to rewind; reset without --to to start over")
        ops = _operations((connectors or {}).get(spec.name), spec.name)
        try:
            rewind = ops.rewind(to, stored.offset)
        except ValueError as exc:  # PositionFormatError: a usage error
            raise ConfigError([ConfigProblem("--to", str(exc))], file=file) from None
        confirm("source", spec.name, f"rewind source {spec.name} to {rewind.description} (stored offset: "
                f"{stored.offset}); changes already in bronze are not stored twice.",
                yes=yes, command="reset", prompt=prompt)
        batch = write_control(root, spec.name, Control.REWIND, offset=rewind.offset, snapshot_completed=True,
                              storage_options=storage)
        say(f"source {spec.name}: rewound to {rewind.description} (batch {batch}); the next capture streams from "
            "there, skipping what bronze already holds")
    finally:
        lease.release()


def decommission(config: PipelineConfig, source: str, *, yes: bool, say: Say,
                 connectors: Mapping[str, Connector], file: str | None = None, prompt: Prompt | None = None) -> None:
    """Drop the source's server-side state and mark it decommissioned in bronze (data kept).

    Raises:
        ConfigError: unknown source; no ``--yes`` off a terminal.
        LeaseHeldError: a capture of the source is running.
    """
    spec = find_source(config, source, file)
    ops = _operations(connectors.get(spec.name), spec.name)
    root, storage = config.lakehouse.root, config.lakehouse.storage_options or None
    lease = leases.acquire(root, spec.name, purpose="decommission", storage_options=storage)
    try:
        confirm("source", spec.name, f"decommission source {spec.name}: drop what capture keeps on the server "
                "(PostgreSQL: the replication slot, and the publication capture created) and refuse further "
                "captures until a reset. Bronze data is kept.", yes=yes, command="decommission", prompt=prompt)
        for line in ops.decommission():
            say(f"source {spec.name}: {line}")
        stored = stored_offset(config, spec.name)
        batch = write_control(root, spec.name, Control.DECOMMISSION, offset=stored.offset if stored else None,
                              snapshot_completed=bool(stored and stored.snapshot_completed), storage_options=storage)
        say(f"source {spec.name}: decommissioned (batch {batch}); bronze data kept; capture refuses it until "
            "`cdc-lakehouse reset`")
    finally:
        lease.release()
