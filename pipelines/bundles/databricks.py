"""``cdc-lakehouse bundle databricks``: a Databricks Asset Bundle for a pipeline.

Layout::

    databricks.yml                 bundle name, variables, dev/prod targets, includes resources/
    resources/<pipeline>.jobs.yml  the capture job, the silver job and the maintenance job
    pipeline.yaml                  the pipeline file, copied as is (synced to the workspace)
    dist/cdc_lakehouse-*.whl       the project wheel (uploaded by ``databricks bundle deploy``)

Two jobs per pipeline, because a Databricks continuous job allows no task retries and a
long-running task would hold a scheduled job's run open:

* ``<pipeline>_capture``: one long-running wheel task (``cdc-lakehouse capture``) with
  unlimited retries; ``max_concurrent_runs: 1`` and a schedule that restarts it if it stopped.
* ``<pipeline>_silver``: one wheel task running every silver table as Structured Streaming
  (``cdc-lakehouse-silver-job --stream``): ``available-now`` on a schedule (``silver_schedule``),
  or ``processing-time`` as a continuous job.

And ``<pipeline>_maintain``: ``cdc-lakehouse maintain`` (compaction, VACUUM, bronze retention)
every hour on a single-node cluster, plain Python like the capture (it needs no connector extra).

Compute (`Compute`), one of:

* ``job-cluster`` (the default): job clusters in dedicated (single user) access mode, where a
  wheel task has a classic Spark session: the silver job applies through the classic session
  (``--engine spark``) as Structured Streaming, and the capture runs on a single-node cluster.
  The pipeline file's ``${VAR}`` references become the clusters' environment variables, read
  from a Databricks secret scope.
* ``serverless``: the jobs get a serverless environment (``environments`` with the wheel and
  its requirements as dependencies, tasks with ``environment_key``, no cluster). Its session is
  a Spark Connect session, so the silver task runs the incremental runner through it
  (``--engine connect --once``, no stream checkpoints), on the schedule. Serverless tasks get
  no secrets as environment variables, so a job whose task needs the pipeline file's ``${VAR}``
  secrets (the capture with a database password, maintenance with storage keys) keeps its
  single-node job cluster; the others have no cluster.

Checkpoints of the job-cluster silver streams go under the lakehouse root
(``<root>/silver/_checkpoints``) or a Unity Catalog volume. Silver tables that declare
``catalog_table: catalog.schema.table`` are written under that Unity Catalog name by the silver
job on either compute, which also registers the bronze tables it reads under their sources'
``bronze_catalog`` (`pipelines.bronze_register`), from the pipeline file the bundle ships.
Schedules are paused in the dev target and run in prod. The files are built from the
dataclasses below and written with PyYAML.
"""

from __future__ import annotations

import enum
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.bundles.folder import PIPELINE_FILE, write_folder
from pipelines.bundles.spark_submit import StreamTrigger
from pipelines.bundles.wheel import DISTRIBUTION, extra_requirements, take_wheel
from pipelines.config import _ENV_REF, PipelineConfig
from pipelines.extras import CONNECTOR_DRIVERS

__all__ = ["Compute", "DatabricksOptions", "bundle_documents", "write_databricks_bundle"]

CAPTURE_ENTRY_POINT = "cdc-lakehouse-task"
SILVER_ENTRY_POINT = "cdc-lakehouse-silver-job"
CAPTURE_RESTART_CRON = "0 0/10 * * * ?"
"""The capture job's schedule: a run every ten minutes starts the capture if it is not running."""
MAINTAIN_CRON = "0 0 * * * ?"
"""The maintenance job's schedule: every hour."""
_VOLUME = re.compile(r"^[A-Za-z0-9_]+\.[A-Za-z0-9_]+\.[A-Za-z0-9_]+$")
_VAR_REF = re.compile(r"\$\{var\.([A-Za-z0-9_]+)\}")
ENVIRONMENT_KEY = "default"
"""The key of a serverless job's one environment."""


class Compute(enum.StrEnum):
    """Where the jobs run (see the module doc)."""

    JOB_CLUSTER = "job-cluster"
    SERVERLESS = "serverless"


