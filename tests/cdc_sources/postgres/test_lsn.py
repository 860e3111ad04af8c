"""`Lsn`: parsing and printing PostgreSQL's ``X/Y`` form, int conversion, ordering."""

from __future__ import annotations

import pickle

import pytest

from cdc_sources.postgres.lsn import Lsn, LsnFormatError
from cdc_sources.spi import CdcError


@pytest.mark.parametrize(("text", "value"), [
    ("16/B374D848", 0x16_B374D848),
    ("0/0", 0),
    ("0/16B3748", 0x16B3748),
    ("0/016B3748", 0x16B3748),  # PostgreSQL 18 zero-pads the low half
    ("FFFFFFFF/FFFFFFFF", 2**64 - 1),
    ("16/b374d848", 0x16_B374D848),
    ("1/0", 2**32),
])
def test_parse(text: str, value: int) -> None:
    assert int(Lsn.parse(text)) == value
    assert Lsn.parse(text).value == value


@pytest.mark.parametrize(("value", "text"), [
    (0x16_B374D848, "16/B374D848"),
    (0, "0/0"),
    (0x16B3748, "0/16B3748"),
    (2**32, "1/0"),
    (2**64 - 1, "FFFFFFFF/FFFFFFFF"),
])
def test_str_is_postgres_text(value: int, text: str) -> None:
    assert str(Lsn(value)) == text
    assert Lsn.parse(str(Lsn(value))) == Lsn(value)


@pytest.mark.parametrize("text", [
    "", "16", "16/", "/B374D848", "16/B374D848/1", "16-B374D848", "G/0", "0/G", "123456789/0",
    "0/123456789", " 16/B374D848", "16/B374D848 ", "0x16/0", "+1/0", "-1/0", "1_0/0", "1 /0",
    "\u0661/0",  # ARABIC-INDIC DIGIT ONE: int() would accept it
])
def test_parse_rejects_bad_text(text: str) -> None:
    with pytest.raises(LsnFormatError) as err:
        Lsn.parse(text)
    assert err.value.text == text
    assert repr(text) in str(err.value)
    assert "16/B374D848" in str(err.value)  # shows the expected form


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(LsnFormatError) as err:
        Lsn.parse(123)  # type: ignore[arg-type]
    assert err.value.text == "123"


@pytest.mark.parametrize("value", [-1, 2**64, True, 1.0, "0/0"])
def test_constructor_rejects_non_lsn_values(value: object) -> None:
    with pytest.raises(LsnFormatError, match="an int from 0 to 2"):
        Lsn(value)  # type: ignore[arg-type]


def test_error_is_a_value_error_and_pickles() -> None:
    with pytest.raises(ValueError) as err:
        Lsn.parse("nope")
    exc = err.value
    assert isinstance(exc, CdcError)
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is LsnFormatError and clone.text == "nope" and str(clone) == str(exc)


def test_ordering_follows_the_numeric_value() -> None:
    texts = ["1/0", "0/FFFFFFFF", "0/10", "0/9", "16/B374D848", "0/0"]
    ordered = sorted(Lsn.parse(t) for t in texts)
    assert [str(x) for x in ordered] == ["0/0", "0/9", "0/10", "0/FFFFFFFF", "1/0", "16/B374D848"]
    assert Lsn(5) < Lsn(6) <= Lsn(6) and Lsn(7) > Lsn(6) >= Lsn(6)
    assert max(Lsn(1), Lsn(3), Lsn(2)) == Lsn(3)


def test_value_semantics() -> None:
    assert Lsn(10) == Lsn.parse("0/A")
    assert hash(Lsn(10)) == hash(Lsn.parse("0/A"))
    assert Lsn(10) != 10  # type: ignore[comparison-overlap]  # not interchangeable with an int
    assert len({Lsn(1), Lsn(1), Lsn(2)}) == 2
    assert pickle.loads(pickle.dumps(Lsn(42))) == Lsn(42)
    with pytest.raises(AttributeError):
        Lsn(1).value = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        _ = Lsn(1) < 2  # type: ignore[operator]
