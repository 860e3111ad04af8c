"""SchemaModel.apply: outcomes, warnings, errors, atomicity, and the deliberate differences from
Debezium (listed in test_ddl_conformance.DIFFERENCES) doing what we intend."""

from __future__ import annotations

import pytest

from cdc_sources.mysql.ddl import (
    ChangeType,
    DdlParseError,
    DdlUnknownObjectError,
    EventKind,
    SchemaModel,
)
from cdc_sources.mysql.model import TableDef, TableId

DB = "shop"


def _model(*ddl: str, **options: object) -> SchemaModel:
    model = SchemaModel(server_charset="utf8mb4", **options)  # type: ignore[arg-type]
    for text in ddl:
        model.apply(text, database=DB)
    return model


def _table(model: SchemaModel, name: str, database: str = DB) -> TableDef:
    table = model.table(TableId(database, name))
    assert table is not None, f"{database}.{name} is not in the model"
    return table


def _names(table: TableDef) -> list[str]:
    return [c.name for c in table.columns]


# -- outcomes --------------------------------------------------------------------------------------


def test_create_table_outcome() -> None:
    model = _model()
    outcome = model.apply("CREATE TABLE orders (id INT PRIMARY KEY, note TEXT)", database=DB)
    (event,) = outcome.events
    assert (event.kind, event.database, event.table_id) == (EventKind.CREATE_TABLE, DB, TableId(DB, "orders"))
    assert event.statement == "CREATE TABLE orders (id INT PRIMARY KEY, note TEXT)"
    assert event.change is not None and event.change.type is ChangeType.CREATE
    assert event.change.table == model.table(TableId(DB, "orders"))
    assert outcome.table_changes == (event.change,)
    assert not outcome.ignored and not outcome.warnings and outcome.database == DB
    assert (outcome.statements, outcome.ignored_statements) == (1, 0)


def test_drop_tables_give_one_event_each_with_its_own_text() -> None:
    model = _model("CREATE TABLE a (x INT)", "CREATE TABLE b (x INT)")
    outcome = model.apply("DROP TABLE IF EXISTS a, other.b CASCADE", database=DB)
    assert [(e.kind, e.statement) for e in outcome.events] == [
        (EventKind.DROP_TABLE, "DROP TABLE IF EXISTS `shop`.`a` CASCADE"),
        (EventKind.DROP_TABLE, "DROP TABLE IF EXISTS `other`.`b` CASCADE"),
    ]
    assert [e.change.type for e in outcome.events if e.change] == [ChangeType.DROP, ChangeType.DROP]
    assert [e.database for e in outcome.events] == [DB, "other"]
    assert TableId(DB, "a") not in model and TableId(DB, "b") in model


def test_rename_table_events_carry_the_previous_id() -> None:
    model = _model("CREATE TABLE a (x INT)", "CREATE TABLE b (x INT)")
    outcome = model.apply("RENAME TABLE a TO a2, b TO archive.b2", database=DB)
    assert [(e.statement, e.table_id, e.previous_id) for e in outcome.events] == [
        ("RENAME TABLE a TO a2", TableId(DB, "a2"), TableId(DB, "a")),
        ("RENAME TABLE b TO archive.b2", TableId("archive", "b2"), TableId(DB, "b")),
    ]
    assert outcome.events[1].change is not None and outcome.events[1].change.previous_id == TableId(DB, "b")
    assert _table(model, "b2", "archive").id == TableId("archive", "b2")


def test_alter_table_rename_is_an_alter_of_the_new_name() -> None:
    model = _model("CREATE TABLE a (x INT)")
    (event,) = model.apply("ALTER TABLE a RENAME TO b, ADD COLUMN y INT", database=DB).events
    assert (event.kind, event.table_id, event.renamed_from, event.previous_id) == (
        EventKind.ALTER_TABLE, TableId(DB, "b"), TableId(DB, "a"), None)
    assert _names(_table(model, "b")) == ["x", "y"] and TableId(DB, "a") not in model


