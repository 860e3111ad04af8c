"""The ``expectations:`` of a silver table: what validates, and errors with file, line and key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_sources.spi import ConfigError
from pipelines.validation import load_validated
from silver.expectations import Action, ExpectationType

HEAD = """pipeline: x
lakehouse: {root: ./lake}
sources:
  - name: a
    connector: postgres
    connection: {host: h, database: d, user: u}
silver:
  - table: users
    source: a.public.users
    expectations:
"""


def _load(tmp_path: Path, body: str):
    path = tmp_path / "pipeline.yaml"
    path.write_text(HEAD + body)
    return load_validated(path, env={}, secrets=False, connectors=False)


def _problems(tmp_path: Path, body: str) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, body)
    return str(info.value)


def test_every_type_loads_as_typed_values(tmp_path):
    body = """      - {type: not_null, column: email, action: quarantine}
      - {type: unique, columns: [email, country], action: warn}
      - {type: between, column: age, min: 0, max: 150, action: quarantine}
      - {type: regex, column: email, pattern: "^[^@]+@[^@]+$", action: quarantine}
      - {type: accepted_values, column: country, values: [DE, FR], action: warn}
      - {type: row_count, max: 100000, action: fail}
      - {type: freshness, max_age_seconds: 3600, action: warn}
      - {type: sql, name: positive_age, condition: "age > 0", action: fail}
"""
    (decl,) = _load(tmp_path, body).config.silver
    got = [(e.type, e.action, e.label) for e in decl.expectations]
    assert got == [
        (ExpectationType.NOT_NULL, Action.QUARANTINE, "not_null_email"),
        (ExpectationType.UNIQUE, Action.WARN, "unique_email_country"),
        (ExpectationType.BETWEEN, Action.QUARANTINE, "between_age"),
        (ExpectationType.REGEX, Action.QUARANTINE, "regex_email"),
        (ExpectationType.ACCEPTED_VALUES, Action.WARN, "accepted_values_country"),
        (ExpectationType.ROW_COUNT, Action.FAIL, "row_count"),
        (ExpectationType.FRESHNESS, Action.WARN, "freshness"),
        (ExpectationType.SQL, Action.FAIL, "positive_age")]
    assert decl.expectations[6].freshness_column == "_cdc_ts"


@pytest.mark.parametrize(("body", "expected"), [
    ("      - {type: not_null, action: warn}\n",
     "pipeline.yaml:11: silver[0].expectations[0].column: required by type not_null"),
    ("      - {type: not_null, column: a, pattern: x, action: warn}\n",
     "pipeline.yaml:11: silver[0].expectations[0].pattern: not a key of type not_null"),
    ("      - {type: between, column: a, action: warn}\n",
     "pipeline.yaml:11: silver[0].expectations[0].min: between needs min, max or both"),
    ("      - {type: between, column: a, min: 5, max: 1, action: warn}\n",
     "pipeline.yaml:11: silver[0].expectations[0].min: 5 is above max 1"),
    ("      - {type: row_count, min: 1, action: quarantine}\n",
     "pipeline.yaml:11: silver[0].expectations[0].action: row_count checks the increment as a whole"),
    ("      - {type: regex, column: a, pattern: '(', action: warn}\n",
     "pipeline.yaml:11: silver[0].expectations[0].pattern: '(' is not a regular expression"),
    ("      - type: not_null\n        column: a\n        action: sometimes\n",
     "pipeline.yaml:13: silver[0].expectations[0].action: invalid value 'sometimes'; input should be 'warn', "
     "'quarantine' or 'fail'"),
    ("      - {type: nonsense, column: a, action: warn}\n",
     "pipeline.yaml:11: silver[0].expectations[0].type: invalid value 'nonsense'; input should be 'not_null', "
     "'unique'"),
    ("      - {type: not_null, column: a, action: warn}\n      - {type: not_null, column: a, action: fail}\n",
     "pipeline.yaml:10: silver[0].expectations: expectation names must differ within a table"),
    ("      - {type: freshness, max_age_seconds: 0, action: warn}\n",
     "pipeline.yaml:11: silver[0].expectations[0].max_age_seconds: Input should be greater than 0"),
])
def test_bad_expectations_name_file_line_and_key(tmp_path, body, expected):
    assert expected in _problems(tmp_path, body)


def test_expectations_on_an_scd2_table_are_accepted(tmp_path):
    path = tmp_path / "pipeline.yaml"
    path.write_text(HEAD.replace("    expectations:\n", "    history: scd2\n    expectations:\n")
                    + "      - {type: not_null, column: a, action: warn}\n")
    loaded = load_validated(path, env={}, secrets=False, connectors=False)
    (table,) = loaded.config.silver
    assert table.history == "scd2"
    assert [e.label for e in table.expectations] == ["not_null_a"]


def test_validate_exits_2_without_a_traceback(tmp_path):
    path = tmp_path / "pipeline.yaml"
    path.write_text(HEAD + "      - {type: between, column: age, action: fail}\n")
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "validate", "-c", str(path)],
                          capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert done.returncode == 2
    assert "silver[0].expectations[0].min: between needs min, max or both" in done.stderr
    assert "Traceback" not in done.stderr
