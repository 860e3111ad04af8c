"""The Grafana dashboard in docs/ asks only for metrics and labels that /metrics exports, and shows every
metric family /metrics exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pipelines.metrics import OWN_PREFIX, PROCESS_COUNTERS, exported_names

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana-dashboard.json"
METRIC = re.compile(r"\b((?:debezium_metrics|cdc_lakehouse)_\w+)\b")
LABELS = {"context", "plugin", "name", "table", "topic", "position"}


COUNTERS = {OWN_PREFIX + n for n in PROCESS_COUNTERS}
"""Counter families: their one sample is named ``<family>_total`` in the text format."""


def _family(name: str) -> str:
    """The metric family a name in an expression belongs to (a counter's ``_total`` sample: the counter)."""
    base = name.removesuffix("_total")
    return base if base in COUNTERS else name


def _exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    found = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    found += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    return found


def test_every_expression_names_exported_metrics_only():
    exprs = _exprs()
    assert len(exprs) >= 10
    for expr in exprs:
        names = {_family(n) for n in METRIC.findall(expr)}
        assert names, f"no metric of ours in {expr!r}"
        unknown = names - exported_names()
        assert not unknown, f"{expr!r} names metrics /metrics does not export: {sorted(unknown)}"


def test_every_exported_metric_family_has_a_panel():
    shown = {_family(n) for expr in _exprs() for n in METRIC.findall(expr)}
    assert not exported_names() - shown, f"metrics /metrics exports that no panel shows: " \
                                         f"{sorted(exported_names() - shown)}"


def test_every_selector_uses_exported_labels():
    for expr in _exprs():
        for selector in re.findall(r"\{([^}]*)\}", expr):
            labels = {m.split("=")[0].rstrip("!~") for m in re.split(r",\s*", selector) if m}
            assert labels <= LABELS, f"{expr!r} selects on {sorted(labels - LABELS)}"
