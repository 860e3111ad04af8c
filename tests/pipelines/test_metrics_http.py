"""The HTTP side of the metrics is imported only when ``--metrics-port`` asks for it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_capture_without_a_metrics_port_imports_neither_prometheus_client_nor_an_http_server():
    script = ("import json, sys\n"
              "import pipelines.capture, pipelines.commands, pipelines.cli, pipelines.metrics\n"
              "print(json.dumps(sorted(m for m in ('prometheus_client', 'http.server', 'pipelines.metrics_http') "
              "if m in sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
