"""Acquiring the replication slot, retried as Debezium's ``slot.max.retries`` and
``slot.retry.delay.ms`` say.

Debezium retries opening its replication connection when the attempt fails (most often: the
slot is active for another process, ``ERROR: replication slot "x" is active for PID n``): up to
``slot.max.retries`` retries (default 6), ``slot.retry.delay.ms`` apart (default 10 s, a fixed
delay), logging each one; when every retry failed it stops with an error that is not retried
again. Here the same: a `SlotInUseError` or `PostgresConnectError` while the slot is checked or
streaming is started is retried with a constant-delay `RetryPolicy`; when the retries are used
up, `SlotUnavailableError` (fatal: the capture's ``errors.max.retries`` loop does not retry it)
names the slot, the retries and the last error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from cdc_sources.postgres.errors import PostgresConnectError, PostgresError, SlotInUseError
from cdc_sources.spi import Fatal
from cdc_sources.spi.retry import RetryPolicy

log = logging.getLogger(__name__)

T = TypeVar("T")


class SlotUnavailableError(PostgresError, Fatal):
    """The replication slot could not be acquired within ``slot.max.retries`` retries."""


def slot_retry_policy(max_retries: int, delay_ms: int) -> RetryPolicy:
    """``slot.max.retries`` retries, each ``slot.retry.delay.ms`` after the failed attempt (a
    constant delay, as Debezium's: the initial and the maximum delay are the same)."""
    return RetryPolicy(max_retries=max_retries, initial_delay_ms=delay_ms, max_delay_ms=delay_ms)


def acquire_slot(attempt: Callable[[], T], *, slot: str, policy: RetryPolicy,
                 wait: Callable[[float], None] = time.sleep) -> T:
    """``attempt()``, retried while it fails with `SlotInUseError` or `PostgresConnectError`.

    Raises:
        SlotUnavailableError: the first attempt and every allowed retry failed.
    """
    retry = 0
    while True:
        try:
            return attempt()
        except (SlotInUseError, PostgresConnectError) as exc:
            retry += 1
            if not policy.allows(retry):
                raise SlotUnavailableError(
                    f"could not acquire replication slot {slot!r}: all {policy.max_retries} retries failed "
                    f"(slot.max.retries={policy.max_retries}, slot.retry.delay.ms={policy.initial_delay_ms}); "
                    f"last error: {exc}") from None
            delay = policy.delay_seconds(retry)
            log.warning("replication slot %r: %s; will attempt retry %d of %d after %.1f seconds",
                        slot, exc, retry, policy.max_retries, delay)
            wait(delay)
