"""``spark-submit`` / Databricks entrypoint for the silver tables.

    spark-submit --jars <delta jars> --py-files cdc_lakehouse-*.whl jobs/silver_job.py \\
        -c pipeline.yaml --once --engine spark
    spark-submit ... jobs/silver_job.py -c pipeline.yaml --engine spark --stream [--trigger available-now]

Parses arguments, loads the pipeline file and calls `pipelines.silver_runner.run_silver`
(incremental runner) or, with ``--stream``, `pipelines.silver_stream.run_streams` (Structured
Streaming). Under ``spark-submit`` or on Databricks pass ``--engine spark`` so the job uses the
Spark it was given: under ``spark-submit`` the session is built from spark-submit's settings
(``--master``, ``--jars``, ``--conf``) plus the Delta extension and UTC, never a local master
of its own; on Databricks the active session is used as is. On serverless compute (a Spark
Connect session given by the platform) pass ``--engine connect`` without ``--url``: the job
uses that session (`pipelines.engine.platform_connect_session`). The file's ``engine:`` is used
otherwise. Exit code 0 when every table applied, 1 when one failed or the engine did not start,
2 when the pipeline file is invalid (errors: the message, no traceback). Source passwords are not
needed: the job never connects to a source.

SIGTERM and SIGINT stop the job as they stop ``cdc-lakehouse silver`` (`pipelines.shutdown`): the
table in flight finishes and the rest of the pass is left for the next run (``--stream``: each
query finishes its micro-batch in flight), then exit 0; a second signal aborts (exit 130). The
handlers act in the job's Python process: under ``spark-submit`` the JVM that launched it has its
own shutdown hooks (they stop the SparkContext), so the signal must reach the Python process.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pyspark.sql import SparkSession

import pipelines
from pipelines.bronze_names import bronze_table_names
from pipelines.engine import EngineSpec, classic_conf, platform_connect_session
from pipelines.engine_start import EngineError
from pipelines.shutdown import stop_on_signals
from pipelines.silver_runner import run_silver
from pipelines.silver_stream import TRIGGER_CHOICES, Trigger, run_streams, stream_refusal, stream_trigger
from pipelines.validation import ConfigError, load_validated

EXIT_FAILURE, EXIT_CONFIG, EXIT_INTERRUPTED = 1, 2, 130


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The job's command line."""
    parser = argparse.ArgumentParser(prog="silver_job", description="Build the silver tables of a pipeline.")
    parser.add_argument("-c", "--config", required=True, help="the pipeline YAML file")
    parser.add_argument("--once", action="store_true", help="one pass over everything new, then exit")
    parser.add_argument("--engine", choices=["sail", "spark", "connect"], default=None,
                        help="override the file's engine kind (use 'spark' under spark-submit/Databricks)")
    parser.add_argument("--url", default=None,
                        help="Spark Connect URL for --engine connect (without it: the session the platform "
                             "gives the job, e.g. Databricks serverless)")
    parser.add_argument("--stream", action="store_true", help="run as Structured Streaming queries")
    parser.add_argument("--trigger", choices=TRIGGER_CHOICES, default=None,
                        help="with --stream: available-now (the default with --once) or processing-time")
    parser.add_argument("--interval", type=float, default=None, help="with --stream: processing-time interval (s)")
    parser.add_argument("--checkpoints", default=None, help="with --stream: checkpoint folder (one per table)")
    return parser.parse_args(argv)


def submitted_session(engine: EngineSpec) -> SparkSession | None:
    """Under ``spark-submit`` with a classic engine: the session from spark-submit's settings, with
    Delta Lake and the engine's conf (see module doc); None when not launched by spark-submit."""
    if engine.kind != "spark" or "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    builder = SparkSession.Builder()
    for key, value in classic_conf(engine, delta_pip=True).items():  # no jars, no master: spark-submit's
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _say(line: str) -> None:
    print(line, flush=True)  # as it happens, also when stdout is a file or a pipe (a scheduler's log)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the silver tables of a pipeline file; 0 if every table applied (or a first signal stopped the
    job), 2 if the file is invalid, 130 if a second signal aborted it."""
    args = parse_args(argv)
    try:
        return _run(args)
    except ConfigError as exc:  # found once running, e.g. a table whose topic matches no source
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except EngineError as exc:  # the engine did not start or cannot be reached (`pipelines.engine_start`)
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:  # a second SIGTERM/SIGINT (`pipelines.shutdown`), or Ctrl-C before the handlers
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(args: argparse.Namespace) -> int:
    print(f"silver_job: cdc-lakehouse from {os.path.dirname(os.path.dirname(pipelines.__file__))}", flush=True)
    try:
        cfg = load_validated(args.config, secrets=False, connectors=False).config
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    engine = cfg.engine
    platform = None
    if args.engine == "connect" and args.url is None:
        platform = platform_connect_session()
        if platform is None:
            print("error: --engine connect without --url runs on the Spark Connect session the platform gives the "
                  "job (Databricks serverless, or SPARK_REMOTE), and there is none; pass --url sc://host:port",
                  file=sys.stderr)
            return EXIT_CONFIG
        # no URL to validate: the session exists already (run_silver/run_streams use it as given)
        engine = EngineSpec.model_construct(kind="connect", url=None, conf=dict(cfg.engine.conf))
    elif args.engine is not None:
        engine = EngineSpec(kind=args.engine, url=args.url, conf=dict(cfg.engine.conf))
    sources = cfg.topic_prefixes()
    trigger: Trigger = "available_now"
    if args.stream:
        refusal = stream_refusal(engine, cfg.silver_options)
        try:
            trigger = stream_trigger(args.trigger, once=args.once)
        except ConfigError as exc:
            refusal = refusal or str(exc)
        if refusal is not None:
            print(f"error: {refusal}", file=sys.stderr)
            return EXIT_CONFIG
    spark = platform or submitted_session(engine)  # borrowed by the drivers' session factory, not stopped by them
    names = bronze_table_names(cfg)
    with stop_on_signals() as stop:  # SIGTERM/Ctrl-C: the table or micro-batch in flight ends, then the job
        if args.stream:
            interval = cfg.silver_options.interval_seconds if args.interval is None else args.interval
            streamed = run_streams(root=cfg.lakehouse.root, engine=engine, tables=cfg.silver,
                                   options=cfg.silver_options, sources=sources, trigger=trigger,
                                   interval_seconds=interval, checkpoint_root=args.checkpoints, progress=_say,
                                   stop=stop, spark=spark, bronze_names=names)
            return 0 if streamed.ok else 1
        result = run_silver(root=cfg.lakehouse.root, engine=engine, tables=cfg.silver, options=cfg.silver_options,
                            sources=sources, once=args.once, progress=_say,
                            storage_options=cfg.lakehouse.storage_options or None, stop=stop, spark=spark,
                            bronze_names=names)
    return 0 if result.ok else 1


if __name__ == "__main__":  # spark-submit runs this file; wheel tasks call main() instead
    from pipelines.process_exit import exit_process

    exit_process(main())
