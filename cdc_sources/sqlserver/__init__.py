"""The SQL Server connector: Debezium 3.6.3's SQL Server connector (CDC change tables), in parts.

Built so far, each part proven against Debezium's own classes (see docs/sqlserver.md): the
options and configuration (`options`, `config`), the value converters (`converters`), LSNs,
offsets and the ``source`` block (`lsn`, `offset`, `source_info`), the pure change-stream core
and event payloads (`changes`, `envelope`) and the statement catalogue (`catalogue`). Reading a
server (connection, snapshot, streaming loop) is not built yet, so ``capture`` refuses a
``connector: sqlserver`` source while ``validate`` checks it fully.
"""
