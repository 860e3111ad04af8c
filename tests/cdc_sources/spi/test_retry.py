"""`RetryPolicy`: Debezium's exponential retry delays and retry limits."""

from __future__ import annotations

import pytest

from cdc_sources.spi.retry import RetryPolicy


def test_the_initial_delay_doubles_at_every_retry_up_to_the_maximum():
    policy = RetryPolicy(-1, 300, 10_000)
    assert [policy.delay_seconds(n) for n in range(1, 9)] == [0.3, 0.6, 1.2, 2.4, 4.8, 9.6, 10.0, 10.0]
    assert policy.delay_seconds(10_000) == 10.0


def test_limits():
    assert RetryPolicy(-1).allows(1_000_000)
    assert not RetryPolicy(0).allows(1)
    assert RetryPolicy(2).allows(2) and not RetryPolicy(2).allows(3)
    assert RetryPolicy(-1, 100, 400).bounded(3) == RetryPolicy(3, 100, 400)
    assert RetryPolicy(5).bounded(3) == RetryPolicy(5)  # a configured limit is kept
    with pytest.raises(ValueError, match="from 1"):
        RetryPolicy().delay_seconds(0)


def test_from_options_reads_the_three_options_and_refuses_an_initial_delay_not_below_the_maximum():
    options = {"errors.max.retries": 4, "errors.retry.delay.initial.ms": 100, "errors.retry.delay.max.ms": 400}
    assert RetryPolicy.from_options(options.get, "s.options") == (RetryPolicy(4, 100, 400), [])
    options["errors.retry.delay.initial.ms"] = 400
    _, problems = RetryPolicy.from_options(options.get, "s.options")
    assert [(p.path, p.message) for p in problems] == [
        ("s.options.errors.retry.delay.initial.ms", "must be less than errors.retry.delay.max.ms (400); it is 400")]
