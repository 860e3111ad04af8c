"""Staging (`silver.staging`): where an apply keeps its decoded rows, and that it lets them go.

Classic Spark keeps them in its cache, released when the apply ends (a parquet round trip there
cost a compressed write and a re-read of every row); Sail writes them as parquet under the
state location. The oracle for the rows is the bronze events themselves (latest per key).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from silver.declarations import SilverTable, SoftDeleteColumns
from silver.engine_traits import EngineTraits
from tests.silver.bronze_builder import int32, string
from tests.silver.conftest import rows

pytestmark = pytest.mark.spark


def _cache_empty(spark: SparkSession) -> bool:
    """The classic session's cache of DataFrames holds nothing (``persist`` registers frames there;
    Delta's own snapshot caches are RDDs outside it)."""
    return bool(spark._jsparkSession.sharedState().cacheManager().isEmpty())  # type: ignore[attr-defined]


def test_apply_stages_where_its_engine_is_fast_and_releases_the_cache(builder, run, silver, spark, root):
    b = builder("staged")
    b.register([int32("id", optional=False), string("name")], ["id"])
    for i in range(1, 201):
        b.insert({"id": i, "name": f"n{i}"})
    for i in range(1, 201, 3):
        b.update({"id": i, "name": f"u{i}"})
    for i in range(2, 201, 5):
        b.delete({"id": i})
    b.commit()
    classic = EngineTraits.of(spark).classic
    assert not classic or _cache_empty(spark)  # nothing cached before: what is cached after is this apply's
    decl = SilverTable(table="staged", source=b.topic, deletes="soft", soft_delete=SoftDeleteColumns())
    (first,) = run(decl).tables
    b.update({"id": 1, "name": "again"}).delete({"id": 4}).commit()
    (second,) = run(decl).tables  # the MERGE path
    assert (first.status, second.status) == ("applied", "applied"), (first.error, second.error)

    deleted = set(range(2, 201, 5)) | {4}
    names = {i: ("again" if i == 1 else f"u{i}" if i % 3 == 1 else f"n{i}") for i in range(1, 201)}
    expected = sorted((i, names[i], i in deleted) for i in range(1, 201))
    assert sorted(rows(silver("staged"), "id", "name", "_cdc_deleted")) == expected

    staging = Path(root) / "silver" / "_cdc" / "staging" / "staged"
    if classic:
        assert not staging.exists(), sorted(p.name for p in staging.iterdir())
        assert _cache_empty(spark)  # every staged frame was released
    else:
        assert (staging / "latest").is_dir()
