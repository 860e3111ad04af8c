"""GTID sets of both dialects: parsing, Debezium's text, arithmetic, filters and trackers.

Pure unit tests, plus a conformance test that asks Debezium 3.6.3's ``MySqlGtidSet`` and the
binlog client's ``GtidSet``/``MariadbGtidSet`` (GtidProbe.java) the same questions.

Deliberate differences from Debezium, tested below: malformed text is an error here where
Debezium silently drops or keeps it (a UUID without intervals, reversed intervals, number 0, a
trailing comma), and GTID tags are lower-cased (MySQL prints them lower-case anyway).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from cdc_sources.common.regex_list import RegexList
from cdc_sources.mysql.gtid import (
    GtidError,
    Interval,
    MariaGtid,
    MariaGtidPosition,
    MariaGtidTracker,
    MySqlGtid,
    MySqlGtidSet,
    MySqlGtidTracker,
    new_gtid_tracker,
)
from cdc_sources.spi import Fatal
from tests.cdc_sources.mysql.java_probe import run_probe

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "24bc7850-2c16-11e6-a073-0242ac110002"
U3 = "ffffffff-0000-0000-0000-000000000001"
PROBE = Path(__file__).with_name("GtidProbe.java")


def s(text: str) -> MySqlGtidSet:
    return MySqlGtidSet.parse(text)


def m(text: str) -> MariaGtidPosition:
    return MariaGtidPosition.parse(text)


# -- MySQL: parsing and Debezium's canonical text ---------------------------------------------

CANONICAL = [
    ("", ""),
    (f"{U1}:1-5", f"{U1}:1-5"),
    (f"{U1.upper()}:1-5:7:9-10", f"{U1}:1-5:7-7:9-10"),
    (f"{U1}:7:1-5", f"{U1}:1-5:7-7"),
    (f"{U1}:1-3:4-6", f"{U1}:1-6"),
    (f"{U1}:1-3:1-3", f"{U1}:1-3"),
    (f"{U1}:1-3,\n{U2}:1-3", f"{U2}:1-3,{U1}:1-3"),
    (f"{U1}:1-3,{U1}:5-6", f"{U1}:1-3:5-6"),
    (f"{U1}:1-3,{U1}:2-9", f"{U1}:1-9"),
    (f"{U1}:1-3:tag:5:tag2:1", f"{U1}:1-3:tag:5-5:tag2:1-1"),
    (f"{U1}:1-3:tag:5:1-2", f"{U1}:1-3:tag:1-2:5-5"),
    (f"{U1}:tag:5,{U1}:tag:6", f"{U1}:tag:5-6"),
    (f"{U1}:tag:1,{U1}:2", f"{U1}:2-2:tag:1-1"),
    (f"{U1}:9223372036854775807", f"{U1}:9223372036854775807-9223372036854775807"),
    (f"{U3}:1,{U2}:4,{U1}:2", f"{U2}:4-4,{U1}:2-2,{U3}:1-1"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_mysql_canonical_text(text: str, canonical: str) -> None:
    parsed = s(text)
    assert str(parsed) == canonical
    assert s(canonical) == parsed
    assert hash(s(canonical)) == hash(parsed)


def test_mysql_blank_and_none_are_empty() -> None:
    assert MySqlGtidSet.parse(None).is_empty()
    assert not MySqlGtidSet.parse("  \n")
    assert str(MySqlGtidSet()) == ""


@pytest.mark.parametrize("text", [
    f"{U1}:5-3", f"{U1}:0", f"{U1}:0-3", f"{U1}:tag", f"{U1}:", U1, f"{U1}: 1-x", f"{U1}:1-3,",
    f",{U1}:1-3", f"{U1}:1-3,,{U2}:1", "xyz:1-3", f"{U1}:18446744073709551615", f"{U1}:1-3:tag:",
    f"{U1}:1tag:1", f"{U1}:tag:tag2:1", "0-1-42",
])
def test_mysql_malformed_text_is_an_error(text: str) -> None:
    with pytest.raises(GtidError) as err:
        s(text)
    assert isinstance(err.value, Fatal)
    assert repr(text) in str(err.value)


def test_mysql_single_gtid() -> None:
    g = MySqlGtid.parse(f" {U1.upper()}:42 ")
    assert (g.uuid, g.number, g.tag) == (U1, 42, None)
    assert str(g) == f"{U1}:42"
    tagged = MySqlGtid.parse(f"{U1}:Tag_1:7")
    assert str(tagged) == f"{U1}:tag_1:7"
    for bad in (f"{U1}", f"{U1}:0", f"{U1}:1-2", "nope:1", f"{U1}:a:b:1"):
        with pytest.raises(GtidError):
            MySqlGtid.parse(bad)


def test_mysql_views() -> None:
    g = s(f"{U1}:1-3:tag:5,{U2}:2")
    assert g.uuids == (U2, U1)
    assert [x.key for x in g] == [(U2, ""), (U1, ""), (U1, "tag")]
    src = g.source(U1.upper(), "TAG")
    assert src is not None
    assert src.intervals == (Interval(5, 5),)
    assert g.source(U3) is None
    assert 2 in Interval(1, 3)
    assert "2" not in Interval(1, 3)


# -- MySQL: arithmetic ------------------------------------------------------------------------


def test_mysql_contains() -> None:
    g = s(f"{U1}:1-5:7,{U2}:tag:3")
    assert g.contains(f"{U1}:1") and g.contains(f"{U1}:5") and g.contains(f"{U1}:7")
    assert not g.contains(f"{U1}:6") and not g.contains(f"{U1}:8")
    assert g.contains(f"{U2}:tag:3") and not g.contains(f"{U2}:3")
    assert not g.contains(f"{U3}:1")
    assert g.contains(MySqlGtid(U1, 4))


@pytest.mark.parametrize(("start", "gtid", "after"), [
    ("", f"{U1}:1", f"{U1}:1-1"),
    (f"{U1}:1-3", f"{U1}:4", f"{U1}:1-4"),
    (f"{U1}:1-3", f"{U1}:5", f"{U1}:1-3:5-5"),
    (f"{U1}:1-3:5", f"{U1}:4", f"{U1}:1-5"),
    (f"{U1}:1-3", f"{U1}:2", f"{U1}:1-3"),
    (f"{U1}:2-3", f"{U1}:1", f"{U1}:1-3"),
    (f"{U1}:1-3", f"{U2}:1", f"{U2}:1-1,{U1}:1-3"),
    (f"{U1}:1-3", f"{U1}:tag:1", f"{U1}:1-3:tag:1-1"),
])
def test_mysql_add(start: str, gtid: str, after: str) -> None:
    assert str(s(start).add(gtid)) == after
    tracker = MySqlGtidTracker(start)
    tracker.add(gtid)
    assert tracker.text() == after


@pytest.mark.parametrize(("a", "b", "within"), [
    ("", "", True),
    ("", f"{U1}:1-3", True),
    (f"{U1}:1-3", "", False),
    (f"{U1}:1-3", f"{U1}:1-3", True),
    (f"{U1}:2", f"{U1}:1-3", True),
    (f"{U1}:1-3:5", f"{U1}:1-5", True),
    (f"{U1}:1-4", f"{U1}:1-3:5", False),
    (f"{U1}:1-3", f"{U1}:1-3,{U2}:1", True),
    (f"{U1}:1-3,{U2}:1", f"{U1}:1-3", False),
    (f"{U1}:tag:1", f"{U1}:1-9", False),
    (f"{U1}:tag:1", f"{U1}:1-9:tag:1-2", True),
])
def test_mysql_is_contained_within(a: str, b: str, within: bool) -> None:
    assert s(a).is_contained_within(s(b)) is within


def test_mysql_union_subtract_intersects() -> None:
    a, b = s(f"{U1}:1-5,{U2}:1-2"), s(f"{U1}:4-9:20,{U3}:1")
    assert str(a.union(b)) == f"{U2}:1-2,{U1}:1-9:20-20,{U3}:1-1"
    assert str(a.subtract(b)) == f"{U2}:1-2,{U1}:1-3"
    assert str(b.subtract(a)) == f"{U1}:6-9:20-20,{U3}:1-1"
    assert str(s(f"{U1}:1-10").subtract(s(f"{U1}:3:5-6"))) == f"{U1}:1-2:4-4:7-10"
    assert a.subtract(a).is_empty()
    assert a.intersects(b)
    assert not s(f"{U1}:1-3").intersects(s(f"{U1}:4-5,{U2}:1-3"))


def test_mysql_with_sources_of_replaces_whole_sources() -> None:
    a, b = s(f"{U1}:1-5,{U2}:1-2"), s(f"{U1}:7")
    assert str(a.with_sources_of(b)) == f"{U2}:1-2,{U1}:7-7"
    assert a.with_sources_of(MySqlGtidSet()) == a


def test_mysql_retain_by_source_filter() -> None:
    g = s(f"{U1}:1-5,{U2}:1-2:tag:3,{U3}:9")
    includes = RegexList(f"{U1.upper()},24bc.*").matches
    assert str(g.retain(includes)) == f"{U2}:1-2:tag:3-3,{U1}:1-5"
    assert str(g.retain(lambda uuid: not includes(uuid))) == f"{U3}:9-9"
    assert g.retain(None) is g
    known = s(f"{U2}:100,{U3}:tag:1")
    assert str(g.retain_known_sources(known)) == f"{U2}:1-2"


def test_mysql_tracker_matches_the_value_type() -> None:
    rng = random.Random(7)
    tracker, value = MySqlGtidTracker(f"{U1}:1-3"), s(f"{U1}:1-3")
    for _ in range(500):
        gtid = f"{rng.choice([U1, U2, U3])}:{rng.randint(1, 60)}"
        tracker.add(gtid)
        value = value.add(gtid)
        if rng.random() < 0.1:
            assert tracker.text() == str(value)
    assert tracker.value() == value
    assert tracker.text() == str(value)


# -- MariaDB ----------------------------------------------------------------------------------


def test_maria_gtid() -> None:
    g = MariaGtid.parse(" 0-1-42 ")
    assert (g.domain, g.server, g.sequence, g.source, str(g)) == (0, 1, 42, "0-1", "0-1-42")
    assert MariaGtid.parse("1-1-1") > MariaGtid.parse("0-9-9")
    for bad in ("0-1", "a-b-c", "0-1-2-3", "-1-1-1", "4294967296-1-1", "0-4294967296-1", "0-1-18446744073709551616"):
        with pytest.raises(GtidError):
            MariaGtid.parse(bad)
    assert MariaGtid.parse("4294967295-4294967295-18446744073709551615").sequence == 2**64 - 1


@pytest.mark.parametrize(("text", "canonical"), [
    ("", ""),
    ("0-1-42", "0-1-42"),
    ("1-2-7,0-1-42", "0-1-42,1-2-7"),
    ("0-1-42,0-2-50", "0-2-50"),
    ("0-2-50,0-1-42", "0-1-42"),
    ("0-1-5, 1-1-3\n", "0-1-5,1-1-3"),
])
def test_maria_position_text(text: str, canonical: str) -> None:
    assert str(m(text)) == canonical
    assert m(canonical) == m(text)


@pytest.mark.parametrize("text", ["0-1-42,", ",0-1-42", "0-1-42,,1-1-1", "0-1", "x"])
def test_maria_malformed_text_is_an_error(text: str) -> None:
    with pytest.raises(GtidError):
        m(text)


def test_maria_add_contains_and_order() -> None:
    pos = m("0-1-42,1-2-7")
    assert str(pos.add("0-3-60").add("2-1-1")) == "0-3-60,1-2-7,2-1-1"
    assert pos.contains("0-1-42") and pos.contains("0-9-1") and not pos.contains("0-1-43")
    assert not pos.contains("5-1-1")
    assert pos.for_domain(1) == MariaGtid(1, 2, 7)
    assert pos.domains == (0, 1)
    assert m("0-1-40").is_contained_within(pos)
    assert m("0-1-42,1-2-7").is_contained_within(pos)
    assert not m("0-1-43").is_contained_within(pos)
    assert not m("2-1-1").is_contained_within(pos)
    assert MariaGtidPosition().is_contained_within(pos)
    assert m("0-1-10,1-2-9").behind(m("0-1-20,1-2-5,3-1-1")) == (0,)
    assert str(m("0-1-10,1-2-9").with_domains_of(m("1-3-100,2-1-1"))) == "0-1-10,1-3-100,2-1-1"


def test_maria_retain_by_domain_server() -> None:
    pos = m("0-1-42,1-2-7,2-1-3")
    includes = RegexList("0-.*,2-1").matches
    assert str(pos.retain(includes)) == "0-1-42,2-1-3"
    assert str(pos.retain(lambda source: not includes(source))) == "1-2-7"
    assert pos.retain(None) is pos


def test_maria_tracker() -> None:
    tracker = MariaGtidTracker("0-1-5")
    for gtid in ("0-1-6", "1-1-1", "0-2-7"):
        tracker.add(gtid)
    assert tracker.text() == "0-2-7,1-1-1"
    assert tracker.value() == m("1-1-1,0-2-7")
    assert isinstance(new_gtid_tracker("mariadb", None), MariaGtidTracker)
    assert isinstance(new_gtid_tracker("mysql", ""), MySqlGtidTracker)
    with pytest.raises(GtidError):
        tracker.add(f"{U1}:1")


# -- conformance with Debezium 3.6.3 ----------------------------------------------------------

SETS = [x for x, _ in CANONICAL] + [f"{U1}:1-2:4-9,{U2}:5", f"{U2}:1-100", f"{U1}:tag:1-3:9,{U3}:2-3"]


def _mysql_cases() -> list[tuple[tuple[str, ...], str]]:
    cases: list[tuple[tuple[str, ...], str]] = [(("canon", t), str(s(t))) for t in SETS]
    pairs = [(a, b) for a in SETS[:6] + SETS[-3:] for b in SETS[1:4] + SETS[-3:]]
    for a, b in pairs:
        cases.append((("within", a, b), str(s(a).is_contained_within(s(b))).lower()))
        cases.append((("subtract", a, b), str(s(a).subtract(s(b)))))
        cases.append((("with", a, b), str(s(a).with_sources_of(s(b)))))
    for a in SETS[-3:]:
        for gtid in (f"{U1}:3", f"{U1}:10", f"{U2}:5", f"{U1}:tag:2", f"{U3}:1"):
            cases.append((("contains", a, gtid), str(s(a).contains(gtid)).lower()))
        for patterns in (U1, f"{U1.upper()},{U3}", "24bc.*", "3e11.*-c80aa9429562,ffff.*"):
            rx = RegexList(patterns).matches
            cases.append((("retain_includes", a, patterns), str(s(a).retain(rx))))
            cases.append((("retain_excludes", a, patterns), str(s(a).retain(lambda u, rx=rx: not rx(u)))))
    stream = [f"{U1}:4", f"{U2}:1", f"{U1}:6", f"{U1}:5", f"{U1}:tg:1", f"{U2}:1", f"{U2}:3"]
    tracker = MySqlGtidTracker(f"{U1}:1-3")
    for gtid in stream:
        tracker.add(gtid)
    cases.append((("stream_add", f"{U1}:1-3", *stream), tracker.text()))
    return cases


def _maria_cases() -> list[tuple[tuple[str, ...], str]]:
    cases = [(("maria", t), str(m(t))) for t in ("", "0-1-42", "1-2-7,0-1-42", "0-1-42,0-2-50", "0-2-50,0-1-42")]
    adds = ("0-3-60", "2-1-1", "0-1-61", "1-1-8")
    tracker = MariaGtidTracker("0-1-42,1-2-7")
    for gtid in adds:
        tracker.add(gtid)
    cases.append((("maria_add", "0-1-42,1-2-7", *adds), tracker.text()))
    return cases


def _rejected_cases() -> list[tuple[tuple[str, ...], str]]:
    """Text both reject (Debezium answers ERR, we raise GtidError)."""
    cases: list[tuple[tuple[str, ...], str]] = []
    for op, text, parse in [("canon", t, s) for t in (f"{U1}:1-3,,{U2}:1", "xyz:1-3", f"{U1}:18446744073709551615",
                                                       f",{U1}:1-3")] + [("maria", t, m) for t in ("0-1", "a-b-c")]:
        try:
            ours = str(parse(text))
        except GtidError:
            ours = "ERR"
        cases.append(((op, text), ours))
    return cases


CONFORMANCE = _mysql_cases() + _maria_cases() + _rejected_cases()


@pytest.fixture(scope="module")
def debezium_answers() -> dict[tuple[str, ...], str]:
    answers = run_probe(PROBE, [case for case, _ in CONFORMANCE])
    return {case: answer[0] for (case, _), answer in zip(CONFORMANCE, answers, strict=True)}


@pytest.mark.conformance
@pytest.mark.parametrize(("case", "ours"), CONFORMANCE,
                         ids=[f"{i}-{c[0]}" for i, (c, _) in enumerate(CONFORMANCE)])
def test_same_answer_as_debezium(case: tuple[str, ...], ours: str, debezium_answers: dict[tuple[str, ...], str]
                                 ) -> None:
    assert ours == debezium_answers[case]
