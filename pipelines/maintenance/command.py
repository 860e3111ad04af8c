"""``cdc-lakehouse maintain``: checks its arguments, runs `pipelines.maintenance.run`, prints a
line per table (errors on standard error, shown under ``-q`` too)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from deltalake.exceptions import DeltaError

from cdc_sources.spi import CdcError, ConfigError, ConfigProblem
from pipelines.config import PipelineConfig
from pipelines.maintenance.run import TableReport, maintain, targets

__all__ = ["maintain_command"]


def maintain_command(config: PipelineConfig, args: argparse.Namespace, say: Callable[[str], None], *,
                     file: str) -> int:
    """Exit 0 when every table was maintained, 1 when one failed, 2 for an unknown source or table."""
    known_sources = {s.name for s in config.sources}
    problems = [ConfigProblem("--source", f"no source named {name!r} (known: {', '.join(sorted(known_sources))})")
                for name in args.source or [] if name not in known_sources]
    if problems:
        raise ConfigError(problems, file=file)
    try:
        chosen = targets(config, sources=args.source, tables=args.table)
    except (DeltaError, OSError) as exc:
        raise CdcError(f"cannot list the lakehouse's tables under {config.lakehouse.root}: "
                       f"{str(exc).splitlines()[0]}") from None
    if args.table:
        found = {t.name for t in chosen}
        missing = [n for n in args.table if n not in found]
        if missing:
            raise ConfigError([ConfigProblem("--table", f"no bronze topic or silver table named {n!r}")
                               for n in missing], file=file)
    if args.dry_run:
        say("dry run: nothing is changed")

    def show(report: TableReport) -> None:
        if report.failed is not None:
            print(report.line(args.dry_run), file=sys.stderr, flush=True)
        else:
            say(report.line(args.dry_run))

    try:
        reports = maintain(config, chosen, dry_run=args.dry_run, progress=show)
    except (DeltaError, OSError) as exc:  # reading what silver needs
        raise CdcError(f"cannot read the silver tables' progress: {str(exc).splitlines()[0]}") from None
    return 1 if any(r.failed is not None for r in reports) else 0
