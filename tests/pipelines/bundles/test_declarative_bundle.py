"""``cdc-lakehouse bundle pipelines``: the generated project, without ``spark-pipelines``.

The open-source project's sources are registered by the ``spark-pipelines`` CLI's own loader
(``register_definitions``) into a recording registry, on the Sail session:
that is pyspark 4.2's ``pyspark.pipelines`` API validating every call and argument. The
Databricks-only arguments (SCD type 2, ``apply_as_truncates``), which OSS pyspark rejects, are
read from the generated source's syntax tree. The run by ``spark-pipelines`` itself is in
test_declarative_run.py.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from pyspark.pipelines.cli import load_pipeline_spec, register_definitions
from pyspark.pipelines.flow import AutoCdcFlow, Flow
from pyspark.pipelines.graph_element_registry import GraphElementRegistry
from pyspark.pipelines.output import Output, StreamingTable, Table, TemporaryView

from pipelines.capture import run_capture
from pipelines.cli import main
from pipelines.config import parse_pipeline
from tests.support.pipeline_yaml import pipeline_text

FEED = ["__cdc_seq", "__cdc_op", "__cdc_kind", "__cdc_ts", "__cdc_unavailable"]
OFFLINE_DSN = "host=127.0.0.1 port=5432 dbname=shop user=cdc"


class Recorder(GraphElementRegistry):
    """Keeps what the sources register; calls each flow's query function as Spark Connect's
    registry does (there it is sent as a plan)."""

    def __init__(self) -> None:
        self.outputs: dict[str, Output] = {}
        self.flows: dict[str, Flow] = {}
        self.frames: dict[str, Any] = {}
        self.auto_cdc: dict[str, AutoCdcFlow] = {}

    def register_output(self, output: Output) -> None:
        self.outputs[output.name] = output

    def register_flow(self, flow: Flow) -> None:
        self.flows[flow.name] = flow
        self.frames[flow.target] = flow.func()

    def register_auto_cdc_flow(self, flow: AutoCdcFlow) -> None:
        assert flow.name is not None
        self.auto_cdc[flow.name] = flow

    def register_sql(self, sql_text: str, file_path: Path) -> None:
        raise AssertionError(f"no SQL source expected: {file_path}")


def register(project: Path, spark: Any) -> Recorder:
    """Load the project's sources with the ``spark-pipelines`` CLI's own loader."""
    spec_path = project / "spark-pipeline.yml"
    recorder = Recorder()
    register_definitions(spec_path, recorder, load_pipeline_spec(spec_path), spark, "test-graph")
    return recorder


def bundle(config: Path, out: Path, *options: str) -> int:
    wheel = out.parent / "cdc_lakehouse-0.0.0-py3-none-any.whl"  # copied as is
    wheel.write_bytes(b"")
    return main(["-q", "bundle", "pipelines", "-c", str(config), "-o", str(out), "--wheel", str(wheel), *options])


def _names(columns: list[Any] | None) -> list[str] | None:
    return None if columns is None else [str(c).removeprefix("Column<'").removesuffix("'>") for c in columns]


@pytest.mark.integration
@pytest.mark.postgres
@pytest.mark.spark
@pytest.mark.parametrize("engine", ["sail"], indirect=True)
def test_open_source_project_registers_auto_cdc_flows(pg_db: str, tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "lake")
    text = pipeline_text(root, pg_db, **{"skipped.operations": "none"}) + (
        "silver:\n  - {table: items, source: pg.public.items}\n"
        "  - {table: codes, source: pg.public.codes, keys: [code], rename: {code: item_code}, "
        "exclude_columns: [secret]}\n")
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, sku text, qty int);"
                     "INSERT INTO items VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30);"
                     "CREATE TABLE codes (code text NOT NULL, label text, secret text);"
                     "ALTER TABLE codes REPLICA IDENTITY FULL;"
                     "INSERT INTO codes VALUES ('x', 'ex', 's1')")
        cfg = parse_pipeline(text, env={})
        run_capture(cfg, until_idle=True)
        conn.execute("UPDATE items SET qty = 11 WHERE id = 1; DELETE FROM items WHERE id = 2; TRUNCATE items")
        run_capture(cfg, until_idle=True)

    project = tmp_path / "project"
    assert bundle(config, project) == 0
    spec = yaml.safe_load((project / "spark-pipeline.yml").read_text())
    assert "configuration" not in spec  # static confs: spark-pipelines.sh passes them (test_declarative_run.py)
    assert os.access(project / "spark-pipelines.sh", os.X_OK)
    assert spec["storage"] == f"{Path(root).resolve().as_uri()}/silver/_pipelines/t"
    graph = register(project, spark)

    assert {n: type(o) for n, o in graph.outputs.items()} == {
        "items_changes": TemporaryView, "items": StreamingTable, "codes_changes": TemporaryView,
        "codes": StreamingTable}
    for table in ("items", "codes"):
        target = graph.outputs[table]
        assert isinstance(target, Table) and target.format == "delta"
        flow = graph.auto_cdc[table]
        assert (flow.target, flow.source, flow.stored_as_scd_type) == (table, f"{table}_changes", 1)
        assert "__cdc_seq" in str(flow.sequence_by)
        assert "__cdc_kind" in str(flow.apply_as_deletes) and "'d'" in str(flow.apply_as_deletes)
        assert _names(flow.except_column_list) == FEED and flow.column_list is None
    assert _names(graph.auto_cdc["items"].keys) == ["id"]  # the primary key, from the schema history
    assert _names(graph.auto_cdc["codes"].keys) == ["item_code"]  # declared, by its silver name
    assert set(graph.frames) == {"items_changes", "codes_changes"}

    # the view's columns and events (the batch form of the same feed; Sail streams no Delta)
    from pipelines.change_feed import ChangeFeed

    items = ChangeFeed.load(spark, config, "items").batch(spark).orderBy("__cdc_seq").collect()
    assert [(r["id"], r["sku"], r["qty"], r["__cdc_op"], r["__cdc_kind"]) for r in items] == [
        (1, "a", 10, "r", "u"), (2, "b", 20, "r", "u"), (3, "c", 30, "r", "u"), (1, "a", 11, "u", "u"),
        (2, None, None, "d", "d")]
    with_truncates = ChangeFeed.load(spark, config, "items").batch(spark, truncates=True).orderBy("__cdc_seq")
    last = with_truncates.collect()[-1]
    assert (last["id"], last["__cdc_op"], last["__cdc_kind"], last["__cdc_ts"] is not None) == (None, "t", "t", True)
    codes = ChangeFeed.load(spark, config, "codes").batch(spark)
    assert codes.columns == ["item_code", "label", *FEED]


def _offline_config(tmp_path: Path, silver: str) -> Path:
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(tmp_path / "lake"), OFFLINE_DSN) + silver)
    return config


def _auto_cdc_calls(source: str) -> dict[str, Any]:
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "create_auto_cdc_flow"]
    assert len(calls) == 1
    return {k.arg: ast.literal_eval(k.value) for k in calls[0].keywords if k.arg != "keys"}


def test_databricks_target_uses_scd2_and_truncates(tmp_path: Path) -> None:
    config = _offline_config(tmp_path, "silver:\n  - {table: items, source: pg.public.items}\n"
                                       "  - {table: hist, source: pg.public.items, history: scd2, keys: [id]}\n")
    project = tmp_path / "project"
    assert bundle(config, project, "--target", "databricks") == 0
    assert not (project / "spark-pipelines.sh").exists()
    items = (project / "transformations" / "items.py").read_text()
    assert _auto_cdc_calls(items) == {
        "target": "items", "source": "items_changes", "sequence_by": "__cdc_seq",
        "apply_as_deletes": "__cdc_kind = 'd'", "apply_as_truncates": "__cdc_op = 't'",
        "except_column_list": FEED, "stored_as_scd_type": 1}
    assert "feed.stream(spark, truncates=True)" in items
    hist = (project / "transformations" / "hist.py").read_text()
    assert _auto_cdc_calls(hist) == {
        "target": "hist", "source": "hist_changes", "sequence_by": "__cdc_seq",
        "apply_as_deletes": "__cdc_kind = 'd'", "except_column_list": FEED, "stored_as_scd_type": 2}
    assert "keys=['id']" in hist and "feed.stream(spark)" in hist
    assert 'format="delta"' not in hist  # Databricks' default table format


def test_feed_apply_writes_append_only_tables(tmp_path: Path) -> None:
    config = _offline_config(tmp_path, "silver:\n  - {table: hist, source: pg.public.items, history: scd2}\n")
    project = tmp_path / "project"
    assert bundle(config, project, "--apply", "feed") == 0
    source = (project / "transformations" / "hist.py").read_text()
    assert "create_auto_cdc_flow" not in source and "@dp.table(name='hist_changes'" in source


@pytest.mark.parametrize(("silver", "options", "message"), [
    ("  - {table: h, source: pg.public.items, history: scd2}\n", [],
     "pipeline.yaml:10: silver[0].history: silver table 'h': open-source Spark's AUTO CDC stores SCD type 1 only"),
    ("  - {table: s, source: pg.public.items, deletes: soft}\n", ["--target", "databricks"],
     "pipeline.yaml:10: silver[0].deletes: silver table 's': soft deletes have no AUTO CDC equivalent"),
    ("  []\n", [], "the pipeline declares no silver table"),
])
def test_tables_the_target_cannot_express_exit_2_and_write_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], silver: str, options: list[str], message: str) -> None:
    config = _offline_config(tmp_path, "silver:\n" + silver)
    project = tmp_path / "project"
    assert bundle(config, project, *options) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not project.exists()
