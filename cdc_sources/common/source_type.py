"""Source-type propagation: ``column.propagate.source.type`` and ``datatype.propagate.source.type``.

A propagated column's field schema gets parameters describing the source column, as
Debezium 3.6.3's ``PropagateSourceMetadataToSchemaParameter`` writes them, in this order:

- ``__debezium.source.column.type``: the type name, upper-cased (``VARCHAR``, ``INT4``);
- ``__debezium.source.column.length``: the length, when known;
- ``__debezium.source.column.scale``: the scale, when the column has one;
- ``__debezium.source.column.comment``: the column comment, when not empty;
- ``__debezium.source.column.name``: the column name (always).

``column.propagate.source.type`` names columns (``<container>.<table>.<column>``);
``datatype.propagate.source.type`` names types qualified by their table
(``<container>.<table>.<type name>``, e.g. ``.+\\.varchar``), not bare type names. Both
compete with the truncate/mask/hash rules for the one rule a column gets: a truncate or
asterisk-mask rule matching the column first means no propagation (see
`cdc_sources.common.column_rules`). Value fields only; values are never changed.
"""

from __future__ import annotations

from collections.abc import Mapping

from cdc_sources.common.column_rules import ColumnRules, parse_column_rules
from cdc_sources.spi import ConfigProblem

__all__ = [
    "COLUMN_COMMENT_PARAMETER",
    "COLUMN_NAME_PARAMETER",
    "TYPE_LENGTH_PARAMETER",
    "TYPE_NAME_PARAMETER",
    "TYPE_SCALE_PARAMETER",
    "SourceTypePropagation",
    "source_type_parameters",
]

TYPE_NAME_PARAMETER = "__debezium.source.column.type"
TYPE_LENGTH_PARAMETER = "__debezium.source.column.length"
TYPE_SCALE_PARAMETER = "__debezium.source.column.scale"
COLUMN_COMMENT_PARAMETER = "__debezium.source.column.comment"
COLUMN_NAME_PARAMETER = "__debezium.source.column.name"

_UNSET = -1  # Debezium's Column.UNSET_INT_VALUE


class SourceTypePropagation:
    """Which value fields carry their source type as schema parameters. Thread-safe."""

    __slots__ = ("_rules",)

    def __init__(self, rules: ColumnRules | None = None) -> None:
        """Use ``rules`` (shared with `ColumnTransforms` to keep Debezium's precedence)."""
        self._rules = rules if rules is not None else ColumnRules()

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], *, case_sensitive: bool = False
    ) -> tuple[SourceTypePropagation, list[ConfigProblem]]:
        """Build from Debezium options; returns the problems of the two propagation options."""
        rules, tagged = parse_column_rules(options, case_sensitive=case_sensitive)
        return cls(rules), [problem for kind, problem in tagged if kind.propagates]

    def propagates(
        self, container: str, table: str, column: str, type_name: str, *, catalog: str | None = None
    ) -> bool:
        """Whether this value column carries source-type parameters.

        Args:
            container: schema (PostgreSQL) or database (MySQL).
            table: the table name.
            column: the column name.
            type_name: the type name as Debezium's ``Column.typeName()`` gives it
                (PostgreSQL: ``varchar``, ``int4``, ``numeric``; MySQL: ``VARCHAR``).
            catalog: the database, for three-part table names.
        """
        rule = self._rules.first_match(container, table, column, type_name=type_name, catalog=catalog)
        return rule is not None and rule.kind.propagates

    def schema_parameters(
        self,
        container: str,
        table: str,
        column: str,
        *,
        type_name: str,
        length: int | None,
        scale: int | None,
        comment: str | None = None,
        catalog: str | None = None,
    ) -> dict[str, str] | None:
        """The parameters to add to the column's field schema, or None if not propagated.

        ``length`` None (or -1) and ``scale`` None mean "not set" and are left out.
        """
        if not self.propagates(container, table, column, type_name, catalog=catalog):
            return None
        return source_type_parameters(column, type_name=type_name, length=length, scale=scale, comment=comment)


def source_type_parameters(
    column: str, *, type_name: str, length: int | None, scale: int | None, comment: str | None = None
) -> dict[str, str]:
    """The parameters Debezium writes for a propagated column, in Debezium's order."""
    parameters = {TYPE_NAME_PARAMETER: type_name.upper()}
    if length is not None and length != _UNSET:
        parameters[TYPE_LENGTH_PARAMETER] = str(length)
    if scale is not None:
        parameters[TYPE_SCALE_PARAMETER] = str(scale)
    if comment:
        parameters[COLUMN_COMMENT_PARAMETER] = comment
    parameters[COLUMN_NAME_PARAMETER] = column
    return parameters
