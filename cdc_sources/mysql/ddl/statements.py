"""What the parser makes of a statement: plain immutable objects, one class per statement kind.

They hold only what changes the schema model (or what Debezium records, such as the per-event
statement texts); clauses without an effect on the model (storage options, index options,
foreign keys, CHECK constraints, partitioning, ``ALGORITHM``/``LOCK``...) are read and left out.
Every statement carries ``text``: the statement as Debezium quotes it in schema change events.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cdc_sources.mysql.ddl.types import DataType

__all__ = [
    "AddColumn",
    "AddColumns",
    "AddKey",
    "AlterAction",
    "AlterDatabase",
    "AlterTable",
    "AttributeKind",
    "ChangeColumn",
    "ColumnAttribute",
    "ColumnDefinition",
    "ConvertCharset",
    "CreateDatabase",
    "CreateIndex",
    "CreateTable",
    "DefaultKind",
    "DefaultValue",
    "DropColumn",
    "DropDatabase",
    "DropIndex",
    "DropIndexStatement",
    "DropPrimaryKey",
    "DropTables",
    "Ignored",
    "KeyDefinition",
    "KeyKind",
    "ModifyColumn",
    "Name",
    "ParsedStatement",
    "Place",
    "RenameColumn",
    "RenameIndex",
    "RenameTables",
    "RenameTo",
    "SetColumnDefault",
    "SetVariables",
    "TableCharset",
    "TableComment",
    "TableElement",
    "Truncate",
    "Use",
    "VariableAssignment",
]


@dataclass(frozen=True, slots=True)
class Name:
    """A table name as written: ``database`` is None when unqualified."""

    database: str | None
    table: str


class DefaultKind(StrEnum):
    """The kinds of ``DEFAULT`` clause Debezium tells apart."""

    LITERAL = "literal"
    """A constant; `DefaultValue.text` is Debezium's ``defaultValueExpression``."""
    NULL = "null"
    """``DEFAULT NULL``: no default expression recorded."""
    NOW = "now"
    """``CURRENT_TIMESTAMP``/``NOW()``...: recorded as ``1970-01-01 00:00:00``."""
    EXPRESSION = "expression"
    """``DEFAULT (expr)`` (or a MariaDB function call): a default whose expression is null."""


@dataclass(frozen=True, slots=True)
class DefaultValue:
    """A ``DEFAULT`` clause."""

    kind: DefaultKind
    text: str | None = None

    @property
    def expression(self) -> str | None:
        """Debezium's ``defaultValueExpression`` for this clause."""
        if self.kind is DefaultKind.NOW:
            return "1970-01-01 00:00:00"
        return self.text if self.kind is DefaultKind.LITERAL else None


class AttributeKind(StrEnum):
    """Column attributes that change what Debezium records, in the order they are written."""

    NULL = "NULL"
    NOT_NULL = "NOT NULL"
    DEFAULT = "DEFAULT"
    ON_UPDATE = "ON UPDATE"
    AUTO_INCREMENT = "AUTO_INCREMENT"
    SERIAL_DEFAULT_VALUE = "SERIAL DEFAULT VALUE"
    PRIMARY_KEY = "PRIMARY KEY"
    UNIQUE = "UNIQUE"
    COMMENT = "COMMENT"
    COLLATE = "COLLATE"


@dataclass(frozen=True, slots=True)
class ColumnAttribute:
    """One attribute: ``text`` is the comment or collation name, ``default`` the DEFAULT value."""

    kind: AttributeKind
    text: str | None = None
    default: DefaultValue | None = None


@dataclass(frozen=True, slots=True)
class ColumnDefinition:
    """``name type attributes...``.

    Attributes:
        name: the column name (backquotes removed).
        data_type: the type.
        attributes: the attributes that matter, in written order.
        generated: a generated column (``[GENERATED ALWAYS] AS (expr)``).
    """

    name: str
    data_type: DataType
    attributes: tuple[ColumnAttribute, ...]
    generated: bool = False


class KeyKind(StrEnum):
    """Table-level constraints and indexes."""

    PRIMARY = "PRIMARY KEY"
    UNIQUE = "UNIQUE"
    INDEX = "INDEX"
    FULLTEXT = "FULLTEXT"
    SPATIAL = "SPATIAL"
    FOREIGN = "FOREIGN KEY"
    CHECK = "CHECK"


@dataclass(frozen=True, slots=True)
class KeyDefinition:
    """A key, index or constraint.

    Attributes:
        kind: what it is.
        name: the index (or constraint) name, if given.
        columns: the key parts in order; None for an expression part (``((a + 1))``).
    """

    kind: KeyKind
    name: str | None
    columns: tuple[str | None, ...]


TableElement = ColumnDefinition | KeyDefinition


@dataclass(frozen=True, slots=True)
class Place:
    """``FIRST`` (``after`` None) or ``AFTER column``."""

    after: str | None


@dataclass(frozen=True, slots=True)
class AddColumn:
    """``ADD [COLUMN] [IF NOT EXISTS] definition [FIRST|AFTER x]``."""

    column: ColumnDefinition
    place: Place | None
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class AddColumns:
    """``ADD [COLUMN] (definition, ...)``."""

    elements: tuple[TableElement, ...]


@dataclass(frozen=True, slots=True)
class AddKey:
    """``ADD [CONSTRAINT x] PRIMARY KEY/UNIQUE/INDEX/...``."""

    key: KeyDefinition


