"""The MySQL/MariaDB option sets against Debezium 3.6.3's MySQL connector.

The conformance tests read every option ``MySqlConnectorConfig`` defines (``ALL_FIELDS``) and the
shared ones it reads from its parent classes straight from the jar (the connectors' shared probe,
tests/support/java/ConnectorOptionsProbe.java), and check that each is known here with the same
default, and that values are accepted or rejected as Debezium's own validation does. Deliberate
differences are listed (`STRICTER_MINIMUMS`, the Debezium 2.x ``snapshot.mode`` names accepted as
aliases, ``custom`` plug-ins). The MariaDB jar is not shipped, so the MariaDB differences are tested
against their documented values.
"""

from __future__ import annotations

from typing import Any

import pytest

from cdc_sources.common.captured_tables import NEW_TABLES_OPTION
from cdc_sources.common.options import is_kafka_connect_option
from cdc_sources.mysql.config import build_mysql_config
from cdc_sources.mysql.options import (
    LOCKING_MODES,
    MARIADB_OPTIONS,
    MYSQL_OPTIONS,
    SNAPSHOT_MODE_ALIASES,
    SSL_MODES,
    STRICTER_MINIMUMS,
    connector_name,
    options_for,
)
from tests.support.options_probe import MYSQL, debezium_fields, validate_values

PROBE = MYSQL
PATTERN_FIELDS = {
    "column.mask.hash.([^.]+).with.salt.(.+)": "column.mask.hash.SHA-256.with.salt.pepper",
    "column.mask.with.(d+).chars": "column.mask.with.4.chars",
    "column.truncate.to.(d+).chars": "column.truncate.to.20.chars",
}
"""Debezium's option families (their Field names are patterns) and one member of each."""

NOT_FOR_MYSQL = {"database.dbname", "schema.include.list", "schema.exclude.list"}
"""Fields of Debezium's shared parent classes that the MySQL connector does not read."""

CONNECT_LEVEL = {"name", "connector.class", "tasks.max", "key.converter", "value.converter",
                 "key.converter.schemas.enable", "value.converter.schemas.enable", "offset.storage",
                 "offset.flush.interval.ms", "schema.history.internal.file.filename",
                 "signal.file"}  # Debezium's file signal channel
"""Options we accept that belong to Kafka Connect or to other Debezium classes than the probed ones."""


@pytest.fixture(scope="module", name="debezium_fields")
def _debezium_fields() -> dict[str, dict[str, Any]]:
    return debezium_fields(PROBE)


def _same_default(ours: str | None, theirs: str | None, kind: str) -> bool:
    if ours is None or theirs is None:
        return ours == theirs
    if kind == "enum":
        return ours.lower() == theirs.lower()
    return ours == theirs


@pytest.mark.conformance
def test_every_debezium_option_is_known_with_its_default(debezium_fields: dict[str, dict[str, Any]]) -> None:
    missing, wrong = [], []
    for name, field in debezium_fields.items():
        if name in PATTERN_FIELDS:
            _, problems = MYSQL_OPTIONS.parse({PATTERN_FIELDS[name]: "db.t.c"}, path="o")
            if problems:
                missing.append(name)
            continue
        if name.startswith("internal."):
            _, problems = MYSQL_OPTIONS.parse({name: field["default"] or "x"}, path="o")
            if problems:
                missing.append(name)
            continue
        if field["scope"] == "extra" and name in NOT_FOR_MYSQL:
            continue
        spec = MYSQL_OPTIONS.specs.get(name)
        if spec is None:
            missing.append(name)
        elif not _same_default(spec.default, field["default"], spec.kind):
            wrong.append(f"{name}: ours {spec.default!r}, Debezium {field['default']!r}")
    assert missing == []
    assert wrong == []
    assert sum(1 for f in debezium_fields.values() if f["scope"] == "all") >= 120


@pytest.mark.conformance
def test_every_option_of_ours_is_a_debezium_option(debezium_fields: dict[str, dict[str, Any]]) -> None:
    unknown = [n for n in MYSQL_OPTIONS.specs
               if n not in debezium_fields and n not in CONNECT_LEVEL and not is_kafka_connect_option(n)]
    assert unknown == [NEW_TABLES_OPTION]  # the one option of our own, documented as such


