"""``connector: oracle``: its options are validated with their key paths; valid ones build the connector."""

from __future__ import annotations

import pytest

from pipelines.config import SourceSpec
from pipelines.registry import build_connector


def spec(options: dict[str, object], database: str | None = "ORCLPDB1") -> SourceSpec:
    connection = {"host": "db", "user": "c", **({"database": database} if database else {})}
    return SourceSpec.model_validate({"name": "ora", "connector": "oracle", "connection": connection,
                                      "options": options})


def test_option_problems_are_reported_with_their_key_paths() -> None:
    connector, problems = build_connector(spec({"log.mining.strategy": "bogus", "log.mining.batch.size.max": 5,
                                                "max.queue.size": 10}), "sources[0]")
    assert connector is None
    assert [p.path for p in problems] == ["sources[0].options.log.mining.strategy",
                                          "sources[0].options.log.mining.batch.size.max",
                                          "sources[0].options.max.queue.size"]
    assert "log.mining.log.count.min" in problems[1].message


def test_valid_options_build_the_connector_and_unsupported_modes_are_named() -> None:
    connector, problems = build_connector(spec({"table.include.list": "APP\\..*"}), "sources[0]")
    assert problems == [] and connector is not None and connector.name == "ora"
    connector, problems = build_connector(spec({"snapshot.mode": "configuration_based", "lob.enabled": True}, None),
                                          "sources[0]")
    assert connector is None
    assert [(p.path, p.message) for p in problems] == [
        ("sources[0].connection.database", "required"),
        ("sources[0].options.snapshot.mode",
         "'configuration_based' is not supported by this connector yet; supported: always, initial, initial_only, "
         "no_data, recovery, when_needed")]
    connector, problems = build_connector(spec({"lob.enabled": True}), "sources[0]")
    assert problems == [] and connector is not None


def test_an_unreachable_server_is_a_retriable_error_naming_where_never_the_password() -> None:
    from cdc_sources.oracle import OracleConnectError
    from cdc_sources.spi.errors import Retriable
    from pipelines.local_postgres import free_port

    port = free_port()  # nothing listens there
    source = SourceSpec.model_validate({"name": "ora", "connector": "oracle",
                                        "connection": {"host": "127.0.0.1", "port": port, "user": "c##dbz",
                                                       "password": "s3cret-pw", "database": "ORCLPDB1"}})
    connector, problems = build_connector(source, "sources[0]")
    assert connector is not None, problems
    with pytest.raises(OracleConnectError) as caught:
        connector.open(None)
    assert isinstance(caught.value, Retriable)
    assert f"cannot connect to Oracle as c##dbz@127.0.0.1:{port}/ORCLPDB1" in str(caught.value)
    assert "s3cret-pw" not in str(caught.value)
