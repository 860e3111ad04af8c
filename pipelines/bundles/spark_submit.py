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
the pipeline file as ``--files`` and the Python code either as the wheel in ``--py-files``
(`PythonEnv.PY_FILES`: its requirements are installed on the nodes beforehand) or as a packed
virtualenv ``env.tar.gz`` in ``--archives`` (`PythonEnv.ARCHIVE`, see
`pipelines.bundles.packed_env`); their extra arguments are spark-submit options
(``--master``, ``--deploy-mode``, ``--conf``...). Capture is no Spark
job: ``bin/capture.sh`` runs the capture command with plain Python where the wheel is installed,
and so does ``bin/maintain.sh`` (compaction, VACUUM, bronze retention: ``cdc-lakehouse maintain``).
"""

from __future__ import annotations

import shlex
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pipelines.bundles.folder import PIPELINE_FILE, write_folder
from pipelines.bundles.packed_env import (
    ENV_ARCHIVE,
    ENV_DIR,
    ENV_PYTHON,
    PythonEnv,
    check_constraints,
    connector_extras,
    pack_environment,
)
from pipelines.bundles.wheel import take_wheel
from pipelines.config import PipelineConfig
from pipelines.spark_jars import DELTA_SPARK_PACKAGE, DELTA_SQL_CONF
from pipelines.stream_trigger import StreamTrigger

__all__ = ["PIPELINE_FILE", "SPARK_JOBS", "PythonEnv", "SparkJob", "StreamTrigger", "SubmitBundle",
           "write_spark_submit_bundle"]

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
    python_env: PythonEnv = PythonEnv.PY_FILES
    packages: str = DELTA_SPARK_PACKAGE
    conf: tuple[tuple[str, str], ...] = tuple(DELTA_SQL_CONF.items())

    def submit_options(self, job: SparkJob) -> list[str]:
        """spark-submit's options for ``job`` (before the user's own)."""
        options = ["--name", f"{self.pipeline}-{job.name}", "--packages", self.packages]
        for key, value in self.conf:
            options += ["--conf", f"{key}={value}"]
        if self.python_env is PythonEnv.ARCHIVE:
            options += ["--archives", f"{ENV_ARCHIVE}#{ENV_DIR}", "--conf", f"spark.pyspark.python={ENV_PYTHON}"]
        else:
            options += ["--py-files", self.wheel]
        return [*options, "--files", PIPELINE_FILE]

    def job_args(self, job: SparkJob) -> list[str]:
        """The entrypoint's arguments (`jobs.silver_job` options)."""
        args = ["-c", PIPELINE_FILE, "--engine", "spark"]
        return [*args, "--trigger", str(self.trigger)] if "--stream" in job.fixed_args else args

    def command_line(self, job: SparkJob) -> str:
        """The script's lines: with the archive, the client-mode driver's environment (see
        `DRIVER_ENV_LINES`); then spark-submit, the bundle's options, the caller's options
        (``"$@"``), the entrypoint and its arguments."""
        prefix = DRIVER_ENV_LINES if self.python_env is PythonEnv.ARCHIVE else ""
        return (f"{prefix}exec {SPARK_SUBMIT} {shlex.join(self.submit_options(job))} \"$@\" "
                f"{shlex.join([job.entrypoint, *self.job_args(job)])}")


UNPACK_LINE = (f'[ -x {ENV_DIR}/bin/python ] || {{ rm -rf {ENV_DIR}.part && mkdir {ENV_DIR}.part && '
               f'tar -xzf {ENV_ARCHIVE} -C {ENV_DIR}.part && mv {ENV_DIR}.part {ENV_DIR}; }}')
"""Unpack the packed environment into the bundle's ``environment`` folder unless it is there."""
DRIVER_ENV_LINES = f"""\
# Python: {ENV_ARCHIVE} (a packed virtualenv) ships with --archives and is unpacked as ./{ENV_DIR}
# in every container; executors (and, in cluster deploy mode, the driver) run {ENV_PYTHON}.
# In client deploy mode (the default; --master local too) the driver runs here: from the archive
# unpacked into this folder's {ENV_DIR}/ (once).
mode=client prev=
for arg in "$@"; do
  [ "$prev" = --deploy-mode ] && mode=$arg
  case $arg in --deploy-mode=*) mode=${{arg#--deploy-mode=}} ;; esac
  prev=$arg
done
if [ "$mode" = client ]; then
  {UNPACK_LINE}
  set -- --conf spark.pyspark.driver.python={ENV_PYTHON} "$@"
fi
export PYSPARK_PYTHON={ENV_PYTHON}
"""
"""Shell lines before the archive variant's spark-submit: the driver's Python by deploy mode."""


