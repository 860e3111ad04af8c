"""Composite codecs: arrays, maps, structs, and the PostGIS structs.

* arrays -> ARRAY of the element's silver type (pgvector ``DoubleVector``/``FloatVector`` too);
* maps (``hstore.handling.mode=map``) -> MAP;
* structs -> STRUCT of decoded fields; ``geometry.Point`` -> STRUCT<x DOUBLE, y DOUBLE,
  wkb BINARY, srid INT>, ``geometry.Geometry``/``Geography`` -> STRUCT<wkb BINARY, srid INT>.

Floating-point numbers are re-read from the field's JSON text (`Codec.exact`) in arrays of
floats (pgvector vectors, ``float8[]``) and in struct fields (``Point`` x and y), not in maps.

Placeholders: an array holding just the placeholder (text, bytes, or the placeholder's bytes as
numbers for int/bigint/date arrays), a uuid array holding the placeholder's name-based UUID, an
hstore map ``{ph: ph}``, Debezium's fixed placeholder point ``(-99999999, -99999999)`` and its
fixed placeholder WKBs for geometry and geography.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType

from silver.types.codec import Codec, LeafCodec, Placeholder, json_member

__all__ = ["ArrayCodec", "MapCodec", "StructCodec"]

_POINT_PLACEHOLDER = -99999999.0
_GEOMETRY_PLACEHOLDER = base64.b64encode(bytes.fromhex("0101000020E6100000000000FC83D797C1000000FC83D797C1")).decode()
_GEOGRAPHY_PLACEHOLDER = base64.b64encode(bytes.fromhex("0101000020E61000000C21E7FDFF7F66401842CEFBFF7F5640")).decode()
# a JSON array of numbers, nulls and "NaN"/"Infinity"/"-Infinity" only (nothing nested, no other text)
_SCALAR_ARRAY = r'^\s*\[[-+0-9.eE\s,"NaInfityul]*\]\s*$'


def _present(values: Column) -> Column:
    """How many elements of an array are not null."""
    return sf.size(sf.filter(values, lambda x: x.isNotNull()))


@dataclass(frozen=True, eq=False)
class ArrayCodec(Codec):
    """ARRAY<item>."""

    item: Codec

    @property
    def raw_type(self) -> DataType:
        return ArrayType(self.item.raw_type)

    @property
    def target_type(self) -> DataType:
        return ArrayType(self.item.target_type)

    @property
    def signature(self) -> str:
        return f"array<{self.item.signature}>"

    def decode(self, raw: Column) -> Column:
        return sf.transform(raw, self.item.decode)

    def mismatch(self, raw: Column, decoded: Column) -> Column:
        return raw.isNotNull() & (decoded.isNull() | (_present(raw) != _present(decoded)))

    def unavailable(self, raw: Column, ph: Placeholder) -> Column | None:
        forms = [[ph.text], [ph.string_forms[1]], list(ph.number_list), [ph.uuid]]
        checks = [raw == sf.array(*[sf.lit(x) for x in form]) for form in forms]
        out = checks[0]
        for check in checks[1:]:
            out = out | check
        return sf.coalesce(out, sf.lit(False))

    def exact(self, raw: Column, text: Column) -> Column | None:
        """Arrays of floats: the elements split out of the array's JSON text.

        Other arrays (nested, or holding anything but numbers, nulls and the non-finite
        strings) keep ``raw``.
        """
        if not (isinstance(self.item, LeafCodec) and self.item.floating):
            return None
        inner = sf.regexp_replace(text, r"^\s*\[\s*|\s*\]\s*$", "")
        tokens = sf.split(inner, r"\s*,\s*")
        items = sf.transform(tokens, lambda tok: sf.when(tok != "null", sf.regexp_replace(tok, '^"(.*)"$', "$1")))
        split = sf.when(inner == "", sf.array().cast(ArrayType(StringType()))).otherwise(items)
        return sf.when(text.rlike(_SCALAR_ARRAY), split).otherwise(raw)


@dataclass(frozen=True, eq=False)
class MapCodec(Codec):
    """MAP<key, value> (hstore in map mode)."""

    key: Codec
    value: Codec

    @property
    def raw_type(self) -> DataType:
        return MapType(self.key.raw_type, self.value.raw_type)

    @property
    def target_type(self) -> DataType:
        return MapType(self.key.target_type, self.value.target_type)

    @property
    def signature(self) -> str:
        return f"map<{self.key.signature},{self.value.signature}>"

    def _identity(self) -> bool:
        return self.key.target_type == self.key.raw_type and self.value.target_type == self.value.raw_type

    def decode(self, raw: Column) -> Column:
        if self._identity():
            return raw
        entries = sf.transform(sf.map_entries(raw), lambda e: sf.struct(
            self.key.decode(e["key"]).alias("key"), self.value.decode(e["value"]).alias("value")))
        return sf.map_from_entries(entries)

    def mismatch(self, raw: Column, decoded: Column) -> Column:
        if self._identity():
            return sf.lit(False)
        return raw.isNotNull() & (decoded.isNull() | (sf.size(raw) != sf.size(decoded))
                                  | (_present(sf.map_values(raw)) != _present(sf.map_values(decoded))))

    def unavailable(self, raw: Column, ph: Placeholder) -> Column | None:
        return sf.coalesce((sf.size(raw) == 1) & (raw[sf.lit(ph.text)] == sf.lit(ph.text)), sf.lit(False))


@dataclass(frozen=True, eq=False)
class StructCodec(Codec):
    """STRUCT of decoded fields; ``logical`` names the Debezium struct type if any."""

    fields: tuple[tuple[str, Codec], ...]
    logical: str | None = None

    @property
    def raw_type(self) -> DataType:
        return StructType([StructField(n, c.raw_type) for n, c in self.fields])

    @property
    def target_type(self) -> DataType:
        return StructType([StructField(n, c.target_type) for n, c in self.fields])

    @property
    def signature(self) -> str:
        inner = ",".join(f"{n}:{c.signature}" for n, c in self.fields)
        return f"struct<{inner}>"

    def decode(self, raw: Column) -> Column:
        decoded = sf.struct(*[c.decode(raw[n]).alias(n) for n, c in self.fields])
        return sf.when(raw.isNotNull(), decoded)

    def mismatch(self, raw: Column, decoded: Column) -> Column:
        checks = [c.mismatch(raw[n], decoded[n]) for n, c in self.fields]
        out = sf.lit(False)
        for check in checks:
            out = out | sf.coalesce(check, sf.lit(False))
        return raw.isNotNull() & out

    def unavailable(self, raw: Column, ph: Placeholder) -> Column | None:
        check = _STRUCT_PLACEHOLDERS.get(self.logical or "")
        return None if check is None else sf.coalesce(check(raw), sf.lit(False))

    def exact(self, raw: Column, text: Column) -> Column | None:
        """The fields holding floats re-read from their own JSON text (member of ``text``)."""
        parts, changed = [], False
        for name, codec in self.fields:
            member = json_member(text, name)
            part = None if member is None else codec.exact(raw[name], member)
            changed = changed or part is not None
            parts.append((raw[name] if part is None else part).alias(name))
        return sf.when(raw.isNotNull(), sf.struct(*parts)) if changed else None


def _point_placeholder(raw: Column) -> Column:
    return ((raw["x"].try_cast("double") == _POINT_PLACEHOLDER)
            & (raw["y"].try_cast("double") == _POINT_PLACEHOLDER))


_STRUCT_PLACEHOLDERS: dict[str, Callable[[Column], Column]] = {
    "io.debezium.data.geometry.Point": _point_placeholder,
    "io.debezium.data.geometry.Geometry": lambda raw: raw["wkb"] == _GEOMETRY_PLACEHOLDER,
    "io.debezium.data.geometry.Geography": lambda raw: raw["wkb"] == _GEOGRAPHY_PLACEHOLDER,
}
