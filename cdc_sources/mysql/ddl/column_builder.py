"""Building one column from its definition, with Debezium's column-editor semantics.

Debezium's parser records a column through a ``ColumnEditor`` and listeners that react to the
attributes in written order. The outcome depends on a few rules this builder reproduces:

* a column is NULLable unless ``NOT NULL`` (or ``PRIMARY KEY``/``SERIAL``) says otherwise, and
  the last of ``NULL``/``NOT NULL`` wins;
* making a column optional gives it a default (``hasDefaultValue`` true, no expression) unless it
  has one; ``DEFAULT NULL`` records nothing by itself, so a ``NOT NULL DEFAULT NULL`` column
  has no default;
* when ``NULL``/``NOT NULL`` comes *before* ``DEFAULT``, its effect is applied at the
  ``DEFAULT`` (so ``NULL DEFAULT NULL PRIMARY KEY`` keeps a default on a NOT NULL column);
* ``AUTO_INCREMENT`` and ``ON UPDATE`` mark the column auto-incremented *and* generated;
  ``SERIAL``/``SERIAL DEFAULT VALUE`` also make it NOT NULL (unless told otherwise) and unique;
  a generated column (``AS (expr)``) is *not* marked generated;
* ``COLLATE x_y`` gives the column the character set ``x`` when it names none;
* ``COMMENT`` is kept only when comments are recorded (``include.schema.comments``).

``CHANGE`` starts from the existing column (keeping its auto-increment, comment and ENUM
members unless the new definition replaces them) with its default, length and scale cleared;
``ADD``/``MODIFY`` and ``CREATE TABLE`` start from nothing. ENUM/SET members are recorded only when
the type is exactly ``ENUM``/``SET`` (not ``ENUM ... BINARY``). In ``ALTER TABLE t ADD (a ..., b ...)``
Debezium reads only the type, ``NULL``/``NOT NULL`` and ``DEFAULT`` of each column (`limited`).
"""

from __future__ import annotations

from cdc_sources.mysql.ddl.statements import AttributeKind, ColumnAttribute, ColumnDefinition, DefaultKind
from cdc_sources.mysql.ddl.types import DataType, enum_literal, enum_member
from cdc_sources.mysql.model import ColumnDef

__all__ = ["ColumnBuilder"]

_LIMITED = frozenset({AttributeKind.NULL, AttributeKind.NOT_NULL, AttributeKind.DEFAULT})


