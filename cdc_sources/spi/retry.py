"""How a capture retries after a retriable error: Debezium's ``errors.max.retries``,
``errors.retry.delay.initial.ms`` and ``errors.retry.delay.max.ms``.

The first retry waits the initial delay; each further one waits twice as long as the one
before, never more than the maximum (Debezium's exponential delay strategy). A run that made
progress (committed a batch) before failing counts its retries afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc_sources.spi.errors import ConfigProblem

DEFAULT_INITIAL_DELAY_MS = 300
DEFAULT_MAX_DELAY_MS = 10_000


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long a capture waits before it reopens a source after a retriable error.

    Attributes:
        max_retries: ``errors.max.retries``: -1 retries without limit, 0 never retries.
        initial_delay_ms: ``errors.retry.delay.initial.ms``: the first retry's wait.
        max_delay_ms: ``errors.retry.delay.max.ms``: the longest wait.
    """

    max_retries: int = -1
    initial_delay_ms: int = DEFAULT_INITIAL_DELAY_MS
    max_delay_ms: int = DEFAULT_MAX_DELAY_MS

    def delay_seconds(self, retry: int) -> float:
        """The wait before the ``retry``-th retry (from 1): the initial delay doubled per retry, capped."""
        if retry < 1:
            raise ValueError(f"retries count from 1, not {retry}")
        doublings = min(retry - 1, 62)  # past the cap long before 2**62
        return min(self.initial_delay_ms * (1 << doublings), self.max_delay_ms) / 1000

    def allows(self, retry: int) -> bool:
        """Whether the ``retry``-th retry (from 1) may happen."""
        return self.max_retries < 0 or retry <= self.max_retries

    def bounded(self, retries: int) -> RetryPolicy:
        """This policy with at most ``retries`` retries when it has no limit (a run that must end)."""
        return self if self.max_retries >= 0 else RetryPolicy(retries, self.initial_delay_ms, self.max_delay_ms)

    @classmethod
    def from_options(cls, opt: Callable[[str], Any], path: str) -> tuple[RetryPolicy, list[ConfigProblem]]:
        """The policy of validated options (``opt(name)`` gives an option's typed value; ``path`` is
        the options' YAML path, for problems): the initial delay must be below the maximum."""
        values = [opt(n) for n in ("errors.max.retries", "errors.retry.delay.initial.ms", "errors.retry.delay.max.ms")]
        if any(v is None for v in values):  # an invalid value: the option parser reported it
            return cls(), []
        policy = cls(*(int(v) for v in values))
        if policy.initial_delay_ms >= policy.max_delay_ms:
            return cls(policy.max_retries), [ConfigProblem(
                f"{path}.errors.retry.delay.initial.ms",
                f"must be less than errors.retry.delay.max.ms ({policy.max_delay_ms}); "
                f"it is {policy.initial_delay_ms}")]
        return policy, []
