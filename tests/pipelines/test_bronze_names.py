"""``sources[].bronze_catalog``: the catalog names bronze tables get, and the pipeline files that
are refused at load time (a bad schema name, two topics with one name, a silver table's name)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cdc_sources.spi import ConfigError
from pipelines.bronze_names import bronze_table_names
from pipelines.validation import load_validated

HEAD = "pipeline: shop\nlakehouse: {root: ./lake}\nsources:\n"


def source(name: str, bronze_catalog: str | None = None, prefix: str | None = None) -> str:
    text = f"  - name: {name}\n    connector: postgres\n    connection: {{host: h, database: d, user: u}}\n"
    if prefix is not None:
        text += f"    options: {{topic.prefix: {prefix}}}\n"
    if bronze_catalog is not None:
        text += f"    bronze_catalog: {bronze_catalog}\n"
    return text


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return path


def problems(path: Path) -> list[tuple[str, int | None, str]]:
    with pytest.raises(ConfigError) as err:
        load_validated(path, secrets=False, connectors=False)
    return [(p.path, p.line, p.message) for p in err.value.problems]


def test_names_are_the_topics_with_dots_and_other_characters_as_underscores(tmp_path):
    path = write(tmp_path, HEAD + source("pg", "main.shop_bronze") + source("my", "Bronze", prefix="my-db")
                 + source("plain") + "silver:\n"
                 "  - {table: customers, source: pg.public.Customers}\n"
                 "  - {table: customers_again, source: pg.public.Customers}\n"
                 "  - {table: orders, source: my-db.sales.order lines}\n"
                 "  - {table: items, source: plain.public.items}\n")
    names = bronze_table_names(load_validated(path, secrets=False, connectors=False).config)
    assert {t: (n.source, n.dotted) for t, n in names.items()} == {
        "pg.public.Customers": ("pg", "main.shop_bronze.pg_public_customers"),
        "my-db.sales.order lines": ("my", "Bronze.my_db_sales_order_lines"),
    }  # a source without bronze_catalog keeps its tables by path only


@pytest.mark.parametrize("value", ["main.shop.bronze", "main.", "9lives", "shop-bronze", "'a b'"])
def test_a_bad_bronze_catalog_names_file_line_and_key(tmp_path, value):
    path = write(tmp_path, HEAD + source("pg") + source("pg2", value)
                 + "silver:\n  - {table: c, source: pg2.public.c}\n")
    ((key, line, message),) = problems(path)
    assert (key, line) == ("sources[1].bronze_catalog", 10)
    assert "[catalog.]schema" in message


def test_two_topics_with_one_name_are_refused(tmp_path):
    path = write(tmp_path, HEAD + source("pg", "bronze") + "silver:\n"
                 "  - {table: a, source: pg.public_x.y}\n"
                 "  - {table: b, source: pg.public.x_y}\n")
    ((key, line, message),) = problems(path)
    assert (key, line) == ("silver[1].source", 10)
    assert "'pg.public_x.y' and 'pg.public.x_y' would both be registered as bronze.pg_public_x_y" in message
    assert "sources[0].bronze_catalog" in message


def test_two_sources_sharing_a_schema_collide_only_on_equal_names(tmp_path):
    path = write(tmp_path, HEAD + source("a", "bronze", prefix="x.y") + source("b", "BRONZE", prefix="x_y")
                 + "silver:\n"
                 "  - {table: a, source: x.y.public.t}\n"
                 "  - {table: b, source: x_y.public.T}\n"
                 "  - {table: c, source: x_y.public.other}\n")
    ((key, line, message),) = problems(path)
    assert (key, line) == ("silver[1].source", 16)
    assert "give sources[1].bronze_catalog or sources[0].bronze_catalog another schema" in message


def test_a_silver_catalog_table_may_not_take_a_bronze_name(tmp_path):
    path = write(tmp_path, HEAD + source("pg", "main.lake") + "silver:\n"
                 "  - {table: c, source: pg.public.c}\n"
                 "  - {table: d, source: pg.public.d, catalog_table: MAIN.lake.pg_public_c}\n")
    ((key, line, message),) = problems(path)
    assert (key, line) == ("silver[1].catalog_table", 10)
    assert "bronze topic 'pg.public.c' (sources[0].bronze_catalog)" in message


def test_validate_exits_2_with_the_message(tmp_path):
    path = write(tmp_path, HEAD + source("pg", "a.b.c") + "silver:\n  - {table: c, source: pg.public.c}\n")
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "validate", "-c", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:7: sources[0].bronze_catalog: 'a.b.c' is not a valid name" in proc.stderr
    assert "Traceback" not in proc.stderr