@dataclass(frozen=True)
class DatabricksOptions:
    """The choices of ``bundle databricks`` (its command-line options)."""

    compute: Compute = Compute.JOB_CLUSTER
    environment_version: str = "4"
    """Serverless environment version (its Python and Databricks Connect)."""
    trigger: StreamTrigger = StreamTrigger.AVAILABLE_NOW
    silver_schedule: str = "0 0/15 * * * ?"
    checkpoint_volume: str | None = None
    """``catalog.schema.volume``: checkpoints under ``/Volumes/catalog/schema/volume/<pipeline>``."""
    spark_version: str = "17.3.x-scala2.13"
    node_type_id: str = "i3.xlarge"
    num_workers: int = 1
    secret_scope: str = "cdc-lakehouse"


@dataclass(frozen=True)
class Variable:
    description: str
    default: str | int

    def as_dict(self) -> dict[str, Any]:
        return {"description": self.description, "default": self.default}


@dataclass(frozen=True)
class WheelTask:
    """A ``python_wheel_task`` of the project wheel."""

    key: str
    entry_point: str
    parameters: tuple[str, ...]
    max_retries: int
    libraries: tuple[str, ...] = ()
    """The wheel's path and PyPI requirements (the task's ``libraries``, or on serverless its
    environment's dependencies)."""

    def as_dict(self, serverless: bool = False) -> dict[str, Any]:
        task: dict[str, Any] = {
            "task_key": self.key,
            "python_wheel_task": {"package_name": DISTRIBUTION, "entry_point": self.entry_point,
                                  "parameters": list(self.parameters)},
        }
        if self.max_retries:
            task |= {"max_retries": self.max_retries, "min_retry_interval_millis": 60000, "retry_on_timeout": True}
        if serverless:
            task["environment_key"] = ENVIRONMENT_KEY
            return task
        task["job_cluster_key"] = "main"
        task["libraries"] = [{"whl": lib} if lib.endswith(".whl") else {"pypi": {"package": lib}}
                             for lib in self.libraries]
        return task


@dataclass(frozen=True)
class JobResource:
    """One job: its tasks, its compute (a job cluster, or None: serverless) and trigger (a cron
    schedule, or continuous)."""

    name: str
    tasks: tuple[WheelTask, ...]
    cluster: JobCluster | None
    schedule: str | None = None
    continuous: bool = False

    def as_dict(self) -> dict[str, Any]:
        serverless = self.cluster is None
        job: dict[str, Any] = {"name": self.name, "max_concurrent_runs": 1,
                               "tasks": [t.as_dict(serverless) for t in self.tasks]}
        if self.schedule is not None:
            job["schedule"] = {"quartz_cron_expression": self.schedule, "timezone_id": "UTC",
                               "pause_status": "${var.pause_status}"}
        if self.continuous:
            job["continuous"] = {"pause_status": "${var.pause_status}"}
        if self.cluster is None:
            dependencies = list(dict.fromkeys(lib for t in self.tasks for lib in t.libraries))
            job["environments"] = [{"environment_key": ENVIRONMENT_KEY,
                                    "spec": {"environment_version": "${var.environment_version}",
                                             "dependencies": dependencies}}]
        else:
            job["job_clusters"] = [{"job_cluster_key": "main", "new_cluster": self.cluster.as_dict()}]
        return job


def _problem(option: str, message: str) -> ConfigError:
    return ConfigError([ConfigProblem(option, message)])


def env_references(text: str) -> list[str]:
    """The ``${VAR}`` names (without a ``:-default``) in a pipeline file's values, sorted."""
    names: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            names.update(m.group(1) for m in _ENV_REF.finditer(value) if m.group(2) is None)

    walk(yaml.safe_load(text))
    return sorted(names)


def _checkpoints(config: PipelineConfig, options: DatabricksOptions) -> str:
    if options.checkpoint_volume is None:
        return f"{config.lakehouse.root.rstrip('/')}/silver/_checkpoints"
    if not _VOLUME.match(options.checkpoint_volume):
        raise _problem("--checkpoint-volume", f"{options.checkpoint_volume!r} is not a Unity Catalog volume "
                                              "name (catalog.schema.volume)")
    return f"/Volumes/{options.checkpoint_volume.replace('.', '/')}/{config.pipeline}/checkpoints"


