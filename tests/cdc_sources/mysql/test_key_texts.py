"""Compiled key texts equal the JSON of the key struct, written by the standard library's encoder."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from cdc_sources.mysql.converters import integers, text
from cdc_sources.mysql.key_texts import compile_key_text
from cdc_sources.mysql.row_structs import compile_struct


@dataclass(frozen=True)
class Field:
    name: str
    convert: Callable[[Any], Any]
    fallback: Any = None


def oracle(fields: list[Field], values: Mapping[str, Any]) -> str:
    """JsonConverter's compact JSON of the key struct, by `json` (not orjson, which the code uses)."""
    struct = {}
    for f in fields:
        v = values.get(f.name)
        struct[f.name] = f.fallback if v is None else f.convert(v)
    return json.dumps(struct, separators=(",", ":"), ensure_ascii=False)


ODD = 'we\'ird "na{me}"\\ é ☃ \n{{x}}'
INTEGER_KEYS = [
    [Field("id", integers.identity)],
    [Field("a", integers.identity), Field(ODD, integers.identity), Field("c", integers.identity, 0)],
]
INTEGER_ROWS = [
    {"id": 1, "a": 0, ODD: -1, "c": 2},
    {"id": 9223372036854775807, "a": -9223372036854775808, ODD: 18446744073709551615, "c": 0},
    {"id": None, "a": None, ODD: 5, "c": None},  # NULLs (a unique key's column): the struct's fallback
    {"id": True, "a": False, ODD: True, "c": 1},  # bools are not ints: rendered as the struct says
    {},
]


@pytest.mark.parametrize("fields", INTEGER_KEYS, ids=["one", "three"])
@pytest.mark.parametrize("row", INTEGER_ROWS, ids=range(len(INTEGER_ROWS)))
def test_an_integer_key_is_the_json_of_its_struct(fields, row):
    assert compile_key_text(fields, compile_struct(fields))(row) == oracle(fields, row)


def test_a_key_with_other_converters_is_the_json_of_its_struct():
    fields = [Field("id", integers.identity), Field("name", text.identity), Field("x", lambda v: str(v * 2), "")]
    key_text = compile_key_text(fields, compile_struct(fields))
    for row in ({"id": 1, "name": "é\"q\"", "x": Decimal("1.5")}, {"id": 2, "name": "", "x": None}):
        assert key_text(row) == oracle(fields, row)


def test_the_fast_path_is_taken_only_for_int_values():
    fields = [Field("id", integers.identity)]

    def struct(values: Mapping[str, Any]) -> dict[str, Any]:
        calls.append(values)
        return {"id": values.get("id")}

    calls: list[Mapping[str, Any]] = []
    key_text = compile_key_text(fields, struct)
    assert key_text({"id": 7}) == '{"id":7}'
    assert calls == []
    assert key_text({"id": "7"}) == '{"id":"7"}'
    assert calls == [{"id": "7"}]
