"""Silver from a pipeline config: one pass, or capture and silver running together."""

from __future__ import annotations

import threading
from collections.abc import Callable

from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.azure_spark import classic_root_problem, hadoop_abfs_conf, is_azure
from pipelines.bronze_names import bronze_table_names
from pipelines.capture import run_capture
from pipelines.config import PipelineConfig
from pipelines.gcs_spark import hadoop_gcs_conf, is_gcs
from pipelines.maintenance.auto import AutoCompactor
from pipelines.metrics import CaptureMetrics
from pipelines.object_store import export_for_sail, hadoop_s3a_conf, is_s3
from pipelines.sail_restart import SailServerStats
from pipelines.silver_runner import SilverRunResult, run_silver
from pipelines.silver_stream import StreamRunResult, run_streams, stream_refusal, stream_trigger

Progress = Callable[[str], None]


def build_silver(config: PipelineConfig, *, once: bool, progress: Progress | None = None,
                 stop: threading.Event | None = None, server_stats: SailServerStats | None = None) -> SilverRunResult:
    """Run the pipeline's silver tables (``once``: everything new, then return). On an S3 root
    the engine gets the lakehouse's storage options: embedded Sail as ``AWS_*``/``AZURE_*``/``GOOGLE_*``
    environment variables (`export_for_sail`), classic Spark as S3A, ABFS or GCS connector settings under
    its own ``engine.conf``."""
    engine = config.engine
    if engine.kind == "sail":
        export_for_sail(config.lakehouse.storage_options)
    elif engine.kind == "spark" and is_s3(config.lakehouse.root):
        engine = engine.model_copy(update={"conf": {**hadoop_s3a_conf(config.lakehouse.storage_options),
                                                    **engine.conf}})
    elif engine.kind == "spark" and is_azure(config.lakehouse.root):
        problem = classic_root_problem(config.lakehouse.root)
        if problem is not None:
            raise ConfigError([problem])
        engine = engine.model_copy(update={"conf": {
            **hadoop_abfs_conf(config.lakehouse.root, config.lakehouse.storage_options), **engine.conf}})
    elif engine.kind == "spark" and is_gcs(config.lakehouse.root):
        engine = engine.model_copy(update={"conf": {**hadoop_gcs_conf(config.lakehouse.storage_options),
                                                    **engine.conf}})
    return run_silver(
        root=config.lakehouse.root, engine=engine, tables=config.silver, options=config.silver_options,
        sources=config.topic_prefixes(), once=once, progress=progress,
        storage_options=config.lakehouse.storage_options or None, stop=stop, server_stats=server_stats,
        bronze_names=bronze_table_names(config),
        after_pass=None if once else AutoCompactor(config, progress or (lambda _line: None)),
    )


def stream_silver(config: PipelineConfig, *, trigger: str | None, once: bool, interval_seconds: float | None = None,
                  checkpoint_root: str | None = None, progress: Progress | None = None,
                  stop: threading.Event | None = None) -> StreamRunResult:
    """Run the pipeline's silver tables as Structured Streaming queries (`pipelines.silver_stream`),
    with the ``--trigger`` given (``stream_trigger``) or the default for ``once``.

    Raises:
        ConfigError: the engine cannot stream (Sail), the options ask for what streaming does not do,
            or ``once`` with a processing-time trigger.
    """
    refusal = stream_refusal(config.engine, config.silver_options)
    if refusal is not None:
        raise ConfigError([ConfigProblem("silver", refusal)])
    chosen = stream_trigger(trigger, once=once)
    interval = config.silver_options.interval_seconds if interval_seconds is None else interval_seconds
    return run_streams(
        root=config.lakehouse.root, engine=config.engine, tables=config.silver, options=config.silver_options,
        sources=config.topic_prefixes(), trigger=chosen, interval_seconds=interval,
        checkpoint_root=checkpoint_root, progress=progress, stop=stop, bronze_names=bronze_table_names(config),
    )


def silver_summary(result: SilverRunResult) -> list[str]:
    """One line per table, of its last pass; a failed table's line is its error; a table a stop
    request left out of the pass says so."""
    last = {t.table: t for t in result.tables}
    return [f"silver {t.table} FAILED: {t.error}" if t.status == "failed" else
            f"silver {t.table}: {t.status}, {t.events} events read, {t.upserts} upserts, {t.deletes} deletes"
            + (f", {t.quarantined} quarantined" if t.quarantined else "")
            + "".join(f"; {note}" for note in t.expectations_failed) for t in last.values()] + \
        [f"silver {table}: not applied (stop requested), left for the next run" for table in result.left]


def run_continuously(config: PipelineConfig, *, progress: Progress | None = None,
                     stop: threading.Event | None = None, metrics: CaptureMetrics | None = None) -> int:
    """Capture every source and build silver at the configured interval until interrupted.

    Setting ``stop`` (`pipelines.shutdown`) stops capture cleanly and silver after its pass.
    The capture's numbers go to ``metrics`` (`pipelines.metrics`).
    """
    stop = stop if stop is not None else threading.Event()
    failure: list[BaseException] = []

    def capture() -> None:
        try:
            run_capture(config, until_idle=False, progress=progress, stop=stop, metrics=metrics)
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=capture, name="capture", daemon=True)
    thread.start()
    try:
        result = build_silver(config, once=False, progress=progress, stop=stop,
                              server_stats=None if metrics is None else metrics.sail_server)
    except KeyboardInterrupt:
        stop.set()
        raise
    except Exception:  # silver cannot go on (a Sail server that did not restart): capture stops cleanly too
        stop.set()
        thread.join()
        raise
    thread.join()  # capture commits or abandons its batch in flight and closes
    if failure:
        raise failure[0]
    return 0 if result.ok else 1
