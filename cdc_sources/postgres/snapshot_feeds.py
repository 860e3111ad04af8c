"""Several tables' snapshot batches read at once (``snapshot.max.threads`` > 1).

Each open table's copy source (a worker process's output, or a COPY on the snapshot
connection) is pulled by a thread of its own into ONE bounded queue, so the reader renders
whichever table has a batch ready while the others keep copying. Memory stays bounded by the
queue (a few batches). A pump thread closes its own source when it ends or is stopped; `close`
kills a worker whose pump does not stop in time (a COPY blocked on the server), so no worker
outlives the reader.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_POLL_S = 0.1
_STOP_WAIT_S = 2.0
_END = object()


@dataclass(frozen=True)
class _Failed:
    error: BaseException


class TableFeeds:
    """Pumps table sources into one queue; `items` yields ``(table index, batch | None)``,
    None meaning the table is done. Not thread-safe: one consumer."""

    def __init__(self, capacity: int) -> None:
        self._out: queue.Queue[tuple[int, Any]] = queue.Queue(max(1, capacity))
        self._stop = threading.Event()
        self._pumps: dict[int, tuple[threading.Thread, Any]] = {}

    @property
    def open(self) -> int:
        """Tables started and not finished yet."""
        return len(self._pumps)

    def start(self, index: int, source: Iterable[Any]) -> None:
        """Start pumping ``source`` (closed by its pump when done; ``close()`` if it has one)."""
        thread = threading.Thread(target=self._pump, args=(index, source), name=f"snapshot-feed-{index}",
                                  daemon=True)
        self._pumps[index] = (thread, source)
        thread.start()

    def next(self) -> tuple[int, Any]:
        """The next ``(index, batch)``; batch None when table ``index`` is done. Raises what a
        source raised."""
        while True:
            try:
                index, item = self._out.get(timeout=_POLL_S)
            except queue.Empty:
                if not any(t.is_alive() for t, _ in self._pumps.values()) and self._out.empty():
                    raise RuntimeError("snapshot feeds stopped without finishing their tables") from None
                continue
            if isinstance(item, _Failed):
                raise item.error
            if item is _END:
                thread, _ = self._pumps.pop(index)
                thread.join(_STOP_WAIT_S)
                return index, None
            return index, item

    def close(self) -> None:
        """Stop every pump; kill the sources of pumps that do not stop in time."""
        self._stop.set()
        for thread, source in self._pumps.values():
            thread.join(_STOP_WAIT_S)
            if thread.is_alive() and hasattr(source, "close"):
                with contextlib.suppress(Exception):
                    source.close()
                thread.join(_STOP_WAIT_S)
        self._pumps.clear()

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
