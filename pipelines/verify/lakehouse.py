"""The lakehouse side of `verify`, read with delta-rs (no Spark): capture's committed offset,
bronze seq bounds and tail, silver progress and silver rows.

Reading silver with delta-rs makes `verify` independent of the engine silver runs on and
starts no Spark session; it needs the silver table to be at a path (not only a catalog name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from bronze.schema import COL_KEY, COL_OP, COL_POSITION, COL_SEQ, offsets_path, topic_path
from pipelines.verify.model import VerifyError

__all__ = ["CommittedOffset", "bronze_max_seq", "bronze_tail", "committed_offset", "exists", "progress_seq",
           "silver_rows", "silver_schema"]


def _table(path: str, storage: Mapping[str, str] | None) -> Any:
    """The Delta table at ``path``, or None if there is none."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(path, storage_options=dict(storage) if storage else None)
    except TableNotFoundError:
        return None


def exists(path: str, storage: Mapping[str, str] | None) -> bool:
    """True if a Delta table exists at ``path``."""
    return _table(path, storage) is not None


@dataclass(frozen=True)
class CommittedOffset:
    """A source's newest committed capture batch: its number, offset, and when it committed."""

    batch: int
    offset: dict[str, Any]
    snapshot_completed: bool
    committed_at: str


def committed_offset(root: str, source: str, storage: Mapping[str, str] | None) -> CommittedOffset | None:
    """The newest row of ``_cdc/<source>/offsets``, or None if capture committed nothing yet."""
    table = _table(offsets_path(root, source), storage)
    if table is None:
        return None
    rows = table.to_pyarrow_table(columns=["batch", "offset", "snapshot_completed", "committed_at"])
    if rows.num_rows == 0:
        return None
    top = rows.take([int(pc.index(rows.column("batch"), pc.max(rows.column("batch"))).as_py())]).to_pylist()[0]
    return CommittedOffset(int(top["batch"]), orjson.loads(top["offset"]), bool(top["snapshot_completed"]),
                           str(top["committed_at"]))


def bronze_max_seq(root: str, topic: str, storage: Mapping[str, str] | None) -> int:
    """The highest ``seq`` in a bronze table (0 if it is empty or missing), from the Delta log's
    file statistics."""
    table = _table(topic_path(root, topic), storage)
    if table is None:
        return 0
    actions = pa.table(table.get_add_actions(flatten=True))
    column = f"max.{COL_SEQ}"
    if actions.num_rows == 0 or column not in actions.column_names:
        return 0
    top = pc.max(actions.column(column)).as_py()
    return 0 if top is None else int(top)


@dataclass(frozen=True)
class TailRow:
    """A bronze row after a given ``seq``: its key (JSON), op and position."""

    seq: int
    op: str | None
    key: dict[str, Any] | None
    position: dict[str, Any]


def bronze_tail(root: str, topic: str, after_seq: int, storage: Mapping[str, str] | None) -> list[TailRow]:
    """The bronze rows with ``seq > after_seq``, in ``seq`` order (files below it are skipped)."""
    table = _table(topic_path(root, topic), storage)
    if table is None:
        return []
    data = table.to_pyarrow_dataset().to_table(columns=[COL_SEQ, COL_OP, COL_KEY, COL_POSITION],
                                               filter=ds.field(COL_SEQ) > after_seq).sort_by(COL_SEQ)
    return [TailRow(int(r[COL_SEQ]), r[COL_OP], None if r[COL_KEY] is None else orjson.loads(r[COL_KEY]),
                    orjson.loads(r[COL_POSITION])) for r in data.to_pylist()]


def progress_seq(state_location: str, table: str, storage: Mapping[str, str] | None) -> int | None:
    """The last bronze ``seq`` silver applied to ``table`` (its progress record), None if never."""
    progress = _table(f"{state_location.rstrip('/')}/progress/{table}", storage)
    if progress is None:
        return None
    rows = progress.to_pyarrow_table(columns=["last_seq"]).column("last_seq")
    top = pc.max(rows).as_py() if len(rows) else None
    return None if top is None else int(top)


def silver_schema(location: str, storage: Mapping[str, str] | None) -> pa.Schema:
    """A silver table's Arrow schema.

    Raises:
        VerifyError: the table does not exist or delta-rs cannot read it.
    """
    table = _table(location, storage)
    if table is None:
        raise VerifyError(f"silver table at {location} does not exist yet: has silver run?")
    try:
        return table.to_pyarrow_dataset().schema
    except Exception as exc:  # a reader feature delta-rs lacks, an unreachable store
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise VerifyError(f"cannot read the silver table at {location} with delta-rs: {first}") from None


def silver_rows(location: str, storage: Mapping[str, str] | None, columns: list[str]) -> pa.Table:
    """Every row of a silver table (only ``columns``).

    Raises:
        VerifyError: the table does not exist or delta-rs cannot read it.
    """
    table = _table(location, storage)
    if table is None:
        raise VerifyError(f"silver table at {location} does not exist yet: has silver run?")
    try:
        return table.to_pyarrow_table(columns=columns)
    except Exception as exc:  # a reader feature delta-rs lacks, an unreachable store
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise VerifyError(f"cannot read the silver table at {location} with delta-rs: {first}") from None