def _validation_cases(fields: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for name, spec in MYSQL_OPTIONS.specs.items():
        field = fields.get(name)
        if field is None or spec.inert:
            continue
        if spec.kind == "enum" or field["allowed"]:
            values = {*spec.choices, *spec.aliases, *(a.lower() for a in field["allowed"]), "bogus"}
            cases += [(name, v) for v in sorted(values)]
        elif field["type"] in ("INT", "LONG"):
            cases += [(name, v) for v in ("-2", "-1", "0", "1", "x")]
        elif field["type"] == "BOOLEAN":
            cases += [(name, v) for v in ("true", "FALSE", "yes")]
    return cases


def _ours_accept(name: str, value: str) -> bool:
    _, problems = build_mysql_config(name="probe", connection={"user": "probe"},
                                     options={"database.server.id": 5400, name: value}, path="s", flavor="mysql")
    return not problems


KNOWN_DIFFERENCES = {
    **{("snapshot.mode", alias): "Debezium 2.x name accepted as an alias" for alias in SNAPSHOT_MODE_ALIASES},
    **{(name, str(v)): "stricter: no meaning below the minimum"
       for name, minimum in STRICTER_MINIMUMS.items() for v in range(-2, minimum)},
    ("snapshot.locking.mode", "custom"): "needs a Java class: rejected",
    ("snapshot.query.mode", "custom"): "needs a Java class: rejected",
}


@pytest.mark.conformance
def test_values_are_accepted_and_rejected_like_debezium(debezium_fields: dict[str, dict[str, Any]]) -> None:
    cases = _validation_cases(debezium_fields)
    answers = validate_values(PROBE, cases)
    differences = []
    for (name, value), answer in zip(cases, answers, strict=True):
        theirs = answer == "ok"
        if _ours_accept(name, value) != theirs and (name, value) not in KNOWN_DIFFERENCES:
            differences.append(f"{name}={value}: Debezium {'accepts' if theirs else 'rejects'}")
    assert differences == []
    assert len(cases) > 150


# -- the option sets --------------------------------------------------------------------------


def test_defaults_fill_in() -> None:
    parsed, problems = MYSQL_OPTIONS.parse({}, path="o")
    assert problems == []
    assert parsed.get("snapshot.mode") == "initial"
    assert parsed.get("snapshot.locking.mode") == "minimal"
    assert parsed.get("database.ssl.mode") == "preferred"
    assert parsed.get("connect.timeout.ms") == 30000
    assert parsed.get("skipped.operations") == "t"
    assert parsed.get("tombstones.on.delete") is True
    assert parsed.get("include.schema.changes") is True
    assert parsed.get("binlog.buffer.size") == 0
    assert parsed.get("database.server.id") is None
    assert parsed.get("signal.enabled.channels") == ("source",)


def test_unknown_options_get_a_suggestion_and_the_mysql_reference() -> None:
    _, problems = MYSQL_OPTIONS.parse({"snapshot.lock.timeout": 5, "tables.include.list": "a"}, path="o")
    assert [p.path for p in problems] == ["o.snapshot.lock.timeout", "o.tables.include.list"]
    assert "did you mean 'snapshot.lock.timeout.ms'?" in problems[0].message
    assert "did you mean 'table.include.list'?" in problems[1].message
    assert all("docs/mysql.md" in p.message for p in problems)


def test_option_families_and_inert_options() -> None:
    parsed, problems = MYSQL_OPTIONS.parse({
        "column.mask.with.3.chars": "db.t.c", "column.truncate.to.10.chars": "db.t.c",
        "column.mask.hash.SHA-256.with.salt.x": "db.t.c", "snapshot.select.statement.overrides.db.t": "SELECT 1",
        "driver.useSSL": "false", "internal.implementation": "x", "schema.history.internal.producer.acks": "1",
        "schema.history.internal.kafka.topic": "h", "signal.kafka.topic": "s", "errors.tolerance": "all",
        "topic.naming.strategy": "x", "database.jdbc.driver": "x",
    }, path="o")
    assert problems == []
    assert set(parsed.inert_used) == {
        "driver.useSSL", "internal.implementation", "schema.history.internal.producer.acks",
        "schema.history.internal.kafka.topic", "signal.kafka.topic", "errors.tolerance", "topic.naming.strategy",
        "database.jdbc.driver"}
    # issue 14: Kafka Connect transforms are accepted without effect, as the docs say (warned about once)
    parsed, problems = MYSQL_OPTIONS.parse({"transforms": "unwrap", "transforms.unwrap.type": "x"}, path="o")
    assert problems == [] and set(parsed.inert_used) == {"transforms", "transforms.unwrap.type"}


def test_deprecated_values_read_as_their_replacements() -> None:
    parsed, problems = MYSQL_OPTIONS.parse({"snapshot.mode": "SCHEMA_ONLY",
                                            "event.processing.failure.handling.mode": "ignore",
                                            "inconsistent.schema.handling.mode": "Warn"}, path="o")
    assert problems == []
    assert parsed.get("snapshot.mode") == "no_data"
    assert parsed.get("event.processing.failure.handling.mode") == "skip"
    assert parsed.get("inconsistent.schema.handling.mode") == "warn"
    parsed, _ = MYSQL_OPTIONS.parse({"snapshot.mode": "schema_only_recovery"}, path="o")
    assert parsed.get("snapshot.mode") == "recovery"


def test_mariadb_differences() -> None:
    assert options_for("mariadb") is MARIADB_OPTIONS and options_for("mysql") is MYSQL_OPTIONS
    parsed, _ = MARIADB_OPTIONS.parse({}, path="o")
    assert parsed.get("database.ssl.mode") == "disable"
    assert parsed.get("sourceinfo.struct.maker") == "io.debezium.connector.mariadb.MariaDbSourceInfoStructMaker"
    assert MARIADB_OPTIONS.specs["database.ssl.mode"].choices == SSL_MODES["mariadb"]
    assert SSL_MODES["mariadb"] == ("disable", "trust", "verify-ca", "verify-full")
    assert LOCKING_MODES["mariadb"] == ("minimal", "extended", "none", "custom")
    _, problems = MARIADB_OPTIONS.parse({"snapshot.locking.mode": "minimal_percona"}, path="o")
    assert [p.path for p in problems] == ["o.snapshot.locking.mode"]
    _, problems = MYSQL_OPTIONS.parse({"snapshot.locking.mode": "minimal_percona"}, path="o")
    assert problems == []
    assert (connector_name("mysql"), connector_name("mariadb")) == ("mysql", "mariadb")
    same = {n for n in MYSQL_OPTIONS.specs if MYSQL_OPTIONS.specs[n] == MARIADB_OPTIONS.specs[n]}
    assert set(MYSQL_OPTIONS.specs) - same == {"database.ssl.mode", "snapshot.locking.mode", "sourceinfo.struct.maker"}


def test_stricter_minimums_are_in_the_specs() -> None:
    for name, minimum in STRICTER_MINIMUMS.items():
        assert MYSQL_OPTIONS.specs[name].minimum == minimum
