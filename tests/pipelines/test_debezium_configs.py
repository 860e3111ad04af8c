"""Issue 14: Debezium connector configurations move over unchanged (or say exactly why not)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cdc_sources.spi import ConfigError
from pipelines.validation import load_validated


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return str(path)


def source(options: str, *, connector: str = "postgres", connection: str | None = "{database: d, user: u}") -> str:
    conn = f"    connection: {connection}\n" if connection else ""
    return (f"pipeline: x\nlakehouse: {{root: ./lake}}\nsources:\n  - name: a\n    connector: {connector}\n{conn}"
            f"    options:\n" + "".join(f"      {line}\n" for line in options.strip().splitlines()))


def test_connection_given_only_as_debezium_options(tmp_path):
    text = source("database.hostname: db.example.com\ndatabase.port: 6543\ndatabase.dbname: d\ndatabase.user: u",
                  connection=None)
    loaded = load_validated(write(tmp_path, text), env={})
    assert "db.example.com:6543" in str(loaded.connectors["a"].config.connection.describe())  # type: ignore[attr-defined]


def test_mysql_connection_given_only_as_debezium_options(tmp_path):
    text = source("database.hostname: db.example.com\ndatabase.user: u\ndatabase.server.id: 5501",
                  connector="mysql", connection=None)
    load_validated(write(tmp_path, text), env={})


def test_kafka_connect_keys_are_accepted_and_warned_about_once(tmp_path, caplog):
    text = source("""transforms: unwrap,route
transforms.unwrap.type: io.debezium.transforms.ExtractNewRecordState
transforms.unwrap.drop.tombstones: "false"
transforms.route.type: org.apache.kafka.connect.transforms.RegexRouter
predicates: p
predicates.p.type: org.apache.kafka.connect.transforms.predicates.TopicNameMatches
key.converter: org.apache.kafka.connect.json.JsonConverter
value.converter: org.apache.kafka.connect.json.JsonConverter
header.converter: org.apache.kafka.connect.storage.SimpleHeaderConverter
errors.tolerance: all
errors.log.enable: "true"
topic.creation.default.replication.factor: 3
producer.override.compression.type: lz4""")
    with caplog.at_level(logging.WARNING):
        load_validated(write(tmp_path, text), env={})
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    kafka = [w for w in warnings if "Kafka" in w]
    assert len(kafka) == 1, warnings
    assert "transforms.route.type" in kafka[0] and "errors.tolerance" in kafka[0]
    unwrap = [w for w in warnings if "ExtractNewRecordState" in w]
    assert len(unwrap) == 1 and "silver" in unwrap[0]


def test_errors_max_retries_is_still_debeziums_own_option(tmp_path):
    text = source("errors.max.retries: lots")
    with pytest.raises(ConfigError, match=r"errors\.max\.retries: must be a whole number"):
        load_validated(write(tmp_path, text), env={})


@pytest.mark.parametrize("name, expected", [
    ("postgresql", "postgres"),
    ("io.debezium.connector.postgresql.PostgresConnector", "postgres"),
    ("io.debezium.connector.mysql.MySqlConnector", "mysql"),
    ("io.debezium.connector.mariadb.MariaDbConnector", "mariadb"),
])
def test_debezium_connector_names_are_aliases(tmp_path, name, expected):
    extra = "database.server.id: 5501" if expected != "postgres" else "snapshot.mode: initial"
    loaded = load_validated(write(tmp_path, source(extra, connector=name)), env={})
    assert loaded.config.sources[0].connector == expected


@pytest.mark.parametrize("option", ["snapshot.mode", "snapshot.locking.mode", "snapshot.query.mode"])
def test_custom_snapshot_mode_without_its_class_is_an_error(tmp_path, option):
    with pytest.raises(ConfigError) as info:
        load_validated(write(tmp_path, source(f"{option}: custom")), env={})
    assert f"sources[0].options.{option}: 'custom' needs {option}.custom.name" in str(info.value)
