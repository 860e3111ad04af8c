"""The SQL Server connector: Debezium 3.6.3's SQL Server connector (CDC change tables) reproduced.

Built so far, each part proven against Debezium's own classes (see docs/sqlserver.md): the
options and configuration (`config`, `options`), the value converters (`converters`), LSNs,
offsets and the ``source`` block (`lsn`, `offset`, `source_info`) and the pure change-stream core
(`changes`). Reading a server (sessions, snapshots, the streaming loop) is not built yet, so
``capture`` refuses a ``connector: sqlserver`` source while ``validate`` checks it fully.
"""
