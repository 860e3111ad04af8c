"""``cdc-lakehouse status``: where each source and silver table stands, read from the lakehouse.

Everything but the source-side log retention is read from the lakehouse with delta-rs: the
offsets table (position, commits), each bronze table's Delta log (size, files, rows, last
``seq``), the capture's status file (`pipelines.capture_status`: state, heartbeat, last
error) and silver's progress tables (lag). No database driver, password or Spark is needed.
With ``source_lag`` the sources are asked how much WAL or binlog they keep for the capture
(`pipelines.registry.retention_probe`), which needs their passwords and drivers.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from bronze.offset_control import Control, read_control
from bronze.schema import META_LAST_SEQ, offsets_path, topic_path
from bronze.view import BronzeView
from cdc_sources.common.captured_tables import stored_topics
from cdc_sources.spi import HISTORY_TOPIC, CdcError
from pipelines.capture_status import CaptureStatus, read_status
from pipelines.config import PipelineConfig, SourceSpec
from pipelines.metrics import CaptureState
from pipelines.positions import source_position
from pipelines.quality_status import QualityRun, last_quality_runs, quality_line
from pipelines.sizes import format_size
from pipelines.snapshot_status import RunningSnapshot, running_snapshots, snapshot_lines

log = logging.getLogger(__name__)

DEFAULT_LAG_WARN_BYTES = 10 << 30
HISTORY_DEPTH = 1000
"""Bronze commits looked at to date the oldest change a silver table has not applied."""


@dataclass(frozen=True)
class BronzeTableStatus:
    """One bronze table: Delta version, data files, bytes, rows and newest ``seq``; ``captured``: False
    when its source table was removed from the filters (it is kept, but no longer written), None when
    the stored offset does not say."""

    topic: str
    version: int
    files: int
    bytes: int
    rows: int
    last_seq: int
    last_commit_at: dt.datetime | None
    captured: bool | None = None


@dataclass(frozen=True)
class SourceLag:
    """The source-side log kept for the capture (``--source-lag``).

    Attributes:
        checked: whether the source was asked; ``detail`` says why not otherwise.
        retained_bytes / limit_bytes / server_position: see `cdc_sources.common.retention.Retention`.
        risk: None, or why the capture may lose its place (the log is gone, about to be, or
            above the warning size).
    """

    checked: bool
    retained_bytes: int | None = None
    limit_bytes: int | None = None
    server_position: str | None = None
    risk: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class SourceStatus:
    """One source.

    Attributes:
        state: `CaptureState`, or ``never run`` when nothing was captured yet.
        position: the committed position in the source's notation (None before the first commit).
        commits / events: bronze commits of the source, and records in its bronze tables.
        transactions: source transactions committed (from the status file; None if it has none).
        heartbeat_at: when the capture last wrote its status file.
        operation: the last operation on its offsets, when that is their newest commit
            (``decommissioned at ...``, ``offsets reset at ...``), else None.
        snapshots: the incremental or blocking snapshot under way at the committed offset.
    """

    name: str
    connector: str
    state: str
    position: str | None
    snapshot_completed: bool
    batch: int
    last_commit_at: dt.datetime | None
    last_commit_age_seconds: float | None
    commits: int
    events: int
    transactions: int | None
    tables: tuple[BronzeTableStatus, ...]
    source_lag: SourceLag
    last_error: str | None
    last_error_at: dt.datetime | None
    heartbeat_at: dt.datetime | None
    operation: str | None = None
    snapshots: tuple[RunningSnapshot, ...] = ()


@dataclass(frozen=True)
class SilverLag:
    """One silver table's lag behind its bronze table (None: its bronze table does not exist yet)."""

    table: str
    topic: str
    applied_seq: int | None
    bronze_seq: int | None
    events_behind: int | None
    seconds_behind: float | None
    updated_at: dt.datetime | None


