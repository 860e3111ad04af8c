"""``rebuild``: drop one silver table, its progress and streaming checkpoint, then build it
again from bronze on the configured engine. Needs no source connection nor its secrets.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pyspark.sql import SparkSession

from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.config import PipelineConfig
from pipelines.engine import create_session, stop_session
from pipelines.lease import local_path
from pipelines.operations import Prompt, Say, confirm
from pipelines.silver_runner import run_silver
from pipelines.silver_stream import checkpoint_location
from silver.progress import ProgressStore
from silver.target import SilverTarget


def _local(location: str, what: str) -> Path:
    """The local folder of ``location``, or a ConfigError (object stores are not handled)."""
    path = local_path(location)
    if path is None:
        raise ConfigError([ConfigProblem("rebuild", f"the {what} is at {location}, not in a local folder: delete it "
                                                    "with your object store's tools, then run `silver --once`")])
    return path


def _remove_tree(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)


def rebuild(config: PipelineConfig, table: str, *, yes: bool, say: Say, file: str | None = None,
            prompt: Prompt | None = None, spark: SparkSession | None = None) -> bool:
    """Drop one silver table and its progress, then build it again from bronze; True if it built.

    ``spark``: a session to use (not stopped); by default one of the configured engine.

    Raises:
        ConfigError: unknown table; no ``--yes`` off a terminal; the table is on an object store.
    """
    decl = next((t for t in config.silver if t.table == table), None)
    if decl is None:
        declared = ", ".join(t.table for t in config.silver) or "none"
        raise ConfigError([ConfigProblem("silver", f"no silver table named {table!r} (--table); declared: "
                                                   f"{declared}")], file=file)
    root = config.lakehouse.root.rstrip("/")
    target = SilverTarget.for_declaration(root, decl)
    state = config.silver_state_location()
    where = target.catalog_table or target.location
    # every folder to delete is checked before anything is deleted
    location = _local(target.location, f"table {decl.table}") if target.location is not None else None
    _local(state, "silver progress")
    checkpoints = local_path(checkpoint_location(root, decl.table))
    confirm("table", decl.table, f"rebuild silver table {decl.table}: drop it ({where}) and its progress, then "
            f"apply every event of bronze topic {decl.source} again.", yes=yes, command="rebuild", prompt=prompt)
    session = spark if spark is not None else create_session(config.engine)
    try:
        if target.catalog_table is not None:
            session.sql(f"DROP TABLE IF EXISTS {target.sql_ref()}")
        if location is not None:
            _remove_tree(location)
        _remove_tree(_local(ProgressStore(session, state).path(decl.table), "silver progress"))
        if checkpoints is not None:  # a Structured Streaming checkpoint (silver --stream) of the table
            _remove_tree(checkpoints)
        say(f"silver {decl.table}: dropped; rebuilding from bronze")
        result = run_silver(root=root, engine=config.engine, tables=[decl], options=config.silver_options,
                            sources=config.topic_prefixes(), once=True, progress=say,
                            storage_options=config.lakehouse.storage_options or None, spark=session)
    finally:
        if spark is None:
            stop_session(session)
    return result.ok
