"""Silver test fixtures (the engine-parametrised ``spark`` session is in tests/conftest.py)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipelines.engine import EngineSpec
from pipelines.silver_runner import SilverRunResult, run_silver
from silver.declarations import SilverOptions, SilverTable
from silver.sql import column
from tests.silver.bronze_builder import BronzeBuilder

_COUNTER = itertools.count()


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path / "lake")


@pytest.fixture
def builder(root: str) -> Callable[..., BronzeBuilder]:
    def make(table: str = "t", **kw: object) -> BronzeBuilder:
        return BronzeBuilder(root, table=table, **kw)  # type: ignore[arg-type]
    return make


RunFn = Callable[..., SilverRunResult]


@pytest.fixture
def run(spark: SparkSession, root: str) -> RunFn:
    """Run silver once over the given declarations (source 'shop' -> prefix 'shop')."""
    def go(*tables: SilverTable, options: SilverOptions | None = None, **kw: object) -> SilverRunResult:
        return run_silver(root=root, engine=EngineSpec(), tables=list(tables), options=options or SilverOptions(),
                          sources={"shop": "shop"}, once=True, spark=spark, **kw)  # type: ignore[arg-type]
    return go


@pytest.fixture
def silver(spark: SparkSession, root: str) -> Callable[[str], DataFrame]:
    def read(table: str) -> DataFrame:
        return spark.read.format("delta").load(f"{root}/silver/{table}")
    return read


def rows(df: DataFrame, *cols: str, order: str | None = None) -> list[tuple[object, ...]]:
    """Selected columns as tuples, sorted (by ``order`` or by all)."""
    sel = df.select(*[column(c) for c in cols]) if cols else df
    out = [tuple(r) for r in sel.collect()]
    return sorted(out, key=lambda t: tuple((x is None, str(x)) for x in t))
