"""Which columns `verify` compares, from the silver declaration, the source and silver schemas.

Pure: the source catalog and the silver Arrow schema come in, a `ColumnPlan` comes out. A
source column is compared when the declaration keeps it, silver has it (under its ``rename``),
no Debezium column rule changes its value (masks, hashes, truncation), no ``casts:`` entry
converts it, and its (source type, silver type) pair has a proven canonical text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from cdc_sources.common.column_rules import ColumnRules, RuleKind
from pipelines.verify.canonical import ColumnKind
from pipelines.verify.model import ColumnPlan, ComparedColumn, SkippedColumn, SourceColumn, VerifyError
from silver.declarations import SilverTable

__all__ = ["KindOf", "plan_columns"]

KindOf = Callable[[SourceColumn, pa.DataType], ColumnKind | None]
"""A connector's rule: the canonical kind of a (source column, silver type) pair, or None."""

_VALUE_RULES = {RuleKind.TRUNCATE: "truncated", RuleKind.MASK: "masked", RuleKind.HASH_V1: "hashed",
                RuleKind.HASH_V2: "hashed"}


def plan_columns(decl: SilverTable, *, container: str, table: str, source: Sequence[SourceColumn],
                 primary_key: Sequence[str], silver: pa.Schema, rules: ColumnRules, kind_of: KindOf) -> ColumnPlan:
    """The comparison plan of one silver table.

    Raises:
        VerifyError: a key column cannot be compared (the table cannot be verified).
    """
    keys = list(decl.keys or primary_key)
    if not keys:
        raise VerifyError(f"source table {container}.{table} has no primary key and the declaration names no keys")
    by_name = {c.name: c for c in source}
    compared: dict[str, ComparedColumn] = {}
    skipped: list[SkippedColumn] = []
    for column in source:
        outcome = _column(decl, container, table, column, silver, rules, kind_of)
        if isinstance(outcome, ComparedColumn):
            compared[column.name] = outcome
        elif outcome is not None:
            skipped.append(outcome)
    key_columns = []
    for name in keys:
        if name not in by_name:
            raise VerifyError(f"key column {name!r} is not a column of the source table {container}.{table}",
                              config=True)
        if name not in compared:
            why = next((s.reason for s in skipped if s.source == name), "not in silver")
            raise VerifyError(f"key column {name!r} cannot be compared: {why}")
        key_columns.append(compared.pop(name))
    return ColumnPlan(decl.table, container, table, tuple(key_columns), tuple(compared.values()), tuple(skipped))


def _column(decl: SilverTable, container: str, table: str, column: SourceColumn, silver: pa.Schema,
            rules: ColumnRules, kind_of: KindOf) -> ComparedColumn | SkippedColumn | None:
    if not decl.keeps(column.name):
        return None  # not in silver by declaration: nothing to compare, nothing to report
    name = decl.silver_name(column.name)
    if silver.get_field_index(name) < 0:
        return SkippedColumn(column.name, f"silver has no column {name!r}")
    rule = rules.first_match(container, table, column.name)
    if rule is not None and rule.kind in _VALUE_RULES:
        return SkippedColumn(column.name, f"{_VALUE_RULES[rule.kind]} by the source option {rule.option}")
    if column.name in decl.casts:
        return SkippedColumn(column.name, f"cast to {decl.casts[column.name]} by the declaration")
    silver_type = silver.field(name).type
    kind = kind_of(column, silver_type)
    if kind is None:
        return SkippedColumn(column.name, f"no canonical text proven for source type {column.type_name} "
                                          f"as silver {silver_type}")
    return ComparedColumn(column.name, name, kind, column.type_name)
