"""``cdc-lakehouse bundle pipelines``: a declarative-pipelines project (Spark Declarative
Pipelines in open-source Spark, Lakeflow Declarative Pipelines on Databricks) for a
pipeline's silver tables.

Layout::

    spark-pipeline.yml              the pipeline spec: name, storage, libraries
    spark-pipelines.sh              open-source target: spark-pipelines with Delta Lake (--conf, jars)
    transformations/<table>.py      one Python source per silver table (``pyspark.pipelines``)
    pipeline.yaml                   the pipeline file, copied as is (the sources read it)
    dist/cdc_lakehouse-*.whl        the project wheel: install it where the pipeline runs

Every source defines the table's change feed: a temporary view ``<table>_changes`` that
flattens the bronze envelopes with the project's own decoding (`pipelines.change_feed`,
imported from the installed wheel). What is done with it is the `Apply` choice:

* ``auto-cdc``: a streaming table ``<table>`` and an AUTO CDC flow into it (``keys``,
  ``sequence_by`` the bronze ``seq``, deletes by ``__cdc_kind``, the feed columns left out,
  SCD type 1). With the ``databricks`` target, Lakeflow's extensions are used too: SCD type 2
  for ``history: scd2`` tables and ``apply_as_truncates`` for source truncates. Open-source
  Spark has neither (its AUTO CDC is SCD type 1 only), so there such tables are refused.
* ``feed``: the change feed written as it is into a streaming table ``<table>_changes``
  (append only); this is what open-source Spark with Delta tables can run, since its AUTO CDC
  needs a target that supports row-level operations, which its Delta tables do not.
"""

from __future__ import annotations

import enum
import os
import shlex
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.bundles.folder import PIPELINE_FILE, write_folder
from pipelines.bundles.wheel import take_wheel
from pipelines.config import PipelineConfig, nearest_line, read_yaml
from pipelines.spark_jars import DELTA_SPARK_PACKAGE, DELTA_SQL_CONF
from silver.declarations import SilverTable
from silver.feed_columns import DELETE_CONDITION, FEED_COLUMNS, TRUNCATE_CONDITION

__all__ = ["Apply", "DeclarativeOptions", "DeclarativeTarget", "TableFlow", "launcher_script", "pipeline_spec",
           "table_flows", "table_source", "write_declarative_bundle"]

SPEC_FILE = "spark-pipeline.yml"
LAUNCHER = "spark-pipelines.sh"
SOURCES_DIR = "transformations"


class DeclarativeTarget(enum.StrEnum):
    """Where the pipeline runs: open-source Spark (4.2+) or Databricks (Lakeflow)."""

    OPEN_SOURCE = "open-source"
    DATABRICKS = "databricks"


class Apply(enum.StrEnum):
    """What the project does with each change feed (see module doc)."""

    AUTO_CDC = "auto-cdc"
    FEED = "feed"


@dataclass(frozen=True)
class DeclarativeOptions:
    """The choices of ``bundle pipelines`` (its command-line options)."""

    target: DeclarativeTarget = DeclarativeTarget.OPEN_SOURCE
    apply: Apply = Apply.AUTO_CDC
    storage: str | None = None
    """The pipeline's storage (checkpoints); default ``<lakehouse root>/silver/_pipelines/<pipeline>``."""


@dataclass(frozen=True)
class TableFlow:
    """What one silver table's source declares.

    Attributes:
        table: the silver table (the AUTO CDC target, or ``<table>_changes`` with `Apply.FEED`).
        topic: the bronze topic it reads.
        keys: the declared key columns (silver names); None: the source primary key, read from
            the schema history when the pipeline runs.
        scd_type: 1, or 2 (Databricks only).
        truncates: whether source truncates are applied (``apply_as_truncates``, Databricks only).
    """

    table: str
    topic: str
    keys: tuple[str, ...] | None
    scd_type: int
    truncates: bool

    @property
    def feed_view(self) -> str:
        return f"{self.table}_changes"


