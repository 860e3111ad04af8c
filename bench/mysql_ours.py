"""Our MySQL/MariaDB connector as a benchmark reader: one `connector: mariadb` pipeline per run.

A `MySqlTarget` is a `bench.ours.CaptureTarget`: `bench.ours.run_ours` runs it in a child
process (`bench._capture_child`) and `bench.ours.summarize_ours` turns the child's probe into
durations and rates, exactly as for the PostgreSQL connector.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from bench.mysql_workload import TABLE, MariaDbBench
from bench.ours import SOURCE


@dataclass(frozen=True)
class MySqlTarget:
    """One capture pipeline of our connector on a scenario database.

    Attributes:
        db: the scenario database (only its ``bench_rows`` table is captured).
        root: the pipeline's bronze root (its offsets and schema history live there too).
        server_id: ``database.server.id`` of the binlog reader (unique per target).
        snapshot_mode: ``snapshot.mode``.
    """

    db: MariaDbBench
    root: Path
    server_id: int
    snapshot_mode: str = "initial"
    session: ClassVar[str] = "cdc_sources.mysql.session:MySqlCaptureSession"

    @property
    def topic(self) -> str:
        """The bench table's topic: ``<source>.<database>.<table>``."""
        return f"{SOURCE}.{self.db.name}.{TABLE}"

    def pipeline_text(self) -> str:
        options = {"database.include.list": self.db.name, "table.include.list": f"{self.db.name}.{TABLE}",
                   "database.server.id": str(self.server_id), "snapshot.mode": self.snapshot_mode}
        opts = "".join(f'      {k}: "{v}"\n' for k, v in options.items())
        return (f"pipeline: mysql_capture_bench\nlakehouse: {{root: \"{self.root}\"}}\nsources:\n"
                f"  - name: {SOURCE}\n    connector: mariadb\n"
                f"    connection: {{host: 127.0.0.1, port: {self.db.port}, user: root}}\n"
                f"    options:\n{opts}")
