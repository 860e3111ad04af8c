"""The console command ends its process without the native teardown that aborts after delta-rs reads."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

EXIT_STEPS = """
import atexit, sys, threading, time
from pipelines.process_exit import exit_process
out = sys.argv[1]
def late():
    time.sleep(0.3)
    open(out, "a").write("thread\\n")
threading.Thread(target=late).start()
atexit.register(lambda: open(out, "a").write("atexit\\n"))
sys.stdout.write("unflushed")
exit_process(7)
"""


def test_exit_process_waits_for_threads_runs_exit_handlers_flushes_and_keeps_the_code(tmp_path):
    out = tmp_path / "order.txt"
    proc = subprocess.run([sys.executable, "-c", EXIT_STEPS, str(out)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 7
    assert proc.stdout == "unflushed"
    assert out.read_text().splitlines() == ["thread", "atexit"]


READ_AND_EXIT = """
import sys
from deltalake import DeltaTable
from pipelines.process_exit import exit_process
DeltaTable(sys.argv[1]).to_pyarrow_table(columns=["a"])
exit_process(0)
"""


def _table(root: Path) -> str:
    for _ in range(10):  # more files, more reader threads: the abort came in 4 of 30 plain runs
        write_deltalake(str(root), pa.table({"a": list(range(500))}), mode="append")
    return str(root)


def test_processes_that_read_delta_tables_exit_zero_every_time(tmp_path):
    """Without exit_process, about one such process in eight ends with SIGABRT (exit 134) after
    Python has finished (deltalake 1.6, pyarrow 26): 32 runs see it in 99 of 100 trials."""
    table = _table(tmp_path / "t")

    def once(_: int) -> int:
        return subprocess.run([sys.executable, "-c", READ_AND_EXIT, table], capture_output=True,
                              timeout=120).returncode

    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(once, range(32)))
    assert codes == [0] * 32


def test_the_console_command_ends_through_exit_process():
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts["cdc-lakehouse"] == "pipelines.cli:run"
    assert scripts["cdc-lakehouse-task"] == "pipelines.cli:task"
