"""MySQL binary JSON re-rendering; the conformance matrix compares it with the binlog client on
encoded documents, these cover the opaque values python-mysql-replication decodes."""

from __future__ import annotations

import datetime
from decimal import Decimal

from cdc_sources.mysql.converters.json_binary import render_binary_json


def test_structure_and_escapes() -> None:
    doc = {b"k": [1, -2.5, 'a"b\\c\n\x01é'.encode(), None, True, False], b"": {}}
    assert render_binary_json(doc) == '{"k":[1,-2.5,"a\\"b\\\\c\\n\\u0001é",null,true,false],"":{}}'


def test_numbers_like_json_string_formatter() -> None:
    # Double.toString unless it has an exponent, then the exact BigDecimal expansion
    assert render_binary_json([1e20, 1.0, 0.001, 2**64 - 1]) == "[100000000000000000000,1.0,0.001,18446744073709551615]"
    assert render_binary_json(1.5e-7) == format(Decimal.from_float(1.5e-7), "f")  # exact binary value
    assert render_binary_json(1.5e-7).startswith("0.000000149999999999999993")


def test_opaque_values() -> None:
    assert render_binary_json(Decimal("-1.500")) == "-1.500"
    assert render_binary_json(datetime.datetime(2020, 1, 2, 3, 4, 5, 120000)) == '"2020-01-02 03:04:05.12"'
    assert render_binary_json(datetime.datetime(2020, 1, 2)) == '"2020-01-02 00:00:00"'
    assert render_binary_json(datetime.time(23, 24, 25, 1)) == '"23:24:25.000001"'