def test_truncate_gives_truncated_tables() -> None:
    model = _model("CREATE TABLE a (x INT)")
    outcome = model.apply("TRUNCATE TABLE a", database=DB)
    assert outcome.truncated == (TableId(DB, "a"),)
    assert outcome.table_changes == ()
    unknown = model.apply("TRUNCATE nope", database=DB)
    assert unknown.truncated == () and unknown.warnings


def test_one_query_event_several_statements_tables_as_at_the_end() -> None:
    model = _model()
    outcome = model.apply("CREATE TABLE a (x INT); ALTER TABLE a ADD y INT; CREATE TABLE b (z INT)", database=DB)
    assert [e.kind for e in outcome.events] == [EventKind.CREATE_TABLE, EventKind.ALTER_TABLE, EventKind.CREATE_TABLE]
    created = outcome.events[0].change
    assert created is not None and created.table is not None and _names(created.table) == ["x", "y"]
    assert outcome.statements == 3


def test_database_statements_and_use() -> None:
    model = SchemaModel(server_charset="utf8mb4")
    outcome = model.apply("CREATE DATABASE crm CHARACTER SET latin1; USE crm; CREATE TABLE c (n VARCHAR(5))",
                          database=None)
    assert [(e.kind, e.database, e.value) for e in outcome.events[:2]] == [
        (EventKind.CREATE_DATABASE, "crm", "latin1"), (EventKind.USE_DATABASE, "crm", "latin1")]
    assert outcome.database == "crm"
    assert _table(model, "c", "crm").columns[0].charset == "latin1"
    assert [e.kind for e in outcome.database_changes] == [EventKind.CREATE_DATABASE, EventKind.USE_DATABASE]
    dropped = model.apply("DROP DATABASE crm", database=None)
    assert dropped.events[0].kind is EventKind.DROP_DATABASE and len(model) == 0
    assert model.database_charset("crm") is None


def test_set_statements_are_events_and_set_charsets() -> None:
    model = SchemaModel()
    outcome = model.apply("SET character_set_server=latin2, collation_server=latin2_bin", database=None)
    assert [(e.kind, e.name, e.value, e.database) for e in outcome.events] == [
        (EventKind.SET_VARIABLE, "character_set_server", "latin2", ""),
        (EventKind.SET_VARIABLE, "collation_server", "latin2_bin", "")]
    assert model.server_charset == "latin2" and model.variable("COLLATION_SERVER") == "latin2_bin"
    model.apply("CREATE TABLE t (a CHAR(1))", database=DB)
    assert _table(model, "t").default_charset == "latin2"


@pytest.mark.parametrize("ddl", [
    "INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "DELETE FROM t", "REPLACE INTO t VALUES (1)", "SELECT 1",
    "GRANT SELECT ON *.* TO 'u'@'%'", "REVOKE ALL ON *.* FROM 'u'", "CREATE USER 'u'@'%' IDENTIFIED BY 'x'",
    "DROP USER 'u'", "ALTER USER 'u' IDENTIFIED BY 'y'", "CREATE ROLE r", "FLUSH PRIVILEGES", "FLUSH TABLES",
    "ANALYZE TABLE t", "OPTIMIZE TABLE t", "REPAIR TABLE t", "CHECK TABLE t", "BEGIN", "COMMIT", "ROLLBACK",
    "SAVEPOINT s", "XA START 'x'", "XA COMMIT 'x'", "LOCK TABLES t WRITE", "UNLOCK TABLES",
    "CREATE VIEW v AS SELECT 1", "CREATE OR REPLACE ALGORITHM=MERGE DEFINER=`a`@`%` VIEW v AS SELECT 1",
    "DROP VIEW IF EXISTS v", "ALTER VIEW v AS SELECT 2", "CREATE PROCEDURE p() BEGIN SELECT 1; END",
    "CREATE FUNCTION f() RETURNS INT RETURN 1", "DROP PROCEDURE p", "DROP FUNCTION IF EXISTS f",
    "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1", "DROP TRIGGER tr",
    "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO DELETE FROM t", "ALTER EVENT e DISABLE", "DROP EVENT e",
    "SET NAMES utf8mb4", "SET CHARACTER SET latin1", "SET @x = 1", "SET PASSWORD = 'x'",
    "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET SESSION TRANSACTION READ ONLY",
    "# Dummy event replacing event type 160 that slave cannot handle.", "", "CREATE TEMPORARY TABLE tmp (a INT)",
    "DROP TEMPORARY TABLE IF EXISTS tmp", "CREATE SEQUENCE s1", "INSTALL PLUGIN x SONAME 'x.so'", "(SELECT 1)",
])
def test_statements_without_schema_meaning_are_ignored(ddl: str) -> None:
    model = _model("CREATE TABLE t (a INT)")
    before = _table(model, "t")
    outcome = model.apply(ddl, database=DB)
    assert outcome.ignored and outcome.events == () and not outcome.warnings
    assert _table(model, "t") == before and len(model) == 1


