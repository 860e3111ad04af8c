"""The ``verify`` command: arguments in, report out, exit code."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.validation import load_validated
from pipelines.verify.report import report_json, report_lines
from pipelines.verify.run import VerifySettings, exit_code, run_verify

__all__ = ["verify_command"]


def verify_command(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Run ``cdc-lakehouse verify`` (see `pipelines.verify.run`).

    Raises:
        ConfigError: bad arguments or pipeline file (exit 2).
    """
    problems = [ConfigProblem(f"--{name}", "must be at least 1") for name in ("buckets", "reads")
                if getattr(args, name) < 1]
    if args.timeout < 0:
        problems.append(ConfigProblem("--timeout", "must not be negative"))
    if problems:
        raise ConfigError(problems)
    loaded = load_validated(args.config)  # connects to the sources: connectors and secrets needed
    settings = VerifySettings(buckets=args.buckets, timeout_s=args.timeout, rounds=args.reads)
    progress = (lambda _line: None) if args.json else say
    reports = run_verify(loaded.config, loaded.connectors, tables=args.table, settings=settings, say=progress)
    if args.json:
        print(report_json(reports), flush=True)
    else:
        for line in report_lines(reports):
            print(line, flush=True)  # the result: shown under -q too
    return exit_code(reports)
