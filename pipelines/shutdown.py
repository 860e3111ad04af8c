"""Graceful stop on SIGTERM and SIGINT for the long-running commands (``capture``, ``run``, ``silver``).

The first signal sets a `threading.Event` that the capture coordinators and the silver loop
watch: capture stops reading, commits the batch in flight only if it ends at a checkpoint
(else abandons it), acknowledges only committed offsets and closes; silver finishes the pass
in flight (``--stream``: each query its micro-batch in flight) and stops its engine. The command
then exits 0. A second signal aborts at once (exit 130, like Ctrl-C
twice); what was committed stays exactly-once, as after a crash.
"""

from __future__ import annotations

import itertools
import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """Within the block, SIGTERM/SIGINT set the yielded event instead of ending the process.

    Installs the handlers only from the main thread (Python delivers signals there); elsewhere
    the event is returned unchanged and the signals keep their usual effect.
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    received = itertools.count()  # next() is one C call: a handler interrupted by the second signal can't miss it

    def handle(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if next(received):
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            log.warning("%s again: aborting without waiting for the batch in flight", name)
            raise KeyboardInterrupt
        stop.set()
        log.warning("%s: stopping after the batch in flight (send it again to abort)", name)

    for sig in SIGNALS:
        signal.signal(sig, handle)
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