def test_statements_that_change_nothing_recorded_are_not_ignored() -> None:
    model = _model("CREATE TABLE t (a INT)")
    for ddl in ("CREATE INDEX ix ON t (a)", "DROP INDEX ix ON t", "ALTER DATABASE shop CHARACTER SET latin1",
                "CREATE TABLE IF NOT EXISTS t (b INT)"):
        outcome = model.apply(ddl, database=DB)
        assert not outcome.ignored and outcome.events == () and not outcome.warnings, ddl


# -- warnings (Debezium tolerates these silently) -------------------------------------------------


@pytest.mark.parametrize(("ddl", "fragment"), [
    ("ALTER TABLE nope ADD COLUMN x INT", "does not know"),
    ("ALTER TABLE t DROP COLUMN nope", "no such column"),
    ("ALTER TABLE t ALTER COLUMN nope SET DEFAULT 1", "no such column"),
    ("ALTER TABLE t ADD COLUMN c INT AFTER nope", "put first"),
    ("ALTER TABLE t ADD COLUMN a BIGINT", "replaced it"),
    ("CREATE TABLE t (z INT)", "already exists"),
    ("DROP TABLE nope", "does not know"),
    ("RENAME TABLE nope TO nope2", "unknown"),
    ("CREATE TABLE c LIKE nope", "unknown"),
])
def test_inconsistencies_are_warnings(ddl: str, fragment: str) -> None:
    model = _model("CREATE TABLE t (a INT, b INT)")
    outcome = model.apply(ddl, database=DB)
    assert len(outcome.warnings) == 1 and fragment in outcome.warnings[0], outcome.warnings


def test_after_an_unknown_column_goes_first_like_debezium() -> None:
    model = _model("CREATE TABLE t (a INT, b INT)", "ALTER TABLE t ADD COLUMN c INT AFTER nope")
    assert _names(_table(model, "t")) == ["c", "a", "b"]


# -- errors and atomicity --------------------------------------------------------------------------


@pytest.mark.parametrize(("ddl", "fragment"), [
    ("ALTER TABLE t MODIFY nope INT", "MODIFY COLUMN nope"),
    ("ALTER TABLE t CHANGE nope x INT", "CHANGE COLUMN nope"),
    ("ALTER TABLE t RENAME COLUMN nope TO x", "RENAME COLUMN nope"),
    ("CREATE UNIQUE INDEX u ON nope (a)", "CREATE UNIQUE INDEX on shop.nope"),
    ("ALTER TABLE t ADD PRIMARY KEY (nope)", "primary key"),
    ("CREATE TABLE k (a INT, PRIMARY KEY (b))", "primary key"),
])
def test_unknown_objects_where_debezium_fails_are_errors(ddl: str, fragment: str) -> None:
    model = _model("CREATE TABLE t (a INT)")
    with pytest.raises(DdlUnknownObjectError) as info:
        model.apply(ddl, database=DB)
    assert fragment in str(info.value) and info.value.database == DB


def test_parse_errors_name_statement_database_and_position() -> None:
    model = _model()
    with pytest.raises(DdlParseError) as info:
        model.apply("CREATE TABLE t (id INT, price DECIMALS(10,2))", database="shop")
    error = info.value
    assert (error.statement, error.database, error.position) == (
        "CREATE TABLE t (id INT, price DECIMALS(10,2))", "shop", 30)
    assert "expected a data type" in error.reason and "'DECIMALS'" in str(error)


