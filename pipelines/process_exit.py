"""How the ``cdc-lakehouse`` command ends its process.

A process that has read a Delta table through delta-rs's pyarrow dataset (deltalake 1.6 with
pyarrow 26: ``status``, ``verify``, ``maintain``, ``demo``, and capture's start-up reads) aborts
now and then *after* Python has finished: native thread pools are torn down during the C++
static destructors and one of them calls ``std::terminate`` ("terminate called without an active
exception", exit 134, about one run in ten here). The command had succeeded; a scheduler sees a
crash. :func:`exit_process` ends the process as Python would up to that point, then leaves
without the native teardown:

1. wait for non-daemon threads (as the interpreter does first at exit);
2. run the ``atexit`` handlers (logging's flush among them);
3. flush standard output and error;
4. ``os._exit(code)``.

Only the console command uses it. Library callers (tests, Databricks wheel tasks, which run the
entry point inside the driver's own Python) call :func:`pipelines.cli.main`, which returns.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn


def exit_process(code: int) -> NoReturn:
    """End the process with ``code`` after Python's own exit steps, skipping native teardown."""
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon and thread.is_alive():
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or a broken pipe: nothing more to say
            stream.flush()
    os._exit(code)