@dataclass(frozen=True)
class PipelineStatus:
    """Everything ``status`` prints."""

    root: str
    at: dt.datetime
    sources: tuple[SourceStatus, ...]
    silver: tuple[SilverLag, ...]
    quality: tuple[QualityRun, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = _jsonable(asdict(self))
        return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


def pipeline_status(config: PipelineConfig, *, source_lag: bool = False,
                    lag_warn_bytes: int | None = None) -> PipelineStatus:
    """Read the status of every source and silver table of ``config``."""
    now = dt.datetime.now(dt.UTC)
    root, storage = config.lakehouse.root, config.lakehouse.storage_options or None
    sources = tuple(_source_status(config, i, spec, now, source_lag, lag_warn_bytes)
                    for i, spec in enumerate(config.sources))
    state = config.silver_state_location()
    silver = tuple(_silver_lag(root, state, t.table, t.source, now, storage) for t in config.silver)
    checked = [t.table for t in config.silver if t.expectations]
    quality = last_quality_runs(state, checked, storage) if checked else ()
    return PipelineStatus(root, now, sources, silver, quality)


def _source_status(config: PipelineConfig, index: int, spec: SourceSpec, now: dt.datetime, source_lag: bool,
                   lag_warn_bytes: int | None) -> SourceStatus:
    root, storage = config.lakehouse.root, config.lakehouse.storage_options or None
    stored = BronzeView(root, spec.name, storage).stored_offset()
    offsets = _table(offsets_path(root, spec.name), storage)
    commits, last_commit_at = 0, None
    topics: set[str] = set()
    if offsets is not None:
        rows = offsets.to_pyarrow_table(columns=["topics"])
        commits = rows.num_rows
        for names in rows.column("topics").to_pylist():
            topics.update(names or [])
        last_commit_at = _commit_time(offsets.history(1)[0])
    topics.discard(HISTORY_TOPIC)
    tables = tuple(t for t in (_bronze_table(root, topic, storage) for topic in sorted(topics)) if t is not None)
    if stored is not None:
        tables = mark_uncaptured(tables, stored.offset, config.topic_prefixes()[spec.name],
                                 str(spec.options.get("topic.delimiter") or "."))
    try:
        record = read_status(root, spec.name, storage)
    except ValueError as exc:
        log.warning("source %s: ignoring an unreadable status file: %s", spec.name, exc)
        record = None
    state = _state(record, stored is not None, now)
    control = read_control(root, spec.name, storage)
    operation = None
    if control.control is Control.DECOMMISSION:
        state, operation = "decommissioned", f"decommissioned at {control.at}; capture refuses it until a reset"
    elif control.control is Control.RESET:
        operation = f"offsets reset at {control.at}; the next capture starts over"
    position = source_position(stored.offset) if stored else None
    try:
        snapshots = running_snapshots(stored.offset if stored else None)
    except ValueError as exc:
        log.warning("source %s: %s", spec.name, exc)
        snapshots = ()
    lag = _source_lag(config, index, spec, stored.offset if stored else None, lag_warn_bytes) if source_lag else \
        SourceLag(False, detail="not checked (--source-lag connects to the source)")
    return SourceStatus(
        spec.name, spec.connector, state, position.text if position else None,
        bool(stored and stored.snapshot_completed), stored.batch if stored else 0, last_commit_at,
        None if last_commit_at is None else (now - last_commit_at).total_seconds(), commits,
        sum(t.rows for t in tables), record.transactions_committed if record else None, tables, lag,
        record.last_error if record else None, record.last_error_at if record else None,
        record.heartbeat_at if record else None, operation, snapshots)


def mark_uncaptured(tables: tuple[BronzeTableStatus, ...], offset: Mapping[str, Any], prefix: str,
                    delimiter: str) -> tuple[BronzeTableStatus, ...]:
    """``tables`` with ``captured`` set from the captured topics the offset records: a table topic
    (``<prefix><d><schema><d><table>``) not among them was removed from the filters."""
    captured = stored_topics(offset)
    if captured is None:
        return tables
    lead = f"{prefix}{delimiter}"

    def is_table(topic: str) -> bool:
        return topic.startswith(lead) and delimiter in topic[len(lead):]

    return tuple(replace(t, captured=t.topic in captured or not is_table(t.topic)) for t in tables)


def _topic_cell(t: BronzeTableStatus) -> str:
    return f"{t.topic} (no longer captured)" if t.captured is False else t.topic


def _state(record: CaptureStatus | None, committed: bool, now: dt.datetime) -> str:
    if record is not None:
        return str(record.live_state(now))
    return str(CaptureState.STOPPED) if committed else "never run"


def _table(path: str, storage: Mapping[str, str] | None) -> DeltaTable | None:
    try:
        return DeltaTable(path, storage_options=dict(storage) if storage else None)
    except TableNotFoundError:
        return None


def _commit_time(commit: Mapping[str, Any]) -> dt.datetime | None:
    ts = commit.get("timestamp")
    return None if ts is None else dt.datetime.fromtimestamp(int(ts) / 1000, dt.UTC)


def _bronze_table(root: str, topic: str, storage: Mapping[str, str] | None) -> BronzeTableStatus | None:
    table = _table(topic_path(root, topic), storage)
    if table is None:
        return None
    adds = pa.table(table.get_add_actions(flatten=True))
    size = adds.column("size_bytes")
    rows = adds.column("num_records") if "num_records" in adds.schema.names else None
    last = table.history(1)[0]
    return BronzeTableStatus(
        topic, table.version(), adds.num_rows, int(pc.sum(size).as_py() or 0),
        int(pc.sum(rows).as_py() or 0) if rows is not None else 0, _last_seq(table) or 0, _commit_time(last))


def _last_seq(table: DeltaTable) -> int | None:
    for commit in table.history(HISTORY_DEPTH):
        if META_LAST_SEQ in commit:
            return int(commit[META_LAST_SEQ])
    return None


def _silver_lag(root: str, state: str, name: str, topic: str, now: dt.datetime,
                storage: Mapping[str, str] | None) -> SilverLag:
    progress = _table(f"{state}/progress/{name}", storage)
    applied, updated = None, None
    if progress is not None:
        rows = progress.to_pyarrow_table(columns=["last_seq", "updated_at"]).to_pylist()
        if rows:
            best = max(rows, key=lambda r: r["last_seq"])
            applied, updated = int(best["last_seq"]), best["updated_at"]
    bronze = _table(topic_path(root, topic), storage)
    if bronze is None:
        return SilverLag(name, topic, applied, None, None, None, updated)
    history = [c for c in bronze.history(HISTORY_DEPTH) if META_LAST_SEQ in c]  # newest first
    bronze_seq = int(history[0][META_LAST_SEQ]) if history else 0
    done = applied or 0
    behind = max(bronze_seq - done, 0)
    seconds = 0.0
    if behind:
        # the oldest bronze commit holding a change silver has not applied
        pending = [c for c in history if int(c[META_LAST_SEQ]) > done]
        oldest = _commit_time(pending[-1]) if pending else None
        seconds = (now - oldest).total_seconds() if oldest else 0.0
    return SilverLag(name, topic, applied, bronze_seq, behind, seconds, updated)


def _source_lag(config: PipelineConfig, index: int, spec: SourceSpec, offset: dict[str, Any] | None,
                warn_bytes: int | None) -> SourceLag:
    if offset is None:
        return SourceLag(False, detail="not checked: nothing captured yet")
    from pipelines.registry import retention_probe

    probe = retention_probe(spec, f"sources[{index}]")
    try:
        found = probe(offset)
    except CdcError as exc:
        return SourceLag(False, risk=None, detail=f"cannot check: {exc}")
    threshold = warn_bytes if warn_bytes is not None else (found.limit_bytes or DEFAULT_LAG_WARN_BYTES)
    risk = None
    if found.lost:
        risk = "lost"
    elif found.at_risk:
        risk = "at risk"
    elif found.retained_bytes is not None and found.limit_bytes is not None and warn_bytes is None \
            and found.retained_bytes >= 0.8 * found.limit_bytes:
        risk = f"above 80% of max_slot_wal_keep_size ({format_size(found.limit_bytes)})"
    elif found.retained_bytes is not None and found.retained_bytes >= threshold:
        risk = f"above {format_size(threshold)}"
    return SourceLag(True, found.retained_bytes, found.limit_bytes, found.server_position, risk, found.detail)


# --- rendering ------------------------------------------------------------------------------


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d"


def _when(at: dt.datetime | None, now: dt.datetime) -> str:
    return "-" if at is None else f"{at.strftime('%Y-%m-%d %H:%M:%SZ')} ({_age((now - at).total_seconds())} ago)"


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return [line.format(*header).rstrip(), *(line.format(*r).rstrip() for r in rows)]


def render(status: PipelineStatus) -> list[str]:
    """The status as readable lines: one block per source, then the silver tables."""
    now = status.at
    out = [f"lakehouse root: {status.root}"]
    for s in status.sources:
        out.append("")
        snapshot = ("nothing committed to bronze yet" if s.batch == 0 else
                    "snapshot completed" if s.snapshot_completed else "snapshot not completed")
        out.append(f"source {s.name} ({s.connector}): {s.state}, {snapshot}")
        if s.operation:
            out.append(f"  operation:     {s.operation}")
        out.append(f"  position:      {s.position or '-'}")
        out.extend(f"  snapshot:      {line}" for line in snapshot_lines(s.snapshots))
        out.append(f"  last commit:   {_when(s.last_commit_at, now)}, batch {s.batch}, {s.commits} commits")
        tx = "-" if s.transactions is None else f"{s.transactions:,}"
        out.append(f"  committed:     {s.events:,} events, {tx} transactions")
        lag = s.source_lag
        if lag.checked:
            kept = format_size(lag.retained_bytes)
            limit = f" (limit {format_size(lag.limit_bytes)})" if lag.limit_bytes is not None else ""
            risk = f"  RISK: {lag.risk}" if lag.risk else ""
            out.append(f"  source keeps:  {kept}{limit}, server at {lag.server_position}; {lag.detail}{risk}")
        else:
            out.append(f"  source keeps:  {lag.detail}")
        if s.last_error:
            out.append(f"  last error:    {_when(s.last_error_at, now)}: {s.last_error}")
        if s.tables:
            rows = [[_topic_cell(t), f"{t.rows:,}", str(t.files), format_size(t.bytes), str(t.last_seq),
                     _when(t.last_commit_at, now)] for t in s.tables]
            out.extend("  " + line for line in _grid(["bronze table", "rows", "files", "size", "last seq",
                                                      "last commit"], rows))
    if status.silver:
        out.append("")
        rows = [[g.table, g.topic, "-" if g.applied_seq is None else str(g.applied_seq),
                 "-" if g.bronze_seq is None else str(g.bronze_seq),
                 "-" if g.events_behind is None else f"{g.events_behind:,}", _age(g.seconds_behind)]
                for g in status.silver]
        out.extend(_grid(["silver table", "bronze topic", "applied seq", "bronze seq", "events behind",
                          "behind"], rows))
    if status.quality:
        out.append("")
        out.extend(_grid(["quality of table", "last checked", "expectations"],
                         [[q.table, _when(q.checked_at, now), quality_line(q)] for q in status.quality]))
    return out
