"""Compiled row renderers write exactly what the dict path + orjson writes."""

from __future__ import annotations

import orjson
import pytest

from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.pgoutput import UNCHANGED_TOAST
from cdc_sources.postgres.schema import build_codec
from cdc_sources.postgres.types import PgColumn, PgType


class NoFilters:
    def includes(self, schema, table, column):
        return column != "hidden"

    def transform(self, schema, table, column):
        if column.name == "masked":
            return (lambda v: "***"), {"masked": "true"}
        return None, {}

    def propagates_type(self, schema, table, column):
        return False

    def key_columns(self, schema, table, columns):
        return None


T = {name: PgType(oid, name) for oid, name in [(16, "bool"), (20, "int8"), (21, "int2"), (23, "int4"),
                                               (25, "text"), (1043, "varchar"), (1700, "numeric"),
                                               (1114, "timestamp"), (1184, "timestamptz"), (17, "bytea"),
                                               (3802, "jsonb"), (1042, "bpchar")]}

COLUMNS = [
    PgColumn("id", T["int4"], -1, False, None, 1),
    PgColumn("big", T["int8"], -1, True, None, 2),
    PgColumn("small", T["int2"], -1, False, "7", 3),
    PgColumn("name", T["text"], -1, True, None, 4),
    PgColumn("code", T["varchar"], 14, False, None, 5),
    PgColumn("price", T["numeric"], ((10 << 16) | 2) + 4, True, None, 6),
    PgColumn("at", T["timestamp"], -1, True, None, 7),
    PgColumn("at_tz", T["timestamptz"], -1, True, None, 8),
    PgColumn("data", T["bytea"], -1, True, None, 9),
    PgColumn("doc", T["jsonb"], -1, True, None, 10),
    PgColumn("flag", T["bool"], -1, True, "true", 11),
    PgColumn("padded", T["bpchar"], 9, True, None, 12),
    PgColumn("masked", T["text"], -1, True, None, 13),
    PgColumn("hidden", T["text"], -1, True, None, 14),
    PgColumn("weird \"name\"", T["text"], -1, True, None, 15),
]

ROWS = [
    ("1", "-9223372036854775808", "-32768", "plain", "c", "12.34", "2024-02-29 23:59:59.999999",
     "2024-01-02 03:04:05.5+00", "\\x00ff", '{"a": [1, "x"]}', "t", "ab   ", "secret", "h", "w"),
    ("2", None, None, None, "", None, None, None, None, None, None, None, None, None, None),
    ("3", "0", "0", 'quote " back \\ nl \n tab \t ctl \x01 é 😀', "x" * 10, "-0.01", "infinity", "-infinity",
     "\\x", "null", "f", "", "", "", ""),
    ("4", "1", "1", UNCHANGED_TOAST, "k", "1", None, None, UNCHANGED_TOAST, UNCHANGED_TOAST, None, None,
     UNCHANGED_TOAST, None, UNCHANGED_TOAST),
]


@pytest.mark.parametrize("origin", ["snapshot", "stream"])
@pytest.mark.parametrize("row", ROWS, ids=range(len(ROWS)))
def test_rendered_row_equals_dict_row(row, origin):
    codec = build_codec(prefix="p", schema="public", table="t", columns=COLUMNS, primary_key=("id",),
                        settings=ConverterSettings(), policy=NoFilters(), origin=origin)
    old = tuple(("\\x0102" if i == 8 else f'"old {i}"' if i == 9 else f"old {i}") if v is UNCHANGED_TOAST else v
                for i, v in enumerate(row))
    for previous in (None, old):
        expected = orjson.dumps(codec.row(row, previous)).decode()
        assert orjson.loads(codec.render_row(row, previous)) == orjson.loads(expected)
        assert codec.render_row(row, previous) == expected
    assert codec.render_key is not None
    assert codec.render_key(row) == orjson.dumps(codec.key(row)).decode()


def test_keyless_table_has_no_key_renderer():
    codec = build_codec(prefix="p", schema="public", table="t", columns=COLUMNS[3:4], primary_key=(),
                        settings=ConverterSettings(), policy=NoFilters(), origin="stream")
    assert codec.render_key is None
    assert codec.render_row(("x",), None) == '{"name":"x"}'
