"""How a capture instance's columns become key and value fields, after Debezium's column options.

The shared rules of `cdc_sources.common` (the same the PostgreSQL and MySQL connectors use),
applied to SQL Server's columns:

- ``column.include.list`` / ``column.exclude.list`` (`ColumnFilter`): regexes on
  ``<schema>.<table>.<column>``; a left-out column leaves the value (``before``/``after``) but
  never the key;
- ``column.truncate.to.<N>.chars``, ``column.mask.with.<N>.chars``,
  ``column.mask.hash[.v2].<alg>.with.salt.<salt>`` (`ColumnTransforms`) and
  ``column.propagate.source.type`` / ``datatype.propagate.source.type``
  (`SourceTypePropagation`): one rule per column, the first that matches
  (`cdc_sources.common.column_rules`); a rule names ``<schema>.<table>.<column>`` or
  ``<database>.<schema>.<table>.<column>``. Value fields only.

What Debezium learns from JDBC's ``DatabaseMetaData.getColumns`` (Microsoft's JDBC driver), and
the masks and source-type parameters depend on, is derived here from ``sys.columns``
(`jdbc_metadata`): the JDBC type (masks change character columns only: ``char``, ``varchar``,
``text``, ``nchar``, ``nvarchar``, ``ntext``, ``uniqueidentifier``, ``sysname``; ``xml`` is
taken as ``SQLXML``, as the value converters take it), the
column size (characters, not bytes: ``nvarchar(40)`` is 40; ``max`` types 2147483647, or
1073741823 for the national ones) and the decimal digits (the ``scale`` parameter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.column_rules import ColumnRules, parse_column_rules
from cdc_sources.common.column_transforms import JDBC_CHARACTER_TYPES, ColumnTransforms
from cdc_sources.common.filters import ColumnFilter
from cdc_sources.common.source_type import SourceTypePropagation, source_type_parameters
from cdc_sources.sqlserver.changes import CaptureInstance
from cdc_sources.sqlserver.converters import ColumnConverter

__all__ = ["ColumnPolicy", "JdbcMetadata", "TableFields", "ValueField", "jdbc_metadata"]

_INT_MAX = 2**31 - 1
_NATIONAL_MAX = 2**30 - 1
_JDBC_TYPES = {"char": "CHAR", "varchar": "VARCHAR", "text": "LONGVARCHAR", "nchar": "NCHAR", "nvarchar": "NVARCHAR",
               "ntext": "LONGNVARCHAR", "sysname": "NVARCHAR", "xml": "SQLXML", "uniqueidentifier": "CHAR"}
_NATIONAL = frozenset({"nchar", "nvarchar", "ntext", "sysname"})
_PRECISIONS = {"bit": 1, "tinyint": 3, "smallint": 5, "int": 10, "bigint": 19, "real": 24, "float": 53,
               "money": 19, "smallmoney": 10, "date": 10, "datetime": 23, "smalldatetime": 16,
               "uniqueidentifier": 36}
_SCALES = {"tinyint": 0, "smallint": 0, "int": 0, "bigint": 0, "money": 4, "smallmoney": 4, "datetime": 3,
           "smalldatetime": 0}
_FRACTIONAL = {"time": 8, "datetime2": 19, "datetimeoffset": 26}  # size without fractional digits


@dataclass(frozen=True, slots=True)
class JdbcMetadata:
    """What JDBC's ``getColumns`` says of a column (the parts Debezium's column options read).

    Attributes:
        type_name: ``TYPE_NAME`` (``nvarchar``, ``decimal``).
        jdbc_type: the ``java.sql.Types`` name (``NVARCHAR``; ``OTHER`` for non-character types).
        length: ``COLUMN_SIZE`` (None when not known).
        scale: ``DECIMAL_DIGITS`` (None when the type has none).
    """

    type_name: str
    jdbc_type: str
    length: int | None
    scale: int | None


def jdbc_metadata(type_name: str, max_length: int, precision: int, scale: int) -> JdbcMetadata:
    """``getColumns`` of a column from its ``sys.columns`` row (``max_length`` in bytes, -1 for ``max``)."""
    kind = type_name.lower()
    jdbc = _JDBC_TYPES.get(kind, "OTHER")
    length: int | None
    digits: int | None = _SCALES.get(kind)
    if kind in ("text", "image", "xml") or (max_length == -1 and kind in ("varchar", "varbinary")):
        length = _INT_MAX
    elif kind == "ntext" or (max_length == -1 and kind in _NATIONAL):
        length = _NATIONAL_MAX
    elif kind in _NATIONAL:
        length = max_length // 2
    elif kind in ("char", "varchar", "binary", "varbinary"):
        length = max_length
    elif kind in ("decimal", "numeric"):
        length, digits = precision, scale
    elif kind in _FRACTIONAL:
        length, digits = _FRACTIONAL[kind] + (scale + 1 if scale else 0), scale
    else:
        length = _PRECISIONS.get(kind)
    return JdbcMetadata(kind, jdbc, length, digits)


@dataclass(frozen=True, slots=True)
class ValueField:
    """One field of ``before``/``after``: the column, where its value sits in a change row, the
    function writing it (conversion, then truncate/mask/hash) and its complete field schema."""

    name: str
    index: int
    convert: Callable[[Any], Any]
    schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TableFields:
    """A capture instance's value fields and key fields (key values are never transformed)."""

    values: tuple[ValueField, ...]
    keys: tuple[ValueField, ...]

    def row(self, values: Sequence[Any] | None) -> dict[str, Any] | None:
        """A row image as the ``before``/``after`` struct (None stays None)."""
        if values is None:
            return None
        return {f.name: f.convert(values[f.index]) for f in self.values}

    def key(self, key: Sequence[Any] | None) -> dict[str, Any] | None:
        """The key struct from the key values (in key-column order); None for a keyless table."""
        if key is None:
            return None
        return {f.name: f.convert(key[f.index]) for f in self.keys}


