"""``cdc-lakehouse bundle spark-submit``: a self-contained folder to run a pipeline with
``spark-submit``.

Layout of the bundle::

    README.md                 how to install and run it (written for the pipeline)
    pipeline.yaml             the pipeline file, copied as is (secrets stay ${VAR} references)
    cdc_lakehouse-*.whl       the project wheel
    entrypoints/*.py          thin spark-submit entrypoints (silver batch, silver streaming)
    bin/*.sh                  one ready command line per job

The Spark jobs' command lines carry ``--packages`` with the pinned Delta Lake artifact
(`pipelines.spark_jars.DELTA_SPARK_PACKAGE`), the Delta SQL extension and catalog settings,
the wheel as ``--py-files`` and the pipeline file as ``--files``; their extra arguments are
spark-submit options (``--master``, ``--deploy-mode``, ``--conf``...). Capture is no Spark
job: ``bin/capture.sh`` runs the capture command with plain Python where the wheel is installed,
and so does ``bin/maintain.sh`` (compaction, VACUUM, bronze retention: ``cdc-lakehouse maintain``).
"""

from __future__ import annotations

import shlex
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from pipelines.bundles.folder import PIPELINE_FILE, write_folder
from pipelines.bundles.wheel import take_wheel
from pipelines.config import PipelineConfig
from pipelines.spark_jars import DELTA_SPARK_PACKAGE, DELTA_SQL_CONF
from pipelines.stream_trigger import StreamTrigger

__all__ = ["PIPELINE_FILE", "SPARK_JOBS", "SparkJob", "StreamTrigger", "SubmitBundle", "write_spark_submit_bundle"]

SPARK_SUBMIT = '"${SPARK_HOME:+$SPARK_HOME/bin/}spark-submit"'
"""``$SPARK_HOME/bin/spark-submit`` when ``SPARK_HOME`` is set, else the one on ``PATH``."""


@dataclass(frozen=True)
class SparkJob:
    """One spark-submit job of the bundle: its script, its entrypoint and what the entrypoint
    always passes to `jobs.silver_job.main` before the command line's arguments."""

    name: str
    entrypoint: str
    fixed_args: tuple[str, ...]
    summary: str


SPARK_JOBS = (
    SparkJob("silver-batch", "entrypoints/silver_batch.py", ("--once",),
             "one pass of the incremental silver runner over everything new in bronze, then exit"),
    SparkJob("silver-stream", "entrypoints/silver_stream.py", ("--stream",),
             "the silver tables as Structured Streaming queries (one per table)"),
)


@dataclass(frozen=True)
class SubmitBundle:
    """What a spark-submit bundle is made of; every path is relative to the bundle folder."""

    pipeline: str
    wheel: str
    trigger: StreamTrigger
    packages: str = DELTA_SPARK_PACKAGE
    conf: tuple[tuple[str, str], ...] = tuple(DELTA_SQL_CONF.items())

    def submit_options(self, job: SparkJob) -> list[str]:
        """spark-submit's options for ``job`` (before the user's own)."""
        options = ["--name", f"{self.pipeline}-{job.name}", "--packages", self.packages]
        for key, value in self.conf:
            options += ["--conf", f"{key}={value}"]
        return [*options, "--py-files", self.wheel, "--files", PIPELINE_FILE]

    def job_args(self, job: SparkJob) -> list[str]:
        """The entrypoint's arguments (`jobs.silver_job` options)."""
        args = ["-c", PIPELINE_FILE, "--engine", "spark"]
        return [*args, "--trigger", str(self.trigger)] if "--stream" in job.fixed_args else args

    def command_line(self, job: SparkJob) -> str:
        """The script line: spark-submit, the bundle's options, the caller's options (``"$@"``),
        the entrypoint and its arguments."""
        return (f"exec {SPARK_SUBMIT} {shlex.join(self.submit_options(job))} \"$@\" "
                f"{shlex.join([job.entrypoint, *self.job_args(job)])}")


def _script(summary: str, usage: str, line: str) -> str:
    return (f"#!/bin/sh\n# {summary}\n# Usage: {usage}\n# Written by cdc-lakehouse bundle spark-submit.\n"
            f"set -e\ncd \"$(dirname \"$0\")/..\"\n{line}\n")


def _entrypoint(pipeline: str, job: SparkJob) -> str:
    return (f'"""{job.name} job of the {pipeline} pipeline: {job.summary}.\n\n'
            f'Written by cdc-lakehouse bundle spark-submit; runs jobs.silver_job from the cdc-lakehouse wheel.\n"""\n\n'
            "import sys\n\nfrom jobs.silver_job import main\n\n"
            f"sys.exit(main([{', '.join(repr(a) for a in job.fixed_args)}, *sys.argv[1:]]))\n")


