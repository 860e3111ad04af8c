"""The re-snapshot tests' oracle: silver tables (read with delta-rs) against the source's rows.

The pipelines declare, over one source table ``items (id, name, qty)``: ``items`` (SCD1, hard
deletes), ``items_soft`` (soft deletes) and ``items_hist`` (SCD2).
"""

from __future__ import annotations

from typing import Any

from deltalake import DeltaTable

COLS = ("id", "name", "qty")
SILVER = ("  - {table: items, source: TOPIC}\n"
          "  - {table: items_soft, source: TOPIC, deletes: soft}\n"
          "  - {table: items_hist, source: TOPIC, history: scd2}\n")


def silver_yaml(topic: str) -> str:
    """The ``silver:`` entries (without the ``silver:`` line) for the source topic."""
    return SILVER.replace("TOPIC", topic)


def table_rows(root: str, name: str) -> list[dict[str, Any]]:
    return DeltaTable(f"{root}/silver/{name}").to_pyarrow_table().to_pylist()


def check_silver(root: str, want: set[tuple[Any, ...]], ever: set[int]) -> None:
    """SCD1 equals ``want``; soft deletes: unflagged rows equal it and every other key in ``ever`` is
    flagged; SCD2: current versions equal it, every other key has a version closed as deleted."""
    live = {r[0] for r in want}
    gone = ever - live
    scd1 = [tuple(r[c] for c in COLS) for r in table_rows(root, "items")]
    assert len(scd1) == len(set(scd1)), "duplicated rows"
    assert set(scd1) == want, (f"{len(set(scd1) - want)} unexpected, e.g. {sorted(set(scd1) - want)[:3]}; "
                               f"{len(want - set(scd1))} missing, e.g. {sorted(want - set(scd1))[:3]}")
    soft = table_rows(root, "items_soft")
    assert {tuple(r[c] for c in COLS) for r in soft if not r["_cdc_deleted"]} == want
    flagged = {r["id"] for r in soft if r["_cdc_deleted"]}
    assert flagged == gone, f"{len(gone - flagged)} deleted keys not flagged, {len(flagged - gone)} wrongly"
    assert all(r["_cdc_deleted_at"] is not None for r in soft if r["_cdc_deleted"])
    hist = table_rows(root, "items_hist")
    current = [tuple(r[c] for c in COLS) for r in hist if r["_cdc_is_current"]]
    assert len(current) == len(set(current)) and set(current) == want
    ended = {r["id"] for r in hist if not r["_cdc_is_current"] and r["_cdc_deleted"]}
    assert gone <= ended, f"{len(gone - ended)} deleted keys have no version closed as deleted"
    assert all(r["_cdc_valid_to"] is not None for r in hist if not r["_cdc_is_current"])


def never_closed_as_deleted(root: str, keys: set[int]) -> set[int]:
    """Of ``keys``, those with an SCD2 version closed as deleted (keys never deleted must have none)."""
    return {r["id"] for r in table_rows(root, "items_hist") if r["_cdc_deleted"]} & keys
