"""The in-memory model of MySQL/MariaDB tables: what the DDL parser builds and the converters read.

It mirrors Debezium's relational model (``io.debezium.relational.Table`` / ``Column``) so that the
schema history and the ``tableChanges`` of schema change events can be written exactly as Debezium
writes them. Instances are immutable; a DDL statement produces new `TableDef` values.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TableId:
    """A table's identity: ``database.table`` (MySQL has no schema level)."""

    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def quoted(self) -> str:
        """Debezium's ``tableChanges[].id`` form: ``"db"."table"``."""
        return f'"{self.database}"."{self.table}"'


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One column as Debezium's MySQL DDL parser records it.

    Attributes:
        name: the column name as declared (case kept).
        position: 1-based position in the table.
        type_name: Debezium's ``typeName``: the upper-case type without length, e.g. ``INT``,
            ``INT UNSIGNED``, ``VARCHAR``, ``DECIMAL UNSIGNED``, ``ENUM``, ``TINYINT``, ``BOOLEAN``.
        type_expression: Debezium's ``typeExpression`` (usually equal to ``type_name``).
        jdbc_type: the ``java.sql.Types`` code Debezium assigns (INTEGER=4, VARCHAR=12...).
        native_type: Debezium's ``nativeType`` (-1 when unknown, which is usual for MySQL).
        length: declared length/precision (``VARCHAR(20)`` -> 20, ``DECIMAL(10,2)`` -> 10,
            ``DATETIME(3)`` -> 3, ``BIT(5)`` -> 5); None when not declared.
        scale: declared scale (``DECIMAL(10,2)`` -> 2); None when not declared.
        optional: nullable.
        auto_incremented: ``AUTO_INCREMENT``.
        generated: Debezium's ``generated``: set with ``auto_incremented`` (AUTO_INCREMENT, ON UPDATE,
            SERIAL); a virtual/stored generated column is *not* marked.
        charset: the column's character set for character types (from the column, else the
            table, else the database default); None for non-character types.
        enum_values: the members of an ENUM or SET, in definition order, unquoted (outer quotes
            removed, ``''`` and ``\'`` read as ``'``: the values Debezium's converters use).
        enum_literals: the same members as written in the DDL, quotes included (``'a'``,
            ``'it''s'``): Debezium's ``enumValues`` in ``tableChanges``. Empty when unknown.
        default_expression: the ``DEFAULT`` clause text as Debezium keeps it (None: no default).
        has_default: Debezium's ``hasDefaultValue``: a non-NULL ``DEFAULT`` was given, or the column
            is nullable (then its implicit default is NULL).
        comment: the column comment, if any.
    """

    name: str
    position: int
    type_name: str
    type_expression: str
    jdbc_type: int
    length: int | None = None
    scale: int | None = None
    optional: bool = True
    auto_incremented: bool = False
    generated: bool = False
    charset: str | None = None
    enum_values: tuple[str, ...] = ()
    enum_literals: tuple[str, ...] = ()
    default_expression: str | None = None
    has_default: bool = False
    comment: str | None = None
    native_type: int = -1


@dataclass(frozen=True, slots=True)
class TableDef:
    """One table version.

    Attributes:
        id: the table.
        columns: columns in table order (``position`` 1..n).
        primary_key: Debezium's ``primaryKeyColumnNames``: the PRIMARY KEY columns in key order or,
            when the DDL declared none, the UNIQUE key Debezium's parser took as the key (the first
            inline UNIQUE column, or the first UNIQUE key whose columns were all NOT NULL when it
            was declared); empty when neither.
        unique_keys: the table's UNIQUE keys (column names in key order), in declaration order.
        default_charset: the table's default character set.
        comment: the table comment, if any.
        renamed_columns: (old, new) names of the columns the DDL statement that made this version
            renamed (``RENAME COLUMN``, ``CHANGE old new``); not part of the table's identity
            (left out of equality), carried into the schema history for silver.
    """

    id: TableId
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...] = ()
    unique_keys: tuple[tuple[str, ...], ...] = ()
    default_charset: str | None = None
    comment: str | None = None
    attributes: tuple[tuple[str, str], ...] = field(default=())
    renamed_columns: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def column(self, name: str) -> ColumnDef | None:
        """The column called ``name`` (MySQL column names are case-insensitive)."""
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)