CAPTURE_LINE = f'exec "${{PYTHON:-python3}}" -m pipelines.cli capture -c {PIPELINE_FILE} "$@"'
MAINTAIN_LINE = f'exec "${{PYTHON:-python3}}" -m pipelines.cli maintain -c {PIPELINE_FILE} "$@"'


def _readme(bundle: SubmitBundle) -> str:
    jobs = "\n".join(f"* `bin/{job.name}.sh`: {job.summary}." for job in SPARK_JOBS)
    return f"""# {bundle.pipeline}: spark-submit bundle

Written by `cdc-lakehouse bundle spark-submit`. It holds the pipeline file (`{PIPELINE_FILE}`, as
given: its secrets are `${{VAR}}` references, set them in the environment of the capture), the
cdc-lakehouse wheel (`{bundle.wheel}`), thin entrypoints and one script per job.

## Install

Install the wheel into the Python that runs the capture and the Spark driver, with the extra
of your source's connector (`postgres` or `mysql`); on a Spark cluster leave out `spark`, the
cluster provides pyspark and Delta Lake:

    python -m venv venv && venv/bin/pip install './{bundle.wheel}[postgres]'

## Capture (plain Python, not a Spark job)

    PYTHON=venv/bin/python bin/capture.sh            # snapshot, then stream until stopped
    PYTHON=venv/bin/python bin/capture.sh --until-idle

## Maintenance (plain Python, not a Spark job)

Compaction, VACUUM and bronze retention of the pipeline's tables (`cdc-lakehouse maintain`),
safe while capture and silver run; run it on a schedule, e.g. hourly from cron:

    PYTHON=venv/bin/python bin/maintain.sh --dry-run  # what it would do
    PYTHON=venv/bin/python bin/maintain.sh

## Silver (spark-submit)

{jobs}

Each script runs spark-submit (`$SPARK_HOME/bin/spark-submit`, else the one on `PATH`) with
Delta Lake `{bundle.packages}` (`--packages`), the Delta SQL extension and catalog, the wheel
(`--py-files`) and the pipeline file (`--files`). Its arguments are more spark-submit options:

    PYSPARK_PYTHON=venv/bin/python bin/silver-batch.sh --master 'local[2]'
    PYSPARK_PYTHON=venv/bin/python bin/silver-stream.sh --master yarn

The streaming job's trigger is `{bundle.trigger}`.
"""


def write_spark_submit_bundle(config: PipelineConfig, config_path: Path, out: Path, *, wheel: Path | None,
                              trigger: StreamTrigger) -> SubmitBundle:
    """Write the bundle of the pipeline ``config`` (read from ``config_path``) into the new folder ``out``.

    Raises:
        ConfigError: ``out`` is not new or empty, or ``wheel`` is not a cdc-lakehouse wheel.
        CdcError: the wheel could not be built.
    """
    made: list[SubmitBundle] = []

    def fill(folder: Path) -> None:
        shipped = take_wheel(wheel, folder)
        bundle = SubmitBundle(pipeline=config.pipeline, wheel=shipped.name, trigger=trigger)
        shutil.copyfile(config_path, folder / PIPELINE_FILE)
        (folder / "entrypoints").mkdir()
        (folder / "bin").mkdir()
        for job in SPARK_JOBS:
            (folder / job.entrypoint).write_text(_entrypoint(config.pipeline, job))
            _write_script(folder / "bin" / f"{job.name}.sh",
                          _script(job.summary, f"bin/{job.name}.sh [spark-submit options]", bundle.command_line(job)))
        _write_script(folder / "bin" / "capture.sh",
                      _script("capture the sources into bronze (plain Python where the wheel is installed)",
                              "PYTHON=<venv>/bin/python bin/capture.sh [capture options, e.g. --until-idle]",
                              CAPTURE_LINE))
        _write_script(folder / "bin" / "maintain.sh",
                      _script("compact and vacuum the pipeline's tables, apply bronze retention (plain Python)",
                              "PYTHON=<venv>/bin/python bin/maintain.sh [maintain options, e.g. --dry-run]",
                              MAINTAIN_LINE))
        (folder / "README.md").write_text(_readme(bundle))
        made.append(bundle)

    write_folder(out, fill)
    return made[0]


def _write_script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
