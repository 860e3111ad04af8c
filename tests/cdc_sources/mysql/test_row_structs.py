"""Compiled struct builders equal the field-by-field loop they replace."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from cdc_sources.mysql.converters import integers, text
from cdc_sources.mysql.row_structs import compile_struct


@dataclass(frozen=True)
class Field:
    name: str
    convert: Callable[[Any], Any]
    fallback: Any = None


def reference(fields: list[Field], values: Mapping[str, Any]) -> dict[str, Any]:
    """The rule, written out: each field's converted value, its fallback where the value is None."""
    out: dict[str, Any] = {}
    for f in fields:
        v = values.get(f.name)
        out[f.name] = f.fallback if v is None else f.convert(v)
    return out


calls: list[Any] = []


def doubled(v: Any) -> Any:
    calls.append(v)
    return v * 2


def to_none(v: Any) -> Any:
    return None


FIELDS = [
    Field("id", integers.identity),
    Field("n", integers.identity, 0),
    Field("t", text.identity, ""),
    Field("plain", text.identity),
    Field("x2", doubled),
    Field("x2d", doubled, "dflt"),
    Field("gone", to_none, 5),
    Field('we\'ird "name"\\ \n', doubled),
    Field("dec", str, "0"),
]

ROWS = [
    {f.name: None for f in FIELDS},
    {"id": 1, "n": 2, "t": "a", "plain": "b", "x2": 3, "x2d": "s", "gone": 1, 'we\'ird "name"\\ \n': [1],
     "dec": Decimal("1.50")},
    {"id": 0, "n": 0, "t": "", "plain": "", "x2": 0, "x2d": "", "gone": 0, "dec": Decimal(0)},
    {},  # no column at all: every field None
    {"id": -5, "other": 1},  # a column no field names is ignored
]


@pytest.mark.parametrize("row", ROWS, ids=range(len(ROWS)))
def test_compiled_struct_equals_the_loop_values_and_key_order(row):
    got = compile_struct(FIELDS)(row)
    want = reference(FIELDS, row)
    assert got == want
    assert list(got) == list(want)
    assert [type(v) for v in got.values()] == [type(v) for v in want.values()]


def test_converters_are_called_once_per_non_null_value_and_never_for_null():
    calls.clear()
    compile_struct(FIELDS)({"x2": 4, "x2d": None, 'we\'ird "name"\\ \n': 7})
    assert calls == [4, 7]


def test_an_identity_converter_returns_the_value_object_itself():
    value = ["mutable"]
    assert compile_struct([Field("a", text.identity, "")])({"a": value})["a"] is value


def test_no_fields_is_an_empty_struct():
    assert compile_struct([])({"a": 1}) == {}


def test_a_failing_converter_raises_as_the_loop_does():
    def boom(v: Any) -> Any:
        raise ValueError(f"bad {v}")

    with pytest.raises(ValueError, match="bad 3"):
        compile_struct([Field("a", integers.identity), Field("b", boom)])({"a": 1, "b": 3})
