"""The SQL Server connector: Debezium 3.6.3's SQL Server connector (CDC change tables), in parts.

Each part is proven against Debezium's own classes or the CDC emulator (see docs/sqlserver.md):
the options and configuration (`options`, `config`), the value converters (`converters`), LSNs,
offsets and the ``source`` block (`lsn`, `offset`, `source_info`), the pure change-stream core
and event payloads (`changes`, `envelope`), the statement catalogue (`catalogue`) and the only
way statements reach a server (`gateway`), and the capture itself (`session`, `connector`).
"""