class ColumnPolicy:
    """The column options of one source, resolved per column. Thread-safe."""

    def __init__(self, filter_: ColumnFilter, rules: ColumnRules) -> None:
        self.filter = filter_
        self.transforms = ColumnTransforms(rules)
        self.propagation = SourceTypePropagation(rules)

    @classmethod
    def from_options(cls, raw: dict[str, str] | Any, filter_: ColumnFilter) -> ColumnPolicy:
        """From the raw option texts (already validated by the connector's configuration)."""
        rules, _ = parse_column_rules(raw)
        return cls(filter_, rules)

    def fields(self, instance: CaptureInstance, converters: dict[str, ColumnConverter | None],
               metadata: dict[str, JdbcMetadata], nullable: dict[str, bool],
               defaults: Mapping[str, Any] | None = None) -> TableFields:
        """The instance's fields: converted columns only (Debezium leaves out the types it cannot
        convert), value fields filtered and transformed, key fields as they are.

        ``defaults`` are the columns' schema defaults (`cdc_sources.sqlserver.defaults`; a column
        without one is left out): each goes into the field schema, key and value, and a value
        written as null is written as it, as Kafka's JsonConverter writes it
        (``replace.null.with.default``). The default is the converted one, never truncated, masked or
        hashed, as in Debezium."""
        defaults = defaults or {}
        table = instance.table
        values: list[ValueField] = []
        for index, name in enumerate(instance.columns):
            converter = converters.get(name)
            if converter is None or not self.filter.includes(table.schema, table.table, name):
                continue
            meta = metadata[name]
            params: dict[str, str] = {}
            convert = converter.convert
            found = self.transforms.for_column(
                table.schema, table.table, name, is_string=meta.jdbc_type in JDBC_CHARACTER_TYPES,
                length=meta.length, type_name=meta.type_name, catalog=table.database)
            if found is not None:
                params.update(found.schema_parameters)
                if found.convert is not None:
                    convert = _then(converter.convert, found.convert)
            if self.propagation.propagates(table.schema, table.table, name, meta.type_name, catalog=table.database):
                params.update(source_type_parameters(name, type_name=meta.type_name, length=meta.length,
                                                     scale=meta.scale))
            default = defaults.get(name, ks.NO_DEFAULT)
            schema = ks.complete(converter.schema, optional=nullable[name], default=default, field=name, params=params)
            values.append(ValueField(name, index, _or_default(convert, default), schema))
        keys: list[ValueField] = []
        for index, name in enumerate(instance.key_columns):
            converter = converters.get(name)
            if converter is not None:
                default = defaults.get(name, ks.NO_DEFAULT)
                keys.append(ValueField(name, index, _or_default(converter.convert, default),
                                       ks.complete(converter.schema, optional=False, default=default, field=name)))
        return TableFields(tuple(values), tuple(keys))


def _or_default(convert: Callable[[Any], Any], default: Any) -> Callable[[Any], Any]:
    """``convert``, writing ``default`` for a null (JsonConverter's ``replace.null.with.default``)."""
    if default is ks.NO_DEFAULT:
        return convert

    def apply(value: Any) -> Any:
        out = convert(value)
        return default if out is None else out

    return apply


def _then(convert: Callable[[Any], Any], transform: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        # an asterisk mask replaces NULL too; truncation and hashes keep it
        return transform(None if value is None else convert(value))

    return apply
