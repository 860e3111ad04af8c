"""The statements the LogMiner session runs besides the mining query, as Debezium 3.6.3 runs them.

Redo and archive log selection, supplemental-logging checks and SCN arithmetic (Debezium's
``SqlUtils``; each text compared with it by ``tests/cdc_sources/oracle/test_statements.py``),
and the session settings the SQL_REDO literal forms depend on (`NLS_SESSION`, `UTC_SESSION`:
read from Debezium's streaming source, not comparable through a class). Archive log queries
take the archive destination names (``archive.destination.name``, else those the database
reports), at least one.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CURRENT_REDO_NAME",
    "CURRENT_REDO_SEQUENCE",
    "NLS_SESSION",
    "REDO_LOG_STATUS",
    "SUPPLEMENTAL_LOGGING_ALL",
    "SUPPLEMENTAL_LOGGING_MIN",
    "TABLE_SUPPLEMENTAL_LOGGING",
    "UTC_SESSION",
    "all_minable_logs",
    "deleted_archive_logs",
    "oldest_first_change",
    "redo_thread_archive_logs",
    "scn_minus_minutes",
    "switch_history",
]

NLS_SESSION = ("ALTER SESSION SET "
               "  NLS_DATE_FORMAT = 'YYYY-MM-DD HH24:MI:SS'"
               "  NLS_TIMESTAMP_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF9'"
               "  NLS_TIMESTAMP_TZ_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF9 TZH:TZM'"
               "  NLS_NUMERIC_CHARACTERS = '.,'")
"""The formats LogMiner renders SQL_REDO literals with (what `cdc_sources.oracle.converters` reads)."""

UTC_SESSION = "ALTER SESSION SET TIME_ZONE = '00:00'"
"""``TIMESTAMP WITH LOCAL TIME ZONE`` values in UTC."""

REDO_LOG_STATUS = "SELECT F.MEMBER, R.STATUS FROM V$LOGFILE F, V$LOG R WHERE F.GROUP# = R.GROUP# ORDER BY 2"
CURRENT_REDO_NAME = "SELECT F.MEMBER FROM V$LOG LOG, V$LOGFILE F  WHERE LOG.GROUP#=F.GROUP# AND LOG.STATUS='CURRENT'"
CURRENT_REDO_SEQUENCE = "SELECT SEQUENCE# FROM V$LOG WHERE STATUS = 'CURRENT' ORDER BY SEQUENCE#"
SUPPLEMENTAL_LOGGING_ALL = "SELECT 'KEY', SUPPLEMENTAL_LOG_DATA_ALL FROM V$DATABASE"
SUPPLEMENTAL_LOGGING_MIN = "SELECT 'KEY', SUPPLEMENTAL_LOG_DATA_MIN FROM V$DATABASE"
TABLE_SUPPLEMENTAL_LOGGING = "SELECT 'KEY', LOG_GROUP_TYPE FROM ALL_LOG_GROUPS WHERE OWNER=? AND TABLE_NAME=?"
"""Bind parameters: the table's owner and name."""

_SAME_INCARNATION = "A.RESETLOGS_CHANGE# = D.RESETLOGS_CHANGE# AND A.RESETLOGS_TIME = D.RESETLOGS_TIME"
_ARCHIVES = "V$ARCHIVED_LOG A, V$DATABASE D, V$ARCHIVE_DEST_STATUS DS"


def _destinations(names: Sequence[str]) -> str:
    if not names:
        raise ValueError("at least one archive log destination name is needed")
    quoted = ",".join(f"'{n}'" for n in names)
    return f"DS.DEST_NAME = {quoted}" if len(names) == 1 else f"DS.DEST_NAME IN ({quoted})"


def _since(hours: int) -> str:
    return f"A.FIRST_TIME >= SYSDATE - ({hours}/24)" if hours > 0 else ""


def switch_history(destinations: Sequence[str]) -> str:
    """Today's log switches (the most of any destination)."""
    where = f"WHERE A.FIRST_TIME > TRUNC(SYSDATE) AND A.DEST_ID = DS.DEST_ID AND {_destinations(destinations)}"
    if len(destinations) == 1:
        return f"SELECT 'TOTAL', COUNT(1) FROM V$ARCHIVED_LOG A, V$ARCHIVE_DEST_STATUS DS {where}"
    return (f"SELECT 'TOTAL', MAX(COUNT(1)) FROM V$ARCHIVED_LOG A, V$ARCHIVE_DEST_STATUS DS {where} "
            "GROUP BY DS.DEST_NAME")