def _problem(key: str, message: str) -> ConfigProblem:
    return ConfigProblem(key, message)


def table_flows(config: PipelineConfig, options: DeclarativeOptions, *, file: str | None = None,
                lines: Mapping[str, int] | None = None) -> list[TableFlow]:
    """The silver tables' flows; ``file`` and its key paths' ``lines`` locate problems.

    Raises:
        ConfigError: no silver table, or a table the chosen target cannot express.
    """
    if not config.silver:
        raise ConfigError([_problem("silver", "the pipeline declares no silver table: nothing to bundle")], file=file)
    databricks = options.target is DeclarativeTarget.DATABRICKS
    problems: list[ConfigProblem] = []
    flows = []
    for i, decl in enumerate(config.silver):
        if options.apply is Apply.AUTO_CDC:
            problems += _unsupported(i, decl, databricks=databricks)
        keys = None if decl.keys is None else tuple(decl.silver_name(k) for k in decl.keys)
        flows.append(TableFlow(decl.table, decl.source, keys, 2 if decl.history == "scd2" else 1,
                               truncates=databricks))
    if problems:
        raise ConfigError([ConfigProblem(p.path, p.message, nearest_line(p.path, lines or {})) for p in problems],
                          file=file)
    return flows


def _unsupported(i: int, decl: SilverTable, *, databricks: bool) -> list[ConfigProblem]:
    where = f"silver[{i}]"
    out = []
    if decl.deletes == "soft":
        out.append(_problem(f"{where}.deletes", f"silver table {decl.table!r}: soft deletes have no AUTO CDC "
                                                "equivalent; use deletes: hard, or --apply feed"))
    if decl.history == "scd2" and not databricks:
        out.append(_problem(f"{where}.history", f"silver table {decl.table!r}: open-source Spark's AUTO CDC "
                                                "stores SCD type 1 only; use --target databricks (Lakeflow "
                                                "has SCD type 2), or --apply feed"))
    return out


def _storage(config: PipelineConfig, options: DeclarativeOptions) -> str:
    if options.storage is not None:
        return options.storage
    root = config.lakehouse.root.rstrip("/")
    if "://" not in root:
        root = Path(root).resolve().as_uri()
    return f"{root}/silver/_pipelines/{config.pipeline}"


def pipeline_spec(config: PipelineConfig, options: DeclarativeOptions) -> dict[str, Any]:
    """The ``spark-pipeline.yml`` document. No Delta settings in its ``configuration``: a
    pipeline sets those on every flow, and Spark refuses to change the static
    ``spark.sql.extensions`` there; `launcher_script` passes them to ``spark-pipelines``."""
    spec: dict[str, Any] = {"name": config.pipeline, "storage": _storage(config, options)}
    spec["libraries"] = [{"glob": {"include": f"{SOURCES_DIR}/**"}}]
    return spec