def _script(summary: str, usage: str, line: str) -> str:
    return (f"#!/bin/sh\n# {summary}\n# Usage: {usage}\n# Written by cdc-lakehouse bundle spark-submit.\n"
            f"set -e\ncd \"$(dirname \"$0\")/..\"\n{line}\n")


def _entrypoint(pipeline: str, job: SparkJob) -> str:
    return (f'"""{job.name} job of the {pipeline} pipeline: {job.summary}.\n\n'
            f'Written by cdc-lakehouse bundle spark-submit; runs jobs.silver_job from the cdc-lakehouse wheel.\n"""\n\n'
            "import sys\n\nfrom jobs.silver_job import main\n\n"
            f"sys.exit(main([{', '.join(repr(a) for a in job.fixed_args)}, *sys.argv[1:]]))\n")


def python_line(command: str, python_env: PythonEnv) -> str:
    """The script line of a plain-Python ``cdc-lakehouse`` command: ``$PYTHON``, else ``python3``,
    or with the archive its environment unpacked into the bundle."""
    if python_env is PythonEnv.ARCHIVE:
        return (f'[ -n "$PYTHON" ] || {UNPACK_LINE}\n'
                f'exec "${{PYTHON:-{ENV_PYTHON}}}" -m pipelines.cli {command} -c {PIPELINE_FILE} "$@"')
    return f'exec "${{PYTHON:-python3}}" -m pipelines.cli {command} -c {PIPELINE_FILE} "$@"'


_INSTALL_PY_FILES = """## Install

Install the wheel into the Python that runs the capture and the Spark driver, with the extra
of your source's connector (`postgres` or `mysql`); on a Spark cluster leave out `spark`, the
cluster provides pyspark and Delta Lake. The wheel's own requirements must be installed on
every node of the cluster (the wheel itself ships with `--py-files`):

    python -m venv venv && venv/bin/pip install './{wheel}[postgres]'
"""

_INSTALL_ARCHIVE = f"""## The packed environment

`{ENV_ARCHIVE}` is a virtualenv packed with venv-pack: the wheel, its requirements and the
connector extra, pinned as the project pins them (no pyspark: spark-submit brings its own; no
pipeline file, no secret). Nothing is installed by hand: the scripts unpack it into `{ENV_DIR}/`
here when they need it on this machine, and spark-submit ships it to the cluster with
`--archives {ENV_ARCHIVE}#{ENV_DIR}`. Its `bin/python` is a link to the Python it was built
with: every machine that runs it needs that Python at the same path (same version).
"""

_SUBMIT_PY_FILES = """Each script runs spark-submit (`$SPARK_HOME/bin/spark-submit`, else the one on `PATH`) with
Delta Lake `{packages}` (`--packages`), the Delta SQL extension and catalog, the wheel
(`--py-files`) and the pipeline file (`--files`). Its arguments are more spark-submit options:

    PYSPARK_PYTHON=venv/bin/python bin/silver-batch.sh --master 'local[2]'
    PYSPARK_PYTHON=venv/bin/python bin/silver-stream.sh --master yarn
"""

_SUBMIT_ARCHIVE = f"""Each script runs spark-submit (`$SPARK_HOME/bin/spark-submit`, else the one on `PATH`) with
Delta Lake `{{packages}}` (`--packages`), the Delta SQL extension and catalog, the packed
environment (`--archives {ENV_ARCHIVE}#{ENV_DIR}`, `spark.pyspark.python={ENV_PYTHON}`) and the
pipeline file (`--files`). Its arguments are more spark-submit options:

    bin/silver-batch.sh --master 'local[2]'
    bin/silver-stream.sh --master yarn --deploy-mode cluster

The executors run `{ENV_PYTHON}` in their working directory, where the cluster manager
unpacked the archive. The driver depends on the deploy mode: in client mode (the default, and
any local master) it runs on this machine, from the archive unpacked into `{ENV_DIR}/` here
(`spark.pyspark.driver.python`); in cluster mode it runs in the cluster like the executors, so
the script leaves it to `spark.pyspark.python`.
"""


