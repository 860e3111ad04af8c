"""cdc_sources.oracle.statements against Debezium 3.6.3's SqlUtils, text for text."""

from __future__ import annotations

import pytest

from cdc_sources.oracle import statements as st
from tests.cdc_sources.oracle.java_probe import run_probe

D1, D2 = ["LOG_ARCHIVE_DEST_1"], ["LOG_ARCHIVE_DEST_1", "LOG_ARCHIVE_DEST_2"]
CASES: list[tuple[tuple[str, ...], str]] = [
    (("redoLogStatusQuery",), st.REDO_LOG_STATUS),
    (("currentRedoNameQuery",), st.CURRENT_REDO_NAME),
    (("currentRedoLogSequenceQuery",), st.CURRENT_REDO_SEQUENCE),
    (("databaseSupplementalLoggingAllCheckQuery",), st.SUPPLEMENTAL_LOGGING_ALL),
    (("databaseSupplementalLoggingMinCheckQuery",), st.SUPPLEMENTAL_LOGGING_MIN),
    (("tableSupplementalLoggingCheckQuery",), st.TABLE_SUPPLEMENTAL_LOGGING),
    (("switchHistoryQuery", ",".join(D1)), st.switch_history(D1)),
    (("switchHistoryQuery", ",".join(D2)), st.switch_history(D2)),
    (("oldestFirstChangeQuery", "0", ",".join(D1)), st.oldest_first_change(0, D1)),
    (("oldestFirstChangeQuery", "2", ",".join(D2)), st.oldest_first_change(2, D2)),
    (("allRedoThreadArchiveLogs", "2", ",".join(D1)), st.redo_thread_archive_logs(2, D1)),
    (("allMinableLogsQuery", "1000", "0", "false", ",".join(D1)), st.all_minable_logs(1000, 0, False, D1)),
    (("allMinableLogsQuery", "1000", "4", "true", ",".join(D2)), st.all_minable_logs(1000, 4, True, D2)),
    (("allMinableLogsQuery", "18446744073709551615", "24", "false", ",".join(D2)),
     st.all_minable_logs(18446744073709551615, 24, False, D2)),
    (("deletedArchiveLogsQuery", "77", ",".join(D2)), st.deleted_archive_logs(77, D2)),
    (("getScnByTimeDeltaQuery", "1000", "1"), st.scn_minus_minutes(1000, 60)),
]


def test_statements_equal_debeziums() -> None:
    answers = run_probe("SqlUtilsProbe.java", [c for c, _ in CASES])
    for (case, ours), (theirs,) in zip(CASES, answers, strict=True):
        assert ours == theirs, case


def test_archive_queries_need_a_destination() -> None:
    with pytest.raises(ValueError, match="at least one archive log destination"):
        st.all_minable_logs(1, 0, False, [])
