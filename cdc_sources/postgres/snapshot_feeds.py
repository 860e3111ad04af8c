"""Several tables' snapshot batches read at once (``snapshot.max.threads`` > 1).

Each open table's copy source (a worker process's output, or a COPY on the snapshot
connection) is pulled by a thread of its own into ONE bounded queue, so the reader renders
whichever table has a batch ready while the others keep copying. Memory stays bounded by the
queue (a few batches). Every wait ends: queue puts and gets poll a stop flag, joins have time
limits. A pump closes its own source when it ends or is stopped; `TableFeeds.close` closes the
source of a pump that does not stop in time (a worker is killed) and then calls ``interrupt``
(which cancels a COPY blocked on the snapshot connection), so neither a worker nor a thread
outlives the reader.

Threads start after the workers' interpreters are spawned or alongside them: `WorkerCopy` runs
``subprocess.Popen`` (fork and exec at once, in C), never a bare ``fork`` of this threaded process.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

_POLL_S = 0.1
_STOP_WAIT_S = 2.0
_END = object()


@dataclass(frozen=True)
class _Failed:
    error: BaseException


@dataclass(frozen=True)
class _Pump:
    thread: threading.Thread
    source: Iterable[Any]


class TableFeeds:
    """Pumps table sources into one queue; `next` returns ``(table index, batch | None)``,
    None meaning the table is done. Not thread-safe: one consumer.

    Args:
        capacity: how many batches the queue holds.
        interrupt: called by `close` if a pump is still busy after its source was closed
            (cancels what runs on the connection the in-process sources share).
    """

    def __init__(self, capacity: int, interrupt: Callable[[], None] | None = None) -> None:
        self._out: queue.Queue[tuple[int, Any]] = queue.Queue(max(1, capacity))
        self._stop = threading.Event()
        self._interrupt = interrupt
        self._pumps: dict[int, _Pump] = {}
        self._ended: list[_Pump] = []

    @property
    def open(self) -> int:
        """Tables started and not finished yet."""
        return len(self._pumps)

    def start(self, index: int, source: Iterable[Any]) -> None:
        """Start pumping ``source`` (closed by its pump when done, if it has ``close``)."""
        thread = threading.Thread(target=self._pump, args=(index, source), name=f"snapshot-feed-{index}",
                                  daemon=True)
        self._pumps[index] = _Pump(thread, source)
        thread.start()

    def next(self) -> tuple[int, Any]:
        """The next ``(index, batch)``; batch None when table ``index`` is done. Raises what a
        source raised."""
        while True:
            try:
                index, item = self._out.get(timeout=_POLL_S)
            except queue.Empty:
                if not any(p.thread.is_alive() for p in self._pumps.values()) and self._out.empty():
                    raise RuntimeError("snapshot feeds stopped without finishing their tables") from None
                continue
            if isinstance(item, _Failed):
                raise item.error
            if item is _END:
                self._ended = [p for p in self._ended if p.thread.is_alive()]
                self._ended.append(self._pumps.pop(index))  # it may still be closing its source
                return index, None
            return index, item

    def close(self) -> None:
        """Stop every pump; close the sources of pumps that do not stop in time, then interrupt."""
        self._stop.set()
        busy = _join([*self._pumps.values(), *self._ended])
        for pump in busy:
            close = getattr(pump.source, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):  # a generator running in its pump refuses: interrupt
                    close()
        busy = _join(busy)
        if busy and self._interrupt is not None:
            with contextlib.suppress(Exception):
                self._interrupt()
            busy = _join(busy)
        for pump in busy:
            log.warning("snapshot feed thread %s did not stop", pump.thread.name)
        self._pumps.clear()
        self._ended.clear()

    def _pump(self, index: int, source: Iterable[Any]) -> None:
        try:
            for batch in source:
                if not self._put((index, batch)):
                    return
            self._put((index, _END))
        except BaseException as exc:
            self._put((index, _Failed(exc)))  # the consumer raises it
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()

    def _put(self, item: tuple[int, Any]) -> bool:
        """Queue ``item`` unless stopped; False if stopped."""
        while not self._stop.is_set():
            try:
                self._out.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False


def _join(pumps: list[_Pump]) -> list[_Pump]:
    """Wait up to `_STOP_WAIT_S` in all for ``pumps``' threads; returns those still running."""
    deadline = time.monotonic() + _STOP_WAIT_S
    for pump in pumps:
        pump.thread.join(max(0.0, deadline - time.monotonic()))
    return [p for p in pumps if p.thread.is_alive()]
