"""cdc_sources.mysql.ddl against Debezium 3.6.3's own MySQL DDL parser, case by case.

Every case of the corpus (``corpus/*.ddl``) is fed to Debezium's ``MySqlAntlrDdlParser`` (the
MySQL connector's default, "Oracle grammar", parser) by ``MySqlDdlProbe.java`` and to
`SchemaModel`; for each step (one QUERY event) the events (kind, table id, previousId, DDL text)
and their ``tableChanges`` entries in both forms (history JSON and Connect struct) must be equal
key by key, and so must the final tables, database charsets and ``character_set_server``.

The cases in `DIFFERENCES` differ on purpose (reason given); the test checks that they still
differ, so the list cannot go stale, and ``test_schema_model.py`` checks what we do instead.
"""

from __future__ import annotations

from typing import Any

import pytest

from cdc_sources.mysql.ddl import CONNECT_SCHEMA
from tests.cdc_sources.mysql.ddl.corpus import Case, debezium_libs, differences, load_corpus, run_ours, run_probe

pytestmark = pytest.mark.conformance

DIFFERENCES: dict[str, str] = {
    "table_collation_only": (
        "CREATE TABLE ... COLLATE=x without CHARACTER SET: MySQL gives the table the collation's charset; "
        "Debezium ignores the option and takes the database's. We follow MySQL (a wrong charset garbles strings)."),
    "alter_table_charset": (
        "ALTER TABLE ... [DEFAULT] CHARACTER SET x changes the table default (for columns added later) in MySQL; "
        "Debezium ignores it. We follow MySQL."),
    "alter_database_collation": (
        "ALTER DATABASE d COLLATE x changes the database charset to x's in MySQL; Debezium only uses a COLLATE "
        "when the database has no charset recorded yet. We follow MySQL."),
    "empty_statements": (
        "Empty statements between semicolons (';;') are skipped, as the server does; Debezium's grammar "
        "rejects the whole event."),
    "mariadb_types": "MariaDB INET4/INET6/UUID types: Debezium's MySQL grammar rejects them; we read them as OTHER.",
    "mariadb_function_defaults": (
        "MariaDB's SHOW CREATE TABLE writes expression defaults without parentheses (DEFAULT uuid()); Debezium's "
        "MySQL grammar rejects them; we read them as expression defaults (as Debezium's MariaDB parser does)."),
    "mariadb_persistent": "MariaDB's PERSISTENT generated columns: rejected by Debezium's MySQL grammar.",
    "mariadb_create_or_replace": "MariaDB's CREATE OR REPLACE TABLE: rejected by Debezium's MySQL grammar.",
    "mariadb_alter_if_exists": "MariaDB's IF [NOT] EXISTS on ALTER TABLE actions: rejected by Debezium's grammar.",
    "mariadb_set_statement": "MariaDB's SET STATEMENT ... FOR <statement>: rejected by Debezium's grammar.",
    "mariadb_system_versioning": "MariaDB's WITH SYSTEM VERSIONING table option: rejected by Debezium's grammar.",
    "mariadb_versioning": (
        "MariaDB's system-versioning and application-time clauses (ROW START/END columns, which are NOT NULL, "
        "PERIOD FOR, WITHOUT OVERLAPS): rejected by Debezium's MySQL grammar."),
    "mariadb_column_options": (
        "MariaDB's COMPRESSED columns, IGNORED indexes and PAGE_CHECKSUM/TRANSACTIONAL options: rejected by "
        "Debezium's MySQL grammar."),
    "set_default_current_timestamp": (
        "ALTER COLUMN ... SET DEFAULT CURRENT_TIMESTAMP (accepted by MariaDB): rejected by Debezium's grammar; "
        "we record it like a column definition's DEFAULT CURRENT_TIMESTAMP."),
}
"""Cases where we differ from Debezium on purpose, with the reason."""

CASES = load_corpus()


@pytest.fixture(scope="module")
def debezium() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    return run_probe(debezium_libs(), CASES)


def _with_create_prefix(result: dict[str, Any]) -> dict[str, Any]:
    """Deliberate difference: Debezium's event text for CREATE UNIQUE INDEX lacks the leading
    ``CREATE`` (it is cut from the grammar's createIndex rule), which makes that history record
    unreplayable; ours is the whole statement. The prefix is put back on Debezium's text."""
    for step in result["steps"]:
        for event in step["events"]:
            if event["event"] == "TableIndexCreatedEvent" and not event["statement"].upper().startswith("CREATE"):
                event["statement"] = "CREATE " + event["statement"]
    return result


def test_corpus_is_large_enough() -> None:
    steps = sum(len(c.steps) for c in CASES)
    assert steps >= 150, steps
    assert len(CASES) >= 30


def test_every_listed_difference_is_a_case() -> None:
    names = {c.name for c in CASES}
    assert set(DIFFERENCES) <= names, set(DIFFERENCES) - names


def test_connect_schema_is_debeziums(debezium: tuple[dict[str, Any], dict[str, dict[str, Any]]]) -> None:
    assert debezium[0] == CONNECT_SCHEMA


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_same_as_debezium(case: Case, debezium: tuple[dict[str, Any], dict[str, dict[str, Any]]]) -> None:
    found = differences(_with_create_prefix(debezium[1][case.name]), run_ours(case))
    if case.name in DIFFERENCES:
        assert found, f"{case.name} is listed as a deliberate difference but now matches Debezium: update the list"
    else:
        assert not found, f"{case.file}:{case.name} differs from Debezium:\n" + "\n".join(found[:40])
