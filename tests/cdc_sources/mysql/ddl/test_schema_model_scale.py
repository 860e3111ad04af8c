"""The schema model at scale: hundreds of tables, ALTERs and a copy (the timings are measured by
``bench/ddl_model_bench.py``, not asserted here)."""

from __future__ import annotations

from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.model import TableId

TABLES = 300
CREATE = ("CREATE TABLE `t{i}` (id BIGINT NOT NULL AUTO_INCREMENT, name VARCHAR(100) NOT NULL DEFAULT '', "
          "price DECIMAL(10,2) UNSIGNED, created TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
          "status ENUM('new','paid','sent') DEFAULT 'new', note TEXT, PRIMARY KEY (id), UNIQUE KEY u (name)) "
          "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
ALTER = ("ALTER TABLE `t{i}` ADD COLUMN extra INT NOT NULL DEFAULT 0 AFTER name, "
         "MODIFY note VARCHAR(200) CHARACTER SET latin1, ADD INDEX ix (created)")


def test_many_tables_alters_and_a_copy() -> None:
    model = SchemaModel(server_charset="utf8mb4")
    for i in range(TABLES):
        model.apply(CREATE.format(i=i), database="shop")
    assert len(model) == TABLES
    for i in range(0, TABLES, 15):
        model.apply(ALTER.format(i=i), database="shop")
    snapshot = model.copy()
    model.apply("DROP TABLE `t0`", database="shop")
    altered, untouched = snapshot.table(TableId("shop", "t0")), snapshot.table(TableId("shop", "t1"))
    assert altered is not None and untouched is not None
    assert [c.name for c in altered.columns] == ["id", "name", "extra", "price", "created", "status", "note"]
    assert [c.name for c in untouched.columns] == ["id", "name", "price", "created", "status", "note"]
    assert len(snapshot) == TABLES and len(model) == TABLES - 1  # the copy is independent of the model
