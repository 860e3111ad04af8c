from __future__ import annotations

import pytest

from cdc_sources.common.javacompat import (
    b64,
    bigint_bytes,
    double_to_string,
    hashmap_order,
    jackson_object,
    short_hash,
    string_hash,
)


def test_string_hash_matches_java() -> None:
    assert string_hash("") == 0
    assert string_hash("a") == 97
    assert string_hash("hello") == 99162322
    assert string_hash("😀") == (31 * 0xD83D + 0xDE00)  # surrogate pair, as UTF-16 code units


def test_hashmap_order_matches_java_default_map() -> None:
    keys = [f"k{i}" for i in range(20)]
    order = [keys[i] for i in hashmap_order([string_hash(k) for k in keys])]
    # Printed by java.util.HashMap.keySet() after putting k0..k19 in order.
    assert order == ["k0", "k1", "k2", "k3", "k4", "k5", "k11", "k6", "k10", "k7", "k13", "k8", "k12",
                     "k9", "k15", "k14", "k17", "k16", "k19", "k18"]


def test_hashmap_order_with_initial_capacity() -> None:
    keys = [1, 20, 3, 17]
    assert [keys[i] for i in hashmap_order([short_hash(k) for k in keys], initial_capacity=4)] == [1, 17, 3, 20]


def test_jackson_escaping() -> None:
    assert jackson_object([("a", "1"), ("z", None), ("c", '\x01\x1f\t\n/é"\\')]) == (
        '{"a":"1","z":null,"c":"\\u0001\\u001F\\t\\n/é\\"\\\\"}')


@pytest.mark.parametrize(("value", "text"), [
    (1.0, "1.0"), (0.001, "0.001"), (1e7, "1.0E7"), (123456.789, "123456.789"), (1e-4, "1.0E-4"),
    (-0.0, "-0.0"), (0.0, "0.0"), (-2.5e-7, "-2.5E-7"), (100.0, "100.0"), (float("nan"), "NaN"),
    (float("-inf"), "-Infinity"),
])
def test_double_to_string(value: float, text: str) -> None:
    assert double_to_string(value) == text


@pytest.mark.parametrize(("value", "data"), [
    (0, b"\x00"), (127, b"\x7f"), (128, b"\x00\x80"), (-128, b"\x80"), (-129, b"\xff\x7f"), (-150, b"\xff\x6a"),
])
def test_bigint_bytes_is_minimal_twos_complement(value: int, data: bytes) -> None:
    assert bigint_bytes(value) == data


def test_b64() -> None:
    assert b64(b"") == ""
    assert b64(b"\x00\x96") == "AJY="
