"""``cdc-lakehouse bundle spark-submit|databricks|pipelines``: the command-line options and the command.

The pipeline file is validated without its secrets and without the connectors' drivers (the
bundle connects to nothing); it is then copied into the bundle as is.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from pipelines.bundles.databricks import Compute, DatabricksOptions, write_databricks_bundle
from pipelines.bundles.declarative import Apply, DeclarativeOptions, DeclarativeTarget, write_declarative_bundle
from pipelines.bundles.packed_env import PythonEnv, default_constraints
from pipelines.bundles.spark_submit import StreamTrigger, write_spark_submit_bundle
from pipelines.validation import load_validated

__all__ = ["add_bundle_parser", "run_bundle"]

_DEFAULTS = DatabricksOptions()


def add_bundle_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                      common: argparse.ArgumentParser) -> None:
    """Add ``bundle`` and its kinds to the CLI's subcommands."""
    bundle = sub.add_parser("bundle", parents=[common], help="write a deployment bundle for a pipeline",
                            description="Write a folder to deploy a pipeline where Spark runs; connects to "
                                        "nothing and needs no secrets.")
    kinds = bundle.add_subparsers(dest="bundle_kind", required=True, metavar="KIND")

    def kind(name: str, help_: str) -> argparse.ArgumentParser:
        cmd = kinds.add_parser(name, parents=[common], help=help_, description=help_)
        cmd.add_argument("-c", "--config", required=True, help="pipeline YAML file")
        cmd.add_argument("-o", "--output", required=True, type=Path, help="the bundle folder (new or empty)")
        cmd.add_argument("--wheel", type=Path, default=None,
                         help="ship this cdc-lakehouse wheel (default: build it from the sources)")
        return cmd

    submit = kind("spark-submit", "a folder with the wheel, the pipeline file, entrypoints and spark-submit scripts")
    submit.add_argument("--trigger", choices=[t.value for t in StreamTrigger], default="processing-time",
                        help="the silver streaming job's trigger (default: processing-time, runs until stopped)")
    submit.add_argument("--python-env", choices=[p.value for p in PythonEnv], default=PythonEnv.PY_FILES.value,
                        help="py-files: ship the wheel with --py-files (its requirements installed on the nodes); "
                             "archive: ship a packed virtualenv (the wheel and its pinned requirements) with "
                             "--archives (default: %(default)s)")
    submit.add_argument("--constraints", type=Path, default=None, metavar="FILE",
                        help="with --python-env archive: the pip constraints file pinning the environment "
                             "(default: the source tree's constraints.txt)")
    dbx = kind("databricks", "a Databricks Asset Bundle (databricks.yml, a capture job and a silver job)")
    dbx.add_argument("--compute", choices=[c.value for c in Compute], default=_DEFAULTS.compute.value,
                     help="job-cluster: job clusters, silver as Structured Streaming; serverless: serverless "
                          "environments, silver as the scheduled incremental runner, a job cluster only for a job "
                          "that needs the pipeline file's secrets (default: %(default)s)")
    dbx.add_argument("--environment-version", default=_DEFAULTS.environment_version, metavar="VERSION",
                     help="with --compute serverless: the serverless environment version (default: %(default)s)")
    dbx.add_argument("--trigger", choices=[t.value for t in StreamTrigger], default=_DEFAULTS.trigger.value,
                     help="silver: available-now on a schedule (default) or processing-time in a continuous job")
    dbx.add_argument("--schedule", default=_DEFAULTS.silver_schedule, metavar="CRON",
                     help="the silver job's Quartz cron schedule with available-now (default: %(default)s)")
    dbx.add_argument("--checkpoint-volume", default=None, metavar="CATALOG.SCHEMA.VOLUME",
                     help="put the stream checkpoints in this Unity Catalog volume "
                          "(default: <lakehouse root>/silver/_checkpoints)")
    dbx.add_argument("--spark-version", default=_DEFAULTS.spark_version, help="job clusters' runtime")
    dbx.add_argument("--node-type", default=_DEFAULTS.node_type_id, help="job clusters' node type")
    dbx.add_argument("--workers", type=int, default=_DEFAULTS.num_workers, help="the silver cluster's workers")
    dbx.add_argument("--secret-scope", default=_DEFAULTS.secret_scope,
                     help="secret scope holding the pipeline file's ${VAR} values (job clusters)")
    sdp = kind("pipelines", "a declarative-pipelines project (spark-pipeline.yml, one pyspark.pipelines source "
                            "per silver table) for Spark Declarative Pipelines or Databricks Lakeflow")
    sdp.add_argument("--target", choices=[t.value for t in DeclarativeTarget], default="open-source",
                     help="open-source Spark (AUTO CDC as SCD type 1) or databricks (Lakeflow: also SCD type 2 "
                          "and truncates) (default: %(default)s)")
    sdp.add_argument("--apply", choices=[a.value for a in Apply], default="auto-cdc",
                     help="auto-cdc: an AUTO CDC flow per table; feed: write the decoded change feed as an "
                          "append-only table <table>_changes (default: %(default)s)")
    sdp.add_argument("--storage", default=None, metavar="URI",
                     help="the pipeline's storage (default: <lakehouse root>/silver/_pipelines/<pipeline>)")


def run_bundle(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Write the bundle ``args`` ask for; 0 when written."""
    loaded = load_validated(args.config, secrets=False, connectors=False)
    if args.wheel is None:
        say("building the cdc-lakehouse wheel from its sources...")
    if args.bundle_kind == "spark-submit":
        python_env = PythonEnv(args.python_env)
        if python_env is PythonEnv.ARCHIVE:
            say("building and packing the job environment (pip, venv-pack)...")
        made = write_spark_submit_bundle(loaded.config, loaded.path, args.output, wheel=args.wheel,
                                         trigger=StreamTrigger(args.trigger), python_env=python_env,
                                         constraints=args.constraints or default_constraints())
        shipped = "env.tar.gz" if made.python_env is PythonEnv.ARCHIVE else made.wheel
        say(f"{args.output}: spark-submit bundle of {loaded.config.pipeline} ({shipped}); see its README.md")
        return 0
    if args.bundle_kind == "pipelines":
        flows = write_declarative_bundle(loaded.config, loaded.path, args.output, wheel=args.wheel,
                                         options=DeclarativeOptions(DeclarativeTarget(args.target), Apply(args.apply),
                                                                    args.storage))
        say(f"{args.output}: declarative pipeline {loaded.config.pipeline} ({', '.join(f.table for f in flows)}); "
            f"install its wheel, then: cd {args.output} && spark-pipelines run")
        return 0
    options = DatabricksOptions(compute=Compute(args.compute), environment_version=args.environment_version,
                                trigger=StreamTrigger(args.trigger),
                                silver_schedule=args.schedule, checkpoint_volume=args.checkpoint_volume,
                                spark_version=args.spark_version, node_type_id=args.node_type,
                                num_workers=args.workers, secret_scope=args.secret_scope)
    jobs = write_databricks_bundle(loaded.config, loaded.path, args.output, wheel=args.wheel, options=options)
    say(f"{args.output}: Databricks Asset Bundle of {loaded.config.pipeline}, jobs {', '.join(jobs)}; "
        f"deploy with: cd {args.output} && databricks bundle deploy")
    return 0