def _variables(config: PipelineConfig, options: DatabricksOptions) -> dict[str, Variable]:
    """Every variable a bundle may use (`bundle_documents` declares those its jobs use)."""
    variables = {
        "pipeline_file": Variable("the pipeline file, as synced to the workspace",
                                  f"${{workspace.file_path}}/{PIPELINE_FILE}"),
        "checkpoints": Variable("the silver streams' checkpoint folder (one subfolder per table)",
                                _checkpoints(config, options)),
        "pause_status": Variable("PAUSED or UNPAUSED: the jobs' schedules and continuous trigger", "PAUSED"),
    }
    return variables | {
        "silver_schedule": Variable("when the silver job runs (Quartz cron, UTC)", options.silver_schedule),
        "environment_version": Variable("serverless environment version of the serverless jobs",
                                        options.environment_version),
        "spark_version": Variable("Databricks Runtime of the job clusters", options.spark_version),
        "node_type_id": Variable("node type of the job clusters", options.node_type_id),
        "num_workers": Variable("workers of the silver job's cluster", options.num_workers),
        "secret_scope": Variable("the secret scope holding the pipeline file's ${VAR} values",
                                 options.secret_scope),
    }


@dataclass(frozen=True)
class JobCluster:
    """A job's cluster: dedicated access mode (a classic Spark session for wheel tasks), the
    runtime and node type of the bundle variables; ``single_node`` (no workers) or ``workers``;
    ``secrets``: environment variables read from the ``secret_scope`` variable's scope."""

    single_node: bool
    workers: str = "${var.num_workers}"
    secrets: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        cluster: dict[str, Any] = {"spark_version": "${var.spark_version}", "node_type_id": "${var.node_type_id}",
                                   "data_security_mode": "SINGLE_USER"}
        if self.single_node:
            cluster |= {"num_workers": 0, "spark_conf": {"spark.databricks.cluster.profile": "singleNode",
                                                         "spark.master": "local[*]"},
                        "custom_tags": {"ResourceClass": "SingleNode"}}
        else:
            cluster["num_workers"] = self.workers
        if self.secrets:
            cluster["spark_env_vars"] = {name: f"{{{{secrets/${{var.secret_scope}}/{name}}}}}" for name in self.secrets}
        return cluster


def check_options(config: PipelineConfig, pipeline_text: str, options: DatabricksOptions) -> None:
    """Raises ConfigError when an option does not fit the pipeline (see the module doc)."""
    _checkpoints(config, options)
    if options.num_workers < 1:
        raise _problem("--workers", f"the silver cluster needs at least one worker, not {options.num_workers}")
    if options.compute is Compute.SERVERLESS:
        if options.trigger is StreamTrigger.PROCESSING_TIME:
            raise _problem("--trigger", "serverless compute runs the silver job on a schedule (the incremental "
                                        "runner); processing-time (a continuous job) needs --compute job-cluster")
        if options.checkpoint_volume is not None:
            raise _problem("--checkpoint-volume", "the serverless silver job runs the incremental runner, which "
                                                  "keeps no stream checkpoints; use it with --compute job-cluster")


