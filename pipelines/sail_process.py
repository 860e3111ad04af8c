"""The Sail server in a child process of its own, so that a long run can restart it between passes.

Sail 0.7 keeps live memory for every request it executes (about 37 KB for a trivial query,
about 94 KB for a read of a Delta table at a new version: `bench/sail_query_memory_bench.py`),
with new sessions, with its caches off, and across server restarts in the same process; measured
on `bench/soak_bench.py`, the server grows by a few MB a minute at 1,000 changes/s. A process
that exits gives all of it back.
So a looping run (``cdc-lakehouse run``, ``silver`` without ``--once``) starts the server as a
child process (``python -m pipelines.sail_process``) and, between two passes, never in one,
restarts it when its resident memory exceeds ``engine.server_memory_mb``
(`pipelines.silver_runner`). Silver keeps its progress in Delta tables and every pass starts
from them, so a restart loses nothing and applies nothing twice.

The child prints one line, ``sail-server <host> <port>``, once it listens (on the port of
``engine.server_port``, by default any free one), or one line saying why it cannot, and exits
1; then serves until its
standard input closes: the parent closes it to stop the server, and a parent that dies closes
it too, so the server never outlives the run. Ctrl-C in a terminal reaches the whole process
group, and a service manager may send SIGTERM to the whole group; the child blocks both and
lets the parent end the pass and stop it (SIGKILL still ends it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import psutil

from cdc_sources.spi import EngineError, MissingDependencyError
from pipelines.sail_caches import SAIL_CACHE_ENV
from pipelines.sail_memory import SAIL_ALLOCATOR_ENV, configure_sail_allocator

__all__ = ["READY_PREFIX", "SailChild", "start_sail_child"]

log = logging.getLogger(__name__)

READY_PREFIX = "sail-server"
"""The first word of the line the child prints once its server listens."""

_START_TIMEOUT_S = 120.0  # a loaded machine: pysail's import alone took seconds under load
_STOP_TIMEOUT_S = 30.0
_EXIT_WAIT_S = 10.0


@dataclass
class SailChild:
    """A Sail Spark Connect server running in a child process (see module doc).

    Attributes:
        process: the child process.
        host, port: where its server listens.
        started_seconds: how long the start took (process start to listening).
    """

    process: subprocess.Popen[str]
    host: str
    port: int
    started_seconds: float

    @property
    def url(self) -> str:
        """The Spark Connect URL of the server."""
        return f"sc://{self.host}:{self.port}"

    def rss_bytes(self) -> int | None:
        """Resident memory of the child (and any process it started), or None once it has exited."""
        try:
            proc = psutil.Process(self.process.pid)
            total = proc.memory_info().rss
            for sub in proc.children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess):
                    total += sub.memory_info().rss
        except psutil.NoSuchProcess:
            return None
        return int(total)

    def stop(self) -> None:
        """Stop the server: close its standard input, wait, and terminate/kill it if it lingers."""
        proc = self.process
        if proc.stdin is not None and not proc.stdin.closed:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("the Sail server (pid %s) did not stop in %.0f s; terminating it", proc.pid, _STOP_TIMEOUT_S)
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def kill(self) -> None:
        """End the server at once (SIGKILL: it blocks SIGTERM), for a run that aborts."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def start_sail_child(port: int = 0) -> SailChild:
    """Start a Sail server in a child process (this interpreter, ``-m pipelines.sail_process``),
    listening on loopback ``port`` (0: any free port).

    The child gets this process's environment plus the allocator settings of
    `pipelines.sail_memory` and the cache limits of `pipelines.sail_caches` (a value the user set
    wins); its log lines go to this process's stderr.

    Raises:
        MissingDependencyError: pysail is not installed.
        EngineError: the child exited (what it said, e.g. the port is taken) or did not listen within the
            start timeout: a run-time failure, exit 1.
    """
    try:
        import pysail  # noqa: F401  # only to say which extra is missing, in this process
    except ImportError as exc:
        raise MissingDependencyError("pysail", "sail") from exc
    env = {**SAIL_ALLOCATOR_ENV, **SAIL_CACHE_ENV, **os.environ}
    started = time.monotonic()
    proc = subprocess.Popen(  # this interpreter and a module of this package
        [sys.executable, "-m", "pipelines.sail_process", str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env=env)
    assert proc.stdout is not None
    line = _first_line(proc, _START_TIMEOUT_S)
    parts = line.split()
    if len(parts) != 3 or parts[0] != READY_PREFIX or not parts[2].isdigit():
        try:
            code = proc.wait(_EXIT_WAIT_S if line else 0)  # one that said why exits by itself
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        said = f"; it said {line.strip()!r}" if line.strip() else ""
        raise EngineError(f"the Sail server process did not start (exit code {code}{said})")
    child = SailChild(proc, parts[1], int(parts[2]), round(time.monotonic() - started, 3))
    log.info("started the Sail Spark Connect server in process %s on %s:%s (%.1f s)", proc.pid, child.host,
             child.port, child.started_seconds)
    return child


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The child's first stdout line, or "" if it exits or stays silent for ``timeout`` seconds."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            return ""
    return proc.stdout.readline()


def _serve(port: int) -> int:
    """The child: start the server on ``port``, say where it listens (or why it cannot: exit 1),
    serve until stdin closes."""
    # The parent stops us after its pass: a Ctrl-C in the terminal or a SIGTERM to the whole group
    # (systemd, a container runtime) must not cut a pass short. Sail's server installs its own
    # handlers for both (it stops serving), which ignoring them does not prevent: block them in
    # every thread instead (the server's threads inherit this thread's mask).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    configure_sail_allocator()
    from pysail.spark import SparkConnectServer

    server = SparkConnectServer("127.0.0.1", port)
    try:
        server.start(background=True)
    except Exception as exc:  # the port is taken, no socket: the parent shows this line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"cannot listen on 127.0.0.1:{port}: {first}", flush=True)
        return 1
    address = server.listening_address
    if address is None:
        print("the server started but does not listen", flush=True)
        return 1
    host, port = address
    print(f"{READY_PREFIX} {host} {port}", flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing more on the pipe the parent stops reading
    try:
        while sys.stdin.buffer.read(4096):  # the parent writes nothing: this returns at EOF
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(_serve(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