class ColumnBuilder:
    """One column being defined.

    Attributes:
        name: the column name.
        unique: a ``UNIQUE`` (or SERIAL) attribute was seen.
        primary: a ``PRIMARY KEY`` attribute was seen.
    """

    def __init__(self, name: str, base: ColumnDef | None = None) -> None:
        self.name = name
        self.type_name = ""
        self.type_expression = ""
        self.jdbc_type = 0
        self.native_type = -1
        self.length: int | None = None
        self.scale: int | None = None
        self.charset: str | None = None
        self.enum_literals: tuple[str, ...] = ()
        self.optional = True
        self.auto_incremented = False
        self.generated = False
        self.has_default = False
        self.default: str | None = None
        self.comment: str | None = None
        self.unique = False
        self.primary = False
        self._nullability: bool | None = None
        self._converted = False
        if base is not None:
            self.type_name, self.type_expression, self.jdbc_type = base.type_name, base.type_expression, base.jdbc_type
            self.charset, self.enum_literals, self.comment = base.charset, _literals(base), base.comment
            self.native_type = base.native_type
            self.optional, self.auto_incremented, self.generated = base.optional, base.auto_incremented, base.generated

    def define(self, definition: ColumnDefinition, *, include_comments: bool, limited: bool = False) -> None:
        """Apply a definition's type and attributes, then close the column."""
        self._set_type(definition.data_type)
        for attribute in definition.attributes:
            if not limited or attribute.kind in _LIMITED:
                self._attribute(attribute, include_comments=include_comments)
        if limited:
            self._exit_default(skip_if_unknown=True)
        self.finish()

    def _set_type(self, data_type: DataType) -> None:
        self.type_name = self.type_expression = data_type.type_name
        self.jdbc_type = data_type.jdbc_type
        self.length, self.scale = data_type.length, data_type.scale
        if data_type.type_name in ("ENUM", "SET"):
            self.enum_literals = data_type.enum_literals
        self.charset = data_type.charset
        if data_type.serial:
            self._serial()

    def _serial(self) -> None:
        if self._nullability is None:
            self._nullability = False
        self.unique = True
        self.auto_incremented = self.generated = True

    def _attribute(self, attribute: ColumnAttribute, *, include_comments: bool) -> None:
        kind = attribute.kind
        if kind is AttributeKind.COLLATE:
            collation = attribute.text or ""
            underscore = collation.find("_")
            if underscore > 0 and self.charset is None:
                self.charset = collation[:underscore]
        elif kind is AttributeKind.NULL:
            self._nullability = True
        elif kind is AttributeKind.NOT_NULL:
            self._nullability = False
        elif kind is AttributeKind.UNIQUE:
            self.unique = True
        elif kind is AttributeKind.PRIMARY_KEY:
            self._nullability = False
            self.primary = True
        elif kind is AttributeKind.COMMENT:
            if include_comments:
                self.comment = attribute.text
        elif kind in (AttributeKind.AUTO_INCREMENT, AttributeKind.ON_UPDATE):
            self.auto_incremented = self.generated = True
        elif kind is AttributeKind.SERIAL_DEFAULT_VALUE:
            self._serial()
        elif kind is AttributeKind.DEFAULT and attribute.default is not None:
            if attribute.default.kind is not DefaultKind.NULL:
                self.set_default(attribute.default.expression)
            self._exit_default(skip_if_unknown=True)

    def set_default(self, expression: str | None) -> None:
        """Debezium's ``defaultValueExpression(x)``: the column has a default, maybe without text."""
        self.has_default, self.default = True, expression

    def unset_default(self) -> None:
        """Debezium's ``unsetDefaultValueExpression()``."""
        self.has_default, self.default = False, None

    def set_optional(self, optional: bool) -> None:
        """Debezium's ``optional(x)``: an optional column without a default gets a null one."""
        self.optional = optional
        if optional and not self.has_default:
            self.set_default(None)

    def _exit_default(self, *, skip_if_unknown: bool) -> None:
        known = self._nullability is not None
        if not self._converted and (known or not skip_if_unknown):
            if self._nullability is not None:
                self.set_optional(self._nullability)
            self._converted = True

    def finish(self) -> None:
        """Close the definition: the column's nullability is final."""
        self.set_optional(True if self._nullability is None else self._nullability)
        self._exit_default(skip_if_unknown=False)

    @classmethod
    def editing(cls, column: ColumnDef) -> ColumnBuilder:
        """A builder holding ``column`` unchanged (for ``SET DEFAULT``, ``RENAME COLUMN``, keys)."""
        builder = cls(column.name, column)
        builder.length, builder.scale = column.length, column.scale
        builder.has_default, builder.default = column.has_default, column.default_expression
        return builder

    def build(self, position: int = 0) -> ColumnDef:
        """The column (its position and table-inherited charset are set by the table editor)."""
        return ColumnDef(
            name=self.name, position=position, type_name=self.type_name, type_expression=self.type_expression,
            jdbc_type=self.jdbc_type, length=self.length, scale=self.scale, optional=self.optional,
            auto_incremented=self.auto_incremented, generated=self.generated, charset=self.charset,
            enum_values=tuple(enum_member(m) for m in self.enum_literals), enum_literals=self.enum_literals,
            default_expression=self.default, has_default=self.has_default,
            comment=self.comment, native_type=self.native_type)


def _literals(column: ColumnDef) -> tuple[str, ...]:
    """A column's member literals (made from its member values when it has none recorded)."""
    return column.enum_literals or tuple(enum_literal(m) for m in column.enum_values)