def table_source(flow: TableFlow, options: DeclarativeOptions) -> str:
    """The Python source of one silver table (see module doc)."""
    head = f'''"""Silver table {flow.table} from bronze topic {flow.topic}.

Written by cdc-lakehouse bundle pipelines ({options.target}, {options.apply}); needs the
cdc-lakehouse wheel installed where the pipeline runs.
"""

from pathlib import Path

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from pipelines.change_feed import ChangeFeed

PIPELINE_FILE = Path(__file__).resolve().parents[1] / {PIPELINE_FILE!r}
spark = SparkSession.active()
# read here, not in the query function (which may not run Spark jobs): the bronze topic's schema
# history, which decides the flattened columns (a new pipeline update reads it again)
feed = ChangeFeed.load(spark, PIPELINE_FILE, {flow.table!r})


'''
    if options.apply is Apply.FEED:
        return head + f'''@dp.table(name={flow.feed_view!r}, format="delta",
          comment="The change events of {flow.topic}, decoded (append only).")
def {_identifier(flow.feed_view)}() -> DataFrame:
    return feed.stream(spark)
'''
    keys = repr(list(flow.keys)) if flow.keys is not None else "feed.keys"
    args = [f"target={flow.table!r}", f"source={flow.feed_view!r}", f"keys={keys}",
            f"sequence_by={FEED_COLUMNS[0]!r}", f"apply_as_deletes={DELETE_CONDITION!r}"]
    truncates = flow.truncates and flow.scd_type == 1  # Lakeflow: truncates with SCD type 1 only
    if truncates:
        args.append(f"apply_as_truncates={TRUNCATE_CONDITION!r}")
    args += [f"except_column_list={list(FEED_COLUMNS)!r}", f"stored_as_scd_type={flow.scd_type}"]
    fmt = ', format="delta"' if options.target is DeclarativeTarget.OPEN_SOURCE else ""
    body = ",\n    ".join(args)
    return head + f'''@dp.temporary_view(name={flow.feed_view!r})
def {_identifier(flow.feed_view)}() -> DataFrame:
    return feed.stream(spark{", truncates=True" if truncates else ""})


dp.create_streaming_table({flow.table!r}{fmt})
dp.create_auto_cdc_flow(
    {body},
)
'''


def launcher_script() -> str:
    """``spark-pipelines.sh``: ``spark-pipelines`` on the project with Delta Lake (open-source target)."""
    conf = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in DELTA_SQL_CONF.items())
    return f'''#!/usr/bin/env bash
# Written by cdc-lakehouse bundle pipelines: spark-pipelines on this project, with Delta Lake.
#   ./{LAUNCHER} run | dry-run [their options]
# Delta Lake comes from Maven Central ({DELTA_SPARK_PACKAGE}), or from the jar files
# DELTA_JARS lists (comma-separated). SPARK_HOME: the Spark to use (default: spark-pipelines on PATH).
# The cdc-lakehouse wheel (dist/) must be installed in the Python that runs spark-pipelines.
set -euo pipefail
cd "$(dirname "$0")"
if [ -n "${{DELTA_JARS:-}}" ]; then delta=(--jars "$DELTA_JARS"); else delta=(--packages {DELTA_SPARK_PACKAGE}); fi
exec "${{SPARK_HOME:+$SPARK_HOME/bin/}}spark-pipelines" "${{delta[@]}}" {conf} "$@"
'''


def _identifier(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


def _dump(data: dict[str, Any]) -> str:
    return "# Written by cdc-lakehouse bundle pipelines.\n" + yaml.safe_dump(data, sort_keys=False, width=120)


def write_declarative_bundle(config: PipelineConfig, config_path: Path, out: Path, *, wheel: Path | None,
                             options: DeclarativeOptions) -> list[TableFlow]:
    """Write the project into the new folder ``out``; returns its tables' flows.

    Raises:
        ConfigError: ``out`` is not new or empty, a given wheel is not cdc-lakehouse's, or a
            silver table cannot be expressed for the target.
        CdcError: the wheel could not be built.
    """
    doc = read_yaml(config_path.read_text(), file=str(config_path), env=os.environ, secrets=False)
    flows = table_flows(config, options, file=str(config_path), lines=doc.lines)  # before the wheel is built

    def fill(folder: Path) -> None:
        take_wheel(wheel, folder / "dist")
        shutil.copyfile(config_path, folder / PIPELINE_FILE)
        (folder / SPEC_FILE).write_text(_dump(pipeline_spec(config, options)))
        if options.target is DeclarativeTarget.OPEN_SOURCE:
            launcher = folder / LAUNCHER
            launcher.write_text(launcher_script())
            launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        (folder / SOURCES_DIR).mkdir()
        for flow in flows:
            (folder / SOURCES_DIR / f"{flow.table}.py").write_text(table_source(flow, options))

    write_folder(out, fill)
    return flows
