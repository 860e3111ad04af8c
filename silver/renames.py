"""Column renames: following a source column that was renamed, instead of seeing a drop and an add.

The schema history records, per version, the columns the source renamed to reach it from the
version before (`silver.schema_history.TopicSchema.renamed_columns`; the capture knows them for
certain: MySQL/MariaDB from the DDL, PostgreSQL from the catalog's column numbers). From that:

* `current_names`: for every version, each of its columns' name in the newest version (so a
  row written before a rename decodes into the renamed column);
* `silver_renames`: the silver columns to rename, given the silver table's columns. Renaming is
  idempotent: a pair applies only while silver still has the old column and not the new one, so
  a run repeated after a crash, or a later column that takes the old name, renames nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from silver.declarations import SilverTable
from silver.errors import IncompatibleSchemaChangeError
from silver.schema_history import TopicSchema
from silver.target import SilverTarget

__all__ = ["current_names", "follow_renames", "silver_renames"]


def current_names(history: Sequence[TopicSchema]) -> dict[str, dict[str, str]]:
    """Per schema id, ``{name in that version: name in the newest version}`` for the columns
    renamed since that version (others are left out). A column followed through the versions
    stops being followed where a version no longer has it (dropped)."""
    names = [{f.name for f in v.row.fields} for v in history]
    out: dict[str, dict[str, str]] = {}
    for i, version in enumerate(history):
        moved: dict[str, str] = {}
        for name in names[i]:
            now = name
            for j in range(i + 1, len(history)):
                step = dict(history[j].renamed_columns)
                if now in step:
                    now = step[now]
                elif now not in names[j]:
                    now = name  # dropped later: a column of that name afterwards is another one
                    break
            if now != name:
                moved[name] = now
        out[version.schema_id] = moved
    return out


def silver_renames(decl: SilverTable, history: Sequence[TopicSchema], silver_columns: Sequence[str]
                   ) -> list[tuple[str, str]]:
    """``(old silver name, new silver name)`` pairs to rename in the silver table.

    Renames chain (``a -> b`` then ``b -> c`` is ``a -> c``); a column renamed to a name the
    declaration leaves out, or that silver already has, is not renamed.
    """
    final: dict[str, str] = {}  # a name some version had -> the name it was renamed to since
    for version in history:
        for old, new in version.renamed_columns:
            for origin, now in list(final.items()):
                if now == old:
                    final[origin] = new
            final.setdefault(old, new)
    have = set(silver_columns)
    out: list[tuple[str, str]] = []
    for old, new in final.items():
        if old == new or not decl.keeps(new):
            continue
        src, dst = decl.silver_name(old), decl.silver_name(new)
        if src in have and dst not in have:
            out.append((src, dst))
            have.discard(src)
            have.add(dst)
    return out


def follow_renames(spark: SparkSession, decl: SilverTable, target: SilverTarget, history: Sequence[TopicSchema],
                   silver_columns: Sequence[str]) -> list[str]:
    """Rename the silver table's columns the source renamed; returns a description of each.

    ``add_columns``: renamed (see `SilverTarget.rename_columns`); ``strict``: the table stops;
    ``ignore``: the silver schema never changes (the old column stays, null from then on).

    Raises:
        IncompatibleSchemaChangeError: a rename in ``strict`` mode.
    """
    pairs = silver_renames(decl, history, silver_columns)
    if not pairs or decl.schema_evolution == "ignore":
        return []
    if decl.schema_evolution == "strict":
        raise IncompatibleSchemaChangeError(
            decl.table, "source column(s) renamed: " + ", ".join(f"{a!r} -> {b!r}" for a, b in pairs),
            mode=decl.schema_evolution)
    target.rename_columns(spark, pairs)
    return [f"renamed column {a} to {b}" for a, b in pairs]