def _readme(bundle: SubmitBundle) -> str:
    jobs = "\n".join(f"* `bin/{job.name}.sh`: {job.summary}." for job in SPARK_JOBS)
    archive = bundle.python_env is PythonEnv.ARCHIVE
    install = _INSTALL_ARCHIVE if archive else _INSTALL_PY_FILES.format(wheel=bundle.wheel)
    submit = (_SUBMIT_ARCHIVE if archive else _SUBMIT_PY_FILES).format(packages=bundle.packages)
    python = "" if archive else "PYTHON=venv/bin/python "
    shipped = f"a packed environment (`{ENV_ARCHIVE}`)" if archive else f"the cdc-lakehouse wheel (`{bundle.wheel}`)"
    return f"""# {bundle.pipeline}: spark-submit bundle

Written by `cdc-lakehouse bundle spark-submit`. It holds the pipeline file (`{PIPELINE_FILE}`, as
given: its secrets are `${{VAR}}` references, set them in the environment of the capture),
{shipped}, thin entrypoints and one script per job.

{install}
## Capture (plain Python, not a Spark job)

    {python}bin/capture.sh            # snapshot, then stream until stopped
    {python}bin/capture.sh --until-idle

## Maintenance (plain Python, not a Spark job)

Compaction, VACUUM and bronze retention of the pipeline's tables (`cdc-lakehouse maintain`),
safe while capture and silver run; run it on a schedule, e.g. hourly from cron:

    {python}bin/maintain.sh --dry-run  # what it would do
    {python}bin/maintain.sh

## Silver (spark-submit)

{jobs}

{submit}
The streaming job's trigger is `{bundle.trigger}`.
"""


def write_spark_submit_bundle(config: PipelineConfig, config_path: Path, out: Path, *, wheel: Path | None,
                              trigger: StreamTrigger, python_env: PythonEnv = PythonEnv.PY_FILES,
                              constraints: Path | None = None) -> SubmitBundle:
    """Write the bundle of the pipeline ``config`` (read from ``config_path``) into the new folder ``out``;
    with `PythonEnv.ARCHIVE` the packed environment (pinned by ``constraints``) replaces the
    wheel, which is then not shipped on its own.

    Raises:
        ConfigError: ``out`` is not new or empty, ``wheel`` is not a cdc-lakehouse wheel, or
            (archive) there is no constraints file.
        MissingDependencyError: (archive) venv-pack is not installed.
        CdcError: the wheel or the environment could not be built.
    """
    made: list[SubmitBundle] = []
    archive = python_env is PythonEnv.ARCHIVE
    if archive:
        check_constraints(constraints)  # before anything is built

    def fill(folder: Path) -> None:
        if archive:
            with tempfile.TemporaryDirectory(prefix="cdc-wheel-") as tmp:
                shipped = take_wheel(wheel, Path(tmp))
                pack_environment(shipped, connector_extras(config), constraints, folder)
        else:
            shipped = take_wheel(wheel, folder)
        bundle = SubmitBundle(pipeline=config.pipeline, wheel=shipped.name, trigger=trigger, python_env=python_env)
        shutil.copyfile(config_path, folder / PIPELINE_FILE)
        (folder / "entrypoints").mkdir()
        (folder / "bin").mkdir()
        for job in SPARK_JOBS:
            (folder / job.entrypoint).write_text(_entrypoint(config.pipeline, job))
            _write_script(folder / "bin" / f"{job.name}.sh",
                          _script(job.summary, f"bin/{job.name}.sh [spark-submit options]", bundle.command_line(job)))
        python = "" if archive else "PYTHON=<venv>/bin/python "
        _write_script(folder / "bin" / "capture.sh",
                      _script("capture the sources into bronze (plain Python where the wheel is installed)",
                              f"{python}bin/capture.sh [capture options, e.g. --until-idle]",
                              python_line("capture", python_env)))
        _write_script(folder / "bin" / "maintain.sh",
                      _script("compact and vacuum the pipeline's tables, apply bronze retention (plain Python)",
                              f"{python}bin/maintain.sh [maintain options, e.g. --dry-run]",
                              python_line("maintain", python_env)))
        (folder / "README.md").write_text(_readme(bundle))
        made.append(bundle)

    write_folder(out, fill)
    return made[0]


def _write_script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