@pytest.mark.parametrize("ddl", [
    "FROBNICATE TABLE t", "CREATE WIDGET w", "ALTER TABLE t ADD", "DROP TABLE", "ALTER TABLE t ADD COLUMN c INT BOGUS",
    "RENAME TABLE a b", "ALTER TABLE t ADDD COLUMN x INT", "CREATE TABLE u (a INT) NOT_AN_OPTION",
    "ALTER TABLE t SOMETHING NEW"])
def test_unsupported_or_broken_statements_are_errors(ddl: str) -> None:
    with pytest.raises(DdlParseError):
        _model("CREATE TABLE t (a INT)").apply(ddl, database=DB)


def test_no_database_selected_is_an_error() -> None:
    with pytest.raises(DdlParseError, match="no database selected"):
        SchemaModel().apply("CREATE TABLE t (a INT)", database=None)


def test_apply_is_atomic() -> None:
    model = _model("CREATE TABLE t (a INT)")
    before = list(model.tables())
    with pytest.raises(DdlUnknownObjectError):
        model.apply("CREATE TABLE u (b INT); ALTER TABLE t ADD c INT; ALTER TABLE t MODIFY nope INT", database=DB)
    assert list(model.tables()) == before
    with pytest.raises(DdlParseError):
        model.apply("CREATE TABLE v (b INT); CREATE TABLE w (", database=DB)
    assert list(model.tables()) == before


# -- Debezium's column and key rules ----------------------------------------------------------------


def test_nullable_unique_column_becomes_the_key_like_debezium() -> None:
    table = _table(_model("CREATE TABLE t (a INT UNIQUE, b INT NOT NULL, UNIQUE KEY (b))"), "t")
    assert table.primary_key == ("a",) and table.columns[0].optional
    assert table.unique_keys == (("a",), ("b",))


def test_table_unique_key_becomes_the_key_only_when_not_null() -> None:
    assert _table(_model("CREATE TABLE t (a INT, b INT NOT NULL, UNIQUE (a), UNIQUE (b))"), "t").primary_key == ("b",)


def test_primary_key_makes_columns_not_null_and_drops_the_null_default() -> None:
    table = _table(_model("CREATE TABLE t (a INT, b INT DEFAULT 3, PRIMARY KEY (a, b))"), "t")
    assert [(c.optional, c.has_default, c.default_expression) for c in table.columns] == [
        (False, False, None), (False, True, "3")]


def test_change_keeps_auto_increment_comment_and_enum_members() -> None:
    model = _model("CREATE TABLE t (id INT NOT NULL AUTO_INCREMENT COMMENT 'k', e ENUM('a','b'), PRIMARY KEY (id))",
                   "ALTER TABLE t CHANGE id id BIGINT NOT NULL, CHANGE e e VARCHAR(5)", include_comments=True)
    id_column, e_column = _table(model, "t").columns
    assert (id_column.type_name, id_column.auto_incremented, id_column.comment) == ("BIGINT", True, "k")
    assert (e_column.type_name, e_column.enum_values, e_column.enum_literals) == ("VARCHAR", ("a", "b"), ("'a'", "'b'"))


def test_modify_replaces_the_column_in_place() -> None:
    model = _model("CREATE TABLE t (a INT, b INT COMMENT 'x', c INT)", "ALTER TABLE t MODIFY B VARCHAR(3) NOT NULL")
    table = _table(model, "t")
    assert _names(table) == ["a", "B", "c"] and table.columns[1].type_name == "VARCHAR"
    assert not table.columns[1].optional


def test_unique_keys_follow_index_and_column_changes() -> None:
    model = _model("CREATE TABLE t (a INT NOT NULL, b INT, c INT, UNIQUE KEY ub (b), UNIQUE KEY ubc (b, c))")
    model.apply("ALTER TABLE t RENAME INDEX ub TO ub2, CHANGE b bb INT", database=DB)
    assert _table(model, "t").unique_keys == (("bb",), ("bb", "c"))
    model.apply("ALTER TABLE t DROP INDEX ub2, DROP COLUMN c", database=DB)
    assert _table(model, "t").unique_keys == (("bb",),)
    model.apply("CREATE UNIQUE INDEX ua ON t (a)", database=DB)
    assert _table(model, "t").unique_keys == (("bb",), ("a",)) and _table(model, "t").primary_key == ("a",)
    model.apply("DROP INDEX ua ON t", database=DB)
    assert _table(model, "t").unique_keys == (("bb",),)
    assert _table(model, "t").primary_key == ("a",), "Debezium keeps a key taken from a dropped unique index"


