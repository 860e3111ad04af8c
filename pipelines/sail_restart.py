"""Restarting the Sail server process between silver passes, with retries, counted.

A looping run restarts its Sail server when the server's process exceeds its memory budget
(`pipelines.silver_runner`). The new server may fail to start (a loaded machine that misses the
start timeout, a port or memory shortage for a moment): the restart is tried again after
exponential waits (`cdc_sources.spi.retry.RetryPolicy`), by default 0.3 s doubling up to 10 s,
5 times (`engine.server_restart_retries` and `engine.server_restart_delay_ms`: `restart_policy`),
before the run gives up with `EngineError` (exit 1). A stop request during the waits ends them.

`SailServerStats` counts the restarts and the failed starts; the metrics server shows them as
``cdc_lakehouse_sail_server_restarts_total`` and ``cdc_lakehouse_sail_server_start_failures_total``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdc_sources.spi import CdcError, EngineError
from cdc_sources.spi.retry import RetryPolicy
from pipelines.engine_spec import SERVER_RESTART_MAX_DELAY_MS, EngineSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["RESTART_RETRIES", "SailServerStats", "restart_policy", "restart_server"]

log = logging.getLogger(__name__)

RESTART_RETRIES = RetryPolicy(max_retries=5)
"""How a failed restart is retried by default: the capture's default delays, at most five retries (about 5 s
in all)."""


def restart_policy(spec: EngineSpec) -> RetryPolicy:
    """How a failed restart of ``spec``'s Sail server is retried (``engine.server_restart_*``)."""
    return RetryPolicy(max_retries=spec.server_restart_retries, initial_delay_ms=spec.server_restart_delay_ms,
                       max_delay_ms=max(SERVER_RESTART_MAX_DELAY_MS, spec.server_restart_delay_ms))


@dataclass
class SailServerStats:
    """Restarts of a run's Sail server process, read by the metrics server while the run counts them.

    Attributes:
        restarts: restarts that gave a working server.
        start_failures: starts of a new server that failed (each retried, or the run's end).
    """

    restarts: int = 0
    start_failures: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def restarted(self) -> None:
        with self._lock:
            self.restarts += 1

    def start_failed(self) -> None:
        with self._lock:
            self.start_failures += 1

    def counts(self) -> tuple[int, int]:
        """(restarts, start failures), read together."""
        with self._lock:
            return self.restarts, self.start_failures


def restart_server(start: Callable[[], SparkSession], *, stats: SailServerStats, say: Callable[[str], None],
                   stop: threading.Event | None = None, policy: RetryPolicy = RESTART_RETRIES) -> SparkSession:
    """A session on a new server from ``start`` (the old one already stopped), retried per ``policy``.

    Raises:
        EngineError: no start succeeded within the policy's retries, or ``stop`` was set while waiting
            (the last start's error in the message).
    """
    began = time.monotonic()
    attempt = 0
    while True:
        try:
            session = start()
        except CdcError as exc:  # EngineError: a server process that exits or stays silent
            error = str(exc)
        except Exception as exc:  # the Spark Connect client could not open a session on the new server
            error = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
        else:
            stats.restarted()
            say(f"silver: the Sail server process restarted in {time.monotonic() - began:.1f}s")
            return session
        stats.start_failed()
        attempt += 1
        if not policy.allows(attempt):
            raise EngineError(f"the Sail server process did not start again after {attempt} attempt(s); "
                              f"the last one: {error}")
        delay = policy.delay_seconds(attempt)
        say(f"silver: restarting the Sail server: {error}; retry {attempt} in {delay:.1f}s")
        if stop is not None and stop.wait(delay):
            raise EngineError(f"stopped while restarting the Sail server process; its last start: {error}")
        if stop is None:
            time.sleep(delay)
