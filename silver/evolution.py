"""Schema evolution: what to do when the decoded batch and the silver table disagree.

`plan_evolution` compares the silver table's schema with the batch's columns and returns a
plan, or raises `IncompatibleSchemaChangeError` *before* anything is written:

* ``add_columns``: new source columns are added (existing rows read null); a column whose
  source type widened (int -> bigint, larger decimal precision...) is widened in silver; a
  source type that narrowed is cast up to the silver type; anything else is incompatible.
  Columns that disappeared from the source stay, null from then on.
* ``strict``: any difference in columns or types is incompatible.
* ``ignore``: the silver schema never changes: new source columns are left out, narrower
  source types are cast up, wider or different types are incompatible.

Bookkeeping columns the declaration needs (``_cdc_*``, soft-delete and SCD2 columns) are
always added when missing, in every mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from silver.errors import IncompatibleSchemaChangeError
from silver.sql import column
from silver.target import SilverTarget
from silver.types import can_widen
from silver.types.widening import convert

__all__ = ["EvolutionPlan", "apply_evolution", "cast_to", "normalize", "plan_evolution"]


@dataclass(frozen=True)
class EvolutionPlan:
    """The changes one apply makes to the silver schema and to the batch.

    Attributes:
        add: columns added to the silver table.
        widen: silver columns rewritten to a wider type.
        cast_batch: batch columns cast to the silver column's (wider) type.
        drop_from_batch: batch columns left out (``ignore`` mode).
        absent: silver data columns the batch lacks (set to null by updates).
    """

    add: tuple[StructField, ...] = ()
    widen: tuple[tuple[str, DataType], ...] = ()
    cast_batch: tuple[tuple[str, DataType], ...] = ()
    drop_from_batch: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()

    @property
    def alters_table(self) -> bool:
        """True if the silver table's schema changes."""
        return bool(self.add or self.widen)


def normalize(t: DataType) -> DataType:
    """``t`` with every nullability flag set (schemas compare by type only)."""
    if isinstance(t, StructType):
        return StructType([StructField(f.name, normalize(f.dataType), True) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(normalize(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(normalize(t.keyType), normalize(t.valueType), True)
    return t


def plan_evolution(table: str, mode: str, existing: StructType, batch: Sequence[StructField],
                   metadata: Sequence[StructField]) -> EvolutionPlan:
    """Plan how ``batch`` columns (silver names/types) meet the ``existing`` silver schema.

    Raises:
        IncompatibleSchemaChangeError: the change is not allowed in ``mode``.
    """
    current = {f.name: normalize(f.dataType) for f in existing.fields}
    meta_names = {f.name for f in metadata}
    add: list[StructField] = []
    widen: list[tuple[str, DataType]] = []
    cast: list[tuple[str, DataType]] = []
    drop: list[str] = []
    for f in batch:
        new = normalize(f.dataType)
        old = current.get(f.name)
        if old is None:
            if mode == "strict":
                raise IncompatibleSchemaChangeError(table, f"new source column {f.name!r}", mode=mode)
            if mode == "add_columns":
                add.append(f)
            else:
                drop.append(f.name)
        elif old != new:
            _type_change(table, mode, f.name, old, new, widen, cast)
    absent = tuple(n for n in current if n not in meta_names and n not in {f.name for f in batch})
    if absent and mode == "strict":
        raise IncompatibleSchemaChangeError(table, f"source column(s) {list(absent)} no longer exist", mode=mode)
    add += [f for f in metadata if f.name not in current]
    return EvolutionPlan(tuple(add), tuple(widen), tuple(cast), tuple(drop), absent)


def _type_change(table: str, mode: str, name: str, old: DataType, new: DataType,
                 widen: list[tuple[str, DataType]], cast: list[tuple[str, DataType]]) -> None:
    detail = f"column {name!r} changed type {old.simpleString()} -> {new.simpleString()}"
    if mode != "strict" and can_widen(new, old):
        cast.append((name, old))
    elif mode == "add_columns" and can_widen(old, new):
        widen.append((name, new))
    else:
        raise IncompatibleSchemaChangeError(table, detail, mode=mode)


def apply_evolution(spark: SparkSession, target: SilverTarget, evo: EvolutionPlan, current: StructType) -> list[str]:
    """Alter the silver table as planned; returns a description of each change."""
    changes = []
    if evo.add:
        target.add_columns(spark, list(evo.add), current)
        changes += [f"added column {f.name} {f.dataType.simpleString()}" for f in evo.add]
    if evo.widen:
        target.rewrite(spark, dict(evo.widen), [])
        changes += [f"widened column {n} to {t.simpleString()}" for n, t in evo.widen]
    return changes


def cast_to(frame: DataFrame, name: str, casts: dict[str, DataType]) -> Column:
    """Column ``name`` of ``frame``, converted to ``casts[name]`` when the silver table's type
    is wider (`silver.types.widening.convert`)."""
    if name not in casts:
        return column(name)
    return convert(column(name), frame.schema[name].dataType, casts[name]).alias(name)
