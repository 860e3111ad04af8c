"""`SilverProcess` ends its driver's whole process group, also an engine process whose driver died
before it (what a classic-Spark JVM did after a test run: 3 GB left running, orphaned)."""

from __future__ import annotations

import os
import signal
import sys
import time

import psutil
import pytest

from tests.support.silver_processes import SilverProcess, stop_all

# A driver with an engine child that outlives it: the child ignores SIGINT (as pyspark's JVM does)
# and does not watch its parent. Both real processes; the child's pid is printed.
DRIVER = """
import subprocess, sys, time
engine = subprocess.Popen([sys.executable, "-c",
                           "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(600)"])
print("engine", engine.pid, flush=True)
time.sleep(600)
"""


def _engine_pid(silver: SilverProcess) -> int:
    assert silver.wait_output("engine ", 30), silver.tail()
    return int(silver.output().split()[1])


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_stop_ends_an_engine_whose_driver_was_killed_alone(tmp_path):
    silver = SilverProcess(tmp_path).start([sys.executable, "-c", DRIVER])
    engine = _engine_pid(silver)
    assert silver.proc is not None
    os.kill(silver.proc.pid, signal.SIGKILL)  # the Python driver only, as a timeout's kill does
    silver.proc.wait(30)
    assert not _gone(engine, 1), "the stand-in engine died with its driver: this test proves nothing"
    silver.stop()
    assert _gone(engine), f"engine {engine} survived stop()"


def test_leaving_the_with_block_on_a_failed_assertion_ends_the_group(tmp_path):
    with pytest.raises(AssertionError, match="a test that fails midway"), SilverProcess(tmp_path) as silver:
        silver.start([sys.executable, "-c", DRIVER])
        engine = _engine_pid(silver)
        raise AssertionError("a test that fails midway")
    assert _gone(engine) and silver.proc is not None and silver.proc.poll() is not None


def test_stop_all_ends_what_a_test_left_running(tmp_path):
    silver = SilverProcess(tmp_path).start([sys.executable, "-c", DRIVER])
    engine = _engine_pid(silver)
    assert silver.proc is not None
    assert stop_all() == [silver.proc.pid]
    assert _gone(engine) and silver.proc.poll() is not None
