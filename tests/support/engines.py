"""Engine pinning for tests that use the ``spark`` fixture.

By default such a test runs on every engine of ``--engines`` (tests/conftest.py). A test whose
point is not the engine (a capture or operations scenario whose silver step is the same code on
both) pins itself to Sail with ``@SAIL_ONLY``; scripts/test.sh's classic half then leaves it out.
One representative of each such scenario family stays on both engines.
"""

from __future__ import annotations

import pytest

SAIL_ONLY = pytest.mark.parametrize("engine", ["sail"], indirect=True)
"""Run this test on Sail only (no classic Spark proof needed: see the module doc)."""
