"""The SQL Server option set against Debezium 3.6.3's SQL Server connector.

The conformance tests read every option ``SqlServerConnectorConfig`` defines (``ALL_FIELDS``) and
the shared ones it reads from its parent classes straight from the jar
(tests/support/java/ConnectorOptionsProbe.java), and check that each is known here with the same
default, and that values are accepted or rejected as Debezium's own validation does. Deliberate
differences are listed (`STRICTER_MINIMUMS`, the Debezium 2.x ``snapshot.mode`` names accepted as
aliases, ``custom`` plug-ins).
"""

from __future__ import annotations

from typing import Any

import pytest

from cdc_sources.common.options import is_kafka_connect_option
from cdc_sources.sqlserver.config import build_sqlserver_config
from cdc_sources.sqlserver.options import (
    SNAPSHOT_MODE_ALIASES,
    SQLSERVER_OPTIONS,
    STRICTER_MINIMUMS,
)
from tests.support.options_probe import SQLSERVER, debezium_fields, validate_values

PROBE = SQLSERVER
PATTERN_FIELDS = {
    "column.mask.hash.([^.]+).with.salt.(.+)": "column.mask.hash.SHA-256.with.salt.pepper",
    "column.mask.with.(d+).chars": "column.mask.with.4.chars",
    "column.truncate.to.(d+).chars": "column.truncate.to.20.chars",
}
"""Debezium's option families (their Field names are patterns) and one member of each."""

NOT_FOR_SQLSERVER = {"database.dbname", "schema.include.list", "schema.exclude.list", "database.include.list",
                     "database.exclude.list", "internal.schema.history.internal.ddl.filter"}
"""Fields of Debezium's shared parent classes that the SQL Server connector does not read
(``database.dbname`` became ``database.names``; the DDL filter is for binlog connectors)."""

CONNECT_LEVEL = {"name", "connector.class", "tasks.max", "key.converter", "value.converter",
                 "key.converter.schemas.enable", "value.converter.schemas.enable", "offset.storage",
                 "offset.flush.interval.ms", "schema.history.internal.file.filename", "signal.file"}
"""Options we accept that belong to Kafka Connect or to other Debezium classes than the probed ones."""

BASE = {"database.names": "inventory"}


@pytest.fixture(scope="module", name="debezium_fields")
def _debezium_fields() -> dict[str, dict[str, Any]]:
    return debezium_fields(PROBE)


def _same_default(ours: str | None, theirs: str | None, kind: str) -> bool:
    if ours is None or theirs is None:
        return ours == theirs
    return ours.lower() == theirs.lower() if kind == "enum" else ours == theirs


@pytest.mark.conformance
def test_every_debezium_option_is_known_with_its_default(debezium_fields: dict[str, dict[str, Any]]) -> None:
    missing, wrong = [], []
    for name, field in debezium_fields.items():
        if name in PATTERN_FIELDS:
            _, problems = SQLSERVER_OPTIONS.parse({PATTERN_FIELDS[name]: "dbo.t.c"}, path="o")
            missing += [name] if problems else []
            continue
        if name.startswith("internal."):
            if field["scope"] == "extra" and name in NOT_FOR_SQLSERVER:
                continue
            _, problems = SQLSERVER_OPTIONS.parse({name: field["default"] or "x"}, path="o")
            missing += [name] if problems else []
            continue
        if field["scope"] == "extra" and name in NOT_FOR_SQLSERVER:
            continue
        spec = SQLSERVER_OPTIONS.specs.get(name)
        if spec is None:
            missing.append(name)
        elif not _same_default(spec.default, field["default"], spec.kind):
            wrong.append(f"{name}: ours {spec.default!r}, Debezium {field['default']!r}")
    assert missing == []
    assert wrong == []
    assert sum(1 for f in debezium_fields.values() if f["scope"] == "all") >= 95


