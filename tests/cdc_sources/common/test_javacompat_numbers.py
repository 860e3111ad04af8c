from __future__ import annotations

from cdc_sources.common.javacompat import float32, float32_shortest, java_round, narrow


def test_float32_renders_like_float_to_string() -> None:
    assert float32_shortest(float32(1.1)) == 1.1
    assert float32_shortest(float32(3.14159274)) == 3.1415927
    assert float32_shortest(float32(1.4e-45)) == 1.4e-45  # two digits, the closest
    assert float32_shortest(float32(16777217.0)) == 16777216.0
    assert float32_shortest(-0.0) == 0.0 and float32_shortest(float("inf")) == float("inf")


def test_float32_at_the_edge_of_its_range_rounds_like_a_java_cast() -> None:
    largest = 3.4028234663852886e38  # Float.MAX_VALUE
    assert float32(largest) == largest and float32_shortest(largest) == 3.4028235e38  # "3.4028235E38"
    assert float32(3.4028235e38) == largest  # within half an ulp: (float) gives MAX_VALUE
    assert float32(3.5e38) == float("inf") and float32(-1e39) == float("-inf")


def test_math_round_and_narrowing() -> None:
    assert [java_round(x) for x in (2.5, -2.5, 0.49999999999999994, 1e300, float("nan"))] == [
        3, -2, 0, 2**63 - 1, 0]
    assert java_round(9007199254740993.0) == 9007199254740992
    assert narrow(40000, 16) == -25536 and narrow(2**63, 64) == -(2**63) and narrow(-1, 8) == -1
