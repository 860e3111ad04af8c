"""The Grafana dashboard in docs/ asks only for metrics and labels that /metrics exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pipelines.metrics import exported_names

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana-dashboard.json"
METRIC = re.compile(r"\b((?:debezium_metrics|cdc_lakehouse)_\w+)\b")
LABELS = {"context", "plugin", "name", "table", "topic", "position"}


def _exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    found = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    found += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    return found


def test_every_expression_names_exported_metrics_only():
    exprs = _exprs()
    assert len(exprs) >= 10
    for expr in exprs:
        names = METRIC.findall(expr)
        assert names, f"no metric of ours in {expr!r}"
        unknown = set(names) - exported_names()
        assert not unknown, f"{expr!r} names metrics /metrics does not export: {sorted(unknown)}"


def test_every_selector_uses_exported_labels():
    for expr in _exprs():
        for selector in re.findall(r"\{([^}]*)\}", expr):
            labels = {m.split("=")[0].rstrip("!~") for m in re.split(r",\s*", selector) if m}
            assert labels <= LABELS, f"{expr!r} selects on {sorted(labels - LABELS)}"