@pytest.mark.conformance
def test_every_option_of_ours_is_a_debezium_option(debezium_fields: dict[str, dict[str, Any]]) -> None:
    unknown = [n for n in SQLSERVER_OPTIONS.specs
               if n not in debezium_fields and n not in CONNECT_LEVEL and not is_kafka_connect_option(n)]
    assert unknown == []


@pytest.mark.conformance
def test_enum_choices_are_debeziums(debezium_fields: dict[str, dict[str, Any]]) -> None:
    differences = []
    for name, spec in SQLSERVER_OPTIONS.specs.items():
        field = debezium_fields.get(name)
        if spec.kind == "enum" and field is not None and field["allowed"]:
            theirs = {a.lower() for a in field["allowed"]} - {"ignore"}
            if set(spec.choices) != theirs:
                differences.append(f"{name}: ours {sorted(spec.choices)}, Debezium {sorted(theirs)}")
    assert differences == []


def _validation_cases(fields: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for name, spec in SQLSERVER_OPTIONS.specs.items():
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
    options = {**BASE, name: value} if name != "database.names" else {name: value}
    _, problems = build_sqlserver_config(name="probe", connection={"user": "probe"}, options=options, path="s")
    return not problems


KNOWN_DIFFERENCES = {
    **{("snapshot.mode", alias): "Debezium 2.x name accepted as an alias" for alias in SNAPSHOT_MODE_ALIASES},
    **{(name, str(v)): "stricter: no meaning below the minimum"
       for name, minimum in STRICTER_MINIMUMS.items() for v in range(-2, minimum)},
    ("snapshot.mode", "custom"): "needs a Java class: rejected",
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
    assert len(cases) > 200


# -- the configuration --------------------------------------------------------------------------


def test_defaults_fill_in() -> None:
    config, problems = build_sqlserver_config(name="shop", connection={"user": "cdc", "password": "pw"},
                                              options=BASE, path="s")
    assert problems == [] and config is not None
    assert config.opt("snapshot.mode") == "initial"
    assert config.opt("snapshot.isolation.mode") == "repeatable_read"
    assert config.opt("time.precision.mode") == "adaptive"
    assert config.opt("data.query.mode") == "direct"
    assert config.opt("max.iteration.transactions") == 500
    assert config.opt("database.port") == 1433
    assert config.connection.databases == ("inventory",)
    assert config.name == "shop" and config.skipped_operations == frozenset({"t"})
    assert "pw" not in repr(config.connection)


def test_database_names_are_required_and_unique() -> None:
    _, problems = build_sqlserver_config(name="shop", connection={"user": "cdc"}, options={}, path="sources[0]")
    assert [p.path for p in problems] == ["sources[0].options.database.names"]
    assert "is required" in problems[0].message
    _, problems = build_sqlserver_config(name="shop", connection={"user": "cdc"},
                                         options={"database.names": "a,B,b"}, path="s")
    assert [p.path for p in problems] == ["s.options.database.names"]
    config, problems = build_sqlserver_config(
        name="shop", connection={"user": "cdc", "database": "one"},
        options={"driver.ApplicationIntent": "ReadOnly", "database.encrypt": "false",
                 "database.trustServerCertificate": "true"}, path="s")
    assert problems == [] and config is not None
    assert config.connection.databases == ("one",)
    assert dict(config.connection.attributes) == {"ApplicationIntent": "ReadOnly", "Encrypt": "false",
                                                  "TrustServerCertificate": "true"}
    _, problems = build_sqlserver_config(name="shop", connection={"user": "cdc"},
                                         options={**BASE, "database.encrpyt": "false"}, path="s")
    assert [p.path for p in problems] == ["s.options.database.encrpyt"]


def test_removed_and_unknown_options_are_explained() -> None:
    _, problems = build_sqlserver_config(
        name="shop", connection={"user": "cdc"},
        options={**BASE, "database.server.name": "x", "database.dbname": "d", "snapshot.isolaton.mode": "snapshot"},
        path="s")
    messages = {p.path: p.message for p in problems}
    assert "use topic.prefix" in messages["s.options.database.server.name"]
    assert "use database.names" in messages["s.options.database.dbname"]
    assert "did you mean 'snapshot.isolation.mode'?" in messages["s.options.snapshot.isolaton.mode"]
    assert "docs/sqlserver.md" in messages["s.options.snapshot.isolaton.mode"]


def test_filters_are_validated() -> None:
    _, problems = build_sqlserver_config(
        name="shop", connection={"user": "cdc"},
        options={**BASE, "table.include.list": "dbo.a", "table.exclude.list": "dbo.b", "column.include.list": "(",
                 "skipped.operations": "x"}, path="s")
    assert {p.path for p in problems} >= {"s.options.table.exclude.list", "s.options.column.include.list",
                                          "s.options.skipped.operations"}
    config, problems = build_sqlserver_config(name="shop", connection={"user": "cdc"},
                                              options={**BASE, "table.include.list": "dbo\\.cust.*"}, path="s")
    assert problems == [] and config is not None
    assert config.tables.includes_table("dbo", "customers") and not config.tables.includes_table("dbo", "orders")
    assert not config.tables.includes_table("cdc", "dbo_customers_CT")


# -- the signal table ---------------------------------------------------------------------------


def test_the_signal_table_is_database_schema_table_of_the_captured_database() -> None:
    config, problems = build_sqlserver_config(
        name="shop", connection={"user": "cdc"},
        options={**BASE, "signal.data.collection": "Inventory.dbo.dbz_signal", "table.include.list": "dbo.orders"},
        path="s")
    assert problems == [] and config is not None and config.signal_table is not None
    assert (config.signal_table.database, config.signal_table.schema, config.signal_table.table) == (
        "inventory", "dbo", "dbz_signal")
    assert config.tables.includes_table("dbo", "dbz_signal")  # captured whatever the include list says
    assert not config.tables.includes_table("dbo", "customers")


def test_several_databases_take_one_signal_table_each() -> None:
    config, problems = build_sqlserver_config(
        name="shop", connection={"user": "cdc"},
        options={**BASE, "database.names": "Sales,inventory,hr",
                 "signal.data.collection": "inventory.dbo.dbz_signal, SALES.ops.\"my signal\""}, path="s")
    assert problems == [] and config is not None
    assert [(t.database, t.schema, t.table) for t in config.signal_tables] == [
        ("inventory", "dbo", "dbz_signal"), ("Sales", "ops", "my signal")]
    assert config.signal_table is None  # one per database: ask by database
    assert config.signal_table_for("sales") == config.signal_tables[1]
    assert config.signal_table_for("INVENTORY") == config.signal_tables[0]
    assert config.signal_table_for("hr") is None  # takes no signals
    assert config.tables.includes_table("dbo", "dbz_signal") and config.tables.includes_table("ops", "my signal")


@pytest.mark.parametrize(("options", "message"), [
    ({"signal.data.collection": "dbo.dbz_signal"}, "must be <database>.<schema>.<table>"),
    ({"signal.data.collection": "other.dbo.dbz_signal"}, "names database 'other', which is not in database.names"),
    ({"signal.data.collection": "a.dbo.s1,A.dbo.s2", "database.names": "a,b"},
     "names two signal tables of database 'A': give each database at most one"),
    ({"signal.data.collection": "a.dbo.s1,c.dbo.s2", "database.names": "a,b"},
     "names database 'c', which is not in database.names (a, b)"),
    ({"signal.data.collection": "inventory.dbo.s1,inventory.x.s2"}, "names two signal tables of database"),
    ({"signal.data.collection": "inventory.dbo.s", "signal.enabled.channels": "source,kafka"},
     "unsupported channel 'kafka'"),
])
def test_a_bad_signal_table_is_a_config_problem(options: dict[str, str], message: str) -> None:
    _, problems = build_sqlserver_config(name="shop", connection={"user": "cdc"}, options={**BASE, **options},
                                         path="sources[0]")
    assert len(problems) == 1, problems
    assert message in problems[0].message
    assert problems[0].path.startswith("sources[0].options.signal.")
