"""Runs MySqlConverterProbe.java (the real Debezium 3.6.3 classes) and compares its renderings
with cdc_sources.mysql.converters.

A probe request is a table (one DDL, parsed by Debezium's own DDL parser) plus rows of Java
values; the answer is Debezium's column model, value schema and the JSON of every row. Tests
build our `ColumnDef` from Debezium's column model, so they check the converters, not a parser.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from cdc_sources.common.source_type import SourceTypePropagation
from cdc_sources.mysql.converters import ColumnConverter, MySqlConverterSettings, ValueConversionError
from cdc_sources.mysql.model import ColumnDef
from tests.cdc_sources.mysql.java_probe import debezium_libs

PROBE = Path(__file__).with_name("MySqlConverterProbe.java")

SETTING_OPTIONS = {
    "decimal.handling.mode": "decimal_handling_mode",
    "time.precision.mode": "time_precision_mode",
    "bigint.unsigned.handling.mode": "bigint_unsigned_handling_mode",
    "binary.handling.mode": "binary_handling_mode",
    "enable.time.adjuster": "enable_time_adjuster",
    "include.schema.comments": "include_schema_comments",
    "event.converting.failure.handling.mode": "event_converting_failure_handling_mode",
}
"""Debezium option -> `MySqlConverterSettings` attribute."""


def run_probe(requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Debezium's answers to probe requests (skips the test without a JDK or the jars)."""
    libs = debezium_libs()
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run([str(shutil.which("java")), "-Duser.timezone=UTC", "-cp", f"{libs}/*", str(PROBE)],
                          input=lines, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    prefix = "ANSWER "  # other stdout lines are Debezium log output; not splitlines(): U+2028 is data
    answers = [json.loads(line[len(prefix):]) for line in done.stdout.split("\n") if line.startswith(prefix)]
    assert len(answers) == len(requests), done.stderr[-4000:]
    return answers


def settings_of(config: Mapping[str, str]) -> MySqlConverterSettings:
    """Our settings for a Debezium config map."""
    kwargs: dict[str, Any] = {}
    for option, attr in SETTING_OPTIONS.items():
        if option in config:
            value = config[option]
            kwargs[attr] = value == "true" if attr in ("enable_time_adjuster", "include_schema_comments") else value
    return MySqlConverterSettings(**kwargs)


def propagates(config: Mapping[str, str], column: ColumnDef) -> bool:
    """Whether ``column.propagate.source.type``/``datatype.propagate.source.type`` of ``config``
    select the column of table ``db.t`` (as the connector decides it, with cdc_sources.common)."""
    propagation, problems = SourceTypePropagation.from_options(config)
    assert problems == []
    return propagation.propagates("db", "t", column.name, column.type_name)


def column_def(described: Mapping[str, Any]) -> ColumnDef:
    """A `ColumnDef` with exactly the attributes of Debezium's ``Column``."""
    length = described["length"]
    return ColumnDef(
        name=described["name"], position=described["position"], type_name=described["typeName"],
        type_expression=described["typeExpression"], jdbc_type=described["jdbcType"],
        length=None if length == -1 else length, scale=described.get("scale"), optional=described["optional"],
        auto_incremented=described["autoIncremented"], generated=described["generated"],
        charset=described["charsetName"], enum_values=tuple(o.replace("\\,", ",") for o in described["options"]),
        default_expression=described["defaultValueExpression"], has_default=described["hasDefaultValue"],
        comment=described["comment"], native_type=described["nativeType"],
    )


def render(converter: ColumnConverter, value: Any) -> Any:
    """A value as it ends up in Debezium's JSON: SQL NULL becomes the schema default (JsonConverter's
    ``replace.null.with.default``) or `ColumnConverter.null_value`; errors become ``"error"``."""
    if value is None:
        return converter.schema.get("default", converter.null_value)
    try:
        return converter.convert(value)
    except ValueConversionError:
        return "error"


def comparable(value: Any) -> Any:
    """Our rendered value as JSON reads it back. Floats compare as the doubles their text denotes,
    so ``1.0E10`` equals ``10000000000.0`` and ``4.9E-324`` equals ``5e-324`` (the JSON writer's
    spelling), but a FLOAT rendered as 1.100000023841858 differs from Java's ``1.1``."""
    return json.loads(orjson.dumps(value))


def debezium_value(row: Any, field: str) -> Any:
    """One field of a Debezium row answer (JSON text, or ``{"error": ...}`` for a failed row),
    read the same way as `comparable`."""
    if isinstance(row, dict):
        return "error"
    return json.loads(row)[field]