@dataclass(frozen=True, slots=True)
class ChangeColumn:
    """``CHANGE [COLUMN] [IF EXISTS] old new-definition [FIRST|AFTER x]``."""

    old_name: str
    column: ColumnDefinition
    place: Place | None
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class ModifyColumn:
    """``MODIFY [COLUMN] [IF EXISTS] definition [FIRST|AFTER x]``."""

    column: ColumnDefinition
    place: Place | None
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropColumn:
    """``DROP [COLUMN] [IF EXISTS] name``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropPrimaryKey:
    """``DROP PRIMARY KEY``."""


@dataclass(frozen=True, slots=True)
class DropIndex:
    """``DROP INDEX|KEY [IF EXISTS] name``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class RenameIndex:
    """``RENAME INDEX|KEY old TO new``."""

    old_name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class RenameTo:
    """``RENAME [TO|AS] name``."""

    name: Name


@dataclass(frozen=True, slots=True)
class SetColumnDefault:
    """``ALTER [COLUMN] name SET DEFAULT value`` (``default``) or ``DROP DEFAULT`` (None)."""

    name: str
    default: DefaultValue | None


@dataclass(frozen=True, slots=True)
class RenameColumn:
    """``RENAME COLUMN old TO new``."""

    old_name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class ConvertCharset:
    """``CONVERT TO CHARACTER SET x [COLLATE y]`` (``charset`` None: ``DEFAULT``)."""

    charset: str | None
    collation: str | None


@dataclass(frozen=True, slots=True)
class TableCharset:
    """``[DEFAULT] CHARACTER SET [=] x`` and/or ``[DEFAULT] COLLATE [=] y`` among the table options
    of an ``ALTER TABLE`` (``charset`` may be ``DEFAULT``)."""

    charset: str | None
    collation: str | None


@dataclass(frozen=True, slots=True)
class TableComment:
    """``COMMENT [=] 'text'`` among the table options."""

    text: str


AlterAction = (AddColumn | AddColumns | AddKey | ChangeColumn | ModifyColumn | DropColumn | DropPrimaryKey
               | DropIndex | RenameIndex | RenameTo | SetColumnDefault | RenameColumn | ConvertCharset
               | TableCharset | TableComment)


@dataclass(frozen=True, slots=True)
class CreateTable:
    """``CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] name (...) options`` or ``... LIKE``.

    Attributes:
        charset: the table's ``[DEFAULT] CHARACTER SET`` option, if any (may be ``DEFAULT``).
        collation: the table's ``[DEFAULT] COLLATE`` option, if any.
        comment: the table's ``COMMENT`` option, if any.
        like: the source of ``CREATE TABLE ... LIKE``.
    """

    text: str
    table: Name
    elements: tuple[TableElement, ...] = ()
    temporary: bool = False
    if_not_exists: bool = False
    or_replace: bool = False
    charset: str | None = None
    collation: str | None = None
    comment: str | None = None
    like: Name | None = None


@dataclass(frozen=True, slots=True)
class AlterTable:
    """``ALTER [ONLINE] [IGNORE] TABLE name action, ...``."""

    text: str
    table: Name
    actions: tuple[AlterAction, ...]


@dataclass(frozen=True, slots=True)
class RenameTables:
    """``RENAME TABLE a TO b, c TO d``: ``pairs`` of (old, new, Debezium's per-pair statement)."""

    text: str
    pairs: tuple[tuple[Name, Name, str], ...]


@dataclass(frozen=True, slots=True)
class DropTables:
    """``DROP [TEMPORARY] TABLE [IF EXISTS] a, b [RESTRICT|CASCADE]``.

    Attributes:
        prefix: the text before the first table name (``DROP TABLE IF EXISTS ``).
        suffix: ``RESTRICT``/``CASCADE``, or None.
    """

    text: str
    tables: tuple[Name, ...]
    if_exists: bool
    temporary: bool
    prefix: str
    suffix: str | None


@dataclass(frozen=True, slots=True)
class Truncate:
    """``TRUNCATE [TABLE] name``."""

    text: str
    table: Name


@dataclass(frozen=True, slots=True)
class CreateDatabase:
    """``CREATE {DATABASE|SCHEMA} [IF NOT EXISTS] name [[DEFAULT] CHARACTER SET x] [COLLATE y]``."""

    text: str
    name: str
    if_not_exists: bool = False
    charset: str | None = None
    collation: str | None = None


@dataclass(frozen=True, slots=True)
class AlterDatabase:
    """``ALTER {DATABASE|SCHEMA} [name] options`` (``name`` None: the current database)."""

    text: str
    name: str | None
    charset: str | None = None
    collation: str | None = None


@dataclass(frozen=True, slots=True)
class DropDatabase:
    """``DROP {DATABASE|SCHEMA} [IF EXISTS] name``."""

    text: str
    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class CreateIndex:
    """``CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX name ON table (parts)``."""

    text: str
    key: KeyDefinition
    table: Name


@dataclass(frozen=True, slots=True)
class DropIndexStatement:
    """``DROP INDEX name ON table``."""

    text: str
    name: str
    table: Name


@dataclass(frozen=True, slots=True)
class Use:
    """``USE database``."""

    text: str
    database: str


@dataclass(frozen=True, slots=True)
class VariableAssignment:
    """``[GLOBAL|SESSION|LOCAL|@@scope.]name = value`` in a ``SET`` statement."""

    scope: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class SetVariables:
    """``SET var = value, ...`` (system variables only; ``SET NAMES``/``SET CHARACTER SET`` and user
    variables are read but not kept, as in Debezium)."""

    text: str
    assignments: tuple[VariableAssignment, ...]


@dataclass(frozen=True, slots=True)
class Ignored:
    """A statement without effect on table structures (DML, grants, routines, views...)."""

    text: str
    kind: str


ParsedStatement = (CreateTable | AlterTable | RenameTables | DropTables | Truncate | CreateDatabase
                   | AlterDatabase | DropDatabase | CreateIndex | DropIndexStatement | Use | SetVariables
                   | Ignored)
