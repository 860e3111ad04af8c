"""Issue 14: ``cdc-lakehouse import-debezium connector.json`` turns a Kafka Connect config into YAML."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from pipelines.cli import main
from pipelines.validation import load_validated

POSTGRES = {
    "name": "inventory-connector",
    "config": {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "database.hostname": "db.example.com",
        "database.port": "5432",
        "database.user": "debezium",
        "database.password": "Sup3rSecretValue",
        "database.dbname": "inventory",
        "topic.prefix": "dbserver1",
        "plugin.name": "pgoutput",
        "slot.name": "inventory_slot",
        "table.include.list": "public.customers,public.orders",
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "schema.registry.url": "http://registry:8081",
    },
}


def convert(tmp_path: Path, config: object, capsys, *extra: str) -> tuple[int, str, str]:
    src = tmp_path / "connector.json"
    src.write_text(json.dumps(config, indent=2))
    code = main(["import-debezium", str(src), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_postgres_connector_becomes_a_valid_pipeline(tmp_path, capsys):
    code, out, err = convert(tmp_path, POSTGRES, capsys)
    assert code == 0, err
    assert "Sup3rSecretValue" not in out + err
    data = yaml.safe_load(out)
    source = data["sources"][0]
    assert data["pipeline"] == "inventory-connector"
    assert source["name"] == "dbserver1" and source["connector"] == "postgres"
    assert source["connection"] == {"host": "db.example.com", "port": 5432, "database": "inventory",
                                    "user": "debezium", "password": "${DBSERVER1_PASSWORD}"}
    assert source["options"]["table.include.list"] == "public.customers,public.orders"
    assert "transforms" not in source["options"] and "key.converter" not in source["options"]
    for key in ("tasks.max", "transforms", "transforms.unwrap.type", "key.converter",
                "value.converter.schemas.enable", "errors.tolerance", "schema.registry.url", "database.password"):
        assert f"#   {key}:" in out, key
    assert "silver" in out  # ExtractNewRecordState: silver tables instead
    path = tmp_path / "pipeline.yaml"
    path.write_text(out)
    loaded = load_validated(path, env={"DBSERVER1_PASSWORD": "x"})
    assert loaded.config.sources[0].options["slot.name"] == "inventory_slot"


def test_flat_mysql_config_to_a_file(tmp_path, capsys):
    config = {"connector.class": "io.debezium.connector.mysql.MySqlConnector", "database.hostname": "m",
              "database.user": "u", "database.server.id": "5501", "topic.prefix": "shop",
              "database.include.list": "shop"}
    target = tmp_path / "out.yaml"
    code, _, err = convert(tmp_path, config, capsys, "-o", str(target))
    assert code == 0, err
    data = yaml.safe_load(target.read_text())
    assert data["sources"][0]["connector"] == "mysql"
    assert data["pipeline"] == "shop"
    load_validated(target, env={})


def test_bad_json_names_file_and_line(tmp_path, capsys):
    src = tmp_path / "connector.json"
    src.write_text('{\n  "name": "x",\n  "config": {\n    "a": 1,\n  }\n}\n')
    assert main(["import-debezium", str(src)]) == 2
    assert f"{src}:5" in capsys.readouterr().err


def test_unsupported_connector_class(tmp_path, capsys):
    code, _, err = convert(tmp_path, {"config": {"connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
                                                 "topic.prefix": "m"}}, capsys)
    assert code == 2
    assert "config.connector.class" in err and "MongoDbConnector" in err and "postgres" in err


KAFKA_ONLY = {
    "schema.history.internal.kafka.topic": "schema-changes.shop",
    "schema.history.internal.kafka.bootstrap.servers": "kafka:9092",
    "schema.history.internal.producer.security.protocol": "SSL",
    "schema.history.internal.consumer.security.protocol": "SSL",
    "topic.creation.default.partitions": "1",
    "errors.log.enable": "true",
    "errors.deadletterqueue.topic.name": "dlq",
    "tasks.max": "1",
}


@pytest.mark.parametrize("connector_class", ["io.debezium.connector.mysql.MySqlConnector",
                                             "io.debezium.connector.postgresql.PostgresConnector"])
def test_kafka_only_options_are_dropped_and_listed(tmp_path, capsys, connector_class):
    config = {"connector.class": connector_class, "database.hostname": "m", "database.user": "u",
              "database.server.id": "5501", "database.dbname": "shop", "topic.prefix": "shop", **KAFKA_ONLY}
    code, out, err = convert(tmp_path, config, capsys)
    assert code == 0, err
    options = yaml.safe_load(out)["sources"][0]["options"]
    for key in KAFKA_ONLY:
        assert key not in options, key
        assert f"#   {key}: a Kafka or Kafka Connect setting: no effect here" in out, key


@pytest.mark.parametrize("connector, extra", [("mysql", {"database.server.id": "5"}), ("postgres", {})])
def test_validation_warns_that_kafka_only_options_have_no_effect(tmp_path, caplog, connector, extra):
    options = "".join(f'      {k}: "{v}"\n' for k, v in {**extra, **KAFKA_ONLY}.items())
    path = tmp_path / "pipeline.yaml"
    path.write_text(f"pipeline: x\nlakehouse: {{root: {tmp_path / 'lake'}}}\nsources:\n  - name: shop\n"
                    f"    connector: {connector}\n    connection: {{host: h, database: d, user: u}}\n"
                    f"    options:\n{options}")
    with caplog.at_level(logging.WARNING):
        load_validated(path, env={})
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "have no effect here" in warned
    for key in KAFKA_ONLY:
        assert key in warned, key
