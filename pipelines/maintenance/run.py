"""Carrying a maintenance plan out with delta-rs, table by table, and reporting what changed.

Order per bronze table: retention (delete), compaction, VACUUM. Every commit is conflict-checked
by delta-rs: capture appends commute with compaction (a rewrite that changes no data) and with
retention's delete (appends add rows newer than the cut); a commit that loses to a concurrent
writer is retried, then reported and left for the next run.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from bronze.schema import CDC_DIR, HISTORY_TABLE, OFFSETS_TABLE, SCHEMAS_TABLE, bronze_root
from pipelines.config import PipelineConfig
from pipelines.maintenance.needs import silver_readers
from pipelines.maintenance.plan import Reader, TableKind, quality_cut, retention_cut, vacuum_window
from silver.declarations import SilverTable
from silver.quality_table import quality_location

__all__ = ["MAINTENANCE_META", "QUALITY_TARGET", "TableReport", "Target", "maintain", "silver_target", "targets"]

MAINTENANCE_META = "cdc.maintenance"
"""Commit metadata key marking maintenance commits (its value: the operation)."""

QUALITY_TARGET = "_cdc/quality"
"""The name ``maintain`` gives the data-quality results table (``--table`` picks it by this name)."""

_ATTEMPTS = 3


@dataclass(frozen=True)
class Target:
    """A table to maintain.

    Attributes:
        kind: bronze, bronze side table or silver.
        name: the bronze topic, ``_cdc/<source>/<table>``, or the silver table name.
        path: its location.
        source: the source it belongs to (silver: the source of its topic).
        clustered: liquid clustering declared (compaction is left to the engine).
    """

    kind: TableKind
    name: str
    path: str
    source: str
    clustered: bool = False


@dataclass
class TableReport:
    """What maintenance did to one table (or would do, with ``--dry-run``)."""

    target: Target
    files: tuple[int, int] = (0, 0)
    bytes: tuple[int, int] = (0, 0)
    versions: tuple[int, int] = (0, 0)
    compacted: tuple[int, int] = (0, 0)  # files removed, files added
    vacuumed: int = 0
    deleted_rows: int = 0
    notes: list[str] = field(default_factory=list)
    failed: str | None = None

    def line(self, dry_run: bool) -> str:
        t = self.target
        head = f"{t.kind.value} {t.name}"
        if self.failed is not None:
            return f"{head}: FAILED: {self.failed}"
        if dry_run:
            parts = [f"{self.files[0]} files, {_size(self.bytes[0])}, version {self.versions[0]}",
                     f"would compact {self.compacted[0]} small files", f"would vacuum {self.vacuumed} files"]
        else:
            parts = [f"files {self.files[0]} -> {self.files[1]}", f"{_size(self.bytes[0])} -> {_size(self.bytes[1])}",
                     f"version {self.versions[0]} -> {self.versions[1]}",
                     f"compacted {self.compacted[0]} into {self.compacted[1]}", f"vacuumed {self.vacuumed} files"]
            if self.deleted_rows:
                parts.append(f"retention deleted {self.deleted_rows} rows")
        return f"{head}: {', '.join(parts)}" + "".join(f"\n  {n}" for n in self.notes)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)  # pragma: no cover


def targets(config: PipelineConfig, *, sources: Sequence[str] | None = None,
            tables: Sequence[str] | None = None) -> list[Target]:
    """Every table ``maintain`` looks at: each source's bronze topics and side tables, then the
    silver tables (path-addressed, when ``maintenance.silver``); filtered by source and name."""
    root = config.lakehouse.root.rstrip("/")
    prefixes = config.topic_prefixes()
    found: list[Target] = []
    storage = config.lakehouse.storage_options or None
    for source, prefix in prefixes.items():
        for topic in _bronze_topics(root, source, storage):
            if topic.startswith(f"{prefix}.") or topic == f"__debezium-heartbeat.{prefix}":
                found.append(Target(TableKind.BRONZE, topic, f"{bronze_root(root)}/{topic}", source))
        for side in (OFFSETS_TABLE, SCHEMAS_TABLE, HISTORY_TABLE):
            found.append(Target(TableKind.SIDE, f"{CDC_DIR}/{source}/{side}",
                                f"{bronze_root(root)}/{CDC_DIR}/{source}/{side}", source))
    if config.maintenance.silver:
        found.extend(t for decl in config.silver if (t := silver_target(config, decl)) is not None)
        if any(decl.expectations for decl in config.silver):
            results = quality_location(config.silver_state_location())
            found.append(Target(TableKind.QUALITY, QUALITY_TARGET, results, ""))
    return [t for t in found if (not sources or t.source in sources) and (not tables or t.name in tables)]


def silver_target(config: PipelineConfig, decl: SilverTable) -> Target | None:
    """A silver table as a maintenance target (None: a catalog table, left to the engine)."""
    location = _silver_location(config.lakehouse.root.rstrip("/"), decl)
    if location is None:
        return None
    owner = next((s for s, p in config.topic_prefixes().items() if decl.source.startswith(f"{p}.")), "")
    return Target(TableKind.SILVER, decl.table, location, owner, clustered=bool(decl.cluster_by))


def _silver_location(root: str, decl: SilverTable) -> str | None:
    if decl.location is not None:
        return decl.location
    return None if decl.catalog_table is not None else f"{root}/silver/{decl.table}"


def _bronze_topics(root: str, source: str, storage: dict[str, str] | None) -> list[str]:
    """The bronze tables' folders (a local root), else the topics a source's schema history and
    offsets name (an object store, listed with the lakehouse's storage options through delta-rs)."""
    base = bronze_root(root)
    local = base.removeprefix("file://")
    if "://" not in local:
        entries = pafs.LocalFileSystem().get_file_info(pafs.FileSelector(local, allow_not_found=True))
        return sorted(e.base_name for e in entries if e.type is pafs.FileType.Directory and e.base_name != CDC_DIR)
    topics: set[str] = set()
    for side, column in ((SCHEMAS_TABLE, "topic"), (OFFSETS_TABLE, "topics")):
        try:
            values = DeltaTable(f"{base}/{CDC_DIR}/{source}/{side}", storage_options=storage).to_pyarrow_table(
                columns=[column]).column(column)
        except TableNotFoundError:
            continue
        flat = pc.list_flatten(values) if column == "topics" else values
        topics.update(str(t) for t in pc.unique(flat).to_pylist())
    return sorted(topics)


def maintain(config: PipelineConfig, chosen: Sequence[Target], *, dry_run: bool = False,
             now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
             progress: Callable[[TableReport], None] | None = None,
             compact_only: bool = False) -> list[TableReport]:
    """Maintain ``chosen`` tables; one report each (a table that fails is reported, the rest go on).

    ``compact_only``: compaction alone, no retention and no VACUUM (the automatic compaction,
    `pipelines.maintenance.auto`).
    """
    readers = {} if compact_only else silver_readers(config)
    storage = config.lakehouse.storage_options or None
    reports = []
    for target in chosen:
        report = TableReport(target)
        try:
            _maintain_table(config, target, readers.get(target.name, []) if target.kind is TableKind.BRONZE else [],
                            storage, report, dry_run=dry_run, now=now(), compact_only=compact_only)
        except TableNotFoundError:
            report.notes.append("no table yet")
        except (DeltaError, OSError) as exc:
            report.failed = str(exc).splitlines()[0]
        reports.append(report)
        if progress is not None:
            progress(report)
    return reports


def _maintain_table(config: PipelineConfig, target: Target, readers: list[Reader], storage: dict[str, str] | None,
                    report: TableReport, *, dry_run: bool, now: dt.datetime, compact_only: bool = False) -> None:
    opts = config.maintenance
    table = DeltaTable(target.path, storage_options=storage)
    files, size = _stats(table)
    report.files, report.bytes = (files, files), (size, size)
    report.versions = (int(table.version()), int(table.version()))
    if target.kind is TableKind.BRONZE and not compact_only:
        cut = retention_cut(opts.bronze_retention_days, readers, now)
        if opts.bronze_retention_days is not None:
            report.notes.append(f"retention: {cut.reason}")
        if cut.predicate is not None and not dry_run:
            metrics = _retry(lambda: table.delete(cut.predicate, commit_properties=_props("retention")), table)
            report.deleted_rows = int(metrics.get("num_deleted_rows", 0))
    if target.kind is TableKind.QUALITY and not compact_only:
        qcut = quality_cut(opts.quality_retention_days, now)
        report.notes.append(f"retention: {qcut.reason}")
        if qcut.predicate is not None and not dry_run:
            predicate = qcut.predicate
            metrics = _retry(lambda: table.delete(predicate, commit_properties=_props("retention")), table)
            report.deleted_rows = int(metrics.get("num_deleted_rows", 0))
    if target.clustered:
        report.notes.append("compaction: clustered table, left to the engine's OPTIMIZE")
    elif dry_run:
        limit = opts.target_file_size or 100 * 1024 * 1024
        sizes = pa.table(table.get_add_actions(flatten=True)).column("size_bytes").to_pylist()
        small = sum(1 for s in sizes if int(s) < limit)
        report.compacted = (small if small > 1 else 0, 0)
    else:
        metrics = _retry(lambda: table.optimize.compact(target_size=opts.target_file_size,
                                                        commit_properties=_props("compact")), table)
        report.compacted = (int(metrics.get("numFilesRemoved", 0)), int(metrics.get("numFilesAdded", 0)))
    table.update_incremental()
    if compact_only:
        _finish(table, report, files, size, dry_run)
        return
    current = int(table.version())
    ages = _version_ages(table, [r.version for r in readers if r.version is not None], current, now)
    window = vacuum_window(opts.vacuum_retention_hours, readers, ages, current)
    report.notes.append(f"vacuum: {window.reason}")
    removed = table.vacuum(retention_hours=window.hours, dry_run=dry_run, enforce_retention_duration=window.enforce,
                           keep_versions=list(window.keep_versions) or None, full=False,
                           commit_properties=_props("vacuum"))
    report.vacuumed = len(removed)
    table.update_incremental()
    _finish(table, report, files, size, dry_run)


def _finish(table: DeltaTable, report: TableReport, files: int, size: int, dry_run: bool) -> None:
    after_files, after_size = _stats(table)
    if not dry_run:
        report.files, report.bytes = (files, after_files), (size, after_size)
        report.versions = (report.versions[0], int(table.version()))


def _props(operation: str) -> CommitProperties:
    return CommitProperties(custom_metadata={MAINTENANCE_META: operation})


def _retry(op: Callable[[], dict[str, Any]], table: DeltaTable) -> dict[str, Any]:
    for attempt in range(_ATTEMPTS):
        try:
            return op()
        except CommitFailedError:
            if attempt == _ATTEMPTS - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
            table.update_incremental()
    raise AssertionError("unreachable")  # pragma: no cover


def _stats(table: DeltaTable) -> tuple[int, int]:
    actions = pa.table(table.get_add_actions(flatten=True))
    return actions.num_rows, sum(int(s) for s in actions.column("size_bytes").to_pylist())


def _version_ages(table: DeltaTable, versions: list[int], current: int, now: dt.datetime) -> dict[int, float]:
    """Hours since each version's commit (a version no longer in the log: the oldest one's age)."""
    if not versions:
        return {}
    commits = table.history(current - min(versions) + 1)
    stamps = {int(c["version"]): int(c["timestamp"]) for c in commits if "version" in c and "timestamp" in c}
    oldest = min(stamps.values()) if stamps else 0
    return {v: (now.timestamp() * 1000 - stamps.get(v, oldest)) / 3_600_000 for v in versions}
