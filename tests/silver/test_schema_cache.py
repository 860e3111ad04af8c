"""The schema history is read once per run or streaming query, again only for a version it lacks."""

from __future__ import annotations

import datetime as dt

from silver.connect_schema import parse_connect_schema
from silver.schema_cache import SchemaCache
from silver.schema_history import TopicSchema

ID = {"type": "int64", "optional": False, "field": "id"}


def version(schema_id: str, extra: list[str]) -> TopicSchema:
    fields = [ID, *[{"type": "string", "optional": True, "field": n} for n in extra]]
    row = parse_connect_schema({"type": "struct", "optional": True, "fields": fields})
    key = parse_connect_schema({"type": "struct", "optional": False, "fields": [ID]})
    return TopicSchema(schema_id, ("id",), key, row, dt.datetime(2024, 1, 1, tzinfo=dt.UTC))


class History:
    """A growing schema history (the capture appends versions); counts the reads."""

    def __init__(self) -> None:
        self.versions: dict[str, list[TopicSchema]] = {"t": [version("v1", ["a"])], "u": [version("w1", [])]}
        self.reads: list[str] = []

    def load(self, topic: str) -> list[TopicSchema]:
        self.reads.append(topic)
        return list(self.versions[topic])


def test_versions_are_read_once_while_every_needed_id_is_held():
    history = History()
    cache = SchemaCache(history.load)
    for _ in range(5):  # five micro-batches of the same version
        assert [v.schema_id for v in cache("t", frozenset({"v1"}))] == ["v1"]
    assert history.reads == ["t"] and cache.loads == 1


def test_a_new_version_is_read_when_a_batch_points_at_it():
    history = History()
    cache = SchemaCache(history.load)
    cache("t", {"v1"})
    history.versions["t"].append(version("v2", ["a", "b"]))
    got = cache("t", {"v1", "v2"})
    assert [v.schema_id for v in got] == ["v1", "v2"] and [str(f.name) for f in got[1].row.fields] == ["id", "a", "b"]
    assert cache("t", {"v2"}) is got  # held now: no third read
    assert history.reads == ["t", "t"]


def test_an_increment_without_schema_ids_reads_the_newest_history():
    history = History()
    cache = SchemaCache(history.load)
    cache("t", {"v1"})
    history.versions["t"].append(version("v2", ["b"]))
    assert [v.schema_id for v in cache("t", frozenset())] == ["v1", "v2"]


def test_an_id_the_history_does_not_have_is_looked_up_each_time_and_topics_are_apart():
    history = History()
    cache = SchemaCache(history.load)
    assert [v.schema_id for v in cache("t", {"nope"})] == ["v1"]  # decoding then quarantines its rows
    cache("t", {"nope"})
    cache("u", {"w1"})
    cache("u", {"w1"})
    assert history.reads == ["t", "t", "u"]