def oldest_first_change(retention_hours: int, destinations: Sequence[str]) -> str:
    """The oldest SCN still minable (online logs and available archive logs)."""
    since = _since(retention_hours)
    return ("SELECT MIN(FIRST_CHANGE#) FROM (SELECT MIN(FIRST_CHANGE#) AS FIRST_CHANGE# FROM V$LOG "
            f"UNION SELECT MIN(A.FIRST_CHANGE#) AS FIRST_CHANGE# FROM {_ARCHIVES} "
            f"WHERE A.DEST_ID = DS.DEST_ID AND {_destinations(destinations)} AND A.STATUS='A' AND {_SAME_INCARNATION}"
            + (f" AND {since}" if since else "") + ")")


def redo_thread_archive_logs(thread: int, destinations: Sequence[str]) -> str:
    """One redo thread's available archive logs, newest first."""
    return ("SELECT A.NAME, A.SEQUENCE#, A.FIRST_CHANGE#, A.NEXT_CHANGE#, A.BLOCKS*BLOCK_SIZE, "
            f"A.DICTIONARY_BEGIN, A.DICTIONARY_END, DS.DEST_NAME FROM {_ARCHIVES} "
            f"WHERE A.DEST_ID = DS.DEST_ID AND {_destinations(destinations)} AND A.STATUS='A' AND A.THREAD#={thread} "
            f"AND {_SAME_INCARNATION} ORDER BY A.SEQUENCE# DESC")


def all_minable_logs(scn: int, retention_hours: int, archive_only: bool, destinations: Sequence[str]) -> str:
    """The logs to add to a mining session starting at ``scn``: the current online logs (unless
    ``log.mining.archive.log.only.mode``) and the available archive logs ending after it."""
    online = ("SELECT MIN(F.MEMBER) AS FILE_NAME, L.FIRST_CHANGE# FIRST_CHANGE, L.NEXT_CHANGE# NEXT_CHANGE, "
              "L.ARCHIVED, L.STATUS, 'ONLINE' AS TYPE, L.SEQUENCE# AS SEQ, 'NO' AS DICT_START, 'NO' AS DICT_END, "
              "L.THREAD# AS THREAD, L.BYTES AS BYTES, NULL AS DEST_NAME FROM V$LOGFILE F, V$DATABASE D, V$LOG L "
              "WHERE L.STATUS = 'CURRENT' AND F.GROUP# = L.GROUP# "
              "GROUP BY F.GROUP#, L.FIRST_CHANGE#, L.NEXT_CHANGE#, L.STATUS, L.ARCHIVED, L.SEQUENCE#, L.THREAD#, "
              "L.BYTES UNION ")
    since = _since(retention_hours)
    archived = ("SELECT A.NAME AS FILE_NAME, A.FIRST_CHANGE# FIRST_CHANGE, A.NEXT_CHANGE# NEXT_CHANGE, 'YES', "
                "NULL, 'ARCHIVED', A.SEQUENCE# AS SEQ, A.DICTIONARY_BEGIN, A.DICTIONARY_END, A.THREAD# AS THREAD, "
                f"A.BLOCKS*A.BLOCK_SIZE, DS.DEST_NAME FROM {_ARCHIVES} "
                f"WHERE A.NAME IS NOT NULL AND A.ARCHIVED = 'YES' AND A.STATUS = 'A' AND A.NEXT_CHANGE# > {scn} "
                f"AND A.DEST_ID = DS.DEST_ID AND {_destinations(destinations)} AND {_SAME_INCARNATION} "
                + (f"AND {since} " if since else "") + "ORDER BY 7")
    return archived if archive_only else online + archived


def deleted_archive_logs(scn: int, destinations: Sequence[str]) -> str:
    """Archive logs holding ``scn`` that were deleted (the SCN is no longer minable)."""
    return ("SELECT A.NAME AS FILE_NAME, A.FIRST_CHANGE# FIRST_CHANGE, A.NEXT_CHANGE# NEXT_CHANGE, "
            f"A.SEQUENCE# AS SEQ, A.THREAD# AS THREAD FROM {_ARCHIVES} "
            f"WHERE A.NAME IS NOT NULL AND A.ARCHIVED = 'YES' AND A.STATUS = 'D' AND A.FIRST_CHANGE# <= {scn} "
            f"AND A.NEXT_CHANGE# > {scn} AND A.DEST_ID = DS.DEST_ID AND {_destinations(destinations)} "
            f"AND {_SAME_INCARNATION}")


def scn_minus_minutes(scn: int, minutes: int) -> str:
    """The SCN ``minutes`` before ``scn`` (by the database's SCN-to-time mapping)."""
    return (f"select timestamp_to_scn(CAST(scn_to_timestamp({scn}) as date) - INTERVAL '{minutes}' MINUTE) "
            "from dual")
