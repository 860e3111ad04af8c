"""``connector: oracle``: its options are validated, then the source is refused (no capture yet)."""

from __future__ import annotations

from pipelines.config import SourceSpec
from pipelines.registry import build_connector


def spec(options: dict[str, object]) -> SourceSpec:
    return SourceSpec.model_validate({"name": "ora", "connector": "oracle",
                                      "connection": {"host": "db", "user": "c"}, "options": options})


def test_option_problems_are_reported_with_their_key_paths() -> None:
    connector, problems = build_connector(spec({"log.mining.strategy": "bogus", "log.mining.batch.size.max": 5,
                                                "max.queue.size": 10}), "sources[0]")
    assert connector is None
    assert [p.path for p in problems] == ["sources[0].options.log.mining.strategy",
                                          "sources[0].options.log.mining.batch.size.max",
                                          "sources[0].options.max.queue.size"]
    assert "log.mining.log.count.min" in problems[1].message


def test_valid_options_still_refuse_the_source() -> None:
    connector, problems = build_connector(spec({"log.mining.strategy": "redo_log_catalog"}), "sources[0]")
    assert connector is None
    assert [(p.path, p.message) for p in problems] == [
        ("sources[0].connector",
         "capture from Oracle is not available yet (the options are valid); see docs/oracle.md")]
