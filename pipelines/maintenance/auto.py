"""Automatic compaction between the silver passes of ``run`` and of a looping ``silver``.

Capture commits one small data file per bronze topic every ``commit_interval_ms``, and every
silver increment lists, plans and opens them; without ``maintain`` on a schedule the files pile
up. Like Delta's auto compaction, a table is compacted once it holds
``maintenance.auto_compact_min_files`` small files (smaller than half the target size), with
the same code as ``maintain`` (`pipelines.maintenance.run.maintain`, ``compact_only``): a rewrite
that changes no data, which concurrent capture appends commute with and silver reads through.
Nothing is vacuumed: the files compacted away stay until ``maintain`` removes them once no
silver table may read them.

Checking costs nothing while a topic is below the threshold: the increment already counted the
bronze files (`pipelines.silver_runner.TableRunResult.files_total`); only a topic with that many
files, and each silver table an increment changed, is listed with its file sizes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from bronze.schema import topic_path
from pipelines.config import PipelineConfig
from pipelines.maintenance.plan import TableKind
from pipelines.maintenance.run import Target, maintain, silver_target
from pipelines.silver_runner import TableRunResult, source_of_topic

__all__ = ["DELTA_RS_TARGET_SIZE", "AutoCompactor", "small_files"]

log = logging.getLogger(__name__)

DELTA_RS_TARGET_SIZE = 100 * 1024 * 1024
"""delta-rs's compaction target when neither the option nor ``delta.targetFileSize`` gives one."""


def small_files(sizes: Iterable[int], target_size: int) -> int:
    """How many of the data files (their sizes in bytes) are small: under half the target size."""
    return sum(1 for s in sizes if s < target_size // 2)


class AutoCompactor:
    """Called with a pass's results: compacts each table of the pass that crossed the threshold.

    A table that cannot be read or compacted is logged and left for the next pass or ``maintain``;
    silver goes on either way.
    """

    def __init__(self, config: PipelineConfig, say: Callable[[str], None]) -> None:
        self.config, self.say = config, say
        self.storage = config.lakehouse.storage_options or None
        self.compactions = 0

    def __call__(self, results: Sequence[TableRunResult]) -> None:
        threshold = self.config.maintenance.auto_compact_min_files
        if threshold is None:
            return
        try:
            self._pass(results, threshold)
        except Exception:  # compaction is an optimisation: silver goes on, the next pass tries again
            log.exception("auto-compaction failed; left for the next pass")

    def _pass(self, results: Sequence[TableRunResult], threshold: int) -> None:
        chosen: dict[str, Target] = {}
        applied = [r for r in results if r.status == "applied"]
        for res in applied:
            if res.files_total is None or res.files_total >= threshold:  # None: not counted by delta-rs
                bronze = self._bronze(res.topic)
                if bronze.path not in chosen and self._due(bronze, threshold):
                    chosen[bronze.path] = bronze
        if self.config.maintenance.silver:
            by_name = {d.table: d for d in self.config.silver}
            for res in applied:
                decl = by_name.get(res.table)
                silver = None if decl is None else silver_target(self.config, decl)
                if silver is not None and not silver.clustered and self._due(silver, threshold):
                    chosen[silver.path] = silver
        if chosen:
            self._compact(list(chosen.values()))

    def _bronze(self, topic: str) -> Target:
        root = self.config.lakehouse.root.rstrip("/")
        return Target(TableKind.BRONZE, topic, topic_path(root, topic),
                      source_of_topic(topic, self.config.topic_prefixes()))

    def _due(self, target: Target, threshold: int) -> bool:
        try:
            table = DeltaTable(target.path, storage_options=self.storage)
            sizes = pa.table(table.get_add_actions(flatten=True)).column("size_bytes").to_pylist()
        except TableNotFoundError:
            return False
        except (DeltaError, OSError) as exc:
            log.warning("auto-compaction: cannot list the files of %s %s: %s", target.kind.value, target.name,
                        str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return False
        return small_files((int(s) for s in sizes), self._target_size(table)) >= threshold

    def _target_size(self, table: DeltaTable) -> int:
        configured = self.config.maintenance.target_file_size
        if configured is not None:
            return configured
        prop = table.metadata().configuration.get("delta.targetFileSize")
        return int(prop) if prop is not None and prop.isdigit() else DELTA_RS_TARGET_SIZE

    def _compact(self, chosen: list[Target]) -> None:
        for report in maintain(self.config, chosen, compact_only=True):
            name = f"{report.target.kind.value} {report.target.name}"
            if report.failed is not None:
                log.warning("auto-compaction of %s failed (left for the next pass): %s", name, report.failed)
                continue
            self.compactions += 1
            self.say(f"auto-compaction: {name}: {report.compacted[0]} small files into {report.compacted[1]} "
                     f"(files {report.files[0]} -> {report.files[1]})")
