"""The Oracle option set against Debezium 3.6.3's Oracle connector (tests/support/java/ConnectorOptionsProbe.java).

Every option ``OracleConnectorConfig`` defines (``ALL_FIELDS``) and the shared ones it reads
from its parent classes, straight from the jar: each known here with the same default, and each
value accepted or rejected as Debezium's own validation does. Deliberate differences are listed.
"""

from __future__ import annotations

from typing import Any

import pytest

from cdc_sources.common.options import is_kafka_connect_option
from cdc_sources.oracle.options import (
    ORACLE_OPTIONS,
    REMOVED_OPTIONS,
    SNAPSHOT_MODE_ALIASES,
    STRICTER_MINIMUMS,
    parse_oracle_options,
)
from tests.support.options_probe import ORACLE, debezium_fields, validate_values

PROBE = ORACLE
PATTERN_FIELDS = {
    "column.mask.hash.([^.]+).with.salt.(.+)": "column.mask.hash.SHA-256.with.salt.pepper",
    "column.mask.with.(d+).chars": "column.mask.with.4.chars",
    "column.truncate.to.(d+).chars": "column.truncate.to.20.chars",
}
CONNECT_LEVEL = {"name", "connector.class", "tasks.max", "key.converter", "value.converter",
                 "key.converter.schemas.enable", "value.converter.schemas.enable", "offset.storage",
                 "offset.flush.interval.ms",
                 "signal.file"}
KNOWN_DIFFERENCES = {
    **{("snapshot.mode", alias): "Debezium 2.x name accepted as an alias" for alias in SNAPSHOT_MODE_ALIASES},
    **{(name, str(v)): "stricter: no meaning below the minimum"
       for name, minimum in STRICTER_MINIMUMS.items() for v in range(-2, minimum)},
    ("snapshot.mode", "custom"): "needs a Java class: rejected",
    ("snapshot.locking.mode", "custom"): "needs a Java class: rejected",
    ("snapshot.query.mode", "custom"): "needs a Java class: rejected",
    ("log.mining.strategy", "dictionary_from_file"): "needs log.mining.path.dictionary: rejected without it",
}


@pytest.fixture(scope="module", name="debezium_fields")
def _debezium_fields() -> dict[str, dict[str, Any]]:
    return debezium_fields(PROBE)


def _same_default(ours: str | None, theirs: str | None, kind: str) -> bool:
    if ours is None or theirs is None:
        return ours == theirs
    return ours.lower() == theirs.lower() if kind == "enum" else ours == theirs


def test_every_debezium_option_is_known_with_its_default(debezium_fields: dict[str, dict[str, Any]]) -> None:
    missing, wrong = [], []
    for name, field in debezium_fields.items():
        if name in PATTERN_FIELDS or name.startswith("internal."):
            probe = PATTERN_FIELDS.get(name, name)
            _, problems = ORACLE_OPTIONS.parse({probe: field["default"] or "S.T.C"}, path="o")
            missing += [name] if problems else []
            continue
        spec = ORACLE_OPTIONS.specs.get(name)
        if spec is None:
            missing.append(name)
        elif not _same_default(spec.default, field["default"], spec.kind):
            wrong.append(f"{name}: ours {spec.default!r}, Debezium {field['default']!r}")
    assert missing == []
    assert wrong == []
    mining = [n for n, f in debezium_fields.items() if f["scope"] == "all" and n.startswith("log.mining.")]
    assert len(mining) >= 30
    assert sum(1 for f in debezium_fields.values() if f["scope"] == "all") >= 150


def test_every_option_of_ours_is_a_debezium_option(debezium_fields: dict[str, dict[str, Any]]) -> None:
    unknown = [n for n in ORACLE_OPTIONS.specs
               if n not in debezium_fields and n not in CONNECT_LEVEL and not is_kafka_connect_option(n)]
    assert unknown == []
    assert not set(REMOVED_OPTIONS) & set(debezium_fields)


def _validation_cases(fields: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for name, spec in ORACLE_OPTIONS.specs.items():
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
    options = {name: value}
    if name == "max.queue.size":  # Debezium compares it with max.batch.size's default
        options["max.batch.size"] = "2048"
    _, problems = parse_oracle_options(options, path="o")
    return not problems


def test_values_are_accepted_and_rejected_like_debezium(debezium_fields: dict[str, dict[str, Any]]) -> None:
    cases = _validation_cases(debezium_fields)
    answers = validate_values(PROBE, cases)
    differences = []
    for (name, value), answer in zip(cases, answers, strict=True):
        theirs = answer == "ok"
        if _ours_accept(name, value) != theirs and (name, value) not in KNOWN_DIFFERENCES:
            differences.append(f"{name}={value}: Debezium {'accepts' if theirs else 'rejects'}")
    assert differences == [], "\n".join(differences)
    assert len(cases) > 250


def test_defaults_and_cross_checks() -> None:
    parsed, problems = parse_oracle_options({}, path="o")
    assert problems == []
    assert parsed.get("database.port") == 1528
    assert parsed.get("log.mining.strategy") == "online_catalog"
    assert parsed.get("database.connection.adapter") == "logminer"
    assert parsed.get("lob.enabled") is False
    assert parsed.get("unavailable.value.placeholder") == "__debezium_unavailable_value"
    assert parsed.get("snapshot.locking.mode") == "shared"
    assert parsed.get("log.mining.log.count.min") == 2
    _, problems = parse_oracle_options({"max.queue.size": 100, "max.batch.size": 100,
                                        "log.mining.batch.size.max": 100000,
                                        "log.mining.strategy": "dictionary_from_file"}, path="s.options")
    assert [p.path for p in problems] == ["s.options.log.mining.batch.size.max", "s.options.max.queue.size",
                                          "s.options.log.mining.strategy"]
    assert "log.mining.log.count.min" in problems[0].message
    assert "docs/oracle.md" not in problems[0].message
    _, problems = parse_oracle_options({"log.mining.strategie": "x"}, path="o")
    assert "did you mean 'log.mining.strategy'?" in problems[0].message and "docs/oracle.md" in problems[0].message
