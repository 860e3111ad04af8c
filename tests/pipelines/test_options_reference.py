"""docs/connector-options.md is the rendering of the connectors' option declarations."""

from __future__ import annotations

from pathlib import Path

from cdc_sources.mysql.options import MARIADB_OPTIONS, MYSQL_OPTIONS
from cdc_sources.postgres.options import POSTGRES_OPTIONS
from cdc_sources.sqlserver.options import SQLSERVER_OPTIONS
from pipelines.options_reference import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "connector-options.md"


def test_the_page_is_up_to_date():
    assert DOC.read_text() == render(), "regenerate: python -m pipelines.options_reference > docs/connector-options.md"


def test_every_option_is_listed_with_its_default():
    text = render()
    for options in (POSTGRES_OPTIONS, MYSQL_OPTIONS, MARIADB_OPTIONS, SQLSERVER_OPTIONS):
        for name, spec in options.specs.items():
            assert f"| `{name}` | " in text, name
            if spec.default:
                line = next(line for line in text.splitlines() if line.startswith(f"| `{name}` | ")
                            and f"`{spec.default.replace('|', chr(92) + '|')}`" in line)
                assert line, name


def test_inert_options_are_marked():
    text = render()
    assert "| `tasks.max` | `1` | integer | no effect here (accepted for compatibility) |" in text
    assert "`schema.history.internal.kafka.topic`" in text
