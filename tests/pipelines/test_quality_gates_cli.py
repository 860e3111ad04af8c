"""Quality gates end to end: real PostgreSQL capture, ``silver --once`` (Sail) and ``status``."""

from __future__ import annotations

import json
import logging
import re

import psycopg
import pytest

from pipelines.cli import main
from tests.support.pipeline_yaml import pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

SILVER = """silver:
  - table: users
    source: pg.public.users
    expectations:
      - {type: not_null, column: email, action: quarantine}
      - {type: accepted_values, column: country, values: [DE, FR], action: warn}
      - {type: sql, name: adult, condition: "age >= 18", action: ACTION}
"""


def test_a_gate_stops_silver_with_exit_1_and_status_shows_the_last_check(pg_db, tmp_path, capsys, caplog):
    config = tmp_path / "pipeline.yaml"
    base = pipeline_text(str(tmp_path / "lake"), pg_db, **{"provide.transaction.metadata": "false"})
    config.write_text(base + SILVER.replace("ACTION", "fail"))
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE users (id int PRIMARY KEY, email text, age int, country text)")
        conn.execute("INSERT INTO users VALUES (1, 'a@x.org', 30, 'DE'), (2, NULL, 40, 'FR'), "
                     "(3, 'c@x.org', 12, 'DE'), (4, 'd@x.org', 50, 'US'), (5, 'e@x.org', 60, 'FR')")
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    capsys.readouterr()

    assert main(["silver", "-c", str(config), "--once"]) == 1
    out = capsys.readouterr()
    assert "expectation 'adult' (fail): 1 failing row(s)" in out.out + out.err
    assert "Traceback" not in out.out + out.err

    assert main(["status", "-c", str(config), "--json"]) == 0
    (quality,) = json.loads(capsys.readouterr().out)["quality"]
    assert quality["table"] == "users" and quality["checks"] == 3
    assert sorted((f["expectation"], f["action"], f["failing_rows"]) for f in quality["failed"]) == [
        ("accepted_values_country", "warn", 1), ("adult", "fail", 1), ("not_null_email", "quarantine", 1)]

    config.write_text(base + SILVER.replace("ACTION", "quarantine"))
    with caplog.at_level(logging.WARNING):
        assert main(["silver", "-c", str(config), "--once"]) == 0
    assert "expectation 'accepted_values_country' (warn): 1 failing row(s)" in caplog.text
    out = capsys.readouterr().out
    assert "users: applied" in out and "3 upserts" in out and "2 quarantined" in out
    assert "; expectation 'adult' (quarantine): 1 failing row(s)" in out  # the summary line lists what failed
    assert main(["status", "-c", str(config)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"users\s+\S+ \S+ \(.*ago\)\s+0/3 passed; failed: accepted_values_country \(warn, 1 rows\), "
                     r"adult \(quarantine, 1 rows\), not_null_email \(quarantine, 1 rows\)", text), text