def test_comments_only_when_asked() -> None:
    ddl = "CREATE TABLE t (a INT COMMENT 'col') COMMENT 'tab'"
    assert _table(_model(ddl), "t").comment is None
    table = _table(_model(ddl, include_comments=True), "t")
    assert (table.comment, table.columns[0].comment) == ("tab", "col")


# -- deliberate differences (see test_ddl_conformance.DIFFERENCES) ---------------------------------


def test_table_collation_gives_the_table_charset() -> None:
    assert _table(_model("CREATE TABLE t (a CHAR(1)) COLLATE=latin1_bin"), "t").default_charset == "latin1"


def test_alter_table_default_charset_applies_to_later_columns() -> None:
    model = _model("CREATE TABLE t (a CHAR(1)) CHARSET latin1", "ALTER TABLE t DEFAULT CHARSET=latin2, ADD b CHAR(1)")
    table = _table(model, "t")
    assert (table.default_charset, table.columns[0].charset, table.columns[1].charset) == ("latin2", "latin1", "latin2")


def test_alter_database_collation_changes_the_database_charset() -> None:
    model = _model("CREATE DATABASE d CHARACTER SET latin1", "ALTER DATABASE d COLLATE utf8mb4_bin")
    assert model.database_charset("d") == "utf8mb4"


def test_create_or_replace_replaces() -> None:
    model = _model("CREATE TABLE t (a INT, b INT)", "CREATE OR REPLACE TABLE t (z INT PRIMARY KEY)")
    assert _names(_table(model, "t")) == ["z"]


def test_mariadb_alter_if_exists_forms() -> None:
    model = _model("CREATE TABLE t (z INT)")
    outcome = model.apply("ALTER TABLE t ADD COLUMN IF NOT EXISTS z BIGINT, ADD COLUMN IF NOT EXISTS y INT, "
                          "DROP COLUMN IF EXISTS nope, MODIFY COLUMN IF EXISTS nope INT, "
                          "CHANGE COLUMN IF EXISTS nope x INT, ADD INDEX IF NOT EXISTS ix (y)", database=DB)
    assert not outcome.warnings
    assert [(c.name, c.type_name) for c in _table(model, "t").columns] == [("z", "INT"), ("y", "INT")]


def test_mariadb_types_defaults_and_options() -> None:
    model = _model("CREATE TABLE m (a INET4, b INET6, c UUID, j LONGTEXT DEFAULT json_array() "
                   "CHECK (json_valid(j)), u CHAR(36) NOT NULL DEFAULT uuid(), g INT AS (1) PERSISTENT, "
                   "s DATETIME DEFAULT current_timestamp() ON UPDATE current_timestamp()) WITH SYSTEM VERSIONING")
    columns = {c.name: c for c in _table(model, "m").columns}
    assert [(columns[n].type_name, columns[n].jdbc_type, columns[n].charset) for n in "abc"] == [
        ("INET4", 1111, None), ("INET6", 1111, None), ("UUID", 1111, None)]
    assert (columns["u"].has_default, columns["u"].default_expression) == (True, None)
    assert (columns["s"].default_expression, columns["s"].auto_incremented) == ("1970-01-01 00:00:00", True)


def test_set_statement_for_applies_the_inner_statement() -> None:
    model = _model()
    (event,) = model.apply("SET STATEMENT max_statement_time=60 FOR CREATE TABLE t (a INT)", database=DB).events
    assert event.statement == "CREATE TABLE t (a INT)" and TableId(DB, "t") in model


def test_set_default_current_timestamp() -> None:
    model = _model("CREATE TABLE t (ts DATETIME)", "ALTER TABLE t ALTER COLUMN ts SET DEFAULT CURRENT_TIMESTAMP")
    assert _table(model, "t").columns[0].default_expression == "1970-01-01 00:00:00"


