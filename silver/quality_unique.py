"""`unique` expectations against the rows silver already holds.

Great Expectations sees only the increment (`silver.quality`), so a value that repeats a row
silver already holds would pass. This module finds those rows: for each ``unique`` expectation,
the increment's upserts whose (non-null) values equal those of a current silver row that stays
after the increment, i.e. a row whose key the increment neither upserts nor deletes. Rows of keys
the increment changes are replaced (or removed), so their old values do not count; soft-deleted
rows are not current. One Spark job per ``unique`` expectation whose columns silver already has.

The caller passes no silver rows when the increment truncates the table: every row silver holds
then goes (or is flagged deleted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from silver.declarations import SilverTable
from silver.expectations import ExpectationType
from silver.sql import column

__all__ = ["repeats_of_silver"]


def repeats_of_silver(decl: SilverTable, upserts: DataFrame, changed_keys: DataFrame, existing: DataFrame | None,
                      keys: Sequence[str], row_id: str) -> Mapping[str, frozenset[int]]:
    """Expectation label -> the ``row_id`` of the upserts that repeat a staying silver row's values.

    Args:
        upserts: the rows the increment upserts (silver column names and ``row_id``).
        changed_keys: the keys the increment upserts or deletes (``keys`` columns).
        existing: silver's rows before the increment; None when it has none that stay.
    """
    found: dict[str, frozenset[int]] = {}
    checks = [e for e in decl.expectations if e.type is ExpectationType.UNIQUE]
    if existing is None or not checks:
        return found
    staying = existing
    if decl.deletes == "soft":
        staying = staying.where(~sf.coalesce(column(decl.soft_delete.flag), sf.lit(False)))
    staying = staying.join(changed_keys, on=list(keys), how="left_anti")
    held = set(existing.columns)
    for e in checks:
        cols = list(e.columns or [])
        if not set(cols) <= held:  # a column silver does not have yet holds no value to repeat
            continue
        values = staying.where(_present(cols)).select(*[column(c) for c in cols]).distinct()
        hits = upserts.where(_present(cols)).join(values, on=cols, how="left_semi").select(column(row_id))
        found[e.label] = frozenset(int(r[0]) for r in hits.collect())
    return found


def _present(cols: Sequence[str]) -> Column:
    """Nulls pass ``unique`` (as in Great Expectations): only rows with every column set count."""
    return reduce(lambda a, b: a & b, [column(c).isNotNull() for c in cols])