def bundle_documents(config: PipelineConfig, pipeline_text: str, wheel: Path,
                     options: DatabricksOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``databricks.yml`` and the jobs resource file of the bundle (as YAML-ready dicts).

    Raises:
        ConfigError: an option does not fit the pipeline (see the module doc).
    """
    check_options(config, pipeline_text, options)
    secrets = env_references(pipeline_text)
    lakehouse = yaml.safe_load(pipeline_text).get("lakehouse")
    lakehouse_secrets = env_references(yaml.safe_dump(lakehouse)) if isinstance(lakehouse, dict) else []

    extras = sorted({CONNECTOR_DRIVERS[s.connector][0] for s in config.sources if s.connector in CONNECTOR_DRIVERS})
    wheel_path = f"../dist/{wheel.name}"
    capture_libs = (wheel_path, *extra_requirements(wheel, set(extras)))
    silver_libs = (wheel_path,)
    pipeline = config.pipeline
    serverless = options.compute is Compute.SERVERLESS
    capture = WheelTask("capture", CAPTURE_ENTRY_POINT, ("capture", "-c", "${var.pipeline_file}"),
                        max_retries=-1, libraries=capture_libs)
    maintain = WheelTask("maintain", CAPTURE_ENTRY_POINT, ("maintain", "-c", "${var.pipeline_file}"),
                         max_retries=0, libraries=(wheel_path,))
    continuous = options.trigger is StreamTrigger.PROCESSING_TIME
    if serverless:  # the platform's Spark Connect session, the incremental runner (see the module doc)
        silver_args: tuple[str, ...] = ("-c", "${var.pipeline_file}", "--engine", "connect", "--once")
    else:
        silver_args = ("-c", "${var.pipeline_file}", "--engine", "spark", "--stream", "--trigger",
                       str(options.trigger), "--checkpoints", "${var.checkpoints}")
    silver = WheelTask("silver", SILVER_ENTRY_POINT, silver_args,
                       max_retries=0 if continuous else 2, libraries=silver_libs)

    def single_node(needs: list[str]) -> JobCluster | None:
        """A single-node cluster with ``needs`` as secret environment variables; serverless (None)
        when nothing is needed there."""
        return None if serverless and not needs else JobCluster(single_node=True, secrets=tuple(needs))

    jobs = {
        f"{pipeline}_capture": JobResource(f"{pipeline} capture", (capture,), single_node(secrets),
                                           schedule=CAPTURE_RESTART_CRON),
        f"{pipeline}_silver": JobResource(f"{pipeline} silver", (silver,),
                                          None if serverless else JobCluster(single_node=False),
                                          schedule=None if continuous else "${var.silver_schedule}",
                                          continuous=continuous),
        # no database secret: only those the lakehouse's storage options reference
        f"{pipeline}_maintain": JobResource(f"{pipeline} maintenance", (maintain,), single_node(lakehouse_secrets),
                                            schedule=MAINTAIN_CRON),
    }
    resources = {"resources": {"jobs": {key: job.as_dict() for key, job in jobs.items()}}}
    used = set(_VAR_REF.findall(yaml.safe_dump(resources)))
    databricks_yml = {
        "bundle": {"name": pipeline},
        "include": ["resources/*.yml"],
        "variables": {k: v.as_dict() for k, v in _variables(config, options).items()
                      if k in used | {"pause_status"}},
        "targets": {
            "dev": {"mode": "development", "default": True, "variables": {"pause_status": "PAUSED"}},
            "prod": {"mode": "production", "variables": {"pause_status": "UNPAUSED"},
                     "workspace": {"root_path": "/Workspace/Shared/.bundle/${bundle.name}/${bundle.target}"}},
        },
    }
    return databricks_yml, resources


def _dump(data: dict[str, Any]) -> str:
    return "# Written by cdc-lakehouse bundle databricks.\n" + yaml.safe_dump(data, sort_keys=False, width=120)


def write_databricks_bundle(config: PipelineConfig, config_path: Path, out: Path, *, wheel: Path | None,
                            options: DatabricksOptions) -> list[str]:
    """Write the bundle into the new folder ``out``; returns its job resource keys.

    Raises:
        ConfigError: ``out`` is not new or empty, a given wheel is not cdc-lakehouse's, or an
            option does not fit the pipeline.
        CdcError: the wheel could not be built.
    """
    text = config_path.read_text()
    keys: list[str] = []

    def fill(folder: Path) -> None:
        shipped = take_wheel(wheel, folder / "dist")
        databricks_yml, resources = bundle_documents(config, text, shipped, options)
        shutil.copyfile(config_path, folder / PIPELINE_FILE)
        (folder / "databricks.yml").write_text(_dump(databricks_yml))
        (folder / "resources").mkdir()
        (folder / "resources" / f"{config.pipeline}.jobs.yml").write_text(_dump(resources))
        keys.extend(resources["resources"]["jobs"])

    check_options(config, text, options)  # before the wheel is built
    write_folder(out, fill)
    return keys
