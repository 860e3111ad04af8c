"""Speed: a typical ALTER applies well under 10 ms, with thousands of tables in the model."""

from __future__ import annotations

import statistics
import time

from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.model import TableId

TABLES = 2000
CREATE = ("CREATE TABLE `t{i}` (id BIGINT NOT NULL AUTO_INCREMENT, name VARCHAR(100) NOT NULL DEFAULT '', "
          "price DECIMAL(10,2) UNSIGNED, created TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
          "status ENUM('new','paid','sent') DEFAULT 'new', note TEXT, PRIMARY KEY (id), UNIQUE KEY u (name)) "
          "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
ALTER = ("ALTER TABLE `t{i}` ADD COLUMN extra INT NOT NULL DEFAULT 0 AFTER name, "
         "MODIFY note VARCHAR(200) CHARACTER SET latin1, ADD INDEX ix (created)")


def test_thousands_of_tables_and_fast_alters() -> None:
    model = SchemaModel(server_charset="utf8mb4")
    started = time.perf_counter()
    for i in range(TABLES):
        model.apply(CREATE.format(i=i), database="shop")
    per_create = (time.perf_counter() - started) / TABLES
    assert len(model) == TABLES
    timings: list[float] = []
    for i in range(0, TABLES, 15):
        started = time.perf_counter()
        model.apply(ALTER.format(i=i), database="shop")
        timings.append(time.perf_counter() - started)
    median = statistics.median(timings)
    assert median < 0.005, f"median ALTER {median * 1000:.2f} ms"
    assert per_create < 0.01, f"CREATE TABLE {per_create * 1000:.2f} ms"
    table = model.table(TableId("shop", "t0"))
    assert table is not None and [c.name for c in table.columns][:3] == ["id", "name", "extra"]
    started = time.perf_counter()
    snapshot = model.copy()
    assert time.perf_counter() - started < 0.05 and len(snapshot) == TABLES
