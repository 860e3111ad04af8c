"""snapshot.mode decisions, one per documented rule (reference §3.2)."""

from __future__ import annotations

import pytest

from cdc_sources.common.snapshot_plan import StoredState, plan_snapshot

FRESH = StoredState(offset_exists=False, snapshot_completed=False)
INTERRUPTED = StoredState(offset_exists=True, snapshot_completed=False)
DONE = StoredState(offset_exists=True, snapshot_completed=True)
LOST = StoredState(offset_exists=True, snapshot_completed=True, offset_available=False)


@pytest.mark.parametrize(
    ("mode", "state", "snapshot", "stream"),
    [
        ("initial", FRESH, True, True),
        ("initial", INTERRUPTED, True, True),
        ("initial", DONE, False, True),
        ("initial_only", FRESH, True, False),
        ("initial_only", DONE, False, False),
        ("always", DONE, True, True),
        ("no_data", FRESH, False, True),
        ("no_data", DONE, False, True),
        ("when_needed", FRESH, True, True),
        ("when_needed", DONE, False, True),
        ("when_needed", LOST, True, True),
    ],
)
def test_plan(mode, state, snapshot, stream):
    plan = plan_snapshot(mode, state)
    assert (plan.snapshot_data, plan.stream) == (snapshot, stream)
    assert plan.reason


def test_configuration_based_follows_its_flags():
    plan = plan_snapshot("configuration_based", FRESH, {"snapshot.data": True, "start.stream": False})
    assert (plan.snapshot_data, plan.stream) == (True, False)


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="custom"):
        plan_snapshot("custom", FRESH)