def test_create_unique_index_event_text_is_the_whole_statement() -> None:
    model = _model("CREATE TABLE t (a INT NOT NULL)")
    (event,) = model.apply("CREATE UNIQUE INDEX ua ON t (a)", database=DB).events
    assert (event.kind, event.statement) == (EventKind.CREATE_INDEX, "CREATE UNIQUE INDEX ua ON t (a)")
    assert event.change is not None and event.change.type is ChangeType.ALTER


def test_empty_statements_are_skipped() -> None:
    outcome = _model().apply("CREATE TABLE a (x INT);;; ;CREATE TABLE b (y INT);", database=DB)
    assert outcome.statements == 2 and len(outcome.events) == 2


def test_temporary_tables_are_ignored() -> None:
    model = _model("CREATE TEMPORARY TABLE tmp (a INT)")
    assert len(model) == 0


def test_create_table_if_not_exists_like_keeps_an_existing_table() -> None:
    model = _model("CREATE TABLE s (a INT)", "CREATE TABLE t (b INT)", "CREATE TABLE IF NOT EXISTS t LIKE s")
    assert _names(_table(model, "t")) == ["b"]


# -- model handling ---------------------------------------------------------------------------------


def test_copy_is_independent_and_reset_forgets() -> None:
    model = _model("CREATE TABLE t (a INT)")
    snapshot = model.copy()
    model.apply("ALTER TABLE t ADD b INT", database=DB)
    assert _names(_table(snapshot, "t")) == ["a"] and _names(_table(model, "t")) == ["a", "b"]
    model.reset()
    assert len(model) == 0 and model.server_charset == "utf8mb4" and len(snapshot) == 1


def test_put_and_remove_tables() -> None:
    model = _model("CREATE TABLE t (a INT)")
    table = _table(model, "t")
    other = SchemaModel()
    other.put_table(table)
    assert other.table(TableId(DB, "t")) == table and other.table_ids() == [TableId(DB, "t")]
    assert other.remove_table(TableId(DB, "t")) == table and len(other) == 0


def test_case_insensitive_names() -> None:
    model = _model("CREATE TABLE Orders (a INT)", "ALTER TABLE orders ADD b INT", case_insensitive_names=True)
    assert _names(_table(model, "ORDERS")) == ["a", "b"]
    with pytest.raises(DdlUnknownObjectError):
        _model("CREATE TABLE Orders (a INT)").apply("CREATE UNIQUE INDEX u ON orders (a)", database=DB)


def test_ansi_quotes_mode() -> None:
    model = _model('CREATE TABLE "quoted t" ("a b" INT DEFAULT 1)', ansi_quotes=True)
    assert _names(_table(model, "quoted t")) == ["a b"]
    by_variable = _model()
    by_variable.set_system_variables({"sql_mode": "STRICT_TRANS_TABLES,ANSI_QUOTES"})
    by_variable.apply('CREATE TABLE "t" ("c" VARCHAR(3) DEFAULT \'x\')', database=DB)
    assert _names(_table(by_variable, "t")) == ["c"]
    by_variable.apply("SET SESSION sql_mode = ''", database=DB)
    by_variable.apply('CREATE TABLE u (c VARCHAR(3) DEFAULT "x")', database=DB)
    assert _table(by_variable, "u").columns[0].default_expression == "x"


def test_system_variables_from_the_server() -> None:
    model = SchemaModel()
    model.set_system_variables({"character_set_server": "latin1"})
    model.apply("CREATE TABLE t (a CHAR(1))", database=DB)
    assert _table(model, "t").columns[0].charset == "latin1" and model.server_charset == "latin1"


def test_errors_survive_pickling() -> None:
    import pickle

    model = _model("CREATE TABLE t (a INT)")
    for ddl in ("CREATE TABLE u (a FOO)", "ALTER TABLE t MODIFY nope INT"):
        with pytest.raises(DdlParseError) as info:
            model.apply(ddl, database=DB)
        copy = pickle.loads(pickle.dumps(info.value))
        assert type(copy) is type(info.value) and str(copy) == str(info.value)
        assert (copy.statement, copy.database, copy.position) == (ddl, DB, info.value.position)
