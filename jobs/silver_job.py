"""``spark-submit`` / Databricks entrypoint for the silver tables.

    spark-submit jobs/silver_job.py -c pipeline.yaml --once --engine spark

Parses arguments, loads the pipeline file and calls `pipelines.silver_runner.run_silver`.
Under ``spark-submit`` or on Databricks pass ``--engine spark`` so the job uses the session it
was given (the file's ``engine:`` is used otherwise). Exit code 0 when every table applied, 1
when one failed, 2 (with the message, no traceback) when the pipeline file is invalid. Source
passwords are not needed: the job never connects to a source.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from pipelines.validation import ConfigError, load_validated


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The job's command line."""
    parser = argparse.ArgumentParser(prog="silver_job", description="Build the silver tables of a pipeline.")
    parser.add_argument("-c", "--config", required=True, help="the pipeline YAML file")
    parser.add_argument("--once", action="store_true", help="one pass over everything new, then exit")
    parser.add_argument("--engine", choices=["sail", "spark", "connect"], default=None,
                        help="override the file's engine kind (use 'spark' under spark-submit/Databricks)")
    parser.add_argument("--url", default=None, help="Spark Connect URL for --engine connect")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the silver tables of a pipeline file; 0 if every table applied, 2 if the file is invalid."""
    args = parse_args(argv)
    try:
        cfg = load_validated(args.config, secrets=False, connectors=False).config
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    engine = cfg.engine
    if args.engine is not None:
        engine = EngineSpec(kind=args.engine, url=args.url, conf=dict(cfg.engine.conf))
    result = run_silver(root=cfg.lakehouse.root, engine=engine, tables=cfg.silver, options=cfg.silver_options,
                        sources=cfg.topic_prefixes(), once=args.once, progress=print,
                        storage_options=cfg.lakehouse.storage_options or None)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
