"""The pgoutput message types themselves, apart from the decoder that builds them."""

from __future__ import annotations

import copy
import pickle

from cdc_sources.postgres import pgoutput as pg
from cdc_sources.postgres.pgoutput import UNCHANGED_TOAST


def test_unchanged_toast_sentinel() -> None:
    assert repr(UNCHANGED_TOAST) == "UNCHANGED_TOAST"
    assert UNCHANGED_TOAST is not None and UNCHANGED_TOAST != ""
    assert pg.UnchangedToast() is UNCHANGED_TOAST
    assert copy.copy(UNCHANGED_TOAST) is UNCHANGED_TOAST
    assert copy.deepcopy(UNCHANGED_TOAST) is UNCHANGED_TOAST
    assert pickle.loads(pickle.dumps(UNCHANGED_TOAST)) is UNCHANGED_TOAST
    assert pickle.loads(pickle.dumps(pg.Update(1, None, None, (UNCHANGED_TOAST,)))).new[0] is UNCHANGED_TOAST
